"""A job as the job manager sees it: RFC 21 states driven only by events.

``Job.apply(entry)`` is the one place where an eventlog entry changes a job,
used both when an event is posted and when eventlogs are replayed, so that a
replay always yields the state the live job manager had.
"""

import copy

from flux_lite.formats.jobspec import apply_updates

# RFC 21 state bits (flux-core libjob/job.h)
NEW, DEPEND, PRIORITY, SCHED, RUN, CLEANUP, INACTIVE = 1, 2, 4, 8, 16, 32, 64
PENDING = DEPEND | PRIORITY | SCHED
RUNNING = RUN | CLEANUP
ACTIVE = PENDING | RUNNING

STATE_NAMES = {
    NEW: "NEW",
    DEPEND: "DEPEND",
    PRIORITY: "PRIORITY",
    SCHED: "SCHED",
    RUN: "RUN",
    CLEANUP: "CLEANUP",
    INACTIVE: "INACTIVE",
}
STATE_SHORT = {NEW: "N", DEPEND: "D", PRIORITY: "P", SCHED: "S", RUN: "R", CLEANUP: "C", INACTIVE: "I"}
STATE_BY_NAME = {v: k for k, v in STATE_NAMES.items()}
STATE_BY_NAME.update({"PENDING": PENDING, "RUNNING": RUNNING, "ACTIVE": ACTIVE})

# results (flux-core libjob/result.c)
COMPLETED, FAILED, CANCELED, TIMEOUT = 1, 2, 4, 8
RESULT_NAMES = {COMPLETED: "COMPLETED", FAILED: "FAILED", CANCELED: "CANCELED", TIMEOUT: "TIMEOUT"}
RESULT_SHORT = {COMPLETED: "CD", FAILED: "F", CANCELED: "CA", TIMEOUT: "TO"}

URGENCY_HOLD, URGENCY_DEFAULT, URGENCY_EXPEDITE = 0, 16, 31
PRIORITY_MIN, PRIORITY_MAX = 0, 4294967295

# submit flags (flux-core's FLUX_JOB_DEBUG, _WAITABLE, _NOVALIDATE)
FLAG_DEBUG, FLAG_WAITABLE, FLAG_NOVALIDATE = 2, 4, 8
FLAG_BITS = {"debug": FLAG_DEBUG, "waitable": FLAG_WAITABLE, "novalidate": FLAG_NOVALIDATE}


def parse_flags(text):
    """--flags: comma-separated flag names -> bits; an unknown name raises
    ValueError(name), which each command words as its Flux counterpart does."""
    bits = 0
    for flag in filter(None, text.split(",")):
        if flag not in FLAG_BITS:
            raise ValueError(flag)
        bits |= FLAG_BITS[flag]
    return bits


def state_name(state):
    return STATE_NAMES.get(state, "?")


