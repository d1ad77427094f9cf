"""What the job manager tells of its jobs: its own job list (flux-core's
job-manager.list request, which flux-core's test program `list-jobs`
reads), and one job's attributes (job-manager.getattr).

Unlike job-list's listings it shows the job manager's view: the jobs
awaiting an alloc request first (the alloc queue's order: priority, then
id), then the other active jobs, then the zombies (waitable jobs that went
inactive and were not waited on yet). Flux lists the second group in its
hash table's order; flux-lite in id order.
"""

import copy
import errno

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import kvs_key
from flux_lite.job_manager import index
from flux_lite.job_manager.job import ACTIVE, SCHED, Job


def _entry(job: Job) -> dict:
    entry = {"id": job.id, "userid": job.userid if job.userid is not None else -1, "urgency": job.urgency,
             "priority": job.priority if job.priority is not None else -1,  # (none yet: Flux's -1)
             "t_submit": float(job.t_submit), "state": job.state}
    if job.annotations:
        entry["annotations"] = job.annotations
    if job.dependencies:
        entry["dependencies"] = list(job.dependencies)
    return entry


def list_jobs(broker, max_entries: int) -> list[dict]:
    """The job manager's jobs, at most max_entries active ones (0: all),
    and every zombie."""
    jobs = broker.jm.index.active_in(ACTIVE)
    queued = sorted((j for j in jobs if j.state == SCHED and j.priority and not j.alloc_pending),
                    key=lambda j: (-j.priority, j.id))
    seen = {j.id for j in queued}
    active = queued + [j for j in jobs if j.id not in seen]
    if max_entries:
        active = active[:max_entries]
    out = [_entry(j) for j in active]
    conn = broker.kvs.conn
    for (jobid,) in conn.execute("SELECT id FROM waitable ORDER BY id").fetchall():
        rec = index.record(conn, jobid)
        if rec is not None:
            job = index.job_from_record(rec)
            if not job.state & ACTIVE:
                out.append(_entry(job))
    return out


def job_attrs(broker, jobid: int, attrs: list) -> dict:
    """job-manager.getattr: a job's redacted jobspec (its environment left
    out), R (the job manager's, without the scheduler's part) and eventlog,
    as asked; FluxLiteError with the job manager's words and errnos."""
    job = broker.jm.index.load_any(jobid)
    if job is None:
        raise FluxLiteError("unknown job", errno=errno.EINVAL)
    access.require_job_access(broker.instance.identity, job.userid, "guests can only access their own jobs")
    out: dict = {}
    for key in attrs:
        if not isinstance(key, str):
            raise FluxLiteError("attribute list contains non-string", errno=errno.EPROTO)
        if key == "jobspec":
            if not isinstance(job.jobspec, dict):
                raise FluxLiteError("jobspec is NULL", errno=errno.ENOENT)
            jobspec = copy.deepcopy(job.jobspec)
            system = (jobspec.get("attributes") or {}).get("system")
            if isinstance(system, dict):
                system.pop("environment", None)
            out[key] = jobspec
        elif key == "R":
            if not job.R:
                raise FluxLiteError("R is NULL", errno=errno.ENOENT)
            out[key] = job.R
        elif key == "eventlog":
            # (an event without context has none, as the job manager keeps it)
            out[key] = [{k: v for k, v in e.items() if k != "context" or v}
                        for e in broker.kvs.get_eventlog(kvs_key(jobid, "eventlog")) or []]
        else:
            raise FluxLiteError(f"unknown attr {key}", errno=errno.ENOENT)
    return out
