"""What job-list reads off a jobspec (libjob's jj.c), and the common-shape classifier.

``get_counts`` is what libjob's ``jj_get_counts_json`` reads (nodes, slots,
cores and GPUs per slot, whole-node requests, the duration); ``ntasks``,
``ncores`` and ``nnodes_requested`` are job-list's columns (``flux jobs``
NTASKS, NCORES, NNODES) derived from it, ``name`` its NAME; the job-size
limits read the counts too.

``common_shape`` recognises the jobspec nearly every job has (RFC 25 V1:
``[node->]slot->core[,gpu]`` with integer counts, one task per slot) in one
look. Validation, these counts and the scheduler's request parser
(:mod:`flux_lite.sched.request`) all take their fast path through it; any
other jobspec takes their general path, which gives the same answers (the
tests compare them) and words the errors.

The small value predicates at the top are shared by the jobspec modules
(build and load, validation, the request parser).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from flux_lite.errors import JobspecError

if TYPE_CHECKING:  # (a TypedDict costs as much to make as the rest of the module: `jobs` imports it)
    from typing import TypedDict

    class Counts(TypedDict):
        """What jj_get_counts_json reads off a jobspec."""

        nnodes: int  # 0 when there is no node level
        nslots: int  # total slot count
        slot_size: int  # cores per slot
        slot_gpus: int  # GPUs per slot
        exclusive: bool  # whole nodes
        duration: float

__all__ = [
    "INT64_MAX",
    "MAX_RESOURCE_DEPTH",
    "Shape",
    "common_shape",
    "get_counts",
    "is_int",
    "is_map",
    "is_number",
    "job_shape",
    "name",
    "ncores",
    "nnodes_requested",
    "ntasks",
    "system_of",
    "typename",
]

INT64_MAX = (1 << 63) - 1  # the largest count jansson reads (Flux's job-ingest refuses more)
MAX_RESOURCE_DEPTH = 100

_FLOAT_INF = float("inf")


# ---------------------------------------------------------------------------
# value predicates (JSON types as Flux's validators see them)


def is_map(value: Any, _dict: type = dict, _mapping: type = Mapping) -> bool:
    """isinstance(value, Mapping), without the ABC check for a plain dict."""
    return type(value) is _dict or isinstance(value, _mapping)


def is_int(value: Any) -> bool:
    """An integer, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number, not a boolean."""
    t = type(value)
    if t is float or t is int:  # (the common cases, without the ABC check)
        return True
    import numbers  # (only for other types, which JSON never makes: `jobs` need not import it)

    return isinstance(value, numbers.Real) and t is not bool


def typename(value: Any) -> str:
    return type(value).__name__


def system_of(js: Any) -> Mapping:
    """attributes.system of a jobspec (empty when absent or not a mapping)."""
    try:
        system = js["attributes"]["system"]
    except (KeyError, TypeError):
        return {}
    return system if type(system) is dict or is_map(system) else {}


# ---------------------------------------------------------------------------
# the common shape


class Shape(NamedTuple):
    """A jobspec of the common shape, as :func:`common_shape` read it."""

    nnodes: int  # node count; 0 when there is no node level
    slot_count: int  # the slot vertex's count (slots per node under a node level)
    slot_size: int  # cores per slot
    slot_gpus: int  # GPUs per slot (0: no gpu vertex)
    exclusive: bool  # whole nodes (the node vertex's exclusive flag)
    task_total: int | None  # the task count given as a total; None: one task per slot
    duration: float  # attributes.system.duration, in seconds (0: unlimited)
    system: dict  # attributes.system itself (constraints, dependencies, shell options...)

    @property
    def nslots(self) -> int:
        """Total slot count."""
        return self.slot_count * self.nnodes if self.nnodes else self.slot_count

    @property
    def ntasks(self) -> int:
        return self.task_total if self.task_total is not None else self.nslots

    @property
    def ncores(self) -> int:
        return self.nslots * self.slot_size


_new_shape = tuple.__new__


def common_shape(js: Any) -> Shape | None:
    """The common jobspec shape, read in one look; None for anything else.

    Recognised: a plain dict of exactly the keys attributes, resources,
    tasks and version; version the int 1; one resource vertex, either
    ``{type: node, count, with: [slot], [exclusive: bool]}`` or the slot
    itself; the slot ``{type: slot, count, label: str, with: [core] or
    [core, gpu], [exclusive: false]}``; core and gpu ``{type, count}`` only;
    every count an int from 1 to INT64_MAX; one task ``{command: non-empty
    list of str, slot: str, count: {per_slot: 1} or {total: int >= 1},
    [attributes: dict]}``; attributes holding system (a dict) and at most
    user; a system duration that is a finite float >= 0 or an int from 0 to
    INT64_MAX. Nothing else in attributes.system is looked at.

    A recognised jobspec passes validate() (non-strict) unless its
    attributes.system.dependencies or .constraints are invalid, and the
    counts and the scheduler's request read off the Shape are what the
    general walks read. None promises nothing: the general path decides,
    and words any error. Never raises.
    """
    try:
        if type(js) is not dict or len(js) != 4:
            return None
        version, resources, tasks, attributes = js["version"], js["resources"], js["tasks"], js["attributes"]
        if type(version) is not int or version != 1 or type(resources) is not list or len(resources) != 1 \
                or type(tasks) is not list or len(tasks) != 1 or type(attributes) is not dict:
            return None
        # [node ->] slot -> core [, gpu]   (len(js) == 4 and the four keys: exactly those)
        slot = resources[0]
        if type(slot) is not dict:
            return None
        nnodes = 0
        exclusive = False
        rtype = slot["type"]
        if rtype != "slot":
            if rtype != "node":
                return None
            node = slot
            nnodes, slots = node["count"], node["with"]
            if type(nnodes) is not int or not 0 < nnodes <= INT64_MAX or type(slots) is not list \
                    or len(slots) != 1:
                return None
            if len(node) != 3:
                exclusive = node["exclusive"]
                if len(node) != 4 or type(exclusive) is not bool:
                    return None
            slot = slots[0]
            if type(slot) is not dict or slot["type"] != "slot":
                return None
        slot_count, children = slot["count"], slot["with"]
        if type(slot_count) is not int or not 0 < slot_count <= INT64_MAX or type(children) is not list \
                or type(slot["label"]) is not str:
            return None
        if len(slot) != 4 and (len(slot) != 5 or slot["exclusive"] is not False):
            return None  # (an exclusive slot asks for a node per slot: the general path reads it)
        core = children[0]
        if type(core) is not dict or len(core) != 2 or core["type"] != "core":
            return None
        size = core["count"]
        if type(size) is not int or not 0 < size <= INT64_MAX:
            return None
        gpus = 0
        if len(children) != 1:
            gpu = children[1]
            if len(children) != 2 or type(gpu) is not dict or len(gpu) != 2 or gpu["type"] != "gpu":
                return None
            gpus = gpu["count"]
            if type(gpus) is not int or not 0 < gpus <= INT64_MAX:
                return None
        # one task: a command, the slot it runs in, one per slot or a total
        task = tasks[0]
        if type(task) is not dict:
            return None
        command, count = task["command"], task["count"]
        if type(command) is not list or not command or type(count) is not dict or len(count) != 1 \
                or type(task["slot"]) is not str:
            return None
        if len(task) != 3 and (len(task) != 4 or type(task["attributes"]) is not dict):
            return None
        for word in command:
            if type(word) is not str:
                return None
        total = count.get("total")
        if total is None:
            if count["per_slot"] != 1 or type(count["per_slot"]) is not int:
                return None
        elif type(total) is not int or total < 1:
            return None
        # attributes: system and at most user; a system duration, finite and not negative
        system = attributes["system"]
        if len(attributes) != 1 and (len(attributes) != 2 or "user" not in attributes):
            return None
        if type(system) is not dict:
            return None
        duration = system["duration"]
        if type(duration) is float:
            if not 0.0 <= duration < _FLOAT_INF:
                return None
        elif type(duration) is not int or not 0 <= duration <= INT64_MAX:
            return None
    except (KeyError, IndexError):
        return None
    return _new_shape(Shape, (nnodes, slot_count, size, gpus, exclusive, total, float(duration), system))


_JOB_SHAPES: dict[int, tuple[Any, Shape | None]] = {}
_JOB_SHAPES_MAX = 4096


def job_shape(js: Any) -> Shape | None:
    """common_shape(js) of a job's jobspec, remembered per jobspec object.

    A job's jobspec is never changed in place (an update replaces it), so
    the classification made when it is submitted serves the listing and
    the scheduler's request too. Any other jobspec, which its holder may
    change, is classified with common_shape.
    """
    key = id(js)
    hit = _JOB_SHAPES.get(key)
    if hit is not None and hit[0] is js:
        return hit[1]
    shape = common_shape(js)
    if len(_JOB_SHAPES) >= _JOB_SHAPES_MAX:
        _JOB_SHAPES.clear()
    _JOB_SHAPES[key] = (js, shape)  # holding js keeps its id from being reused
    return shape


# ---------------------------------------------------------------------------
# jj_get_counts


def get_counts(js: Any) -> Counts:
    """libjob jj_get_counts_json: nnodes, nslots (total), slot_size,
    slot_gpus, exclusive, duration; JobspecError with jj's messages."""
    shape = common_shape(js)
    if shape is None:
        return _read_counts(js)
    return {"nnodes": shape.nnodes, "nslots": shape.nslots, "slot_size": shape.slot_size,
            "slot_gpus": shape.slot_gpus, "exclusive": shape.exclusive, "duration": shape.duration}


