"""sched-fluxion-feasibility: Fluxion's feasibility service (``feasibility.check``).

It answers whether a jobspec could ever be satisfied by the resource graph,
allocations aside (job-ingest's feasibility validator, ``update queue=``,
``ion-resource match satisfiability``). Fluxion's module builds its own graph
from sched-fluxion-resource's notify stream; flux-lite's reads the resource
module's graph, so it needs that module loaded. Its options (the
``[sched-fluxion-feasibility]`` table and arguments, the resource module's
keys) are checked at load as Fluxion checks them and kept for ``params``.
"""

from __future__ import annotations

from errno import EEXIST, ENOENT
from typing import TYPE_CHECKING, Any

from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.sched import fluxion_graph as fg
from flux_lite.sched import fluxion_resource
from flux_lite.sched.registry import register_companion

if TYPE_CHECKING:
    from flux_lite.broker import Broker

MODULE_KEY = "sched-fluxion-feasibility.module"
DEFAULTS = dict(fg.RESOURCE_DEFAULTS, **{"prune-filters": "ALL:core,ALL:node,ALL:gpu,ALL:ssd"})


@register_companion
class FluxionFeasibility:
    name = "sched-fluxion-feasibility"
    services = ("feasibility",)
    description = "Fluxion's feasibility check"
    arg_keys = fluxion_resource.FluxionResource.arg_keys
    arg_values = fluxion_resource.FluxionResource.arg_values
    table = "sched-fluxion-feasibility"

    def __init__(self, broker: Broker, options: dict[str, Any]) -> None:
        self.b = broker
        self.options = options

    def handle(self, topic: str, msg: dict, cred: Any = None) -> Any:
        if topic != rfc27.SCHED_FEASIBILITY:
            raise rfc27.error(rfc27.ENOSYS, f"{topic}: unknown method")
        res = fluxion_resource.get(self.b)
        if res is None:
            raise rfc27.error(ENOENT, "sched-fluxion-resource is not loaded")
        res.graph.match("satisfiability", -1, msg.get("jobspec"), self.b.now)
        return {}

    def save(self) -> None:
        pass


def get(broker: Broker) -> FluxionFeasibility | None:
    mod = broker.companions.get(FluxionFeasibility.name)
    if mod is None:
        rec = broker.kvs.get(MODULE_KEY)
        if rec is None:
            return None
        mod = broker.companions[FluxionFeasibility.name] = FluxionFeasibility(broker, rec.get("options", {}))
    return mod


def load(broker: Broker, argv: list[str]) -> FluxionFeasibility:
    name = FluxionFeasibility.name
    if broker.kvs.get(MODULE_KEY) is not None:
        raise FluxLiteError(f"{name}: module is already loaded", errno=EEXIST)
    if broker.kvs.get(fg.MODULE_KEY) is None:
        raise FluxLiteError(f"{name}: sched-fluxion-resource is not loaded", errno=ENOENT)
    opts, notes = fluxion_resource.parse_options(
        fluxion_resource.config_pairs(broker.config, name) + fluxion_resource.arg_pairs(argv), DEFAULTS)
    broker.log(name, "info", f"version {fluxion_resource.VERSION}")
    broker.log(name, "debug", "service registered")
    broker.log(name, "debug", "mod_main: feasibility module starting")
    for note in notes:
        broker.log(name, "debug", note)
    broker.log(name, "debug", "mod_main: resource graph database loaded")
    broker.kvs.put(MODULE_KEY, {"args": list(argv), "options": opts})
    mod = broker.companions[name] = FluxionFeasibility(broker, opts)
    return mod


def remove(broker: Broker) -> None:
    broker.companions.pop(FluxionFeasibility.name, None)
    broker.kvs.delete(MODULE_KEY)
