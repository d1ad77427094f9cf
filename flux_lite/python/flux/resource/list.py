"""flux.resource.list: the scheduler's view of the instance's resources.

resource_list(h) asks resource.sched-status (or the topic named by
FLUX_RESOURCE_LIST_RPC), falling back to sched.resource-status when that is
not served, as Flux does; get() gives a SchedResourceList, the sets
`flux resource list` shows.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from flux.idset import IDset
from flux.rpc import RPC
from flux.resource.ResourceSet import ResourceSet

_STATES = ("all", "down", "allocated")


class SchedResourceList:
    """The all, down and allocated ResourceSets of a resource-status answer,
    with up (all but down) and free (up but allocated) made when first read."""

    def __init__(self, resp: Any) -> None:
        for state in _STATES:
            rset = resp.get(state)
            if not isinstance(rset, ResourceSet):
                rset = ResourceSet(rset)
            rset.state = state
            setattr(self, state, rset)
        self._derived: dict[str, ResourceSet] = {}

    @property
    def up(self) -> ResourceSet:
        """Every resource that is not down."""
        if "up" not in self._derived:
            rset = self.all - self.down
            rset.state = "up"
            self._derived["up"] = rset
        return self._derived["up"]

    @property
    def free(self) -> ResourceSet:
        """Every resource neither down nor allocated."""
        if "free" not in self._derived:
            rset = self.up - self.allocated
            rset.state = "free"
            self._derived["free"] = rset
        return self._derived["free"]

    def __getitem__(self, state: str) -> ResourceSet:
        if state not in (*_STATES, "up", "free"):
            raise KeyError(state)
        return getattr(self, state)

    def filter(self, include: Any) -> None:
        """Keep only the ranks (an idset) or hosts (a hostlist) in include."""
        try:
            ranks = IDset(include)
        except ValueError:
            ranks = IDset(self.all.host_ranks(include, ignore_nomatch=True))
        for state in _STATES:
            setattr(self, state, self[state].copy_ranks(ranks))
        self._derived = {}

    def copy_constraint(self, constraint: Any) -> SchedResourceList:
        """The resources that match an RFC 31 constraint."""
        return SchedResourceList({state: self[state].copy_constraint(constraint) for state in _STATES})


class ResourceListRPC(RPC):
    """The future of resource_list(): get() is a SchedResourceList."""

    def __init__(self, flux_handle: Any, topic: str, nodeid: int = 0) -> None:
        def fetch() -> Any:
            try:
                return flux_handle._call(topic, {})
            except Exception as exc:
                if getattr(exc, "errno", None) != errno.ENOSYS:
                    raise
            return flux_handle._call("sched.resource-status", {})

        super().__init__(flux_handle, topic)
        self._fetch = fetch

    def get(self) -> SchedResourceList:  # type: ignore[override]
        return SchedResourceList(super().get())


def resource_list(flux_handle: Any) -> ResourceListRPC:
    """A future of the instance's SchedResourceList."""
    topic = os.environ.get("FLUX_RESOURCE_LIST_RPC") or "resource.sched-status"
    return ResourceListRPC(flux_handle, topic)
