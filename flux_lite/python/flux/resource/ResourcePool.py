"""flux.resource.ResourcePool: the pool a scheduler module holds, a thin
wrapper over a pool implementation chosen by R's version (1: Rv1Pool), and
the resolution of a pool-class URI (the ``pool-class=`` module argument,
R's ``scheduling.writer``)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from flux.resource.ResourcePoolImplementation import (
    InfeasibleRequest,
    InsufficientResources,
    ResourcePoolImplementation,
)
from flux.resource.ResourceSet import ResourceSet
from flux.resource.Rv1Pool import Rv1Pool

__all__ = ["ResourcePool", "make_pool"]

#: URI -> pool class, for the URIs that resolved (a failed import is tried
#: again next time: the module may be on the path later)
_POOL_CLASS_CACHE: dict[str, Any] = {}


def _pool_class_from_uri(uri: str) -> Any:
    """The pool class a URI names, or None: ``module`` (its ``pool_class``;
    a bare name is also looked up under flux.resource) or ``module:Class``.
    Dashes in the module name read as underscores."""
    cls = _POOL_CLASS_CACHE.get(uri)
    if cls is not None:
        return cls
    module_name, _, cls_name = uri.partition(":")
    module_name = module_name.replace("-", "_")
    names = [module_name]
    if "." not in module_name:
        names.append("flux.resource." + module_name)
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        cls = getattr(module, cls_name or "pool_class", None)
        break
    if cls is not None:
        _POOL_CLASS_CACHE[uri] = cls
    return cls


def make_pool(R: Any, pool_class: Any = None, pool_kwargs: Mapping[str, Any] | None = None,
              log: Any = None) -> Any:
    """The pool a scheduler builds of an R (dict or JSON string): what
    ``flux.scheduler.Scheduler._make_pool`` does with its ``pool_class``,
    ``pool_kwargs`` and ``log``. In order: pool_class (a ResourcePool or
    ResourcePoolImplementation subclass; an implementation must set
    ``self.impl = self``, ValueError otherwise); the class R's
    ``scheduling.writer`` URI names (``fluxion`` when scheduling has no
    writer), if it resolves; ResourcePool (by R's version). The keyword
    arguments go to whichever class is chosen."""
    kwargs = dict(pool_kwargs or {})
    if pool_class is not None:
        if not (isinstance(pool_class, type) and issubclass(pool_class, (ResourcePool, ResourcePoolImplementation))):
            raise ValueError(
                f"pool_class must be a ResourcePool or ResourcePoolImplementation subclass, got {pool_class!r}"
            )
        pool = pool_class(R, log=log, **kwargs)
        if not isinstance(pool, ResourcePool) and not hasattr(pool, "impl"):
            raise ValueError(f"{pool_class!r} must set self.impl = self during __init__")
        return pool
    if isinstance(R, str):
        R = json.loads(R)
    if isinstance(R, Mapping):
        scheduling = R.get("scheduling")
        if scheduling is not None:
            writer = scheduling.get("writer", "fluxion") if isinstance(scheduling, Mapping) else "fluxion"
            cls = _pool_class_from_uri(writer)
            if cls is not None:
                return cls(R, log=log, **kwargs)
    return ResourcePool(R, log=log, **kwargs)


def _impl_of(R: Any) -> Any:
    return R.impl if isinstance(R, ResourcePool) else R


class ResourcePool:
    """A resource pool: from an R (JSON string or dict; its version picks the
    implementation) or an implementation to wrap. alloc() and copy() return
    the wrapper's own class (built by _from_impl, not __init__)."""

    InsufficientResources = InsufficientResources
    InfeasibleRequest = InfeasibleRequest

    def __init__(self, arg: Any = None, version: int = 1, log: Any = None, **kwargs: Any) -> None:
        if isinstance(arg, ResourcePoolImplementation):
            self.impl = arg
            self.version = getattr(arg, "version", version)
            return
        if isinstance(arg, str):
            arg = json.loads(arg)
        if isinstance(arg, Mapping):
            version = arg.get("version", version)
        elif arg is not None:
            raise TypeError(f"ResourcePool cannot be instantiated from {type(arg)}")
        if version != 1:
            raise ValueError(f"R version {version} not supported by ResourcePool")
        self.impl = Rv1Pool(arg, log=log, **kwargs)
        self.version = 1

    @classmethod
    def _from_impl(cls, impl: Any) -> Any:
        new = cls.__new__(cls)
        new.impl = impl
        new.version = getattr(impl, "version", 1)
        return new

    @property
    def generation(self) -> int:
        """Bumped by every change of the pool."""
        return self.impl.generation

    def mark_up(self, ids: Any) -> None:
        """Mark the ranks of an idset (or "all") up."""
        self.impl.mark_up(ids)

    def mark_down(self, ids: Any) -> None:
        """Mark the ranks of an idset (or "all") down."""
        self.impl.mark_down(ids)

    def remove_ranks(self, ranks: Any) -> None:
        """Drop ranks from the pool (a shrink, or hello's freed ranks)."""
        self.impl.remove_ranks(ranks)

    @property
    def expiration(self) -> float:
        return self.impl.get_expiration()

    @expiration.setter
    def expiration(self, value: float) -> None:
        self.impl.set_expiration(value)

    def register_alloc(self, jobid: int, R: Any) -> None:
        """Mark a running job's R allocated (scheduler hello)."""
        self.impl.register_alloc(jobid, _impl_of(R))

    def free(self, jobid: int, R: Any = None, final: bool = False) -> None:
        """Release a job's resources: all of them, or those of R."""
        self.impl.free(jobid, _impl_of(R), final)

    def update_expiration(self, jobid: int, expiration: float) -> None:
        self.impl.update_expiration(jobid, expiration)

    def job_end_times(self) -> list[tuple[int, float]]:
        return self.impl.job_end_times()

    def parse_resource_request(self, jobspec: dict) -> Any:
        return self.impl.parse_resource_request(jobspec)

    def alloc(self, jobid: int, request: Any) -> Any:
        """The resources allocated to jobid, as a pool of this class."""
        return self._from_impl(self.impl.alloc(jobid, request))

    def check_feasibility(self, request: Any) -> None:
        self.impl.check_feasibility(request)

    def copy(self) -> Any:
        """An independent copy with the allocations (for simulations)."""
        return self._from_impl(self.impl.copy())

    def to_resource_set(self) -> Any:
        return ResourceSet(self.impl.to_set())

    def copy_allocated(self) -> Any:
        return ResourceSet(self.impl.copy_allocated())

    def copy_down(self) -> Any:
        return ResourceSet(self.impl.copy_down())

    def dumps(self) -> str:
        return self.impl.dumps()

    def to_dict(self) -> dict:
        return self.impl.to_dict()

    def set_starttime(self, starttime: float) -> None:
        self.impl.set_starttime(starttime)

    def set_expiration(self, expiration: float) -> None:
        self.impl.set_expiration(expiration)
