"""Simulated execution: Flux's test execution mode, on the instance clock.

A started job "runs" for ``attributes.system.exec.test.run_duration`` and then
finishes with status ``exec.test.wait_status`` (default 0); without it, it runs
until canceled or until its R expiration, where it gets the ``timeout``
exception Flux's job-exec raises. ``exec.test.mock_exception=init|run`` raises
the exec exception Flux's test exec mocks at that phase. Both ends are timers,
so a virtual clock moves them deterministically.
"""

from flux_lite import config as configmod
from flux_lite.errors import JobspecError
from flux_lite.formats import eventlog
from flux_lite.formats import jobspec as jobspecmod
from flux_lite.formats.jobid import f58
from flux_lite.job_manager.job import FLAG_DEBUG

SIGTERM = 15  # cancel: Flux's job-exec kills with SIGTERM (finish status=15)
SIGALRM = 14  # time limit: job-exec sends SIGALRM (flux run then exits 142)
DEBUG_KEY = "job-exec.debug"
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


def _test_conf(jobspec):
    """attributes.system.exec.test (validated by jobspec.run_duration)."""
    system = ((jobspec or {}).get("attributes") or {}).get("system") or {}
    test = (system.get("exec") or {}).get("test") if isinstance(system.get("exec"), dict) else None
    return test if isinstance(test, dict) else {}


class Exec:
    def __init__(self, broker):
        self.b = broker

    def start(self, job):
        jm = self.b.jm
        if job.flags & FLAG_DEBUG:  # the exec start request is visible
            jm.post(job, "debug.start-request")
        try:
            run_duration = simulated_run_duration(self.b, job.jobspec)
        except JobspecError as exc:
            # as Flux's test exec: a bad run_duration fails the job before start
            self._exec_exception(job, str(exc))
            return
        test = _test_conf(job.jobspec)
        if test.get("mock_exception") == "init":
            # job-exec's init phase fails: the job never starts
            self._exec_exception(job, "mock initialization exception generated")
            return
        jm.post(job, "start")
        if test.get("mock_exception") == "run":
            self._exec_exception(job, "mock run exception generated")
            return
        if run_duration:
            self.b.add_timer(self.b.now + run_duration, "exec.finish", job.id)
        self._arm_expiration(job, job.expiration)

    def _arm_expiration(self, job, expiration):
        self.b.cancel_timers(job.id, "exec.expire")
        if expiration and expiration > 0:
            self.b.add_timer(max(expiration, self.b.now), "exec.expire", job.id)

    def timer(self, what, jobid, arg):
        jm = self.b.jm
        job = jm.lookup(jobid)
        if job is None or not job.started or job.finished:
            return
        if what == "finish":
            self.b.cancel_timers(job.id, "exec.expire")
            status = _test_wait_status(job)
            jm.post(job, "finish", {"status": status}, _STATUS_TEXT % status if type(status) is int else None)
            jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)
        elif what == "expire":
            # exceptions from the exec system carry the owner's userid before the note
            jm.post(job, "exception", {"type": "timeout", "severity": 0, "userid": self.b.instance.owner,
                                       "note": "resource allocation expired"})

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
        signum = SIGALRM if (job.end_event or {}).get("type") == "timeout" else SIGTERM
        jm.post(job, "finish", {"status": signum}, _STATUS_TEXT % signum)
        jm.post(job, "release", {"ranks": "all", "final": True}, _RELEASE_ALL_TEXT)

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
