"""What the commands a job names would do, in simulated time.

flux-lite runs no processes. A job whose jobspec gives no
``attributes.system.exec.test`` (Flux's test execution mode, which takes
precedence) and whose command is one of those scripts and Flux's own tests
run most (the table below) behaves as that command would: ``true`` ends at
once, ``false`` exits 1, ``sleep 5`` takes five seconds of the instance
clock, ``hostname`` prints the task's node name... Each task's output is what
the job shell would write to the job's output eventlog (RFC 24), and the
tasks' exit codes make the job's wait status as the job shell and job-exec
reduce them (the largest task exit code, 128+signal for a signaled task).

`plan()` is a pure function of the jobspec, R, the job id and the user, so
the same plan can be recomputed whenever a timer fires or the timers are
rebuilt from the eventlogs: nothing of it is stored but what the job writes.

A command outside the table is not emulated (`plan()` returns None); the
exec system then runs it as Flux's test exec mode would (see exec.py).
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections import deque
from typing import Any, NamedTuple

from flux_lite import users
from flux_lite.errors import JobIDError, JobspecError
from flux_lite.formats import fsd, jj
from flux_lite.formats.jobid import encode, f58, kvs_namespace
from flux_lite.formats.rset import Rset, RsetError

INF = math.inf
# standard places of the commands in the table: /bin/true is true, ./true is not
_BIN_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
# a job of more tasks than this is not emulated (its output would be that many events)
MAX_TASKS = 4096
# a shell script a job runs is emulated up to this size
MAX_SCRIPT = 64 << 10
_SHEBANG = re.compile(r"#!\s*(?:/usr)?/bin/(?:env\s+)?(?:sh|bash|dash)\s*$")


class NotEmulated(Exception):
    """The command (or one in its script) is not in the table."""


class TaskRun(NamedTuple):
    """What one task does: output chunks at offsets from its start, how long
    it runs (INF: until killed) and its exit code."""

    output: list[tuple[float, str, str]]  # (offset, stream, data)
    duration: float
    rc: int


class Plan(NamedTuple):
    """What a job's tasks do together."""

    ntasks: int
    output: list[tuple[float, int, str, str]]  # (offset, task rank, stream, data), in time order
    duration: float  # when the last task ends (INF: some task runs until killed)
    status: int  # the job's wait status when every task ended by itself
    tasks: list  # the tasks (Task), in task-rank order


class Task(NamedTuple):
    rank: int  # task rank (FLUX_TASK_RANK)
    local_id: int  # FLUX_TASK_LOCAL_ID
    broker_rank: int  # the node's rank in the instance
    hostname: str


# -- task layout (the job shell's distribution of tasks over R) --------------


def task_layout(jobspec: Any, R: Any) -> list[Task] | None:
    """The job's tasks in task-rank order, as Flux's job shell lays them out:
    the tasks are dealt round-robin over the ranks, those with the most cores
    first (a task takes a slot's cores; a full rank leaves the round), then
    numbered rank by rank. None when R or the jobspec cannot say (the job is
    then not emulated)."""
    try:
        rset = Rset.from_dict(R)
        counts = jj.get_counts(jobspec)
        ntasks = jj.ntasks(jobspec, counts)
    except (RsetError, JobspecError, TypeError, ValueError, KeyError):
        return None
    nodes = {rank: (host, max(len(cores), 1)) for rank, host, cores, _gpus in rset.nodes()}
    if ntasks is None and nodes:
        return _per_resource_layout(jobspec, nodes)
    if not nodes or not isinstance(ntasks, int) or not 0 < ntasks <= MAX_TASKS:
        return None
    avail = {rank: ncores for rank, (_host, ncores) in nodes.items()}
    order = sorted(avail, key=lambda r: -avail[r])  # stable: ties keep rank order
    per_task = min(max(int(counts.get("slot_size") or 1), 1), avail[order[-1]])
    count = dict.fromkeys(nodes, 0)
    queue: deque[int] = deque()
    left: dict[int, int] = {}
    for _ in range(ntasks):
        while True:
            if not queue:  # every core taken: oversubscribe, as the shell does
                queue.extend(order)
                left = dict(avail)
            rank = queue.popleft()
            if left[rank] >= per_task:
                break
        count[rank] += 1
        left[rank] -= per_task
        queue.append(rank)
    tasks = []
    for rank, (host, _ncores) in nodes.items():
        for local in range(count[rank]):
            tasks.append(Task(len(tasks), local, rank, host))
    return tasks


