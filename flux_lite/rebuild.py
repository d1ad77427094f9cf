"""Rebuilding an instance's derived tables from the eventlogs alone.

The ``jobs`` index, the ``timers`` queue and the dependency tables are derived
(flux_lite/schema.py): when one is missing or of an older layout, every job is
replayed from its eventlog (flux_lite/job_manager/replay.py), the timers of
running jobs and of housekeeping are recreated, and, as after a job-manager
restart in Flux, the scheduler is re-synchronised by a reload (hello).
This is instance-level work, above the broker: it drives both sides.
"""

import json
from collections.abc import Iterator

from flux_lite import schema
from flux_lite.formats.jobid import jobid_of_key, kvs_key
from flux_lite.job_manager import dependency
from flux_lite.job_manager.exec import planned_end
from flux_lite.job_manager.index import ensure_counts, write_row
from flux_lite.job_manager.job import RUN
from flux_lite.job_manager.replay import QUARANTINE_KEY, event_time, replay_job
from flux_lite.formats import eventlog
from flux_lite.kvs import EVENTLOG, JSON, PACKED, decode_value
from flux_lite.notices import notice
from flux_lite.sched import loader
from flux_lite.stored import JOB_CHECKS, DamagedError


BATCH = 4000  # KVS rows read at a time (about a thousand jobs)
_JOB_DIR_LEN = len("job.0000.0000.0000.0000")


class JobKeys:
    """One job's keys as read with its batch, through the KVS's own readers
    (get, get_eventlog: the same checks, the same errors as KVS's; an
    eventlog is decoded in one go, a value read twice is parsed once)."""

    __slots__ = ("rows", "_values")

    def __init__(self, rows: dict) -> None:
        self.rows = rows
        self._values: dict = {}

    def get_raw(self, key, default=None):
        row = self.rows.get(key)
        if row is None:
            return default
        return row if row[0] not in PACKED else decode_value(key, *row)

    def get(self, key, default=None):
        """KVS.get: every key here is in one job's directory, so its check
        is the one stored.JOB_CHECKS has for its name."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            row = self.get_raw(key)
            if row is None:
                return default
            check = JOB_CHECKS.get(key[_JOB_DIR_LEN + 1:])
            kind, text = row
            if kind != JSON:
                if check is not None:
                    raise DamagedError(key, f"holds an {kind}, not a JSON value")
                value = text
            else:
                try:
                    value = json.loads(text)
                except (ValueError, RecursionError):
                    raise DamagedError(key, "not valid JSON") from None
                if check is not None:
                    try:
                        check(value)
                    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
                        raise DamagedError(key, str(exc) or type(exc).__name__) from None
            self._values[key] = value
        return value

    def get_eventlog(self, key):
        row = self.get_raw(key)
        if row is None:
            return None
        kind, text = row
        if kind != EVENTLOG:
            raise DamagedError(key, "not an eventlog")
        try:
            return eventlog.decode_all(text)
        except (ValueError, RecursionError) as exc:
            raise DamagedError(key, str(exc)) from None


_MISSING = object()


def job_dirs(kvs, batch: int = BATCH, start: int | None = None, stop: int | None = None
             ) -> Iterator[tuple[int, JobKeys]]:
    """(jobid, its keys) of every job that has an eventlog, in id order
    (start <= jobid < stop, when given), read BATCH rows at a time: a
    rebuild or an fsck holds a batch of jobs, never all of them. (Each
    batch is read whole before it is used, so what the caller writes
    meanwhile cannot disturb the reading.)"""
    kvs.flush()
    conn = kvs.conn
    # (a job's keys sort after its directory's name, before the next one's)
    low = "job." if start is None else kvs_key(start)
    high = "job/" if stop is None else kvs_key(stop)
    while True:
        rows = conn.execute("SELECT key, kind, value FROM kvs WHERE key > ? AND key < ? ORDER BY key LIMIT ?",
                            (low, high, batch)).fetchall()
        if not rows:
            return
        last = rows[-1][0][:_JOB_DIR_LEN]
        if len(rows) == batch:
            # the last directory may go on in the next batch: it starts it
            cut = len(rows)
            while cut and rows[cut - 1][0][:_JOB_DIR_LEN] == last:
                cut -= 1
            if cut == 0:  # one directory fills the batch: read it whole
                rows = conn.execute("SELECT key, kind, value FROM kvs WHERE key > ? AND key < ? ORDER BY key",
                                    (last, last + "/")).fetchall()
                low = last + "/"
            else:
                rows = rows[:cut]
                low = rows[-1][0]
        else:
            low = None
        yield from _groups(rows)
        if low is None:
            return


def _groups(rows):
    group: dict = {}
    jobdir = None
    for key, kind, value in rows:
        d = key[:_JOB_DIR_LEN]
        if d != jobdir:
            if group:
                yield from _job_of(jobdir, group)
            group = {}
            jobdir = d
        group[key] = (kind, value)
    if group:
        yield from _job_of(jobdir, group)


def _job_of(jobdir, group):
    key = jobdir + ".eventlog"
    if key in group:
        jobid = jobid_of_key(key)
        if jobid is not None and key.count(".") == 5:
            yield jobid, JobKeys(group)


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
    for jobid, keys in job_dirs(kvs):
        try:
            job = replay_job(keys, jobid)
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
            start = event_time(keys, jobid, "start")
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
