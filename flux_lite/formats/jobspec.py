"""Jobspec version 1 (RFC 14 canonical jobspec, RFC 25 V1 restrictions).

Building (``build``) follows what ``flux submit`` / ``flux run`` produce
(flux.cli.base + JobspecV1.from_command); validation follows what
flux-core's job-ingest really applies (the ``jobspec`` validator plugin,
i.e. flux.job.validate_jobspec / JobspecV1), with the same error texts;
``strict=True`` adds the RFC 25 graph rules. Count extraction follows the
two readers Flux uses: libjob/jj.c (``flux jobs`` NTASKS/NNODES) and the
Python Rv1Pool request parser (``resource_request``, what the scheduler sees).

All errors are JobspecError with a one-line message.
"""

import copy
import errno
import json
import math
import numbers
import re
from collections.abc import Mapping, Sequence

from flux_lite.errors import JobspecError, UsageError
from flux_lite.formats import fsd

__all__ = [
    "DiscreteCountError",
    "parse_setattr",
    "build",
    "loads",
    "dumps",
    "validate",
    "duration",
    "name",
    "ntasks",
    "ncores",
    "nnodes_requested",
    "run_duration",
    "apply_updates",
    "resource_request",
]

MAX_RESOURCE_DEPTH = 100

_DISCRETE_MSG = (
    "{} count specifies discrete valid values that this scheduler "
    "does not support; use a simple min-max range instead"
)


class DiscreteCountError(JobspecError):
    """A node/slot count given as discrete values (stepped range or idset).

    Flux's Python schedulers parse such a request but refuse it at alloc or
    feasibility time (an infeasible request, so a deny note without the
    ``cannot parse jobspec:`` prefix)."""


# ---------------------------------------------------------------------------
# small helpers


_INT64_MAX = (1 << 63) - 1


def _is_map(value, _dict=dict, _mapping=Mapping):
    """isinstance(value, Mapping), without the ABC check for a plain dict."""
    return type(value) is _dict or isinstance(value, _mapping)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    t = type(value)
    if t is float or t is int:  # (the common cases, without the ABC check)
        return True
    return isinstance(value, numbers.Real) and t is not bool


def _typename(value):
    return type(value).__name__


def _set_treedict(obj, key, value):
    """flux.util.set_treedict: d[a][b][c] = value, creating dicts on demand."""
    head, dot, rest = key.partition(".")
    if dot:
        if not isinstance(obj, dict):
            raise TypeError(f"'{_typename(obj)}' object does not support item assignment")
        _set_treedict(obj.setdefault(head, {}), rest, value)
    else:
        if not isinstance(obj, dict):
            raise TypeError(f"'{_typename(obj)}' object does not support item assignment")
        obj[key] = value


def _setattr_key(key):
    """Key of ``--setattr``: no prefix -> ``system.``; leading ``.`` ->
    ``attributes.``; then ``attributes.`` is implied (Jobspec.setattr)."""
    if not key.startswith((".", "attributes.", "user.", "system.")):
        key = "system." + key
    elif key.startswith("."):
        key = "attributes" + key
    if not key.startswith("attributes."):
        if not key.startswith(("user.", "system.")):
            key = "system." + key
        key = "attributes." + key
    return key


def parse_setattr(keyval):
    """Parse ``KEY[=VAL]`` of ``-S/--setattr``: VAL is JSON when it parses as
    JSON, else the string itself; no ``=`` means the value 1.

    (``exec.test.run_duration=0`` therefore sets the integer 0.)
    """
    key, sep, val = keyval.partition("=")
    if not key:
        raise UsageError(f"--setattr: expected KEY=VAL, got '{keyval}'")
    if not sep:
        return key, 1
    from flux_lite.formats.eventlog import jansson_loads

    try:
        # JSON as Flux's job-ingest reads it: NaN or 1e400 stay strings
        return key, jansson_loads(val)
    except (ValueError, UnicodeError):
        return key, val
    except RecursionError:
        raise UsageError(f"--setattr: {key}: value nested too deeply") from None


# ---------------------------------------------------------------------------
# building


