"""Jobspec version 1 (RFC 14 canonical jobspec, RFC 25 V1): build, load, dump.

Building (``build``) follows what ``flux submit`` / ``flux run`` produce
(flux.cli.base + JobspecV1.from_command, Jobspec.setattr); ``loads``
reads JSON or YAML and ``dumps`` writes JSON as flux.job.Jobspec does; the
accessors read what Jobspec's properties and job-exec read.
Validation is :mod:`flux_lite.formats.jobspec_validate`, the counts read off
a jobspec :mod:`flux_lite.formats.jj`.

All errors are JobspecError with a one-line message.
"""

import copy
import errno
import json
import math
from collections.abc import Sequence

from flux_lite.errors import JobspecError, UsageError
from flux_lite.formats import fsd
from flux_lite.formats.bounds import MAX_VALUES, MAX_YAML, count_values, flow_depth_exceeds
from flux_lite.formats.eventlog import jansson_loads
from flux_lite.formats.jj import is_int, is_map, is_number, system_of, typename
from flux_lite.formats.jobspec_validate import JobspecTypeError, validate

__all__ = [
    "parse_setattr",
    "attr_key",
    "setattr_key",
    "get_attr",
    "set_treedict",
    "del_treedict",
    "build",
    "loads",
    "dumps",
    "duration",
    "duration_seconds",
    "run_duration",
    "apply_updates",
]


# ---------------------------------------------------------------------------
# small helpers


def set_treedict(obj, key, value):
    """flux.util.set_treedict: d[a][b][c] = value, creating dicts on demand.

    TypeError when a part on the way is not a dict."""
    head, dot, rest = key.partition(".")
    if not isinstance(obj, dict):
        raise TypeError(f"'{typename(obj)}' object does not support item assignment")
    if dot:
        set_treedict(obj.setdefault(head, {}), rest, value)
    else:
        obj[key] = value


def del_treedict(obj, key):
    """Delete d[a][b][c] for key ``a.b.c`` and the dicts it leaves empty;
    nothing if it is absent."""
    head, dot, rest = key.partition(".")
    if not isinstance(obj, dict) or head not in obj:
        return
    if dot:
        del_treedict(obj[head], rest)
        if obj[head] != {}:
            return
    del obj[head]


def attr_key(key):
    """Jobspec.setattr's key: ``attributes.`` implied, and ``system.`` unless
    the key starts with ``user.`` or ``system.``."""
    if not key.startswith("attributes."):
        if not key.startswith(("user.", "system.")):
            key = "system." + key
        key = "attributes." + key
    return key


def setattr_key(key):
    """Key of ``--setattr``: a leading ``.`` means ``attributes.``; otherwise
    as attr_key."""
    if key.startswith("."):
        key = "attributes" + key
    elif not key.startswith(("attributes.", "user.", "system.")):
        key = "system." + key
    return attr_key(key)


def get_attr(js, key):
    """The value at an attr_key() of the jobspec; KeyError if a part is
    absent (or null)."""
    value = js
    for part in attr_key(key).split("."):
        value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            raise KeyError(key)
    return value


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
    if not is_int(ntasks) or ntasks < 1:
        raise JobspecError("task count must be a integer >= 1")
    if not is_int(cores_per_task) or cores_per_task < 1:
        raise JobspecError("cores per task must be an integer >= 1")
    if gpus_per_task is not None:
        if not is_int(gpus_per_task) or gpus_per_task < 0:
            raise JobspecError("gpus per task must be an integer >= 0")
    if nnodes is not None:
        if not is_int(nnodes) or nnodes < 1:
            raise JobspecError("node count must be an integer >= 1 (if set)")
        if nnodes > ntasks:
            raise JobspecError("node count must not be greater than task count")
    elif exclusive:
        raise JobspecError("exclusive can only be set with a node count")
    if isinstance(command, str) or not isinstance(command, Sequence):
        raise JobspecTypeError("command must be a list of strings")
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
        system["duration"] = duration_seconds(duration)
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
    apply_setattrs(js, setattrs)
    if check:
        validate(js)
    return js


def apply_setattrs(js, setattrs):
    """Set ``-S/--setattr`` items on a jobspec, in order: ``(key, value)``
    pairs or raw ``"KEY[=VAL]"`` strings (parsed by parse_setattr)."""
    for item in setattrs:
        key, value = parse_setattr(item) if isinstance(item, str) else item
        key = setattr_key(key)
        try:
            set_treedict(js, key, value)
        except TypeError as exc:
            raise JobspecError(f"failed to set {key} to {value}: {exc}") from None


def duration_seconds(value):
    """Jobspec.duration setter: seconds (float) from a number, an FSD string or
    a timedelta; JobspecTypeError for another type."""
    if isinstance(value, str):
        try:
            seconds = fsd.parse(value)  # flux.util.parse_fsd, as Jobspec.duration
        except ValueError as exc:
            raise JobspecError(str(exc)) from None
    elif is_number(value):
        seconds = float(value)
    elif hasattr(value, "total_seconds"):
        seconds = value.total_seconds()
    else:
        raise JobspecTypeError("duration must be an int, float, string, or timedelta")
    if seconds < 0:
        raise JobspecError("duration must not be negative")
    if math.isnan(seconds) or math.isinf(seconds):
        raise JobspecError("duration must be a normal, finite value")
    return seconds


# ---------------------------------------------------------------------------
# loading and dumping


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
    if len(text) > MAX_YAML:
        raise JobspecError(f"jobspec: YAML larger than {MAX_YAML >> 10} KiB (a JSON jobspec may be larger)")
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
    if count_values(obj) > MAX_VALUES:
        raise JobspecError(f"jobspec: more than {MAX_VALUES} values (YAML aliases expand to too much)")
    # keep only JSON-representable data (YAML has dates, sets, bytes, NaN)
    try:
        return json.loads(json.dumps(obj, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise JobspecError("invalid jobspec: " + " ".join(str(exc).split())) from None


def dumps(js, **kwargs):
    """Serialize as Flux does (json.dumps defaults, non-ASCII kept; json.dumps
    keyword arguments accepted)."""
    return json.dumps(js, ensure_ascii=False, **kwargs)


# ---------------------------------------------------------------------------
# accessors


def duration(js):
    """attributes.system.duration as float seconds (0.0 = unlimited/unset)."""
    value = system_of(js).get("duration", 0)
    if not is_number(value):
        raise JobspecError("attributes.system.duration must be a number")
    return float(value)


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
    exec_ = system_of(js).get("exec")
    if not is_map(exec_) or "test" not in exec_:
        return None
    test = exec_["test"]
    if not is_map(test):
        raise JobspecError(_TESTCONF_ERROR)
    for key in ("override", "reattach_finish", "wait_status"):
        if key in test and not is_int(test[key]):
            raise JobspecError(_TESTCONF_ERROR)
    if "mock_exception" in test and not isinstance(test["mock_exception"], str):
        raise JobspecError(_TESTCONF_ERROR)
    value = system_of(js).get("duration", -1.0)
    default = float(value) if is_number(value) else -1.0
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


