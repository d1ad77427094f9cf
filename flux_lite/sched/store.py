"""The scheduler's persisted state, one row per thing that changes.

A command that allocates or frees one job must not read and rewrite every
allocation the scheduler holds, so the pool lives in three tables beside the
small ``sched.state`` key (version 2: debug flags, the acquired R):

``sched_rank``   per rank with anything allocated: the allocated cores and
                 gpus (hex bitmasks); read whole at load (one row per busy
                 node), which is all a worst-fit decision needs;
``sched_alloc``  per allocation: its end time and its per-rank bitmasks
                 (rank:cores:gpus in hex; what the pool needs of an R is
                 built from them and the topology when asked for), read one
                 row at a time as jobs are freed or moved (all of them only
                 when a pass needs every end time);
``sched_queue``  per pending request: priority, user, submit time, request
                 and the annotations last sent; read one row at a time as
                 requests come and go (all of them when a pass walks the
                 queue, or `sched check` checks it).

At save only what changed is written (rank rows by comparing with what was
loaded, job and queue rows by id). The state is the scheduler module's own:
removing the module empties the tables, and hello rebuilds them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from flux_lite.sched.request import ResourceRequest
from flux_lite.schedstate import create, present
from flux_lite.stored import DamagedError

if TYPE_CHECKING:
    from flux_lite.sched.base import PendingJob, Scheduler
    from flux_lite.sched.pool import Pool



def damaged(msg: str) -> Exception:
    return DamagedError("sched.state", f"the scheduler cannot load it: {msg}")


# -- allocations ----------------------------------------------------------------------


def encode_parts(pool: Pool, parts: tuple) -> str:
    """Parts ``(index, coremask, gpumask)`` as text: rank:cores:gpus (hex), joined by ";"."""
    ranks = pool.topology.ranks
    if len(parts) == 1:  # (most allocations: no generator to join)
        i, cm, gm = parts[0]
        return f"{ranks[i]}:{cm:x}:{gm:x}"
    return ";".join(f"{ranks[i]}:{cm:x}:{gm:x}" for i, cm, gm in parts)


def decode_parts(pool: Pool, text: str) -> tuple:
    """encode_parts() undone (KeyError: a rank not in the pool)."""
    pos = pool.topology.index
    out = []
    for part in text.split(";") if text else ():
        rank, cm, gm = part.split(":")
        out.append((pos[int(rank)], int(cm, 16), int(gm, 16)))
    return tuple(out)


class LazyRows:
    """A jobid -> record map backed by one table: rows are read as ids are
    asked for, all of them only when iterated; what changed is remembered
    for save(). Subclasses say how a row is read (``_one``, ``_each``) and
    name their table (``TABLE``).

    Rows are only ever written from the map (save), so an id above the
    table's largest when first asked, not in the map, has no row. A record
    set and removed again before the next save (a replay's jobs, each
    queued, allocated and freed within one command) leaves nothing behind:
    neither a row to delete nor an id to remember."""

    TABLE = ""

    def __init__(self, conn: sqlite3.Connection | None) -> None:
        self._conn = conn
        self._d: dict[int, Any] = {}
        self._gone: set[int] = set()
        self._all = conn is None
        self._max: int | None = None  # the largest id in the table when first asked
        self.dirty: set[int] = set()
        self._fresh: set[int] = set()  # ids set since the last save that the table has no row for

    def _beyond(self, jobid: int) -> bool:
        """True if the table holds no row for jobid because it is larger
        than any id the table had when first asked (see the class)."""
        if self._conn is None:
            return False
        if self._max is None:
            self._max = self._table_max()
        return jobid > self._max

    def _table_max(self) -> int:
        """The largest id in the table (-1 when empty)."""
        assert self._conn is not None
        return self._conn.execute(f"SELECT coalesce(max(id), -1) FROM {self.TABLE}").fetchone()[0]

    def _one(self, jobid: int) -> Any:
        """The record of jobid's row, or None (no row)."""
        raise NotImplementedError

    def _each(self) -> Iterator[tuple[int, Any]]:
        """(jobid, record) of every row."""
        raise NotImplementedError

    def _get(self, jobid: int) -> Any:
        rec = self._d.get(jobid)
        if rec is not None or self._all or jobid in self._gone:
            return rec
        if self._beyond(jobid):
            return None  # (no query, and nothing to remember)
        rec = self._one(jobid)
        if rec is None:
            self._gone.add(jobid)
            return None
        self._d[jobid] = rec
        return rec

    def full(self) -> dict[int, Any]:
        """Every record (read once)."""
        if not self._all:
            d, gone = self._d, self._gone
            for jobid, rec in self._each():
                if jobid not in d and jobid not in gone:
                    d[jobid] = rec
            self._all = True
        return self._d

    # the dict methods the pool and the policies use
    def get(self, jobid: int, default: Any = None) -> Any:
        rec = self._get(jobid)
        return default if rec is None else rec

    def __contains__(self, jobid: object) -> bool:
        return isinstance(jobid, int) and self._get(jobid) is not None

    def __getitem__(self, jobid: int) -> Any:
        rec = self._get(jobid)
        if rec is None:
            raise KeyError(jobid)
        return rec

    # (once every row is read, _d is the whole map: _gone, the ids known
    # to have no row, is no longer consulted, nor kept)

    def __setitem__(self, jobid: int, rec: Any) -> None:
        d = self._d
        if jobid not in d and jobid not in self.dirty and (self._all or jobid in self._gone or self._beyond(jobid)):
            self._fresh.add(jobid)
        d[jobid] = rec
        if not self._all:
            self._gone.discard(jobid)
        self.dirty.add(jobid)

    def __delitem__(self, jobid: int) -> None:
        self.pop(jobid)

    def pop(self, jobid: int, *default: Any) -> Any:
        rec = self._get(jobid)
        if rec is None:
            if default:
                return default[0]
            raise KeyError(jobid)
        del self._d[jobid]
        if jobid in self._fresh:
            self._fresh.discard(jobid)
            self.dirty.discard(jobid)
        else:
            if not self._all:
                self._gone.add(jobid)
            self.dirty.add(jobid)
        return rec

    def mark_saved(self) -> None:
        """The table now holds the map."""
        self.dirty.clear()
        self._fresh.clear()

    def items(self) -> Any:
        return self.full().items()

    def keys(self) -> Any:
        return self.full().keys()

    def values(self) -> Any:
        return self.full().values()

    def __iter__(self) -> Iterator[int]:
        return iter(self.full())

    def __len__(self) -> int:
        return len(self.full())

    def copy(self) -> dict[int, Any]:
        return dict(self.full())


