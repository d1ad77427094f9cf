"""flux.resource.TreePool: an Rv1Pool that places slots inside a node's
topology, read from R's ``scheduling.children``.

``children`` is a list of ``{"ranks": IDSET, "topo": OBJECT}``: the ranks
sharing a layout, and that layout, a tree of named levels (``socket``,
``numa``...: lists of objects) whose leaves hold ``cores`` and ``gpus``
idsets of node-local ids. A node's *levels* are its groups of resources
from the leaves up to the whole node (level 0 the finest; a level equal to
the one below is dropped). Nodes of one layout share their levels.

Selection (Flux's TreePool): candidates are taken best fit (fewest free
cores first). A slot with gpus takes its cores and gpus from one group, the
finest that has them (a coarser one, up to the whole node, only when no
finer group can); a slot without gpus goes to the finest level where some
group has its cores, to the group with the fewest free cores first (which
keeps whole groups for gpu jobs); an exclusive node is checked that way,
then taken whole. A request whose leaf is an exclusive container
(``numa``, ``socket``...) takes whole free containers of that name as its
slots. The ranks of ``children`` are renumbered to the pool's (0 to N-1) and
an allocation's R keeps the children of its own ranks. The layouts and the
slots of one rank are flux_lite.sched.treepool's (sched-simple's
``pool-class=TreePool``), this class selects through Rv1Pool's hooks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flux.resource.ResourcePool import ResourcePool
from flux.resource.ResourcePoolImplementation import InfeasibleRequest, ResourcePoolImplementation
from flux.resource.Rv1Pool import ResourceRequest, Rv1Pool
from flux.resource.Rv1Set import _constraint
from flux_lite.formats import hwloc
from flux_lite.formats.idset import IDset
from flux_lite.sched.request import request_counts
from flux_lite.sched.treepool import Group, containers, cpu_slots, gpu_slots, layouts

__all__ = ["TreePool", "TreeResourceRequest", "amend", "pool_class"]


class TreeResourceRequest(ResourceRequest):
    """A ResourceRequest that may name a container: ``container_level``
    (``numa``, ``socket``...; None) when its leaf is an exclusive vertex of
    that type, whose slots are then whole containers (``slot_size`` 0)."""

    __slots__ = ("container_level",)

    def __init__(self, *args: Any, container_level: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.container_level = container_level

    @classmethod
    def from_jobspec(cls, jobspec: dict) -> TreeResourceRequest:
        counts = request_counts(jobspec, containers=True)
        return cls._from_counts(counts, jobspec, container_level=counts["container_level"])


class _TreePoolV1(Rv1Pool):
    """TreePool's implementation over R version 1."""

    name = "TreePool"

    def __init__(self, R: Any = None, log: Any = None, **kwargs: Any) -> None:
        super().__init__(R, log=log, **kwargs)
        # (the layouts are read as flux-lite's TreePool module argument reads them)
        self.scheduling, self._type_levels, self._type_topo, self._rank_type = \
            layouts(self.scheduling, sorted(self._rs.ranks))

    def _init_from_state(self, source: Any) -> None:
        # (the layouts never change: copies and allocations share them)
        self._type_levels = source._type_levels
        self._type_topo = source._type_topo
        self._rank_type = source._rank_type

    def parse_resource_request(self, jobspec: dict) -> TreeResourceRequest:
        return TreeResourceRequest.from_jobspec(jobspec)

    def _rank_levels(self, rank: int) -> list[list[Group]]:
        return self._type_levels[self._rank_type[rank]] if self._type_levels else []

    def _rank_topo(self, rank: int) -> Mapping:
        return self._type_topo[self._rank_type[rank]] if self._type_topo else {}

    def alloc(self, jobid: int, request: Any) -> Any:
        result = super().alloc(jobid, request)
        scheduling = result.scheduling
        if isinstance(scheduling, Mapping) and "children" in scheduling:
            held = result._rs.ranks
            kept = []
            for entry in scheduling["children"]:
                mine = IDset.parse(entry.get("ranks", "")) & held
                if mine:
                    kept.append(dict(entry, ranks=str(mine)))
            result.scheduling = dict(scheduling, children=kept)
        return result

    # -- selection ---------------------------------------------------------------

    def _sort_candidates(self, candidates: list) -> list:
        """Best fit: the fewest free cores (then gpus) first."""
        return sorted(candidates, key=lambda c: (len(c[2]), len(c[3])))

    def _select_resources(self, candidates: list, request: Any) -> tuple[list, int]:
        if not self._type_levels:
            return super()._select_resources(candidates, request)
        if getattr(request, "container_level", None) is not None:
            return self._pack(candidates, request, self._take_containers, False)
        take = self._take_cpu_slots if request.gpu_per_slot == 0 else self._take_gpu_slots
        return self._pack(candidates, request, take, bool(request.exclusive))

    def _take_containers(self, request: Any, rank: int, info: dict, free_cores: frozenset, free_gpus: frozenset,
                         most: int | None) -> tuple[frozenset, frozenset, int]:
        """Whole free containers of the request's level, in topology order."""
        free = [(c, g) for c, g in containers(self._rank_topo(rank), request.container_level)
                if c <= free_cores and g <= free_gpus]
        if most is not None:
            free = free[:most]
        cores = frozenset().union(*(c for c, _ in free))
        gpus = frozenset().union(*(g for _, g in free))
        return cores, gpus, len(free)

    def _take_gpu_slots(self, request: Any, rank: int, info: dict, free_cores: frozenset, free_gpus: frozenset,
                        most: int | None) -> tuple[frozenset, frozenset, int]:
        """Slots whose cores and gpus share a group, finest groups first."""
        return gpu_slots(self._rank_levels(rank), free_cores, free_gpus, request.slot_size, request.gpu_per_slot,
                         most)

    def _take_cpu_slots(self, request: Any, rank: int, info: dict, free_cores: frozenset, free_gpus: frozenset,
                        most: int | None) -> tuple[frozenset, frozenset, int]:
        """Slots of cores alone, at the finest level where a group has one,
        from its groups with the fewest free cores first."""
        cores, n = cpu_slots(self._rank_levels(rank), free_cores, request.slot_size, most)
        return cores, frozenset(), n

    def _check_feasibility(self, request: Any) -> None:
        level = getattr(request, "container_level", None)
        if level is None:
            super()._check_feasibility(request)
            return
        constraint = request.constraint
        if isinstance(constraint, str):
            constraint = json.loads(constraint)
        allowed = self._rs.ranks if not constraint else self._rs.ranks_matching(_constraint(constraint))
        counts = [len(containers(self._rank_topo(rank), level)) for rank in self._rs.ranks if rank in allowed]
        if request.nnodes > 0:
            per_node = request.nslots // request.nnodes
            eligible = sum(1 for n in counts if n >= per_node)
            if eligible < request.nnodes:
                raise InfeasibleRequest(
                    f"unsatisfiable request: need {request.nnodes} node(s) with {per_node} exclusive "
                    f"'{level}' container(s) each, only {eligible} eligible"
                )
        elif sum(counts) < request.nslots:
            raise InfeasibleRequest(
                f"unsatisfiable request: need {request.nslots} exclusive '{level}' container(s), "
                f"only {sum(counts)} available"
            )


