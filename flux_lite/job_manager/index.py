"""The job index: the ``jobs`` table, its rows, and every query on it.

This is the only module that knows how jobs are stored (flux-core keeps its
active jobs in a hash and its inactive ones in job-list; flux-lite keeps both
in one SQLite table, rebuilt from the eventlogs when missing). A row holds a
few columns that queries filter or sort on, the whole record as JSON
(``data``), and what `jobs` lists of it (``listing``: see listing_text).
Everything that reads or writes job rows goes through here:
:class:`JobIndex` for the job manager's working set of active jobs, and the
query functions below for everyone else (purge, history, stats, wait,
listings). Changing how jobs are stored means changing this file.
"""

from __future__ import annotations

import json
import json.scanner as jsonscanner
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from errno import ENOENT
from itertools import islice
from operator import attrgetter, itemgetter
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats import jj, jsontext
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset, compact_R, one_entry_text
from flux_lite.job_manager.job import ACTIVE, CLEANUP, INACTIVE, PENDING, RESULT_NAMES, RUN, RUNNING, STATE_NAMES, Job
from flux_lite.notices import notice
from flux_lite.stored import check_R, decode_row, good_rows, pack_row, row_text

TABLE = "jobs"
SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id         INTEGER PRIMARY KEY,
    userid     INTEGER NOT NULL,
    state      INTEGER NOT NULL,
    priority   INTEGER,
    t_submit   REAL,
    t_run      REAL,
    t_inactive REAL,
    has_resources INTEGER NOT NULL DEFAULT 0,
    R          TEXT,
    result     INTEGER,
    alloc_pending INTEGER NOT NULL DEFAULT 0,
    data       TEXT NOT NULL,
    listing    TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_inactive ON jobs(state, t_inactive, id);
