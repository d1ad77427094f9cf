"""The scheduler side of RFC 27, shared by every policy.

A scheduler owns its resource pool and pending-request queue, persisted under
its own KVS key (``sched.state``) and discarded when the module is removed. It
talks to the job manager only through protocol messages: it answers
``sched.alloc`` with SUCCESS (after writing ``job.<id>.R``), ANNOTATE, DENY or
CANCEL, and takes ``sched.free``, ``sched.cancel``, ``sched.prioritize`` and
``sched.expiration``. Policies override ``schedule()`` and ``forecast()``.
"""

import json
from errno import EINVAL

from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58, kvs_key

SUCCESS, ANNOTATE, DENY, CANCEL = 0, 1, 2, 3
STATE_KEY = "sched.state"


class PendingJob:
    __slots__ = ("jobid", "priority", "userid", "t_submit", "request", "annotations", "duration")

    def __init__(self, jobid, priority, userid, t_submit, request, annotations=None):
        self.jobid = jobid
        self.priority = priority
        self.userid = userid
        self.t_submit = t_submit
        self.request = request
        self.annotations = annotations or {}  # sched.* keys last sent
        self.duration = request.duration

    def sort_key(self):
        return (-self.priority, self.jobid)

    def dump(self):
        return [self.jobid, self.priority, self.userid, self.t_submit, self.request.as_dict(), self.annotations]

    @classmethod
    def load(cls, rec):
        from flux_lite.sched.pool import ResourceRequest

        jobid, priority, userid, t_submit, req, ann = rec
        return cls(jobid, priority, userid, t_submit, ResourceRequest(**req), ann)


def request_from_jobspec(jobspec):
    from flux_lite.formats import jobspec as jobspecmod
    from flux_lite.sched.pool import ResourceRequest

    req = jobspecmod.resource_request(jobspec)
    return ResourceRequest(
        nnodes=req["nnodes"],
        nslots=req["nslots"],
        slot_size=req["slot_size"],
        gpu_per_slot=req["gpu_per_slot"],
        exclusive=req["exclusive"],
        duration=float(req["duration"]),
        constraint=req.get("constraint") or None,
    )


