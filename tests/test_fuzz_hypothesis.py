"""Hypothesis fuzz over the whole command tree: every command's options and
arguments get generated malformed (and sometimes well-formed) values.

The command/option list comes from the click tree itself, so an option added
tomorrow is fuzzed tomorrow. For every invocation:

- no uncaught exception but SystemExit (no traceback), within a wall-time bound;
- a command that fails leaves the state exactly as it was (a digest of every
  table of kvs.sqlite before and after).

Waiting commands are fuzzed too, without real waiting: under the virtual clock
they advance simulated time; under a real clock (test_real_clock_waits)
time.time/time.sleep are a fake clock, and a wait that outlasts its budget is
ended by a simulated Ctrl-C. `dmesg -f` polls the same fake sleep. `start`
(with --restore) gets a fresh target directory for every example.

Bounded for CI: a fixed number of examples per command under the
deterministic `ci` profile (tests/conftest.py); FUZZ_EXAMPLES scales it.
"""

import json
import os
import shutil
import signal
import time

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from flux_lite.cli.main import cli
from test_fuzz import command_paths, snapshot

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "6"))
LIMIT = 10.0  # seconds of wall time for one invocation
FAKE_WAIT = 30.0  # fake seconds a real-clock wait may sleep before "Ctrl-C"

# FUZZ_SHRINK=0 when exploring: report the first failure of each command at once
PHASES = [Phase.explicit, Phase.generate] + ([Phase.shrink] if os.environ.get("FUZZ_SHRINK", "1") != "0" else [])
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
                suppress_health_check=list(HealthCheck))

# commands that start processes or replace the instance: fuzzed on their own
# `python` hands its arguments to the interpreter (tests/test_flux_python.py tests it)
OWN_TEST = {("start",), ("python",)}
# exit codes that are a job's or a command's status, not flux-lite's verdict
STATUS_EXITS = {("run",), ("start",), ("broker",), ("env",), ("job", "status"), ("job", "attach")}
# Flux's own exit codes beyond 0/1/2: flux ion-resource's ENOENT, EBUSY, ENODEV
EXTRA_EXITS = {"ion-resource": (3, 16, 19)}
# commands whose nonzero exit may follow a committed change (see _explained)
WAITERS = {("run",), ("submit",), ("bulksubmit",), ("job", "wait"), ("job", "attach"), ("update",), ("pkill",),
           ("job", "wait-event"), ("job", "status"), ("queue", "drain"), ("queue", "idle")}

JOBIDS = []  # the fuzz instance's jobs
PATHS = []  # files of hostile content, filled in by the fixture (absolute, under tmp)
SAFE_ABSOLUTE = ["/dev/zero", "/dev/null", "/proc/self/status", "/nonexistent/dir/x", "/"]


# -- values ------------------------------------------------------------------

MALFORMED = [
    "", " ", "-", "--", "-1", "0", "1", "-0", "nan", "inf", "-inf", "1e308", "1e-400", "1e20", "0x10",
    "18446744073709551615", "18446744073709551616", "4294967296", "-9223372036854775809", "9" * 400,
    "x" * 300, "\x1b]0;title\x07", "\x1b[2J", "[", "]", "{", "}", "{{}", "{id", "{id:>999999999}",
    "{id!Z}", "%n%s", "0-999999999", "node[0-99999999]", "node[", "1-0", ",", ",,", "=", "a=", "=b",
    "a.b.c=1", "exec.test.run_duration=nan", "duration=1e308", "urgency=-1", "\udcff", "\udc80abc", "∞",
    "ƒ", "ƒ1", "ƒ" + "1" * 50, "f1", "0x" + "f" * 20, "all", "none", "help", "1h", "-5s", "1e308s",
    "999999999d", "1.5", "01", "+1", "true", "false", "null", "[]", "{}", '{"a":' * 200, "[" * 5000,
    "a: &a [*a]", "\t", "\n", "a\nb", "\x7f", "\u202e", "\ufeff", ".", "..", "*", "?", "#", "%",
]


def _no_slash(text):
    # generated text never names a path outside the test's directory (we run as root)
    return text.replace("/", "_").replace("\x00", "")


def _surrogateescaped(raw):
    return _no_slash(raw.decode("utf-8", "surrogateescape"))