def _read_level(level_list: Any, level: int, nodefactor: int, counts: Counts) -> None:
    """_read_counts' walk of one resource level (a module function, not a
    closure: a recursive closure is a reference cycle, and a replay runs
    with the collector off)."""
    if level > MAX_RESOURCE_DEPTH:
        raise JobspecError(f"level {level}: nesting too deep")
    if not isinstance(level_list, list):
        raise JobspecError(f"level {level}: must be an array")
    for vertex in level_list:
        if not is_map(vertex):
            raise JobspecError(f"level {level}: Expected object, got {typename(vertex)}")
        for key in ("type", "count"):
            if key not in vertex:
                raise JobspecError(f"level {level}: Object item not found: {key}")
        rtype, count = vertex["type"], vertex["count"]
        if not isinstance(rtype, str):
            raise JobspecError(f"level {level}: Expected string, got {typename(rtype)}")
        if not is_int(count):
            raise JobspecError(f"level {level}: Expected integer, got {typename(count)}")
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
            _read_level(vertex["with"], level + 1, nodefactor, counts)


def _read_counts(js: Any) -> Counts:
    """get_counts() of any jobspec, by the whole walk."""
    if not is_map(js):
        raise JobspecError("at top level: jobspec must be a mapping")
    for key in ("version", "resources"):
        if key not in js:
            raise JobspecError(f"at top level: Object item not found: {key}")
    if not is_int(js["version"]):
        raise JobspecError("at top level: Expected integer, got " + typename(js["version"]))
    attributes = js.get("attributes")
    if not is_map(attributes):
        raise JobspecError("at top level: getting duration: Object item not found: attributes")
    system = attributes.get("system")
    if not is_map(system):
        raise JobspecError("at top level: getting duration: Object item not found: system")
    if "duration" not in system:
        raise JobspecError("at top level: getting duration: Object item not found: duration")
    if not is_number(system["duration"]):
        raise JobspecError("at top level: getting duration: Expected real, got "
                           + typename(system["duration"]))
    counts: Counts = {
        "nnodes": 0,
        "nslots": 0,
        "slot_size": 0,
        "slot_gpus": 0,
        "exclusive": False,
        "duration": float(system["duration"]),
    }

    _read_level(js["resources"], 0, 1, counts)
    if counts["nslots"] <= 0:
        raise JobspecError("Unable to determine slot count")
    if counts["slot_size"] <= 0:
        raise JobspecError("Unable to determine slot size")
    if counts["nnodes"]:
        counts["nslots"] *= counts["nnodes"]
    return counts