def _per_resource_layout(jobspec: Any, nodes: dict[int, tuple[str, int]]) -> list[Task] | None:
    """The shell's per-resource option, whose task count only R says
    (an alloc-bypass R, a node-level request): COUNT tasks per node, or per
    core of each node."""
    options = (((jobspec.get("attributes") or {}).get("system") or {}).get("shell") or {}).get("options")
    spec = options.get("per-resource") if isinstance(options, dict) else None
    if not isinstance(spec, dict) or spec.get("type") not in ("node", "core"):
        return None
    count = spec.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return None
    tasks: list[Task] = []
    for rank, (host, ncores) in nodes.items():
        for local in range(count * (ncores if spec["type"] == "core" else 1)):
            tasks.append(Task(len(tasks), local, rank, host))
    return tasks if 0 < len(tasks) <= MAX_TASKS else None


# -- the plan ----------------------------------------------------------------


def command_of(jobspec: Any) -> list[str] | None:
    try:
        command = jobspec["tasks"][0]["command"]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(command, str):
        command = [command]
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        return None
    return command


def emulated(jobspec: Any) -> bool:
    """Is the job's command one the table knows (whatever its arguments), or
    a shell script? A cheap check made before anything else (no R needed)."""
    command = command_of(jobspec)
    if command is None:
        return False
    return _name(command[0]) in COMMANDS or script_text(command[0], _cwd(jobspec)) is not None


def reads_input(jobspec: Any) -> bool:
    """Does the job's command read its standard input (so that the caller
    looks up what the job was given: an --input file, or what flux run
    forwarded)?"""
    command = command_of(jobspec)
    return command is not None and _name(command[0]) == "cat"


def input_file(jobspec: Any) -> str | None:
    """The file --input names (shell.options.input.stdin of type file), or None."""
    try:
        stdin = jobspec["attributes"]["system"]["shell"]["options"]["input"]["stdin"]
    except (KeyError, TypeError):
        return None
    if isinstance(stdin, dict) and stdin.get("type") == "file" and isinstance(stdin.get("path"), str):
        return stdin["path"]
    return None


def reads_environment(jobspec: Any) -> bool:
    """Does the job's command read its environment (so that the caller
    looks it up: the stored jobspec has none)?"""
    command = command_of(jobspec)
    if command is None:
        return False
    if _name(command[0]) in COMMANDS:
        return _name(command[0]) in ("printenv", "env", "sh", "bash")
    return script_text(command[0], _cwd(jobspec)) is not None


def _cwd(jobspec: Any) -> str | None:
    system = ((jobspec or {}).get("attributes") or {}).get("system") or {}
    cwd = system.get("cwd") if isinstance(system, dict) else None
    return cwd if isinstance(cwd, str) else None


def script_text(arg0: str, cwd: str | None) -> str | None:
    """The text of the shell script a command names: a file (named with a
    '/', relative to the job's directory) whose first line runs sh or bash,
    read as it is when the job starts. None otherwise."""
    if "/" not in arg0 or _name(arg0) != arg0:
        return None
    path = os.path.join(cwd or "/", arg0)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SCRIPT + 1)
    except OSError:
        return None
    if len(data) > MAX_SCRIPT:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    first, _, rest = text.partition("\n")
    return rest if _SHEBANG.match(first) else None


