"""Fluxion's request topics: what `flux ion-resource` and Fluxion's test
scripts (`flux qmanager-params`) ask of sched-fluxion-resource,
sched-fluxion-qmanager and sched-fluxion-feasibility.

Each topic is forwarded to the module that serves it through the broker
(`Broker.rpc`), in one transaction of the instance: a request that changes
the resource graph (match, update, cancel, set-status, ...) commits with
what it changed, one that only reads runs in a read session. A module that
is not loaded answers ENOSYS, as Flux's broker does. Payloads and responses
are Fluxion's (flux-sched's `src/cmd/flux-ion-resource.py` is the client
they are shaped for).
"""

from __future__ import annotations

import errno
import os
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.services.table import Payload, Service, service

SERVICES: list[Service] = []

RESOURCE = "sched-fluxion-resource"
QMANAGER = "sched-fluxion-qmanager"

# sched-fluxion-resource's methods, and whether each changes the module's state
RESOURCE_METHODS = {
    "match": True,
    "update": True,
    "cancel": True,
    "partial-cancel": True,
    "info": False,
    "stats-get": False,
    "stats-clear": True,
    "next_jobid": False,
    "find": False,
    "status": False,
    "set_status": True,
    "set_property": True,
    "remove_property": True,
    "get_property": False,
    "ns-info": False,
    "params": False,
    "add_subgraph": True,
    "remove_subgraph": True,
}
QMANAGER_METHODS = {"params": False}
FEASIBILITY_METHODS = {"check": False}


def request(instance: Instance, topic: str, payload: Payload | None = None) -> Any:
    """The response of the module serving topic, or its error (FluxLiteError
    with the errno and, where the module gives none, strerror's text)."""
    writes = _writes(topic)
    opener = instance.session if writes else instance.read_session
    failure = None
    with opener() as broker:
        try:
            return broker.rpc(topic, payload or {})
        except FluxLiteError as exc:
            # an error response commits what the module did before failing,
            # as Fluxion's modules keep it (a failed match counts in the stats,
            # set-property keeps the paths before an unknown one)
            failure = exc
    num = failure.errno or errno.EINVAL
    if num == errno.ENOSYS:
        # the module is not loaded: Flux's broker words it so
        raise FluxLiteError(f"No service matching {topic} is registered", errno=num)
    raise FluxLiteError(failure.message or _strerror(num), errno=num)


def _writes(topic: str) -> bool:
    service_name, _, method = topic.partition(".")
    table = {RESOURCE: RESOURCE_METHODS, QMANAGER: QMANAGER_METHODS,
             "feasibility": FEASIBILITY_METHODS}.get(service_name, {})
    return table.get(method, True)


def _strerror(num: int) -> str:
    return os.strerror(num)


def _forward(topic: str) -> None:
    @service(SERVICES, topic)
    def handler(instance: Instance, payload: Payload) -> Any:
        return request(instance, topic, payload)


for _name, _table in ((RESOURCE, RESOURCE_METHODS), (QMANAGER, QMANAGER_METHODS),
                      ("feasibility", FEASIBILITY_METHODS)):
    for _method in _table:
        _forward(f"{_name}.{_method}")
