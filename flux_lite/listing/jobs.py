"""The `jobs` listing: one row per job, with the fields flux-jobs offers.

Values follow flux-core's job-list and the Python JobInfo class: status
abbreviations, contextual time and info (``held``, ``eta:…``, nodelist),
results and return codes.
"""

import json

from flux_lite.job_list import result_of
from flux_lite.job_manager.job import (
    CANCELED, CLEANUP, COMPLETED, DEPEND, FAILED, INACTIVE, PENDING, PRIORITY, RESULT_NAMES, RESULT_SHORT, RUN,
    SCHED, STATE_NAMES,
    STATE_SHORT,
)
from flux_lite.formats.jobid import ENCODINGS
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
    "result_abbrev": "RS", "name": "NAME", "queue": "QUEUE", "project": "PROJECT", "bank": "BANK",
    "ntasks": "NTASKS", "ncores": "NCORES", "nnodes": "NNODES", "ranks": "RANKS",
    "nodelist": "NODELIST", "duration": "DURATION", "expiration": "EXPIRATION",
    "t_submit": "T_SUBMIT", "t_depend": "T_DEPEND", "t_run": "T_RUN", "t_cleanup": "T_CLEANUP",
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
}


def heading_fallback(field):
    """Free-form annotation fields: the heading is the rest of the name, upper-cased
    (`annotations.sched.jobs_ahead` -> SCHED.JOBS_AHEAD), as flux-jobs does."""
    for prefix in ("annotations.", "user."):
        if field.startswith(prefix) and len(field) > len(prefix):
            return field[len(prefix):].upper()
    return None


class JobID(int):
    """An int that formats itself in every Flux encoding (id.f58, id.hex...)."""

    def __getattr__(self, name):
        from flux_lite.formats import jobid

        if name not in ENCODINGS:
            raise AttributeError(name)
        # listings print emoji ids as f58, which every terminal can show
        return jobid.encode(int(self), "f58" if name == "emoji" else name)

    def __format__(self, spec):
        return format(self.f58, spec)

    def __str__(self):
        return self.f58