def missing_command(jobspec: Any, environment: dict | None = None) -> str | None:
    """The command the job shell cannot find on this machine (it fails to
    start, as Flux's does), or None: neither in the table nor a file at its
    path (a name with a '/', relative to the job's directory) nor in a
    directory of the job's PATH (else this process's)."""
    command = command_of(jobspec)
    if command is None or _name(command[0]) in COMMANDS:
        return None
    arg0 = command[0]
    if "/" in arg0:
        return None if os.path.exists(os.path.join(_cwd(jobspec) or "/", arg0)) else arg0
    search = (environment or {}).get("PATH") or os.environ.get("PATH") or os.defpath
    if any(os.path.exists(os.path.join(d or ".", arg0)) for d in search.split(os.pathsep)):
        return None
    return arg0


def plan(jobspec: Any, R: Any, jobid: int, userid: int, environment: dict | None = None,
         stdin: Any = None) -> Plan | None:
    """What the job's tasks do, or None when its command is not in the table.
    environment: the job's (default: the jobspec's own, if it has one);
    stdin: what each task reads, a function of its task rank (default: nothing)."""
    command = command_of(jobspec)
    if command is None or not emulated(jobspec):
        return None
    tasks = task_layout(jobspec, R)
    if tasks is None:
        return None
    system = (jobspec.get("attributes") or {}).get("system") or {}
    cwd = _cwd(jobspec)
    if environment is None:
        environment = system.get("environment")
    env_base = environment if isinstance(environment, dict) else {}
    nnodes = len({t.broker_rank for t in tasks})
    output: list[tuple[float, int, str, str]] = []
    duration = 0.0
    rc = 0
    for task in tasks:
        env = {k: str(v) for k, v in env_base.items()}
        env.update({
            "FLUX_JOB_ID": f58(jobid),
            "FLUX_JOB_SIZE": str(len(tasks)),
            "FLUX_JOB_NNODES": str(nnodes),
            "FLUX_TASK_RANK": str(task.rank),
            "FLUX_TASK_LOCAL_ID": str(task.local_id),
            "FLUX_KVS_NAMESPACE": kvs_namespace(jobid),
        })
        ctx = _Context(task, env, cwd or "/", userid, stdin(task.rank) if stdin is not None else "", R)
        try:
            run = ctx.run(command)
        except NotEmulated:
            return None
        output.extend((off, task.rank, stream, data) for off, stream, data in run.output)
        duration = max(duration, run.duration)
        rc = max(rc, run.rc)
    output.sort(key=lambda o: o[0])  # stable: tasks in rank order at each instant
    return Plan(len(tasks), output, duration, (rc & 0xFF) << 8, tasks)


def housekeeping_run(argv: Any, broker_rank: int, hostname: str, userid: int,
                     env: dict[str, str] | None = None) -> TaskRun | None:
    """What a housekeeping command (argv, as configured) would do on one
    node, run by the instance owner in / (with env: a prolog's, an
    epilog's); None when it is not in the table."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    ctx = _Context(Task(0, 0, broker_rank, hostname), dict(env or {}), "/", userid)
    try:
        return ctx.run(argv)
    except NotEmulated:
        return None


def killed_status(signum: int) -> int:
    """The wait status of a job whose tasks a signal killed: the job shell
    exits with 128+signal, which job-exec reports as an exit status."""
    return ((128 + signum) & 0xFF) << 8


def _name(arg0: str) -> str:
    for d in _BIN_DIRS:
        if arg0.startswith(d) and "/" not in arg0[len(d):]:
            return arg0[len(d):]
    return arg0


# -- the commands ------------------------------------------------------------


class _Context:
    """One task's view: its environment, node, directory and user."""

    def __init__(self, task: Task, env: dict[str, str], cwd: str, userid: int, stdin: str = "",
                 R: Any = None) -> None:
        self.task = task
        self.env = env
        self.cwd = cwd
        self.userid = userid
        self.stdin = stdin
        self.R = R  # the job's R (its expiration, for flux job timeleft)
        self.t = 0.0  # the time since the task started (a script's commands run in turn)

    def run(self, argv: list[str]) -> TaskRun:
        fn = COMMANDS.get(_name(argv[0]))
        if fn is not None:
            return fn(self, argv[1:])
        script = script_text(argv[0], self.cwd)
        if script is None:
            raise NotEmulated(argv[0])
        return _run_script(self, script)


