"""flux.scheduler: the base of Python scheduler modules (Flux's Scheduler API).

A scheduler module subclasses :class:`Scheduler`, overrides ``schedule()``
(a generator, or a plain method) and whatever else it needs, and is entered
through ``mod_main(h, *args)``, which constructs it and calls ``run()``
(README.md, "Writing a scheduler module", walks through one).

The base class speaks RFC 27: it registers the ``sched`` and ``feasibility``
services, acquires the resources (the pool is ``self.resources``), says hello
(re-registering each allocation through :meth:`Scheduler.hello`) and ready,
then queues alloc requests as :class:`PendingJob` entries of the heap
``self._queue`` and calls ``schedule()`` after every event. In flux-lite the
broker hosting the module drives each ``schedule()`` and ``forecast()``
generator to its end, on the instance's virtual clock.
"""

from __future__ import annotations

import errno
import functools
import heapq
import inspect
from typing import Any

from flux import resource
from flux.constants import FLUX_RPC_STREAMING
from flux.brokermod import BrokerLogger, BrokerModule, Message, request_handler
from flux.job import JobID
from flux.resource.ResourcePool import ResourcePool, _pool_class_from_uri, make_pool
from flux_lite import protocol as rfc27
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import kvs_key
from flux_lite.formats.rset import rlite_without

# RFC 27 alloc response types
_ALLOC_SUCCESS, _ALLOC_ANNOTATE, _ALLOC_DENY, _ALLOC_CANCEL = 0, 1, 2, 3

__all__ = ["PendingJob", "AllocRequest", "Scheduler"]


@functools.total_ordering
class PendingJob:
    """An alloc request waiting in :attr:`Scheduler._queue` (a heap: higher
    priority first, then lower job id). ``request`` is its
    :class:`AllocRequest`; ``resource_request`` what the pool parsed of the
    jobspec."""

    __slots__ = ("jobid", "priority", "t_submit", "request", "resource_request", "_last_annotation")

    def __init__(self, jobid: int, priority: int, t_submit: float, request: AllocRequest,
                 resource_request: Any) -> None:
        self.jobid = jobid
        self.priority = priority
        self.t_submit = t_submit
        self.request = request
        self.resource_request = resource_request
        self._last_annotation: Any = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PendingJob):
            return NotImplemented
        return (self.priority, self.jobid) == (other.priority, other.jobid)

    def __lt__(self, other: PendingJob) -> bool:
        if self.priority != other.priority:
            return self.priority > other.priority
        return self.jobid < other.jobid

    def __hash__(self) -> int:
        return hash(self.jobid)


class AllocRequest:
    """One open sched.alloc request: answer it with :meth:`success`,
    :meth:`deny` or :meth:`cancel`; :meth:`annotate` while it waits."""

    __slots__ = ("_scheduler", "_msg", "jobid", "_annotated_sched_keys", "_finalized")

    def __init__(self, scheduler: Scheduler, msg: Message) -> None:
        self._scheduler = scheduler
        self._msg = msg
        self.jobid = msg.payload["id"]
        self._annotated_sched_keys: set[str] = set()
        self._finalized = False

    def success(self, R: Any, annotations: dict | None = None, clear: bool = True) -> None:
        """Allocate R (a pool object or an R dict). With clear, the sched
        annotations this request was given are nulled, unless annotations
        sets them."""
        self._finalized = True
        if not isinstance(R, dict):
            R = R.to_dict()
        if clear and self._annotated_sched_keys:
            sched = {k: None for k in self._annotated_sched_keys}
            sched.update((annotations or {}).get("sched", {}))
            annotations = {**(annotations or {}), "sched": sched}
        self._scheduler.alloc_success(self._msg, R, annotations)

    def deny(self, note: str | None = None) -> None:
        """The request can never be satisfied (the job gets an alloc exception)."""
        self._finalized = True
        self._scheduler.alloc_deny(self._msg, note)

    def cancel(self) -> None:
        """The request is withdrawn (after sched.cancel)."""
        self._finalized = True
        self._scheduler.alloc_cancel(self._msg)

    def annotate(self, annotations: dict) -> None:
        """Update the job's annotations; ignored once the request is answered."""
        if self._finalized:
            return
        self._annotated_sched_keys.update((annotations or {}).get("sched", {}).keys())
        self._scheduler.alloc_annotate(self._msg, annotations)