def build(
    command,
    ntasks=None,
    nnodes=None,
    cores_per_task=1,
    gpus_per_task=None,
    duration=None,
    name=None,
    cwd=None,
    setattrs=(),
    exclusive=False,
    queue=None,
    bank=None,
    constraints=None,
    check=True,
):
    """Jobspec dict as ``flux submit`` builds it.

    ntasks None (or 0) with nnodes given means ``-N`` without ``-n``: one
    task per node and the nodes are exclusive. duration None leaves the
    integer 0; otherwise seconds (number) or an FSD string, stored as float.
    setattrs items are ``(key, value)`` pairs or raw ``"KEY=VAL"`` strings
    (parsed by parse_setattr). No environment (only --dry-run shows one) or shell rlimits are added.
    check=False skips validating the result, for a caller whose jobspec the
    job manager validates anyway (a trace replay's submissions).
    """
    if not ntasks and nnodes:
        ntasks = nnodes
        exclusive = True
    if not ntasks:
        ntasks = 1
    if not cores_per_task:
        cores_per_task = 1
    if not _is_int(ntasks) or ntasks < 1:
        raise JobspecError("task count must be a integer >= 1")
    if not _is_int(cores_per_task) or cores_per_task < 1:
        raise JobspecError("cores per task must be an integer >= 1")
    if gpus_per_task is not None:
        if not _is_int(gpus_per_task) or gpus_per_task < 0:
            raise JobspecError("gpus per task must be an integer >= 0")
    if nnodes is not None:
        if not _is_int(nnodes) or nnodes < 1:
            raise JobspecError("node count must be an integer >= 1 (if set)")
        if nnodes > ntasks:
            raise JobspecError("node count must not be greater than task count")
    elif exclusive:
        raise JobspecError("exclusive can only be set with a node count")
    if isinstance(command, str) or not isinstance(command, Sequence):
        raise JobspecError("command must be a list of strings")
    command = list(command)

    children = [{"type": "core", "count": cores_per_task}]
    if gpus_per_task not in (None, 0):
        children.append({"type": "gpu", "count": gpus_per_task})
    if nnodes is not None:
        nslots = -(-ntasks // nnodes)
        if ntasks % nnodes != 0:
            task_count = {"total": ntasks}  # uneven: some slots stay empty
        else:
            task_count = {"per_slot": 1}
        slot = {"type": "slot", "count": nslots, "with": children, "label": "task"}
        top = {"type": "node", "count": nnodes}
        if exclusive:
            top["exclusive"] = True
        top["with"] = [slot]
    else:
        task_count = {"per_slot": 1}
        top = {"type": "slot", "count": ntasks, "with": children, "label": "task"}

    system = {"duration": 0}
    js = {
        "resources": [top],
        "tasks": [{"command": command, "slot": "task", "count": task_count}],
        "attributes": {"system": system},
        "version": 1,
    }
    if duration is not None:
        system["duration"] = _duration_arg(duration)
    if cwd is not None:
        system["cwd"] = str(cwd)
    if name is not None:
        system["job"] = {"name": name}
    if queue is not None:
        system["queue"] = queue
    if bank is not None:
        system["bank"] = bank
    if constraints is not None:
        system["constraints"] = constraints
    for item in setattrs:
        key, value = parse_setattr(item) if isinstance(item, str) else item
        key = _setattr_key(key)
        try:
            _set_treedict(js, key, value)
        except TypeError as exc:
            raise JobspecError(f"failed to set {key} to {value}: {exc}") from None
    if check:
        validate(js)
    return js


def _duration_arg(value):
    """Jobspec.duration setter."""
    if isinstance(value, str):
        try:
            seconds = fsd.parse(value)  # flux.util.parse_fsd, as Jobspec.duration
        except ValueError as exc:
            raise JobspecError(str(exc)) from None
    elif _is_number(value):
        seconds = float(value)
    elif hasattr(value, "total_seconds"):
        seconds = value.total_seconds()
    else:
        raise JobspecError("duration must be an int, float, string, or timedelta")
    if seconds < 0:
        raise JobspecError("duration must not be negative")
    if math.isnan(seconds) or math.isinf(seconds):
        raise JobspecError("duration must be a normal, finite value")
    return seconds


# ---------------------------------------------------------------------------
# parsing and validation


def _json_reject_constant(name):
    raise ValueError(f"invalid JSON constant {name}")


def loads(text, strict=False, check=True):
    """Parse a JSON or YAML jobspec and (unless check=False) validate it.

    Errors: ``jobspec: line N: <problem>`` for YAML syntax,
    ``invalid jobspec: <reason>`` otherwise.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise JobspecError("invalid jobspec: not UTF-8 text") from None
    try:
        obj = json.loads(text, parse_constant=_json_reject_constant)
    except (ValueError, RecursionError):
        obj = _yaml_load(text)
    if not isinstance(obj, dict):
        raise JobspecError("invalid jobspec: jobspec must be a mapping")
    if not check:
        return obj
    try:
        validate(obj, strict=strict)
    except JobspecError as exc:
        raise JobspecError(f"invalid jobspec: {exc}") from None
    except RecursionError:
        raise JobspecError("invalid jobspec: nesting too deep") from None
    return obj


def _yaml_load(text):
    from flux_lite.formats.bounds import flow_depth_exceeds

    if flow_depth_exceeds(text):
        raise JobspecError("jobspec: nesting too deep")
    import yaml  # only YAML input pays for the import

    try:
        obj = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        problem = " ".join(str(problem).split())
        if mark is not None:
            raise JobspecError(f"jobspec: line {mark.line + 1}: {problem}") from None
        raise JobspecError(f"jobspec: {problem}") from None
    except yaml.YAMLError as exc:
        raise JobspecError("jobspec: " + " ".join(str(exc).split())) from None
    except RecursionError:
        raise JobspecError("jobspec: nesting too deep") from None
    except Exception as exc:  # constructor errors, e.g. impossible dates
        raise JobspecError("jobspec: " + " ".join(str(exc).split())) from None
    from flux_lite.formats.bounds import MAX_VALUES, count_values

    if count_values(obj) > MAX_VALUES:
        raise JobspecError(f"jobspec: more than {MAX_VALUES} values (YAML aliases expand to too much)")
    # keep only JSON-representable data (YAML has dates, sets, bytes, NaN)
    try:
        return json.loads(json.dumps(obj, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise JobspecError("invalid jobspec: " + " ".join(str(exc).split())) from None


def dumps(js):
    """Serialize as Flux does (json.dumps defaults, non-ASCII kept)."""
    return json.dumps(js, ensure_ascii=False)


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


def validate(js, strict=False):
    """Validate a jobspec dict; raise JobspecError(reason) if invalid.

    Default: the checks of flux-core's ingest validator (JobspecV1), with its
    messages, plus: duration must be >= 0 and finite, booleans are not numbers.
    The resource graph shape is NOT checked (Flux accepts e.g. a bare core and
    its scheduler then denies the job: see resource_request()).

    strict=True adds the RFC 25 V1 rules: exactly one top vertex (node or
    slot), node>slot>core[,gpu] or slot>core[,gpu], no unknown vertex keys,
    exactly one task whose slot matches the slot label, and the attribute
    checks of libjob jobspec1.c.
    """
    if not strict and _common_valid(js):
        return
    if not _is_map(js):
        raise JobspecError("jobspec must be a mapping")
    _missing_extraneous(("attributes", "resources", "tasks", "version"), js.keys())
    if js["version"] != 1 or isinstance(js["version"], bool):
        raise JobspecError("version must be 1")
    if not _is_int(js["version"]):
        raise JobspecError("version must be an integer")
    resources, tasks, attributes = js["resources"], js["tasks"], js["attributes"]
    if not isinstance(resources, list):
        raise JobspecError("resources must be a sequence")
    if not isinstance(tasks, list):
        raise JobspecError("tasks must be a sequence")
    if not _is_map(attributes):
        raise JobspecError("attributes must be a mapping")

    walked = []  # (the resources in walk order, for the count check below)
    for res in _iter_resources(resources):
        _check_resource(res)
        walked.append(res)
    for task in tasks:
        _check_task(task)
    _missing_extraneous(("system", "user"), attributes.keys(), optional=True)
    system = attributes.get("system")
    if "system" in attributes:
        if not _is_map(system):
            raise JobspecError("attributes.system must be a mapping")
        _check_system(system)

    # JobspecV1 extras
    if "system" not in attributes:
        raise JobspecError("attributes.system is a required key")
    if "duration" not in system:
        raise JobspecError("attributes.system.duration is a required key")
    value = system["duration"]
    if not _is_number(value):
        raise JobspecError("attributes.system.duration must be a number")
    if math.isnan(value) or math.isinf(value):
        raise JobspecError("attributes.system.duration must be a finite number")
    if value < 0:
        raise JobspecError("attributes.system.duration must not be negative")
    for task in tasks:
        if task["count"].keys().isdisjoint({"per_slot", "total"}):
            raise JobspecError("count per_slot or total must be set")
    for res in walked:
        if not _is_int(res["count"]):
            raise JobspecError(
                f"resource count must be an integer for type '{res['type']}' "
                f"(got '{_typename(res['count'])}')"
            )
    if strict:
        _check_strict(js)


_TOP_KEYS = frozenset(("attributes", "resources", "tasks", "version"))
_ATTRIBUTE_KEYS = frozenset(("system", "user"))
_COMMON_DEPTH = 8  # deeper resource graphs take the whole check
_FLOAT_INF = float("inf")


def _common_valid(js):
    """True when validate(js) passes, for the common shape of a jobspec,
    decided in one pass (every submit validates); False says nothing: the
    whole check then decides, and words the error. The common shape: plain
    dicts and lists, the four top keys, version the int 1, resource
    vertices with a str type and an int count of 1 or more, tasks counted
    per_slot or in total, a system duration that is a finite non-negative
    float (or a small int), and no dependencies or constraints."""
    if type(js) is not dict or js.keys() != _TOP_KEYS:
        return False
    version, resources, tasks, attributes = js["version"], js["resources"], js["tasks"], js["attributes"]
    if type(version) is not int or version != 1 or type(resources) is not list or type(tasks) is not list \
            or type(attributes) is not dict:
        return False
    if not _common_resources(resources, 0):
        return False
    for task in tasks:
        if type(task) is not dict or "command" not in task or "slot" not in task or "count" not in task:
            return False
        count, command = task["count"], task["command"]
        if type(count) is not dict or len(count) != 1 or type(task["slot"]) is not str:
            return False
        n = count.get("per_slot", count.get("total"))
        if type(n) is not int or n <= 0 or ("attributes" in task and type(task["attributes"]) is not dict):
            return False
        if type(command) is not list or not command:
            return False
        for word in command:
            if type(word) is not str:
                return False
    if not attributes.keys() <= _ATTRIBUTE_KEYS:
        return False
    system = attributes.get("system")
    if type(system) is not dict or "dependencies" in system or "constraints" in system:
        return False
    duration = system.get("duration")
    if type(duration) is float:
        return 0.0 <= duration < _FLOAT_INF
    return type(duration) is int and 0 <= duration <= _INT64_MAX


def _common_resources(res_list, depth):
    if depth >= _COMMON_DEPTH:
        return False
    for res in res_list:
        if type(res) is not dict:
            return False
        rtype, count = res.get("type"), res.get("count")
        if type(rtype) is not str or type(count) is not int or not 1 <= count <= _INT64_MAX:
            return False
        if len(res) > 2:
            if "label" in res:
                if type(res["label"]) is not str:
                    return False
            elif rtype == "slot":
                return False
            for key in ("id", "unit"):
                if key in res and type(res[key]) is not str:
                    return False
            if "exclusive" in res and type(res["exclusive"]) is not bool:
                return False
            if "with" in res:
                children = res["with"]
                if type(children) is not list or not _common_resources(children, depth + 1):
                    return False
        elif rtype == "slot":
            return False  # (a slot must have a label)
    return True


def _iter_resources(res_list, depth=0):
    """Depth-first pre-order walk (Jobspec.__iter__), with sanity checks."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError(
            f"jobspec resource nesting exceeds maximum depth {MAX_RESOURCE_DEPTH}"
        )
    for res in res_list:
        yield res
        children = res.get("with", []) if _is_map(res) else []
        if not isinstance(children, list):
            raise JobspecError("with must be a sequence")
        yield from _iter_resources(children, depth + 1)


