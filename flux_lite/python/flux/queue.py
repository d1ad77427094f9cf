"""flux.queue: the instance's queues, their state, limits, defaults and resources.

QueueList(h) reads the configuration (config.get), the resources
(flux.resource.resource_list) and each queue's state
(job-manager.queue-status); iterating gives a QueueInfo per queue, or the
one anonymous queue (name "") when none is configured.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flux.resource.list import SchedResourceList, resource_list
from flux.util import parse_fsd


@dataclass
class QueueResourceCounts:
    """Node, core and GPU counts (a maximum with no limit is inf)."""

    nnodes: float
    ncores: float
    ngpus: float


@dataclass
class QueueLimits:
    """A queue's job-size minimum and maximum, and its duration limit."""

    min: QueueResourceCounts
    max: QueueResourceCounts
    duration: float

    @property
    def timelimit(self) -> float:
        return self.duration


@dataclass
class QueueDefaults:
    """A queue's default job duration."""

    duration: float

    @property
    def timelimit(self) -> float:
        return self.duration


def _parent_entry(queues: dict, name: str, parent: str) -> dict:
    if parent not in queues:
        raise ValueError(f"queue '{name}': parent queue '{parent}' is not configured")
    return queues[parent]


class QueueResources:
    """The resources of a queue (its `requires` properties; a virtual queue's
    are its parent's): all, down, up, allocated, free ResourceSets."""

    def __init__(self, name: str, resources: SchedResourceList, config: dict, parent: str = "") -> None:
        queues = config.get("queues", {})
        requires = queues[name].get("requires") if name and name in queues else None
        if requires is None and parent:
            requires = _parent_entry(queues, name, parent).get("requires")
        self._resource_list = resources.copy_constraint({"properties": requires}) if requires is not None \
            else resources

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self._resource_list, attr)


class QueueInfo:
    """One queue: name ("" for the anonymous queue), is_default, enabled,
    started, blocked (why a started queue does not schedule: "scheduler" or
    "parent"), parent (a virtual queue's), resources, defaults, limits."""

    def __init__(self, name: str | None, config: dict, resources: SchedResourceList, enabled: bool,
                 started: bool, default: bool, parent: str = "", blocked: str | None = None) -> None:
        self.name = name or ""
        self.config = config
        self.is_default = default
        self.enabled = enabled
        self.started = started
        self.parent = parent or ""
        self.blocked = blocked
        self.resources = QueueResources(self.name, resources, config, self.parent)
        self.defaults = QueueDefaults(duration=parse_fsd(self._lookup(("policy", "jobspec", "defaults", "system",
                                                                        "duration"), "inf")))
        self.limits = QueueLimits(
            min=QueueResourceCounts(*(self._size(key, "min") for key in ("nnodes", "ncores", "ngpus"))),
            max=QueueResourceCounts(*(self._size(key, "max") for key in ("nnodes", "ncores", "ngpus"))),
            duration=parse_fsd(self._lookup(("policy", "limits", "duration"), "inf")),
        )

    def _config_entries(self) -> Iterator[dict]:
        """Where a setting is looked for, first found wins: the queue's own
        table, its parent's (a virtual queue), the instance's."""
        queues = self.config.get("queues", {})
        if self.name in queues:
            yield queues[self.name]
        if self.parent:
            yield _parent_entry(queues, self.name, self.parent)
        yield self.config

    def _lookup(self, path: tuple[str, ...], default: Any) -> Any:
        for entry in self._config_entries():
            value: Any = entry
            for key in path:
                if not isinstance(value, dict) or key not in value:
                    break
                value = value[key]
            else:
                return value
        return default

    def _size(self, key: str, which: str) -> float:
        value = self._lookup(("policy", "limits", "job-size", which, key), None)
        if value is None:
            return math.inf if which == "max" else 0
        return math.inf if value < 0 else value


class QueueList:
    """The queues (all, or those named in queues: ValueError for one not
    configured); iterate, index by name (qlist["batch"], qlist[""] for the
    anonymous queue), or read as attributes (qlist.batch)."""

    def __init__(self, handle: Any, queues: Any = None) -> None:
        resources = resource_list(handle).get()
        config = handle.rpc("config.get").get()
        self.default_queue = self._default_queue(config)
        configured = config.get("queues", {})
        if queues:
            missing = [q for q in queues if q not in configured]
            if missing:
                raise ValueError(f"No such queue: {missing[0]}")
            configured = {q: configured[q] for q in queues}
        self._anonymous: QueueInfo | None = None
        if not configured:
            st = handle.rpc("job-manager.queue-status", {}).get()
            self._anonymous = QueueInfo(None, config, resources, st["enable"], st["start"], True,
                                        st.get("parent", ""), st.get("blocked"))
            self._queues = {"": self._anonymous}
        else:
            futures = {q: handle.rpc("job-manager.queue-status", {"name": q}) for q in configured}
            self._queues = {}
            for q, future in futures.items():
                st = future.get()
                self._queues[q] = QueueInfo(q, config, resources, st["enable"], st["start"],
                                            q == self.default_queue, st.get("parent", ""), st.get("blocked"))

    @staticmethod
    def _default_queue(config: dict) -> str:
        try:
            return config["policy"]["jobspec"]["defaults"]["system"]["queue"]
        except (KeyError, TypeError):
            return ""

    def __getattr__(self, attr: str) -> QueueInfo:
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self._queues[attr]
        except KeyError:
            raise AttributeError(attr) from None

    def __getitem__(self, item: str | None) -> QueueInfo | None:
        if item is None:
            return self._anonymous
        return self._queues[item]

    def __iter__(self) -> Iterator[QueueInfo]:
        return iter(self._queues.values())

    def __len__(self) -> int:
        return len(self._queues)