class StoredJobs(LazyRows):
    """The pool's jobid -> allocation map, backed by ``sched_alloc``."""

    TABLE = "sched_alloc"

    def __init__(self, conn: sqlite3.Connection | None, pool: Pool) -> None:
        super().__init__(conn)
        self._pool = pool
        # per rank index, the allocated core and gpu masks the table holds
        # (see mark_saved: save_pool writes the ranks that differ)
        self.saved: tuple[list[int], list[int]] = ([], [])

    def _row(self, jobid: int, end: float, parts: str) -> Any:
        try:
            return self._pool.allocation_from_parts(end, decode_parts(self._pool, parts))
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(f"allocation of job {jobid}: {exc}") from None

    def _one(self, jobid: int) -> Any:
        assert self._conn is not None
        row = self._conn.execute("SELECT end_time, parts FROM sched_alloc WHERE id = ?", (jobid,)).fetchone()
        return None if row is None else self._row(jobid, *row)

    def _each(self) -> Iterator[tuple[int, Any]]:
        assert self._conn is not None
        for jobid, end, parts in self._conn.execute("SELECT id, end_time, parts FROM sched_alloc"):
            yield jobid, self._row(jobid, end, parts)

    def ends(self) -> tuple[list[tuple[int, float]], Callable[[int], tuple]]:
        """(jobid, end) of every allocation, and a function giving one
        allocation's parts: the rows not read yet are read in one statement,
        and their parts decoded only for the jobs asked for (a forecast
        frees the running jobs in end order until the queue's head fits)."""
        if self._all:
            d = self._d
            return [(j, rec.end) for j, rec in d.items()], lambda jobid: d[jobid].parts
        d, gone = self._d, self._gone
        out = [(j, rec.end) for j, rec in d.items()]
        texts: dict[int, tuple[float, str]] = {}
        assert self._conn is not None
        for jobid, end, parts in self._conn.execute("SELECT id, end_time, parts FROM sched_alloc"):
            if jobid not in d and jobid not in gone:
                try:
                    end = float(end)
                except (ValueError, TypeError) as exc:
                    raise damaged(f"allocation of job {jobid}: {exc}") from None
                texts[jobid] = (end, parts)
                out.append((jobid, end))

        def parts_of(jobid: int) -> tuple:
            rec = d.get(jobid)
            if rec is None:
                rec = self._row(jobid, *texts[jobid])
            return rec.parts

        return out, parts_of