CREATE INDEX IF NOT EXISTS jobs_user ON jobs(userid, id);
CREATE INDEX IF NOT EXISTS jobs_result ON jobs(state, result);
CREATE INDEX IF NOT EXISTS jobs_allocq ON jobs(state, alloc_pending, priority, id);
CREATE INDEX IF NOT EXISTS jobs_holding ON jobs(id, state, priority, userid, t_submit, R) WHERE has_resources = 1;
"""
# the table and indexes above, for the derived-table check
NAMES = {"jobs", "jobs_state", "jobs_inactive", "jobs_user", "jobs_result", "jobs_allocq"}
# hello's covering index: what it reads of the jobs holding resources, in id
# order, without visiting their rows. Not in NAMES: a state dir from before it
# gains it (ensure_holding_index) instead of rebuilding its tables.
HOLDING_INDEX = "jobs_holding"

# attributes kept in the record, besides the job's id
RECORD_SLOTS = (
    "userid", "urgency", "priority", "t_submit", "state", "flags", "jobspec", "R",
    "has_resources", "alloc_pending", "annotations", "end_event", "exception",
    "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive", "waitstatus", "started",
    "finished", "released", "freed", "immutable", "set_flags", "nevents", "dependencies",
)

Record = dict[str, Any]


# -- record <-> job <-> row ----------------------------------------------------------


_RECORD_GET = attrgetter(*RECORD_SLOTS, "id")
_RECORD_KEYS = (*RECORD_SLOTS, "id")


def job_to_record(job: Job) -> Record:
    return dict(zip(_RECORD_KEYS, _RECORD_GET(job)))


def job_from_record(rec: Record) -> Job:
    job = Job(rec["id"])
    for slot in RECORD_SLOTS:
        setattr(job, slot, rec.get(slot, getattr(job, slot, None)))
    return job


_LISTING_CACHE: dict[int, tuple[Any, Any, dict]] = {}
# jobs whose listing fields are kept (a command that writes 100,000 rows
# holds this many, not all of them)
LISTING_CACHE_SIZE = 4096


def listing_fields(job: Job) -> dict[str, Any]:
    """Values `jobs` shows that are costly to derive at listing time.

    Cached per job while its jobspec and R objects stay the same (updates
    replace them, so identity is a safe key).
    """
    hit = _LISTING_CACHE.get(job.id)
    if hit is not None and hit[0] is job.jobspec and hit[1] is job.R:
        return hit[2]
    out = _listing_fields(job)
    if len(_LISTING_CACHE) >= LISTING_CACHE_SIZE:
        _LISTING_CACHE.clear()
    _LISTING_CACHE[job.id] = (job.jobspec, job.R, out)  # holding them keeps identity meaningful
    return out


_JOBSPEC_BY_ID: dict[int, tuple[dict, tuple[str, Any, Any, Any]]] = {}


def _jobspec_fields(js: dict) -> tuple[str, Any, Any, Any]:
    """(name, ntasks, nnodes requested, ncores) as `jobs` shows them before R,
    cached for the jobs of one submission (copies share their jobspec object)."""
    hit = _JOBSPEC_BY_ID.get(id(js))
    if hit is not None and hit[0] is js:
        return hit[1]
    out = _jobspec_fields_of(js)
    if len(_JOBSPEC_BY_ID) > 4096:
        _JOBSPEC_BY_ID.clear()
    _JOBSPEC_BY_ID[id(js)] = (js, out)  # holding js keeps its id from being reused
    return out


def _jobspec_fields_of(js: dict) -> tuple[str, Any, Any, Any]:
    try:
        out_name = jj.name(js)
    except Exception:
        out_name = ""
    shape = jj.job_shape(js)
    if shape is not None and "shell" not in shape.system:  # (a shell per-resource option changes ntasks)
        nnodes, nslots, total = shape.nnodes, shape.slot_count, shape.task_total
        if nnodes:
            nslots *= nnodes
        return (out_name, total if total is not None else nslots, nnodes or "",
                "" if nnodes and shape.exclusive else nslots * shape.slot_size)
    try:
        counts = jj.get_counts(js)  # (what the three counts are read from)
    except Exception:
        return out_name, 1, "", ""
    try:
        ntasks = jj.ntasks(js, counts)
    except Exception:
        ntasks = 1
    # job-list's core count from the jobspec (none for whole exclusive nodes)
    ncores = jj.ncores(js, counts)
    return out_name, ntasks, counts["nnodes"] or "", ncores if ncores is not None else ""


def _listing_fields(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {}
    js = job.jobspec or {}
    out["name"], out["ntasks"], nnodes, ncores = _jobspec_fields(js)
    if job.R:
        rs = Rset.from_dict(job.R)
        out["nnodes"] = rs.nnodes
        out["ranks"] = str(rs.ranks)
        out["nodelist"] = rs.nodelist_text()
        out["ncores"] = rs.ncores
    else:
        out["nnodes"] = nnodes
        out["ranks"] = ""
        out["nodelist"] = ""
        out["ncores"] = ncores  # until R is known
    return out


def _state_bits(mask: int) -> list[int]:
    """The single state bits of a mask, lowest first."""
    return [1 << b for b in range(mask.bit_length()) if mask & (1 << b)]


# the states in which a job can hold resources (alloc moves SCHED to RUN)
_HOLDING = RUN | CLEANUP


def _in_states(mask: int) -> str:
    """An SQL condition: the job's state is one of mask's active states
    (`state IN (...)` reads the state indexes' ranges of only those, where
    `state < INACTIVE AND state & mask` would scan every active job's)."""
    return f"state IN ({','.join(map(str, _state_bits(mask & (INACTIVE - 1)))) or 'NULL'})"


# json.dumps(value, separators=(",", ":")), without building an encoder per call
_compact = jsontext.compact
_raw_decode = json.JSONDecoder().raw_decode  # json.loads of compact text: no whitespace to skip


_ROW_COLUMNS = ("id", "userid", "state", "priority", "t_submit", "t_run", "t_inactive", "has_resources", "R",
                "result", "alloc_pending", "data", "listing")
# an upsert, not INSERT OR REPLACE: a REPLACE may delete a row before it
# inserts, so SQLite keeps a statement journal for it, and in a long command
# (a replay) that journal spills to a temporary file that then takes most of
# the command's page writes
_INSERT_ROW = (
    f"INSERT INTO jobs({', '.join(_ROW_COLUMNS)}) VALUES ({', '.join('?' * len(_ROW_COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _ROW_COLUMNS[1:])}")


def write_row(conn: sqlite3.Connection, job: Job) -> None:
    """The job's row. has_resources and R are columns of their own so that
    hello can read them without parsing whole records."""
    conn.execute(_INSERT_ROW, _row(job))


def write_rows(conn: sqlite3.Connection, jobs: Iterable[Job]) -> None:
    """write_row() of each job, a few hundred rows per statement. The row of
    a job gone inactive is deleted first: its record is packed, and SQLite
    merges the pages a delete leaves underfull, never those an update in
    place shrinks (a history would keep the pages its active rows filled).
    A job's first inactive row counts in the inactive counts."""
    rows = map(_row, jobs)
    while True:
        chunk = list(islice(rows, 512))
        if not chunk:
            return
        packed = [row for row in chunk if row[2] == INACTIVE]  # (their records are packed)
        if packed:
            counted = ensure_counts(conn)
            if counted:
                ids = [row[0] for row in packed]
                known = {r[0] for r in conn.execute(
                    f"SELECT id FROM jobs WHERE id IN ({','.join('?' * len(ids))}) AND state = {INACTIVE}", ids)}
            conn.executemany("DELETE FROM jobs WHERE id = ?", [(row[0],) for row in packed])
            if counted:
                new: dict[int | None, int] = {}
                for row in packed:
                    if row[0] not in known:
                        new[row[9]] = new.get(row[9], 0) + 1
                _add_counts(conn, new, 1)
        conn.executemany(_INSERT_ROW, chunk)


# -- the inactive counts: how many inactive jobs, by result ----------------------------
#
# A history of a million jobs is counted without reading a million index
# entries (`jobs --stats-only`, `job purge`'s counts): a small table kept
# with the rows, by write_rows (a job's first inactive row) and delete. It is
# made from the rows when first needed (a state dir from before it, a
# rebuild, a restore of an archive without it); a reader that finds none
# counts the rows.

COUNTS = "inactive_counts"
_COUNTS_SCHEMA = f"CREATE TABLE IF NOT EXISTS {COUNTS} (result INTEGER PRIMARY KEY, n INTEGER NOT NULL)"


def ensure_counts(conn: sqlite3.Connection) -> bool:
    """The counts table, made from the rows if missing (writers call this
    before they change any row; the rebuild once it has written them all)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (COUNTS,)).fetchone():
        return True
    conn.execute(_COUNTS_SCHEMA)
    conn.execute(f"INSERT INTO {COUNTS}(result, n) SELECT coalesce(result, -1), count(*) FROM jobs "
                 f"WHERE state = {INACTIVE} GROUP BY 1")
    return True


def ensure_holding_index(conn: sqlite3.Connection) -> None:
    """Hello's index, made if missing (a state dir from before it: once)."""
    for stmt in SCHEMA.split(";"):
        if HOLDING_INDEX in stmt:
            conn.execute(stmt)


def _add_counts(conn: sqlite3.Connection, by_result: dict, sign: int) -> None:
    if by_result:
        conn.executemany(f"INSERT INTO {COUNTS}(result, n) VALUES (?, ?) "
                         "ON CONFLICT(result) DO UPDATE SET n = n + excluded.n",
                         [(-1 if result is None else result, sign * n) for result, n in by_result.items()])


def _inactive_by_result(conn: sqlite3.Connection) -> list[tuple[int | None, int]] | None:
    """(result, count) of the inactive jobs from the counts table, or None without one."""
    try:
        rows = conn.execute(f"SELECT result, n FROM {COUNTS} WHERE n != 0").fetchall()
    except sqlite3.OperationalError:
        return None  # (no table: a read-only command on a state dir from before it)
    return [(None if result == -1 else result, n) for result, n in rows]


def _row(job: Job) -> tuple:
    rec = job_to_record(job)
    rec.update(listing_fields(job))
    # the jobspec and R, the bulk of a record, are encoded once: the jobspec
    # as submit stored it (while it is still the job's), R once for both places
    js, R = rec.pop("jobspec"), rec.pop("R")
    text = job.jobspec_text
    js_text = text[1] if text is not None and text[0] is js else _compact(js)
    R_text = compact_R(R)
    data = '{"jobspec":' + js_text + ',"R":' + R_text + "," + _compact(rec)[1:]
    listing = _compact(_listing_values(rec, js, R))
    if job.state == INACTIVE:
        data = pack_row(data)  # final, and read rarely: packed (see stored.pack)
    return (job.id, job.userid, job.state, job.priority, job.t_submit, job.t_run, job.t_inactive,
            1 if job.has_resources else 0, R_text if job.has_resources and R else None, job.result,
            1 if job.alloc_pending else 0, data, listing)


# -- the listing column: what `jobs` shows of a record --------------------------------

# the record's keys `jobs` reads, besides those the row has as columns
# (LISTING_COLUMNS); stored as a JSON array in this order, then the jobspec's
# attributes.system (only the keys in LISTING_SYSTEM) and R's expiration
LISTING_KEYS = ("urgency", "name", "ntasks", "nnodes", "ncores", "ranks", "nodelist", "t_depend", "t_priority",
                "t_sched", "t_cleanup", "finished", "waitstatus", "exception", "annotations", "dependencies")
LISTING_COLUMNS = ("id", "userid", "state", "priority", "t_submit", "t_run", "t_inactive")
LISTING_SYSTEM = ("queue", "project", "bank", "duration", "cwd")
_LISTING_GET = itemgetter(*LISTING_KEYS)
_T_CLEANUP, _NCORES = LISTING_KEYS.index("t_cleanup"), LISTING_KEYS.index("ncores")


def _listing_values(rec: Record, js: Any, R: Any) -> list:
    attrs = js.get("attributes") if isinstance(js, dict) else None
    system = attrs.get("system") if isinstance(attrs, dict) else None
    system = {k: system[k] for k in LISTING_SYSTEM if k in system} if isinstance(system, dict) else {}
    execution = R.get("execution") if isinstance(R, dict) else None
    expiration = execution.get("expiration") if isinstance(execution, dict) else None
    try:
        values = list(_LISTING_GET(rec))  # (write_row's records have every key)
    except KeyError:
        values = [rec.get(key) for key in LISTING_KEYS]
    values += (system, expiration)
    return values


def listing_text(rec: Record) -> str:
    """The listing column of a whole record (what write_row stores)."""
    return _compact(_listing_values(rec, rec.get("jobspec"), rec.get("R")))


_LISTING_SIZE = len(LISTING_KEYS) + 2
_LISTING_DICTS = tuple(LISTING_KEYS.index(k) for k in ("exception", "annotations"))


def listing_record(row: tuple) -> Record | None:
    """A record with what `jobs` reads of a job (the listing column's keys,
    the row's LISTING_COLUMNS, a jobspec holding only attributes.system and
    an R holding only the expiration) from a row (LISTING_COLUMNS...,
    listing); None when the listing column is missing or damaged."""
    text = row[-1]
    if type(text) is not str or type(row[1]) is not int or type(row[2]) is not int:
        return None  # (the columns are checked too: they were read from the record before)
    for value in row[3:-1]:
        if value is not None and type(value) is not float and type(value) is not int:
            return None
    try:
        values, end = _raw_decode(text)
    except (ValueError, RecursionError):
        return None
    if end != len(text) or type(values) is not list or len(values) != _LISTING_SIZE:
        return None
    system, expiration = values[-2], values[-1]
    if type(system) is not dict:
        return None
    for i in _LISTING_DICTS:
        if values[i] is not None and type(values[i]) is not dict:
            return None
    rec = dict(zip(LISTING_KEYS, values))
    rec.update(zip(LISTING_COLUMNS, row))
    rec["jobspec"] = {"attributes": {"system": system}}
    rec["R"] = {"execution": {"expiration": expiration}}
    return rec


def create(conn: sqlite3.Connection) -> None:
    """Create the table (and its indexes) if missing."""
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def drop(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS jobs")
    conn.execute(f"DROP TABLE IF EXISTS {COUNTS}")


# -- the job manager's working set ---------------------------------------------------


class JobIndex:
    """Active jobs by id, read as they are needed, written back by save().

    A command that touches a few jobs reads only their rows (``get``); the
    whole active set is read only when something needs all of it (``jobs``:
    the alloc queue, bulk operations, listings of the working set). Either
    way each job is one object for the length of the command.

    ``on_load(jobs)`` is called once all the active jobs are loaded (the alloc
    queue is rebuilt from them). Jobs that go inactive during the command
    stay reachable (``load_any``) until the end of it.
    """

    def __init__(self, conn: sqlite3.Connection, on_load: Callable[[dict[int, Job]], None] | None = None) -> None:
        self.conn = conn
        self._on_load = on_load
        self._cache: dict[int, Job] = {}  # active jobs read so far
        self._all = False  # _cache holds every active job
        self._dirty: set[int] = set()
        self._removed: dict[int, Job] = {}
        self._stored_ids: dict[int, int | None] = {}  # any_active: id cursor by state (None: done)
        self._nstate: dict[int, int] = {}  # state -> how many of _cache's jobs are in it
        self._held = 0  # the states (bits) with a nonzero count in _nstate
        # a list to collect outcome_rows' values of each job flush_inactive
        # writes, by id first (a replay's summary), or None
        self.outcomes: list[tuple] | None = None

    @property
    def loaded(self) -> bool:
        """Are all the active jobs loaded?"""
        return self._all

    @property
    def jobs(self) -> dict[int, Job]:
        """Every active job by id (all read on first use)."""
        if not self._all:
            cache = self._cache
            # a damaged row leaves its job out (quarantined), not every other job
            for rec in good_rows(self.conn.execute("SELECT id, data FROM jobs WHERE state < ?", (INACTIVE,))):
                if rec["id"] not in cache and rec["id"] not in self._removed:
                    job = job_from_record(rec)
                    cache[job.id] = job
                    self._count(job.state, 1)
            self._all = True
            if self._on_load is not None:
                self._on_load(cache)
        return self._cache

    def _count(self, state: int, delta: int) -> None:
        nstate = self._nstate
        n = nstate[state] = nstate.get(state, 0) + delta
        self._held = self._held | state if n else self._held & ~state

    def add(self, job: Job) -> None:
        self._cache[job.id] = job
        self._count(job.state, 1)

    def state_changed(self, job: Job, old_state: int) -> None:
        """A job moved from old_state to its state (an event was applied)."""
        if self._cache.get(job.id) is not job:
            return
        nstate, state = self._nstate, job.state
        n = nstate[old_state] = nstate[old_state] - 1
        if not n:
            self._held &= ~old_state
        nstate[state] = nstate.get(state, 0) + 1
        self._held |= state

    def get(self, jobid: int) -> Job | None:
        """An active job, reading only its row; None if unknown, inactive or damaged."""
        job = self._cache.get(jobid)
        if job is not None or self._all or jobid in self._removed:
            return job

        for rec in good_rows(self.conn.execute("SELECT id, data FROM jobs WHERE id = ? AND state < ?",
                                               (jobid, INACTIVE))):
            job = self._cache[jobid] = job_from_record(rec)
            self._count(job.state, 1)
        return job

    def lookup(self, jobid: int) -> Job | None:
        """An active job, or None."""
        return self.get(jobid)

    def require_active(self, jobid: int, unknown: str = "unknown job id", inactive_errno: int = ENOENT) -> Job:
        """The active job, or Flux's refusal: inactive, or unknown (each
        job-manager service words and numbers these its own way)."""
        job = self.get(jobid)
        if job is None:
            if self.load_any(jobid) is not None:
                raise FluxLiteError("job is inactive", errno=inactive_errno)
            raise FluxLiteError(unknown, errno=ENOENT)
        return job

    def load_any(self, jobid: int) -> Job | None:
        """Any job (active or inactive), or None."""
        job = self._cache.get(jobid)
        if job is None:
            job = self._removed.get(jobid)
        if job is not None:
            return job
        rec = record(self.conn, jobid)
        if rec is None:
            return None
        job = job_from_record(rec)
        if job.state < INACTIVE and not self._all:
            self._cache[jobid] = job  # one object per job for the whole command
            self._count(job.state, 1)
        return job

    def changed(self, jobid: int) -> None:
        """The job's row must be rewritten at save()."""
        self._dirty.add(jobid)

    def deactivate(self, job: Job) -> None:
        if self._cache.pop(job.id, None) is not None:
            self._count(job.state, -1)
        self._removed[job.id] = job

    def any_active(self, state_mask: int) -> bool:
        """Is any active job in these states? (without loading them all)"""
        if self._held & state_mask:
            return True
        if self._all:
            return False
        # the rows of jobs read this command may be stale: their objects
        # answer. The rows of the others do not change during the command,
        # so per state a cursor walks the (state, id) index past the ids
        # read so far, a few rows at a time: a job once read stays read.
        cache, removed = self._cache, self._removed
        for state in _state_bits(state_mask & (INACTIVE - 1)):
            cursor, chunk = self._stored_ids.get(state, 0), 4
            while cursor is not None:
                ids = [r[0] for r in self.conn.execute(
                    "SELECT id FROM jobs WHERE state = ? AND id > ? ORDER BY id LIMIT ?", (state, cursor, chunk))]
                found = next((i for i in ids if i not in cache and i not in removed), None)
                if found is not None:
                    self._stored_ids[state] = found - 1
                    return True
                cursor = ids[-1] if len(ids) == chunk else None
                chunk = min(chunk * 4, 1024)
            self._stored_ids[state] = None
        return False

    def active_in(self, state_mask: int) -> list[Job]:
        """The active jobs in these states, by id, reading the rows of only
        those (this command's objects answer for the jobs they hold)."""
        if self._all:
            return sorted((j for j in self._cache.values() if j.state & state_mask), key=lambda j: j.id)
        cache, removed = self._cache, self._removed
        ids = {j.id for j in cache.values() if j.state & state_mask}
        for state in _state_bits(state_mask & (INACTIVE - 1)):
            ids.update(r[0] for r in self.conn.execute("SELECT id FROM jobs WHERE state = ?", (state,))
                       if r[0] not in cache and r[0] not in removed)
        jobs = (self.get(jobid) for jobid in sorted(ids))
        return [j for j in jobs if j is not None and j.state & state_mask]

    def save(self) -> None:
        cache, removed = self._cache, self._removed
        jobs = (cache.get(jobid) or removed.get(jobid) for jobid in self._dirty)
        write_rows(self.conn, (job for job in jobs if job is not None))
        self._dirty.clear()

    def finished_held(self) -> int:
        """How many jobs that went inactive this command are held in memory."""
        return len(self._removed)

    def flush_inactive(self) -> int:
        """Write the rows of the jobs that went inactive, and forget them.

        For a command that runs many jobs through (a trace replay): it then
        holds only its active jobs, and each row is written while what it is
        derived from is still at hand. The rows are final (an inactive job
        never changes), so the queries that trust the rows of jobs this
        command has not read stay right. Returns how many were forgotten.
        """
        dirty = self._dirty
        jobs = [job for jobid, job in self._removed.items() if jobid in dirty]
        write_rows(self.conn, jobs)
        if self.outcomes is not None:
            self.outcomes.extend(map(_outcome, jobs))
        for jobid in self._removed:
            dirty.discard(jobid)
            _LISTING_CACHE.pop(jobid, None)
        count = len(self._removed)
        self._removed.clear()
        return count

    def alloc_counts(self, sched_state: int) -> dict[str, int]:
        """job-manager.alloc-query's counts from the columns (call save()
        first): SCHED jobs with a priority and no request outstanding,
        requests outstanding, jobs holding resources. Each query reads an
        index range, never the pending jobs' rows."""
        conn = self.conn
        queued = self.queue_length(sched_state)
        pending = conn.execute(f"SELECT count(*) FROM jobs WHERE {_in_states(ACTIVE)} AND alloc_pending = 1"
                               ).fetchone()[0]
        running = conn.execute(f"SELECT count(*) FROM jobs WHERE {_in_states(_HOLDING)} AND has_resources = 1"
                               ).fetchone()[0]
        return {"queue_length": queued, "alloc_pending": pending, "running": running}

    def queue_length(self, sched_state: int) -> int:
        """SCHED jobs with a priority and no request outstanding (alloc_counts'
        first count, alone: its running count reads every running job's row)."""
        return self.conn.execute("SELECT count(*) FROM jobs WHERE state = ? AND alloc_pending = 0 AND priority > 0",
                                 (sched_state,)).fetchone()[0]

    def count_active(self, state_mask: int) -> int:
        """Active jobs in these states, from the columns (call save() first)."""
        return self.conn.execute(f"SELECT count(*) FROM jobs WHERE {_in_states(state_mask)}").fetchone()[0]

    def alloc_candidates(self, sched_state: int) -> Iterator[tuple[int, int]]:
        """(id, priority) of the jobs that may await an alloc request (SCHED,
        a priority, none outstanding), best first, from the index's columns:
        read lazily, a priority level at a time and a few rows at a time
        along the (state, alloc_pending, priority, id) index, so the alloc
        queue reads the rows of only those it gets to (limited=N: about N)."""
        conn = self.conn
        above: int | None = None  # the priority level last read
        while True:
            if above is None:
                row = conn.execute("SELECT max(priority) FROM jobs WHERE state = ? AND alloc_pending = 0 "
                                   "AND priority > 0", (sched_state,)).fetchone()
            else:
                row = conn.execute("SELECT max(priority) FROM jobs WHERE state = ? AND alloc_pending = 0 "
                                   "AND priority > 0 AND priority < ?", (sched_state, above)).fetchone()
            if row is None or row[0] is None:
                return
            above = priority = row[0]
            after, chunk = 0, 16
            while True:
                ids = [r[0] for r in conn.execute(
                    "SELECT id FROM jobs WHERE state = ? AND alloc_pending = 0 AND priority = ? AND id > ? "
                    "ORDER BY id LIMIT ?", (sched_state, priority, after, chunk))]
                for jobid in ids:
                    yield jobid, priority
                if len(ids) < chunk:
                    break
                after, chunk = ids[-1], min(chunk * 4, 4096)

    def outstanding_ids(self) -> set[int]:
        """Ids of the active jobs with an alloc request outstanding (this
        command's objects answer for the jobs they hold)."""
        ids = {j.id for j in self._cache.values() if j.alloc_pending}
        if not self._all:
            known = self._cache.keys() | self._removed.keys()
            ids.update(r[0] for r in self.conn.execute(
                f"SELECT id FROM jobs WHERE {_in_states(INACTIVE - 1)} AND alloc_pending = 1") if r[0] not in known)
        return ids

    def held_Rs(self) -> Iterator[dict]:
        """The current R of every active job holding resources, reading only
        the R column of jobs this command has not read (damaged Rs are left
        out, with a notice)."""
        known = self._cache.keys() | self._removed.keys()
        for job in self._cache.values():
            if job.has_resources and job.R:
                yield job.R
        for jobid, R in self.conn.execute(
            f"SELECT id, R FROM jobs WHERE {_in_states(_HOLDING)} AND has_resources = 1 AND R IS NOT NULL"
        ):
            if jobid in known:
                continue
            try:
                R = json.loads(R)

                check_R(R)
            except (ValueError, RecursionError):
                notice(f"job {f58(jobid)}: damaged R in the jobs index: left out "
                       "(rebuild it with 'flux-lite fsck --repair')")
                continue
            yield R

    def holding_resources(self, as_text: bool = False) -> Iterator[tuple[int, int, int, float, dict | str | None]]:
        """(id, priority, userid, t_submit, current R) of every active job
        holding resources, by id, from the index's own columns (call save()
        first). With as_text, an R of the usual shape (rset.one_entry_text)
        comes as its text, checked but not decoded. A damaged R is left out,
        with a notice. A job whose record (the data column) is damaged is
        not: its eventlog says it holds these resources, and its R column
        says which."""
        query = ("SELECT id, priority, userid, t_submit, R FROM jobs {} "
                 f"WHERE {_in_states(_HOLDING)} AND has_resources = 1 ORDER BY id")
        try:
            # (SQLite's planner prefers the state index, then sorts)
            rows = self.conn.execute(query.format(f"INDEXED BY {HOLDING_INDEX}"))
        except sqlite3.OperationalError:
            rows = self.conn.execute(query.format(""))  # (a read-only state dir from before the index)
        for jobid, priority, userid, t_submit, text in rows:
            if as_text and text and one_entry_text(text) is not None:
                yield jobid, priority, userid, t_submit, text
                continue
            try:
                R = _json_value(text) if text else None
                if R is not None:
                    check_R(R)
            except (ValueError, TypeError, RecursionError):
                notice(f"job {f58(jobid)}: damaged R in the jobs index: left out of hello "
                       "(rebuild it with 'flux-lite fsck --repair')")
                continue
            yield jobid, priority, userid, t_submit, R


_scan = jsonscanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # (it takes any decoder)


def _json_value(text: str) -> Any:
    """json.loads(text), calling the decoder's scanner straight when the
    text is one value and nothing else (json.loads' layers cost a third
    of the call, and hello decodes every running job's R)."""
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, TypeError):
        pass
    return json.loads(text)  # (surrounding blanks, or what is wrong)


# -- queries for everyone else ----------------------------------------------------------


LISTING_SELECT = ", ".join(LISTING_COLUMNS) + ", listing"


def listing_records(conn: sqlite3.Connection, rows: Iterable[tuple]) -> Iterator[Record]:
    """listing_record() of each row (read with LISTING_SELECT); a row whose
    listing column is missing or damaged gives its whole record instead
    (the listing shows it the same), and a damaged record is left out with a
    notice, as stored.good_rows does."""
    for row in rows:
        rec = listing_record(row)
        if rec is None:
            data = conn.execute("SELECT data FROM jobs WHERE id = ?", (row[0],)).fetchone()
            rec = next(good_rows([(row[0], data[0])]), None) if data is not None else None
            if rec is None:
                continue
        yield rec


def listed_record(conn: sqlite3.Connection, jobid: int) -> Record | None:
    """What `jobs` reads of one job (see listing_record; the whole record
    when its listing column is damaged), or None; a damaged row is DamagedError."""
    row = conn.execute(f"SELECT {LISTING_SELECT} FROM jobs WHERE id = ?", (jobid,)).fetchone()
    if row is None:
        return None
    rec = listing_record(row)
    return rec if rec is not None else record(conn, jobid)


def record(conn: sqlite3.Connection, jobid: int) -> Record | None:
    """One job's record (active or inactive), or None; a damaged row is DamagedError."""
    row = conn.execute("SELECT data FROM jobs WHERE id = ?", (jobid,)).fetchone()
    if row is None:
        return None

    return decode_row(jobid, row[0])


Decoder = Callable[[Iterable[tuple]], Iterator[Record]]


def _good_rows(rows: Iterable[tuple[int, str]]) -> Iterator[Record]:
    return good_rows(rows)


def _user_clause(userid: int | None) -> str:
    # +userid: filter rows, never pick the (userid, id) index for this, which
    # would walk the user's whole history to find a few active jobs
    return "" if userid is None else " AND +userid = %d" % int(userid)


def active_records_ordered(conn: sqlite3.Connection, state_mask: int, userid: int | None = None,
                           decode: Decoder | None = None, columns: str = "id, data") -> Iterator[Record]:
    """Records of the active jobs in state_mask (of userid's only), in
    job-list's order: pending by priority, then running by start, newest
    first. Sorted in SQL on the ids alone (sorting whole records would copy
    every one), then read one by one: only what the caller consumes is decoded
    (by `decode`, rows of `columns` -> records; default: stored.good_rows)."""
    decode = decode or _good_rows
    # the user is checked on the rows read for decoding, not in the sort:
    # there it would read every job's row, where the ids come from an index
    user_clause = _user_clause(userid)
    for mask, key in ((PENDING, "COALESCE(priority, 0)"), (RUNNING, "COALESCE(t_run, 0)")):
        if state_mask & mask:
            yield from decode(_rows_by_id(conn, _ids_by_key_desc(conn, state_mask & mask, key), user_clause,
                                          columns))


def _ids_by_key_desc(conn: sqlite3.Connection, state_mask: int, key: str) -> Iterator[int]:
    """Ids of the jobs in state_mask by key descending, then id: read in
    chunks that grow (a top-N sort each, past the last (key, id) read), so
    that a caller stopping after a page does not sort and read every id."""
    where = _in_states(state_mask)
    after: tuple | None = None
    chunk = 2048
    while True:
        if after is None:
            rows = conn.execute(f"SELECT -{key}, id FROM jobs WHERE {where} ORDER BY 1, 2 LIMIT ?",
                                (chunk,)).fetchall()
        else:
            rows = conn.execute(f"SELECT -{key}, id FROM jobs WHERE {where} AND (-{key}, id) > (?, ?) "
                                "ORDER BY 1, 2 LIMIT ?", (*after, chunk)).fetchall()
        for row in rows:
            yield row[1]
        if len(rows) < chunk:
            return
        after, chunk = rows[-1], chunk * 4


def _rows_by_id(conn: sqlite3.Connection, ids: Iterable[int], clause: str = "",
                columns: str = "id, data") -> Iterator[tuple]:
    """(id, data) -- or the row's `columns`, id first -- of each id in order
    (that also meets `clause`), read a batch of ids per statement (batches
    grow, so a caller that stops after a few rows reads few)."""
    it = iter(ids)
    size = 16
    while True:
        batch = list(islice(it, size))
        if not batch:
            return
        rows = {row[0]: row for row in conn.execute(
            f"SELECT {columns} FROM jobs WHERE id IN ({','.join('?' * len(batch))}){clause}", batch)}
        for jobid in batch:
            row = rows.get(jobid)
            if row is not None:
                yield row
        size = min(size * 4, 256)


def inactive_records(conn: sqlite3.Connection, userid: int | None = None, since: float = 0.0,
                     results: int = 0, decode: Decoder | None = None, columns: str = "id, data") -> Iterator[Record]:
    """Records of the inactive jobs (of userid's only; gone inactive after
    `since`; with a result among the `results` bits: each if given), most
    recently inactive first; damaged rows are left out with a notice. Read
    lazily: stop early to read less. `decode` and `columns`: as
    active_records_ordered's."""
    decode = decode or _good_rows

    clauses = _user_clause(userid)
    args: list[Any] = []
    if since:
        clauses += " AND t_inactive > ?"
        args.append(since)
    if results:
        clauses += " AND (result & ?) != 0"
        args.append(results)
    yield from decode(conn.execute(
        f"SELECT {columns} FROM jobs WHERE state = {INACTIVE}{clauses} ORDER BY t_inactive DESC, id DESC", args))


def newest_rows(conn: sqlite3.Connection, userid: int | None = None,
                inactive_limit: int = -1) -> Iterator[tuple[int, int, str]]:
    """(id, state, stored record text) of the active jobs, newest first, then
    of up to inactive_limit inactive ones, most recently inactive first
    (completion: unchecked and read-only)."""
    where, args = ("", ()) if userid is None else (" AND userid = ?", (userid,))
    yield from conn.execute(f"SELECT id, state, data FROM jobs WHERE state != ?{where} ORDER BY id DESC",
                            (INACTIVE, *args))
    for jobid, state, data in conn.execute(
            f"SELECT id, state, data FROM jobs WHERE state = ?{where} ORDER BY t_inactive DESC, id DESC LIMIT ?",
            (INACTIVE, *args, inactive_limit)):
        yield jobid, state, row_text(data)


def raw_rows(conn: sqlite3.Connection) -> Iterator[tuple[int, str]]:
    """(id, stored record text) of every row, unchecked (fsck, dump): a
    packed record comes unpacked (one that does not unpack, as stored)."""
    for jobid, data in conn.execute("SELECT id, data FROM jobs"):
        yield jobid, row_text(data)


def listing_column(conn: sqlite3.Connection) -> dict[int, Any]:
    """Every row's listing column by id, unchecked (fsck)."""
    return dict(conn.execute("SELECT id, listing FROM jobs"))


def all_records(conn: sqlite3.Connection) -> Iterator[Record]:
    for (data,) in conn.execute("SELECT data FROM jobs"):
        yield json.loads(row_text(data))


def outcome_rows(conn: sqlite3.Connection) -> Iterator[tuple[float, float, float, Any, str]]:
    """(t_submit, t_run, t_cleanup, ncores, result or state name) of every
    job, read from the columns and, inside the records, by SQLite itself."""
    # (the listing column holds both, and is shorter to parse than the record)
    listed_t_cleanup = f"json_extract(listing, '$[{_T_CLEANUP}]')"
    listed_ncores = f"json_extract(listing, '$[{_NCORES}]')"
    for state, result, t_submit, t_run, t_cleanup, ncores in conn.execute(
            "SELECT state, result, t_submit, t_run, "
            "CASE WHEN listing IS NULL THEN json_extract(flux_lite_unpack(data), '$.t_cleanup') "
            f"ELSE {listed_t_cleanup} END, "
            "CASE WHEN listing IS NULL THEN json_extract(flux_lite_unpack(data), '$.ncores') "
            f"ELSE {listed_ncores} END FROM jobs"):
        name = (RESULT_NAMES.get(result, "") if state == INACTIVE else "") or STATE_NAMES.get(state, "")
        yield t_submit, t_run, t_cleanup, ncores, name


def _outcome(job: Job) -> tuple:
    """(id, then outcome_rows' values, then nnodes) of an inactive job whose
    row was just written (its listing fields are still cached)."""
    name = (RESULT_NAMES.get(job.result, "") if job.state == INACTIVE else "") or STATE_NAMES.get(job.state, "")
    fields = listing_fields(job)
    return job.id, job.t_submit, job.t_run, job.t_cleanup, fields["ncores"], name, fields["nnodes"]


def state_of(conn: sqlite3.Connection, jobid: int) -> int | None:
    row = conn.execute("SELECT state FROM jobs WHERE id = ?", (jobid,)).fetchone()
    return None if row is None else row[0]


def max_id(conn: sqlite3.Connection) -> int:
    """The highest job id in the index (0 when empty)."""
    row = conn.execute("SELECT MAX(id) FROM jobs").fetchone()
    return row[0] if row and row[0] else 0


def active_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM jobs WHERE state < ?", (INACTIVE,)).fetchone()[0]


def listed_count(conn: sqlite3.Connection, state_mask: int, userid: int | None = None, since: float = 0.0,
                 results: int = 0) -> int:
    """How many jobs active_records_ordered(state_mask) and inactive_records
    (when state_mask has INACTIVE or results is given) would yield together:
    a progress bar's total, counted on the index alone."""
    user_clause = _user_clause(userid)
    total = conn.execute(f"SELECT count(*) FROM jobs WHERE {_in_states(state_mask)}{user_clause}").fetchone()[0]
    if state_mask & INACTIVE or results:
        clauses, args = user_clause, []
        if since:
            clauses += " AND t_inactive > ?"
            args.append(since)
        if results and not state_mask & INACTIVE:
            clauses += " AND (result & ?) != 0"
            args.append(results)
        total += conn.execute(f"SELECT count(*) FROM jobs WHERE state = {INACTIVE}{clauses}", args).fetchone()[0]
    return total


def inactive_count(conn: sqlite3.Connection, before: float | None = None) -> int:
    """Inactive jobs (those that went inactive before `before`, if given)."""
    if before is None:
        counts = _inactive_by_result(conn)
        if counts is not None:
            return sum(n for _result, n in counts)
        return conn.execute("SELECT count(*) FROM jobs WHERE state = ?", (INACTIVE,)).fetchone()[0]
    return conn.execute("SELECT count(*) FROM jobs WHERE state = ? AND t_inactive < ?",
                        (INACTIVE, before)).fetchone()[0]


def oldest_inactive(conn: sqlite3.Connection, count: int) -> list[int]:
    """Ids of the `count` jobs inactive the longest, oldest first."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM jobs WHERE state = ? ORDER BY t_inactive, id LIMIT ?", (INACTIVE, count))]


def first_inactive_of(conn: sqlite3.Connection, table: str) -> tuple[int, Record] | None:
    """(id, record) of the job inactive the longest among the ids of `table`
    (a table with an ``id`` column, e.g. waitable), or None."""
    row = conn.execute(
        f"SELECT j.id, j.data FROM {table} w JOIN jobs j ON j.id = w.id "
        "WHERE j.state = ? ORDER BY j.t_inactive, j.id LIMIT 1", (INACTIVE,)
    ).fetchone()
    return None if row is None else (row[0], json.loads(row_text(row[1])))


def delete(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    ids = list(ids)
    if ensure_counts(conn):
        for start in range(0, len(ids), 512):
            chunk = ids[start:start + 512]
            _add_counts(conn, dict(conn.execute(
                f"SELECT result, count(*) FROM jobs WHERE id IN ({','.join('?' * len(chunk))}) "
                f"AND state = {INACTIVE} GROUP BY result", chunk)), -1)
    conn.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in ids])


def user_count(conn: sqlite3.Connection, userid: int, limit: int | None = None) -> int:
    """userid's jobs (no more than limit, if given: then only that many index entries are read)."""
    if limit is not None:
        return conn.execute("SELECT count(*) FROM (SELECT 1 FROM jobs WHERE userid = ? LIMIT ?)",
                            (userid, limit)).fetchone()[0]
    return conn.execute("SELECT count(*) FROM jobs WHERE userid = ?", (userid,)).fetchone()[0]


def user_ids_newest(conn: sqlite3.Connection, userid: int, limit: int, offset: int = 0) -> list[int]:
    """userid's job ids, newest first, from `offset` on."""
    return [row[0] for row in conn.execute(
        "SELECT id FROM jobs WHERE userid = ? ORDER BY id DESC LIMIT ? OFFSET ?", (userid, limit, offset))]


def counts_by_state_result(conn: sqlite3.Connection) -> Iterator[tuple[int, int | None, int]]:
    """(state, result, count) over every job: the active ones counted on the
    index, the inactive ones read from the inactive counts."""
    counts = _inactive_by_result(conn)
    if counts is None:
        yield from conn.execute("SELECT state, result, count(*) FROM jobs GROUP BY state, result")
        return
    yield from conn.execute(f"SELECT state, result, count(*) FROM jobs WHERE {_in_states(ACTIVE)} "
                            "GROUP BY state, result")
    for result, n in counts:
        yield INACTIVE, result, n


# where the listing column keeps the jobspec's attributes.system keys
_LISTING_QUEUE = f"json_extract(listing, '$[{len(LISTING_KEYS)}].queue')"


def counts_by_queue_state_result(conn: sqlite3.Connection) -> Iterator[tuple[str, int, int | None, int]]:
    """(queue, state, result, count) of the jobs that name a queue, from
    the listing column: every job is read, so only a caller that asks for
    per-queue counts pays for them."""
    yield from conn.execute(f"SELECT {_LISTING_QUEUE} AS q, state, result, count(*) FROM jobs "
                            "WHERE q IS NOT NULL AND typeof(q) = 'text' GROUP BY q, state, result")


def queue_counts(conn: sqlite3.Connection, ids: list[int]) -> dict[str, int]:
    """queue -> how many of the jobs ids name it (those naming one)."""
    out: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for q, n in conn.execute(f"SELECT {_LISTING_QUEUE} AS q, count(*) FROM jobs WHERE id IN "
                                 f"({','.join('?' * len(chunk))}) AND typeof(q) = 'text' GROUP BY q", chunk):
            out[q] = out.get(q, 0) + n
    return out
