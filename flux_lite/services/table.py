"""The services table: each topic's handler, and the checks handlers share.

Topic modules (attr.py, job_info.py, ...) list their handlers in SERVICES
with `service()`; flux_lite/services/__init__.py merges the lists.
"""

from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance, WaitStalled, WaitTimeout

Payload = dict[str, Any]
Handler = Callable[[Instance, Payload], Any]


@dataclass(frozen=True)
class Service:
    topic: str
    handler: Handler
    streaming: bool  # the handler returns an iterator of responses
    waits: bool = False  # its one response may be long in coming (it waits for jobs)
    # how a one-response service answers a streaming request (FLUX_RPC_STREAMING),
    # when it has a way of its own (an iterator of responses); else its one response
    streamed: Handler | None = None


def service(services: list[Service], topic: str, streaming: bool = False,
            waits: bool = False) -> Callable[[Handler], Handler]:
    """A decorator adding the handler of topic to a module's list. A
    streaming or waiting service is served beside a client's other requests
    (the broker socket gives it a thread of its own), not before them."""

    def register(handler: Handler) -> Handler:
        services.append(Service(topic, handler, streaming, waits))
        return handler

    return register


def streamed(services: list[Service], topic: str) -> Callable[[Handler], Handler]:
    """A decorator giving topic's service (in the module's list already) the
    handler of its streaming requests: it returns an iterator of responses."""

    def register(handler: Handler) -> Handler:
        for i, svc in enumerate(services):
            if svc.topic == topic:
                services[i] = dataclasses.replace(svc, streamed=handler)
                return handler
        raise ValueError(f"{topic}: no such service to stream")

    return register


def field(payload: Payload, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """payload[key], of type kind (or default when absent and one is given);
    a missing or mistyped field is EPROTO, as Flux answers a malformed request."""
    value = payload.get(key, default)
    if value is ... or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    return value


def wait_for(instance: Instance, check: Callable[[Any], Any], what: str, timeout: float | None = None,
             watches: list[dict] | None = None) -> Any:
    """instance.wait(check), as `flux job wait-event` waits (under a virtual
    clock, simulated time passes); a wait that nothing left could end is
    ETIMEDOUT, saying so (`what` names what was waited for). The watches are
    announced while it polls (`flux module stats`: flux_lite.watchers)."""
    try:
        return instance.wait(check, timeout=timeout, watches=watches)
    except WaitStalled:
        raise FluxLiteError(f"{what}: nothing left to happen under the virtual clock",
                            errno=errno.ETIMEDOUT) from None
    except WaitTimeout:
        raise FluxLiteError(f"{what}: timed out", errno=errno.ETIMEDOUT) from None
