"""A job as its eventlog says it is (Flux's restart.c): each job replayed from
``job.<id>.eventlog``, with its jobspec and R read back from the KVS.

The instance-level rebuild of every derived table from these replays is
flux_lite/rebuild.py (it also reloads the scheduler, a higher layer).
"""

from flux_lite.formats.jobid import jobid_of_key, kvs_key
from flux_lite.job_manager.job import Job
from flux_lite.stored import DamagedError, check_job_events


def job_ids(kvs):
    ids = set()
    for key in kvs.keys_under("job"):
        parts = key.split(".")
        if len(parts) == 6 and parts[5] == "eventlog":
            jobid = jobid_of_key(key)
            if jobid is not None:
                ids.add(jobid)
    return sorted(ids)


def replay_job(kvs, jobid):
    """The job as its eventlog, jobspec and R say it is."""
    key = kvs_key(jobid)
    entries = kvs.get_eventlog(key + ".eventlog")
    if entries is None:
        return None
    try:
        check_job_events(entries)
    except (ValueError, TypeError) as exc:
        raise DamagedError(key + ".eventlog", str(exc)) from None
    jobspec = kvs.get(key + ".jobspec")
    R = kvs.get(key + ".R")
    try:
        return Job.replay(jobid, entries, jobspec=jobspec, R=R)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DamagedError(key + ".eventlog", f"cannot be replayed: {exc}") from None


QUARANTINE_KEY = "job-manager.quarantine"


def quarantined(kvs):
    """{jobid: reason} of the jobs the last rebuild left out."""
    raw = kvs.get(QUARANTINE_KEY) or {}
    return {int(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}


def event_time(kvs, jobid, name):
    """The timestamp of a job's first event called name (0.0 if none)."""
    for entry in kvs.get_eventlog(kvs_key(jobid, "eventlog")) or []:
        if entry["name"] == name:
            return entry["timestamp"]
    return 0.0
