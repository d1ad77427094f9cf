"""Jobspec validation: what flux-core's job-ingest applies to a submitted jobspec.

The default checks are those of job-ingest's ``jobspec`` validator plugin
(flux.job.validate_jobspec, i.e. JobspecV1's), with the same error texts;
``strict=True`` adds the RFC 25 V1 graph rules and the attribute checks of
libjob's jobspec1.c. The jobspec of nearly every job is recognised by
:func:`flux_lite.formats.jj.common_shape` and passes in that one look.

All errors are JobspecError with a one-line message.
"""

import math
import re
from collections.abc import Mapping
from typing import Any

from flux_lite.errors import JobspecError
from flux_lite.formats.jj import INT64_MAX, MAX_RESOURCE_DEPTH, Shape, common_shape, is_int, is_map, is_number, typename

__all__ = ["JobspecTypeError", "canonical", "idset_values_ok", "validate"]


class JobspecTypeError(JobspecError, TypeError):
    """A jobspec part of the wrong type: Flux's Python bindings raise TypeError for these."""


def _missing_extraneous(expected, given, optional=False, allow_additional=False):
    given = set(given)
    if not optional:
        for key in expected:
            if key not in given:
                raise JobspecError(f"Missing key ({key})")
    if not allow_additional:
        extra = given.difference(expected)
        if extra:
            raise JobspecError(f"Extraneous key ({sorted(extra, key=str)[0]})")


def validate(js: Any, strict: bool = False, shape: Shape | None = None) -> None:
    """Validate a jobspec dict; raise JobspecError(reason) if invalid.

    Default: the checks of flux-core's ingest validator (JobspecV1), with its
    messages, plus: duration must be >= 0 and finite, booleans are not numbers.
    The resource graph shape is NOT checked (Flux accepts e.g. a bare core and
    its scheduler then denies the job: see flux_lite.sched.request).

    strict=True adds the RFC 25 V1 rules: exactly one top vertex (node or
    slot), node>slot>core[,gpu] or slot>core[,gpu], no unknown vertex keys,
    exactly one task whose slot matches the slot label, and the attribute
    checks of libjob jobspec1.c.

    shape: common_shape(js), if the caller has it.
    """
    if not strict:
        if shape is None:
            shape = common_shape(js)
        if shape is not None:  # valid but for dependencies and constraints, which it does not read
            system = shape.system
            if "dependencies" in system or "constraints" in system:
                _check_system(system)
            return
    _check_canonical(js, v1=True)
    attributes, tasks = js["attributes"], js["tasks"]
    system = attributes.get("system")

    # JobspecV1 extras
    if "system" not in attributes:
        raise JobspecError("attributes.system is a required key")
    if "duration" not in system:
        raise JobspecError("attributes.system.duration is a required key")
    value = system["duration"]
    if not is_number(value):
        raise JobspecError("attributes.system.duration must be a number")
    if math.isnan(value) or math.isinf(value):
        raise JobspecError("attributes.system.duration must be a finite number")
    if value < 0:
        raise JobspecError("attributes.system.duration must not be negative")
    for task in tasks:
        if task["count"].keys().isdisjoint({"per_slot", "total"}):
            raise JobspecError("count per_slot or total must be set")
    for res in _iter_resources(js["resources"]):
        if not is_int(res["count"]):
            raise JobspecError(
                f"resource count must be an integer for type '{res['type']}' "
                f"(got '{typename(res['count'])}')"
            )
    if strict:
        _check_strict(js)


def canonical(js: Any) -> None:
    """The RFC 14 checks alone (Flux's Jobspec base class): any version >= 1,
    attributes.system and its duration optional."""
    _check_canonical(js, v1=False)


