"""The job manager's own job list (flux-core's job-manager.list request),
which flux-core's test programs read (`t/job-manager/list-jobs`).

Unlike job-list's listings it shows the job manager's view: the jobs
awaiting an alloc request first (the alloc queue's order: priority, then
id), then the other active jobs, then the zombies (waitable jobs that went
inactive and were not waited on yet). Flux lists the second group in its
hash table's order; flux-lite in id order.
"""

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
