"""The job manager module: its parts, and the services it offers.

As flux-core splits job-manager/ into files around one context, the job
manager here is a handful of parts sharing one ``JobManager``:

==============  =============================================================
``index``       the job index: active jobs, rows, every query (index.py)
``event``       posting events and running state actions (event.py)
``alloc``       the scheduler interface: alloc queue, pump, RFC 27 (alloc.py)
``submit``      FLUIDs and submission (submit.py)
``urgency``     urgency and priority (urgency.py)
``raise_``      exceptions and job-manager.raise (raise_.py)
==============  =============================================================

Other job-manager modules (exec, housekeeping, dependencies, update, purge)
live beside them and reach these parts through the methods below. The
scheduler reaches the job manager only through the messages and requests of
:mod:`flux_lite.protocol`, which ``handle`` dispatches.
"""

from flux_lite import protocol as rfc27
from flux_lite.job_manager import housekeeping
from flux_lite import access
from flux_lite.job_manager.alloc import SchedInterface
from flux_lite.job_manager.job import merge_annotations
from flux_lite.job_manager.event import Events
from flux_lite.job_manager.index import JobIndex
from flux_lite.job_manager.job import INACTIVE
from flux_lite.job_manager.raise_ import Raise
from flux_lite.job_manager.submit import Submit
from flux_lite.job_manager.urgency import Urgency, compute_priority

# the job manager's journal counter (module stats' journal.events)
JOURNAL_EVENTS_KEY = "job-manager.journal-events"


class JobManager:
    def __init__(self, broker):
        self.b = broker
        self.kvs = broker.kvs
        self.alloc = SchedInterface(self)
        self.index = JobIndex(broker.kvs.conn, on_load=self.alloc.adopt)
        self.event = Events(self)
        self.submission = Submit(self)
        self.urgency = Urgency(self)
        self.raise_ = Raise(self)
        self.post = self.event.post  # (what post() below does, without its own call)
        alloc = self.alloc
        # the job manager's services (RFC 27 requests from the scheduler; stats)
        self.handlers = {
            rfc27.JM_ALLOC_RESPONSE: alloc.alloc_response,
            rfc27.JM_HELLO: alloc.hello,
            rfc27.JM_READY: alloc.ready,
            rfc27.JM_DISCONNECT: alloc.disconnect,
            rfc27.JM_RAISE: self.raise_.handle_raise,
            rfc27.JM_STATS: lambda msg, cred=None: self.stats(),
        }

    def handle(self, topic, msg, cred=None):
        handler = self.handlers.get(topic)
        if handler is None:
            raise rfc27.error(rfc27.ENOSYS, f"{topic}: no such method")
        return handler(msg, cred)

    # -- the index -----------------------------------------------------------------

    @property
    def jobs(self):
        """Active jobs by id (loaded on first use)."""
        return self.index.jobs

    def lookup(self, jobid):
        """An active job, or None."""
        return self.index.get(jobid)

    def require_active(self, jobid, unknown="unknown job id", inactive_errno=rfc27.ENOENT):
        return self.index.require_active(jobid, unknown, inactive_errno)

    def load_any(self, jobid):
        """Any job (active or inactive), or None."""
        return self.index.load_any(jobid)

    def save(self):
        posted = self.event.posted
        if posted:
            # (the base is read before this command's records are written)
            self.kvs.put(JOURNAL_EVENTS_KEY, self._journal_events() + posted)
            self.event.posted = 0
        self.index.save()
        self.alloc.save()
        self.submission.save()

    # -- events and work -------------------------------------------------------------

    def post(self, job, name, context=None, text=None):
        """Append an event to the job's eventlog and apply it (text: see Events.post)."""
        self.event.post(job, name, context, text)

    def requeue_action(self, job):
        """Run the job's state action again (restart: a job found mid-way)."""
        self.event.actions.append(job.id)

    def has_work(self):
        return bool(self.event.actions) or self.alloc.pump_ready()

    def work(self):
        """Run the due state actions, then the alloc pump; True when that
        leaves nothing to do (has_work() would say no until something changes)."""
        self.event.run_actions()
        if self.alloc.pump_ready():
            self.alloc.pump()
            return False
        return not self.event.actions

    # -- requests from users and other job-manager modules --------------------------

    compute_priority = staticmethod(compute_priority)

    def raise_exception(self, job, etype, severity, note="", userid=None, wait_status=None):
        self.raise_.raise_exception(job, etype, severity, note, userid=userid, wait_status=wait_status)

    def request_raise(self, jobid, severity, etype, note=None):
        """job-manager.raise, with Flux's checks and messages."""
        self.raise_.request_raise(jobid, severity, etype, note)

    def memo(self, jobid, memo, volatile=False):
        """job-manager.memo (RFC 21): memo (an object) merged into the job's
        user annotations; posted to its eventlog unless volatile (then it
        is in the job's annotations only, as Flux keeps it in memory)."""
        job = self.require_active(jobid)
        access.require_job_access(self.b.instance.identity, job.userid,
                                  "guests can only add a memo to their own jobs")
        if volatile:
            merge_annotations(job.annotations, {"user": memo})
            self.index.changed(job.id)
        else:
            self.post(job, "memo", memo)

    def set_urgency(self, jobid, urgency):
        return self.urgency.set_urgency(jobid, urgency)

    def submit(self, jobspec, urgency=16, flags=0, original=None, userid=None, text=None):
        """Validate and ingest one job; returns its id (userid, text: see Submit.submit)."""
        return self.submission.submit(jobspec, urgency, flags, original, userid, text)

    def next_jobid(self):
        return self.submission.next_jobid()

    def raise_jobid_floor(self, jobid):
        self.submission.raise_jobid_floor(jobid)

    def send_free(self, jobid, R, final):
        """sched.free (housekeeping's partial releases go through here)."""
        self.alloc.send_free(jobid, R, final)

    def _journal_events(self):
        """The journal's events: a counter of the events posted, as Flux's
        job manager counts them (a purge does not take them back). An
        instance without the counter (older, or restored) starts it from
        every event of the jobs it holds, read once."""
        count = self.kvs.get(JOURNAL_EVENTS_KEY)
        if type(count) is not int or count < 0:
            count = self.kvs.conn.execute(
                "SELECT COALESCE(SUM(json_extract(flux_lite_unpack(data), '$.nevents')), 0) FROM jobs").fetchone()[0]
        return int(count)

    @property
    def sched_state(self):
        return self.alloc.state

    def stats(self):
        """The job manager's `module stats` object."""
        conn = self.b.kvs.conn
        inactive = conn.execute("SELECT COUNT(*) FROM jobs WHERE state = ?", (INACTIVE,)).fetchone()[0]
        events = self._journal_events() + self.event.posted
        return {"journal": {"listeners": 0, "events": events}, "active_jobs": len(self.jobs),
                "inactive_jobs": inactive, "max_jobid": self.submission.max_jobid,
                "housekeeping": housekeeping.stats(self.b)}
