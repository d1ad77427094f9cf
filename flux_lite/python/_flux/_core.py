"""``_flux._core``: the few C functions Flux's Python scheduler modules call
through ``lib`` -- the reactor of a module's handle and its clock, which for
a module hosted by flux-lite is the instance's virtual clock."""

from __future__ import annotations

import errno
from types import SimpleNamespace
from typing import Any


def flux_get_reactor(handle: Any) -> Any:
    """The reactor of a handle (a hosted module's handle is its own reactor)."""
    reactor_now = getattr(handle, "reactor_now", None)
    if reactor_now is None:
        raise OSError(errno.EINVAL, "Invalid argument")
    return handle


def flux_reactor_now(reactor: Any) -> float:
    """The reactor's idea of now: the instance's virtual clock."""
    return float(reactor.reactor_now())


lib = SimpleNamespace(flux_get_reactor=flux_get_reactor, flux_reactor_now=flux_reactor_now)

__all__ = ["lib"]
