"""Rebuilding the job manager's view from the eventlogs alone (restart replay).

The ``jobs`` index and the ``timers`` queue are derived: when either is
missing, every job is replayed from ``job.<id>.eventlog`` (with its jobspec
and R read back from the KVS), and the timers of running jobs and housekeeping
are recreated.
"""

from flux_lite.job_manager.job import RUN, Job


def job_ids(kvs):
    from flux_lite.stored import jobid_of_key

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
    from flux_lite.formats.jobid import kvs_key

    from flux_lite.stored import DamagedError, check_job_events

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


def rebuild(broker):
    """Recreate the derived tables from the eventlogs (inside the caller's transaction)."""
    from flux_lite.instance import TABLES
    from flux_lite.job_manager.index import write_row

    kvs = broker.kvs
    # recreate them whole: an older layout may lack columns
    from flux_lite.job_manager import index

    for table in (index.TABLE, "timers", "waitable", "depends", "job_names"):
        kvs.conn.execute(f"DROP TABLE IF EXISTS {table}")
    for stmt in TABLES.split(";"):
        if stmt.strip():
            kvs.conn.execute(stmt)
    broker.reset_timers()
    from flux_lite.instance import notice
    from flux_lite.job_manager.exec import simulated_run_duration
    from flux_lite.job_manager import dependency
    from flux_lite.stored import DamagedError

    bad = {}
    waiting = []  # active jobs with dependencies or a name (dependency tables)
    for jobid in job_ids(kvs):
        try:
            job = replay_job(kvs, jobid)
        except DamagedError as exc:
            # quarantined: reported, left out of the index and of scheduling
            bad[str(jobid)] = exc.message
            notice(f"{exc.message}: job quarantined")
            broker.log("job-manager", "err", f"{exc.message}: job quarantined")
            continue
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
                run_duration = simulated_run_duration(broker, job.jobspec)
            except Exception:
                run_duration = None
            if run_duration:
                broker.add_timer(start + run_duration, "exec.finish", job.id)
            if job.expiration:
                broker.add_timer(job.expiration, "exec.expire", job.id)
    if bad:
        kvs.put(QUARANTINE_KEY, bad)
    elif kvs.exists(QUARANTINE_KEY):
        kvs.delete(QUARANTINE_KEY)
    broker.deps.rebuild(waiting)
    broker.housekeeping.rebuild_timers()
    broker.log("job-manager", "info", "restart: job index and timers rebuilt from eventlogs")
    # as after a job-manager restart, the scheduler is re-synchronised by hello
    from flux_lite.sched import loader

    if loader.loaded_name(broker) is not None:
        loader.module_reload(broker)


def _event_time(kvs, jobid, name):
    from flux_lite.formats.jobid import kvs_key

    for entry in kvs.get_eventlog(kvs_key(jobid, "eventlog")) or []:
        if entry["name"] == name:
            return entry["timestamp"]
    return 0.0