def _number():
    return st.one_of(
        st.integers(min_value=-(2 ** 80), max_value=2 ** 80).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(min_value=-3, max_value=40).map(str),
    )


def _fsd():
    return st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(-10, 10 ** 12), st.floats()),
                     st.sampled_from(["", "s", "m", "h", "d", "ms", "x", " s"]))


def _idset():
    part = st.one_of(st.integers(-3, 2 ** 65).map(str),
                     st.tuples(st.integers(-3, 2 ** 40), st.integers(-3, 2 ** 40)).map(lambda t: f"{t[0]}-{t[1]}"))
    return st.builds(lambda parts, host: (f"node[{','.join(parts)}]" if host else ",".join(parts)),
                     st.lists(part, min_size=0, max_size=4), st.booleans())


def _nested():
    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))
    doc = st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                    st.dictionaries(st.text(max_size=5), kids, max_size=3)),
                       max_leaves=10)
    return doc.map(lambda d: json.dumps(d, ensure_ascii=False))


def _keyval():
    key = st.one_of(st.sampled_from(["duration", "urgency", "name", "queue", "attributes.system.duration",
                                     "exec.test.run_duration", "instance.meta", "instance.clock", "resource.R",
                                     "sched.state", "a", ""]), st.text(max_size=10).map(_no_slash))
    return st.builds(lambda k, v: f"{k}={v}", key, st.deferred(lambda: VALUE))


def _value(jobids):
    return st.one_of(
        st.sampled_from(MALFORMED),
        st.text(max_size=30).map(_no_slash),
        st.binary(max_size=20).map(_surrogateescaped),
        _number(),
        _fsd(),
        _idset(),
        _nested(),
        _keyval(),
        st.sampled_from(jobids or ["1"]),
        st.sampled_from(PATHS or ["nonexistent"]),
        st.sampled_from(SAFE_ABSOLUTE),
    )


VALUE = _value([])

# well-formed values, by parameter name: with them the fuzz gets past the
# first check and reaches the commands' own work (one bad value among good ones)
GOOD = {
    "jobid": [], "jobids": [], "ids": [],  # filled with the instance's job ids
    "duration": ["1s", "5m", "0", "1h"], "timeout": ["0.5", "1s", "0"], "time_limit": ["1m", "0"],
    "targets": ["0", "0-1", "node0", "node[0-3]", "all"], "reason": ["maint"], "name": ["sched-simple", "x", "batch"],
    "key": ["instance.meta", "instance.clock", "resource.R", "sched.state", "job", "config"],
    "keys": ["jobspec", "R", "eventlog", "instance.meta"], "directory": [".", "job", "instance"],
    "pairs": ["a=1", "a.b=x", "instance.clock={}", "resource.R=x", "sched.state=1"],
    "updates": ["duration=1h", "urgency=5", "name=x", "duration=+1m", "queue=batch", "duration=inf"],
    "urgency": ["0", "16", "31", "hold", "expedite", "default"], "command": ["true", "sleep", "inf"],
    "expression": ["sleep", "true", "x.*"], "note": ["x"], "message": ["x"], "args": ["queue-depth=8", "mode=x"],
    "ntasks": ["1", "2"], "nodes": ["1", "2"], "cores_per_task": ["1"], "gpus_per_task": ["0"],
    "setattr": ["exec.test.run_duration=1s", "system.duration=10"], "job_name": ["x"], "flags": ["waitable", "debug"],
    "dependency": ["afterok:1", "after:ƒ1", "begin-time=+1h"], "begin_time": ["+1h", "now"], "cc": ["1-3", "0"],
    "wait_event": ["start", "clean"], "since": ["-1h", "2026-01-01"], "user": ["all", "0", "root"],
    "filter_": ["pending", "running,inactive", "completed"], "queues": ["batch", "debug"], "count": ["0", "5"],
    "fmt": ["{id.f58} {state}", "long", "{nodelist}"], "signal": ["9", "SIGTERM"], "age_limit": ["1h"],
    "num_limit": ["1"], "states": ["drain", "up,down"], "policy": ["easy", "fcfs", "conservative"],
    "infile": [], "outfile": ["dump.tar"], "trace": [], "path": [], "file": ["-"],
    "match_context": ["type=cancel"], "queue_depth": ["8"], "reservation_depth": ["1"],
    "test_size": ["1", "2", "4"], "test_cores": ["1", "2"], "test_gpus": ["0", "1"],
    "test_hosts": ["node[0-3]", "a,b", "x[1-2]"], "config_file": [], "restore": [],
}


