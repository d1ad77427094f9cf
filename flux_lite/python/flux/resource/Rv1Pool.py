"""flux.resource.Rv1Pool: the pool over R version 1 that Flux's Python
scheduler modules allocate from, and the ResourceRequest it reads off a
jobspec.

An Rv1Pool is an Rv1Set (its resources, as R) whose allocation state is
flux-lite's own scheduler pool (flux_lite.sched.pool.Pool), made when first
needed: the pools that only carry an R (an allocation, a free's R, hello's R)
never build one. So a module allocates exactly as flux-lite's sched-simple
does, which is Flux's Rv1Pool choice: worst fit (most free cores, then most
free gpus, then lowest rank), cores and gpus lowest id first; node and slot
ranges take as many as are free up to their maximum.

A job's end time is ``time.time()`` at its alloc plus its duration (else the
pool's expiration, else 0), read when alloc is called: a host running the
module in simulated time patches ``time.time``.

Where flux-lite's pool is stricter than Flux's (each a ValueError where Flux
would count resources twice or lose them): registering or allocating
resources a job already holds, allocating for a job that holds resources,
a selection hook returning resources that are not free. An invalid
constraint is an InfeasibleRequest (the job is denied) where Flux's alloc
raises ValueError. The deviations of flux-lite's pool (sched/pool.py) hold
too: an exclusive request needs nodes with its slot's cores; a free of an
unknown job is ignored.
"""

from __future__ import annotations

import json
import syslog
import time
from collections.abc import Mapping
from typing import Any

from flux.idset import IDset
from flux.resource.ResourceCount import ResourceCount
from flux.resource.ResourcePoolImplementation import (
    InfeasibleRequest,
    InsufficientResources,
    ResourcePoolImplementation,
)
from flux.resource.Rv1Set import Rv1Set, _constraint, _ids
from flux_lite.formats.idset import IDset as LiteIDset
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset
from flux_lite.sched import pool as lite
from flux_lite.sched.request import ResourceRequest as LiteRequest
from flux_lite.sched.request import SlotTotals, request_counts

__all__ = ["ResourceRequest", "Rv1Pool"]

_DISCRETE = (
    "{} count specifies discrete valid values that this scheduler "
    "does not support; use a simple min-max range instead"
)


class ResourceRequest(SlotTotals):
    """What a job asks an Rv1Pool for (``parse_resource_request``).

    ``node_count``: a ResourceCount of nodes (None without a node level;
    an exclusive slot-only request has its slots as nodes, one slot each);
    ``slot_count``: slots per node, or in all without nodes; ``slot_size``
    cores and ``gpu_per_slot`` gpus per slot; ``duration`` in seconds (0.0:
    unlimited); ``constraint`` (RFC 31, or None); ``exclusive`` (whole
    nodes); ``jobspec``, the jobspec it was read from.
    """

    __slots__ = (
        "node_count",
        "slot_count",
        "slot_size",
        "gpu_per_slot",
        "duration",
        "constraint",
        "exclusive",
        "jobspec",
        "_lite",  # (key, flux-lite request of the minimum counts): see Rv1Pool._lite_request
    )

    def __init__(self, node_count: ResourceCount | None, slot_count: ResourceCount, slot_size: int,
                 gpu_per_slot: int, duration: float, constraint: Any, exclusive: bool,
                 jobspec: dict | None = None) -> None:
        self.node_count = node_count
        self.slot_count = slot_count
        self.slot_size = slot_size
        self.gpu_per_slot = gpu_per_slot
        self.duration = duration
        self.constraint = constraint
        self.exclusive = exclusive
        self.jobspec = jobspec
        self._lite: Any = None

    @classmethod
    def from_jobspec(cls, jobspec: dict) -> ResourceRequest:
        """The request of a jobspec (ValueError when it cannot be read: the
        scheduler denies the job with ``cannot parse jobspec: <message>``)."""
        return cls._from_counts(request_counts(jobspec), jobspec)

    @classmethod
    def _from_counts(cls, c: dict, jobspec: dict, **extra: Any) -> Any:
        """The request of request_counts' reading of jobspec."""
        node_count = c["node_count"]
        return cls(
            None if node_count is None else ResourceCount._of(node_count),
            ResourceCount._of(c["slot_count"]),
            c["slot_size"],
            c["gpu_per_slot"],
            c["duration"],
            c["constraint"],
            c["exclusive"],
            jobspec,
            **extra,
        )

    @property
    def nnodes(self) -> int:
        """Minimum node count (0 without nodes)."""
        return self.node_count.min if self.node_count is not None else 0

    @property
    def nnodes_max(self) -> int | None:
        """Maximum node count (0 without nodes, None when unbounded)."""
        return self.node_count.max if self.node_count is not None else 0

    @property
    def nslots(self) -> int:
        """Minimum total slot count."""
        if self.node_count is None:
            return self.slot_count.min
        return self.slot_count.min * self.node_count.min

    @property
    def nslots_max(self) -> int | None:
        """Maximum total slot count (None when unbounded)."""
        if self.node_count is None:
            return self.slot_count.max
        if self.node_count.max is None or self.slot_count.max is None:
            return None
        return self.slot_count.max * self.node_count.max

    def __repr__(self) -> str:
        return (
            f"ResourceRequest(node_count={self.node_count!r}, slot_count={self.slot_count!r}, "
            f"slot_size={self.slot_size}, gpu_per_slot={self.gpu_per_slot}, duration={self.duration}, "
            f"constraint={self.constraint!r}, exclusive={self.exclusive})"
        )