def _check_resource(res):
    if not _is_map(res):
        raise JobspecError("resource must be a mapping")
    if "type" not in res:
        raise JobspecError("type is a required key for resources")
    if not isinstance(res["type"], str):
        raise JobspecError("type must be a string")
    if "count" not in res:
        raise JobspecError("count is a required key for resources")
    count = res["count"]
    if _is_map(count):
        _check_range(count)
    elif isinstance(count, str):
        _check_count_string(count)
    elif not _is_int(count):
        raise JobspecError("count must be an int or mapping")
    else:
        if res["type"] in ("node", "slot", "core") and count < 1:
            raise JobspecError("node, slot, or core count must be > 0")
        if count < 0:
            raise JobspecError("count must be >= 0")
        if count > _INT64_MAX:  # past what jansson reads: Flux's job-ingest refuses it
            raise JobspecError(f"{res['type']} count {count} is too large")
    for key in ("id", "unit", "label"):
        if key in res and not isinstance(res[key], str):
            raise JobspecError(f"{key} must be a string")
    if "exclusive" in res and not isinstance(res["exclusive"], bool):
        raise JobspecError("exclusive must be a boolean")
    if res["type"] == "slot" and "label" not in res:
        raise JobspecError("slots must have labels")


def _check_range(rng):
    if "min" not in rng:
        raise JobspecError("min must be in range")
    _missing_extraneous(("min", "max", "operand", "operator"), rng.keys(), optional=True)
    for key in ("min", "max", "operand"):
        if key not in rng:
            continue
        if not _is_int(rng[key]):
            raise JobspecError(f"{key} must be an int")
        if rng[key] < 1:
            raise JobspecError(f"{key} must be > 0")
    if "max" in rng and rng["max"] < rng["min"]:
        raise JobspecError("max must be >= min")
    if ("operand" in rng) != ("operator" in rng):
        raise JobspecError("operand and operator must both be in range if either is")
    if "operator" in rng:
        operator = rng["operator"]
        if not isinstance(operator, str) or len(operator) != 1:
            raise JobspecError("operator must be a single character str")
        if operator not in ("+", "*", "^"):
            raise JobspecError("operator must be one of ['+', '*', '^']")
        if operator in ("*", "^") and rng["operand"] < 2:
            raise JobspecError("operand must be > 1 for '*' or '^' operator")
        if operator == "^" and rng["min"] < 2:
            raise JobspecError("min must be > 1 for '^' operator")