def make_info(rec, now, username):
    state = rec["state"]
    info = Row()
    info["id"] = JobID(rec["id"])
    info["userid"] = rec["userid"]
    info["username"] = username(rec["userid"])
    info["user"] = info["username"]
    info["urgency"] = rec["urgency"]
    info["priority"] = rec["priority"] if rec["priority"] is not None else ""
    info["state"] = STATE_NAMES.get(state, "")
    info["state_single"] = STATE_SHORT.get(state, "")
    js = rec.get("jobspec") or {}
    system = js.get("attributes", {}).get("system", {}) if isinstance(js, dict) else {}
    info["name"] = rec.get("name", "")
    info["queue"] = system.get("queue", "") or ""
    info["project"] = system.get("project", "") or ""
    info["bank"] = system.get("bank", "") or ""
    info["ntasks"] = rec.get("ntasks", "")
    info["nnodes"] = rec.get("nnodes", "")
    info["ncores"] = rec.get("ncores", "")
    info["ranks"] = _bracketed(rec.get("ranks", ""))
    info["nodelist"] = rec.get("nodelist", "")
    duration = system.get("duration", 0)
    info["duration"] = float(duration) if duration is not None else 0.0
    R = rec.get("R") or {}
    execution = R.get("execution", {}) if R else {}
    expiration = execution.get("expiration", 0.0) or 0.0
    info["expiration"] = expiration
    info["cwd"] = system.get("cwd", "") if isinstance(system.get("cwd"), str) else ""
    for key in ("t_submit", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive"):
        info[key] = rec.get(key) or 0.0
    t_run = info["t_run"]
    if t_run:
        end = info["t_cleanup"] or now
        runtime = max(end - t_run, 0.0)
    else:
        runtime = 0.0
    info["runtime"] = runtime
    if state == RUN and expiration:
        info["t_remaining"] = max(expiration - now, 0.0)
    else:
        info["t_remaining"] = 0.0
    result = result_of(rec)
    if state == INACTIVE:
        info["result"] = RESULT_NAMES.get(result, "")
        info["result_abbrev"] = RESULT_SHORT.get(result, "")
        info["status"] = info["result"]
        info["status_abbrev"] = info["result_abbrev"]
        info["success"] = result == COMPLETED
    else:
        info["result"] = ""
        info["result_abbrev"] = ""
        info["status"] = info["state"]
        info["status_abbrev"] = info["state_single"]
        info["success"] = ""
    info["returncode"] = _returncode(rec, result) if state == INACTIVE else ""
    info["waitstatus"] = rec.get("waitstatus") if rec.get("waitstatus") is not None else ""
    exc = rec.get("exception")
    info["exception"] = Row(
        # job-list tells whether an exception occurred only once the job is
        # inactive: empty before
        occurred=(exc is not None) if state == INACTIVE else "",
        severity=exc["severity"] if exc and state == INACTIVE else "",
        type=exc["type"] if exc and state == INACTIVE else "",
        note=exc["note"] if exc and state == INACTIVE else "",
    )
    ann = rec.get("annotations") or {}
    info["annotations"] = _AnnotationDict(ann)
    info["sched"] = _AnnotationDict(ann.get("sched", {}))
    info["dependencies"] = DependencyList(rec.get("dependencies") or (), now)
    info["status_emoji"] = _status_emoji(state, result)
    info["inactive_reason"] = _inactive_reason(info) if state == INACTIVE else ""
    if state & PENDING:
        info["contextual_time"] = info["duration"]
    else:
        info["contextual_time"] = runtime
    info["contextual_info"] = _contextual_info(rec, info, now)
    return info


def _bracketed(ranks):
    """job-list encodes a job's ranks as an idset in brackets when it has more
    than one (`[0-1]`, `[0,3]`), a single rank bare."""
    ranks = str(ranks)
    return f"[{ranks}]" if ("," in ranks or "-" in ranks) and not ranks.startswith("[") else ranks


# JobInfo.to_dict's attributes, in its order: the defaults, then the other properties
_JSON_DEFAULTS = ("t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive", "duration",
                  "expiration", "name", "cwd", "queue", "project", "bank", "ntasks", "ncores", "nnodes",
                  "priority", "ranks", "nodelist", "success", "result", "waitstatus")
_JSON_PROPERTIES = ("id", "t_submit", "t_remaining", "state", "result", "username", "userid", "urgency",
                    "runtime", "status", "returncode", "dependencies")


def to_json(info: Row) -> dict:
    """A job as `flux jobs --json` prints it (flux-core's JobInfo.to_dict):
    only the attributes the job has -- no empty values, no unset timestamps,
    no zero runtime or expiration, so an active job has no result -- and
    the exception as {"occurred": false} when there was none."""
    from flux_lite.formats.jobid import f58

    out: dict = {}
    for key in _JSON_DEFAULTS + _JSON_PROPERTIES:
        value = info.get(key, "")
        if key == "id":
            value = int(value)
        elif key == "dependencies":
            value = list(value)
        out[key] = value
    out["jobid"] = f58(int(info["id"]))
    out["annotations"] = dict(info.get("annotations") or {})
    exc = info["exception"]
    out["exception"] = {"occurred": exc.occurred, "severity": exc.severity, "type": exc.type, "note": exc.note}
    for key in list(out):
        value = out[key]
        unset = (key.startswith("t_") or key in ("runtime", "expiration")) and value == 0
        if (isinstance(value, str) and value == "") or unset:
            del out[key]
    if not out["exception"]["occurred"]:
        out["exception"] = {"occurred": False}
    return out


class DependencyList(list):
    """Outstanding dependencies as flux-jobs shows them: comma-separated, a
    begin-time as `begin@HH:MM[:SS]` in local time (with the date when it is
    not the instance's today)."""

    def __init__(self, items, now):
        super().__init__(_dependency_text(d, now) for d in items)

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
    def __format__(self, spec):
        return format(json.dumps(self, separators=(",", ":")) if self else "", spec)


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


def _status_emoji(state, result):
    if state != INACTIVE:
        emoji = _STATE_EMOJI.get(state, "")
        return emoji if _encodable(emoji) else STATE_SHORT.get(state, "")
    emoji, alt = _RESULT_EMOJI.get(result, ("\u3000", ""))
    return emoji if _encodable(emoji) else alt


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
    from flux_lite.formats.fsd import format_fsd

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
