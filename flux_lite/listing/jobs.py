"""The `jobs` listing: one row per job, with the fields flux-jobs offers.

Values follow flux-core's job-list and the Python JobInfo class: status
abbreviations, contextual time and info (``held``, ``eta:…``, nodelist),
results and return codes.
"""

import json

from flux_lite.formats import jobid
from flux_lite.formats.fsd import format_fsd
from flux_lite.formats.jobid import ENCODINGS, f58
from flux_lite.formats.jobid import f58 as _f58
from flux_lite.job_list import bracketed_ranks, result_of
from flux_lite.job_manager.job import (
    CANCELED,
    CLEANUP,
    COMPLETED,
    DEPEND,
    FAILED,
    INACTIVE,
    PENDING,
    PRIORITY,
    RESULT_NAMES,
    RESULT_SHORT,
    RUN,
    SCHED,
    STATE_NAMES,
    STATE_SHORT,
)
from flux_lite.listing import Listing, Row

DEFAULT_FORMAT = (
    "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_abbrev:>2.2} "
    "{ntasks:>6} {nnodes:>6h} {contextual_time!F:>8h} {contextual_info}"
)

FORMATS = {  # in flux-jobs' order
    "default": ("Default flux-jobs format string", DEFAULT_FORMAT),
    "cute": ("Cute flux-jobs format string (default with emojis)",
             "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_emoji:>5.5} "
             "{ntasks:>6} {nnodes:>6h} {contextual_time!F:>8h} {contextual_info}"),
    "long": ("Extended flux-jobs format string",
             "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status:>9.9} {ntasks:>6} "
             "{nnodes:>6h} {t_submit!d:%b%d %R::>12} {t_remaining!F:>12h} {contextual_time!F:>8h} "
             "{contextual_info}"),
    "deps": ("Show job urgency, priority, and dependencies",
             "{id.f58:>12} ?:{queue:<8.8} {name:<10.10+} {urgency:<3} {priority:<12} {state:<8.8} "
             "{dependencies}"),
    "endreason": ("Show why each job ended",
                  "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_abbrev:>2.2} "
                  "{t_inactive!d:%b%d %R::>12h} {inactive_reason}"),
}

# a job id column is JOBID in every encoding
ID_HEADINGS = {"id": "JOBID", **{f"id.{enc}": "JOBID" for enc in ENCODINGS}}

HEADINGS = {
    **ID_HEADINGS,
    "userid": "UID", "username": "USER", "urgency": "URG", "priority": "PRI", "state": "STATE",
    "state_single": "S", "status": "STATUS", "status_abbrev": "ST", "result": "RESULT",
    "result_abbrev": "RS", "name": "NAME", "cwd": "CWD", "queue": "QUEUE", "project": "PROJECT", "bank": "BANK",
    "ntasks": "NTASKS", "ncores": "NCORES", "nnodes": "NNODES", "ranks": "RANKS",
    "nodelist": "NODELIST", "duration": "DURATION", "expiration": "EXPIRATION",
    "t_submit": "T_SUBMIT", "t_depend": "T_DEPEND", "t_priority": "T_PRIORITY", "t_sched": "T_SCHED",
    "t_run": "T_RUN", "t_cleanup": "T_CLEANUP",
    "t_inactive": "T_INACTIVE", "t_remaining": "T_REMAINING", "runtime": "RUNTIME",
    "contextual_time": "TIME", "contextual_info": "INFO", "returncode": "RC", "success": "SUCCESS",
    "waitstatus": "WSTATUS", "exception.occurred": "EXCEPTION-OCCURRED",
    "exception.severity": "EXCEPTION-SEVERITY", "exception.type": "EXCEPTION-TYPE",
    "exception.note": "EXCEPTION-NOTE", "annotations": "ANNOTATIONS", "dependencies": "DEPENDENCIES",
    "annotations.sched.t_estimate": "T_ESTIMATE", "annotations.sched.reason_pending": "REASON",
    "annotations.sched.resource_summary": "RESOURCES",
    "sched.t_estimate": "T_ESTIMATE", "sched.reason_pending": "REASON",
    "sched.resource_summary": "RESOURCES", "sched.jobs_ahead": "JOBS_AHEAD",
    "sched": "SCHED", "user": "USER", "inactive_reason": "INACTIVE-REASON", "status_emoji": "STATUS",
    "state_emoji": "STATE", "result_emoji": "RESULT",
}


