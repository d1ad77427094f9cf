"""Checks used while waiting on jobs (wait-event, run, submit --wait-event)."""

import json

from flux_lite import access
from flux_lite.formats.jobid import f58, kvs_key


def _matches(entry, match):
    if match is None:
        return True
    key, _, want = match.partition("=")
    ctx = entry.get("context") or {}
    if key not in ctx:
        return False
    value = ctx[key]
    if isinstance(value, str) and value == want:
        return True
    return json.dumps(value, separators=(",", ":")) == want


def readable_eventlog(broker, jobid):
    """A job's eventlog entries (None if there is no such job), for a
    requester who may watch it: job-info's eventlog watch serves the job's
    owner and the instance owner. Damage is DamagedError naming the key."""
    entries = broker.kvs.get_eventlog(kvs_key(jobid, "eventlog"))
    userid = (entries[0].get("context") or {}).get("userid") if entries else None
    if isinstance(userid, int):
        access.require_job_access(broker.instance.identity, userid)
    return entries


def event_matcher(broker, jobid, name, match=None, count=1):
    """None while waiting; (entries, entry) once found; an error string if it never can be."""
    entries = readable_eventlog(broker, jobid)
    if entries is None:
        return f"job {f58(jobid)} not found"
    seen = 0
    for i, entry in enumerate(entries):
        if entry["name"] == name and _matches(entry, match):
            seen += 1
            if seen == count:
                return entries[: i + 1], entry
    if entries and entries[-1]["name"] == "clean":
        return f"event '{name}' never received"
    return None


def inactive(broker, jobid):
    """The job once it is INACTIVE, else None."""
    job = broker.jm.load_any(jobid)
    if job is None:
        return f"job {f58(jobid)} not found"
    return job if job.state == 64 else None
