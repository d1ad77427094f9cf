"""Checks on stored data: what every key must look like to be used.

SQLite notices a torn page, not a bit flip inside a value or garbage put
over a key. Every read of an instance-critical key goes through the check
registered here for it, so a damaged value is refused with one line naming
the key (and the job), never handed to code that would fail on it later.
The same checks gate `kvs put` and drive `fsck`.
"""

import json
import math
import zlib
from collections.abc import Callable
from typing import Any

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.formats.jobid import encode, jobid_of_key
from flux_lite.formats.rset import Rset
from flux_lite.limits import MAX_TIME
from flux_lite.notices import notice

MAX_ID = 2**64 - 1
MAX_UID = 2**32 - 1


class DamagedError(FluxLiteError):
    """A stored value that is not what its key must hold."""

    def __init__(self, key: str, reason: str, jobid: int = None):
        self.key = key
        self.reason = reason
        self.jobid = jobid_of_key(key) if jobid is None else jobid
        where = ""
        if self.jobid is not None:
            where = f"job {encode(self.jobid, 'f58')}: "
        if key == LOG:
            self.plain = f"damaged row in the {LOG}: {reason}"
            super().__init__(f"{self.plain} (clear the log with 'flux-lite dmesg -C')")
        elif key in DERIVED_TABLES:
            self.plain = f"{where}damaged row in the {key}: {reason}"
            super().__init__(f"{self.plain} (rebuild it with 'flux-lite fsck --repair')")
        else:
            self.plain = f"{where}damaged KVS key {key}: {reason}"
            super().__init__(f"{self.plain} (see 'flux-lite fsck')")


