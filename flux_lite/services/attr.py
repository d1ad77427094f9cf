"""attr: the broker attributes a client reads (flux getattr, Flux.attr_get)."""

from __future__ import annotations

import errno

from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []


def _attributes(instance: Instance) -> dict[str, str]:
    """The broker attributes a client commonly reads."""
    return {
        "rank": "0",
        "instance-level": "0",
        "local-uri": f"local://{instance.state_dir}",
        "rundir": str(instance.state_dir),
    }


@service(SERVICES, "attr.get")
def attr_get(instance: Instance, payload: Payload) -> Payload:
    name = field(payload, "name", str)
    value = _attributes(instance).get(name)
    if value is None:
        raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
    return {"value": value, "flags": 0}
