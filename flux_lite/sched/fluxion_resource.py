"""sched-fluxion-resource (and sched-fluxion-feasibility's options): Fluxion's
resource module, holding the graph (sched/fluxion_graph.py).

It is a companion module, not a scheduler: it does not sit in the broker's
scheduler slot (sched-fluxion-qmanager does, and matches through it). Loaded,
it keeps its arguments under ``sched-fluxion-resource.module`` and its graph
under ``sched-fluxion-resource.state``; within a command :func:`get` returns
one module object, whose graph is written back when the command ends
(``save``, called by the broker). Requests ``sched-fluxion-resource.<method>``
reach :meth:`FluxionResource.handle`.

Options: the ``[sched-fluxion-resource]`` table, then the module arguments
(which win), read at load only (Fluxion has no config-reload handler).
"""

from __future__ import annotations

import json
from errno import EEXIST, EINVAL
from typing import TYPE_CHECKING, Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats.idset import IDset
from flux_lite.sched import fluxion_graph as fg
from flux_lite.sched import fluxion_rpc
from flux_lite.sched.registry import register_companion

if TYPE_CHECKING:
    from flux_lite.broker import Broker

VERSION = "0.54.0"  # the flux-sched release whose behaviour this follows

_KEYS = ("load-file", "load-format", "load-allowlist", "policy", "match-policy", "match-format", "subsystems",
         "reserve-vtx-vec", "prune-filters", "update-interval", "traverser")
MATCH_FORMATS = ("simple", "jgf", "jgf_shorthand", "rlite", "rv1", "rv1_nosched", "rv1_shorthand",
                 "pretty_simple")
LOAD_FORMATS = ("grug", "hwloc", "jgf", "jgf_shorthand", "rv1exec", "rv1exec_force")


def toml_text(value: Any) -> str:
    """A TOML value as Fluxion reads it: json_dumps, with a string's quotes stripped."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse_options(pairs: list[tuple[str, str]], defaults: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The resource module's options from (key, value) pairs in order
    (config file first, then arguments); returns (options, debug notes).
    Raises FluxLiteError (EINVAL) with Fluxion's words for what fails a load."""
    opts = dict(defaults)
    notes: list[str] = []
    prune_set = False
    for key, value in pairs:
        if key not in _KEYS:
            raise FluxLiteError(f"Unknown option ({key}).", errno=EINVAL)
        if key in ("policy", "match-policy"):
            try:
                fg.make_policy(value)
            except ValueError as exc:
                raise FluxLiteError(str(exc), errno=EINVAL) from None
            opts["policy"] = value
        elif key == "match-format":
            if value in MATCH_FORMATS:
                opts["match-format"] = value
            else:
                notes.append(f"Unknown match format ({value})! Using default.")
        elif key == "load-format":
            if value in LOAD_FORMATS:
                opts["load-format"] = value
            else:
                notes.append(f"Unknown resource reader ({value})! Using default.")
        elif key in ("reserve-vtx-vec", "update-interval"):
            n = _number(value)
            if n is not None and 0 < n <= 2000000:
                opts[key] = n
        elif key == "prune-filters":
            if value.strip(" "):
                opts[key] = f"{opts[key]},{value}" if prune_set else value
                prune_set = True
        elif key == "traverser":
            if value not in ("simple", "flexible"):
                raise FluxLiteError(f"Unknown traverser policy ({value})! ", errno=EINVAL)
            opts[key] = value
        elif key == "load-file":
            raise FluxLiteError("load-file is not supported by flux-lite (the graph comes from resource.acquire)",
                                errno=EINVAL)
        else:
            opts[key] = value
    return opts, notes


def config_pairs(cfg: dict, table: str) -> list[tuple[str, str]]:
    section = cfg.get(table) or {}
    if not isinstance(section, dict):
        raise FluxLiteError(f"[{table}]: not a table", errno=EINVAL)
    return [(k, toml_text(v)) for k, v in section.items()]


def arg_pairs(argv: list[str]) -> list[tuple[str, str]]:
    out = []
    for arg in argv:
        key, _eq, value = arg.partition("=")
        out.append((key, value))
    return out


