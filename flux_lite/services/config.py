"""config: the instance configuration (config.get, config.load), as `flux config` reads and loads it."""

from __future__ import annotations

import copy
import errno

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.services.table import Payload, Service, service

SERVICES: list[Service] = []


@service(SERVICES, "config.get")
def get(instance: Instance, payload: Payload) -> Payload:
    """The whole configuration object."""
    with instance.read_session() as broker:
        return copy.deepcopy(broker.config)  # the script's to change


@service(SERVICES, "config.load")
def load(instance: Instance, payload: Payload) -> Payload:
    """Replace the configuration with the payload (its TOML tables), checked
    first; the instance owner's, as `flux-lite config load`."""
    if not isinstance(payload, dict):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    with instance.session() as broker:
        admin.config_load(broker, payload)
    return {}