_IDSET_TOKEN = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")


def _idset_values_ok(text):
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
    if _idset_values_ok(count):
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
    if not _is_map(task):
        raise JobspecError("task must be a mapping")
    _missing_extraneous(("command", "slot", "count"), task.keys(), allow_additional=True)
    count = task["count"]
    if not _is_map(count):
        raise JobspecError("count must be a mapping")
    if len(count) != 1:
        raise JobspecError("count must have exactly one key set")
    if count.keys().isdisjoint({"per_slot", "per_resource", "total"}):
        raise JobspecError("count per_slot, per_resource, or total must be set")
    for key in ("total", "per_slot"):
        if key in count:
            if not _is_int(count[key]):
                raise JobspecError(f"count {key} must be an int")
            if count[key] <= 0:
                raise JobspecError(f"count {key} must be > 0")
    if not isinstance(task["slot"], str):
        raise JobspecError("slot must be a string")
    if "attributes" in task and not _is_map(task["attributes"]):
        raise JobspecError("attributes must be a mapping")
    command = task["command"]
    if isinstance(command, (list, str, Mapping)) and len(command) == 0:
        raise JobspecError("command array cannot have length of zero")
    if not isinstance(command, list) or not all(isinstance(x, str) for x in command):
        raise JobspecError("command must be a list of strings")


def _check_system(system):
    if "dependencies" in system:
        deps = system["dependencies"]
        if not isinstance(deps, list):
            raise JobspecError("attributes.system.dependencies must be a list")
        for dep in deps:
            if not _is_map(dep):
                raise JobspecError("dependency must be a mapping")
            _missing_extraneous(("scheme", "value"), dep.keys(), allow_additional=True)
            if not isinstance(dep["scheme"], str):
                raise JobspecError("dependency scheme must be a string")
            if not isinstance(dep["value"], str):
                raise JobspecError("dependency value must be a string")
    if "constraints" in system:
        _check_constraint(system["constraints"], 0)


