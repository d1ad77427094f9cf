"""attr: the broker's own services: the attributes a client reads (flux
getattr, Flux.attr_get) and module.debug's deferred delivery."""

from __future__ import annotations

import errno

from flux_lite import admin, brokerinfo
from flux_lite.sched import loader
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []


@service(SERVICES, "attr.get")
def attr_get(instance: Instance, payload: Payload) -> Payload:
    """One attribute of brokerinfo's table (the one `flux getattr` reads)."""
    name = field(payload, "name", str)
    with instance.read_session() as broker:
        value = brokerinfo.attributes(broker).get(name)
    if value is None:
        raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
    return {"value": value, "flags": 0}


@service(SERVICES, "module.debug")
def module_debug(instance: Instance, payload: Payload) -> Payload | None:
    """{name, defer?}: with defer, hold (true) or release (false) the
    module's messages, as Flux's broker does; an empty response."""
    name = field(payload, "name", str)
    defer = payload.get("defer")
    if defer is not None and not isinstance(defer, bool):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    with instance.session() as broker:
        if defer is None:
            if name != loader.loaded_name(broker):
                raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
        else:
            admin.module_defer(broker, name, defer)
    return None