def heading_fallback(field):
    """Free-form annotation fields, headed as flux-jobs heads them: after
    `annotations.`, the rest upper-cased (`annotations.sched.jobs_ahead` ->
    SCHED.JOBS_AHEAD); `sched.X` and `user.X` whole (SCHED.X, USER.X)."""
    if field.startswith("annotations.") and len(field) > len("annotations."):
        return field[len("annotations."):].upper()
    for prefix in ("sched.", "user."):
        if field.startswith(prefix) and len(field) > len(prefix):
            return field.upper()
    return None


class JobID(int):
    """An int that formats itself in every Flux encoding (id.f58, id.hex...)."""

    def __getattr__(self, name):
        if name not in ENCODINGS:
            raise AttributeError(name)
        # listings print emoji ids as f58, which every terminal can show
        return jobid.encode(int(self), "f58" if name == "emoji" else name)

    @property
    def f58(self):
        # the form every listing prints: no detour through __getattr__
        return _f58(int(self))

    def __format__(self, spec):
        return format(self.f58, spec)

    def __str__(self):
        return self.f58


def _system(rec):
    """The jobspec's attributes.system (empty when there is none)."""
    js = rec.get("jobspec") or {}
    system = js.get("attributes", {}).get("system", {}) if isinstance(js, dict) else {}
    return system


def _expiration(info):
    R = info.rec.get("R") or {}
    execution = R.get("execution", {}) if R else {}
    return execution.get("expiration", 0.0) or 0.0


def _duration(info):
    duration = info.system_of().get("duration", 0)
    return float(duration) if duration is not None else 0.0


def _runtime(info):
    rec = info.rec
    t_run = rec.get("t_run") or 0.0  # the fields t_run and t_cleanup
    if t_run:
        end = rec.get("t_cleanup") or info.now
        return max(end - t_run, 0.0)
    return 0.0


def _t_remaining(info):
    if info.rec["state"] != RUN:
        return 0.0
    expiration = info["expiration"]
    return max(expiration - info.now, 0.0) if expiration else 0.0


def _result_name(info):
    return RESULT_NAMES.get(info.result_bit(), "") if info.rec["state"] == INACTIVE else ""


def _result_abbrev(info):
    return RESULT_SHORT.get(info.result_bit(), "") if info.rec["state"] == INACTIVE else ""


def _exception(info):
    rec = info.rec
    exc = rec.get("exception")
    inactive = rec["state"] == INACTIVE
    return Row(
        # job-list tells whether an exception occurred only once the job is
        # inactive: empty before
        occurred=(exc is not None) if inactive else "",
        severity=exc["severity"] if exc and inactive else "",
        type=exc["type"] if exc and inactive else "",
        note=exc["note"] if exc and inactive else "",
    )


# the fields that are the record's value (to_json reads them straight from
# the record), by how: "time" (0.0 when absent or null), "plain" ("" when
# absent), "nullable" ("" when absent or null)
_PLAIN: dict = {}


def _time_field(key):
    _PLAIN[key] = "time"
    return lambda info: info.rec.get(key) or 0.0


def _plain_field(key):
    _PLAIN[key] = "plain"
    return lambda info: info.rec.get(key, "")


def _nullable_field(key):
    _PLAIN[key] = "nullable"

    def field(info):
        value = info.rec.get(key)
        return "" if value is None else value
    return field


def _system_field(key):
    return lambda info: info.system_of().get(key, "") or ""