def _time(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_TIME:
        raise ValueError(f"{what} must be a time between 1970 and 9999")


def _obj(value, what="value"):
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object")
    return value


def _int(value, what, lo=0, hi=MAX_ID):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{what} must be an integer in [{lo}, {hi}]")


def check_meta(v):
    _obj(v)
    _int(v.get("owner"), "owner", 0, MAX_UID)
    if v.get("clock") not in ("real", "virtual"):
        raise ValueError("clock must be 'real' or 'virtual'")
    _time(v.get("start"), "start")
    epoch = v.get("fluid_epoch")
    _time(epoch, "fluid_epoch")
    if epoch > v["start"]:
        raise ValueError("fluid_epoch is after start")


def check_clock(v):
    _time(_obj(v).get("now"), "now")


def check_config(v):
    _obj(v)
    try:
        configmod.validate(v)
    except FluxLiteError as exc:
        raise ValueError(str(exc)) from None


def _R_plain(v) -> bool:
    """Is v an Rv1 dict of the usual shape that check_R passes? Plain type
    tests, no calls: hello checks every running job's R (a false answer
    only means check_R looks closer)."""
    if type(v) is not dict or v.get("version") != 1:
        return False
    ex = v.get("execution")
    if type(ex) is not dict:
        return False
    rl = ex.get("R_lite")
    if type(rl) is not list or not rl:
        return False
    for ent in rl:
        if type(ent) is not dict or type(ent.get("rank")) is not str or type(ent.get("children")) is not dict:
            return False
    # (NaN and infinities fail the range test; bool is neither float nor int by type)
    t = ex.get("starttime", 0.0)
    if not ((type(t) is float or type(t) is int) and 0 <= t <= MAX_TIME):
        return False
    t = ex.get("expiration", 0.0)
    if not ((type(t) is float or type(t) is int) and 0 <= t <= MAX_TIME):
        return False
    if "nodelist" in ex:
        nodelist = ex["nodelist"]
        if type(nodelist) is not list:
            return False
        for h in nodelist:
            if type(h) is not str:
                return False
    return True


def check_R(v, deep=False):
    """Rv1 structure; deep also parses every idset and hostlist."""
    if not deep and _R_plain(v):
        return
    _obj(v)
    if v.get("version") != 1:
        raise ValueError("R version must be 1")
    ex = _obj(v.get("execution"), "execution")
    rl = ex.get("R_lite")
    if not isinstance(rl, list) or not rl:
        raise ValueError("execution.R_lite must be a non-empty list")
    for ent in rl:
        if not isinstance(_obj(ent, "R_lite entry").get("rank"), str) or not isinstance(ent.get("children"), dict):
            raise ValueError("R_lite entries need a rank idset and children")
    for name in ("starttime", "expiration"):
        if name in ex:
            _time(ex[name], f"execution.{name}")
    if "nodelist" in ex and not (isinstance(ex["nodelist"], list)
                                 and all(isinstance(h, str) for h in ex["nodelist"])):
        raise ValueError("execution.nodelist must be a list of hostlists")
    if deep:
        try:
            Rset.from_dict(v)
        except FluxLiteError as exc:
            raise ValueError(str(exc)) from None


def check_sched_module(v):
    """The shape; the scheduler registry adds the check that the module exists
    (register_check: it is a higher layer)."""
    _obj(v)
    if not isinstance(v.get("name"), str):
        raise ValueError("name must be a string")
    if v.get("path") is not None:  # a module file: its args as typed
        if not isinstance(v["path"], str) or not isinstance(v.get("args", []), list):
            raise ValueError("a module file's path must be a string and its args a list")
    elif v.get("args") is not None:
        _obj(v["args"], "args")


def check_sched_state(v):
    _obj(v)
    allocs = v.get("allocs", [])
    if not isinstance(allocs, list):
        raise ValueError("allocs must be a list")
    for a in allocs:
        _int(_obj(a, "alloc").get("id"), "alloc id")
        check_R(a.get("R"))


def check_jm_sched(v):
    _obj(v)
    if not isinstance(v.get("online"), bool):
        raise ValueError("online must be true or false")
    _int(v.get("limit", 0), "limit", 0, 2**31)


def check_checkpoint(v):
    _int(_obj(v).get("max_jobid"), "max_jobid")


def check_housekeeping(v):
    for k, a in _obj(v).items():
        try:
            int(k)
        except ValueError:
            raise ValueError(f"{k!r} is not a job id") from None
        check_R(_obj(a, "allocation").get("R"))


def check_queue_state(v):
    """job-manager.queue: each queue's enable/start state and reasons."""
    entries = _obj(v).get("queue", [])
    if not isinstance(entries, list):
        raise ValueError("queue must be a list")
    for ent in entries:
        _obj(ent, "queue entry")
        if "name" in ent and not isinstance(ent["name"], str):
            raise ValueError("a queue name must be a string")
        for key in ("disable_reason", "stop_reason"):
            if ent.get(key) is not None and not isinstance(ent[key], str):
                raise ValueError(f"{key} must be a string")


def _bool_value(v, what):
    if not isinstance(v, bool):
        raise ValueError(f"{what}: expected true or false")


def check_drain_state(v):
    _obj(v)
    for rank, info in v.items():
        if not rank.isdigit() or not isinstance(info, dict) or not isinstance(info.get("reason"), str) \
                or isinstance(info.get("timestamp"), bool) or not isinstance(info.get("timestamp"), (int, float)):
            raise ValueError(f"drain state of rank {rank}: expected {{timestamp, reason}}")


def check_ingest_module(v):
    _obj(v)
    _bool_value(v.get("loaded"), "job-ingest loaded")
    if not isinstance(v.get("args"), list) or not all(isinstance(a, str) for a in v["args"]):
        raise ValueError("job-ingest args: expected a list of strings")


def check_debug(v):
    _int(v, "debug flags", 0, 0xFFFFFFFF)


def check_jobspec(v):
    _obj(v)
    if not isinstance(v.get("resources"), list) or not isinstance(v.get("tasks"), list):
        raise ValueError("jobspec needs resources and tasks lists")
    if not isinstance(v.get("attributes", {}), dict):
        raise ValueError("attributes must be an object")


CHECKS = {
    "instance.meta": check_meta,
    "instance.clock": check_clock,
    "config": check_config,
    "resource.R": check_R,
    "sched.module": check_sched_module,
    "sched.state": check_sched_state,
    "job-manager.sched": check_jm_sched,
    "checkpoint.job-manager": check_checkpoint,
    "job-manager.housekeeping": check_housekeeping,
    "job-exec.debug": check_debug,
    "job-exec.unloaded": lambda v: _bool_value(v, "job-exec.unloaded"),
    "job-ingest.module": check_ingest_module,
    "resource.drain-state": check_drain_state,
    "job-manager.quarantine": _obj,
    "job-manager.queue": check_queue_state,
}
JOB_CHECKS = {"R": check_R, "jobspec": check_jobspec, "J": _obj}

# instance keys the owner may replace or remove as Flux's tests do (the
# resource module checks resource.eventlog and its drain checkpoint when it
# is loaded again)
OWNER_WRITABLE = ("resource.eventlog", "checkpoint.resource")

# instance keys only flux-lite itself writes: `kvs put` refuses them, naming
# the command that changes what they hold
MANAGED = {
    "instance.meta": "it is fixed when the instance is created",
    "instance.clock": "use 'flux-lite clock advance'",
    "config": "use 'flux-lite config load'",
    "sched.module": "use 'flux-lite module load/remove'",
    "sched.state": "the scheduler writes it",
    "job-manager.sched": "the job manager writes it",
    "checkpoint.job-manager": "the job manager writes it",
    "job-manager.housekeeping": "use 'flux-lite housekeeping kill'",
    "job-manager.quarantine": "use 'flux-lite fsck --repair'",
    "job-manager.queue": "use 'flux-lite queue enable/disable/start/stop'",
    "job-exec.unloaded": "use 'flux-lite module load/remove job-exec'",
    "job-ingest.module": "use 'flux-lite module load/remove job-ingest'",
    "resource.drain-state": "use 'flux-lite resource drain/undrain'",
    "resource.module": "use 'flux-lite module load resource'",
    "broker.deferred": "the broker holds a deferred module's messages there (module.debug)",
}


def register_check(key: str, check: Callable[[Any], None]) -> None:
    """A deeper check for an instance key, from the layer that can judge it: it
    runs after the shape check kept here and raises ValueError when damaged."""
    shape = CHECKS[key]

    def both(value):
        shape(value)
        check(value)

    CHECKS[key] = both


def check_for(key):
    """The check for key's value, or None."""
    check = CHECKS.get(key)
    if check is None and key.startswith("job."):
        check = JOB_CHECKS.get(key.rpartition(".")[2]) if jobid_of_key(key) is not None else None
    return check


def checked(key, value):
    """value, when it is what key must hold; else DamagedError."""
    check = check_for(key)
    if check is not None:
        try:
            check(value)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
            raise DamagedError(key, str(exc) or type(exc).__name__) from None
    return value


# -- packed values ------------------------------------------------------------------
#
# What an inactive job leaves behind never changes again, and is read rarely
# (one job's eventlog, the history's listing column). Its eventlog, jobspec,
# J and R in the KVS, and its record in the jobs index, are stored packed:
# raw deflate with the fixed preset dictionary below, which holds what such
# values share (key names, event names, the record's fields), so that a
# 650-byte eventlog packs into a few dozen bytes. A packed KVS value has kind
# "zjson" or "zeventlog" (kvs.PACKED); a packed record is a BLOB starting with
# PACKED_ROW. Readers never see either: KVS.get_raw/get/get_eventlog/rows
# and the index's record readers unpack. The dictionary is part of the
# stored format: it never changes (another would come with new kind names).

_ZDICT = (
    '{"timestamp":1767225600.0,"name":"submit","context":{"userid":0,"urgency":16,"flags":0,"version":1}}\n'
    '{"timestamp":1767225600.0,"name":"validate"}\n{"timestamp":1767225600.0,"name":"depend"}\n'
    '{"timestamp":1767225600.0,"name":"priority","context":{"priority":16}}\n'
    '{"timestamp":1767225600.0,"name":"exception","context":{"type":"cancel","severity":0,"userid":0,'
    '"note":""}}\n{"timestamp":1767225600.0,"name":"memo","context":{}}\n'
    '{"timestamp":1767225600.0,"name":"jobspec-update","context":{"attributes.system.duration":0}}\n'
    '{"timestamp":1767225600.0,"name":"resource-update","context":{"expiration":0}}\n'
    '{"timestamp":1767225600.0,"name":"alloc","context":{"annotations":{"sched":{"resource_summary":"rank0/core0"}}}}\n'
    '{"timestamp":1767225600.0,"name":"start"}\n{"timestamp":1767225601.0,"name":"finish","context":{"status":0}}\n'
    '{"timestamp":1767225601.0,"name":"release","context":{"ranks":"all","final":true}}\n'
    '{"timestamp":1767225601.0,"name":"free"}\n{"timestamp":1767225601.0,"name":"clean"}\n'
    '{"version":1,"execution":{"R_lite":[{"rank":"0","children":{"core":"0","gpu":"0"}}],'
    '"starttime":1767225600.0,"expiration":0.0,"nslots":1,"nodelist":["node0"],"properties":{}}}'
    '{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-3", "gpu": "0"}}], '
    '"starttime": 1767225600.0, "expiration": 0.0, "nslots": 1, "nodelist": ["node[0-1]"]}}'
    '{"resources": [{"type": "node", "count": 1, "exclusive": true, "with": [{"type": "slot", "count": 1, '
    '"with": [{"type": "core", "count": 1}], "label": "task"}]}], "tasks": [{"command": ["true"], '
    '"slot": "task", "count": {"per_slot": 1}}], "attributes": {"system": {"duration": 0, "cwd": "/home", '
    '"queue": "batch", "exec": {"test": {"run_duration": "1s"}}, "environment": {}, "shell": {"options": '
    '{}}}}, "version": 1}'
    '{"resources":[{"type":"slot","count":1,"with":[{"type":"core","count":1}],"label":"task"}],'
    '"tasks":[{"command":["sleep","inf"],"slot":"task","count":{"per_slot":1}}],"attributes":{"system":'
    '{"duration":0,"cwd":"/home","queue":"batch","exec":{"test":{"run_duration":"1s"}}}},"version":1}'
    '"userid":0,"urgency":16,"priority":16,"t_submit":1767225600.0,"state":64,"flags":0,'
    '"has_resources":false,"alloc_pending":false,"annotations":{"sched":{"resource_summary":"rank0/core0"}},'
    '"end_event":{"type":"finish","status":0},"exception":null,"t_depend":1767225600.0,'
    '"t_priority":1767225600.0,"t_sched":1767225600.0,"t_run":1767225600.0,"t_cleanup":1767225601.0,'
    '"t_inactive":1767225601.0,"waitstatus":0,"started":true,"finished":true,"released":true,"freed":true,'
    '"immutable":false,"set_flags":[],"nevents":10,"dependencies":[],"id":16777216000,"name":"true",'
    '"ntasks":1,"nnodes":1,"ranks":"0","nodelist":"node0","ncores":1}'
).encode()
# raw deflate, a 4 KiB window (the values are small), a small memory level:
# creating the compressor is most of the cost of packing a few hundred bytes
_PACKER = zlib.compressobj(6, zlib.DEFLATED, -12, 4, zlib.Z_DEFAULT_STRATEGY, _ZDICT)
PACKED_ROW = b"\x01"  # the first byte of a packed jobs-index record (format 1)


def pack(text: str) -> bytes:
    """text, packed (see above)."""
    packer = _PACKER.copy()
    return packer.compress(text.encode("utf-8")) + packer.flush()


def unpack(blob: bytes) -> str:
    """pack() undone; ValueError when blob is not a packed value."""
    try:
        unpacker = zlib.decompressobj(-12, _ZDICT)
        data = unpacker.decompress(blob) + unpacker.flush()
        if not unpacker.eof:
            raise ValueError("truncated")
        return data.decode("utf-8")
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"packed value does not unpack: {exc}") from None


