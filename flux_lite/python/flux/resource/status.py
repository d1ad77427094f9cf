"""flux.resource.status: node states and drain reasons, as `flux resource status` reads them.

resource_status(h).get() combines resource.status (the resource module:
R, online/offline/exclude/torpid, drain), resource_list (allocated ranks)
and job-manager.stats-get (ranks in housekeeping; none when that topic is
not served) into a ResourceStatus.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flux.idset import IDset
from flux.resource.list import resource_list
from flux.resource.ResourceSet import ResourceSet
from flux.rpc import RPC


class DrainInfo(NamedTuple):
    """Ranks drained together: their idset, the drain's time and reason."""

    ranks: IDset
    timestamp: float
    reason: str


_EMPTY = {"R": None, "offline": "", "online": "", "exclude": "", "torpid": "", "housekeeping": "", "drain": {}}


class ResourceStatus:
    """Idsets of ranks by state: all, online, offline, exclude, torpid,
    allocated, housekeeping, drained (drained and idle), draining (drained
    but allocated), avail (neither excluded, drained nor torpid); drain_info,
    a DrainInfo per drain; nodelist, the hosts in rank order."""

    def __init__(self, rstatus: dict | None = None, allocated_ranks: IDset | None = None,
                 housekeeping_ranks: IDset | None = None) -> None:
        self.rstatus = rstatus if rstatus is not None else dict(_EMPTY)
        self.rset = ResourceSet(self.rstatus["R"])
        self.nodelist = self.rset.nodelist
        self.allocated_ranks = allocated_ranks if allocated_ranks is not None else IDset()
        self.housekeeping_ranks = housekeeping_ranks if housekeeping_ranks is not None else IDset()
        self._compute()

    def _compute(self, include: IDset | None = None) -> None:
        st = self.rstatus
        sets = {
            "all": self.rset.ranks,
            "online": IDset(st["online"]),
            "offline": IDset(st["offline"]),
            "exclude": IDset(st["exclude"]),
            "torpid": IDset(st.get("torpid", "")),
            "allocated": self.allocated_ranks,
        }
        if include is not None:
            sets = {name: ids & include for name, ids in sets.items()}
        for name, ids in sets.items():
            setattr(self, name, ids)
        self.housekeeping = self.housekeeping_ranks
        drained = IDset()
        self.drain_info: list[DrainInfo] = []
        self._drain_of: dict[int, DrainInfo] = {}
        for text, entry in st["drain"].items():
            ranks = IDset(text)
            if include is not None:
                ranks = ranks & include
            drained = drained | ranks
            info = DrainInfo(ranks, entry["timestamp"], entry["reason"])
            self.drain_info.append(info)
            for rank in ranks:
                self._drain_of[rank] = info
        self.draining = drained & self.allocated
        self.drained = drained - self.draining
        self.avail = self.all - self.get_idset("exclude", "drained", "draining", "torpid")

    def filter(self, include: Any) -> None:
        """Keep only the ranks (an idset) or hosts (a hostlist) in include."""
        try:
            ranks = IDset(include)
        except ValueError:
            ranks = IDset(self.nodelist.index(include, ignore_nomatch=True))
        self._compute(ranks)

    def __getitem__(self, state: str) -> IDset:
        return getattr(self, state)

    def get_idset(self, *states: str) -> IDset:
        """The ranks in any of states."""
        ids = IDset()
        for state in states:
            ids = ids | self[state]
        return ids

    def get_drain_info(self, rank: int) -> DrainInfo | None:
        """The DrainInfo of rank (None if it is not drained)."""
        if rank not in self.all:
            raise ValueError(f"invalid rank {rank}")
        return self._drain_of.get(rank)


class ResourceStatusRPC:
    """The requests behind resource_status(); get() gives a ResourceStatus."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self._status = RPC(handle, "resource.status")
        self._list = resource_list(handle)
        self._stats = RPC(handle, "job-manager.stats-get")

    def get(self) -> ResourceStatus:
        rstatus = self._status.get()
        try:
            allocated = self._list.get().allocated.ranks
        except OSError:
            allocated = IDset()
        housekeeping = IDset()
        try:
            for info in self._stats.get()["housekeeping"]["running"].values():
                housekeeping = housekeeping | IDset(info["allocated"])
        except (OSError, KeyError, TypeError):
            pass
        return ResourceStatus(rstatus, allocated, housekeeping)


def resource_status(flux_handle: Any) -> ResourceStatusRPC:
    """A future of the instance's ResourceStatus."""
    return ResourceStatusRPC(flux_handle)