def _check_constraint(constraint, depth):
    """RFC 31 constraint object."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError("constraints nesting too deep")
    if not _is_map(constraint):
        raise JobspecError("constraints must be a mapping")
    for operator, args in constraint.items():
        if not isinstance(operator, str):
            raise JobspecError(f"constraint operation {operator} is not a string")
        if not isinstance(args, (list, str)):
            raise JobspecError(f"argument to constraint {operator} must be a sequence")
        if operator in ("and", "or", "not"):
            for sub in args:
                _check_constraint(sub, depth + 1)
        elif operator == "properties":
            for prop in args:
                if not isinstance(prop, str):
                    raise JobspecError(f"invalid property '{prop}'")
                if any(c in "&'\"`|()" for c in prop):
                    raise JobspecError(f"invalid character in property '{prop}'")
        elif operator == "hostlist":
            for hosts in args:
                if not isinstance(hosts, str):
                    raise JobspecError(f"invalid hostlist '{hosts}'")
        elif operator == "ranks":
            for ranks in args:
                if not isinstance(ranks, str) or not _idset_values_ok(ranks):
                    raise JobspecError(f"invalid idset '{ranks}'")
        else:
            raise JobspecError(f"unknown constraint operator '{operator}'")


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
        if not _is_map(user) or len(user) == 0:
            raise JobspecError("if present, attributes.user must contain values")
    system = attributes["system"]
    if "environment" in system and not _is_map(system["environment"]):
        raise JobspecError("attributes.system.environment must be a dictionary")
    if "shell" in system:
        shell = system["shell"]
        if not _is_map(shell):
            raise JobspecError("attributes.system.shell must be a dictionary")
        if "options" in shell and not _is_map(shell["options"]):
            raise JobspecError("attributes.shell.options must be a dictionary")
    if "cwd" in system and not isinstance(system["cwd"], str):
        raise JobspecError("attributes.system.cwd must be a string")
    job = system.get("job")
    if job is not None:
        if not _is_map(job):
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


# ---------------------------------------------------------------------------
# accessors


def _system(js):
    try:
        system = js["attributes"]["system"]
    except (KeyError, TypeError):
        return {}
    return system if type(system) is dict or _is_map(system) else {}


def duration(js):
    """attributes.system.duration as float seconds (0.0 = unlimited/unset)."""
    value = _system(js).get("duration", 0)
    if not _is_number(value):
        raise JobspecError("attributes.system.duration must be a number")
    return float(value)


def name(js):
    """Job name as ``flux jobs`` shows it: attributes.system.job.name, else
    the basename of the command's first word (whole word if it ends in /)."""
    job = _system(js).get("job")
    if _is_map(job) and isinstance(job.get("name"), str):
        return job["name"]
    try:
        arg0 = js["tasks"][0]["command"][0]
    except (KeyError, IndexError, TypeError):
        return ""
    if not isinstance(arg0, str):
        return ""
    head, sep, tail = arg0.rpartition("/")
    if sep and tail:
        return tail
    return arg0


def _jj_read_level(level_list, level, nodefactor, counts):
    """_jj_counts' walk of one resource level (a module function, not a
    closure: a recursive closure is a reference cycle, and a replay runs
    with the collector off)."""
    if level > MAX_RESOURCE_DEPTH:
        raise JobspecError(f"level {level}: nesting too deep")
    if not isinstance(level_list, list):
        raise JobspecError(f"level {level}: must be an array")
    for vertex in level_list:
        if not _is_map(vertex):
            raise JobspecError(f"level {level}: Expected object, got {_typename(vertex)}")
        for key in ("type", "count"):
            if key not in vertex:
                raise JobspecError(f"level {level}: Object item not found: {key}")
        rtype, count = vertex["type"], vertex["count"]
        if not isinstance(rtype, str):
            raise JobspecError(f"level {level}: Expected string, got {_typename(rtype)}")
        if not _is_int(count):
            raise JobspecError(f"level {level}: Expected integer, got {_typename(count)}")
        if count <= 0:
            raise JobspecError(f"Invalid count {count} for type '{rtype}'")
        nodefactor *= count
        if rtype == "node":
            counts["nnodes"] = nodefactor
            if vertex.get("exclusive") is True:
                counts["exclusive"] = True
        elif rtype == "slot":
            counts["nslots"] = count
        elif rtype == "core":
            counts["slot_size"] = count
        elif rtype == "gpu":
            counts["slot_gpus"] = count
        if "with" in vertex:
            _jj_read_level(vertex["with"], level + 1, nodefactor, counts)