def pack_row(text: str) -> bytes:
    """A jobs-index record, packed (an inactive job's: see above)."""
    return PACKED_ROW + pack(text)


def row_text(data):
    """The text of a jobs-index record as stored (packed or not); a packed
    record that does not unpack is returned as it is (the record's check
    then reports it)."""
    if type(data) is bytes:
        if data[:1] == PACKED_ROW:
            try:
                return unpack(data[1:])
            except ValueError:
                return data
    return data


# -- the derived job index ----------------------------------------------------------

INDEX = "jobs index"
TIMERS = "timers table"
DEPENDS = "dependency table"
# tables fsck --repair rebuilds from the eventlogs (a damaged row names its table)
DERIVED_TABLES = (INDEX, TIMERS, DEPENDS)
LOG = "log"  # the dmesg table: not rebuildable, but dmesg -C clears it
_ROW_FIELDS = {"id": int, "userid": int, "state": int, "nevents": int}


def decode_row(jobid, data):
    """One row of the derived jobs index as a record; damage is DamagedError."""
    try:
        if type(data) is bytes:
            if data[:1] != PACKED_ROW:
                raise ValueError("not a record")
            data = unpack(data[1:])
        rec = json.loads(data)
        _obj(rec)
        for name, kind in _ROW_FIELDS.items():
            if not isinstance(rec.get(name), kind):
                raise ValueError(f"{name} missing")
        if jobid is not None and rec["id"] != jobid:
            raise ValueError("id does not match the row")
        for name in ("jobspec", "R", "annotations", "exception", "end_event"):
            if rec.get(name) is not None and not isinstance(rec[name], dict):
                raise ValueError(f"{name} is not an object")
    except (ValueError, TypeError, RecursionError) as exc:
        raise DamagedError(INDEX, str(exc), jobid=jobid) from None
    return rec