def _check_canonical(js, v1):
    if not is_map(js):
        raise JobspecError("jobspec must be a mapping")
    _missing_extraneous(("attributes", "resources", "tasks", "version"), js.keys())
    version = js["version"]
    if v1 and (version != 1 or isinstance(version, bool)):
        raise JobspecError("version must be 1")
    if not is_int(version):
        raise JobspecTypeError("version must be an integer")
    if version < 1:
        raise JobspecError("version must be >= 1")
    resources, tasks, attributes = js["resources"], js["tasks"], js["attributes"]
    if not isinstance(resources, list):
        raise JobspecTypeError("resources must be a sequence")
    if not isinstance(tasks, list):
        raise JobspecTypeError("tasks must be a sequence")
    if not is_map(attributes):
        raise JobspecTypeError("attributes must be a mapping")

    for res in _iter_resources(resources):
        _check_resource(res)
    for task in tasks:
        _check_task(task)
    _missing_extraneous(("system", "user"), attributes.keys(), optional=True)
    system = attributes.get("system")
    if "system" in attributes:
        if not is_map(system):
            raise JobspecError("attributes.system must be a mapping")
        _check_system(system)


def _iter_resources(res_list, depth=0):
    """Depth-first pre-order walk (Jobspec.__iter__), with sanity checks."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError(
            f"jobspec resource nesting exceeds maximum depth {MAX_RESOURCE_DEPTH}"
        )
    for res in res_list:
        yield res
        children = res.get("with", []) if is_map(res) else []
        if not isinstance(children, list):
            raise JobspecTypeError("with must be a sequence")
        yield from _iter_resources(children, depth + 1)


def _check_resource(res):
    if not is_map(res):
        raise JobspecTypeError("resource must be a mapping")
    if "type" not in res:
        raise JobspecError("type is a required key for resources")
    if not isinstance(res["type"], str):
        raise JobspecTypeError("type must be a string")
    if "count" not in res:
        raise JobspecError("count is a required key for resources")
    count = res["count"]
    if is_map(count):
        _check_range(count)
    elif isinstance(count, str):
        _check_count_string(count)
    elif not is_int(count):
        raise JobspecTypeError("count must be an int or mapping")
    else:
        if res["type"] in ("node", "slot", "core") and count < 1:
            raise JobspecError("node, slot, or core count must be > 0")
        if count < 0:
            raise JobspecError("count must be >= 0")
        if count > INT64_MAX:  # past what jansson reads: Flux's job-ingest refuses it
            raise JobspecError(f"{res['type']} count {count} is too large")
    for key in ("id", "unit", "label"):
        if key in res and not isinstance(res[key], str):
            raise JobspecTypeError(f"{key} must be a string")
    if "exclusive" in res and not isinstance(res["exclusive"], bool):
        raise JobspecTypeError("exclusive must be a boolean")
    if res["type"] == "slot" and "label" not in res:
        raise JobspecError("slots must have labels")


def _check_range(rng):
    if "min" not in rng:
        raise JobspecError("min must be in range")
    _missing_extraneous(("min", "max", "operand", "operator"), rng.keys(), optional=True)
    for key in ("min", "max", "operand"):
        if key not in rng:
            continue
        if not is_int(rng[key]):
            raise JobspecTypeError(f"{key} must be an int")
        if rng[key] < 1:
            raise JobspecError(f"{key} must be > 0")
    if "max" in rng and rng["max"] < rng["min"]:
        raise JobspecError("max must be >= min")
    if ("operand" in rng) != ("operator" in rng):
        raise JobspecError("operand and operator must both be in range if either is")
    if "operator" in rng:
        operator = rng["operator"]
        if not isinstance(operator, str) or len(operator) != 1:
            raise JobspecTypeError("operator must be a single character str")
        if operator not in ("+", "*", "^"):
            raise JobspecError("operator must be one of ['+', '*', '^']")
        if operator in ("*", "^") and rng["operand"] < 2:
            raise JobspecError("operand must be > 1 for '*' or '^' operator")
        if operator == "^" and rng["min"] < 2:
            raise JobspecError("min must be > 1 for '^' operator")


_IDSET_TOKEN = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")


def idset_values_ok(text: str) -> bool:
    """RFC 22 idset syntax check (strictly ascending, no leading zeros)."""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if "[" in text or "]" in text:
        return False
    last = -1
    for tok in text.split(","):
        if not tok:
            continue
        match = _IDSET_TOKEN.fullmatch(tok)
        if not match:
            return False
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if match.group(2) is not None and hi <= lo:
            return False
        if lo <= last:
            return False
        last = hi
    return True


def _check_count_string(count):
    if idset_values_ok(count):
        return
    values = count.split(":")
    if len(values) > 3 or ("-" not in values[0] and "+" not in values[0]):
        raise JobspecError("count string must be a valid idset or range")
    rng = {}
    try:
        if "-" in values[0]:
            lo, _, hi = values[0].partition("-")
            rng["max"] = int(hi)
        else:
            lo = values[0].rstrip("+")
        rng["min"] = int(lo)
        if len(values) > 1:
            rng["operand"] = int(values[1])
            rng["operator"] = "+"
    except ValueError:
        raise JobspecError("count string must be a valid idset or range") from None
    if len(values) > 2:
        rng["operator"] = values[2]
    _check_range(rng)


def _check_task(task):
    if not is_map(task):
        raise JobspecTypeError("task must be a mapping")
    _missing_extraneous(("command", "slot", "count"), task.keys(), allow_additional=True)
    count = task["count"]
    if not is_map(count):
        raise JobspecTypeError("count must be a mapping")
    if len(count) != 1:
        raise JobspecError("count must have exactly one key set")
    if count.keys().isdisjoint({"per_slot", "per_resource", "total"}):
        raise JobspecError("count per_slot, per_resource, or total must be set")
    for key in ("total", "per_slot"):
        if key in count:
            if not is_int(count[key]):
                raise JobspecTypeError(f"count {key} must be an int")
            if count[key] <= 0:
                raise JobspecError(f"count {key} must be > 0")
    if not isinstance(task["slot"], str):
        raise JobspecTypeError("slot must be a string")
    if "attributes" in task and not is_map(task["attributes"]):
        raise JobspecTypeError("attributes must be a mapping")
    command = task["command"]
    if isinstance(command, (list, str, Mapping)) and len(command) == 0:
        raise JobspecTypeError("command array cannot have length of zero")
    if not isinstance(command, list) or not all(isinstance(x, str) for x in command):
        raise JobspecTypeError("command must be a list of strings")


def _check_system(system):
    if "dependencies" in system:
        deps = system["dependencies"]
        if not isinstance(deps, list):
            raise JobspecTypeError("attributes.system.dependencies must be a list")
        for dep in deps:
            if not is_map(dep):
                raise JobspecTypeError("dependency must be a mapping")
            _missing_extraneous(("scheme", "value"), dep.keys(), allow_additional=True)
            if not isinstance(dep["scheme"], str):
                raise JobspecTypeError("dependency scheme must be a string")
            if not isinstance(dep["value"], str):
                raise JobspecTypeError("dependency value must be a string")
    if "constraints" in system:
        _check_constraint(system["constraints"], 0)


def _check_constraint(constraint, depth):
    """RFC 31 constraint object."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError("constraints nesting too deep")
    if not is_map(constraint):
        raise JobspecTypeError("constraints must be a mapping")
    for operator, args in constraint.items():
        if not isinstance(operator, str):
            raise JobspecTypeError(f"constraint operation {operator} is not a string")
        if not isinstance(args, (list, str)):
            raise JobspecTypeError(f"argument to constraint {operator} must be a sequence")
        if operator in ("and", "or", "not"):
            for sub in args:
                _check_constraint(sub, depth + 1)
        elif operator == "properties":
            for prop in args:
                if not isinstance(prop, str):
                    raise JobspecError(f"invalid property '{prop}'")
                if any(c in "&'\"`|()" for c in prop):
                    raise JobspecTypeError(f"invalid character in property '{prop}'")
        elif operator == "hostlist":
            for hosts in args:
                if not isinstance(hosts, str):
                    raise JobspecError(f"invalid hostlist '{hosts}'")
        elif operator == "ranks":
            for ranks in args:
                if not isinstance(ranks, str) or not idset_values_ok(ranks):
                    raise JobspecError(f"invalid idset '{ranks}'")
        else:
            raise JobspecTypeError(f"unknown constraint operator '{operator}'")


