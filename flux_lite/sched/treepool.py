"""TreePool: the pool that places slots inside a node's topology, read
from R's ``scheduling.children`` (Flux's ``flux.resource.TreePool``), for
the scheduler modules' ``pool-class=TreePool`` and for the flux package's
``flux.resource.TreePool`` (which reads layouts through the functions here).

``children`` is a list of ``{"ranks": IDSET, "topo": OBJECT}``: the ranks
sharing a layout, and that layout, a tree of named levels (``socket``,
``numa``...: lists of objects) whose leaves hold ``cores`` and ``gpus``
idsets of node-local ids. A node's *levels* are its groups of resources
from the leaves up to the whole node (level 0 the finest; a level equal to
the one below is dropped).

Selection (Flux's TreePool): candidates are the up ranks with a slot's cores
(every core, exclusive) and gpus free, taken best fit (fewest free cores,
then gpus, first). A slot with gpus takes its cores and gpus from one group,
the finest that has them (a coarser one, up to the whole node, only when
no finer group can); a slot without gpus goes to the finest level where
some group has its cores, to the group with the fewest free cores first
(which keeps whole groups for gpu jobs); an exclusive node is checked that
way, then taken whole. The ranks of ``children`` are renumbered to the
pool's (0 to N-1), and an allocation's R keeps the children of its own
ranks (writer and all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flux_lite.errors import JobspecError
from flux_lite.formats.idset import IDset
from flux_lite.sched.pool import InfeasibleRequest, Pool, PoolError, RequestPlan
from flux_lite.sched.request import _DISCRETE_MSG, DiscreteCountError, ResourceRequest, request_counts

__all__ = ["TreePool", "Group", "whole", "containers", "levels", "layouts", "read_request"]

Group = tuple[frozenset, frozenset]  # (cores, gpus)


def _ids(topo: Mapping, key: str) -> frozenset:
    return frozenset(IDset.parse(topo[key])) if key in topo else frozenset()


def _children_of(topo: Mapping) -> list[Mapping]:
    """The objects of a topology object's levels (its list values)."""
    return [item for value in topo.values() if isinstance(value, list) for item in value if isinstance(item, Mapping)]


def whole(topo: Mapping) -> Group:
    """Every core and gpu under a topology object."""
    cores, gpus = _ids(topo, "cores"), _ids(topo, "gpus")
    for child in _children_of(topo):
        c, g = whole(child)
        cores, gpus = cores | c, gpus | g
    return cores, gpus


def containers(topo: Mapping, name: str) -> list[Group]:
    """The groups of every object of level `name`, at the first depth it
    appears (across all the branches there)."""
    found = topo.get(name)
    if isinstance(found, list):
        return [whole(item) for item in found if isinstance(item, Mapping)]
    out: list[Group] = []
    for child in _children_of(topo):
        out.extend(containers(child, name))
    return out


def levels(topo: Mapping) -> list[list[Group]]:
    """A layout's groups by level, finest first, the whole node last."""
    if "cores" in topo:
        return [[(_ids(topo, "cores"), _ids(topo, "gpus"))]]
    out: list[list[Group]] = []
    for child in _children_of(topo):
        for depth, groups in enumerate(levels(child)):
            if depth == len(out):
                out.append([])
            out[depth].extend(groups)
    every = whole(topo)
    if every[0] and not (out and set(out[-1]) == {every}):
        out.append([every])
    return out


def layouts(scheduling: Any, ranks: list[int]) -> tuple[dict, list, list, dict]:
    """Read ``scheduling.children`` for a pool of ranks 0 to N-1:
    (scheduling with the children renumbered, levels per layout, topology
    per layout, layout index per rank). ValueError with Flux's words when
    TreePool cannot use it."""
    if not isinstance(scheduling, Mapping):
        raise ValueError("TreePool requires R.scheduling")
    children = scheduling.get("children")
    if not children or not isinstance(children, list):
        raise ValueError("TreePool requires scheduling.children")
    by_rank: dict[int, Mapping] = {}
    for entry in children:
        if isinstance(entry, Mapping) and entry.get("ranks") and isinstance(entry.get("topo"), Mapping) \
                and entry["topo"]:
            for rank in IDset.parse(entry["ranks"]):
                by_rank[rank] = entry["topo"]
    if not by_rank:
        raise ValueError("TreePool: children contains no groups")
    if len(by_rank) != len(ranks):
        raise ValueError(f"TreePool: rank count mismatch: {len(by_rank)} in children vs {len(ranks)} in pool")
    if ranks != list(range(len(ranks))):
        # (children may number the enclosing instance's ranks; they are
        # renumbered to the pool's, which the resource module gives from 0)
        raise ValueError(f"TreePool: pool ranks {ranks} are not the zero-origin range "
                         "required for topology remapping")
    renumber = {old: new for new, old in enumerate(sorted(by_rank))}
    type_levels: list[list[list[Group]]] = []
    type_topo: list[Mapping] = []
    rank_type: dict[int, int] = {}
    kinds: dict[Any, int] = {}
    for old, topo in by_rank.items():
        lv = levels(topo)
        key = tuple(tuple(level) for level in lv)
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = len(type_levels)
            type_levels.append(lv)
            type_topo.append(topo)
        rank_type[renumber[old]] = kind
    renumbered = []
    for entry in children:
        if not isinstance(entry, Mapping):
            continue
        new = [renumber[r] for r in IDset.parse(entry.get("ranks", "")) if r in renumber]
        if new:
            renumbered.append(dict(entry, ranks=str(IDset(new))))
    return dict(scheduling, children=renumbered), type_levels, type_topo, rank_type


