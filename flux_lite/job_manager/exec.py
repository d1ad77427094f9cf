"""Simulated execution, on the instance clock.

Three ways a started job runs, in this order of precedence:

* Flux's test execution mode, when the jobspec has
  ``attributes.system.exec.test``: the job "runs" for its ``run_duration``
  and finishes with status ``wait_status`` (default 0);
  ``mock_exception=init|run`` raises the exec exception Flux's test exec
  mocks at that phase. Such a job writes no output.
* emulation (emulate.py), when its command is one of the table's (``true``,
  ``sleep 5``, ``hostname``...): the tasks' output goes into the job's output
  eventlog (RFC 24, ``guest.output``), their exit codes into the finish
  status, and a kill ends them as signals end processes (128+signal).
* anything else runs for the instance's ``exec.default-run-duration``, and
  without one as the test mode does with no run duration.

Without an end of its own, a job runs until canceled or until its R
expiration, where it gets the ``timeout`` exception Flux's job-exec raises.
Every end is a timer, so a virtual clock moves them deterministically.
"""

import json
import os
import signal
from errno import EEXIST, EINVAL, ENOENT, EPERM

from flux_lite import access, users
from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError, JobspecError
from flux_lite.formats import eventlog, fsd, idset
from flux_lite.formats import jobspec as jobspecmod
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.job_manager import emulate
from flux_lite.job_manager.job import FLAG_DEBUG, RUN, RUNNING

SIGTERM = 15  # cancel: Flux's job-exec kills with SIGTERM (finish status=15)
SIGALRM = 14  # time limit: job-exec sends SIGALRM (flux run then exits 142)
START_FAILED_STATUS = 127 << 8  # the job shell's exit when a task cannot start
START_FAILED = ": start failed: "  # in the exec exception's note
DEBUG_KEY = "job-exec.debug"
# present (true) while `flux module remove job-exec` holds: allocated jobs wait in RUN without a start
UNLOADED_KEY = "job-exec.unloaded"
# the texts of the contexts of every job's finish and release
_STATUS_TEXT = eventlog.int_context_format("status")
_RELEASE_ALL_TEXT = eventlog.plain_context_text({"ranks": "all", "final": True})


def simulated_run_duration(broker, jobspec):
    """How long a started job runs: its exec.test run time (jobspec.run_duration),
    else the instance's exec.default-run-duration for jobs that give no
    exec.test at all; None runs the job until canceled or its time limit."""
    run_duration = jobspecmod.run_duration(jobspec or {})
    if run_duration is None:
        default = configmod.get_path(broker.config, "exec.default-run-duration")
        if default is not None:
            seconds = configmod._fsd(default, "exec.default-run-duration")
            # 0 or inf: as the default, run until canceled or the time limit
            run_duration = seconds if 0 < seconds < float("inf") else None
    return run_duration


def emulation(broker, job):
    """The job's emulated run (emulate.Plan), or None: test mode (an
    exec.test table) comes first, and a command outside the table has none."""
    js = job.jobspec
    if not emulate.emulated(js):
        return None
    if "test" in (_exec_table(js) or {}):
        return None
    environment = _environment(broker, job) if emulate.reads_environment(js) else None
    stdin = None
    if emulate.reads_input(js):
        stdin = _task_input(broker, job)
        if stdin is None:
            return None  # an --input file that cannot be read: the shell would fail, not emulated
    return emulate.plan(js, job.R, job.id, job.userid if isinstance(job.userid, int) else 0, environment, stdin)


def input_key(jobid):
    return kvs_key(jobid, "guest.input")


def write_input(broker, jobid, data, ranks="all"):
    """The job's input eventlog (RFC 24) as flux run writes it for a job whose
    tasks read standard input: the header, the data for the tasks in ranks
    ("all" or an idset of task ranks), then end of file."""
    key = input_key(jobid)
    now = broker.now
    broker.kvs.append(key, eventlog.encode_entry(now, "header", {
        "version": 1, "encoding": {"stdin": "UTF-8"}, "count": {"stdin": 1}, "options": {}}))
    if data:
        broker.kvs.append(key, eventlog.encode_entry(now, "data", {"stream": "stdin", "rank": ranks, "data": data}))
    broker.kvs.append(key, eventlog.encode_entry(now, "data", {"stream": "stdin", "rank": ranks, "eof": True}))


