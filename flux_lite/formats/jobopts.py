"""The jobspec that flux submit/run/batch build from their options: shell
options (-o/--setopt, --signal, --taskmap, --unbuffered), the environment
placed where Flux's Jobspec factories put it, and the per-resource layout
(--cores, --tasks-per-node, --tasks-per-core, --gpus-per-node).

The option values themselves (environment rules, signals, URIs, KEY=VAL,
--add-file) are parsed by flux_lite.formats.submitopts, the one parser the
CLI and the ``flux`` package share. Errors are ValueError with flux
submit's words.
"""

from typing import Any

from flux_lite.formats.jobspec import set_treedict


def set_path(obj: dict, key: str, value: Any) -> None:
    """obj[a][b][c] = value for key "a.b.c", creating dicts on the way."""
    try:
        set_treedict(obj, key, value)
    except TypeError:
        raise ValueError(f"failed to set {key}: a part of it is not an object") from None


def set_shell_option(jobspec: dict, key: str, value: Any) -> None:
    set_path(jobspec.setdefault("attributes", {}).setdefault("system", {}), "shell.options." + key, value)


def set_environment(jobspec: dict, env: dict) -> None:
    """attributes.system.environment, placed right after duration as Flux's
    Jobspec factories set it (kept where it is when present)."""
    system = jobspec.setdefault("attributes", {}).setdefault("system", {})
    if "environment" in system or "duration" not in system:
        system["environment"] = env
        return
    ordered = {}
    for key, value in system.items():
        ordered[key] = value
        if key == "duration":
            ordered["environment"] = env
    system.clear()
    system.update(ordered)


def set_unbuffered(jobspec: dict) -> None:
    """-u/--unbuffered: no buffering of the output streams, and the
    output and input batch timeouts cut (50 ms, 0)."""
    set_shell_option(jobspec, "output.stdout.buffer.type", "none")
    set_shell_option(jobspec, "output.stderr.buffer.type", "none")
    set_shell_option(jobspec, "output.batch-timeout", 0.05)
    set_shell_option(jobspec, "input.batch-timeout", 0.0)


def per_resource(command: list[str], ncores: int | None, nnodes: int | None, per_type: str | None,
                 per_count: int | None, gpus_per_node: int | None, exclusive: bool) -> dict:
    """The jobspec of --cores / --tasks-per-node / --tasks-per-core /
    --gpus-per-node: slots of whole resources, the tasks laid out by the
    per-resource shell option."""
    if ncores is not None and (not isinstance(ncores, int) or ncores < 1):
        raise ValueError("ncores must be an integer >= 1")
    if gpus_per_node is not None:
        if not isinstance(gpus_per_node, int) or gpus_per_node < 0:
            raise ValueError("gpus_per_node must be an integer >= 0")
        if not nnodes:
            raise ValueError("gpus_per_node must be specified with nnodes")
    if nnodes is not None:
        if not isinstance(nnodes, int) or nnodes < 1:
            raise ValueError("nnodes must be an integer >= 1")
    elif exclusive:
        raise ValueError("exclusive can only be set with a node count")
    if nnodes and ncores:
        if ncores < nnodes:
            raise ValueError("number of cores cannot be less than nnodes")
        if ncores % nnodes:
            raise ValueError("number of cores must be evenly divisible by node count")
        nslots, slot_size = 1, ncores // nnodes
    elif ncores:
        nslots, slot_size = ncores, 1
    elif nnodes:
        if not exclusive:
            raise ValueError("Specifying nnodes also requires ncores or exclusive")
        nslots, slot_size = 1, 1
    else:
        raise ValueError("must specify node or core count with per_resource")
    children: list = [{"type": "core", "count": slot_size}]
    if gpus_per_node:
        children.append({"type": "gpu", "count": gpus_per_node})
    top: dict = {"type": "slot", "count": nslots, "with": children, "label": "task"}
    if nnodes:
        node: dict = {"type": "node", "count": nnodes}
        if exclusive:
            node["exclusive"] = True
        node["with"] = [top]
        top = node
    system: dict = {"duration": 0}
    if per_type is not None:
        system["shell"] = {"options": {"per-resource": {"type": per_type, "count": per_count}}}
    return {"resources": [top], "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
            "attributes": {"system": system}, "version": 1}