# each field of a job's row, computed from the record (info.rec) and the
# fields it depends on; in make_info's order
_FIELDS = {
    "id": lambda info: JobID(info.rec["id"]),
    "userid": _plain_field("userid"),
    "username": lambda info: info.username_of(info.rec["userid"]),
    "user": lambda info: _AnnotationDict((info.rec.get("annotations") or {}).get("user", {})),
    "urgency": _plain_field("urgency"),
    "priority": _nullable_field("priority"),
    "state": lambda info: STATE_NAMES.get(info.rec["state"], ""),
    "state_single": lambda info: STATE_SHORT.get(info.rec["state"], ""),
    "name": _plain_field("name"),
    "queue": _system_field("queue"),
    "project": _system_field("project"),
    "bank": _system_field("bank"),
    "ntasks": _plain_field("ntasks"),
    "nnodes": _plain_field("nnodes"),
    "ncores": _plain_field("ncores"),
    "ranks": lambda info: _bracketed(info.rec.get("ranks", "")),
    "nodelist": _plain_field("nodelist"),
    "duration": _duration,
    "expiration": _expiration,
    "cwd": lambda info: (lambda cwd: cwd if isinstance(cwd, str) else "")(info.system_of().get("cwd", "")),
    **{key: _time_field(key) for key in ("t_submit", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup",
                                         "t_inactive")},
    "runtime": _runtime,
    "t_remaining": _t_remaining,
    "result": _result_name,
    "result_abbrev": _result_abbrev,
    "status": lambda info: info["result"] if info.rec["state"] == INACTIVE else info["state"],
    "status_abbrev": lambda info: info["result_abbrev"] if info.rec["state"] == INACTIVE else info["state_single"],
    "success": lambda info: info.result_bit() == COMPLETED if info.rec["state"] == INACTIVE else "",
    "returncode": lambda info: _returncode(info.rec, info.result_bit()) if info.rec["state"] == INACTIVE else "",
    "waitstatus": _nullable_field("waitstatus"),
    "exception": _exception,
    "annotations": lambda info: _AnnotationDict(info.rec.get("annotations") or {}),
    "sched": lambda info: _AnnotationDict((info.rec.get("annotations") or {}).get("sched", {})),
    "dependencies": lambda info: DependencyList(info.rec.get("dependencies") or (), info.now),
    "status_emoji": lambda info: _status_emoji(info.rec["state"], info.result_bit()),
    "state_emoji": lambda info: _state_emoji(info.rec["state"]),
    "result_emoji": lambda info: _result_emoji(info.result_bit() if info.rec["state"] == INACTIVE else None),
    "inactive_reason": lambda info: _inactive_reason(info) if info.rec["state"] == INACTIVE else "",
    "contextual_time": lambda info: info["duration"] if info.rec["state"] & PENDING else info["runtime"],
    "contextual_info": lambda info: _contextual_info(info.rec, info, info.now),
}


class JobInfo(Row):
    """A job's row whose fields are computed when first read (by key or
    attribute): a listing computes only the fields its format prints."""

    __slots__ = ("rec", "now", "username_of", "_system", "_result")

    def __init__(self, rec, now, username):
        super().__init__()
        self.rec = rec
        self.now = now
        self.username_of = username
        self._system = self._result = None

    def system_of(self):
        """The jobspec's attributes.system (several fields read it)."""
        if self._system is None:
            self._system = _system(self.rec)
        return self._system

    def result_bit(self):
        """The job's result bit, None while active (see job_list.result_of)."""
        if self._result is None:
            self._result = (result_of(self.rec),)
        return self._result[0]

    def __missing__(self, key):
        compute = _FIELDS.get(key)
        if compute is None:
            raise KeyError(key)
        value = self[key] = compute(self)
        return value

    def fill(self) -> "JobInfo":
        """Every field computed (in _FIELDS' order, those not read yet): then
        it is a plain dict of them."""
        for key, compute in _FIELDS.items():
            if key not in self:
                self[key] = compute(self)
        return self