def attach(pool: Pool, conn: sqlite3.Connection) -> None:
    """Give pool (fresh over its topology, nothing allocated) the allocations
    in the tables."""
    try:
        pool.restore_masks((rank, int(cores, 16), int(gpus, 16))
                           for rank, cores, gpus in conn.execute("SELECT rank, cores, gpus FROM sched_rank"))
    except (ValueError, TypeError) as exc:
        raise damaged(str(exc)) from None
    pool.attach_jobs(StoredJobs(conn, pool))
    mark_saved(pool)


def mark_saved(pool: Pool) -> None:
    """What the tables now hold (save() writes the difference)."""
    jobs = pool.jobs
    if isinstance(jobs, StoredJobs):
        jobs.saved = (list(pool.alloc_cores), list(pool.alloc_gpus))
        jobs.mark_saved()


def save_pool(conn: sqlite3.Connection, pool: Pool) -> None:
    jobs = pool.jobs
    if not isinstance(jobs, StoredJobs):
        _save_fresh_pool(conn, pool)
        return
    ranks = pool.topology.ranks
    dirty = jobs.dirty
    saved_ac, saved_ag = jobs.saved
    ac, ag = pool.alloc_cores, pool.alloc_gpus
    put, drop = [], []
    for i in range(len(ranks)):
        c, g = ac[i], ag[i]
        if c != saved_ac[i] or g != saved_ag[i]:
            if c or g:
                put.append((ranks[i], f"{c:x}", f"{g:x}"))
            else:
                drop.append((ranks[i],))
    if put:
        conn.executemany("INSERT OR REPLACE INTO sched_rank(rank, cores, gpus) VALUES (?, ?, ?)", put)
    if drop:
        conn.executemany("DELETE FROM sched_rank WHERE rank = ?", drop)
    if dirty:
        d = jobs._d
        rows, gone = [], []
        for jobid in dirty:
            rec = d.get(jobid)
            if rec is None:
                gone.append((jobid,))
            else:
                rows.append((jobid, rec.end, encode_parts(pool, rec.parts)))
        if gone:
            conn.executemany("DELETE FROM sched_alloc WHERE id = ?", gone)
        if rows:
            conn.executemany("INSERT OR REPLACE INTO sched_alloc(id, end_time, parts) VALUES (?, ?, ?)", rows)
    mark_saved(pool)


def _save_fresh_pool(conn: sqlite3.Connection, pool: Pool) -> None:
    """A pool built in memory (fresh load, migration): the rank and
    allocation tables made to hold it exactly. Rows already there and equal
    are left as they are: a reload finds those of the module it replaces
    (see loader.module_reload), the same allocations as hello rebuilt them,
    and rewriting 10,000 equal rows cost a tenth of the reload."""
    ranks = pool.topology.ranks
    _sync_rows(conn, "sched_rank", "rank, cores, gpus",
               [(rank, f"{c:x}", f"{g:x}") for rank, c, g in zip(ranks, pool.alloc_cores, pool.alloc_gpus) if c or g])
    rows = []
    for jobid, rec in pool.jobs.items():
        parts = rec.parts
        if len(parts) == 1:  # (encode_parts' text, without a call per job)
            i, cm, gm = parts[0]
            rows.append((jobid, rec.end, f"{ranks[i]}:{cm:x}:{gm:x}"))
        else:
            rows.append((jobid, rec.end, encode_parts(pool, parts)))
    rows.sort()
    _sync_rows(conn, "sched_alloc", "id, end_time, parts", rows)
    jobs = StoredJobs(None, pool)
    jobs._d = pool.jobs
    pool.attach_jobs(jobs)
    mark_saved(pool)