def _jj_counts(js):
    """libjob jj_get_counts_json: nnodes, nslots (total), slot_size,
    slot_gpus, exclusive, duration; JobspecError with jj's messages."""
    if not _is_map(js):
        raise JobspecError("at top level: jobspec must be a mapping")
    for key in ("version", "resources"):
        if key not in js:
            raise JobspecError(f"at top level: Object item not found: {key}")
    if not _is_int(js["version"]):
        raise JobspecError("at top level: Expected integer, got " + _typename(js["version"]))
    attributes = js.get("attributes")
    if not _is_map(attributes):
        raise JobspecError("at top level: getting duration: Object item not found: attributes")
    system = attributes.get("system")
    if not _is_map(system):
        raise JobspecError("at top level: getting duration: Object item not found: system")
    if "duration" not in system:
        raise JobspecError("at top level: getting duration: Object item not found: duration")
    if not _is_number(system["duration"]):
        raise JobspecError("at top level: getting duration: Expected real, got "
                           + _typename(system["duration"]))
    counts = {
        "nnodes": 0,
        "nslots": 0,
        "slot_size": 0,
        "slot_gpus": 0,
        "exclusive": False,
        "duration": float(system["duration"]),
    }

    _jj_read_level(js["resources"], 0, 1, counts)
    if counts["nslots"] <= 0:
        raise JobspecError("Unable to determine slot count")
    if counts["slot_size"] <= 0:
        raise JobspecError("Unable to determine slot size")
    if counts["nnodes"]:
        counts["nslots"] *= counts["nnodes"]
    return counts


def slot_core_counts(js):
    """(ntasks, ncores) as ntasks() and ncores() give them, in one look at
    the commonest request (one slot vertex of cores, no node level, no
    shell per-resource option); None for anything else, or anything odd
    (the general functions then decide, and raise)."""
    if type(js) is not dict or type(js.get("version")) is not int:
        return None
    attributes, resources, tasks = js.get("attributes"), js.get("resources"), js.get("tasks")
    if type(attributes) is not dict or type(resources) is not list or len(resources) != 1:
        return None
    system = attributes.get("system")
    if type(system) is not dict or "shell" in system or type(system.get("duration")) not in (float, int):
        return None
    slot = resources[0]
    if type(slot) is not dict or slot.get("type") != "slot":
        return None
    nslots, cores = slot.get("count"), slot.get("with")
    if type(nslots) is not int or nslots <= 0 or type(cores) is not list or len(cores) != 1:
        return None
    core = cores[0]
    if type(core) is not dict or core.get("type") != "core" or "with" in core:
        return None
    size = core.get("count")
    if type(size) is not int or size <= 0:
        return None
    if type(tasks) is not list:
        return None
    total = None
    if tasks:  # (ntasks: tasks[0].count.total if an int, else the slot count)
        if type(tasks[0]) is not dict:
            return None
        count = tasks[0].get("count")
        if type(count) is dict:
            total = count.get("total")
        elif count is not None:
            return None
    if total is not None and type(total) is not int:
        return None
    return (total if total is not None else nslots), nslots * size


def ntasks(js, counts=None):
    """Task count as job-list computes it; None when it is only known once
    resources are allocated (per-resource shell option with node layouts).
    counts: _jj_counts(js), if the caller has it."""
    if counts is None:
        counts = _jj_counts(js)
    per_resource = None
    shell = _system(js).get("shell")
    if _is_map(shell) and isinstance(shell.get("options"), Mapping):
        per_resource = shell["options"].get("per-resource")
    if _is_map(per_resource) and isinstance(per_resource.get("type"), str):
        count = per_resource.get("count", 1)
        if not _is_int(count) or count < 1:
            raise JobspecError("invalid per-resource spec")
        if per_resource["type"] == "node":
            return counts["nnodes"] * count if counts["nnodes"] else None
        if per_resource["type"] == "core":
            if counts["nnodes"]:
                return None
            return counts["nslots"] * counts["slot_size"] * count
    try:
        total = js["tasks"][0]["count"]["total"]
    except (KeyError, IndexError, TypeError):
        total = None
    if _is_int(total):
        return total
    return counts["nslots"]


def ncores(js, counts=None):
    """Core count as job-list computes it; None for exclusive node requests.
    counts: _jj_counts(js), if the caller has it."""
    if counts is None:
        counts = _jj_counts(js)
    if counts["nnodes"] and counts["exclusive"]:
        return None
    return counts["nslots"] * counts["slot_size"]


def nnodes_requested(js):
    """Node count requested (product of counts down to the node vertex);
    0 when the jobspec has no node level."""
    return _jj_counts(js)["nnodes"]


_TESTCONF_ERROR = "failed to initialize testconf: No such file or directory"


def run_duration(js):
    """Simulated run time of a job in test execution mode, or None.

    None when attributes.system.exec.test is absent. Otherwise, as job-exec's
    testexec does: ``run_duration`` (an FSD string) if present and parseable,
    else the jobspec duration. ``0s`` / a 0 duration mean "run until
    canceled". A run_duration that is not a string (e.g. ``-S
    exec.test.run_duration=0`` which sets the integer 0), or non-integer
    override/reattach_finish/wait_status, makes Flux fail the job: this
    raises JobspecError with Flux's exception note
    ``failed to initialize testconf: No such file or directory``.
    """
    exec_ = _system(js).get("exec")
    if not _is_map(exec_) or "test" not in exec_:
        return None
    test = exec_["test"]
    if not _is_map(test):
        raise JobspecError(_TESTCONF_ERROR)
    for key in ("override", "reattach_finish", "wait_status"):
        if key in test and not _is_int(test[key]):
            raise JobspecError(_TESTCONF_ERROR)
    if "mock_exception" in test and not isinstance(test["mock_exception"], str):
        raise JobspecError(_TESTCONF_ERROR)
    value = _system(js).get("duration", -1.0)
    default = float(value) if _is_number(value) else -1.0
    if "run_duration" not in test:
        return default
    trun = test["run_duration"]
    if not isinstance(trun, str):
        raise JobspecError(_TESTCONF_ERROR)
    try:
        return fsd.parse_config(trun)  # job-exec reads it with libutil's parser
    except ValueError:
        return default