def make_info(rec, now, username):
    """A job's row, every field computed (see JobInfo for the lazy one)."""
    return JobInfo(rec, now, username).fill()


_bracketed = bracketed_ranks


# JobInfo.to_dict's attributes, in its order: the defaults, then the other properties
_JSON_DEFAULTS = ("t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive", "duration",
                  "expiration", "name", "cwd", "queue", "project", "bank", "ntasks", "ncores", "nnodes",
                  "priority", "ranks", "nodelist", "success", "result", "waitstatus")
_JSON_PROPERTIES = ("id", "t_submit", "t_remaining", "state", "result", "username", "userid", "urgency",
                    "runtime", "status", "returncode", "dependencies")


_JSON_BUILDER: list = []


def _json_fields():
    """A function of a JobInfo giving to_json's fields in their order: the
    loop over the keys unrolled once (a statement each: a JSON listing
    spends most of its time here). A field is computed as the row computes
    it (read straight from the record where it is the record's value: no
    JobInfo call for those); left out when it is an empty string, or, for
    the times, runtime and expiration, zero (unset); the id is an int and
    the dependencies a list."""
    if not _JSON_BUILDER:
        lines = ["def fields(info):", "    get = info.rec.get", "    out = {}"]
        computes = {}
        for n, key in enumerate(_JSON_DEFAULTS + _JSON_PROPERTIES):
            zero_unset = key.startswith("t_") or key in ("runtime", "expiration")
            if key == "id":
                lines.append("    value = get('id')")  # (int(JobID(id)) is the id)
            elif key not in _PLAIN:
                computes[f"compute{n}"] = _FIELDS[key]
                lines.append(f"    value = compute{n}(info)")
            elif _PLAIN[key] == "time":
                lines.append(f"    value = get({key!r}) or 0.0")
            elif _PLAIN[key] == "nullable":
                lines.append(f"    value = get({key!r})")
                lines.append("    if value is None:")
                lines.append("        value = ''")
            else:
                lines.append(f"    value = get({key!r}, '')")
            if key == "id":
                lines.append(f"    out[{key!r}] = int(value)")
            elif key == "dependencies":
                lines.append(f"    out[{key!r}] = list(value)")
            else:
                lines.append(f"    if value != ''{' and value != 0' if zero_unset else ''}:")
                lines.append(f"        out[{key!r}] = value")
        lines.append("    return out")
        exec(compile("\n".join(lines), "<jobs --json fields>", "exec"), computes)
        _JSON_BUILDER.append(computes["fields"])
    return _JSON_BUILDER[0]


def to_json(info: "JobInfo") -> dict:
    """A job as `flux jobs --json` prints it (flux-core's JobInfo.to_dict):
    only the attributes the job has -- no empty values, no unset timestamps,
    no zero runtime or expiration, so an active job has no result -- and
    the exception as {"occurred": false} when there was none."""
    get = info.rec.get
    out = _json_fields()(info)
    out["jobid"] = f58(get("id"))
    out["annotations"] = dict(get("annotations") or {})  # (the annotations field's)
    exc = _exception(info)
    if exc["occurred"]:
        out["exception"] = {"occurred": exc["occurred"], "severity": exc["severity"], "type": exc["type"],
                            "note": exc["note"]}
    else:
        out["exception"] = {"occurred": False}
    return out


class DependencyList(list):
    """Outstanding dependencies as flux-jobs shows them: comma-separated, a
    begin-time as `begin@HH:MM[:SS]` in local time (with the date when it is
    not the instance's today)."""

    def __init__(self, items, now):
        super().__init__([_dependency_text(d, now) for d in items] if items else ())

    def __str__(self):
        return ",".join(self)

    def __format__(self, spec):
        return format(str(self), spec)


def _dependency_text(desc, now):
    if not desc.startswith("begin-time="):
        return desc
    from datetime import datetime

    try:
        dt = datetime.fromtimestamp(float(desc.partition("=")[2]))
    except (ValueError, OverflowError, OSError):
        return desc
    if dt.date() == datetime.fromtimestamp(now).date():
        text = f"begin@{dt:%H:%M}"
    else:
        text = f"begin@{dt:%b%d-%H:%M}"
    if dt.second:
        text += f":{dt:%S}"
    return text