def _drive(result: Any) -> int:
    """Run a pass to its end: a generator is stepped through; returns its yields."""
    if not inspect.isgenerator(result):
        return 0
    count = 0
    for _ in result:
        count += 1
    return count


class Scheduler(BrokerModule):
    """Base class of Python scheduler modules (see the module docstring).

    Override points: :meth:`schedule`, :meth:`forecast`, :meth:`hello`,
    :meth:`alloc`, :meth:`free`, :meth:`cancel`, :meth:`prioritize`,
    :meth:`expiration`, :meth:`resource_update`, :meth:`feasibility_check`,
    :meth:`stats_get`. Class attributes: ``queue_depth`` (a positive integer:
    limited mode; or "unlimited"), ``hello_partial_ok``, ``pool_class``,
    ``pool_kwargs``. Module arguments queue-depth=, mode=, log-level= and
    pool-class= are read here; the others are left in ``_pending_args`` for
    the subclass, and any still there when its constructor returns make the
    load fail.
    """

    queue_depth: int | str = "unlimited"
    hello_partial_ok = True
    pool_class: type | None = None
    pool_kwargs: dict = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # the leaf class's constructor checks the arguments once every level has taken its own
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            original = cls.__init__

            def wrapped(self: Scheduler, h: Any, *args: str, _orig: Any = original, _cls: type = cls) -> None:
                _orig(self, h, *args)
                if type(self) is _cls:
                    self._reject_unknown_args()

            cls.__init__ = wrapped  # type: ignore[method-assign]

    def __init__(self, h: Any, *args: str) -> None:
        super().__init__(h, *args)
        self.log.level = "info"
        self.pool_kwargs = dict(self.pool_kwargs)
        self._resources: Any = None
        self._queue: list[PendingJob] = []
        self._sched_wanted = False
        self._forecast_wanted = False
        self._sched_passes = self._sched_yields = 0
        self._forecast_passes = self._forecast_yields = 0
        self._pending_args: list[str] = []
        for arg in args:
            key, eq, value = arg.partition("=")
            if key == "queue-depth" and eq:
                self.queue_depth = "unlimited" if value == "unlimited" else _positive(
                    value, f"queue-depth={value!r} is invalid: expected a positive integer or 'unlimited'")
            elif arg == "mode=unlimited":
                self.queue_depth = "unlimited"
            elif arg.startswith("mode=limited="):
                n = arg[len("mode=limited="):]
                self.queue_depth = _positive(n, f"mode=limited= requires a positive integer, got {n!r}")
            elif key == "log-level" and eq:
                try:
                    self.log.level = value.lower()
                except ValueError:
                    raise ValueError(f"log-level={value.lower()!r} is invalid: expected one of "
                                     f"{', '.join(BrokerLogger.LEVEL_NAMES)}") from None
            elif key == "pool-class" and eq:
                cls = _pool_class_from_uri(value)
                if cls is None:
                    raise ValueError(f"pool-class={value!r}: could not load pool class")
                self.pool_class = cls
            else:
                self._pending_args.append(arg)

    def _reject_unknown_args(self) -> None:
        if self._pending_args:
            raise ValueError(f"unknown argument {self._pending_args[0]!r}: "
                             "built-in options are queue-depth, log-level, pool-class")

    @property
    def resources(self) -> Any:
        """The resource pool (what was acquired, with allocations and down ranks)."""
        return self._resources

    # -- the scheduling loop, driven by the broker -------------------------------------

    def _request_schedule(self) -> None:
        """Ask for a schedule() pass (one after any number of events)."""
        if self._queue:
            self._sched_wanted = True

    def start_schedule(self) -> None:
        self._sched_wanted = True

    def _hosted_needs_pass(self) -> bool:
        return self._sched_wanted

    def _hosted_run_pass(self) -> None:
        self._sched_wanted = False
        self._sched_yields += _drive(self.schedule())
        self._sched_passes += 1
        self._forecast_wanted = bool(self._queue)

    def _hosted_forecast(self) -> None:
        if not self._forecast_wanted or not self._queue:
            return
        self._forecast_wanted = False
        self._forecast_yields += _drive(self.forecast())
        self._forecast_passes += 1

    # -- answers to alloc requests (AllocRequest calls these) ------------------------

    def alloc_success(self, msg: Message, R: dict, annotations: dict | None = None) -> None:
        """Write R to the job's KVS key, then answer SUCCESS."""
        jobid = msg.payload["id"]
        self.handle._endpoint.kvs_put(kvs_key(jobid, "R"), R)
        resp: dict[str, Any] = {"id": jobid, "type": _ALLOC_SUCCESS, "R": R}
        if annotations is not None:
            resp["annotations"] = annotations
        self.handle.respond(msg, resp)

    def alloc_deny(self, msg: Message, note: str | None = None) -> None:
        resp: dict[str, Any] = {"id": msg.payload["id"], "type": _ALLOC_DENY}
        if note is not None:
            resp["note"] = note
        self.handle.respond(msg, resp)

    def alloc_cancel(self, msg: Message) -> None:
        self.handle.respond(msg, {"id": msg.payload["id"], "type": _ALLOC_CANCEL})

    def alloc_annotate(self, msg: Message, annotations: dict) -> None:
        self.handle.respond(msg, {"id": msg.payload["id"], "type": _ALLOC_ANNOTATE, "annotations": annotations})

    # -- override points ---------------------------------------------------------------

    def schedule(self) -> Any:
        """One scheduling pass (a generator, or a plain method): answer
        requests of self._queue. Called after every event that may matter."""

    def forecast(self) -> Any:
        """After a pass: annotate pending jobs (sched.t_estimate...). Default: nothing."""

    def hello(self, jobid: int, priority: int, userid: int, t_submit: float, R: Any) -> None:
        """A job holding resources at start-up (R without ranks already
        released): mark them allocated. Raising kills the job (scheduler-restart)."""
        self.resources.register_alloc(jobid, R)

    def alloc(self, request: AllocRequest, jobid: int, priority: int, userid: int, t_submit: float,
              jobspec: dict) -> None:
        """Queue a request: parse its jobspec (a jobspec that cannot be read is denied)."""
        try:
            rr = self.resources.parse_resource_request(jobspec)
        except Exception as exc:  # untrusted input: deny rather than fail the module
            self.log.error(f"alloc: cannot parse jobspec for {jobid}: {exc}")
            request.deny(f"cannot parse jobspec: {exc}")
            return
        heapq.heappush(self._queue, PendingJob(jobid, priority, t_submit, request, rr))

    def free(self, jobid: int, R: Any, final: bool = False) -> None:
        """Resources released by a job (all of them when final)."""
        self.resources.free(jobid, R, final)

    def cancel(self, jobid: int) -> None:
        """Withdraw a queued request (answered CANCEL)."""
        for i, job in enumerate(self._queue):
            if job.jobid == jobid:
                self._queue.pop(i)
                heapq.heapify(self._queue)
                job.request.cancel()
                return

    def prioritize(self, jobs: list) -> None:
        """New priorities for queued jobs ([jobid, priority] pairs)."""
        priorities = {jobid: priority for jobid, priority in jobs}
        for job in self._queue:
            if job.jobid in priorities:
                job.priority = priorities[job.jobid]
        heapq.heapify(self._queue)

    def resource_update(self) -> None:
        """The resources changed (ranks up or down, expiration): see self.resources."""

    def expiration(self, msg: Message, jobid: int, expiration: float) -> None:
        """A running job's expiration moves: accepted by default. Answer msg
        (``self.handle.respond(msg, None)``, or ``respond_error`` to refuse)."""
        self.handle.respond(msg, None)

    def feasibility_check(self, msg: Message, jobspec: dict) -> None:
        """Could the jobspec ever be satisfied (allocations and down ranks aside)?"""
        try:
            rr = self.resources.parse_resource_request(jobspec)
            self.resources.check_feasibility(rr)
        except resource.InfeasibleRequest as exc:
            self.handle.respond_error(msg, errno.EOVERFLOW, str(exc))
            return
        except OSError as exc:
            self.handle.respond_error(msg, exc.errno or errno.EINVAL, str(exc))
            return
        except Exception as exc:
            self.log.error(f"feasibility: cannot parse jobspec: {exc}")
            self.handle.respond_error(msg, errno.EINVAL, str(exc))
            return
        self.handle.respond(msg, None)

    def stats_get(self) -> dict:
        """`flux module stats NAME`: extend with super().stats_get()."""
        return {"sched_passes": self._sched_passes, "sched_yields": self._sched_yields,
                "forecast_passes": self._forecast_passes, "forecast_yields": self._forecast_yields,
                "sched_delay": 0.0, "sched_duration_ewma": 0.0, "sched_interval_ewma": 0.0,
                "pending_jobs": len(self._queue)}

    # -- handlers --------------------------------------------------------------------

    @request_handler("sched.alloc", prefix=False)
    def _handle_alloc(self, msg: Message) -> None:
        p = msg.payload
        self.alloc(AllocRequest(self, msg), p["id"], p["priority"], p["userid"], p["t_submit"], p["jobspec"])
        self._request_schedule()

    @request_handler("sched.free", prefix=False)
    def _handle_free(self, msg: Message) -> None:
        p = msg.payload
        # (as Flux: the default pool of the R the job manager sends, which
        # has no scheduling key a pool class of the module might require)
        self.free(p["id"], ResourcePool(p["R"]), final=p.get("final", False))
        self._request_schedule()

    @request_handler("sched.cancel", prefix=False)
    def _handle_cancel(self, msg: Message) -> None:
        self.cancel(msg.payload["id"])
        self._request_schedule()

    @request_handler("sched.prioritize", prefix=False)
    def _handle_prioritize(self, msg: Message) -> None:
        self.prioritize(msg.payload.get("jobs", []))
        self._request_schedule()

    @request_handler("sched.resource-status", prefix=False)
    def _handle_resource_status(self, msg: Message) -> None:
        pool = self._resources
        self.handle.respond(msg, {"all": pool.to_dict(), "allocated": pool.copy_allocated().to_dict(),
                                  "down": pool.copy_down().to_dict()})

    @request_handler("sched.expiration", prefix=False)
    def _handle_expiration(self, msg: Message) -> None:
        p = msg.payload
        if p["expiration"] < 0:
            self.handle.respond_error(msg, errno.EINVAL, f"invalid expiration {p['expiration']}")
            return
        self.expiration(msg, p["id"], p["expiration"])
        self._request_schedule()

    @request_handler("feasibility.check", prefix=False)
    def _handle_feasibility(self, msg: Message) -> None:
        self.feasibility_check(msg, msg.payload.get("jobspec", {}))

    @request_handler("stats-get")
    def _handle_stats_get(self, msg: Message) -> None:
        self.handle.respond(msg, self.stats_get())

    # -- start-up ------------------------------------------------------------------

    def _make_pool(self, R: Any) -> Any:
        """A pool of R, as Flux's scheduler chooses it (pool_class, else R's
        scheduling writer, else by R's version), given pool_kwargs."""
        return make_pool(R, self.pool_class, self.pool_kwargs, log=self.log)

    def _acquire_resources(self) -> None:
        data = self.handle.rpc("resource.acquire", {}).get()
        self._resources = self._make_pool(data["resources"])
        # options the pool does not know are said once, then dropped (hello makes pools too)
        known = getattr(getattr(self._resources, "impl", self._resources), "known_options", frozenset())
        for key in [k for k in self.pool_kwargs if k not in known]:
            self.log.warning(f"pool: ignoring unknown option {key!r}")
            del self.pool_kwargs[key]
        self._resources.mark_down("all")
        self._apply_resource_update(data)

    def _hosted_acquire_update(self, data: dict) -> None:
        self._apply_resource_update(data)

    def _apply_resource_update(self, data: dict) -> None:
        if "up" in data:
            self._resources.mark_up(data["up"])
        if "down" in data:
            self._resources.mark_down(data["down"])
        if "expiration" in data and data["expiration"] >= 0:
            self._resources.expiration = data["expiration"]
            self.log.info(f"resource expiration updated to {data['expiration']:.2f}")
        self.resource_update()
        self._request_schedule()

    def _sched_hello(self) -> None:
        f = self.handle.rpc("job-manager.sched-hello", {"partial-ok": self.hello_partial_ok},
                            flags=FLUX_RPC_STREAMING)
        wants_scheduling = getattr(getattr(self._resources, "impl", None), "scheduling", None) is not None
        while True:
            try:
                rec = f.get()
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    break
                raise OSError(f"sched-hello failed: {exc}") from exc
            f.reset()
            jobid = rec["id"]
            R = rec.get("R")
            # (flux-lite's job manager gives R without its scheduling key, as
            # Flux's keeps it; a pool that reads that key reads the stored R,
            # as every module does in Flux, whose hello carries no R)
            if R is None or (wants_scheduling and isinstance(R, dict) and "scheduling" not in R):
                try:
                    R = self.handle._endpoint.kvs_get(kvs_key(jobid, "R"))
                except OSError:
                    self.log.error(f"hello: failed to look up R for job {JobID(jobid).f58}")
                    continue
            if rec.get("free"):
                R = rlite_without(R, IDset.parse(rec["free"]))
            try:
                self.hello(jobid, rec["priority"], rec["userid"], rec["t_submit"], self._make_pool(R))
            except Exception as exc:
                self.log.error(f"hello callback failed for job {JobID(jobid).f58}: {exc}")
                self.log.error(f"raising fatal exception on running job id={JobID(jobid).f58}")
                try:
                    self.handle.rpc("job-manager.raise", rfc27.raise_request(
                        jobid, "scheduler-restart", 0, "failed to reallocate R for running job")).get()
                except OSError as err:
                    self.log.error(f"error raising fatal exception on {JobID(jobid).f58}: {err}")

    def _sched_ready(self) -> None:
        depth = self.queue_depth
        if depth == "unlimited":
            payload: dict[str, Any] = {"mode": "unlimited"}
        else:
            payload = {"mode": "limited", "limit": _positive(
                depth, f"queue_depth must be a positive integer or 'unlimited', got {depth!r}")}
        self.handle.rpc("job-manager.sched-ready", payload).get()
        pool = self.resources
        impl = getattr(pool, "impl", pool)
        self.log.info(f"ready: queue-depth={depth} log-level={self.log.level_name} "
                      f"pool-class={getattr(impl, 'name', type(impl).__name__)} "
                      f"Rv{getattr(pool, 'version', 1)} {pool.dumps()}")

    def run(self) -> None:
        """Start: acquire the resources, hello, ready; then serve (the broker does)."""
        self.handle.service_register("sched").get()
        self.handle.service_register("feasibility").get()
        try:
            self.set_running()
            self._acquire_resources()
            self._sched_hello()
            self._sched_ready()
        except OSError as exc:
            self.log.error(f"initialization failed: {exc}")
            raise
        super().run()


def _positive(value: Any, message: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ValueError(message)
    return n
