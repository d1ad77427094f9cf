"""Job queues (RFC 33) at run time: enable/start state, submission checks.

Their configuration (`[queues]`, `[policy]`) is read by flux_lite/config.py.

Without a ``queues`` table an instance has one anonymous queue, enabled and
started. With one, every queue is named, a job must name one (or get the
default queue), and named queues begin life enabled but *stopped*. A virtual
queue (``parent``) shares its parent's resources and is effectively stopped
while its parent is.

Queue state (enable/start and their reasons) belongs to the job manager and
lives in a KVS key of its own, ``job-manager.queue``, holding Flux's
checkpoint form (``{"version": 1, "queue": [...]}``), so it survives every
command, scheduler reloads and dump/restore.
"""

from __future__ import annotations

from errno import EINVAL, EPERM

from flux_lite import access
from flux_lite.config import queue_config, queue_of
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.job_manager.job import ACTIVE, PENDING, RUNNING, SCHED

STATE_KEY = "job-manager.queue"


def _default_state(named):
    # named queues begin enabled but stopped; the anonymous queue is started
    return {"enable": True, "start": not named, "checkpoint_start": not named,
            "disable_reason": None, "stop_reason": None}


class Queues:
    """The job manager's queues for one command (loaded on first use)."""

    def __init__(self, broker):
        self.b = broker
        self.config = queue_config(broker.config)
        self._states = None

    # -- state load/save ---------------------------------------------------------

    @property
    def states(self):
        """name (None for the anonymous queue) -> state dict."""
        if self._states is None:
            named = self.config.named
            keys = self.config.names() if named else [None]
            states = {k: _default_state(named) for k in keys}
            saved = self.b.kvs.get(STATE_KEY) or {}
            for ent in saved.get("queue", []):
                name = ent.get("name")
                if name in states:
                    st = states[name]
                    st["enable"] = bool(ent.get("enable", True))
                    st["disable_reason"] = ent.get("disable_reason")
                    st["start"] = bool(ent.get("start", st["start"]))
                    st["checkpoint_start"] = bool(ent.get("checkpoint_start", st["start"]))
                    st["stop_reason"] = ent.get("stop_reason")
            self._states = states
        return self._states

    def save(self):
        self.b.kvs.put(STATE_KEY, {"version": 1, "queue": self._entries(checkpointed=False)})

    def checkpoint(self):
        """Flux's checkpoint form of the queue states (start as checkpointed)."""
        return self._entries(checkpointed=True)

    def _entries(self, checkpointed):
        """The queue states as stored (the live start, and the checkpointed one
        where it differs) or, checkpointed, as Flux's checkpoint has them."""
        out = []
        for name, st in self.states.items():
            start = st["checkpoint_start"] if checkpointed else st["start"]
            ent = {} if name is None else {"name": name}
            ent["enable"] = st["enable"]
            ent["start"] = start
            if not checkpointed and st["checkpoint_start"] != start:
                ent["checkpoint_start"] = st["checkpoint_start"]
            if not st["enable"]:
                ent["disable_reason"] = st["disable_reason"]
            if not start and st["stop_reason"]:
                ent["stop_reason"] = st["stop_reason"]
            out.append(ent)
        return out

    # -- lookups -------------------------------------------------------------------

    def lookup(self, name):
        """The state of queue name (None = the anonymous queue), or Flux's error."""
        if name is not None:
            if not self.config.named or name not in self.config.defs:
                raise FluxLiteError(f"'{name}' is not a valid queue", errno=EINVAL)
            return self.states[name]
        if self.config.named:
            raise FluxLiteError("a named queue is required", errno=EINVAL)
        return self.states[None]

    def is_started(self, name):
        """Would the job manager send alloc requests for queue name's jobs?"""
        if not self.config.named:
            return self.states[None]["start"]
        q = self.config.defs.get(name)
        if q is None:
            return False
        states = self.states
        if not states[name]["start"]:
            return False
        return q.parent is None or states[q.parent]["start"]

    def job_started(self, job) -> bool:
        if not self.config.named:
            return self.states[None]["start"]
        return self.is_started(queue_of(job.jobspec))

    def status(self, name):
        """job-manager.queue-status: enable, start and reasons as Flux reports them."""
        st = self.lookup(name)
        out = {"enable": st["enable"]}
        if not st["enable"]:
            out["disable_reason"] = st["disable_reason"]
        blocked = None
        if not self.b.jm.sched_state.get("online"):
            start, reason, blocked = False, "Scheduler is offline", "scheduler"
        elif not st["start"]:
            start, reason = False, st["stop_reason"]
        else:
            start, reason = True, None
            parent = self.config.defs[name].parent if name is not None else None
            if parent is not None and not self.states[parent]["start"]:
                start, reason, blocked = False, f"parent queue '{parent}' is stopped", "parent"
        out["start"] = start
        if not start and reason:
            out["stop_reason"] = reason
        if blocked:
            out["blocked"] = blocked
        return out

    def status_names(self, name=None, verbose=False):
        """The queues a status report covers, in the job manager's order."""
        if name is None or verbose:
            return self.config.hash_order() if self.config.named else [name]
        self.lookup(name)
        return [name]

    # -- enable/disable and start/stop ------------------------------------------------

    def _targets(self, name, all_queues):
        if name is None:
            if self.config.named and not all_queues:
                raise FluxLiteError("Use --all to apply this command to all queues", errno=EINVAL)
            return list(self.states)
        self.lookup(name)
        return [name]

    def enable(self, name, all_queues, enable, reason=None):
        """job-manager.queue-enable."""
        self._check_owner()
        if not enable and not reason:
            raise FluxLiteError("reason is required for disable", errno=EINVAL)
        for target in self._targets(name, all_queues):
            st = self.states[target]
            st["enable"] = bool(enable)
            st["disable_reason"] = None if enable else reason
        self.save()

    def start(self, name, all_queues, start, reason=None, nocheckpoint=False):
        """job-manager.queue-start: stopping cancels outstanding alloc requests
        of the queue's jobs; starting queues its SCHED jobs for the scheduler."""
        self._check_owner()
        targets = self._targets(name, all_queues)
        for target in targets:
            st = self.states[target]
            st["start"] = bool(start)
            if not nocheckpoint:
                st["checkpoint_start"] = bool(start)
            st["stop_reason"] = None if start else (reason or None)
        self.save()
        affected = set(targets)
        if self.config.named:
            # a virtual queue follows its parent
            affected |= {q.name for q in self.config.defs.values() if q.parent in affected}
        if start:
            self._start_jobs(None if name is None else affected)
        else:
            self._stop_jobs(None if name is None else affected)

    def _check_owner(self):
        access.require_owner(self.b.instance.identity, None)  # the command prefixes "start: " etc.

    def _jobs_of(self, names):
        jm = self.b.jm
        if not jm.index.any_active(SCHED):
            return []
        return [j for j in jm.jobs.values()
                if j.state == SCHED and (names is None or queue_of(j.jobspec) in names)]

    def _start_jobs(self, names):
        jm = self.b.jm
        for job in sorted(self._jobs_of(names), key=lambda j: j.id):
            if not job.queued and not job.alloc_pending and job.priority:
                jm.alloc.enqueue(job)

    def _stop_jobs(self, names):
        jm = self.b.jm
        for job in self._jobs_of(names):
            if job.queued:
                job.queued = False  # its heap entry is now stale
            elif job.alloc_pending:
                jm.alloc.cancel_outstanding(job)

    def alloc_query(self):
        """job-manager.alloc-query: queued, pending-to-scheduler and running counts."""
        jm = self.b.jm
        if not jm.index.any_active(PENDING | RUNNING):
            return {"queue_length": 0, "alloc_pending": 0, "running": 0}
        if all(st["start"] for st in self.states.values()):
            # every queue started: each SCHED job with a priority and no
            # request out is queued, so the index's columns can count them
            jm.index.save()
            return jm.index.alloc_counts(SCHED)
        jobs = jm.jobs.values()
        queued = sum(1 for j in jobs if j.state == SCHED and j.queued and not j.alloc_pending and j.priority)
        return {"queue_length": queued, "alloc_pending": jm.alloc.outstanding(),
                "running": sum(1 for j in jobs if j.has_resources)}

    # -- submission -------------------------------------------------------------------

    def frobnicate(self, jobspec):
        """What job-ingest does to a new jobspec: default queue and duration,
        then the queue's required properties as constraints. Returns a copy
        when something changes."""
        cfg = self.config
        system = (jobspec.get("attributes") or {}).get("system") or {}
        name = system.get("queue")
        if name is None:
            name = cfg.default
        if name is None and cfg.named:
            raise FluxLiteError("no queue specified", errno=EPERM)
        if cfg.named and name not in cfg.defs:
            raise FluxLiteError(f"Invalid queue '{name}' specified", errno=EPERM)
        changes = {}
        if system.get("queue") is None and name is not None:
            changes["queue"] = name
        default_duration = cfg.policy_value(name, "jobspec.defaults.system.duration")
        if default_duration is not None and not system.get("duration"):
            seconds = fsd.parse_config(str(default_duration))
            changes["duration"] = 0.0 if seconds == float("inf") else seconds
        requires = cfg.requires(name) if cfg.named else None
        if requires:
            cons = system.get("constraints")
            if isinstance(cons, dict) and isinstance(cons.get("properties"), list):
                props = list(cons["properties"])
                props.extend(p for p in requires if p not in props)
                changes["constraints"] = dict(cons, properties=props)
            elif cons:
                changes["constraints"] = {"and": [cons, {"properties": list(requires)}]}
            else:
                changes["constraints"] = {"properties": list(requires)}
        if not changes:
            return jobspec
        jobspec = dict(jobspec)
        attrs = dict(jobspec.get("attributes") or {})
        new_system = dict(system)
        new_system.update(changes)
        attrs["system"] = new_system
        jobspec["attributes"] = attrs
        return jobspec

    def submit_check(self, jobspec):
        """job-manager's check at submit: a valid, enabled queue."""
        name = queue_of(jobspec)
        st = self.lookup(name)
        if not st["enable"]:
            where = f" to {name}" if name is not None else ""
            raise FluxLiteError(f"job submission{where} is disabled: {st['disable_reason']}", errno=EINVAL)

    def duration_limit(self, name):
        """The duration limit (seconds) for jobs of queue name, or None."""
        value = self.config.policy_value(name, "limits.duration")
        if value is None:
            return None
        limit = fsd.parse_config(str(value)) if not isinstance(value, (int, float)) else float(value)
        return limit if 0 < limit < float("inf") else None

    def check_job_size(self, name, counts):
        """The .limit-job-size plugin: the request's node, core and GPU counts
        against the job-size limits of queue name (-1 = unlimited, overriding
        a general limit)."""
        if not self.config.global_policy and not self.config.named:
            return
        values = {"nnodes": counts["nnodes"], "ncores": counts["nslots"] * counts["slot_size"],
                  "ngpus": counts["nslots"] * counts["slot_gpus"]}
        for bound, word in (("max", "exceeds"), ("min", "is under")):
            for item in ("nnodes", "ncores", "ngpus"):
                limit = self.config.policy_value(name, f"limits.job-size.{bound}.{item}")
                if not isinstance(limit, int) or limit < 0:
                    continue
                value = values[item]
                if (value > limit) if bound == "max" else (value < limit):
                    where = f" for queue {name}" if name is not None else ""
                    raise FluxLiteError(f"requested {item} ({value}) {word} policy limit of {limit}{where}",
                                        errno=EINVAL)

    # -- update queue= ------------------------------------------------------------------

    def update_check(self, job, new_name):
        """The .update-queue plugin: errors, else the constraints to post with it."""
        if job.state & RUNNING:
            raise FluxLiteError("update of queue for running job not supported", errno=EINVAL)
        system = (job.jobspec or {}).get("attributes", {}).get("system", {})
        current = system.get("queue")
        if current is not None and current == new_name:
            raise FluxLiteError(f"job queue is already set to {new_name}", errno=EINVAL)
        if not isinstance(new_name, str):
            raise FluxLiteError(f"'{new_name}' is not a valid queue", errno=EINVAL)
        newq = self.lookup(new_name)
        if not newq["enable"]:
            raise FluxLiteError(f"queue {new_name} is currently disabled", errno=EINVAL)
        # constraints must be exactly the current queue's: they are replaced
        self.lookup(current)
        expected = None
        if current is not None and self.config.requires(current):
            expected = {"properties": list(self.config.requires(current))}
        cons = system.get("constraints")
        if not ((not cons and not expected) or cons == expected):
            # Flux names the job's current queue here, not the target
            raise FluxLiteError(f"job appears to have non-queue constraints, unable to update queue to {current}",
                                errno=EINVAL)
        requires = self.config.requires(new_name)
        return {"properties": list(requires)} if requires else {}


