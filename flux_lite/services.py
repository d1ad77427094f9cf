"""The instance's services by topic, for clients that speak in requests.

A Flux client reaches the broker's services by topic (`job-info.lookup`,
`kvs.lookup`, ...). flux-lite has no broker process, so this table stands in
for it: `call(instance, topic, payload)` runs the service's handler in the
caller's process, as one transaction of the instance, exactly as a CLI
command does; `stream(...)` serves a streaming request (Flux's
`FLUX_RPC_STREAMING`) one response at a time, each response its own
transaction, so a watch under a virtual clock lets simulated time pass
between responses as `flux job wait-event` does.

Handlers take the instance and the request payload (a dict) and return the
response payload; errors are FluxLiteError with an errno (ENOSYS for a topic
nobody serves, as Flux's broker answers). The requester is the instance's
identity (`Instance.identity`): a guest reaches only what the CLI lets a
guest reach, because handlers call the same library functions the commands
call. Payloads follow Flux's where the topic is Flux's.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats.eventlog import format_json
from flux_lite.formats.jobid import f58
from flux_lite.instance import Instance, WaitStalled
from flux_lite.job_manager import waiters

Payload = dict[str, Any]
Handler = Callable[[Instance, Payload], Any]


@dataclass(frozen=True)
class Service:
    topic: str
    handler: Handler
    streaming: bool  # the handler returns an iterator of responses


_SERVICES: dict[str, Service] = {}


def service(topic: str, streaming: bool = False) -> Callable[[Handler], Handler]:
    """Register a handler for topic (a decorator)."""

    def register(handler: Handler) -> Handler:
        if topic in _SERVICES:
            raise ValueError(f"{topic} is served twice")
        _SERVICES[topic] = Service(topic, handler, streaming)
        return handler

    return register


def topics() -> list[str]:
    """Every topic served, sorted."""
    return sorted(_SERVICES)


def lookup(topic: str) -> Service:
    found = _SERVICES.get(topic)
    if found is None:
        raise FluxLiteError("Function not implemented", errno=errno.ENOSYS)
    return found


def call(instance: Instance, topic: str, payload: Payload | None = None) -> Any:
    """One request, one response (a streaming topic answers with its first)."""
    svc = lookup(topic)
    result = svc.handler(instance, payload or {})
    if svc.streaming:
        for response in result:
            return response
        raise FluxLiteError("No data available", errno=errno.ENODATA)
    return result


def stream(instance: Instance, topic: str, payload: Payload | None = None) -> Iterator[Any]:
    """The responses of a request, in order; a non-streaming topic gives one."""
    svc = lookup(topic)
    if svc.streaming:
        return iter(svc.handler(instance, payload or {}))
    return iter([svc.handler(instance, payload or {})])


# -- payload checks (Flux answers a malformed request with EPROTO) -------------

def _field(payload: Payload, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    value = payload.get(key, default)
    if value is ... or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    return value


# -- attr ----------------------------------------------------------------------

def _attributes(instance: Instance) -> dict[str, str]:
    """The broker attributes a client commonly reads."""
    return {
        "rank": "0",
        "instance-level": "0",
        "local-uri": f"local://{instance.state_dir}",
        "rundir": str(instance.state_dir),
    }


@service("attr.get")
def attr_get(instance: Instance, payload: Payload) -> Payload:
    name = _field(payload, "name", str)
    value = _attributes(instance).get(name)
    if value is None:
        raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
    return {"value": value, "flags": 0}


# -- job-info ------------------------------------------------------------------

@service("job-info.eventlog-watch", streaming=True)
def eventlog_watch(instance: Instance, payload: Payload) -> Iterator[Payload]:
    """A job's main eventlog, entry by entry, ending (ENODATA) after `clean`.

    Each entry not yet written is waited for as `flux job wait-event` waits:
    under a virtual clock, simulated time passes until it is posted."""
    jobid = _field(payload, "id", int)
    path = _field(payload, "path", str, "eventlog")
    if path != "eventlog":
        raise FluxLiteError(f"{path}: only the main eventlog is watched", errno=errno.EINVAL)
    sent = 0
    while True:
        def more(broker: Any, sent: int = sent) -> Any:
            entries = waiters.readable_eventlog(broker, jobid)
            if entries is None:
                return f"job {f58(jobid)} not found"
            if len(entries) > sent:
                return entries[sent:]
            return None

        try:
            found = instance.wait(more)
        except WaitStalled:
            raise FluxLiteError("Connection timed out: nothing left to happen under the virtual clock",
                                errno=errno.ETIMEDOUT) from None
        if isinstance(found, str):
            raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
        for entry in found:
            sent += 1
            yield {"event": format_json(entry)}
            if entry["name"] == "clean":
                return