def apply_updates(js, updates):
    """Return a deep copy of js with ``jobspec-update`` style updates applied.

    Each key is a dotted path (``attributes.system.duration``); missing
    intermediate objects are created and the value replaces what was there
    (libutil jpath_set). Errors, as the job manager reports them:
    ``update: Invalid argument`` (empty path component) and
    ``update: Cannot allocate memory`` (a path component that is not an
    object, e.g. ``resources.x``); ``.errno`` is set accordingly.
    """
    result = copy.deepcopy(js)
    for path, value in updates.items():
        parts = path.split(".")
        if any(part == "" for part in parts):
            raise JobspecError("update: Invalid argument", errno=errno.EINVAL)
        obj = result
        for part in parts[:-1]:
            if not isinstance(obj, dict):
                raise JobspecError("update: Cannot allocate memory", errno=errno.ENOMEM)
            if part not in obj:
                obj[part] = {}
            obj = obj[part]
        if not isinstance(obj, dict):
            raise JobspecError("update: Cannot allocate memory", errno=errno.ENOMEM)
        obj[parts[-1]] = copy.deepcopy(value)
    return result


# ---------------------------------------------------------------------------
# scheduler view (flux.resource.Rv1Pool ResourceRequest.from_jobspec)


class _Count:
    __slots__ = ("min", "max", "discrete")

    def __init__(self, mn, mx, discrete=False):
        self.min, self.max, self.discrete = mn, mx, discrete


def _count_error(msg):
    return JobspecError("RFC 14 count: " + msg)


def _stepped_values(mn, mx, operator, operand):
    if operator not in ("+", "*", "^"):
        raise _count_error(f"operator {operator!r} is not supported")
    if operator in ("*", "^") and operand <= 1:
        raise _count_error(f"operator {operator!r} requires operand > 1, got {operand}")
    if operator == "^" and mn < 2:
        raise _count_error(f"operator '^' requires min >= 2, got {mn}")
    if operator == "+" and operand <= 0:
        raise _count_error(f"additive operator requires operand > 0, got {operand}")


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise JobspecError(f"invalid literal for int() with base 10: {text!r}") from None


def _parse_count(value):
    """ResourceCount.from_count_spec: int, range dict, RFC 45 string, idset."""
    if isinstance(value, int):  # (bool included, as in Flux)
        value = int(value)
        if value < 1:
            raise _count_error(f"integer count must be >= 1, got {value}")
        return _Count(value, value)
    if _is_map(value):
        operator = value.get("operator", "+")
        operand = _int(value.get("operand", 1))
        mn = _int(value.get("min", 1))
        if mn < 1:
            raise _count_error(f"min must be >= 1, got {mn}")
        mx = value.get("max")
        if mx is None:
            if operator != "+" or operand != 1:
                raise JobspecError(
                    f"RFC 14 unbounded count with operator={operator!r} "
                    f"operand={operand} cannot be expanded to a finite set"
                )
            return _Count(mn, None)
        mx = _int(mx)
        if mx < mn:
            raise _count_error(f"max must be >= min, got max={mx} min={mn}")
        if operator == "+" and operand == 1:
            return _Count(mn, mx)
        _stepped_values(mn, mx, operator, operand)
        return _Count(mn, mx, discrete=True)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        parts = text.split(":")
        if parts[0].endswith("+"):
            mn = _int(parts[0][:-1])
            if mn < 1:
                raise _count_error(f"min must be >= 1, got {mn}")
            operand = _int(parts[1]) if len(parts) > 1 else 1
            operator = parts[2] if len(parts) > 2 else "+"
            if operator != "+" or operand != 1:
                raise JobspecError(
                    f"RFC 45 unbounded count with operator={operator!r} "
                    f"operand={operand} cannot be expanded to a finite set"
                )
            return _Count(mn, None)
        if len(parts) > 1:
            lo, sep, hi = parts[0].partition("-")
            if not sep or "-" in hi:
                raise JobspecError(f"invalid count {value!r}")
            mn, mx = _int(lo), _int(hi)
            if mn < 1:
                raise _count_error(f"min must be >= 1, got {mn}")
            if mx < mn:
                raise _count_error(f"max must be >= min, got max={mx} min={mn}")
            operand = _int(parts[1])
            operator = parts[2] if len(parts) > 2 else "+"
            if operator == "+" and operand == 1:
                return _Count(mn, mx)
            _stepped_values(mn, mx, operator, operand)
            return _Count(mn, mx, discrete=True)
        if "," in text:
            if not _idset_values_ok(text):
                raise JobspecError(f"invalid idset {text!r}")
            ids = [int(x) for tok in text.split(",") if tok for x in tok.split("-")]
            if ids[0] < 1:
                raise _count_error(f"min must be >= 1, got {ids[0]}")
            return _Count(ids[0], ids[-1], discrete=True)
        if "-" in text:
            lo, _, hi = text.partition("-")
            mn = _int(lo)
            if mn < 1:
                raise _count_error(f"min must be >= 1, got {mn}")
            mx = _int(hi)
            if mx < mn:
                raise _count_error(f"max must be >= min, got max={mx} min={mn}")
            return _Count(mn, mx)
        mn = _int(text)
        if mn < 1:
            raise _count_error(f"min must be >= 1, got {mn}")
        return _Count(mn, mn)
    return _Count(1, 1)