def _good(param, jobids):
    if isinstance(param.type, click.Choice):
        return list(param.type.choices)
    pool = GOOD.get(param.name or "", [])
    if param.name in ("jobid", "jobids", "ids"):
        pool = pool + jobids
    if param.name in ("infile", "trace", "path", "file", "config_file", "restore", "outfile"):
        pool = pool + PATHS
    return pool
STDIN = st.one_of(st.just(b""), st.binary(max_size=200), _nested().map(str.encode),
                  st.sampled_from([b"\xff\xfe\x00", b"{" * 3000, b"a: &a [*a, *a]\nb: *a\n", b"version: 1\n"]))


# -- invocations -------------------------------------------------------------

def _params(cmd):
    return [p for p in cmd.params if not getattr(p, "hidden", False) and p.name not in ("help",)]


def invocation(data, path, cmd, value, jobids=()):
    """Draw an argument list for cmd: some of its options (flags on or off,
    values malformed), its positional arguments, now and then a stray token."""
    args = []
    # half the runs are mostly well-formed (one bad value among good ones
    # reaches the real work), half are hostile throughout
    mostly_good = data.draw(st.booleans())

    def draw_value(param):
        good = _good(param, list(jobids))
        if good and data.draw(st.integers(0, 9)) < (9 if mostly_good else 5):
            return data.draw(st.sampled_from(good))
        return data.draw(value)

    if isinstance(cmd, click.Group):
        sub = data.draw(st.one_of(st.sampled_from(sorted(cmd.list_commands(None)) or ["x"]), value))
        return [sub] + data.draw(st.lists(value, max_size=2))
    for param in _params(cmd):
        if not isinstance(param, click.Option):
            continue
        if data.draw(st.integers(0, 3)) != 0:  # each option in about one of four runs
            continue
        name = data.draw(st.sampled_from(param.opts + param.secondary_opts))
        if param.is_flag or param.count:
            args.append(name)
            continue
        for _ in range(data.draw(st.integers(1, 2)) if param.multiple else 1):
            v = draw_value(param)
            if name.startswith("--") and data.draw(st.booleans()):
                args.append(f"{name}={v}")
            else:
                args += [name, v]
    positional = []
    for param in _params(cmd):
        if isinstance(param, click.Argument):
            if param.nargs == -1:
                positional += [draw_value(param) for _ in range(data.draw(st.integers(0, 3)))]
            elif data.draw(st.integers(0, 9)) > 0:  # now and then one is missing
                positional += [draw_value(param) for _ in range(max(param.nargs, 1))]
    if not mostly_good and data.draw(st.integers(0, 5)) == 0:
        positional.append(data.draw(st.sampled_from(["--bogus", "-Z", "--", "-", "--help"])))
    if path in (("submit",), ("run",)) and not positional:
        positional = ["true"]
    return args + positional


def _explained(before, after):
    """A waiting command may fail after committed work: its job was
    submitted (and failed), simulated time passed while it waited, or it
    consumed a waitable job that had failed."""
    def clock(snap):
        return [row for row in snap["kvs"] if row[0] == "instance.clock"]

    jobs_before = {row[0] for row in before["jobs"]}
    jobs_after = {row[0] for row in after["jobs"]}
    return (jobs_after > jobs_before or clock(after) != clock(before)
            or len(after["waitable"]) < len(before["waitable"]))


def _per_job_errors(args, stderr):
    """`cancel` acts on each job on its own, as Flux's does (one raise per
    job): `cancel A B` cancels A and reports B's error on a line naming B.
    True when every error names a job given and some job given was not
    named: that one was acted on, and may have changed the state."""
    named = [ln.split(": ")[2] for ln in stderr.splitlines() if ": ERROR: " in ln and ln.count(": ") >= 3]
    errors = [ln for ln in stderr.splitlines() if ": ERROR: " in ln]
    return bool(errors) and len(named) == len(errors) and set(named) <= set(args) and bool(
        set(a for a in args if a in JOBIDS) - set(named))


class Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise Hang()


class FakeClock:
    """time.time/time.sleep for real-clock waits: sleeping moves the fake
    time; past FAKE_WAIT fake seconds the user "presses Ctrl-C"."""

    def __init__(self, start):
        self.now = start
        self.slept = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(float(seconds), 0.0)
        self.slept += max(float(seconds), 0.0)
        if self.slept > FAKE_WAIT:
            raise KeyboardInterrupt


def check(state, args, stdin=b"", path=None, env=None, fake_start=None, monkeypatch=None):
    """Run flux-lite with args against state; assert the rules; return the result."""
    runner = CliRunner()
    where = f"flux-lite {' '.join(map(repr, args))} (stdin {stdin[:40]!r})"
    before = snapshot(state) if (state / "kvs.sqlite").exists() else None
    clock = FakeClock(time.time() if fake_start is None else fake_start)
    monkeypatch.setattr(time, "time", clock.time)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    old = signal.signal(signal.SIGALRM, _alarm)
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, LIMIT)
    try:
        result = runner.invoke(cli, ["--state-dir", str(state), *args], input=stdin, env=env)
    except Hang:
        pytest.fail(f"{where}: no answer in {LIMIT} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        monkeypatch.undo()
    assert time.monotonic() - t0 < LIMIT, where
    if os.environ.get("FUZZ_LOG"):  # what the fuzz reached, for whoever tunes it
        with open(os.environ["FUZZ_LOG"], "a") as log:
            log.write(json.dumps([args, result.exit_code, (result.stderr or "").strip()[-200:],
                                  round(time.monotonic() - t0, 3)]) + "\n")
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), (where, repr(exc), result.output)
    assert "Traceback" not in result.output, where
    code = result.exit_code
    if path not in STATUS_EXITS:
        assert code in (0, 1, 2, 130) + EXTRA_EXITS.get((path or ("",))[0], ()), (where, code, result.output)
    if code and before is not None and code != 130:
        after = snapshot(state)
        if path in WAITERS and _explained(before, after):
            pass
        elif path == ("cancel",) and _per_job_errors(args, result.stderr):
            pass
        elif path == ("module", "reload") and after != before:
            # as in Flux (tests/test_flux_words.py), a reload whose load fails
            # keeps the removal: no scheduler is left, and that is all that changed
            assert not any(row[0] == "sched.module" for row in after["kvs"]), where
        else:
            assert after == before, f"{where} exited {code} but changed the state: {result.stderr}"
    if code == 130:
        assert "interrupted" in result.stderr, (where, result.stderr)
    return result


# -- fixtures ----------------------------------------------------------------

def _make_instance(path, *args):
    runner = CliRunner()
    res = runner.invoke(cli, ["--state-dir", str(path), "start", "--test-size=4", *args])
    assert res.exit_code == 0, res.output
    ids = []
    for sub in (["-t", "1h", "sleep", "inf"], ["-t", "5m", "--setattr=exec.test.run_duration=1m", "true"],
                ["--flags=waitable", "--setattr=exec.test.run_duration=1s", "false"], ["-N4", "-t", "10h", "x"]):
        res = runner.invoke(cli, ["--state-dir", str(path), "submit", *sub])
        assert res.exit_code == 0, res.output
        ids.append(res.stdout.strip())
    return ids


