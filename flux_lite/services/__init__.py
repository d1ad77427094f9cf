"""The instance's services by topic, for clients that speak in requests.

A Flux client reaches the broker's services by topic (`job-info.lookup`,
`kvs.lookup`, ...). flux-lite has no broker process, so this table stands in
for it: `call(instance, topic, payload)` runs the service's handler in the
caller's process, as one transaction of the instance, exactly as a CLI
command does; `stream(...)` serves a streaming request (Flux's
`FLUX_RPC_STREAMING`) one response at a time, each response its own
transaction, so a watch under a virtual clock lets simulated time pass
between responses as `flux job wait-event` does. Two clients use it: the
`flux` package, in its own process, and programs linked against Flux's
libflux, through the broker socket `flux-lite start COMMAND` serves
(flux_lite/connector.py), which gives streams and waiting services
(`waits=True`) a thread of their own.

Each topic module (attr.py, job_info.py, ...) lists its handlers in
SERVICES (table.py's `service` decorator), named in _MODULES below. A
handler takes the instance and the request payload (a dict) and returns
the response payload; errors are FluxLiteError with an errno (ENOSYS for a topic
nobody serves, as Flux's broker answers). The requester is the instance's
identity (`Instance.identity`): a guest reaches only what the CLI lets a
guest reach, because handlers call the same library functions the commands
call. Payloads follow Flux's where the topic is Flux's.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.services import attr, config, fluxion, job_info, job_ingest, job_list, job_manager, kvs, queue, resource
from flux_lite.services.table import Payload, Service

# every topic module, in no particular order (a topic served twice is an error)
_MODULES = (attr, config, fluxion, job_info, job_ingest, job_list, job_manager, kvs, queue, resource)


def _table() -> dict[str, Service]:
    table: dict[str, Service] = {}
    for module in _MODULES:
        for svc in module.SERVICES:
            if svc.topic in table:
                raise ValueError(f"{svc.topic} is served twice")
            table[svc.topic] = svc
    return table


_SERVICES = _table()


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
    """The responses of a streaming request, in order: a streaming topic's,
    or those a one-response topic gives a streaming request (job-list.list:
    one job each), else its one response."""
    svc = lookup(topic)
    if svc.streaming:
        return iter(svc.handler(instance, payload or {}))
    if svc.streamed is not None:
        return iter(svc.streamed(instance, payload or {}))
    return iter([svc.handler(instance, payload or {})])
