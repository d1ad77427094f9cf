"""Waitable jobs: `job wait`, as flux-core's job-manager wait service.

A job submitted with the waitable flag (FLUX_JOB_WAITABLE) may be waited on
once: the wait answers with whether the job succeeded and, if not, why (the
first fatal exception, or the decoded wait status of its shells). Jobs still
to be waited on are rows of the ``waitable`` table, added at submit and
removed when a wait reaps them; a wait on a job that is not (or no longer)
there fails with ECHILD, as wait(2) does. As in Flux, purging a job that was
not waited on yet (a zombie) does not reap it: its row keeps the outcome.
"""

import json
from errno import ECHILD

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.job_manager import index

FLAG_WAITABLE = 4
INACTIVE = 64

NO_MORE = "there are no more waitable jobs"
NOT_WAITABLE = "job was not submitted with FLUX_JOB_WAITABLE"
INVALID = "invalid job id, or job may be inactive and not waitable"


def add(kvs, jobid: int) -> None:
    """A waitable job was submitted."""
    kvs.conn.execute("INSERT OR IGNORE INTO waitable(id) VALUES (?)", (jobid,))


def keep_outcomes(kvs, ids) -> None:
    """Jobs about to be purged: a waitable one not yet waited on keeps its
    outcome in its row, so that it can still be waited on (Flux's zombies
    outlive the purge)."""
    conn = kvs.conn
    for jobid in ids:
        if conn.execute("SELECT 1 FROM waitable WHERE id = ?", (jobid,)).fetchone() is None:
            continue
        rec = index.record(conn, jobid)
        if rec is None:
            continue
        conn.execute("UPDATE waitable SET t_inactive = ?, outcome = ? WHERE id = ?",
                     (rec.get("t_inactive"), json.dumps(outcome(rec)), jobid))


def waitstatus_outcome(status: int):
    """(exit code, message) of a wait(2) status, as libjob words it.

    The message is empty for exit code 0. A signaled status means the job
    shell died of it; an exit code above 128 means its tasks did.
    """
    import signal

    def name(signum):
        try:
            return signal.strsignal(signum) or f"Signal {signum}"
        except ValueError:
            return f"Unknown signal {signum}"

    if status & 0x7F:
        signum = status & 0x7F
        return signum + 128, f"job shell {name(signum)}"
    code = (status >> 8) & 0xFF
    if code > 128:
        return code, f"task(s) {name(code - 128)}"
    if code > 0:
        return code, f"task(s) exited with exit code {code}"
    return 0, ""


def outcome(record: dict):
    """(success, errstr) of an inactive job record, from its end event."""
    end = record.get("end_event") or {}
    if end.get("type") == "finish":
        code, text = waitstatus_outcome(end.get("status") or 0)
        return code == 0, text
    if end:
        return False, f"Fatal exception type={end.get('type')} {end.get('note', '')}"
    return False, "job ended without an end event"


def _record(broker, jobid):
    return index.record(broker.kvs.conn, jobid)


def _waitable_row(broker, jobid):
    """(True, stored outcome or None) if jobid may be waited on, else None."""
    row = broker.kvs.conn.execute("SELECT outcome FROM waitable WHERE id = ?", (jobid,)).fetchone()
    return None if row is None else (True, row[0])


def _reap(broker, jobid):
    broker.kvs.conn.execute("DELETE FROM waitable WHERE id = ?", (jobid,))


def _refuse(message):
    raise FluxLiteError(message, errno=ECHILD)


def _check_owner(broker):
    # job-manager.wait is the instance owner's (only the owner may submit waitable jobs)
    access.require_owner(broker.instance.identity, "job wait")


def check_one(broker, jobid: int):
    """One step of `job wait ID`: None while the job runs, else (id, success, errstr).

    Refuses (ECHILD) a job that is unknown, not waitable or already waited on.
    """
    _check_owner(broker)
    broker.flush()  # this command's own changes must be visible
    waitable = _waitable_row(broker, jobid)
    if waitable is None:
        rec = _record(broker, jobid)
        if rec is not None and rec["state"] != INACTIVE and not rec.get("flags", 0) & FLAG_WAITABLE:
            _refuse(NOT_WAITABLE)
        _refuse(INVALID)
    if waitable[1] is not None:  # purged before anyone waited
        _reap(broker, jobid)
        success, errstr = json.loads(waitable[1])
        return jobid, success, errstr
    rec = _record(broker, jobid)
    if rec is None:
        _refuse(INVALID)
    if rec["state"] != INACTIVE:
        return None
    _reap(broker, jobid)
    success, errstr = outcome(rec)
    return jobid, success, errstr


def check_any(broker):
    """One step of `job wait` (any job): None while every waitable job runs,
    else (id, success, errstr) of the first to have ended."""
    _check_owner(broker)
    broker.flush()
    conn = broker.kvs.conn
    if conn.execute("SELECT 1 FROM waitable LIMIT 1").fetchone() is None:
        _refuse(NO_MORE)

    purged = conn.execute("SELECT id, t_inactive, outcome FROM waitable WHERE outcome IS NOT NULL "
                          "ORDER BY t_inactive, id LIMIT 1").fetchone()
    found = index.first_inactive_of(conn, "waitable")
    if purged is not None and (found is None or (purged[1] or 0.0, purged[0]) <
                               (found[1].get("t_inactive") or 0.0, found[0])):
        jobid = purged[0]
        success, errstr = json.loads(purged[2])
    elif found is not None:
        jobid, record = found
        success, errstr = outcome(record)
    else:
        return None
    _reap(broker, jobid)
    return jobid, success, errstr


def pending_count(broker) -> int:
    """Waitable jobs not yet waited on."""
    return broker.kvs.conn.execute("SELECT count(*) FROM waitable").fetchone()[0]
