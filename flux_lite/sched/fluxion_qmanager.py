"""sched-fluxion-qmanager: Fluxion's queue manager, the scheduler of a Fluxion site.

Selected by ``sched.policy = "fluxion"`` (which loads sched-fluxion-resource
and sched-fluxion-feasibility first, as Flux's modprobe does) or loaded by
hand after sched-fluxion-resource. It matches through the resource module's
graph (sched/fluxion_graph.py) and keeps flux-lite's pool in step with the
graph's allocations, so ``sched check`` and ``resource list`` read it as for
every scheduler.

Queues: one per RFC 33 ``[queues]`` entry without ``parent`` (``default``
without any); a virtual queue's jobs are scheduled in its parent. Each has a
queue policy from ``[sched-fluxion-qmanager]`` (or the module arguments, which
win; per-queue forms ``queue-policy-per-queue`` etc.), read at load only:

* fcfs: the pending jobs in order until the first that does not fit now;
* easy / hybrid / conservative: every loop cancels the reservations of the
  previous one; jobs are tried in order, ``allocate_orelse_reserve`` while
  fewer than ``reservation-depth`` are reserved in this loop (easy 1, hybrid
  64 or policy-params', conservative up to queue-depth), else allocate now;
  a job that can be neither allocated nor reserved is blocked until a job
  ends, resources change or priorities change; a loop examines
  ``queue-depth`` jobs (blocked ones not counted) and starts over when it
  stopped there having scheduled something.

Pending order: priority (descending), then submit time, then arrival.
Annotations: ``sched.t_estimate`` and ``sched.selection_type`` (``reserved``)
on a pending job when its reservation's start changes, both null when it
loses it; the SUCCESS carries ``t_estimate`` null and ``selection_type``
(immediate, backfill or reserved). ``sched.expiration`` is answered ENOSYS.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from errno import EBUSY, EINVAL, ENODEV, ENOENT, ERANGE
from typing import TYPE_CHECKING, Any

from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58, f58plain, kvs_key
from flux_lite.formats.rset import rlite_without
from flux_lite.sched import fluxion_graph, fluxion_resource
from flux_lite.sched.base import ModuleArg, Scheduler
from flux_lite.sched.pool import PoolError
from flux_lite.sched.registry import register
from flux_lite.sched.request import ResourceRequest, request_from_jobspec

if TYPE_CHECKING:
    from flux_lite.broker import Broker

QUEUE_POLICIES = ("fcfs", "easy", "hybrid", "conservative")
QMANAGER_KEYS = ("queues", "queue-policy", "queue-params", "policy-params", "queue-policy-per-queue",
                 "queue-params-per-queue", "policy-params-per-queue", "vqueue-parents")
DEFAULT_QUEUE = "default"
QUEUE_DEPTH = 32
MAX_QUEUE_DEPTH = 1000000
HYBRID_RESERVATION_DEPTH = 64
MAX_RESERVATION_DEPTH = 100000
UNSET = None


def _load_error(msg: str, errnum: int) -> FluxLiteError:
    return FluxLiteError(msg, errno=errnum)


def _pairs(text: str, sep: str, kv: str) -> list[tuple[str, str]]:
    """(name, value) of each non-empty item of text split on sep, in order."""
    return [(k, v) for k, _kv, v in (item.partition(kv) for item in text.split(sep) if item)]


def _kv_list(text: str) -> list[tuple[str, str]]:
    """'k=v,k=v' in order (an empty text: none)."""
    return _pairs(text, ",", "=")


def _multi(text: str) -> list[tuple[str, str]]:
    """'q1:v1 q2:v2' (space-separated name:value)."""
    return _pairs(text, " ", ":")


def _stoi(text: str) -> int | None:
    """std::stoi: the leading integer, or None (invalid_argument)."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else None


class QueueProps:
    """queue-policy, queue-params, policy-params of one queue (None = unset)."""

    def __init__(self) -> None:
        self.policy: str | None = UNSET
        self.qparams: str | None = UNSET
        self.pparams: str | None = UNSET

    def as_dict(self) -> dict[str, str]:
        out = {}
        if self.policy is not None:
            out["queue-policy"] = self.policy
        if self.qparams is not None:
            out["queue-params"] = self.qparams
        if self.pparams is not None:
            out["policy-params"] = self.pparams
        return out