def good_rows(rows):
    """Records of (id, data) rows; a damaged row is reported and left out."""
    for jobid, data in rows:
        try:
            yield decode_row(jobid, data)
        except DamagedError as exc:
            notice(exc.message)


# -- RFC 21 order of a job eventlog -----------------------------------------------------

def check_job_events(entries):
    """The order RFC 21's state machine allows (events flux-lite does not
    know are let through: other modules post their own)."""
    if not entries or entries[0]["name"] != "submit":
        raise ValueError("the first event is not submit")
    seen = set()
    last = 0.0
    for i, e in enumerate(entries, 1):
        name, ts, ctx = e["name"], e["timestamp"], e.get("context") or {}
        if ts < last:
            raise ValueError(f"event {i} ({name}): timestamp goes backwards")
        last = ts
        if "clean" in seen:
            raise ValueError(f"event {i} ({name}): after clean")
        if name == "submit":
            if i != 1:
                raise ValueError(f"event {i}: a second submit")
            _int(ctx.get("userid"), "submit userid", 0, MAX_UID)
            _int(ctx.get("urgency", 16), "submit urgency", 0, 31)
        elif name in ("alloc", "start", "finish", "clean") and name in seen:
            raise ValueError(f"event {i}: a second {name}")
        need = {"alloc": "validate", "start": "alloc", "finish": "start", "free": "alloc",
                "release": "alloc"}.get(name)
        if need is not None and need not in seen:
            raise ValueError(f"event {i} ({name}) before {need}")
        seen.add(name)


