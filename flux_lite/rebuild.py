"""Rebuilding an instance's derived tables from the eventlogs alone.

The ``jobs`` index, the ``timers`` queue and the dependency tables are derived
(flux_lite/schema.py): when one is missing or of an older layout, every job is
replayed from its eventlog (flux_lite/job_manager/replay.py), the timers of
running jobs and of housekeeping are recreated, and, as after a job-manager
restart in Flux, the scheduler is re-synchronised by a reload (hello).
This is instance-level work, above the broker: it drives both sides.
"""

from flux_lite import schema
from flux_lite.job_manager import dependency
from flux_lite.job_manager.exec import planned_end
from flux_lite.job_manager.index import ensure_counts, write_row
from flux_lite.job_manager.job import RUN
from flux_lite.job_manager.replay import QUARANTINE_KEY, event_time, job_ids, replay_job
from flux_lite.notices import notice
from flux_lite.sched import loader
from flux_lite.stored import DamagedError


def rebuild(broker):
    """Recreate the derived tables from the eventlogs (inside the caller's transaction)."""
    kvs = broker.kvs
    # recreate them whole: an older layout may lack columns
    for table in schema.REBUILT:
        kvs.conn.execute(f"DROP TABLE IF EXISTS {table}")
    for stmt in schema.TABLES.split(";"):
        if stmt.strip():
            kvs.conn.execute(stmt)
    broker.reset_timers()
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
            start = event_time(kvs, jobid, "start")
            try:
                run_duration, plan = planned_end(broker, job)
            except Exception:
                run_duration, plan = None, None
            if plan is not None:
                # an emulated job: its later output, then its end
                for off in sorted({o[0] for o in plan.output if 0.0 < o[0] < plan.duration}):
                    if start + off > broker.now:
                        broker.add_timer(start + off, "exec.output", job.id, off)
                if run_duration is not None:
                    broker.add_timer(start + run_duration, "exec.finish", job.id)
            elif run_duration:
                broker.add_timer(start + run_duration, "exec.finish", job.id)
            if job.expiration:
                broker.add_timer(job.expiration, "exec.expire", job.id)
    ensure_counts(kvs.conn)  # (the inactive counts, from the rows just written)
    if bad:
        kvs.put(QUARANTINE_KEY, bad)
    elif kvs.exists(QUARANTINE_KEY):
        kvs.delete(QUARANTINE_KEY)
    broker.deps.rebuild(waiting)
    broker.housekeeping.rebuild_timers()
    broker.log("job-manager", "info", "restart: job index and timers rebuilt from eventlogs")
    # as after a job-manager restart, the scheduler is re-synchronised by hello
    if loader.loaded_name(broker) is not None:
        loader.module_reload(broker)