def _unpacked(where, obj, allowed):
    extra = [k for k in obj if k not in allowed]
    if extra:
        raise JobspecError(
            f"{where}: {len(extra)} object item(s) left unpacked: {', '.join(map(str, extra))}"
        )


def _check_strict(js):
    resources = js["resources"]
    if len(resources) != 1:
        raise JobspecError("resources must contain exactly one vertex")
    top = resources[0]
    label = None
    if top["type"] == "node":
        _unpacked("node vertex", top, ("type", "count", "with", "unit", "exclusive"))
        if "with" not in top:
            raise JobspecError("node vertex: Object item not found: with")
        if len(top["with"]) != 1:
            raise JobspecError("node with array must have 1 elements")
        slot = top["with"][0]
        if slot["type"] != "slot":
            raise JobspecError("node with type must be slot")
        label = _check_strict_slot(slot)
    elif top["type"] == "slot":
        label = _check_strict_slot(top)
    else:
        raise JobspecError("unknown resource vertex type")

    tasks = js["tasks"]
    if len(tasks) != 1:
        raise JobspecError("tasks must contain exactly one task")
    _unpacked("tasks section", tasks[0], ("command", "slot", "count"))
    if tasks[0]["slot"] != label:
        raise JobspecError(
            f"tasks slot '{tasks[0]['slot']}' does not match slot label '{label}'"
        )

    attributes = js["attributes"]
    if "user" in attributes:
        user = attributes["user"]
        if not is_map(user) or len(user) == 0:
            raise JobspecError("if present, attributes.user must contain values")
    system = attributes["system"]
    if "environment" in system and not is_map(system["environment"]):
        raise JobspecError("attributes.system.environment must be a dictionary")
    if "shell" in system:
        shell = system["shell"]
        if not is_map(shell):
            raise JobspecError("attributes.system.shell must be a dictionary")
        if "options" in shell and not is_map(shell["options"]):
            raise JobspecError("attributes.shell.options must be a dictionary")
    if "cwd" in system and not isinstance(system["cwd"], str):
        raise JobspecError("attributes.system.cwd must be a string")
    job = system.get("job")
    if job is not None:
        if not is_map(job):
            raise JobspecError("attributes.system.job must be a dictionary")
        if "name" in job and not isinstance(job["name"], str):
            raise JobspecError("attributes.system.job.name must be a string")
    for key in ("queue", "bank", "project"):
        if key in system and not isinstance(system[key], str):
            raise JobspecError(f"attributes.system.{key} must be a string")


def _check_strict_slot(slot):
    _unpacked("slot vertex", slot, ("type", "count", "with", "label", "unit", "exclusive"))
    if "with" not in slot:
        raise JobspecError("slot vertex: Object item not found: with")
    with_ = slot["with"]
    if len(with_) not in (1, 2):
        raise JobspecError("slot with array must have 1-2 elements")
    seen = []
    for child in with_:
        _unpacked("slot with", child, ("type", "count", "unit"))
        if child["type"] not in ("core", "gpu"):
            raise JobspecError("slot with type must be core or gpu")
        if child["type"] in seen:
            raise JobspecError(f"slot with must not contain more than one {child['type']}")
        seen.append(child["type"])
        if child["type"] == "core" and child["count"] < 1:
            raise JobspecError("slot core count must be >= 1")
    if "core" not in seen:
        raise JobspecError("slot with must contain a core vertex")
    return slot["label"]