def _refuse_discrete(request: Any) -> None:
    """Stepped and idset counts are parsed but never allocated (as in Flux)."""
    for name in ("node", "slot"):
        count = getattr(request, name + "_count", None)
        if count is not None and getattr(count, "_values", None) is not None:
            raise InfeasibleRequest(_DISCRETE.format(name))


def _units(request: Any) -> tuple[Any, bool]:
    """(the count a range applies to, whether its units are nodes)."""
    node_count = getattr(request, "node_count", None)
    if node_count is not None and node_count.min > 0:
        return node_count, True
    return getattr(request, "slot_count", None), False


def _idset(mask: int) -> frozenset[int]:
    return frozenset(LiteIDset.from_mask(mask))


def _mask(ids: Any) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


_TOPO_SETS: dict[int, tuple[Any, list[frozenset], list[frozenset]]] = {}


def _rank_info(pool: lite.Pool, i: int) -> dict[str, Any]:
    """Flux's view of the rank at index i of a pool (its cores and gpus as
    sets made once per topology: a selection hook sees every candidate)."""
    topo = pool.topology
    sets = _TOPO_SETS.get(id(topo))
    if sets is None or sets[0] is not topo:
        if len(_TOPO_SETS) > 64:
            _TOPO_SETS.clear()
        sets = _TOPO_SETS[id(topo)] = (topo, [_idset(m) for m in topo.core_mask], [_idset(m) for m in topo.gpu_mask])
    ac, ag = pool.alloc_cores[i], pool.alloc_gpus[i]
    return {
        "hostname": topo.hosts[i],
        "cores": sets[1][i],
        "gpus": sets[2][i],
        "up": pool.rank_up[i],
        "allocated_cores": set(_idset(ac)) if ac else set(),
        "allocated_gpus": set(_idset(ag)) if ag else set(),
    }


def _rset_of(R: Any) -> Rset:
    """The Rset of an R argument: a pool or set (or its wrapper), R JSON, a dict."""
    if isinstance(R, Rv1Set):
        return R._rs
    impl = getattr(R, "impl", None)
    if isinstance(impl, Rv1Set):
        return impl._rs
    if isinstance(R, Rset):
        return R
    if isinstance(R, (str, Mapping)):
        return Rv1Set(R)._rs
    raise TypeError(f"expected a resource set, got {type(R)!r}")