def _task_input(broker, job):
    """What each task reads (a function of its task rank): the --input file,
    read as the job starts (None if it cannot be), else the data of the job's
    input eventlog (nothing when no one wrote any)."""
    js = job.jobspec
    path = emulate.input_file(js)
    if path is not None:
        cwd = ((js.get("attributes") or {}).get("system") or {}).get("cwd")
        if isinstance(cwd, str) and cwd and not os.path.isabs(path):
            path = os.path.join(cwd, path)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError:
            return None
        return lambda rank: text
    entries = broker.kvs.get_eventlog(input_key(job.id)) or []
    chunks = [(e["context"].get("rank"), e["context"]["data"]) for e in entries
              if e.get("name") == "data" and isinstance((e.get("context") or {}).get("data"), str)]

    def task_input(rank):
        return "".join(data for ranks, data in chunks if ranks == "all" or _in_idset(rank, ranks))
    return task_input


def _in_idset(rank, ranks):
    try:
        return rank in idset.IDset.parse(ranks)
    except idset.IdsetError:
        return False


def _environment(broker, job):
    """The job's environment, from its J (the stored jobspec has none, as in Flux)."""
    raw = broker.kvs.get_raw(kvs_key(job.id, "J"))
    try:
        env = json.loads(raw[1])["attributes"]["system"]["environment"] if raw is not None else None
    except (ValueError, KeyError, TypeError):
        env = None
    return env if isinstance(env, dict) else None


def planned_end(broker, job):
    """(seconds from start to the job's own end or None, its emulated plan
    or None): what start() arms, and what a rebuild of the timers re-arms."""
    plan = emulation(broker, job)
    if plan is not None:
        return (plan.duration if plan.duration < float("inf") else None), plan
    return simulated_run_duration(broker, job.jobspec), None


def endless_command(broker, jobspec):
    """Why a job about to run in real time may never end by itself (a
    sentence for the one who waits on it), or None: its command is neither
    emulated nor given a run duration (exec.test or the instance's default)."""
    if emulate.emulated(jobspec):
        return None
    try:
        if simulated_run_duration(broker, jobspec):
            return None
    except JobspecError:
        return None
    if jobspecmod.run_duration(jobspec) is not None:
        return None  # test mode with run_duration=0s: until canceled, as asked
    if emulate.missing_command(jobspec) is not None:
        return None  # it fails to start at once
    command = emulate.command_of(jobspec) or ["?"]
    limit = jobspecmod.duration(jobspec) if isinstance(jobspec, dict) else 0.0
    until = f"its time limit ({fsd.format_fsd(limit)})" if limit > 0 else "its time limit"
    return (f"{command[0]} is not a command flux-lite emulates and the job has no run duration "
            f"(exec.test.run_duration, exec.default-run-duration): it runs until {until} or until canceled")


