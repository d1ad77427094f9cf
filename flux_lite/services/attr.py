"""attr: the broker attributes a client reads (flux getattr, Flux.attr_get)."""

from __future__ import annotations

import errno

from flux_lite import brokerinfo
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