def _out(data: str, stream: str = "stdout") -> list[tuple[float, str, str]]:
    """Output as the job shell sends it: one event per line (line buffered)."""
    return [(0.0, stream, line) for line in data.splitlines(keepends=True)]


def _true(ctx, args):
    return TaskRun([], 0.0, 0)


def _false(ctx, args):
    return TaskRun([], 0.0, 1)


def _sleep(ctx, args):
    if not args:
        return TaskRun(_out("sleep: missing operand\nTry 'sleep --help' for more information.\n", "stderr"),
                       0.0, 1)
    total = 0.0
    for arg in args:
        seconds = sleep_interval(arg)
        if seconds is None:
            return TaskRun(_out(f"sleep: invalid time interval '{arg}'\n"
                                "Try 'sleep --help' for more information.\n", "stderr"), 0.0, 1)
        total += seconds
    return TaskRun([], total, 0)


_SLEEP_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def sleep_interval(arg: str) -> float | None:
    """coreutils sleep's NUMBER[SUFFIX] in seconds: a decimal or hex float,
    inf or infinity, with s, m, h or d; None when it is not one."""
    m = re.fullmatch(r"([0-9A-Za-z.+\-]+?)([smhd]?)", arg)
    if m is None:
        return None
    num = m.group(1)
    try:
        value = float.fromhex(num) if "x" in num.lower() else float(num)
    except ValueError:
        return None
    if math.isnan(value) or value < 0:
        return None
    return value * _SLEEP_UNITS[m.group(2)]


def _hostname(ctx, args):
    name = ctx.task.hostname
    if "-s" in args or "--short" in args:
        name = name.split(".", 1)[0]
    return TaskRun(_out(name + "\n"), 0.0, 0)


_ESCAPES = {"\\": "\\", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _echo(ctx, args):
    newline = True
    escapes = False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        for c in args[0][1:]:
            if c == "n":
                newline = False
            elif c == "e":
                escapes = True
            else:
                escapes = False
        args = args[1:]
    text = " ".join(args)
    if escapes:
        cut = text.find("\\c")
        if cut >= 0:
            text, newline = text[:cut], False
        text = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), text)
    return TaskRun(_out(text + ("\n" if newline else "")), 0.0, 0)


def _printenv(ctx, args):
    if not args:
        return _env(ctx, [])
    lines = [ctx.env[a] + "\n" for a in args if a in ctx.env]
    return TaskRun(_out("".join(lines)), 0.0, 0 if len(lines) == len(args) else 1)


def _env(ctx, args):
    env = dict(ctx.env)
    while args and "=" in args[0] and not args[0].startswith("="):
        key, _, value = args[0].partition("=")
        env[key] = value
        args = args[1:]
    if args and args[0] in ("-i", "--ignore-environment"):
        raise NotEmulated("env -i")
    if args:  # env VAR=VALUE COMMAND...: the command with that environment
        sub = _Context(ctx.task, env, ctx.cwd, ctx.userid, ctx.stdin)
        return sub.run(args)
    return TaskRun(_out("".join(f"{k}={v}\n" for k, v in env.items())), 0.0, 0)


def _id(ctx, args):
    import grp
    import os
    import pwd

    uid = ctx.userid
    name = users.username(uid)
    try:
        gid = pwd.getpwuid(uid).pw_gid
        groups = os.getgrouplist(name, gid) if name != str(uid) else [gid]
    except (KeyError, OSError):
        gid, groups = uid, [uid]

    def gname(g):
        try:
            return f"{g}({grp.getgrgid(g).gr_name})"
        except KeyError:
            return str(g)

    user = f"{uid}({name})" if name != str(uid) else str(uid)
    if args in (["-u"],):
        return TaskRun(_out(f"{uid}\n"), 0.0, 0)
    if args in (["-un"], ["-nu"], ["-u", "-n"], ["-n", "-u"]):
        return TaskRun(_out(f"{name}\n"), 0.0, 0)
    if args in (["-g"],):
        return TaskRun(_out(f"{gid}\n"), 0.0, 0)
    if args:
        raise NotEmulated("id " + " ".join(args))
    seen = list(dict.fromkeys(groups))
    text = f"uid={user} gid={gname(gid)} groups=" + ",".join(gname(g) for g in seen) + "\n"
    return TaskRun(_out(text), 0.0, 0)