def _hostile_files(root):
    root.mkdir()
    files = {
        "binary": bytes(range(256)) * 4,
        "deep.json": b"[" * 100000 + b"]" * 100000,
        "laughs.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(9)),
        "bad-date.yaml": b"clock: {start: 2026-02-31}\n",
        "latin1.toml": "name = 'caf\xe9'\n".encode("latin-1"),
        "empty": b"",
        "swf": b"; SWF\n1 0 0 10 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n2 x 0 nan 4\n",
        "archive.tar": b"\x00" * 1024,
        "jobspec.json": b'{"version": 1, "resources": [], "tasks": [], "attributes": {"system": {"duration": 1e400}}}',
    }
    paths = []
    for name, content in files.items():
        p = root / name
        p.write_bytes(content)
        paths.append(str(p))
    return paths


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hfuzz")
    PATHS[:] = _hostile_files(root / "files")
    template = root / "template"
    ids = _make_instance(template, "--clock=virtual")
    # well-formed inputs too: an archive of the instance, a jobspec, a trace, a config
    runner = CliRunner()
    files = root / "files"
    assert runner.invoke(cli, ["--state-dir", str(template), "dump", "-q", str(files / "good.tar")]).exit_code == 0
    res = runner.invoke(cli, ["--state-dir", str(template), "submit", "--dry-run", "-N1", "true"])
    (files / "good-jobspec.json").write_text(res.stdout)
    (files / "good.swf").write_text("; MaxProcs: 8\n" + "".join(
        f"{i} {i * 10} -1 {30 + i} 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, 6)))
    (files / "good.toml").write_text("[resource]\nnoverify = true\n")
    PATHS.extend(str(files / n) for n in ("good.tar", "good-jobspec.json", "good.swf", "good.toml"))
    global VALUE
    VALUE = _value(ids)
    JOBIDS[:] = ids
    yield root
    PATHS.clear()


@pytest.fixture
def workdir(fuzz_root, tmp_path, monkeypatch):
    """A copy of the template instance; the command runs in an empty cwd."""
    state = tmp_path / "state"
    shutil.copytree(fuzz_root / "template", state)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return state


COMMANDS = [(path, cmd) for path, cmd in command_paths() if path not in OWN_TEST]


def test_the_fuzz_covers_the_whole_command_tree():
    from flux_lite.cli.main import COMMANDS as TOP

    paths = {p for p, _ in COMMANDS} | OWN_TEST
    assert {(name,) for name in TOP} <= paths
    assert len(paths) >= 60


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_fuzz_command(path, workdir):
    cmd = dict(COMMANDS)[path]
    # an empty PATH: `env` (which runs a program) finds nothing to run
    env = {"PATH": str(workdir.parent / "cwd")}

    @FUZZ
    @given(data=st.data(), stdin=STDIN)
    def run(data, stdin):
        args = invocation(data, path, cmd, VALUE, JOBIDS)
        with pytest.MonkeyPatch.context() as mp:
            check(workdir, [*path, *args], stdin=stdin, path=path, env=env, monkeypatch=mp)

    run()


@FUZZ
@given(data=st.data())
def test_fuzz_root_options(data, fuzz_root, tmp_path_factory):
    """The root group's own options (--state-dir, --version) with any value."""
    cwd = tmp_path_factory.mktemp("root")
    value = data.draw(VALUE)
    sub = data.draw(st.sampled_from([["jobs"], ["clock"], ["dmesg"], ["kvs", "get", "x"], []]))
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        # an empty value selects the default state dir: keep that one in cwd too
        result = runner.invoke(cli, [data.draw(st.sampled_from(["--state-dir", "--version"])), value, *sub],
                               env={"FLUX_LITE_STATE_DIR": str(cwd / "default"), "HOME": str(cwd)})
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), (value, sub, result.exit_code, result.output)


def test_fuzz_start(fuzz_root, tmp_path):
    """`start` with any options (--restore of hostile files, configs,
    sizes), each example into a fresh directory: no traceback or hang, and a
    start that fails leaves nothing behind (the instance appears whole or not
    at all). A COMMAND finds nothing to run: PATH is empty."""
    cmd = dict(command_paths())[("start",)]
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {"PATH": str(cwd)}
    n = [0]

    @settings(FUZZ, max_examples=EXAMPLES * 5)
    @given(data=st.data(), stdin=STDIN)
    def run(data, stdin):
        n[0] += 1
        target = tmp_path / f"s{n[0]}"
        args = invocation(data, ("start",), cmd, VALUE, JOBIDS)
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(cwd)
            result = check(target, ["start", *args], stdin=stdin, path=("start",), env=env, monkeypatch=mp)
        created = (target / "kvs.sqlite").exists()
        try:
            command = cmd.make_context("start", list(args), resilient_parsing=True).params.get("command")
        except click.ClickException:
            command = None
        if command:
            # a temporary instance, removed when COMMAND ends
            assert not created, (args, result.output)
        elif result.exit_code == 0 and not result.stdout.startswith("Usage:"):  # (not --help)
            assert created, (args, result.output)
        else:
            assert not created, (args, result.output)
        if not created and target.exists():
            assert list(target.iterdir()) == [], (args, result.output)

    run()
