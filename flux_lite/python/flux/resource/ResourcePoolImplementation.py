"""flux.resource.ResourcePoolImplementation: the interface a scheduler's
resource pool implements, and the two ways an allocation fails.

A pool is a resource set that also knows which ranks are up and what each
job holds. ``generation`` counts its changes: a scheduler keeps a copy's
generation to know when a simulation made on it is stale.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["InsufficientResources", "InfeasibleRequest", "ResourcePoolImplementation"]


class InsufficientResources(OSError):
    """The request fits the pool, but not now: try again after a free."""


class InfeasibleRequest(OSError):
    """The request can never be satisfied by this pool: deny it."""


class ResourcePoolImplementation(ABC):
    """What every pool implementation provides (Flux's abstract pool)."""

    #: bumped by every change (alloc, free, up/down, expiration updates...);
    #: the class value stands until an instance first changes
    generation: int = 0

    def log(self, level: int, msg: str) -> None:
        """Log msg at syslog level; a pool given ``log=`` at construction
        (the scheduler's logger) has that callable here instead."""
        return None

    def _bump(self) -> None:
        self.generation += 1

    @property
    def name(self) -> str:
        """The implementation's name (the class name unless overridden)."""
        return type(self).__name__

    @property
    def expiration(self) -> float:
        """The resources' expiration (seconds since the epoch, 0 = none)."""
        return self.get_expiration()

    @expiration.setter
    def expiration(self, value: float) -> None:
        self.set_expiration(value)

    @abstractmethod
    def get_expiration(self) -> float: ...

    @abstractmethod
    def set_expiration(self, expiration: float) -> None: ...

    @abstractmethod
    def mark_up(self, ids: Any) -> None:
        """Mark the ranks of an idset (or "all") schedulable."""

    @abstractmethod
    def mark_down(self, ids: Any) -> None:
        """Mark the ranks of an idset (or "all") not schedulable."""

    @abstractmethod
    def copy_down(self) -> Any:
        """The down resources, as a resource set."""

    @abstractmethod
    def register_alloc(self, jobid: int, R: Any) -> None:
        """Mark an existing allocation allocated (scheduler hello)."""

    @abstractmethod
    def free(self, jobid: int, R: Any = None, final: bool = False) -> None:
        """Return a job's resources (all, or those of R) to the pool."""

    @abstractmethod
    def update_expiration(self, jobid: int, expiration: float) -> None:
        """Change the end time the pool keeps for a running job."""

    @abstractmethod
    def job_end_times(self) -> list[tuple[int, float]]:
        """(jobid, end time) of every job holding resources."""

    @abstractmethod
    def parse_resource_request(self, jobspec: dict) -> Any:
        """The pool's request object for a jobspec."""

    @abstractmethod
    def alloc(self, jobid: int, request: Any) -> Any:
        """Allocate for jobid; the allocated resources as a pool."""

    @abstractmethod
    def check_feasibility(self, request: Any) -> None:
        """InfeasibleRequest unless the request fits the whole pool."""

    @abstractmethod
    def copy(self) -> Any:
        """An independent copy, allocations included (for simulations)."""

    @abstractmethod
    def copy_allocated(self) -> Any:
        """The allocated resources, as a resource set."""

    @abstractmethod
    def to_set(self) -> Any:
        """Every resource of the pool, as a resource set."""