def _cat(ctx, args):
    """cat of its standard input (files it names are not read: not emulated)."""
    if any(a != "-" for a in args):
        raise NotEmulated("cat " + " ".join(args))
    return TaskRun(_out(ctx.stdin), 0.0, 0)


def _pwd(ctx, args):
    return TaskRun(_out(ctx.cwd + "\n"), 0.0, 0)


def _flux(ctx, args):
    if args == ["getattr", "rank"]:
        return TaskRun(_out(f"{ctx.task.broker_rank}\n"), 0.0, 0)
    if args[:2] == ["job", "timeleft"] and args[2:] in ([], ["-H"], ["--human"]):
        return TaskRun(_out(_timeleft(ctx, human=bool(args[2:]))), 0.0, 0)
    raise NotEmulated("flux " + " ".join(args))


# a task runs a moment after its job starts (Flux's job shell takes a few
# milliseconds): what it measures of its time left is that much less
TASK_START_DELAY = 0.001


def _timeleft(ctx, human: bool) -> str:
    """flux job timeleft in a task: whole seconds to the job's expiration
    (UINT_MAX, or "infinity" with -H, for a job without a time limit)."""
    execution = (ctx.R or {}).get("execution") or {}
    expiration = execution.get("expiration") or 0.0
    if not expiration:
        return "infinity\n" if human else "4294967295\n"
    left = max(expiration - (execution.get("starttime") or 0.0) - ctx.t - TASK_START_DELAY, 0.0)
    return f"{fsd.format_c(left, 6)}\n" if human else f"{int(left)}\n"


def _shell(ctx, args):
    """sh -c SCRIPT (and bash): a list of simple commands of the table,
    joined by ``;``, ``&&``, ``||``, with ``exit N`` and $VAR expansion."""
    if len(args) < 2 or args[0] != "-c":
        raise NotEmulated("sh")
    return _run_script(ctx, args[1])


def _run_script(ctx, script: str) -> TaskRun:
    try:
        words = _split_script(script, ctx.env)
    except ValueError:
        raise NotEmulated(script) from None
    output: list[tuple[float, str, str]] = []
    t = 0.0
    rc = 0
    skip = False
    command: list[str] = []
    for word in words + [";"]:
        if word not in (";", "&&", "||"):
            command.append(word)
            continue
        if command and not skip:
            if command[0] == "exit":
                code = rc if len(command) < 2 else _exit_code(command[1])
                return TaskRun(output, t, code)
            if command[0] == ":":
                sub = TaskRun([], 0.0, 0)
            else:
                ctx.t = t
                sub = ctx.run(command)
            output.extend((t + off, stream, data) for off, stream, data in sub.output)
            t += sub.duration
            rc = sub.rc
            if t == INF:
                return TaskRun(output, INF, 0)
        command = []
        skip = (word == "&&" and rc != 0) or (word == "||" and rc == 0)
    return TaskRun(output, t, rc)


def _exit_code(text: str) -> int:
    try:
        return int(text) & 0xFF
    except ValueError:
        raise NotEmulated("exit " + text) from None


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+)|(\?))")