class QOpts:
    """The qmanager's options, parsed as Fluxion's optmgr parses them."""

    def __init__(self) -> None:
        self.top = QueueProps()
        self.per_queue: dict[str, QueueProps] = {}
        self.vparents: dict[str, str] = {}
        self.notes: list[str] = []

    def parse(self, pairs: list[tuple[str, str]]) -> None:
        unknown = [k for k, _v in pairs if k not in QMANAGER_KEYS]
        if unknown:
            raise _load_error(f"Unknown option ({unknown[0]}).", EINVAL)
        # keys are processed in the option table's order, whatever their order
        for key in QMANAGER_KEYS:
            for k, v in pairs:
                if k == key:
                    self._one(k, v)

    def _one(self, key: str, value: str) -> None:
        if key == "queues":
            self.per_queue = {name: QueueProps() for name in value.split(" ") if name}
        elif key == "vqueue-parents":
            self.vparents = dict(_multi(value))
        elif key == "queue-policy":
            if value in QUEUE_POLICIES:
                self.top.policy = value
            else:
                self.notes.append(f"Unknown queuing policy ({value})! Using default.")
        elif key == "queue-params":
            self.top.qparams = value
        elif key == "policy-params":
            self.top.pparams = value
        else:
            for name, v in _multi(value):
                props = self.per_queue.get(name)
                if props is None:
                    raise _load_error(f"Unknown queue ({name}).", ENOENT)
                if key == "queue-policy-per-queue":
                    if v in QUEUE_POLICIES:
                        props.policy = v
                    else:
                        self.notes.append(f"Unknown queuing policy ({value}) for queue ({v})! Using default. ")
                elif key == "queue-params-per-queue":
                    props.qparams = v
                else:
                    props.pparams = v

    def merge(self, src: QOpts) -> None:
        """Fluxion's +=: what src sets wins; src's queues replace ours."""
        for attr in ("policy", "qparams", "pparams"):
            if getattr(src.top, attr) is not None:
                setattr(self.top, attr, getattr(src.top, attr))
        if src.per_queue:
            self.per_queue = src.per_queue
        if src.vparents:
            self.vparents = src.vparents
        self.notes += src.notes

    def canonicalize(self) -> None:
        if not self.per_queue:
            self.per_queue = {DEFAULT_QUEUE: QueueProps()}
        for props in self.per_queue.values():
            if props.policy is None:
                props.policy = self.top.policy
            if props.qparams is None:
                props.qparams = self.top.qparams
            if props.pparams is None:
                props.pparams = self.top.pparams

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = self.top.as_dict()
        for name in sorted(self.per_queue):
            out[name] = self.per_queue[name].as_dict()
        return out


def _subtable(value: dict) -> str:
    """A TOML sub-table flattened as Fluxion does: 'k=v,k=v' in file order."""
    import json

    return ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in value.items())


def config_opts(cfg: dict) -> QOpts:
    """The options the instance config gives (RFC 33 [queues] and the
    [sched-fluxion-qmanager] table)."""
    opts = QOpts()
    pairs: list[tuple[str, str]] = []
    queues = cfg.get("queues")
    if isinstance(queues, dict) and queues:
        real, virtual = [], []
        for name, table in queues.items():
            parent = table.get("parent") if isinstance(table, dict) else None
            if parent is None:
                real.append(name)
            else:
                if parent not in queues:
                    raise _load_error(f"queue '{name}' names unknown parent '{parent}'", EINVAL)
                ptable = queues[parent]
                if isinstance(ptable, dict) and ptable.get("parent") is not None:
                    raise _load_error(f"queue '{name}' names parent '{parent}' that is itself a virtual queue",
                                      EINVAL)
                virtual.append(f"{name}:{parent}")
        pairs.append(("queues", " ".join(real)))
        if virtual:
            pairs.append(("vqueue-parents", " ".join(virtual)))
    table = cfg.get("sched-fluxion-qmanager") or {}
    for key, value in table.items():
        if key == "queues":
            raise _load_error("'queues' key not supported, use RFC33 format instead", EINVAL)
        if isinstance(value, dict):
            pairs.append((key, _subtable(value)))
        else:
            pairs.append((key, fluxion_resource.toml_text(value)))
    opts.parse(pairs)
    return opts