def gpu_slots(rank_levels: list[list[Group]], free_cores: frozenset, free_gpus: frozenset, s: int, g: int,
              most: int | None) -> tuple[frozenset, frozenset, int]:
    """Up to most slots of s cores and g gpus, each from one group, finest
    groups first: (cores, gpus, slots)."""
    if s == 0:
        return frozenset(), frozenset(), 1  # (an exclusive node: taken whole)
    left_c, left_g = set(free_cores), set(free_gpus)
    took_c: set = set()
    took_g: set = set()
    n = 0
    for level in rank_levels:
        for group_cores, group_gpus in level:
            avail_c, avail_g = left_c & group_cores, left_g & group_gpus
            while len(avail_c) >= s and len(avail_g) >= g:
                if most is not None and n >= most:
                    return frozenset(took_c), frozenset(took_g), n
                c = set(sorted(avail_c)[:s])
                gg = set(sorted(avail_g)[:g])
                avail_c -= c
                avail_g -= gg
                left_c -= c
                left_g -= gg
                took_c |= c
                took_g |= gg
                n += 1
    return frozenset(took_c), frozenset(took_g), n


def cpu_slots(rank_levels: list[list[Group]], free_cores: frozenset, s: int,
              most: int | None) -> tuple[frozenset, int]:
    """Up to most slots of s cores, at the finest level where a group has
    one, from its groups with the fewest free cores first: (cores, slots)."""
    if s == 0:
        return frozenset(), 1
    left = set(free_cores)
    level = next((lv for lv in rank_levels if any(len(left & c) >= s for c, _ in lv)), None)
    if level is None:
        return frozenset(), 0
    took: set = set()
    n = 0
    for group_cores in sorted((c for c, _ in level), key=lambda c: len(left & c)):
        avail = left & group_cores
        while len(avail) >= s:
            if most is not None and n >= most:
                return frozenset(took), n
            c = set(sorted(avail)[:s])
            avail -= c
            left -= c
            took |= c
            n += 1
    return frozenset(took), n


def read_request(jobspec: Any) -> ResourceRequest:
    """The request a jobspec makes of a TreePool (Flux's TreeResourceRequest):
    an exclusive leaf of another type than node, slot, core or gpu
    (``socket{x}``, ``numa{x}``) makes its slots whole objects of that
    level (``container``); a slot above the node level counts per node;
    an exclusive node may name no cores."""
    c = request_counts(jobspec, containers=True)
    node_count, slot_count = c["node_count"], c["slot_count"]
    if node_count is not None and node_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("node"))
    if slot_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("slot"))
    nnodes = node_count.min if node_count is not None else 0
    nslots = slot_count.min * nnodes if nnodes else slot_count.min
    container = c["container_level"]
    slot_size = c["slot_size"]
    if container is None and not slot_size:
        slot_size = 1  # (an exclusive node without cores: any node has one, and is taken whole)
    if nslots < 1:
        raise JobspecError("Unable to determine slot count")
    return ResourceRequest(nnodes, nslots, 0 if container else slot_size, c["gpu_per_slot"], c["exclusive"],
                           c["duration"], (), c["constraint"], container=container)


def _bits(mask: int) -> frozenset:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return frozenset(out)


def _mask(ids: frozenset) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


class _ContainerPlan(RequestPlan):
    """The plan of a request whose slots are whole objects of a level."""

    __slots__ = ("container",)