# -- drain and idle (job-manager.drain / job-manager.idle) --------------------------


def drained(broker):
    """True once no job is active, else None (a wait check). Owner only, as
    Flux's job-manager.drain."""
    access.require_owner(broker.instance.identity, None)
    return None if broker.jm.index.any_active(ACTIVE) else True


def idle(broker):
    """The number of pending jobs once no job holds resources, else None.
    Owner only, as Flux's job-manager.idle."""
    access.require_owner(broker.instance.identity, None)
    jm = broker.jm
    if jm.index.any_active(RUNNING):
        return None
    if not jm.index.any_active(PENDING):
        return 0
    jm.index.save()
    return jm.index.count_active(PENDING)


def reconfigured(broker) -> None:
    """The [queues] table changed: queues that stay keep their state, new ones
    begin stopped (the anonymous queue started); jobs follow their queue's
    new state (outstanding requests of stopped queues are canceled)."""
    broker._queues = None
    queues = broker.queues
    queues.save()  # drops the state of queues no longer configured
    names = list(queues.states)
    started = {n for n in names if queues.is_started(n)}
    if queues.config.named:
        stopped = {q.name for q in queues.config.defs.values()} - started
        # jobs of queues that are gone (or of no queue) cannot be scheduled either
        jobs = queues._jobs_of(None)
        stopped |= {queue_of(j.jobspec) for j in jobs if queue_of(j.jobspec) not in queues.config.defs}
        queues._stop_jobs(stopped)
        queues._start_jobs(started)
    elif None in started:
        queues._start_jobs(None)
    else:
        queues._stop_jobs(None)