def _required_properties(constraint, depth=0):
    """Property names that must all hold: top-level and nested ``and``."""
    names = []
    if not _is_map(constraint) or depth > MAX_RESOURCE_DEPTH:
        return names
    for operator, args in constraint.items():
        if operator == "properties" and isinstance(args, list):
            names.extend(x for x in args if isinstance(x, str) and x not in names)
        elif operator == "and" and isinstance(args, list):
            for sub in args:
                for prop in _required_properties(sub, depth + 1):
                    if prop not in names:
                        names.append(prop)
    return names


def _request_walk(res_list, nodefactor, depth, state):
    """resource_request's walk of one level (a module function: see _jj_read_level)."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError(
            f"jobspec resource nesting exceeds maximum depth {MAX_RESOURCE_DEPTH}"
        )
    for vertex in res_list:
        if not _is_map(vertex):
            raise JobspecError("resource vertex must be a mapping")
        rtype = vertex.get("type", "")
        count = _parse_count(vertex.get("count", 1))
        children = vertex.get("with", [])
        if children and not isinstance(children, list):
            raise JobspecError("resource with must be a list")
        if rtype == "node":
            state["nnodes"] = count
            state["nodefactor"] = nodefactor
            if vertex.get("exclusive", False):
                state["exclusive"] = True
            if children:
                _request_walk(children, nodefactor, depth + 1, state)
        else:
            if rtype == "slot":
                state["nslots"] = count
                if vertex.get("exclusive", False):
                    state["exclusive"] = True
            elif rtype == "core":
                state["slot_size"] = count.min
            elif rtype == "gpu":
                state["gpu_per_slot"] = count.min
            if children:
                _request_walk(children, nodefactor * count.min, depth + 1, state)


def resource_request(js):
    """What flux-core's Python schedulers extract from a jobspec.

    Returns a dict:
      nnodes          minimum node count (0 when there is no node level)
      slots_per_node  slots per node (0 when there is no node level)
      nslots          minimum total slot count
      slot_size       cores per slot
      gpu_per_slot    GPUs per slot
      exclusive       whole-node allocation
      duration        float seconds, 0.0 = unlimited
      constraint      the RFC 31 constraint object, or None
      constraints     property names required by it (``properties`` at the
                      top level or inside ``and``)

    Ranges count as their minimum. An exclusive slot-only request becomes
    nslots nodes of one slot. Errors (JobspecError; Flux denies with
    ``cannot parse jobspec: <message>``): ``jobspec has no resources``,
    ``getting duration: Object item not found: system`` / ``...: duration``,
    ``Unable to determine slot count``, ``Unable to determine slot size``.
    A discrete node/slot count raises DiscreteCountError (Flux: an infeasible
    request, denied with the bare message) after all other checks.
    """
    if not _is_map(js):
        raise JobspecError("jobspec must be a mapping")
    resources = js.get("resources", [])
    if not resources:
        raise JobspecError("jobspec has no resources")
    if not isinstance(resources, list):
        raise JobspecError("resources must be a list")
    state = {
        "nnodes": None,
        "nslots": None,
        "slot_size": None,
        "gpu_per_slot": 0,
        "exclusive": False,
        "nodefactor": 1,
    }

    _request_walk(resources, 1, 0, state)

    attributes = js.get("attributes", {})
    system = attributes.get("system") if _is_map(attributes) else None
    if js.get("version") == 1:
        if system is None:
            raise JobspecError("getting duration: Object item not found: system")
        if not _is_map(system) or system.get("duration") is None:
            raise JobspecError("getting duration: Object item not found: duration")
    if state["nslots"] is None:
        raise JobspecError("Unable to determine slot count")
    if state["slot_size"] is None:
        raise JobspecError("Unable to determine slot size")

    node_count = state["nnodes"]
    slot_count = state["nslots"]
    nf = state["nodefactor"]
    if node_count is not None and nf != 1:
        node_count = _Count(
            node_count.min * nf,
            node_count.max * nf if node_count.max is not None else None,
            node_count.discrete,
        )
    if state["exclusive"] and node_count is None:
        node_count, slot_count = slot_count, _Count(1, 1)

    attrs = system if _is_map(system) else {}
    dur = attrs.get("duration") or 0.0
    try:
        dur = float(dur)
    except (TypeError, ValueError) as exc:
        raise JobspecError(str(exc)) from None
    constraint = attrs.get("constraints") or None

    if node_count is not None and node_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("node"))
    if slot_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("slot"))

    nnodes = node_count.min if node_count is not None else 0
    return {
        "nnodes": nnodes,
        "slots_per_node": slot_count.min if node_count is not None else 0,
        "nslots": slot_count.min * nnodes if node_count is not None else slot_count.min,
        "slot_size": state["slot_size"],
        "gpu_per_slot": state["gpu_per_slot"],
        "exclusive": state["exclusive"],
        "duration": dur,
        "constraint": constraint,
        "constraints": _required_properties(constraint),
    }