def _refusal(key: str) -> str | None:
    """Why a client may not write key (None: it may)."""
    reason = MANAGED.get(key)
    if reason is None and key not in OWNER_WRITABLE and key.startswith(("checkpoint.", "sched.", "job-manager.")):
        reason = "flux-lite writes it"
    if reason is None and jobid_of_key(key) is not None:
        reason = "job data is written by the job manager"
    return reason


def removal_refusal(key: str) -> str | None:
    """Why no client may remove key (None: it may): what put refuses, and
    every key under instance., resource. and job. (flux-lite writes them)."""
    if key == "resource.R":
        return "the instance's resources"
    reason = _refusal(key)
    if reason is None and key not in OWNER_WRITABLE and (
            key in ("instance", "resource", "job") or key.startswith(("instance.", "resource.", "job."))):
        reason = "flux-lite writes it"
    return reason


def check_remove(key: str, verb: str = "remove", name: str | None = None) -> None:
    """Refuse a KVS commit that would remove key (an unlink of it or of its
    directory, or a put over either); name: the key as the user typed it."""
    reason = removal_refusal(key)
    if reason is not None:
        raise FluxLiteError(f"{name or key}: refusing to {verb} an instance key ({reason})")


def check_put(key: str, value) -> None:
    """Refuse a `kvs put` that would leave the instance unable to read key."""
    reason = _refusal(key)
    if reason is not None:
        raise FluxLiteError(f"{key}: refusing to overwrite an instance key ({reason})")
    if key == "resource.R":
        try:
            check_R(value, deep=True)
        except (ValueError, TypeError, AttributeError) as exc:
            raise UsageError(f"{key}: not a valid R: {exc}") from None