# ---------------------------------------------------------------------------
# job-list's columns


def ntasks(js: Any, counts: Counts | None = None) -> int | None:
    """Task count as job-list computes it; None when it is only known once
    resources are allocated (per-resource shell option with node layouts).
    counts: get_counts(js), if the caller has it."""
    if counts is None:
        counts = get_counts(js)
    per_resource: Any = None
    shell: Any = system_of(js).get("shell")
    if is_map(shell) and isinstance(shell.get("options"), Mapping):
        per_resource = shell["options"].get("per-resource")
    if is_map(per_resource) and isinstance(per_resource.get("type"), str):
        count = per_resource.get("count", 1)
        if not is_int(count) or count < 1:
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
    if is_int(total):
        return total
    return counts["nslots"]


def ncores(js: Any, counts: Counts | None = None) -> int | None:
    """Core count as job-list computes it; None for exclusive node requests.
    counts: get_counts(js), if the caller has it."""
    if counts is None:
        counts = get_counts(js)
    if counts["nnodes"] and counts["exclusive"]:
        return None
    return counts["nslots"] * counts["slot_size"]


def nnodes_requested(js: Any) -> int:
    """Node count requested (product of counts down to the node vertex);
    0 when the jobspec has no node level."""
    return get_counts(js)["nnodes"]


def name(js: Any) -> str:
    """Job name as ``flux jobs`` shows it: attributes.system.job.name, else
    the basename of the command's first word (whole word if it ends in /)."""
    job: Any = system_of(js).get("job")
    if is_map(job) and isinstance(job.get("name"), str):
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