def _split_script(script: str, env: dict[str, str]) -> list[str]:
    """Words and operators of a script, variables expanded (not inside
    single quotes); pipes, redirections, substitutions, subshells and
    background jobs are not emulated (ValueError)."""
    if re.search(r"[`<>()|&]", script.replace("&&", "").replace("||", "")):
        raise ValueError(script)
    lex = shlex.shlex(_expand(script.replace("\n", ";"), env), posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = "#"
    return list(lex)


def _expand(script: str, env: dict[str, str]) -> str:
    out = []
    quote = None
    i = 0
    while i < len(script):
        c = script[i]
        if c == "'" and quote != '"':
            quote = None if quote == "'" else "'"
        elif c == '"' and quote != "'":
            quote = None if quote == '"' else '"'
        elif c == "\\" and quote != "'" and i + 1 < len(script):
            out.append(script[i:i + 2])
            i += 2
            continue
        elif c == "$" and quote != "'":
            m = _VAR.match(script, i)
            if m:
                if m.group(3):
                    raise ValueError("$?")
                value = env.get(m.group(1) or m.group(2), "")
                out.append(value if quote == '"' else shlex.quote(value) if value else "")
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


# the table: command name -> what it does
COMMANDS = {
    "true": _true,
    "false": _false,
    "sleep": _sleep,
    "hostname": _hostname,
    "echo": _echo,
    "printenv": _printenv,
    "env": _env,
    "id": _id,
    "pwd": _pwd,
    "cat": _cat,
    "flux": _flux,
    "sh": _shell,
    "bash": _shell,
}


# -- output to files (--output / --error) --------------------------------------


def output_files(jobspec: Any) -> dict[str, tuple[str, bool]]:
    """{stream: (path template, label)} of the streams the job shell writes
    to files (attributes.system.shell.options.output): stderr follows stdout
    unless it is given its own, as the shell's output configuration reads it."""
    try:
        opts = jobspec["attributes"]["system"]["shell"]["options"]["output"]
    except (KeyError, TypeError):
        return {}
    if not isinstance(opts, dict):
        return {}
    files: dict[str, tuple[str, bool]] = {}
    inherited: tuple[str, bool] | None = None
    for stream in ("stdout", "stderr"):
        conf = opts.get(stream)
        current = inherited
        if isinstance(conf, dict):
            if conf.get("type") == "kvs":
                current = None
            else:
                path = conf.get("path", current[0] if current else None)
                label = conf.get("label", current[1] if current else False)
                current = (path, label is True) if isinstance(path, str) and path else None
        if current is not None:
            files[stream] = current
        if stream == "stdout":
            inherited = current
    return files


def output_mode(jobspec: Any) -> str:
    """output.mode: "truncate" (the default) or "append"."""
    try:
        mode = jobspec["attributes"]["system"]["shell"]["options"]["output"]["mode"]
    except (KeyError, TypeError):
        return "truncate"
    return "append" if mode == "append" else "truncate"


_TAG = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")


def render(template: str, jobid: int, jobspec: Any, task: Task | None, ntasks: int, nnodes: int) -> str:
    """A mustache template of the job shell ({{id}}, {{name}}, {{taskid}},
    {{node.name}}...); a tag that does not apply (a task's, rendered for the
    whole job) is left as it is, as the shell leaves it."""
    def value(tag: str) -> str | None:
        if tag in ("id", "jobid", "id.f58", "jobid.f58"):
            return f58(jobid)
        if tag.startswith(("id.", "jobid.")):
            try:
                return encode(jobid, tag.split(".", 1)[1])
            except JobIDError:
                return None
        if tag in ("name", "job.name"):
            return jj.name(jobspec)
        if tag in ("size", "ntasks"):
            return str(ntasks)
        if tag == "nnodes":
            return str(nnodes)
        if task is not None:
            if tag in ("taskid", "task.id", "task.rank"):
                return str(task.rank)
            if tag in ("task.index", "task.localid"):
                return str(task.local_id)
            if tag in ("nodeid", "node.id", "node.rank"):
                return str(task.broker_rank)
            if tag in ("node.name", "hostname"):
                return task.hostname
        return None

    def sub(m: re.Match) -> str:
        v = value(m.group(1))
        return m.group(0) if v is None else v

    return _TAG.sub(sub, template)

