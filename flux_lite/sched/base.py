"""The scheduler side of RFC 27, shared by every policy.

A scheduler module owns its resource pool and pending-request queue,
persisted under its own KVS key (``sched.state``) and discarded when the
module is removed. It talks to the job manager only through the messages and
requests of :mod:`flux_lite.protocol`, carried by the broker: once loaded it
drives its own start-up (``job-manager.sched-hello``, re-registering each
job's allocation through :meth:`Scheduler.hello`, then
``job-manager.sched-ready``); it answers ``sched.alloc`` with
``job-manager.alloc-response`` messages (SUCCESS after writing
``job.<id>.R``, ANNOTATE, DENY or CANCEL), and takes ``sched.free``,
``sched.cancel``, ``sched.prioritize``, and the requests
``sched.expiration``, ``sched.resource-update``, ``sched.resource-status``,
``sched.stats-get`` and ``sched.debug``.

A policy is a subclass in a file of its own under flux_lite/sched/ (see
:mod:`flux_lite.sched.registry`): it declares its module name, policies and
module arguments, and overrides ``schedule()`` and ``forecast()``; one that
keeps state derived from the queue or the pool overrides ``changed()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from flux_lite import protocol as rfc27
from flux_lite import schedstate
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58, f58_namer, kvs_key
from flux_lite.formats.rset import Rset, nodes_summary, rlite_nodes, rlite_without
from flux_lite.sched import store
from flux_lite.sched.pool import InfeasibleRequest, Pool
from flux_lite.sched.treepool import TreePool
from flux_lite.sched.request import ResourceRequest
from flux_lite.schedstate import STATE_KEY

if TYPE_CHECKING:
    from flux_lite.broker import Broker
    from flux_lite.formats.rset import Rset

HELLO_PROGRESS_EVERY = 500  # hello records between progress calls (a bar for large reloads)

# debug bits, as flux-core's sched-simple names them (flux module debug --setbit N)
DEBUG_FAIL_ALLOC = 1  # while set, alloc requests are denied
DEBUG_ANNOTATE_REASON_PENDING = 2  # while set, pending jobs say why they wait, not when they start
DEBUG_EXPIRATION_UPDATE_DENY = 4  # while set, sched.expiration requests are refused

LOG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
_LEVEL = {name: i for i, name in enumerate(LOG_LEVELS)}
_INFO, _DEBUG = _LEVEL["info"], _LEVEL["debug"]


class ModuleArg(NamedTuple):
    """One `flux module load` argument a scheduler module accepts.

    ``parse(value)`` turns the text after ``key=`` (None for a flag) into
    entries of the module's args dict, raising UsageError when invalid.
    ``values`` are completion candidates for the value; ``complete`` False
    keeps the argument out of completion (accepted, but not offered).
    """

    key: str
    parse: Callable[..., dict[str, Any]]  # (value text, or None for a flag) -> args
    help: str
    values: tuple[str, ...] = ()
    flag: bool = False
    complete: bool = True


def posint(value: str | None, key: str, extra: str = "") -> int:
    try:
        n = int(value)  # type: ignore[arg-type]  # None (no "=value") is invalid too
    except (TypeError, ValueError):
        n = 0
    if n <= 0:
        raise UsageError(f"{key}='{value}' is invalid: expected a positive integer{extra}")
    return n


def parse_depth(value: str | None) -> int | str:
    if value == "unlimited":
        return "unlimited"
    return posint(value, "queue-depth", extra=" or 'unlimited'")


def _parse_mode(value: str) -> dict[str, Any]:
    if value == "unlimited":
        return {"queue-depth": "unlimited"}
    if value.startswith("limited="):
        n = value[len("limited="):]
        try:
            limit = int(n)
        except ValueError:
            limit = 0
        if limit <= 0:
            raise UsageError(f"mode=limited= requires a positive integer, got '{n}'")
        return {"queue-depth": limit}
    raise UsageError(f"unknown argument 'mode={value}': built-in options are queue-depth, log-level, pool-class")


def _parse_log_level(value: str) -> dict[str, Any]:
    if value not in LOG_LEVELS:
        raise UsageError(f"log-level='{value}' is invalid")
    return {"log-level": value}


POOL_CLASSES = ("Rv1Pool", "TreePool")


def _parse_pool_class(value: str) -> dict[str, Any]:
    if value not in POOL_CLASSES:
        raise UsageError(f"pool-class='{value}' is invalid")
    return {"pool-class": value}


# the arguments every scheduler module takes (Flux's built-in options)
COMMON_ARGS = (
    ModuleArg("queue-depth", lambda v: {"queue-depth": parse_depth(v)},
              "outstanding alloc requests (limited mode), or unlimited", ("unlimited",)),
    ModuleArg("mode", _parse_mode, "unlimited, or limited=N", ("unlimited", "limited=")),
    ModuleArg("log-level", _parse_log_level, "the module's log level", LOG_LEVELS),
    ModuleArg("pool-class", _parse_pool_class, "resource pool class (Rv1Pool, TreePool)", POOL_CLASSES),
)


_SORT_KEY = attrgetter("key")  # PendingJob.sort_key, read in C


class PendingJob:
    __slots__ = ("jobid", "_priority", "userid", "t_submit", "request", "annotations", "duration", "key")

    def __init__(self, jobid: int, priority: int, userid: int, t_submit: float, request: ResourceRequest,
                 annotations: dict | None = None) -> None:
        self.jobid = jobid
        self.priority = priority
        self.userid = userid
        self.t_submit = t_submit
        self.request = request
        self.annotations = annotations or {}  # sched.* keys last sent
        self.duration = request.duration

    @property
    def priority(self) -> int:
        return self._priority

    @priority.setter
    def priority(self, priority: int) -> None:
        self._priority = priority
        self.key = (-priority, self.jobid)  # sort_key(), made once per priority (every pass sorts the queue)

    def sort_key(self) -> tuple[int, int]:
        return self.key

    def dump(self) -> list:
        return [self.jobid, self.priority, self.userid, self.t_submit, self.request.as_dict(), self.annotations]

    @classmethod
    def load(cls, rec: list) -> PendingJob:
        jobid, priority, userid, t_submit, req, ann = rec
        return cls(jobid, priority, userid, t_submit, ResourceRequest(**req), ann)


class Scheduler:
    """Base of every scheduler module. Subclasses declare:

    ``name``         the module name (``flux module load NAME``)
    ``policies``     the ``sched.policy`` values it implements (the first is its default)
    ``description``  one line, for completion and listings
    ``module_args``  the ModuleArg tuple it accepts (COMMON_ARGS plus its own)
    ``queue_depth``  its default queue depth (an int: limited mode; or "unlimited")
    """

    name = "sched-simple"
    policies: tuple[str, ...] = ()
    description = ""
    module_args: tuple[ModuleArg, ...] = COMMON_ARGS
    queue_depth: int | str = 8
    hello_partial_ok = True
    policy = "fcfs"
    # Flux's Python schedulers log at info unless loaded with log-level=
    default_log_level = "info"

    @classmethod
    def policy_args(cls, policy: str, cfg: dict | None = None) -> dict[str, Any]:
        """Module args that select `policy`, plus what the instance
        configuration (cfg, if given) says about it."""
        return {}

    def __init__(self, broker: Broker, args: dict | None = None, state: dict | None = None) -> None:
        self.b = broker
        self.args = dict(args or {})
        self.apply_args(self.args)

        self._R_of = Rset.from_dict  # (a free reads its R: no import statement per message)
        # the resources acquired at load time (as Flux's resource.acquire):
        # a later config change (resource.exclude) applies at the next load
        if state is not None and state.get("R"):
            self.rset = Rset.from_dict(state["R"])
        else:
            self.rset = broker.resources.rset
        down = broker.resources.down_ranks() & self.rset.ranks

        # version 2: the allocations and the queue are rows of their own
        # (sched.store); an older state holds them in the key, and is
        # rewritten as rows at the next save
        conn = broker.kvs.conn if state is not None else None
        rows = state is not None and conn is not None and state.get("version") == schedstate.VERSION \
            and schedstate.present(conn)
        pool_cls = self.pool_type()
        self.pool = pool_cls(self.rset)
        if rows:
            assert conn is not None
            store.attach(self.pool, conn)
        elif state is not None and state.get("allocs"):
            self.pool = pool_cls.load(self.rset, state["allocs"])
        if down:
            self.pool.set_down(down)
        self.queue: store.StoredQueue = store.StoredQueue()
        self.queue.rewrite = not rows
        self.needs_pass = False
        self.needs_forecast = False
        # an older state is rewritten as rows by the first save
        self.dirty = state is not None and not rows
        self._meta_dirty = state is None or not rows
        self._R_dict: dict | None = None
        self._names: dict[int, str] = {}  # jobid -> f58, of jobs named in log lines (see job_name)
        self.passes = 0  # scheduling and forecast passes of this command
        self.forecasts = 0
        self.debug_flags = 0
        if state is not None:
            if rows:
                assert conn is not None
                self.queue = store.load_queue(conn, PendingJob)
            self.load_state(state)

    def pool_type(self) -> type[Pool]:
        """The pool class: pool-class= if given, else the one R's
        ``scheduling.writer`` names (TreePool), else Rv1Pool's (Flux's
        Scheduler._make_pool)."""
        name = self.args.get("pool-class")
        if name is None:
            scheduling = self.rset.scheduling
            if isinstance(scheduling, dict) and scheduling.get("writer") in ("TreePool", "flux.resource.TreePool"):
                name = "TreePool"
        return TreePool if name == "TreePool" else Pool

    def apply_args(self, args: dict) -> None:
        self.log_level = args.get("log-level", self.default_log_level)
        self._log_max = LOG_LEVELS.index(self.log_level)
        if "queue-depth" in args:
            self.queue_depth = args["queue-depth"]
        if args.get("test-hello-nopartial"):
            self.hello_partial_ok = False
        if "partial-ok" in args:
            self.hello_partial_ok = bool(args["partial-ok"])

    # -- persistence ------------------------------------------------------------

    def load_state(self, state: dict) -> None:
        self.debug_flags = state.get("debug", 0)
        for rec in state.get("queue", []):  # an older state: the queue in the key
            pj = PendingJob.load(rec)
            self.queue[pj.jobid] = pj
        self.load_extra(state)
        self._saved_extra = self.dump_extra()

    def load_extra(self, state: dict) -> None:
        pass

    def dump_extra(self) -> dict:
        return {}

    def save(self) -> None:
        """Write what changed: rows of the pool and the queue (sched.store),
        and the small sched.state key when its contents changed."""
        if not self.dirty:
            return

        store.save(self)
        extra = self.dump_extra()
        if self._meta_dirty or extra != getattr(self, "_saved_extra", None):
            if self._R_dict is None:  # the acquired R never changes: encoded once
                self._R_dict = self.rset.to_dict()
            state = {"version": schedstate.VERSION, "debug": self.debug_flags, "R": self._R_dict}
            state.update(extra)
            self.b.kvs.put(STATE_KEY, state)
            self._saved_extra = extra
            self._meta_dirty = False
        self.dirty = False

    # -- logging ------------------------------------------------------------------

    # a Python broker module in Flux (the broker logs the process it runs in)
    python_module = False
    # does the module honour DEBUG_FAIL_ALLOC and DEBUG_EXPIRATION_UPDATE_DENY
    # (sched-simple's test hooks; flux-core's sched-fifo has none)
    debug_hooks = True

    def logs(self, level: str) -> bool:
        """Does the module's log level let `level` through? (Callers check
        before formatting costly debug lines.)"""
        return _LEVEL[level] <= self._log_max

    def log(self, level: str, msg: str) -> None:
        if _LEVEL[level] <= self._log_max:
            self.b.log(self.name, level, msg)

    def job_name(self, jobid: int) -> str:
        """f58(jobid), made once per command while the job is allocated or
        reserved: its debug lines name it a few times (backfill, alloc, free)."""
        name = self._names.get(jobid)
        if name is None:
            if len(self._names) >= 65536:
                self._names.clear()
            name = self._names[jobid] = f58(jobid)
        return name

    # -- start-up: hello, then ready (the module drives it) ------------------------

    def start(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Synchronise with the job manager and tell it alloc requests may flow.

        progress(done, total) is called now and then (a bar for large reloads).
        """
        b = self.b
        records = b.rpc(rfc27.JM_HELLO, rfc27.hello_request(self.hello_partial_ok, R_text=True))
        self._hello_name = f58_namer()  # (the prefix read once for the log lines)
        total = len(records)
        self.pool.begin_bulk()
        for count, rec in enumerate(records, 1):
            if progress is not None and count % HELLO_PROGRESS_EVERY == 0:
                progress(count, total)
            jobid = rec["id"]
            R = rec.get("R") or self.hello_R(jobid)
            if R is None:
                self.log("err", f"hello: failed to look up R for job {f58(jobid)}")
                continue
            try:
                self.hello(jobid, rec["priority"], rec["userid"], rec["t_submit"], R, rec.get("free"))
            except Exception as exc:  # a job that cannot be re-allocated
                self.log("err", f"hello callback failed for job {f58(jobid)}: {exc}")
                self.log("err", f"raising fatal exception on running job id={f58(jobid)}")
                try:
                    b.rpc(rfc27.JM_RAISE, rfc27.raise_request(jobid, "scheduler-restart", 0,
                                                                "failed to reallocate R for running job"))
                except FluxLiteError:
                    pass  # the job is gone meanwhile
        self.pool.end_bulk()
        self.dirty = True
        mode, limit = self.ready_args()
        b.rpc(rfc27.JM_READY, rfc27.ready_request(mode, limit))
        self.ready_log()
        self.request_pass()

    # how hello names a job in its log lines (start() sets one that reads the prefix once)
    _hello_name = staticmethod(f58)

    def hello(self, jobid: int, priority: int, userid: int, t_submit: float, R: dict | str,
              free: str | None = None) -> None:
        """Re-register one allocation the job manager reports (minus the
        ranks in the `free` idset, already released); R is a dict or its
        JSON text. Raising makes the job manager kill the job
        (scheduler-restart)."""
        summary = self.pool.register_hello(jobid, R, free)
        if summary is None:  # unusual R, or a conflict: the checking path says what is wrong
            Rd = json.loads(R) if isinstance(R, str) else R
            if free:
                Rd = rlite_without(Rd, IDset.parse(free))
            nodes = rlite_nodes(Rd)
            summary = nodes_summary(nodes)
            self.pool.register_alloc(jobid, Rd, nodes)
        idf58 = self._hello_name(jobid)
        if self._log_max >= _INFO:
            self.b.log(self.name, "info", f"hello: {idf58}: {summary}")
            if self._log_max >= _DEBUG:
                self.b.log(self.name, "debug",
                           f"hello: id={idf58} priority={priority} userid={userid} t_submit={t_submit:.1f}")

    def hello_R(self, jobid: int) -> dict | None:
        """R of a hello record that came without one: the KVS R, as a Flux
        scheduler reads it (the job manager's records normally carry it)."""
        return self.b.kvs.get(kvs_key(jobid, "R"))

    def ready_args(self) -> tuple[str, int | None]:
        if self.queue_depth == "unlimited":
            return rfc27.UNLIMITED, None
        return rfc27.LIMITED, int(self.queue_depth)

    def ready_log(self) -> None:
        depth = self.queue_depth
        pool = "TreePool" if isinstance(self.pool, TreePool) else "Rv1Pool"
        self.log("info", f"ready: queue-depth={depth} log-level={self.log_level} pool-class={pool} Rv1 "
                         f"{self.rset.summary()}")

    # -- message dispatch -------------------------------------------------------------

    # messages (no response) and requests (a response payload, or an error)
    MESSAGES = {rfc27.SCHED_ALLOC: "alloc", rfc27.SCHED_FREE: "free", rfc27.SCHED_CANCEL: "cancel",
                rfc27.SCHED_PRIORITIZE: "prioritize"}
    REQUESTS = {rfc27.SCHED_EXPIRATION: "handle_expiration", rfc27.SCHED_RESOURCE_UPDATE: "handle_resource_update",
                rfc27.SCHED_RESOURCE_STATUS: "handle_resource_status", rfc27.SCHED_STATS: "handle_stats",
                rfc27.SCHED_DEBUG: "handle_debug", rfc27.SCHED_EXPIRATION_PREVIEW: "handle_expiration_preview",
                rfc27.SCHED_ALLOCATIONS: "handle_allocations", rfc27.SCHED_FEASIBILITY: "handle_feasibility"}

    def handle(self, topic: str, msg: dict, cred: rfc27.Cred | None = None) -> Any:
        method = self.MESSAGES.get(topic)
        if method is not None:
            self.changed(method, msg)
            getattr(self, method)(msg)
            self.dirty = True
            return None
        method = self.REQUESTS.get(topic)
        if method is None:
            raise rfc27.error(rfc27.ENOSYS, f"{topic}: unknown method")
        return getattr(self, method)(msg)

    def changed(self, what: str, msg: dict | None = None) -> None:
        """Hook: something a pass depends on is about to change.

        what: a message ("alloc", "free", "cancel", "prioritize"), or
        "expiration" (a job's end), "resources" (ranks up or down),
        "instance-expiration", "debug", "timer". Policies that keep state
        derived from the queue or the pool (a plan) drop it here.
        """

    def request_pass(self) -> None:
        self.needs_pass = True

    def respond(self, jobid: int, rtype: int, **payload: Any) -> None:
        self.b.send(rfc27.JM_ALLOC_RESPONSE, rfc27.alloc_response(jobid, rtype, **payload))

    # -- requests ------------------------------------------------------------------------

    def handle_expiration(self, msg: dict) -> dict:
        jobid, expiration = rfc27.check_expiration(msg)
        self.expiration(jobid, expiration)
        return {}

    def handle_resource_update(self, msg: dict) -> dict:
        if "down" in msg:
            self.resource_update(IDset.parse(msg["down"]))
        if "expiration" in msg:
            self.set_instance_expiration(msg["expiration"])
        return {}

    def handle_resource_status(self, msg: dict) -> dict:
        """sched.resource-status; R travels as Rset objects within the process."""
        return {"allocated": self.pool.allocated_rset()}

    def handle_feasibility(self, msg: dict) -> dict:
        """feasibility.check: could the jobspec ever be satisfied by the whole
        pool (allocations and down nodes aside)?"""
        try:
            self.pool.check_feasibility(self.pool.read_request(cast(dict, msg.get("jobspec"))))
        except InfeasibleRequest as exc:
            raise rfc27.error(rfc27.EINVAL, str(exc) or "unsatisfiable request") from None
        except Exception as exc:  # a jobspec the scheduler cannot read
            raise rfc27.error(rfc27.EINVAL, f"cannot parse jobspec: {exc}") from None
        return {}

    def handle_allocations(self, msg: dict) -> dict:
        """flux-lite's `sched check`: every allocation the scheduler holds (jobid -> Rset).
        The queue's rows, otherwise read only as needed, are all read too, so
        that a damaged one is reported here (and by fsck)."""
        self.queue.full()
        return {"allocations": self.check()}

    def handle_stats(self, msg: dict) -> dict:
        return self.stats()

    def handle_debug(self, msg: dict) -> dict:
        if "flags" in msg:
            self.set_debug(msg["flags"])
        return {"flags": self.debug_flags}

    def handle_expiration_preview(self, msg: dict) -> dict:
        """flux-lite's `update --dry-run`: how queued jobs would move (lines)."""
        preview = getattr(self, "preview_expiration", None)
        if preview is None:
            raise rfc27.error(rfc27.ENOSYS, f"{self.name} cannot preview expiration updates")
        jobid, expiration = rfc27.check_expiration(msg)
        return {"moves": preview(jobid, expiration)}

    # -- protocol handlers ------------------------------------------------------------

    def set_debug(self, flags: int) -> None:
        self.changed("debug")
        self.debug_flags = flags
        self.dirty = True
        self._meta_dirty = True
        self.request_pass()

    def stats(self) -> dict:
        return {"policy": self.policy, "queue-depth": self.queue_depth, "pending_jobs": len(self.queue),
                "allocated_jobs": len(self.pool), "sched_passes": self.passes,
                "debug": self.debug_flags}

    def alloc(self, msg: dict) -> None:
        jobid = msg["id"]
        if self.debug_flags & DEBUG_FAIL_ALLOC and self.debug_hooks:
            self.respond(jobid, rfc27.DENY, note="DEBUG_FAIL_ALLOC")
            return
        try:
            request = self.pool.read_request(msg["jobspec"])
        except Exception as exc:
            self.respond(jobid, rfc27.DENY, note=f"cannot parse jobspec: {exc}")
            return
        self.queue[jobid] = PendingJob(jobid, msg["priority"], msg["userid"], msg["t_submit"], request)
        self.request_pass()

    def free(self, msg: dict) -> None:
        jobid = msg["id"]
        rset = self._R_of(msg["R"])
        final = bool(msg.get("final"))
        if self.logs("debug"):
            name = (self._names.pop(jobid, None) or f58(jobid)) if final else self.job_name(jobid)
            self.log("debug", f"free: {name}: {rset.summary()}" + (" (final)" if final else ""))
        self.pool.free(jobid, rset, final)
        self.request_pass()

    def cancel(self, msg: dict) -> None:
        jobid = msg["id"]
        pj = self.queue.pop(jobid, None)
        if pj is None:
            return
        self.respond(jobid, rfc27.CANCEL)
        self.request_pass()

    def prioritize(self, msg: dict) -> None:
        for jobid, priority in msg.get("jobs", []):
            pj = self.queue.get(jobid)
            if pj is not None:
                pj.priority = priority
                self.queue.touch(jobid)
        self.request_pass()

    def expiration(self, jobid: int, expiration: float) -> None:
        """sched.expiration: every flux-lite policy moves the job's end in its pool
        (flux-core's FIFO accepts without tracking; Fluxion answers ENOSYS)."""
        if self.debug_flags & DEBUG_EXPIRATION_UPDATE_DENY and self.debug_hooks:
            raise rfc27.error(rfc27.EINVAL, "Rejecting expiration update for testing")
        self.job_expiration_changed(jobid, expiration)

    def job_expiration_changed(self, jobid: int, expiration: float) -> None:
        self.changed("expiration")
        if jobid in self.pool:
            self.pool.update_expiration(jobid, expiration)
        self.dirty = True
        self.request_pass()

    def resource_update(self, down) -> None:
        self.changed("resources")
        down = down & self.rset.ranks
        self.pool.set_up(self.pool.ranks - down)
        if down:
            self.pool.set_down(down)
        self.dirty = True
        self.request_pass()

    def set_instance_expiration(self, expiration: float) -> None:
        self.changed("instance-expiration")
        self.log("info", f"resource expiration updated to {expiration:.2f}")
        self.request_pass()

    def timer(self, what: str, jobid: int | None, arg: Any) -> None:
        self.changed("timer")
        self.request_pass()

    # -- helpers for policies -------------------------------------------------------------

    def sorted_queue(self) -> list[PendingJob]:
        return sorted(self.queue.values(), key=_SORT_KEY)

    @property
    def instance_expiration(self) -> float:
        return self.b.resources.instance_R["execution"].get("expiration", 0.0) or 0.0

    def try_alloc(self, pj: PendingJob) -> Rset:
        """Allocate now; returns the Rset or raises InsufficientResources/InfeasibleRequest."""
        return self.pool.alloc(pj.jobid, pj.request, self.b.now, expiration_default=self.instance_expiration)

    def success(self, pj: PendingJob, rset: Rset, annotations: dict | None = None, name: str | None = None) -> None:
        """Commit R to the KVS, then answer SUCCESS; pending sched.* keys are
        nulled. name: the job's name, if the caller made it already."""
        R = rset.to_dict()
        text = rset.to_json()
        self.b.kvs.put_text(kvs_key(pj.jobid, "R"), text)
        rset.remember_as(text, R)
        sched_ann = {k: None for k in pj.annotations}
        sched_ann.update((annotations or {}).get("sched", {}))
        ann = dict(annotations or {})
        if sched_ann:
            ann["sched"] = sched_ann
        self.queue.pop(pj.jobid, None)
        if self.logs("debug"):
            self.log("debug", f"alloc: {name or self.job_name(pj.jobid)}: {rset.summary()}")
        self.respond(pj.jobid, rfc27.SUCCESS, R=R, annotations=ann)
        self.dirty = True

    def deny(self, pj: PendingJob, note: str) -> None:
        self.queue.pop(pj.jobid, None)
        self.respond(pj.jobid, rfc27.DENY, note=note)
        self.dirty = True

    def annotate(self, pj: PendingJob, sched_annotations: dict[str, Any]) -> None:
        """Send only what changed since the last annotation of this job."""
        changed: dict[str, Any] = {}
        for key, value in sched_annotations.items():
            if value is None:
                if key in pj.annotations:
                    changed[key] = None
                    del pj.annotations[key]
            elif pj.annotations.get(key) != value:
                changed[key] = value
                pj.annotations[key] = value
        if changed:
            self.queue.touch(pj.jobid)
            self.respond(pj.jobid, rfc27.ANNOTATE, annotations={"sched": changed})
            self.dirty = True

    # -- the pass ------------------------------------------------------------------------------

    def run_pass(self) -> None:
        self.needs_pass = False
        self.passes += 1
        self.schedule()
        # Forecasts only show up as annotations on pending jobs, which only
        # matter once the command settles: one forecast per command, at the
        # final time, instead of one after every pass of a catch-up.
        self.needs_forecast = True

    def schedule(self) -> None:
        raise NotImplementedError

    def forecast(self) -> None:
        pass

    def check(self) -> dict[int, Rset]:
        """Allocations as this scheduler holds them: jobid -> Rset."""
        return {jobid: rset for jobid, (rset, _end) in self.pool.allocations().items()}