@register_companion
class FluxionResource:
    """The loaded resource module of one command."""

    name = "sched-fluxion-resource"
    services: tuple[str, ...] = ()
    acquires = True  # holds resource.acquire: no other scheduler loads beside it
    description = "Fluxion's resource graph and matcher"
    arg_keys = _KEYS
    # completion's candidates
    arg_values = {"policy": fg.NAMED_POLICIES[:8], "match-policy": fg.NAMED_POLICIES[:8],
                  "match-format": MATCH_FORMATS, "load-format": LOAD_FORMATS, "traverser": ("simple", "flexible")}
    table = "sched-fluxion-resource"

    def __init__(self, broker: Broker, graph: fg.ResourceGraph, argv: list[str]) -> None:
        self.b = broker
        self.graph = graph
        self.argv = argv
        self.dirty = False

    # -- requests (sched-fluxion-resource.<method>) --------------------------------

    def handle(self, topic: str, msg: dict, cred: Any = None) -> Any:
        # Fluxion's request handlers (ion-resource's, module stats): sched/fluxion_rpc.py
        method = topic.partition(".")[2]
        if fluxion_rpc.changed(method):
            self.dirty = True  # even when it fails: a failed match counts in the stats
        return fluxion_rpc.handle(self.graph, method, msg, self.b.now)

    # -- resource module events ----------------------------------------------------------

    def status_changed(self, ranks: Any, status: str) -> None:
        """Ranks went up or down (drain, undrain): logged as Fluxion does."""
        ranks = IDset(r for r in ranks if r in self.graph.by_rank)
        if not ranks:
            return
        self.graph.set_ranks_status(ranks, status)
        self.log("debug", f"resource status changed (rankset=[{ranks}] status={status.upper()})")
        self.dirty = True

    def log(self, level: str, msg: str) -> None:
        self.b.log(self.name, level, msg)

    def save(self) -> None:
        if self.dirty:
            fg.save_graph(self.b.kvs, self.graph)
            self.dirty = False


def get(broker: Broker) -> FluxionResource | None:
    """The loaded resource module of this command (None when not loaded)."""
    mod = broker.companions.get(FluxionResource.name)
    if mod is None:
        rec = broker.kvs.get(fg.MODULE_KEY)
        if rec is None:
            return None
        graph = fg.load_graph(broker.kvs)
        if graph is None:
            return None
        mod = broker.companions[FluxionResource.name] = FluxionResource(broker, graph, rec.get("args", []))
    return mod


def load(broker: Broker, argv: list[str]) -> FluxionResource:
    """flux module load sched-fluxion-resource ARGS: options (config, then
    arguments), the graph of the instance's resources, the load's log lines."""
    if broker.kvs.get(fg.MODULE_KEY) is not None:
        raise FluxLiteError(f"{FluxionResource.name}: module is already loaded", errno=EEXIST)
    opts, notes = parse_options(config_pairs(broker.config, "sched-fluxion-resource") + arg_pairs(argv),
                                fg.RESOURCE_DEFAULTS)
    name = FluxionResource.name
    broker.log(name, "info", f"version {VERSION}")
    broker.log(name, "debug", "mod_main: resource module starting")
    for note in notes:
        broker.log(name, "debug", note)
    if opts.get("load-allowlist") and opts["load-format"] in ("rv1exec", "rv1exec_force"):
        broker.log(name, "warning", "create_reader: allowlist unsupported")
    res = broker.resources
    expiration = res.instance_R["execution"].get("expiration", 0.0) or 0.0
    graph = fg.ResourceGraph.create(res.rset, opts, broker.now, expiration)
    broker.log(name, "debug", "resource graph datastore loaded with rv1exec reader")
    broker.log(name, "info", "populate_resource_db: loaded resources from core's resource.acquire")
    mod = broker.companions[name] = FluxionResource(broker, graph, list(argv))
    all_ranks = IDset(n.rank for n in graph.nodes)
    broker.log(name, "debug", "resource status changed (rankset=[all] status=DOWN)")
    graph.set_ranks_status(all_ranks, "down")
    up = all_ranks - res.down_ranks()
    graph.set_ranks_status(up, "up")
    if up:
        broker.log(name, "debug", f"resource status changed (rankset=[{up}] status=UP)")
    broker.log(name, "debug", "mod_main: resource graph database loaded")
    broker.kvs.put(fg.MODULE_KEY, {"args": list(argv)})
    mod.dirty = True
    return mod


def remove(broker: Broker) -> None:
    """The module and its graph are gone (the caller stops what depends on it)."""
    broker.companions.pop(FluxionResource.name, None)
    broker.kvs.delete(fg.MODULE_KEY)
    broker.kvs.delete(fg.STATE_KEY)