class Scheduler:
    name = "sched-simple"
    queue_depth = 8
    hello_partial_ok = True
    policy = "fcfs"

    def __init__(self, broker, args=None, state=None):
        from flux_lite.sched.pool import Pool

        self.b = broker
        self.args = dict(args or {})
        self.apply_args(self.args)
        from flux_lite.formats.rset import Rset

        # the resources acquired at load time (as Flux's resource.acquire):
        # a later config change (resource.exclude) applies at the next load
        if state is not None and state.get("R"):
            self.rset = Rset.from_dict(state["R"])
        else:
            self.rset = broker.resources.rset
        down = broker.resources.down_ranks() & self.rset.ranks
        if state is not None and state.get("allocs"):
            self.pool = Pool.load(self.rset, state["allocs"], down=down or None)
        else:
            self.pool = Pool(self.rset)
            if down:
                self.pool.set_down(down)
        self.queue = {}
        self.needs_pass = False
        self.needs_forecast = False
        self.dirty = False
        self.passes = 0
        self.debug_flags = 0
        if state is not None:
            self.load_state(state)

    def apply_args(self, args):
        if "queue-depth" in args:
            self.queue_depth = args["queue-depth"]
        if args.get("test-hello-nopartial"):
            self.hello_partial_ok = False
        if "partial-ok" in args:
            self.hello_partial_ok = bool(args["partial-ok"])

    # -- persistence ------------------------------------------------------------

    def load_state(self, state):
        self.debug_flags = state.get("debug", 0)
        for rec in state.get("queue", []):
            pj = PendingJob.load(rec)
            self.queue[pj.jobid] = pj
        self.load_extra(state)

    def load_extra(self, state):
        pass

    def dump_extra(self):
        return {}

    def save(self):
        if not self.dirty:
            return
        state = {
            "allocs": self.pool.dump_allocs(),
            "queue": [pj.dump() for pj in self.sorted_queue()],
            "debug": self.debug_flags,
            "R": self.rset.to_dict(),
        }
        state.update(self.dump_extra())
        self.b.kvs.put(STATE_KEY, state)
        self.dirty = False

    # -- logging ------------------------------------------------------------------

    def log(self, level, msg):
        self.b.log(self.name, level, msg)

    # -- startup: hello and ready ------------------------------------------------

    def hello(self, records, progress=None):
        """Re-register every allocation the job manager reports.

        progress(done, total) is called now and then (a bar for large reloads).
        """
        from flux_lite.formats.idset import IDset
        from flux_lite.formats.rset import nodes_summary, rlite_nodes, rlite_without

        jm = self.b.jm
        total = len(records)
        for count, rec in enumerate(records, 1):
            if progress is not None and count % 500 == 0:
                progress(count, total)
            jobid = rec["id"]
            R = rec.get("R") or self.hello_R(jobid)
            if R is None:
                self.log("err", f"hello: failed to look up R for job {f58(jobid)}")
                continue
            try:
                if "free" in rec:
                    R = rlite_without(R, IDset.parse(rec["free"]))
                nodes = rlite_nodes(R)
                summary = nodes_summary(nodes)
                self.pool.register_alloc(jobid, R, nodes)
                idf58 = f58(jobid)
                self.log("info", f"hello: {idf58}: {summary}")
                self.log("debug", f"hello: id={idf58} priority={rec['priority']} "
                                  f"userid={rec['userid']} t_submit={rec['t_submit']:.1f}")
            except Exception as exc:  # a job that cannot be re-allocated
                self.log("err", f"hello callback failed for job {f58(jobid)}: {exc}")
                self.log("err", f"raising fatal exception on running job id={f58(jobid)}")
                job = jm.lookup(jobid)
                if job is not None:
                    jm.raise_exception(job, "scheduler-restart", 0, "failed to reallocate R for running job",
                                       userid=self.b.instance.owner)
        self.dirty = True

    def hello_R(self, jobid):
        """R of a hello record that came without one: the job's current R, else
        the KVS R (hello records from the job manager normally carry it)."""
        R = self.b.housekeeping.R_of(jobid)
        if R is not None:
            return R
        job = self.b.jm.lookup(jobid)
        if job is not None and job.R:
            return job.R
        return self.b.kvs.get(kvs_key(jobid, "R"))

    def ready_args(self):
        if self.queue_depth == "unlimited":
            return "unlimited", None
        return "limited", int(self.queue_depth)

    def ready_log(self):
        depth = self.queue_depth
        self.log("info", f"ready: queue-depth={depth} log-level=info pool-class=Rv1Pool Rv1 "
                         f"{self.rset.summary()}")

    # -- message dispatch -------------------------------------------------------------

    def handle(self, topic, msg):
        method = topic.split(".", 1)[1]
        if method == "alloc":
            self.alloc(msg)
        elif method == "free":
            self.free(msg)
        elif method == "cancel":
            self.cancel(msg)
        elif method == "prioritize":
            self.prioritize(msg)
        else:
            raise RuntimeError(f"sched: unknown method {method}")
        self.dirty = True

    def request_pass(self):
        self.needs_pass = True

    def respond(self, jobid, rtype, **payload):
        payload.update({"id": jobid, "type": rtype})
        self.b.send("job-manager.alloc-response", payload)

    # -- protocol handlers ------------------------------------------------------------

    def set_debug(self, flags):
        self.debug_flags = flags
        self.dirty = True
        self.request_pass()

    def stats(self):
        return {"policy": self.policy, "queue-depth": self.queue_depth, "pending_jobs": len(self.queue),
                "allocated_jobs": len(self.pool), "sched_passes": self.passes,
                "debug": self.debug_flags}

    def alloc(self, msg):
        jobid = msg["id"]
        if self.debug_flags & 1:
            self.respond(jobid, DENY, note="DEBUG_FAIL_ALLOC")
            return
        try:
            request = request_from_jobspec(msg["jobspec"])
        except Exception as exc:
            self.respond(jobid, DENY, note=f"cannot parse jobspec: {exc}")
            return
        self.queue[jobid] = PendingJob(jobid, msg["priority"], msg["userid"], msg["t_submit"], request)
        self.request_pass()

    def free(self, msg):
        from flux_lite.formats.rset import Rset

        jobid = msg["id"]
        rset = Rset.from_dict(msg["R"])
        final = bool(msg.get("final"))
        self.log("debug", f"free: {f58(jobid)}: {rset.summary()}" + (" (final)" if final else ""))
        self.pool.free(jobid, rset, final)
        self.request_pass()

    def cancel(self, msg):
        jobid = msg["id"]
        pj = self.queue.pop(jobid, None)
        if pj is None:
            return
        self.respond(jobid, CANCEL)
        self.request_pass()

    def prioritize(self, msg):
        for jobid, priority in msg.get("jobs", []):
            pj = self.queue.get(jobid)
            if pj is not None:
                pj.priority = priority
        self.request_pass()

    def expiration(self, jobid, expiration):
        """sched.expiration: every flux-lite policy moves the job's end in its pool
        (flux-core's FIFO accepts without tracking; Fluxion answers ENOSYS)."""
        if expiration < 0:
            raise FluxLiteError(f"invalid expiration {expiration}", errno=EINVAL)
        if self.debug_flags & 4:
            raise FluxLiteError("Rejecting expiration update for testing", errno=EINVAL)
        self.job_expiration_changed(jobid, expiration)

    def job_expiration_changed(self, jobid, expiration):
        if jobid in self.pool:
            self.pool.update_expiration(jobid, expiration)
        self.dirty = True
        self.request_pass()

    def resource_update(self, down):
        down = down & self.rset.ranks
        self.pool.set_up(self.pool.ranks - down)
        if down:
            self.pool.set_down(down)
        self.dirty = True
        self.request_pass()

    def set_instance_expiration(self, expiration):
        self.log("info", f"resource expiration updated to {expiration:.2f}")
        self.request_pass()

    def timer(self, what, jobid, arg):
        self.request_pass()

    # -- helpers for policies -------------------------------------------------------------

    def sorted_queue(self):
        return sorted(self.queue.values(), key=PendingJob.sort_key)

    @property
    def instance_expiration(self):
        return self.b.resources.instance_R["execution"].get("expiration", 0.0) or 0.0

    def try_alloc(self, pj):
        """Allocate now; returns the Rset or raises InsufficientResources/InfeasibleRequest."""
        return self.pool.alloc(pj.jobid, pj.request, self.b.now, expiration_default=self.instance_expiration)

    def success(self, pj, rset, annotations=None):
        """Commit R to the KVS, then answer SUCCESS; pending sched.* keys are nulled."""
        R = rset.to_dict()
        self.b.kvs.put_text(kvs_key(pj.jobid, "R"), json.dumps(R))
        sched_ann = {k: None for k in pj.annotations}
        sched_ann.update((annotations or {}).get("sched", {}))
        ann = dict(annotations or {})
        if sched_ann:
            ann["sched"] = sched_ann
        self.queue.pop(pj.jobid, None)
        self.log("debug", f"alloc: {f58(pj.jobid)}: {rset.summary()}")
        self.respond(pj.jobid, SUCCESS, R=R, annotations=ann)
        self.dirty = True

    def deny(self, pj, note):
        self.queue.pop(pj.jobid, None)
        self.respond(pj.jobid, DENY, note=note)
        self.dirty = True

    def annotate(self, pj, sched_annotations):
        """Send only what changed since the last annotation of this job."""
        changed = {}
        for key, value in sched_annotations.items():
            if value is None:
                if key in pj.annotations:
                    changed[key] = None
                    del pj.annotations[key]
            elif pj.annotations.get(key) != value:
                changed[key] = value
                pj.annotations[key] = value
        if changed:
            self.respond(pj.jobid, ANNOTATE, annotations={"sched": changed})
            self.dirty = True

    # -- the pass ------------------------------------------------------------------------------

    def run_pass(self):
        self.needs_pass = False
        self.passes += 1
        self.schedule()
        # Forecasts only show up as annotations on pending jobs, which only
        # matter once the command settles: one forecast per command, at the
        # final time, instead of one after every pass of a catch-up.
        self.needs_forecast = True

    def schedule(self):
        raise NotImplementedError

    def forecast(self):
        pass

    def check(self):
        """Allocations as this scheduler holds them: jobid -> Rset."""
        return {jobid: rset for jobid, (rset, _end) in self.pool.allocations().items()}