class FluxionQueue:
    """One internal queue: its policy, depths, and the jobs it holds."""

    def __init__(self, name: str, props: QueueProps) -> None:
        self.name = name
        self.policy = props.policy if props.policy in QUEUE_POLICIES else "fcfs"
        self.qparams_raw = props.qparams or ""
        self.pparams_raw = props.pparams or ""
        self.queue_depth = QUEUE_DEPTH
        self.max_queue_depth = MAX_QUEUE_DEPTH
        self.reservation_depth = {"fcfs": 0, "easy": 1, "hybrid": HYBRID_RESERVATION_DEPTH,
                                  "conservative": MAX_RESERVATION_DEPTH}[self.policy]
        self.max_reservation_depth = MAX_RESERVATION_DEPTH
        self.counts = dict.fromkeys(("pending", "running", "reserved", "rejected", "complete", "cancelled",
                                     "reprioritized"), 0)
        self.blocked: list[int] = []
        self.running: list[int] = []
        self.rejected: list[int] = []
        self.canceled: list[int] = []
        self.reserved: list[int] = []  # reserved by the last loop, in order
        self.schedulable = True
        self._apply()

    def _apply(self) -> None:
        qp = dict(_kv_list(self.qparams_raw))
        for key in ("max-queue-depth", "queue-depth"):
            if key not in qp:
                continue
            text = qp[key]
            if not text.isdigit():
                raise _load_error(f"{key}={text}: Invalid argument", EINVAL)
            n = int(text)
            if n < 1:
                raise _load_error(f"{key}={text}: Numerical result out of range", ERANGE)
            if key == "max-queue-depth":
                self.max_queue_depth = n
                self.queue_depth = min(self.queue_depth, n)
            else:
                self.queue_depth = min(n, self.max_queue_depth)
        pp = dict(_kv_list(self.pparams_raw))
        if self.policy == "hybrid":
            mrd = self._depth(pp, "max-reservation-depth")
            if mrd is not None:
                self.max_reservation_depth = mrd
            rd = self._depth(pp, "reservation-depth")
            # a depth not below the maximum leaves the default, as Fluxion's code does
            if rd is not None and rd < self.max_reservation_depth:
                self.reservation_depth = rd
        elif self.policy == "conservative":
            self.reservation_depth = min(self.reservation_depth, self.queue_depth)
            mrd = self._depth(pp, "max-reservation-depth")
            if mrd is not None:
                self.max_reservation_depth = mrd
                self.reservation_depth = min(self.reservation_depth, mrd)

    @staticmethod
    def _depth(pp: dict[str, str], key: str) -> int | None:
        """A policy parameter as Fluxion reads it: std::stoi (a non-number is
        ignored), below 1 fails the load."""
        if key not in pp:
            return None
        n = _stoi(pp[key])
        if n is not None and n < 1:
            raise _load_error(f"{key}: Numerical result out of range", ERANGE)
        return n

    def dump(self) -> dict:
        return {"qparams": self.qparams_raw, "pparams": self.pparams_raw, "policy": self.policy,
                "counts": self.counts, "blocked": self.blocked, "running": self.running,
                "rejected": self.rejected, "canceled": self.canceled, "reserved": self.reserved,
                "schedulable": self.schedulable}

    @classmethod
    def load(cls, name: str, rec: dict) -> FluxionQueue:
        props = QueueProps()
        props.policy, props.qparams, props.pparams = rec["policy"], rec["qparams"], rec["pparams"]
        q = cls(name, props)
        q.counts = rec["counts"]
        q.blocked, q.running, q.rejected = rec["blocked"], rec["running"], rec["rejected"]
        q.canceled, q.reserved, q.schedulable = rec["canceled"], rec["reserved"], rec["schedulable"]
        return q


class FJob:
    """A job Fluxion knows: pending, blocked or running."""

    __slots__ = ("jobid", "priority", "userid", "t_submit", "arrival", "queue", "request", "at", "old_at",
                 "was_reserved", "selection")

    def __init__(self, jobid: int, priority: int, userid: int, t_submit: float, arrival: int, queue: str,
                 request: ResourceRequest | None) -> None:
        self.jobid = jobid
        self.priority = priority
        self.userid = userid
        self.t_submit = t_submit
        self.arrival = arrival
        self.queue = queue
        self.request = request
        self.at = 0
        self.old_at = 0
        self.was_reserved = False
        self.selection = ""

    def key(self) -> tuple[int, float, int]:
        return (4294967295 - self.priority, self.t_submit, self.arrival)

    def dump(self) -> list:
        return [self.priority, self.userid, self.t_submit, self.arrival, self.queue,
                self.request.as_dict() if self.request is not None else None,
                self.at, self.old_at, self.was_reserved, self.selection]

    @classmethod
    def load(cls, jobid: int, rec: list) -> FJob:
        priority, userid, t_submit, arrival, queue, req, at, old_at, was_reserved, selection = rec
        j = cls(jobid, priority, userid, t_submit, arrival, queue, ResourceRequest(**req) if req else None)
        j.at, j.old_at, j.was_reserved, j.selection = at, old_at, was_reserved, selection
        return j