class TreePool(Pool):
    """A :class:`Pool` whose selection is TreePool's (module docstring);
    accounting, persistence and feasibility (by counts) are the pool's."""

    pool_class = "TreePool"

    def __init__(self, rset: Any, *, jobid_str: Any = None) -> None:
        super().__init__(rset, jobid_str=jobid_str)
        try:
            self._scheduling, self._type_levels, self._type_topo, self._rank_type = \
                layouts(self.topology.rset.scheduling, list(self.topology.ranks))
        except ValueError as exc:
            raise PoolError(str(exc)) from None

    def copy(self, jobs: bool = True) -> TreePool:
        new = super().copy(jobs)
        new.__class__ = TreePool
        new._scheduling = self._scheduling
        new._type_levels = self._type_levels
        new._type_topo = self._type_topo
        new._rank_type = self._rank_type
        return new  # type: ignore[return-value]

    read_request = staticmethod(read_request)

    def _levels_of(self, rank: int) -> list[list[Group]]:
        return self._type_levels[self._rank_type[rank]]

    def _topo_of(self, rank: int) -> Mapping:
        return self._type_topo[self._rank_type[rank]]

    def plan(self, req: Any) -> Any:
        container = getattr(req, "container", None)
        if container is None:
            return super().plan(req)
        cached = req.pool_plan
        if cached is not None and cached[0] is self.topology:
            return cached[1]
        for v in (req.nslots, req.nnodes):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InfeasibleRequest("invalid resource request: counts must be integers")
        if req.nslots < 1 or req.nnodes < 0:
            raise InfeasibleRequest("invalid resource request: slot count and slot size must be at least 1")
        p = _ContainerPlan()
        p.container = container
        p.slot_size, p.gpu_per_slot, p.exclusive = 0, 0, False
        p.per_node = req.nnodes > 0
        p.count = req.nnodes if p.per_node else req.nslots
        p.slots_per_node = req.nslots // req.nnodes if p.per_node else 0
        p.unit_cores = p.unit_gpus = p.min_cores = 0
        p.key, p.allowed = self.topology.index_mask(req)
        p.feasible = False
        req.pool_plan = (self.topology, p)
        return p

    def _container_of(self, p: Any) -> str | None:
        return getattr(p, "container", None)

    def _check_feasible(self, p: Any) -> None:
        level = self._container_of(p)
        if level is None or p.feasible:
            super()._check_feasible(p)
            return
        topo = self.topology
        counts = [len(containers(self._topo_of(rank), level)) for i, rank in enumerate(topo.ranks)
                  if p.allowed is None or p.allowed >> i & 1]
        if p.per_node:
            per = p.slots_per_node
            eligible = sum(1 for n in counts if n >= per)
            if eligible < p.count:
                raise InfeasibleRequest(
                    f"unsatisfiable request: need {p.count} node(s) with {per} exclusive "
                    f"'{level}' container(s) each, only {eligible} eligible")
        elif sum(counts) < p.count:
            raise InfeasibleRequest(
                f"unsatisfiable request: need {p.count} exclusive '{level}' container(s), "
                f"only {sum(counts)} available")
        p.feasible = True

    def select(self, p: Any) -> Any:
        topo = self.topology
        level = self._container_of(p)
        s, g, exclusive = p.slot_size, p.gpu_per_slot, p.exclusive
        allowed = p.allowed
        cands = []
        for i in range(len(topo.ranks)):
            if not self.rank_up[i] or (allowed is not None and not allowed >> i & 1) \
                    or self.nfree_cores[i] < (topo.ncores[i] if exclusive else s) \
                    or (g > 0 and self.nfree_gpus[i] < g):
                continue
            cands.append(i)
        cands.sort(key=lambda i: (self.nfree_cores[i], self.nfree_gpus[i]))  # best fit

        def take(i: int, most: int | None) -> tuple[int, int, int]:
            free_c = _bits(topo.core_mask[i] & ~self.alloc_cores[i])
            free_g = _bits(topo.gpu_mask[i] & ~self.alloc_gpus[i])
            if level is not None:
                # whole free containers of the level, in topology order
                free = [(c, gg) for c, gg in containers(self._topo_of(topo.ranks[i]), level)
                        if c <= free_c and gg <= free_g]
                if most is not None:
                    free = free[:most]
                return (_mask(frozenset().union(*(c for c, _ in free))),
                        _mask(frozenset().union(*(gg for _, gg in free))), len(free))
            lv = self._levels_of(topo.ranks[i])
            if g > 0:
                c, gg, n = gpu_slots(lv, free_c, free_g, s, g, most)
            else:
                c, n = cpu_slots(lv, free_c, s, most)
                gg = frozenset()
            return _mask(c), _mask(gg), n

        sel = []
        if p.per_node:
            per = p.slots_per_node
            for i in cands:
                if len(sel) >= p.count:
                    break
                cm, gm, n = take(i, per)
                if n >= per:
                    if exclusive:
                        cm, gm = topo.core_mask[i] & ~self.alloc_cores[i], topo.gpu_mask[i] & ~self.alloc_gpus[i]
                    sel.append((i, cm, gm))
            if len(sel) < p.count:
                return None
            return sel, per * len(sel)
        got = 0
        for i in cands:
            if got >= p.count:
                break
            cm, gm, n = take(i, p.count - got)
            if n > 0:
                sel.append((i, cm, gm))
                got += n
        if got < p.count:
            return None
        return sel, got

    def _build_rset(self, sel: Any, starttime: Any, expiration: Any, nslots: Any) -> Any:
        R = super()._build_rset(sel, starttime, expiration, nslots)
        held = IDset(self.topology.ranks[i] for i, _cm, _gm in sel)
        kept = []
        for entry in self._scheduling["children"]:
            mine = IDset.parse(entry["ranks"]) & held
            if mine:
                kept.append(dict(entry, ranks=str(mine)))
        return R.with_scheduling(dict(self._scheduling, children=kept))