# signals whose default action does not end a process (ignored, or stop/continue)
NOT_FATAL = frozenset(int(getattr(signal, name)) for name in (
    "SIGCHLD", "SIGCONT", "SIGURG", "SIGWINCH", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU") if hasattr(signal, name))
SIGRTMAX = 64


def request_kill(broker, jobid, signum):
    """job-manager.kill (flux job kill): send a signal to a running job's
    shells, with Flux's checks and words (all EINVAL but the guest's EPERM)."""
    if not isinstance(signum, int) or not 0 < signum <= SIGRTMAX:
        raise FluxLiteError("Invalid signal number", errno=EINVAL)
    job = broker.jm.index.require_active(jobid, inactive_errno=EINVAL)
    access.require_job_access(broker.instance.identity, job.userid, "guests may only send signals to their own jobs")
    if job.state != RUN:
        raise FluxLiteError("job is not running", errno=EINVAL)
    broker.exec.signal(job, signum)


def kill_all(broker, user=None, signum=15, dry_run=True):
    """job-manager.killall (flux job killall): (count, errors) of the running
    jobs of a user (default: the requester; "all": everyone, for the owner)
    that get the signal (none with dry_run, as without -f)."""
    if not isinstance(signum, int) or not 0 < signum <= SIGRTMAX:
        raise FluxLiteError("Invalid signal number", errno=EINVAL)
    ident = broker.instance.identity
    userid = ident.userid if user is None else users.userid(user)
    if not ident.is_owner and userid != ident.userid:
        raise FluxLiteError("guests can only kill their own jobs", errno=EPERM)
    targets = [j for j in broker.jm.index.active_in(RUNNING) if userid is None or j.userid == userid]
    if not dry_run:
        for job in targets:
            if job.state == RUN:
                broker.exec.signal(job, signum)
    return len(targets), 0


def _nnodes(plan):
    return len({t.broker_rank for t in plan.tasks})


def output_key(jobid):
    return kvs_key(jobid, "guest.output")


def _exec_table(jobspec):
    """attributes.system.exec of a jobspec when it is a table, else None."""
    system = ((jobspec or {}).get("attributes") or {}).get("system") or {}
    exec_ = system.get("exec") if isinstance(system, dict) else None
    return exec_ if isinstance(exec_, dict) else None


def _test_conf(jobspec):
    """attributes.system.exec.test (validated by jobspec.run_duration)."""
    test = (_exec_table(jobspec) or {}).get("test")
    return test if isinstance(test, dict) else {}


class Exec:
    def __init__(self, broker):
        self.b = broker
        self._loaded = None

    @property
    def loaded(self) -> bool:
        """Whether the job-exec module is loaded (it is unless removed)."""
        if self._loaded is None:
            self._loaded = not self.b.kvs.get(UNLOADED_KEY, False)
        return self._loaded

    def module_remove(self, force=False):
        """flux module remove job-exec: jobs allocated from now on wait in RUN
        without a start (as Flux's job manager waits for an exec service);
        jobs already started run on to their end."""
        if not self.loaded:
            if force:
                return
            raise FluxLiteError("job-exec: module is not loaded", errno=ENOENT)
        self.b.kvs.put(UNLOADED_KEY, True)
        self._loaded = False

    def module_load(self):
        """flux module load job-exec: the jobs waiting for it start."""
        if self.loaded:
            raise FluxLiteError("job-exec: module is already loaded", errno=EEXIST)
        self.b.kvs.delete(UNLOADED_KEY)
        self._loaded = True
        jobtap = self.b.jobtap
        for job in list(self.b.jm.index.active_in(RUNNING)):
            if job.state == RUN and not job.started and not jobtap.holds(job):  # (a prolog's still run)
                self.start(job)

    def start(self, job):
        jm = self.b.jm
        if not self.loaded:
            return  # started by module_load
        if job.flags & FLAG_DEBUG:  # the exec start request is visible
            jm.post(job, "debug.start-request")
        try:
            run_duration, plan = planned_end(self.b, job)
        except JobspecError as exc:
            # as Flux's test exec: a bad run_duration fails the job before start
            self._exec_exception(job, str(exc))
            return
        test = _test_conf(job.jobspec)
        if test.get("mock_exception") == "init":
            # job-exec's init phase fails: the job never starts
            self._exec_exception(job, "mock initialization exception generated")
            return
        if test.get("override"):
            return  # started by `flux job-exec-override start` (see override)
        self._run(job, run_duration, plan, test)

    def _run(self, job, run_duration, plan, test):
        """The job starts: its start event, then its end as a timer."""
        jm = self.b.jm
        jm.post(job, "start")
        if test.get("mock_exception") == "run":
            self._exec_exception(job, "mock run exception generated")
            return
        if plan is None and run_duration is None and "test" not in (_exec_table(job.jobspec) or {}):
            env = _environment(self.b, job)
            missing = emulate.missing_command(job.jobspec, env)
            if missing is not None:
                self._start_failed(job, missing)
                return
        if plan is not None:
            self._output_start(job, plan)
            if run_duration is not None:
                self.b.add_timer(self.b.now + run_duration, "exec.finish", job.id)
        elif run_duration:
            self.b.add_timer(self.b.now + run_duration, "exec.finish", job.id)
        self._arm_expiration(job, job.expiration)

    # -- the output eventlog of an emulated job (RFC 24) -----------------------

    def _header(self, job, n):
        """The output eventlog's header, as the job shell writes it as it starts."""
        self.b.kvs.append(output_key(job.id), eventlog.encode_entry(self.b.now, "header", {
            "version": 1, "encoding": {"stdout": "UTF-8", "stderr": "UTF-8"},
            "count": {"stdout": n, "stderr": n}, "options": {}}))

    def _start_failed(self, job, command):
        """The job shell cannot find the command: task 0 fails to start, the
        shell logs it as fatal and raises the exec exception, and exits 127."""
        tasks = emulate.task_layout(job.jobspec, job.R) or []
        host = tasks[0].hostname if tasks else "?"
        note = f"task 0 (host {host}): start failed: {command}: No such file or directory"
        self._header(job, len(tasks) or 1)
        # (shell.c:2036 is where Flux's job shell logs it, as its eventlog says)
        self.b.kvs.append(output_key(job.id), eventlog.encode_entry(self.b.now, "log", {
            "rank": 0, "level": 0, "message": note, "file": "shell.c", "line": 2036}))
        jm = self.b.jm
        # (the job shell raises this one: its note comes before the userid)
        jm.post(job, "exception", {"type": "exec", "severity": 0, "note": note, "userid": self.b.instance.owner})
        status = START_FAILED_STATUS
        jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status)
        jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)

    def _output_start(self, job, plan):
        """The header the job shell writes as it starts (and a redirect event
        for each stream it writes to a file), the output its tasks write at
        once, and a timer for each later instant they write at."""
        n = plan.ntasks
        key = output_key(job.id)
        now = self.b.now
        append = self.b.kvs.append
        self._header(job, n)
        files = emulate.output_files(job.jobspec)
        ranks = "0" if n == 1 else f"[0-{n - 1}]"
        for stream, (template, _label) in files.items():
            path = emulate.render(template, job.id, job.jobspec, None, n, _nnodes(plan))
            append(key, eventlog.encode_entry(now, "redirect", {"stream": stream, "rank": ranks, "path": path}))
        if files and emulate.output_mode(job.jobspec) == "truncate":
            for path in {self._file(job, plan, files[s][0], t) for s in files for t in plan.tasks}:
                self._write_file(path, "", "w")
        self._write_output(job, plan, 0.0)
        later = sorted({off for off, _r, _s, _d in plan.output if 0.0 < off < plan.duration})
        for off in later:
            self.b.add_timer(now + off, "exec.output", job.id, off)

    def _write_output(self, job, plan, offset):
        key = output_key(job.id)
        now = self.b.now
        append = self.b.kvs.append
        files = emulate.output_files(job.jobspec)
        for off, rank, stream, data in plan.output:
            if off != offset:
                continue
            if stream in files:
                template, label = files[stream]
                path = self._file(job, plan, template, plan.tasks[rank])
                self._write_file(path, f"{rank}: {data}" if label else data, "a")
            else:
                append(key, eventlog.encode_entry(now, "data", {"stream": stream, "rank": str(rank), "data": data}))

    def _file(self, job, plan, template, task):
        """The file a task's output goes to (relative to the job's cwd)."""
        path = emulate.render(template, job.id, job.jobspec, task, plan.ntasks, _nnodes(plan))
        cwd = ((job.jobspec.get("attributes") or {}).get("system") or {}).get("cwd")
        if isinstance(cwd, str) and cwd and not os.path.isabs(path):
            path = os.path.join(cwd, path)
        return path

    def _write_file(self, path, data, mode):
        # the job shell's own files: written as the output happens, whatever
        # becomes of the command's transaction (the shell would have written them)
        try:
            with open(path, mode, encoding="utf-8", errors="surrogateescape") as f:
                f.write(data)
        except OSError as exc:
            self.b.log("job-exec", "err", f"output file {path}: {exc.strerror}")

    def _output_end(self, job, plan, offset=None):
        """The output written as the tasks end (offset: their end, when they
        end by themselves), then each task's end of file on the streams the
        output eventlog carries."""
        if offset is not None and offset > 0.0:
            self._write_output(job, plan, offset)
        key = output_key(job.id)
        now = self.b.now
        append = self.b.kvs.append
        streams = [s for s in ("stdout", "stderr") if s not in emulate.output_files(job.jobspec)]
        for rank in range(plan.ntasks):
            for stream in streams:
                append(key, eventlog.encode_entry(now, "data", {"stream": stream, "rank": str(rank), "eof": True}))

    def _arm_expiration(self, job, expiration):
        self.b.cancel_timers(job.id, "exec.expire")
        if expiration and expiration > 0:
            self.b.add_timer(max(expiration, self.b.now), "exec.expire", job.id)

    def timer(self, what, jobid, arg):
        jm = self.b.jm
        job = jm.lookup(jobid)
        if job is None or not job.started or job.finished:
            return
        if what == "output":
            plan = emulation(self.b, job)
            if plan is not None:
                self._write_output(job, plan, arg)
            return
        if what == "finish":
            self.b.cancel_timers(job.id, "exec.")
            plan = emulation(self.b, job)
            if plan is not None:
                self._output_end(job, plan, plan.duration)
                status = plan.status
            else:
                status = _test_wait_status(job)
            jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status if type(status) is int else None)
            jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)
        elif what == "expire":
            # exceptions from the exec system carry the owner's userid before the note
            jm.post(job, "exception", {"type": "timeout", "severity": 0, "userid": self.b.instance.owner,
                                       "note": "resource allocation expired"})

    def override(self, jobid, event, status, userid):
        """job-exec.override (`flux job-exec-override`), as Flux's test exec
        answers it: a job of the test execution mode with ``override`` set
        starts only when its owner says `start` (and then runs its
        run_duration), and finishes, with STATUS, when its owner says
        `finish`. FluxLiteError with Flux's words otherwise."""
        job = self.b.jm.lookup(jobid)
        test = _test_conf(job.jobspec) if job is not None else {}
        if job is None or job.state != RUN or "test" not in (_exec_table(job.jobspec) or {}):
            raise FluxLiteError("Job not found", errno=ENOENT)
        if userid != job.userid:
            raise FluxLiteError("Permission denied", errno=EPERM)
        if not test.get("override"):
            raise FluxLiteError("Job not in exec override mode", errno=EINVAL)
        if event == "start":
            if job.started:
                raise FluxLiteError("Job already running", errno=EINVAL)
            run_duration, plan = planned_end(self.b, job)
            self._run(job, run_duration, None, test)
        elif event == "finish":
            if not job.started or job.finished:
                raise FluxLiteError("Job not running", errno=EINVAL)
            self.b.cancel_timers(job.id, "exec.")
            self.b.jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status)
            self.b.jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)
        else:
            raise FluxLiteError("Invalid event", errno=EINVAL)

    def awaits_override(self):
        """Is a job waiting for `flux job-exec-override` (so that a wait
        for it must poll: only another command can move it)?"""
        for job in self.b.jm.index.active_in(RUN):
            if _test_conf(job.jobspec).get("override") and not job.finished:
                return True
        return False

    def _exec_exception(self, job, note):
        # exceptions from the exec system carry the owner's userid before the note
        self.b.jm.post(job, "exception", {"type": "exec", "severity": 0, "userid": self.b.instance.owner,
                                          "note": note})
        if not job.started:
            # job-exec finalizes a job it failed to start at once: it hands
            # the resources back (a started one is killed first, see kill())
            self.b.jm.post(job, "release", {"ranks": "all", "final": True})

    def kill(self, job):
        """The job got a fatal exception while running: it dies at once."""
        jm = self.b.jm
        self.b.cancel_timers(job.id, "exec.finish")
        self.b.cancel_timers(job.id, "exec.expire")
        self.b.cancel_timers(job.id, "exec.output")
        signum = SIGALRM if (job.end_event or {}).get("type") == "timeout" else SIGTERM
        plan = emulation(self.b, job)
        if plan is not None:
            # the job shell passes the signal on to the tasks and exits as they did
            self._output_end(job, plan)
            status = emulate.killed_status(signum)
        else:
            status = signum  # the test exec's "shell" is what the signal ends
        jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status)
        jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)

    def signal(self, job, signum):
        """The job shells got a kill event: they pass the signal on to the
        tasks. An emulated command dies of it unless the signal does not end
        a process; a job of the test exec has no shell to hear it."""
        plan = emulation(self.b, job)
        if plan is None or signum in NOT_FATAL:
            return
        self.b.cancel_timers(job.id, "exec.")
        self._output_end(job, plan)
        status = emulate.killed_status(signum)
        self.b.jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status)
        self.b.jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)

    @property
    def debug_flags(self):
        return self.b.kvs.get(DEBUG_KEY, 0)

    def set_debug(self, flags):
        self.b.kvs.put(DEBUG_KEY, flags)

    def update_expiration(self, job, expiration):
        """<exec-service>.expiration: move the job's timeout."""
        if not job.started or job.finished:
            return
        if self.debug_flags & 1:
            # debug bit 1 makes the expiration RPC fail, as job-exec's does in Flux's tests
            self.b.jm.raise_exception(
                job, "exec", 1,
                "failed to send expiration update to exec system: job termination may not coincide with expiration")
            return
        self._arm_expiration(job, expiration)
        self.b.log("job-exec", "debug", f"updated expiration of {f58(job.id)} to {expiration:.2f}")


def _test_wait_status(job):
    """exec.test.wait_status: the status a test-mode job finishes with (0 by
    default; 256 is exit code 1). run_duration() has checked it is an int."""
    try:
        status = job.jobspec["attributes"]["system"]["exec"]["test"].get("wait_status", 0)
    except (KeyError, TypeError, AttributeError):
        return 0
    return status if isinstance(status, int) and not isinstance(status, bool) else 0
