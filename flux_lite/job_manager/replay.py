"""Rebuilding the job manager's view from the eventlogs alone (restart replay).

The ``jobs`` index and the ``timers`` queue are derived: when either is
missing, every job is replayed from ``job.<id>.eventlog`` (with its jobspec
and R read back from the KVS), and the timers of running jobs and housekeeping
are recreated.
"""

from flux_lite.formats import eventlog
from flux_lite.job_manager.job import RUN, Job


def job_ids(kvs):
    ids = set()
    for key in kvs.keys_under("job"):
        parts = key.split(".")
        if len(parts) >= 6 and parts[5] == "eventlog" and len(parts) == 6:
            ids.add(int("".join(parts[1:5]), 16))
    return sorted(ids)


def replay_job(kvs, jobid):
    """The job as its eventlog, jobspec and R say it is."""
    from flux_lite.formats.jobid import kvs_key

    key = kvs_key(jobid)
    text = kvs.get(key + ".eventlog")
    if text is None:
        return None
    jobspec = kvs.get(key + ".jobspec")
    R = kvs.get(key + ".R")
    return Job.replay(jobid, eventlog.decode(text), jobspec=jobspec, R=R)


def rebuild(broker):
    """Recreate the derived tables from the eventlogs (inside the caller's transaction)."""
    from flux_lite.instance import TABLES
    from flux_lite.job_manager.index import write_row

    kvs = broker.kvs
    # recreate them whole: an older layout may lack columns
    for table in ("jobs", "timers", "waitable", "depends", "job_names"):
        kvs.conn.execute(f"DROP TABLE IF EXISTS {table}")
    for stmt in TABLES.split(";"):
        if stmt.strip():
            kvs.conn.execute(stmt)
    broker.reset_timers()
    from flux_lite.formats import jobspec as jobspecmod

    from flux_lite.job_manager import dependency

    waiting = []  # active jobs with dependencies or a name (dependency tables)
    for jobid in job_ids(kvs):
        job = replay_job(kvs, jobid)
        if job is None:
            continue
        write_row(kvs.conn, job)
        if job.active and job.flags & 4:
            # still waitable; an inactive job's waiter is gone with the
            # restart, as Flux's zombies are
            kvs.conn.execute("INSERT INTO waitable(id) VALUES (?)", (job.id,))
        if job.active and dependency.tracked(job):
            waiting.append(job)
        if job.state == RUN and job.started and not job.finished:
            start = _event_time(kvs, jobid, "start")
            try:
                run_duration = jobspecmod.run_duration(job.jobspec or {})
            except Exception:
                run_duration = None
            if run_duration:
                broker.add_timer(start + run_duration, "exec.finish", job.id)
            if job.expiration:
                broker.add_timer(job.expiration, "exec.expire", job.id)
    broker.deps.rebuild(waiting)
    broker.housekeeping.rebuild_timers()
    broker.log("job-manager", "info", "restart: job index and timers rebuilt from eventlogs")
    # as after a job-manager restart, the scheduler is re-synchronised by hello
    from flux_lite.sched import loader

    if loader.loaded_name(broker) is not None:
        loader.module_reload(broker)


def _event_time(kvs, jobid, name):
    from flux_lite.formats.jobid import kvs_key

    for entry in eventlog.decode(kvs.get(kvs_key(jobid, "eventlog"))):
        if entry["name"] == name:
            return entry["timestamp"]
    return 0.0