def _arg(key: str, help_: str, values: tuple[str, ...] = ()) -> ModuleArg:
    return ModuleArg(key, lambda v, key=key: {key: v if v is not None else ""}, help_, values)


@register
class FluxionQmanager(Scheduler):
    name = "sched-fluxion-qmanager"
    policies = ("fluxion",)
    description = "Fluxion's queue manager (queue policies fcfs, easy, hybrid, conservative)"
    module_args = (
        _arg("queue-policy", "fcfs, easy, hybrid or conservative", QUEUE_POLICIES),
        _arg("queue-params", "queue-depth=N,max-queue-depth=N"),
        _arg("policy-params", "reservation-depth=N,max-reservation-depth=N"),
        _arg("queues", "space-separated queue names"),
        _arg("queue-policy-per-queue", "name:policy ..."),
        _arg("queue-params-per-queue", "name:k=v,... ..."),
        _arg("policy-params-per-queue", "name:k=v,... ..."),
        _arg("vqueue-parents", "virtual:parent ..."),
    )
    queue_depth = "unlimited"
    policy = "fluxion"
    default_log_level = "debug"
    debug_hooks = False
    services = ("sched",)
    # loaded first when the configuration selects Fluxion (Flux's modprobe, with rc1's arguments)
    companions = ("sched-fluxion-resource", "sched-fluxion-feasibility")
    companion_args = {"sched-fluxion-resource": ("load-allowlist=node,core,gpu",)}
    # removing one of these stops this module
    requires = ("sched-fluxion-resource",)

    @classmethod
    def policy_args(cls, policy: str, cfg: dict | None = None) -> dict[str, Any]:
        return {"argv": []}

    def apply_args(self, args: dict) -> None:
        super().apply_args(args)
        self.queue_depth = "unlimited"  # Fluxion asks for every pending job
        self.hello_partial_ok = True

    @classmethod
    def parse_argv(cls, argv: list[str]) -> dict[str, Any]:
        """Module arguments as Fluxion takes them (key=value, split at the
        first '='); unknown keys fail the load at start, as in Fluxion."""
        return {"argv": list(argv)}

    def __init__(self, broker: Broker, args: dict | None = None, state: dict | None = None) -> None:
        self.fjobs: dict[int, FJob] = {}
        self.fqueues: dict[str, FluxionQueue] = {}
        self.vparents: dict[str, str] = {}
        self.qparams: dict[str, Any] = {}
        self.arrival = 0
        self._pending_lists: dict[str, list] | None = None
        super().__init__(broker, args, state)
        res = fluxion_resource.get(broker)
        if res is None:
            raise FluxLiteError(f"{self.name}: sched-fluxion-resource is not loaded "
                                "(sched-fluxion-resource.notify: No such file or directory)", errno=ENOENT)
        self.res = res
        self.graph = res.graph
        if state is None:
            self._configure(list((args or {}).get("argv", [])))

    # -- configuration (at load only) ------------------------------------------------

    def _configure(self, argv: list[str]) -> None:
        opts = QOpts()
        opts.top.policy, opts.top.qparams, opts.top.pparams = "fcfs", "", ""
        try:
            opts.merge(config_opts(self.b.config))
        except FluxLiteError as exc:
            self.log("err", f"process_config_file: {exc}")
            raise FluxLiteError(f"{self.name}: {exc}", errno=exc.errno) from None
        argopts = QOpts()
        argopts.per_queue = {n: QueueProps() for n in opts.per_queue}
        try:
            argopts.parse(fluxion_resource.arg_pairs(argv))
        except FluxLiteError as exc:
            self.log("err", f"process_args: {exc}")
            raise FluxLiteError(f"{self.name}: {exc}", errno=exc.errno) from None
        if any(QueueProps().as_dict() != p.as_dict() for p in argopts.per_queue.values()) \
                or any(k == "queues" for k, _v in fluxion_resource.arg_pairs(argv)):
            opts.per_queue = argopts.per_queue
        argopts.per_queue = {}
        opts.merge(argopts)
        opts.canonicalize()
        self.qparams = opts.params()
        self.vparents = dict(opts.vparents)
        self.log("info", f"version {fluxion_resource.VERSION}")
        self.log("debug", "service_register")
        for note in opts.notes:
            self.log("debug", f"process_config_file: {note}")
        for name in sorted(opts.per_queue):
            props = opts.per_queue[name]
            try:
                q = FluxionQueue(name, props)
            except FluxLiteError as exc:
                raise FluxLiteError(f"{self.name}: {exc}", errno=exc.errno) from None
            self.fqueues[name] = q
            self.log("debug", f"enforced policy (queue={name}): {q.policy}")
            self.log("debug", f"effective queue params (queue={name}): {q.qparams_raw or 'default'}")
            self.log("debug", f"effective policy params (queue={name}): {q.pparams_raw or 'default'}")
        self.log("debug", "handshaking with sched-fluxion-resource completed")

    # -- persistence -----------------------------------------------------------------

    def load_extra(self, state: dict) -> None:
        fx = state.get("fluxion") or {}
        self.fqueues = {name: FluxionQueue.load(name, rec) for name, rec in fx.get("queues", {}).items()}
        self.vparents = fx.get("vparents", {})
        self.qparams = fx.get("params", {})
        self.arrival = fx.get("arrival", 0)
        self.fjobs = {int(k): FJob.load(int(k), rec) for k, rec in fx.get("jobs", {}).items()}

    def dump_extra(self) -> dict:
        return {"fluxion": {"queues": {n: q.dump() for n, q in self.fqueues.items()}, "vparents": self.vparents,
                            "params": self.qparams, "arrival": self.arrival,
                            "jobs": {str(j): fj.dump() for j, fj in self.fjobs.items()}}}

    def save(self) -> None:
        self.dirty = True  # the queues' state lives in dump_extra (compared when saved)
        super().save()
        self.res.save()

    # -- start-up ---------------------------------------------------------------------

    def start(self, progress: Any = None) -> None:
        """hello (partial-ok), each running job re-booked in the graph (a job
        whose queue is gone is killed, as libschedutil does), then ready."""
        b = self.b
        for rec in b.rpc(rfc27.JM_HELLO, rfc27.hello_request(True)):
            jobid = rec["id"]
            R = rec.get("R") or self.hello_R(jobid)
            try:
                if R is None:
                    raise _HelloRefused()
                self.hello(jobid, rec["priority"], rec["userid"], rec["t_submit"], R, rec.get("free"))
            except _HelloRefused:
                self.log("info", f"raising fatal exception on running job id={f58(jobid)}")
                try:
                    b.rpc(rfc27.JM_RAISE, rfc27.raise_request(jobid, "scheduler-restart", 0,
                                                                "failed to reallocate R for running job"))
                except FluxLiteError:
                    pass
        self.dirty = True
        b.rpc(rfc27.JM_READY, rfc27.ready_request(rfc27.UNLIMITED, None))
        self.log("debug", "handshaking with job-manager completed")
        for q in self.fqueues.values():
            q.schedulable = True
        self.request_pass()

    def unload(self) -> None:
        """Going away: the reservations of the last loops are dropped from the graph."""
        for q in self.fqueues.values():
            for jobid in q.reserved:
                try:
                    self.graph.cancel(jobid)
                except FluxLiteError:
                    pass
            q.reserved = []
        self.res.dirty = True
        self.res.save()

    def ready_log(self) -> None:
        pass

    def queue_of_job(self, jobspec: Any) -> str | None:
        """The internal queue of a jobspec (a virtual queue's parent), or None."""
        try:
            name = jobspec["attributes"]["system"].get("queue")
        except (KeyError, TypeError, AttributeError):
            name = None
        if name is None:
            if DEFAULT_QUEUE in self.fqueues and len(self.fqueues) == 1:
                return DEFAULT_QUEUE
            return "" if "" in self.fqueues else (DEFAULT_QUEUE if DEFAULT_QUEUE in self.fqueues else None)
        name = self.vparents.get(name, name)
        return name if name in self.fqueues else None

    def hello(self, jobid: int, priority: int, userid: int, t_submit: float, R: dict | str,
              free: str | None = None) -> None:
        # (start() asks for dicts; a text is decoded)
        Rd: dict = json.loads(R) if isinstance(R, str) else R
        jobspec = self.b.kvs.get(kvs_key(jobid, "jobspec")) or {}
        qname = self.queue_of_job(jobspec)
        if qname is None:
            try:
                shown = jobspec["attributes"]["system"]["queue"]
            except (KeyError, TypeError):
                shown = DEFAULT_QUEUE
            self.log("err", f"jobmanager_hello_cb: unknown queue name (id={jobid} queue={shown})")
            raise _HelloRefused()
        if free:
            Rd = rlite_without(Rd, IDset.parse(free))
        try:
            self.graph.update(jobid, Rd, self.b.now)
        except FluxLiteError as exc:
            self.log("err", f"jobmanager_hello_cb: reconstruct (id={jobid} queue={qname}): {exc}")
            raise _HelloRefused() from None
        self._mirror(jobid, Rd)
        self.res.dirty = True
        fj = FJob(jobid, priority, userid, t_submit, self._arrive(), qname, None)
        self.fjobs[jobid] = fj
        q = self.fqueues[qname]
        q.running.append(jobid)
        q.counts["running"] += 1
        self.log("debug", f"requeue success (queue={qname} id={jobid})")

    def _arrive(self) -> int:
        self.arrival += 1
        return self.arrival

    # -- RFC 27 ---------------------------------------------------------------------------

    def alloc(self, msg: dict) -> None:
        jobid = msg["id"]
        jobspec = msg["jobspec"]
        qname = self.queue_of_job(jobspec)
        if qname is None:
            name = jobspec.get("attributes", {}).get("system", {}).get("queue") or DEFAULT_QUEUE
            self.respond(jobid, rfc27.DENY, note=f"queue ({name}) doesn't exist")
            return
        try:
            request = request_from_jobspec(jobspec)
        except Exception as exc:
            self.respond(jobid, rfc27.DENY, note=str(exc) or "invalid jobspec")
            return
        fj = FJob(jobid, msg["priority"], msg["userid"], msg["t_submit"], self._arrive(), qname, request)
        self.fjobs[jobid] = fj
        self._pend_add(fj)
        q = self.fqueues[qname]
        q.counts["pending"] += 1
        q.schedulable = True
        self.request_pass()

    def cancel(self, msg: dict) -> None:
        jobid = msg["id"]
        fj = self.fjobs.get(jobid)
        if fj is None or jobid in self.fqueues[fj.queue].running:
            return
        q = self.fqueues[fj.queue]
        self._pend_remove(fj)
        del self.fjobs[jobid]
        if jobid in q.blocked:
            q.blocked.remove(jobid)
        if jobid in q.reserved:
            q.reserved.remove(jobid)
            try:
                self.graph.cancel(jobid)
            except FluxLiteError:
                pass
        q.canceled.append(jobid)
        q.counts["cancelled"] += 1
        self.respond(jobid, rfc27.CANCEL)
        q.schedulable = True
        self.request_pass()

    def prioritize(self, msg: dict) -> None:
        for jobid, priority in msg.get("jobs", []):
            fj = self.fjobs.get(jobid)
            if fj is not None and fj.request is not None:
                self._pend_remove(fj)
                fj.priority = priority
                self._pend_add(fj)
                q = self.fqueues[fj.queue]
                q.counts["reprioritized"] += 1
                self._unblock(q)
        self.request_pass()

    def free(self, msg: dict) -> None:
        jobid = msg["id"]
        final = bool(msg.get("final", True))
        R = msg["R"]
        fj = self.fjobs.get(jobid)
        if not final:
            try:
                gone = self.graph.partial_cancel(jobid, R)
            except FluxLiteError:
                gone = False
            if gone:
                self.log("err", f"remove: removed allocation before final .free RPC for jobid {jobid}")
        else:
            try:
                self.graph.cancel(jobid)
            except FluxLiteError:
                pass  # ENOENT tolerated
        self.res.dirty = True
        self.pool.free(jobid, self._R_of(R), final)
        if final and fj is not None:
            del self.fjobs[jobid]
            q = self.fqueues.get(fj.queue)
            if q is not None:
                if jobid in q.running:
                    q.running.remove(jobid)
                q.counts["complete"] += 1
        for q in self.fqueues.values():
            self._unblock(q)
        self.request_pass()

    def _unblock(self, q: FluxionQueue) -> None:
        q.blocked.clear()
        q.schedulable = True

    def handle_expiration(self, msg: dict) -> dict:
        # Fluxion has no sched.expiration handler: the job manager proceeds,
        # the graph keeps the old end (see flux-lite-update(1))
        raise rfc27.error(rfc27.ENOSYS, "sched.expiration: unknown method")

    def handle_feasibility(self, msg: dict) -> dict:
        raise rfc27.error(rfc27.ENOSYS, "feasibility: service is not loaded")

    def handle_resource_status(self, msg: dict) -> dict:
        return {"allocated": self.pool.allocated_rset()}

    def resource_update(self, down: Any) -> None:
        super().resource_update(down)
        ranks = IDset(n.rank for n in self.graph.nodes)
        now_down = IDset(r for r in down if r in self.graph.by_rank)
        was_down = IDset(n.rank for n in self.graph.nodes if self.graph._usable(n) is None)
        if now_down - was_down:
            self.res.status_changed(now_down - was_down, "down")
        up = (ranks - now_down) & was_down
        if up:
            self.res.status_changed(up, "up")
        for q in self.fqueues.values():
            self._unblock(q)

    def set_instance_expiration(self, expiration: float) -> None:
        """The resource module's graph ends at the instance's expiration; 0
        sets Fluxion's default end (SYSTEM_MAX_DURATION seconds after the epoch)."""
        self.changed("instance-expiration")
        if expiration > 0:
            self.graph.graph_end = int(expiration)
            self.res.log("info", f"resource expiration updated to {expiration:.2f}")
        elif expiration == 0:
            self.graph.graph_end = fluxion_graph.DEFAULT_SPAN
            self.res.log("info", "resource expiration updated to 0. (unlimited)")
        self.res.dirty = True
        for q in self.fqueues.values():
            q.schedulable = True
        self.request_pass()

    def stats(self) -> dict:
        queues = {}
        for name, q in self.fqueues.items():
            pending = [j for j in self._pending(name)]
            queues[name] = {
                "policy": q.policy, "queue_depth": q.queue_depth, "max_queue_depth": q.max_queue_depth,
                "queue_parameters": dict(_kv_list(q.qparams_raw)),
                "policy_parameters": dict(_kv_list(q.pparams_raw)),
                "action_counts": dict(q.counts),
                "pending_queues": {"pending": [f58plain(j.jobid) for j in pending], "pending_provisional": [],
                                   "blocked": [f58plain(j) for j in q.blocked]},
                "scheduled_queues": {"running": [f58plain(j) for j in q.running],
                                     "rejected": [f58plain(j) for j in q.rejected],
                                     "canceled": [f58plain(j) for j in q.canceled]},
            }
        return {"queues": queues}

    def params(self) -> dict:
        """sched-fluxion-qmanager.params: the raw option strings."""
        return {"params": self.qparams}

    REQUESTS = dict(Scheduler.REQUESTS, **{"sched-fluxion-qmanager.params": "handle_params"})

    def handle_params(self, msg: dict) -> dict:
        return self.params()

    # -- the loops ---------------------------------------------------------------------------

    def _pend(self, qname: str) -> list[tuple[tuple[int, float, int], int]]:
        """The queue's pending (and blocked) jobs as sorted (key, jobid): made
        from the jobs once per command, then kept in order."""
        if self._pending_lists is None:
            lists: dict[str, list] = {name: [] for name in self.fqueues}
            for fj in self.fjobs.values():
                if fj.request is not None and fj.queue in lists:
                    lists[fj.queue].append((fj.key(), fj.jobid))
            for entries in lists.values():
                entries.sort()
            self._pending_lists = lists
        return self._pending_lists.setdefault(qname, [])

    def _pend_add(self, fj: FJob) -> None:
        entries = self._pend(fj.queue)  # (made now, it may hold fj already)
        item = (fj.key(), fj.jobid)
        i = bisect_left(entries, item)
        if i == len(entries) or entries[i] != item:
            entries.insert(i, item)

    def _pend_remove(self, fj: FJob) -> None:
        entries = self._pend(fj.queue)
        item = (fj.key(), fj.jobid)
        i = bisect_left(entries, item)
        if i < len(entries) and entries[i] == item:
            del entries[i]

    def _pending(self, qname: str, limit: int | None = None) -> list[FJob]:
        """Pending jobs in order (blocked ones left out), the first `limit`."""
        q = self.fqueues[qname]
        blocked = set(q.blocked)
        out = []
        for _key, jobid in self._pend(qname):
            if jobid not in blocked:
                out.append(self.fjobs[jobid])
                if limit is not None and len(out) >= limit:
                    break
        return out

    def schedule(self) -> None:
        for q in self.fqueues.values():
            while q.schedulable:
                q.schedulable = False
                if q.policy == "fcfs":
                    self._fcfs(q)
                else:
                    self._backfill(q)
            self._post(q)

    def _fcfs(self, q: FluxionQueue) -> None:
        batch = self._pending(q.name, q.queue_depth + 1)
        more = len(batch) > q.queue_depth
        for fj in batch[:q.queue_depth]:
            self._drop_stale(fj.jobid)
            try:
                m = self.graph.match("allocate_with_satisfiability", fj.jobid, None, self.b.now,
                                     request=fj.request)
            except FluxLiteError as exc:
                if exc.errno == EBUSY:
                    return
                self._reject(q, fj, "unsatisfiable" if exc.errno == ENODEV else "match error")
                q.schedulable = True
                continue
            fj.selection = "immediate"
            self._start(q, fj, m.R)
        if more:
            q.schedulable = True

    def _backfill(self, q: FluxionQueue) -> None:
        for jobid in q.reserved:
            try:
                self.graph.cancel(jobid)
            except FluxLiteError:
                pass
        q.reserved = []
        self.res.dirty = True
        nres = 0
        counted = 0
        changed = False
        blocked = set(q.blocked)
        entries = list(self._pend(q.name))
        for _key, jobid in entries:
            if jobid in blocked:
                continue
            if counted >= q.queue_depth:
                # Fluxion starts over when it stopped here having scheduled
                # something; a loop that only made the same reservations
                # again would change nothing, so only allocations and
                # rejections start it over here
                if changed:
                    q.schedulable = True
                break
            fj = self.fjobs[jobid]
            self._drop_stale(jobid)
            try_reserve = nres < q.reservation_depth
            op = "allocate_orelse_reserve" if try_reserve else "allocate_with_satisfiability"
            try:
                m = self.graph.match(op, fj.jobid, None, self.b.now, request=fj.request)
            except FluxLiteError as exc:
                if exc.errno == EBUSY:
                    if fj.at != 0:
                        fj.at = 0
                        fj.selection = ""
                        fj.was_reserved = False
                    if try_reserve:
                        q.blocked.append(fj.jobid)
                        counted -= 1
                else:
                    self._reject(q, fj, "unsatisfiable" if exc.errno == ENODEV else "match error")
                    changed = True
                counted += 1
                continue
            if m.status == "RESERVED":
                fj.was_reserved = True
                fj.selection = "reserved"
                fj.at = m.at
                q.reserved.append(fj.jobid)
                q.counts["reserved"] += 1
                nres += 1
            else:
                if fj.was_reserved:
                    fj.selection = "reserved"
                elif nres > 0:
                    fj.selection = "backfill"
                else:
                    fj.selection = "immediate"
                changed = True
                self._start(q, fj, m.R)
            counted += 1

    def _mirror(self, jobid: int, R: dict) -> None:
        """Keep flux-lite's pool (sched check, resource list) in step with the
        graph. They differ only where Fluxion double-books: a running job
        whose time limit was extended still holds resources Fluxion's graph
        freed at the old end (it answers sched.expiration ENOSYS)."""
        try:
            self.pool.register_alloc(jobid, R)
        except PoolError as exc:
            self.log("err", f"alloc: {f58(jobid)}: resources still held by a job running past the end "
                            f"Fluxion planned: {exc}")

    def _drop_stale(self, jobid: int) -> None:
        """A reservation the graph holds for a pending job that no loop of
        this module made (a module that went away without dropping it)."""
        job = self.graph.jobs.get(jobid)
        if job is not None and job.status == "RESERVED":
            self.graph.cancel(jobid)

    def _reject(self, q: FluxionQueue, fj: FJob, note: str) -> None:
        self._pend_remove(fj)
        del self.fjobs[fj.jobid]
        q.rejected.append(fj.jobid)
        q.counts["rejected"] += 1
        self.respond(fj.jobid, rfc27.DENY, note=f'alloc denied due to type="{note}"')

    def _start(self, q: FluxionQueue, fj: FJob, R: dict | None) -> None:
        import json

        assert R is not None
        self.res.dirty = True
        self.b.kvs.put_text(kvs_key(fj.jobid, "R"), json.dumps(R, separators=(",", ":")))
        self._mirror(fj.jobid, R)
        self._pend_remove(fj)
        fj.request = None
        fj.at = 0
        q.running.append(fj.jobid)
        q.counts["running"] += 1
        if self.logs("debug"):
            self.log("debug", f"alloc: {self.job_name(fj.jobid)}")
        self.respond(fj.jobid, rfc27.SUCCESS, R=R,
                     annotations={"sched": {"t_estimate": None, "selection_type": fj.selection}})
        self.dirty = True

    def _post(self, q: FluxionQueue) -> None:
        """Annotations of the first queue-depth pending jobs whose estimate changed."""
        for fj in self._pending(q.name, q.queue_depth):
            if fj.at != fj.old_at:
                if fj.at > 0:
                    ann = {"t_estimate": float(fj.at), "selection_type": fj.selection}
                else:
                    ann = {"t_estimate": None, "selection_type": None}
                self.respond(fj.jobid, rfc27.ANNOTATE, annotations={"sched": ann})
                fj.old_at = fj.at

    def check(self) -> dict:
        return {jobid: rset for jobid, (rset, _end) in self.pool.allocations().items()}


class _HelloRefused(Exception):
    """hello cannot take a job back (its queue is gone): the job manager kills it."""

    def __str__(self) -> str:
        return "failed to reallocate R for running job"