class TreePool(ResourcePool):
    """A ResourcePool whose implementation places slots in node topology
    (``pool_class = TreePool``, or the module argument ``pool-class=TreePool``)."""

    _impl_map = {1: _TreePoolV1}

    def __init__(self, R: Any, log: Any = None, **kwargs: Any) -> None:
        if not isinstance(R, ResourcePoolImplementation):
            if isinstance(R, str):
                R = json.loads(R)
            version = R.get("version", 1) if isinstance(R, Mapping) else 1
            impl = self._impl_map.get(version)
            if impl is None:
                raise ValueError(f"R version {version} not supported by TreePool")
            R = impl(R, log=log, **kwargs)
        super().__init__(R)


#: what the pool-class URI ``TreePool`` (a module of flux.resource) names
pool_class = TreePool


def amend(R: dict, hwloc_xml: str | None = None) -> dict:
    """The fake-resources amender (``amend-r = "flux.resource.TreePool:amend"``):
    R with a ``scheduling`` key whose one child gives every rank of R the
    node topology of the hwloc XML (flux_lite.formats.hwloc says how it is
    read), written by ``TreePool``; R unchanged without XML or ranks."""
    if hwloc_xml is None:
        return R
    ranks = IDset()
    for entry in R.get("execution", {}).get("R_lite", []):
        ranks = ranks | IDset.parse(entry["rank"])
    if not ranks:
        return R
    try:
        topo = hwloc.parse(hwloc_xml).treepool()
    except ValueError as exc:  # (FormatError is one)
        raise RuntimeError(f"rhwloc_treepool_topo_to_json failed: {exc}") from None
    R["scheduling"] = {"writer": "TreePool", "children": [{"ranks": str(ranks), "topo": topo}]}
    return R