def _sync_rows(conn: sqlite3.Connection, table: str, columns: str, rows: list[tuple]) -> None:
    """Make table hold rows (sorted by its key, the first column), writing
    only the rows that differ from those it holds."""
    key = columns.split(",", 1)[0]
    held = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {key}").fetchall()
    if held == rows:  # (a reload: all of them, compared at C speed)
        return
    by_key = {row[0]: row for row in held}
    put = [row for row in rows if by_key.pop(row[0], None) != row]
    if by_key:
        conn.executemany(f"DELETE FROM {table} WHERE {key} = ?", [(k,) for k in by_key])
    if put:
        conn.executemany(f"INSERT OR REPLACE INTO {table}({columns}) VALUES ({', '.join('?' * len(put[0]))})", put)


class StoredQueue(LazyRows):
    """The scheduler's pending requests by id, backed by ``sched_queue``: a
    command that queues or withdraws one request reads only its row; the
    whole queue is read only when a pass walks it."""

    TABLE = "sched_queue"

    def __init__(self, conn: sqlite3.Connection | None = None,
                 make: Callable[..., PendingJob] | None = None) -> None:
        super().__init__(conn)
        self._make = make
        self.rewrite = False  # every row afresh (not loaded from the table)
        # the jobs of a burst or a trace share a few request shapes: one
        # (read-only) ResourceRequest per distinct text
        self._requests: dict[str, Any] = {}

    _COLUMNS = "id, priority, userid, t_submit, request, annotations"

    def _row(self, jobid: Any, priority: Any, userid: Any, t_submit: Any, req: Any, ann: Any) -> PendingJob:
        assert self._make is not None
        try:
            request = self._requests.get(req)
            if request is None:
                request = self._requests[req] = ResourceRequest(**json.loads(req))
            ann = json.loads(ann) if ann != "{}" else {}
            if not (isinstance(jobid, int) and isinstance(priority, int) and isinstance(userid, int)
                    and isinstance(t_submit, (int, float)) and isinstance(ann, dict)):
                raise ValueError(f"job {jobid!r}: a field has the wrong type")
            return self._make(jobid, priority, userid, t_submit, request, ann)
        except (ValueError, TypeError) as exc:
            raise damaged(f"queue: {exc}") from None

    def _one(self, jobid: int) -> Any:
        assert self._conn is not None
        row = self._conn.execute(f"SELECT {self._COLUMNS} FROM sched_queue WHERE id = ?", (jobid,)).fetchone()
        return None if row is None else self._row(*row)

    def _each(self) -> Iterator[tuple[int, Any]]:
        assert self._conn is not None
        for row in self._conn.execute(f"SELECT {self._COLUMNS} FROM sched_queue"):
            yield row[0], self._row(*row)

    def touch(self, jobid: int) -> None:
        """A queued request's priority or annotations changed."""
        self.dirty.add(jobid)


def load_queue(conn: sqlite3.Connection, make: Callable[..., PendingJob]) -> StoredQueue:
    """The queue in the table (rows read as they are asked for)."""
    return StoredQueue(conn, make)


def save_queue(conn: sqlite3.Connection, q: StoredQueue) -> None:
    if q.rewrite:
        conn.execute("DELETE FROM sched_queue")
        dirty: set[int] = set(q.full())
        q.rewrite = False
    else:
        dirty = q.dirty
    rows, gone = [], []
    for jobid in dirty:
        pj = q.get(jobid)
        if pj is None:
            gone.append((jobid,))
        else:
            rows.append((jobid, pj.priority, pj.userid, pj.t_submit,
                         json.dumps(pj.request.as_dict(), separators=(",", ":")),
                         json.dumps(pj.annotations, separators=(",", ":"))))
    if gone:
        conn.executemany("DELETE FROM sched_queue WHERE id = ?", gone)
    if rows:
        conn.executemany("INSERT OR REPLACE INTO sched_queue(id, priority, userid, t_submit, request, annotations) "
                         "VALUES (?, ?, ?, ?, ?, ?)", rows)
    q.mark_saved()


def save(sched: Scheduler) -> None:
    conn = sched.b.kvs.conn
    if not present(conn):
        create(conn)
    save_pool(conn, sched.pool)
    save_queue(conn, sched.queue)
