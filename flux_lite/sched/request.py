"""What a job asks the scheduler for: ResourceRequest, read off its jobspec.

``request_from_jobspec`` is flux-core's Rv1Pool ``ResourceRequest.from_jobspec``
(what the Python schedulers see of a jobspec): the common jobspec shape is
read through :func:`flux_lite.formats.jj.job_shape`, any other by the
general walk (``resource_request``), whose JobspecError messages become the
scheduler's deny notes (``cannot parse jobspec: <message>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flux_lite.errors import JobspecError
from flux_lite.formats.idset import IDset
from flux_lite.formats.jj import MAX_RESOURCE_DEPTH, is_map, job_shape
from flux_lite.formats.jobspec_validate import idset_values_ok

__all__ = [
    "DiscreteCountError",
    "ResourceRequest",
    "SlotTotals",
    "Count",
    "parse_count",
    "read_request",
    "request_counts",
    "request_from_jobspec",
    "resource_request",
]


class SlotTotals:
    """``ncores`` and ``ngpus`` of a request of ``nslots`` slots of
    ``slot_size`` cores and ``gpu_per_slot`` gpus (flux-lite's request and
    the flux package's share them)."""

    __slots__ = ()
    nslots: int
    slot_size: int
    gpu_per_slot: int

    @property
    def ncores(self) -> int:
        return self.nslots * self.slot_size

    @property
    def ngpus(self) -> int:
        return self.nslots * self.gpu_per_slot


class ResourceRequest(SlotTotals):
    """What a job asks for (read off its jobspec by request_from_jobspec).

    ``nslots`` is the TOTAL slot count; with ``nnodes > 0`` each node gets
    ``nslots // nnodes`` slots (at least one).  ``exclusive`` without nodes
    means one whole node per slot (as flux-core's jobspec parser does).
    ``properties`` are required property names (``^name`` = must not have,
    ``+name`` allowed); ``constraint`` an optional RFC 31 object; both apply.

    A plain class rather than a dataclass: every submit imports this module,
    and building a dataclass costs more than the whole rest of the import.
    """

    FIELDS = ("nnodes", "nslots", "slot_size", "gpu_per_slot", "exclusive", "duration",
              "properties", "constraint")
    __slots__ = FIELDS + ("_ckey", "pool_plan", "container")

    def __init__(self, nnodes: int = 0, nslots: int = 1, slot_size: int = 1, gpu_per_slot: int = 0,
                 exclusive: bool = False, duration: float = 0.0, properties: Sequence[str] = (),
                 constraint: dict | None = None, container: str | None = None) -> None:
        self.nnodes = nnodes
        self.nslots = nslots
        self.slot_size = slot_size
        self.gpu_per_slot = gpu_per_slot
        self.exclusive = exclusive
        self.duration = duration
        self.properties = properties
        self.constraint = constraint
        # TreePool's: the topology level (socket, numa...) whose whole free
        # objects are the slots (slot_size 0), as sched/treepool.py reads it
        self.container = container
        self._ckey: str | None = None
        # (topology, RequestPlan): kept here by Pool.plan(), which makes it once per
        # topology; nobody else reads or writes it
        self.pool_plan: Any = None

    def as_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.FIELDS}
        if self.container is not None:
            out["container"] = self.container
        return out

    @property
    def constraint_key(self) -> str | None:
        """The constraint as a string (None without one), computed once:
        selection caches are keyed by it, and a pass asks many times. repr is
        several times cheaper than a sorted json.dumps; equal strings mean
        equal constraints, which is all a cache key needs."""
        cons = self.constraint
        if not cons:
            return None
        key = self._ckey
        if key is None:
            key = self._ckey = repr(cons)
        return key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceRequest):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"ResourceRequest({args})"

    @property
    def slots_per_node(self) -> int:
        if self.exclusive and self.nnodes <= 0:
            return 1
        if self.nnodes <= 0:
            return 0
        return max(1, self.nslots // self.nnodes)



def request_from_jobspec(jobspec: Any) -> ResourceRequest:
    """The request a jobspec makes (JobspecError, or the errors of the
    general walk, when it cannot be read). jobspec: a job's, never changed
    in place (see jj.job_shape)."""
    shape = job_shape(jobspec)
    if shape is None:
        return read_request(jobspec)
    nnodes = shape.nnodes
    # (in FIELDS order; "or 0.0" as the walk reads it: a -0.0 duration is 0.0)
    return ResourceRequest(nnodes, shape.slot_count * nnodes if nnodes else shape.slot_count, shape.slot_size,
                           shape.slot_gpus, shape.exclusive, shape.duration or 0.0, (),
                           shape.system.get("constraints") or None)


def read_request(jobspec: Any) -> ResourceRequest:
    """request_from_jobspec by the general walk (resource_request)."""
    req = resource_request(jobspec)
    return ResourceRequest(
        nnodes=req["nnodes"],
        nslots=req["nslots"],
        slot_size=req["slot_size"],
        gpu_per_slot=req["gpu_per_slot"],
        exclusive=req["exclusive"],
        duration=float(req["duration"]),
        constraint=req.get("constraint") or None,
    )


# ---------------------------------------------------------------------------
# the general walk (flux.resource.Rv1Pool ResourceRequest.from_jobspec)


_DISCRETE_MSG = (
    "{} count specifies discrete valid values that this scheduler "
    "does not support; use a simple min-max range instead"
)


class DiscreteCountError(JobspecError):
    """A node/slot count given as discrete values (stepped range or idset).

    Flux's Python schedulers parse such a request but refuse it at alloc or
    feasibility time (an infeasible request, so a deny note without the
    ``cannot parse jobspec:`` prefix)."""


class Count:
    """An RFC 14 count as the general walk reads it: ``min``, ``max`` (None
    when unbounded) and ``values``, the valid counts of a stepped range or
    an idset (ascending), None for a plain range (every count between)."""

    __slots__ = ("min", "max", "values")

    def __init__(self, mn: int, mx: int | None, values: tuple[int, ...] | None = None) -> None:
        self.min, self.max, self.values = mn, mx, values

    @property
    def discrete(self) -> bool:
        return self.values is not None

    def scaled(self, factor: int) -> Count:
        if factor == 1:
            return self
        values = None if self.values is None else tuple(v * factor for v in self.values)
        return Count(self.min * factor, None if self.max is None else self.max * factor, values)


def _count_error(msg):
    return JobspecError("RFC 14 count: " + msg)


def _stepped_values(mn, mx, operator, operand):
    """The counts of a stepped range, min to max (Flux expands them)."""
    if operator not in ("+", "*", "^"):
        raise _count_error(f"operator {operator!r} is not supported")
    if operator in ("*", "^") and operand <= 1:
        raise _count_error(f"operator {operator!r} requires operand > 1, got {operand}")
    if operator == "^" and mn < 2:
        raise _count_error(f"operator '^' requires min >= 2, got {mn}")
    if operator == "+" and operand <= 0:
        raise _count_error(f"additive operator requires operand > 0, got {operand}")
    values = []
    v = mn
    while v <= mx:
        values.append(v)
        if len(values) > 65536:
            raise _count_error("sequence too large to expand")
        v = v + operand if operator == "+" else v * operand if operator == "*" else v**operand
    return tuple(values)


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise JobspecError(f"invalid literal for int() with base 10: {text!r}") from None


def parse_count(value: Any) -> Count:
    """The Count of a jobspec ``count`` value: int, range dict, RFC 45 string
    or idset (flux.resource.ResourceCount.from_count_spec); JobspecError."""
    if isinstance(value, int):  # (bool included, as in Flux)
        value = int(value)
        if value < 1:
            raise _count_error(f"integer count must be >= 1, got {value}")
        return Count(value, value)
    if is_map(value):
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
            return Count(mn, None)
        mx = _int(mx)
        if mx < mn:
            raise _count_error(f"max must be >= min, got max={mx} min={mn}")
        if operator == "+" and operand == 1:
            return Count(mn, mx)
        return Count(mn, mx, _stepped_values(mn, mx, operator, operand))
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
            return Count(mn, None)
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
                return Count(mn, mx)
            return Count(mn, mx, _stepped_values(mn, mx, operator, operand))
        if "," in text:
            if not idset_values_ok(text):
                raise JobspecError(f"invalid idset {text!r}")
            ids = tuple(IDset.parse(text))
            if ids[0] < 1:
                raise _count_error(f"min must be >= 1, got {ids[0]}")
            return Count(ids[0], ids[-1], ids)
        if "-" in text:
            lo, _, hi = text.partition("-")
            mn = _int(lo)
            if mn < 1:
                raise _count_error(f"min must be >= 1, got {mn}")
            mx = _int(hi)
            if mx < mn:
                raise _count_error(f"max must be >= min, got max={mx} min={mn}")
            return Count(mn, mx)
        mn = _int(text)
        if mn < 1:
            raise _count_error(f"min must be >= 1, got {mn}")
        return Count(mn, mn)
    return Count(1, 1)


def _required_properties(constraint, depth=0):
    """Property names that must all hold: top-level and nested ``and``."""
    names = []
    if not is_map(constraint) or depth > MAX_RESOURCE_DEPTH:
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
    """resource_request's walk of one level (a module function: see jj._read_level)."""
    if depth > MAX_RESOURCE_DEPTH:
        raise JobspecError(
            f"jobspec resource nesting exceeds maximum depth {MAX_RESOURCE_DEPTH}"
        )
    for vertex in res_list:
        if not is_map(vertex):
            raise JobspecError("resource vertex must be a mapping")
        rtype = vertex.get("type", "")
        count = parse_count(vertex.get("count", 1))
        children = vertex.get("with", [])
        if children and not isinstance(children, list):
            raise JobspecError("resource with must be a list")
        if rtype == "node":
            state["nnodes"] = count
            if state["nslots"] is not None:
                state["slot_above_node"] = True
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
            elif vertex.get("exclusive", False) and not children:
                state["container"] = rtype  # (a topology container taken whole: TreePool's)
            if children:
                _request_walk(children, nodefactor * count.min, depth + 1, state)


def request_counts(js: Any, containers: bool = False) -> dict[str, Any]:
    """The general walk of a jobspec's resources, ranges kept: ``node_count``
    (a Count, or None without a node level; scaled by the counts above the
    node level), ``slot_count`` (a Count: per node with a node level, the
    total without), ``slot_size``, ``gpu_per_slot``, ``exclusive``,
    ``duration`` and ``constraint``. An exclusive slot-only request becomes
    one node per slot. The errors of resource_request, but for discrete counts
    (kept as they are: Flux's Python pools refuse them when allocating).

    ``containers``: read it as Flux's TreePool does: an exclusive leaf of
    another type (``socket``, ``numa``...) is ``container_level`` (else
    None), the unit of its slots; such a request, or an exclusive one, may
    name no cores (``slot_size`` 0); a slot above the node level counts
    per node; exclusive slots of containers are not nodes."""
    if not is_map(js):
        raise JobspecError("jobspec must be a mapping")
    resources = js.get("resources", [])
    if not resources:
        raise JobspecError("jobspec has no resources")
    if not isinstance(resources, list):
        raise JobspecError("resources must be a list")
    state: dict[str, Any] = {
        "nnodes": None,
        "nslots": None,
        "slot_size": None,
        "gpu_per_slot": 0,
        "exclusive": False,
        "nodefactor": 1,
        "slot_above_node": False,
        "container": None,
    }

    _request_walk(resources, 1, 0, state)

    attributes = js.get("attributes", {})
    system: Any = attributes.get("system") if is_map(attributes) else None
    if js.get("version") == 1:
        if system is None:
            raise JobspecError("getting duration: Object item not found: system")
        if not is_map(system) or system.get("duration") is None:
            raise JobspecError("getting duration: Object item not found: duration")
    if state["nslots"] is None:
        raise JobspecError("Unable to determine slot count")
    container = state["container"] if containers else None
    if state["slot_size"] is None and not (containers and (container or state["exclusive"])):
        raise JobspecError("Unable to determine slot size")

    node_count = state["nnodes"]
    slot_count = state["nslots"]
    nf = state["nodefactor"]
    if node_count is not None:
        node_count = node_count.scaled(nf)
        if containers and state["slot_above_node"] and nf > 1 and slot_count.min % nf == 0:
            # (the slot count went into the node factor: per node, it is divided back out)
            slot_count = Count(slot_count.min // nf, None if slot_count.max is None else slot_count.max // nf)
    if state["exclusive"] and node_count is None and container is None:
        node_count, slot_count = slot_count, Count(1, 1)

    attrs = system if is_map(system) else {}
    dur = attrs.get("duration") or 0.0
    try:
        dur = float(dur)
    except (TypeError, ValueError) as exc:
        raise JobspecError(str(exc)) from None
    return {
        "node_count": node_count,
        "slot_count": slot_count,
        "slot_size": state["slot_size"] or 0,
        "gpu_per_slot": state["gpu_per_slot"],
        "exclusive": state["exclusive"],
        "duration": dur,
        "constraint": attrs.get("constraints") or None,
        "container_level": container,
    }


def resource_request(js: Any) -> dict[str, Any]:
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
    counts = request_counts(js)
    node_count = counts["node_count"]
    slot_count = counts["slot_count"]
    constraint = counts["constraint"]
    if node_count is not None and node_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("node"))
    if slot_count.discrete:
        raise DiscreteCountError(_DISCRETE_MSG.format("slot"))

    nnodes = node_count.min if node_count is not None else 0
    return {
        "nnodes": nnodes,
        "slots_per_node": slot_count.min if node_count is not None else 0,
        "nslots": slot_count.min * nnodes if node_count is not None else slot_count.min,
        "slot_size": counts["slot_size"],
        "gpu_per_slot": counts["gpu_per_slot"],
        "exclusive": counts["exclusive"],
        "duration": counts["duration"],
        "constraint": constraint,
        "constraints": _required_properties(constraint),
    }