class Rv1Pool(Rv1Set, ResourcePoolImplementation):
    """A resource pool over R version 1: its resources (an Rv1Set), which
    ranks are up, and what each job holds."""

    version = 1

    #: pool options (keyword arguments) this implementation reads: none
    known_options: frozenset = frozenset()

    def __init__(self, R: Any = None, log: Any = None, **kwargs: Any) -> None:
        if log is not None:
            self.log = log
        if R is not None and not isinstance(R, (str, Mapping)):
            raise TypeError(f"Rv1Pool: expected str or Mapping, got {type(R)!r}")
        # (R.scheduling is kept: every allocation carries it, RFC 20)
        super().__init__(R, keep_scheduling=True)
        self._pool: lite.Pool | None = None
        self._generation = 0

    def _init_from_state(self, source: Rv1Pool) -> None:
        """Hook: copy a subclass's own attributes from source into a pool
        made without __init__ (copy(), an allocation)."""

    def _derive(self, rs: Rset, pool: lite.Pool | None, keep_log: bool) -> Any:
        new = object.__new__(type(self))
        new._rs = rs
        new._pool = pool
        new._generation = 0
        if keep_log and "log" in self.__dict__:
            new.log = self.__dict__["log"]
        if self.__dict__.get("impl") is self:
            new.impl = new  # (a pool_class implementation that is its own wrapper)
        new._init_from_state(self)
        return new

    def _state(self) -> lite.Pool:
        """The allocation state, made at the first use."""
        pool = self._pool
        if pool is None:
            pool = self._pool = lite.Pool(self._rs, jobid_str=f58)
            pool.generation = self._generation
        return pool

    @property
    def generation(self) -> int:
        pool = self._pool
        return self._generation if pool is None else pool.generation

    @generation.setter
    def generation(self, value: int) -> None:
        pool = self._pool
        if pool is None:
            self._generation = value
        else:
            pool.generation = value

    def _logging(self) -> bool:
        return "log" in self.__dict__ or type(self).log is not ResourcePoolImplementation.log

    # -- Flux's views of the state (custom pools read them) --------------------

    @property
    def _ranks(self) -> dict[int, dict[str, Any]]:
        """rank -> hostname, cores, gpus (frozensets), up, allocated_cores
        and allocated_gpus (sets): made when asked, so changing it changes
        nothing."""
        pool = self._pool
        if pool is None:
            view = Rv1Set._ranks.fget(self)  # type: ignore[attr-defined]
            for info in view.values():
                info.update(up=True, allocated_cores=set(), allocated_gpus=set())
            return view
        return {rank: _rank_info(pool, i) for i, rank in enumerate(pool.topology.ranks)}

    @property
    def _job_state(self) -> dict[int, tuple[float, Rv1Pool]]:
        """jobid -> (end time, its allocation as a pool), made when asked."""
        pool = self._state()
        return {jobid: (rec.end, self._derive(rec.rset(), None, False)) for jobid, rec in pool.jobs.items()}

    def _copy_from_ranks(self, rank_set: Any) -> Rv1Pool:
        """A pool of these ranks alone, nothing allocated."""
        return self._derive(self._rs.copy_ranks(_ids(sorted(rank_set))), None, True)

    # -- availability ------------------------------------------------------

    @staticmethod
    def _ranks_arg(ids: Any) -> Any:
        if isinstance(ids, IDset):
            return ids._ids
        if isinstance(ids, str) and ids != "all":
            return _ids(ids)
        return ids

    def mark_up(self, ids: Any) -> None:
        """Mark ranks (an idset, or "all") schedulable."""
        self._state().set_up(self._ranks_arg(ids))

    def mark_down(self, ids: Any) -> None:
        """Mark ranks (an idset, or "all") not schedulable."""
        self._state().set_down(self._ranks_arg(ids))

    def remove_ranks(self, ranks: Any) -> Rv1Pool:
        """Drop ranks (a shrink; hello's freed ranks of an allocation)."""
        ids = _ids(ranks)
        self._rs = self._rs.remove_ranks(ids)
        if self._pool is not None:
            self._pool.remove_ranks(ids)
        else:
            self._generation += 1
        return self

    # -- jobs ----------------------------------------------------------------

    def register_alloc(self, jobid: int, R: Any) -> None:
        """Mark a running job's R allocated (hello); its end time is R's
        expiration. ValueError for ranks or resources not in the pool, or
        already allocated (the scheduler then raises on the job)."""
        rs = _rset_of(R)
        self._state().register_alloc(jobid, rs)
        if self._logging():
            self.log(syslog.LOG_INFO, f"hello: {f58(jobid)}: {rs.summary()}")

    def free(self, jobid: int, R: Any = None, final: bool = False) -> None:
        """Release a job's resources: those of R (a partial release, by
        rank), or all it holds when R is None or final. ValueError when R
        has ranks the job does not hold, or is final but not all of it.
        A job the pool does not know is ignored."""
        freed = self._state().free(jobid, None if R is None else _rset_of(R), final)
        if freed is not None and self._logging():
            self.log(syslog.LOG_DEBUG, f"free: {f58(jobid)}: {freed.summary()}" + (" (final)" if final else ""))

    def update_expiration(self, jobid: int, expiration: float) -> None:
        """Change a running job's end time (ignored for an unknown job)."""
        self._state().update_expiration(jobid, expiration)

    def job_end_times(self) -> list[tuple[int, float]]:
        """(jobid, end time) of every job holding resources (0.0: no end)."""
        return self._state().job_end_times()

    # -- allocation ----------------------------------------------------------

    def parse_resource_request(self, jobspec: dict) -> ResourceRequest:
        return ResourceRequest.from_jobspec(jobspec)

    @staticmethod
    def _lite_request(request: Any, units: int | None = None) -> LiteRequest:
        """The flux-lite request of request's minimum counts, or of `units`
        nodes or slots; the minimum's is kept on the request while its
        fields stay the same (its layout is planned once)."""
        if isinstance(request, LiteRequest):
            return request
        cons = request.constraint
        key = (request.nnodes, request.nslots, request.slot_size, request.gpu_per_slot,
               bool(request.exclusive), request.duration, id(cons))
        if units is None:
            cached = getattr(request, "_lite", None)
            if cached is not None and cached[0] == key:
                return cached[1]
        if isinstance(cons, str):
            try:
                cons = json.loads(cons)
            except ValueError:
                raise InfeasibleRequest("invalid constraint: not JSON") from None
        nnodes, nslots = request.nnodes, request.nslots
        if units is not None:
            if nnodes > 0:
                nnodes, nslots = units, request.slot_count.min * units
            else:
                nslots = units
        # (an exclusive node may name no cores: any node has one)
        slot_size = request.slot_size or (1 if request.exclusive else 0)
        req = LiteRequest(nnodes, nslots, slot_size, request.gpu_per_slot, bool(request.exclusive),
                          float(request.duration or 0.0), (), _constraint(cons) if cons else None)
        if units is None:
            try:
                request._lite = (key, req)
            except AttributeError:
                pass  # (a request class of the caller's, without the slot)
        return req

    def _select_range(self, pool: lite.Pool, request: Any, base: LiteRequest) -> tuple[LiteRequest, Any]:
        """(request, what select() takes) for the most units of a ranged
        request that fit now, at least its minimum (InsufficientResources,
        or InfeasibleRequest when even that never fits)."""
        plan = pool.plan(base)
        found = pool.select(plan)
        if found is None:
            pool.check_feasibility(base)
            raise InsufficientResources("insufficient resources")
        count, per_node = _units(request)
        topo = pool.topology
        cap = len(topo.ranks) if per_node else sum(topo.ncores) // max(1, request.slot_size)
        lo, hi = count.min, cap if count.max is None else min(count.max, cap)
        best = (base, found)
        while lo < hi:  # (what fits only shrinks as units are added)
            mid = (lo + hi + 1) // 2
            req = self._lite_request(request, mid)
            got = pool.select(pool.plan(req))
            if got is None:
                hi = mid - 1
            else:
                lo, best = mid, (req, got)
        return best

    def alloc(self, jobid: int, request: Any) -> Rv1Pool:
        """Allocate request for jobid: the allocated resources, as a pool of
        this class (starttime and expiration 0: the scheduler sets them).
        InsufficientResources when they are not free now, InfeasibleRequest
        when the pool can never hold them; ValueError for a job that holds
        resources already."""
        _refuse_discrete(request)
        pool = self._state()
        now = time.time()
        default_end = self._rs.expiration
        try:
            base = self._lite_request(request)
            if self._custom_selection():
                R = self._alloc_custom(pool, jobid, request, base, now, default_end)
            else:
                count, _ = _units(request)
                if jobid in pool:
                    found = None
                elif count is None or count.max == count.min or isinstance(request, LiteRequest):
                    found = pool.alloc_or_none(jobid, base, now, default_end)
                else:
                    req, sel = self._select_range(pool, request, base)
                    found = pool.alloc_selected(jobid, req, sel, now, default_end)
                if found is None:
                    self._insufficient(pool, jobid, request, base)
                R = found
        except lite.InfeasibleRequest as exc:
            raise InfeasibleRequest(str(exc)) from None
        result = self._derive(R.with_times(starttime=0.0, expiration=0.0), None, True)
        if self._logging():
            self.log(syslog.LOG_DEBUG, f"alloc: {f58(jobid)}: {result.dumps()}")
        return result

    def _insufficient(self, pool: lite.Pool, jobid: int, request: Any, base: LiteRequest) -> Any:
        """Raise why request does not fit now: InfeasibleRequest if it never
        will (the subclass's _check_feasibility is asked too),
        InsufficientResources; a job allocated twice is an error, once it
        would fit (a simulation may try a job that cannot start yet)."""
        if jobid in pool and pool.select(pool.plan(base)) is not None:
            raise lite.PoolError(f"alloc: {f58(jobid)}: already allocated")
        pool.check_feasibility(base)
        if type(self)._check_feasibility is not Rv1Pool._check_feasibility:
            self._check_feasibility(request)
        raise InsufficientResources("insufficient resources")

    def _custom_selection(self) -> bool:
        """Whether a subclass chooses the resources (Flux's hooks
        _sort_candidates and _select_resources)."""
        cls = type(self)
        return cls._select_resources is not Rv1Pool._select_resources or \
            cls._sort_candidates is not Rv1Pool._sort_candidates

    def _candidates(self, request: Any) -> list[tuple[int, dict, frozenset, frozenset]]:
        """Flux's candidates: (rank, info, free cores, free gpus) of the up
        ranks with a slot's cores (every core, exclusive) and gpus free that
        the constraint admits, in rank order."""
        cons = request.constraint
        if isinstance(cons, str):
            try:
                cons = json.loads(cons)
            except ValueError:
                raise InfeasibleRequest("invalid constraint: not JSON") from None
        allowed = None
        if cons:
            try:
                allowed = self._rs.ranks_matching(_constraint(cons))
            except ValueError as exc:
                raise InfeasibleRequest(f"invalid constraint: {exc}") from None
        pool = self._state()
        topo = pool.topology
        s, g = request.slot_size, request.gpu_per_slot
        out = []
        for i, rank in enumerate(topo.ranks):
            # (the counts the pool keeps decide before a rank's view is made)
            if not pool.rank_up[i] or (allowed is not None and rank not in allowed) \
                    or pool.nfree_cores[i] < (topo.ncores[i] if request.exclusive else s) \
                    or (g > 0 and pool.nfree_gpus[i] < g):
                continue
            info = _rank_info(pool, i)
            out.append((rank, info, info["cores"] - info["allocated_cores"], info["gpus"] - info["allocated_gpus"]))
        return out

    def _alloc_custom(self, pool: lite.Pool, jobid: int, request: Any, base: LiteRequest, now: float,
                      default_end: float) -> Rset:
        """alloc() through the subclass's _sort_candidates/_select_resources."""
        if jobid in pool:
            raise lite.PoolError(f"alloc: {f58(jobid)}: already allocated")
        selected, nslots = self._select_resources(self._sort_candidates(self._candidates(request)), request)
        topo = pool.topology
        parts = []
        for rank, cores, gpus in selected:
            i = topo.index.get(rank)
            cm, gm = _mask(cores), _mask(gpus)
            if i is None or cm & ~(topo.core_mask[i] & ~pool.alloc_cores[i]) or \
                    gm & ~(topo.gpu_mask[i] & ~pool.alloc_gpus[i]):
                raise ValueError(f"_select_resources: rank {rank}: resources not free in the pool")
            parts.append((i, cm, gm))
        return pool.alloc_selected(jobid, base, (parts, nslots), now, default_end)

    def _sort_candidates(self, candidates: list) -> list:
        """The order nodes are chosen in: worst fit (most free cores, then
        most free gpus; rank order among equals). Override to change it."""
        return sorted(candidates, key=lambda c: (len(c[2]), len(c[3])), reverse=True)

    def _select_resources(self, candidates: list, request: Any) -> tuple[list, int]:
        """Choose from the sorted candidates: ``([(rank, cores, gpus)...],
        nslots)``, the lowest free ids of each; nodes or slots up to the
        request's maximum. Override to choose otherwise (read the
        candidates' info, never change it); a request that does not fit
        asks ``self._check_feasibility`` before InsufficientResources."""
        return self._pack(candidates, request, self._take_lowest, bool(request.exclusive))

    def _take_lowest(self, request: Any, rank: int, info: dict, free_cores: frozenset, free_gpus: frozenset,
                     most: int | None) -> tuple[frozenset, frozenset, int]:
        """Up to most slots of request's shape on one rank, lowest ids first
        (a whole node for an exclusive request takes every core free)."""
        s, g = request.slot_size, request.gpu_per_slot
        if request.exclusive and request.nnodes > 0 and len(free_cores) < len(info["cores"]):
            return frozenset(), frozenset(), 0
        n = len(free_cores) // s if s else (most or 1)
        if g > 0:
            n = min(n, len(free_gpus) // g)
        if most is not None:
            n = min(n, most)
        return frozenset(sorted(free_cores)[: n * s]), frozenset(sorted(free_gpus)[: n * g]), n

    def _pack(self, candidates: list, request: Any, take: Any, whole_nodes: bool) -> tuple[list, int]:
        """Fill request from the candidates in order: ``take(request, rank,
        info, free cores, free gpus, most)`` gives what one rank offers, up to most
        slots (None: all it can), as (cores, gpus, slots). With nodes, each
        node must give its share of slots (then, whole_nodes, all it has
        free); without, slots are taken rank by rank. The request's maximum
        bounds both; short of its minimum, _check_feasibility, then
        InsufficientResources."""
        selected = []
        if request.nnodes > 0:
            per_node = request.nslots // request.nnodes
            most = getattr(request, "nnodes_max", request.nnodes)
            for rank, info, free_cores, free_gpus in candidates:
                if most is not None and len(selected) >= most:
                    break
                cores, gpus, n = take(request, rank, info, free_cores, free_gpus, per_node)
                if n >= per_node:
                    if whole_nodes:
                        cores, gpus = frozenset(free_cores), frozenset(free_gpus)
                    selected.append((rank, cores, gpus))
            got = per_node * len(selected)
            short = len(selected) < request.nnodes
        else:
            most = getattr(request, "nslots_max", request.nslots)
            got = 0
            for rank, info, free_cores, free_gpus in candidates:
                if most is not None and got >= most:
                    break
                cores, gpus, n = take(request, rank, info, free_cores, free_gpus, None if most is None else most - got)
                if n > 0:
                    selected.append((rank, cores, gpus))
                    got += n
            short = got < request.nslots
        if short:
            self._check_feasibility(request)
            raise InsufficientResources("insufficient resources")
        return selected, got

    def _check_feasibility(self, request: Any) -> None:
        """InfeasibleRequest if request can never fit the whole pool.
        Override (calling this first) to add checks of a subclass's own."""
        try:
            self._state().check_feasibility(self._lite_request(request))
        except lite.InfeasibleRequest as exc:
            raise InfeasibleRequest(str(exc)) from None

    def check_feasibility(self, request: Any) -> None:
        """InfeasibleRequest unless request (its minimum) fits the whole
        pool, allocations and down ranks aside."""
        _refuse_discrete(request)
        self._check_feasibility(request)

    # -- copies ----------------------------------------------------------------

    def copy(self) -> Rv1Pool:
        """An independent copy with the same allocations, up/down state and
        generation, for simulations: it logs nothing."""
        return self._derive(self._rs, self._state().copy(), False)

    def copy_allocated(self) -> Rv1Set:
        """The allocated cores and gpus, as a set."""
        return Rv1Set._of(self._state().allocated_rset())

    def copy_down(self) -> Rv1Set:
        """The resources of the down ranks, as a set."""
        return Rv1Set._of(self._state().down_rset())

    def to_set(self) -> Rv1Set:
        """Every resource of the pool, as a set."""
        return Rv1Set._of(self._rs)