class _AnnotationDict(Row):
    """An annotation object: printed as JSON (json.dumps' spacing, as
    flux-jobs prints it), and so are the objects within it."""

    __slots__ = ()

    def get(self, key, default=None):
        value = super().get(key, default)
        return _AnnotationDict(value) if type(value) is dict else value

    def __format__(self, spec):
        return format(json.dumps(self) if self else "", spec)


# flux-core's JobInfo emoji: states while active, results once inactive
_STATE_EMOJI = {DEPEND: "\U0001f6d1", PRIORITY: "\U0001f6a6", SCHED: "\U0001f4c5", RUN: "\U0001f3c3",
                CLEANUP: "\U0001f5d1", INACTIVE: "\U0001f480", 1: "\U0001f381"}
_RESULT_EMOJI = {1: ("\U0001f600", ":-)"), 2: ("\U0001f4a9", ":'-("), 4: ("\U0001f4a5", "%-|"),
                 8: ("\u231b", "(-_-)")}


def _encodable(text):
    import sys

    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _state_emoji(state):
    emoji = _STATE_EMOJI.get(state, "")
    return emoji if _encodable(emoji) else STATE_SHORT.get(state, "")


def _result_emoji(result):
    """A result's emoji; an ideographic space for none (a job not inactive)."""
    emoji, alt = _RESULT_EMOJI.get(result, ("\u3000", ""))
    return emoji if _encodable(emoji) else alt


def _status_emoji(state, result):
    return _state_emoji(state) if state != INACTIVE else _result_emoji(result)


def _inactive_reason(info):
    """Why an inactive job ended, worded as flux-core's JobInfo.inactive_reason."""
    import signal

    exc = info["exception"]
    result = info["result"]
    if result == "CANCELED":
        if exc.occurred and exc.type == "cancel" and exc.note:
            return f"Canceled: {exc.note}"
        return "Canceled"
    if result == "TIMEOUT":
        return "Timeout"
    rc = info["returncode"]
    if result == "FAILED":
        if exc.occurred and exc.type != "exec" and exc.severity == 0:
            note = f" note={exc.note}" if exc.note else ""
            return f"Exception: type={exc.type}{note}"
        if isinstance(rc, int) and rc > 128:
            try:
                return signal.strsignal(rc - 128) or f"Signaled {rc - 128}"
            except ValueError:
                return f"Signaled {rc - 128}"
        if rc == 126:
            return "Command invoked cannot execute"
        if rc == 127:
            return "command not found"
        if rc == 128:
            return "Invalid argument to exit"
    return f"Exit {rc}"


def _returncode(rec, result):
    if not rec.get("finished"):
        # no wait status (as flux-core's JobInfo.returncode): canceled before
        # it ran, -128; failed without an exit (an exception, or exec could
        # not run it), 1
        if result == CANCELED:
            return -128
        return 1 if result == FAILED else ""
    status = rec.get("waitstatus") or 0
    if status & 0x7F:
        return -(status & 0x7F)
    return (status >> 8) & 0xFF


def _contextual_info(rec, info, now):
    state = rec["state"]
    if state == PRIORITY:
        return "priority-wait"
    if state == DEPEND:
        return f"depends:{info['dependencies']}"
    if state == SCHED:
        est = (rec.get("annotations") or {}).get("sched", {}).get("t_estimate")
        if est is not None:
            delta = est - now
            return "eta:now" if delta <= 0 else f"eta:{format_fsd(delta)}"
        if rec["urgency"] == 0:
            return "held"
        if rec["priority"] == 0:
            return "priority-hold"
        return ""
    return info["nodelist"]


JOBS = Listing("flux-jobs", FORMATS, HEADINGS, heading_fallback=heading_fallback)