class Job:
    """In-memory job record; everything here can be rebuilt from the eventlog."""

    __slots__ = (
        "id", "userid", "urgency", "priority", "t_submit", "state", "flags",
        "jobspec", "R", "has_resources", "alloc_pending", "annotations",
        "end_event", "exception", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup",
        "t_inactive", "waitstatus", "started", "finished", "released", "freed", "immutable",
        "set_flags", "nevents", "dirty", "queued", "queued_priority", "dependencies", "jobspec_text",
    )

    def __init__(self, jobid, jobspec=None):
        self.id = jobid
        self.userid = None
        self.urgency = URGENCY_DEFAULT
        self.priority = None
        self.t_submit = 0.0
        self.state = NEW
        self.flags = 0
        self.jobspec = jobspec  # current jobspec (jobspec-update events applied)
        self.R = None  # current R (resource-update events applied)
        self.has_resources = False
        self.alloc_pending = False  # a sched.alloc is outstanding
        self.annotations = {}
        self.end_event = None  # first severity-0 exception or finish
        self.exception = None  # most severe exception: {type, severity, note}
        self.t_depend = self.t_run = self.t_cleanup = self.t_inactive = 0.0
        # PRIORITY and SCHED may be entered again: these are the first times
        self.t_priority = self.t_sched = 0.0
        self.waitstatus = None
        self.started = self.finished = self.released = self.freed = False
        self.immutable = False
        self.set_flags = []
        self.nevents = 0
        self.dirty = False
        self.queued = False  # it has an entry in the alloc queue's heap
        self.queued_priority = None  # the priority of that entry
        self.dependencies = []  # outstanding dependency descriptions (RFC 26)
        # (jobspec, its JSON text) as submitted: the row reuses the text while
        # the job's jobspec is still that object
        self.jobspec_text = None

    # -- the state machine --------------------------------------------------

    def apply(self, entry):
        """Apply one eventlog entry (dict with timestamp, name, context)."""
        self.apply_event(entry["timestamp"], entry["name"], entry.get("context"))

    def apply_event(self, ts, name, ctx):
        """Apply one event: its timestamp, name and context (None or a dict)."""
        if not ctx:
            ctx = {}
        self.nevents += 1
        if name == "submit":
            self.userid = ctx.get("userid")
            self.urgency = ctx.get("urgency", URGENCY_DEFAULT)
            self.flags = ctx.get("flags", 0)
            self.t_submit = ts
        elif name == "validate":
            self.state = DEPEND
            self.t_depend = ts
        elif name == "depend":
            if self.state == DEPEND:
                self.state = PRIORITY
                self.t_priority = self.t_priority or ts
        elif name == "priority":
            self.priority = ctx.get("priority")
            if self.state == PRIORITY:
                self.state = SCHED
                self.t_sched = self.t_sched or ts
        elif name == "alloc":
            if self.state == SCHED:
                self.state = RUN
                self.t_run = ts
            self.has_resources = True
            self.alloc_pending = False
            if "annotations" in ctx:
                ann = ctx["annotations"]
                # (the job manager posts the job's own annotations: nothing to copy)
                self.annotations = ann if ann is self.annotations else copy.deepcopy(ann)
        elif name == "start":
            self.started = True
        elif name == "finish":
            self.finished = True
            self.waitstatus = ctx.get("status", 0)
            if self.end_event is None:
                self.end_event = {"type": "finish", "status": self.waitstatus}
            if self.state == RUN:
                self.state = CLEANUP
                self.t_cleanup = ts
        elif name == "release":
            if ctx.get("final"):
                self.released = True
        elif name == "free":
            self.has_resources = False
            self.freed = True
        elif name == "clean":
            self.state = INACTIVE
            self.t_inactive = ts
            self.alloc_pending = False
        # (the events every job has come first; the rest are rarer)
        elif name == "memo":
            merge_annotations(self.annotations, {"user": ctx})  # RFC 21: memos are the user annotations
        elif name == "dependency-add":
            desc = ctx.get("description")
            if isinstance(desc, str) and desc not in self.dependencies:
                self.dependencies = self.dependencies + [desc]
        elif name == "dependency-remove":
            desc = ctx.get("description")
            if desc in self.dependencies:
                self.dependencies = [d for d in self.dependencies if d != desc]
        elif name == "urgency":
            self.urgency = ctx.get("urgency", self.urgency)
            if self.state == SCHED:
                self.state = PRIORITY
        elif name == "jobspec-update":
            if self.jobspec is not None:
                self.jobspec = apply_updates(self.jobspec, ctx)
            if self.state == SCHED:
                self.state = PRIORITY
        elif name == "resource-update":
            if self.R is not None and "expiration" in ctx:
                self.R = copy.deepcopy(self.R)
                self.R.setdefault("execution", {})["expiration"] = ctx["expiration"]
        elif name == "set-flags":
            for flag in ctx.get("flags", []):
                if flag == "immutable":
                    self.immutable = True
                if flag not in self.set_flags:
                    self.set_flags.append(flag)
        elif name == "flux-restart":
            if self.state == SCHED:
                self.state = PRIORITY
        elif name == "exception":
            severity = ctx.get("severity", 0)
            exc = {"type": ctx.get("type"), "severity": severity, "note": ctx.get("note", "")}
            if self.exception is None or severity < self.exception["severity"]:
                self.exception = exc
            if severity == 0 and self.state not in (NEW, CLEANUP, INACTIVE):
                if self.end_event is None:
                    self.end_event = exc
                self.state = CLEANUP
                self.t_cleanup = ts
                if exc["type"] == "scheduler-restart":
                    # the resources are gone from the scheduler: no free follows
                    self.has_resources = False

    @classmethod
    def replay(cls, jobid, entries, jobspec=None, R=None):
        """Rebuild a job from its eventlog (job-manager restart). R is
        adopted, not copied: callers pass a value freshly read for this job
        (a resource-update copies it before changing it)."""
        job = cls(jobid, jobspec)
        for entry in entries:
            if entry["name"] == "alloc":
                if R is not None and job.R is None:
                    job.R = R
                ctx = entry.get("context")
                if ctx and "annotations" in ctx:
                    # adopted, not copied (apply's rule for the job's own): the
                    # entries are a fresh decode the caller does not keep
                    job.annotations = ctx["annotations"]
            job.apply(entry)
        if job.R is None and R is not None and job.state & (RUNNING | INACTIVE):
            job.R = R
        return job

    # -- derived values -----------------------------------------------------

    @property
    def active(self):
        return self.state != INACTIVE

    @property
    def success(self):
        return (
            self.finished
            and self.waitstatus == 0
            and not (self.exception is not None and self.exception["severity"] == 0)
        )

    @property
    def result(self):
        if self.state != INACTIVE:
            return None
        if self.success:
            return COMPLETED
        exc = self.exception
        if exc is not None and exc["severity"] == 0:
            if exc["type"] == "cancel":
                return CANCELED
            if exc["type"] == "timeout":
                return TIMEOUT
        return FAILED

    @property
    def returncode(self):
        """Flux's returncode: exit code, -signal; without a wait status -128
        if canceled, 1 if failed."""
        if self.state != INACTIVE:
            return None
        if not self.finished:
            result = self.result
            return -128 if result == CANCELED else 1 if result == FAILED else None
        status = self.waitstatus or 0
        if status & 0x7F:
            return -(status & 0x7F)
        return (status >> 8) & 0xFF

    @property
    def duration(self):
        if not self.jobspec:
            return 0.0
        return self.jobspec.get("attributes", {}).get("system", {}).get("duration", 0)

    @property
    def expiration(self):
        if not self.R:
            return 0.0
        return self.R.get("execution", {}).get("expiration", 0.0)

    @property
    def starttime(self):
        if not self.R:
            return 0.0
        return self.R.get("execution", {}).get("starttime", 0.0)


def merge_annotations(dst, src):
    """RFC 27 annotation merge: recursive, null deletes a key."""
    for key, value in src.items():
        if value is None:
            dst.pop(key, None)
        elif isinstance(value, dict):
            sub = dst.get(key)
            if not isinstance(sub, dict):
                sub = {}
            merge_annotations(sub, value)
            if sub:
                dst[key] = sub
            else:
                dst.pop(key, None)
        else:
            dst[key] = value
