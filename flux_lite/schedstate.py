"""The scheduler module's persisted state, as the storage layer knows it.

Which module is loaded (``sched.module``: name and args) and its state
(``sched.state``, plus three tables of rows, one per thing that changes: see
flux_lite/sched/store.py, which writes them). The resource module may read
what the scheduler's pool holds from here (allocated_parts) when no scheduler
is in memory in this command: loading one to answer ``sched.resource-status``
would cost every drain and listing a pool load. It is the one reader both
sides share; everything else about these rows is the scheduler's.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from flux_lite.formats.idset import IDset
from flux_lite.stored import DamagedError

MODULE_KEY = "sched.module"
STATE_KEY = "sched.state"
VERSION = 2
TABLES = ("sched_rank", "sched_alloc", "sched_queue")
SCHEMA = """
CREATE TABLE IF NOT EXISTS sched_rank (
    rank  INTEGER PRIMARY KEY,
    cores TEXT NOT NULL,
    gpus  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sched_alloc (
    id       INTEGER PRIMARY KEY,
    end_time REAL NOT NULL,
    parts    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sched_queue (
    id          INTEGER PRIMARY KEY,
    priority    INTEGER NOT NULL,
    userid      INTEGER NOT NULL,
    t_submit    REAL NOT NULL,
    request     TEXT NOT NULL,
    annotations TEXT NOT NULL
)
"""


def present(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)",
                       TABLES).fetchone()
    return row[0] == len(TABLES)


def create(conn: sqlite3.Connection) -> None:
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def discard(kvs: Any, keep_pool: bool = False) -> None:
    """Forget the scheduler's persisted state (key and rows): the module was
    removed. keep_pool: the rank and allocation rows stay, for the scheduler
    loaded next in the same command to save its pool over (only what
    differs is written); whoever asks for it clears them if none does."""
    kvs.delete(STATE_KEY)
    clear(kvs.conn, ("sched_queue",) if keep_pool else TABLES)


def clear(conn: sqlite3.Connection, tables: tuple[str, ...] = TABLES) -> None:
    """Forget the scheduler's rows (module removed, or its state is rebuilt)."""
    if present(conn):
        for table in tables:
            conn.execute(f"DELETE FROM {table}")


def allocated_parts(kvs: Any) -> list[tuple[int, Any, Any]] | None:
    """(rank, cores, gpus) the loaded scheduler's pool holds, read from its
    rows; None when no scheduler state in rows applies (none loaded, an
    older or damaged state). Only valid while no scheduler object of this
    command holds unsaved changes."""
    try:
        if kvs.get(MODULE_KEY) is None:
            return None
        state = kvs.get(STATE_KEY)
    except DamagedError:
        return None
    if not isinstance(state, dict) or state.get("version") != VERSION or not present(kvs.conn):
        return None
    cache: dict[str, Any] = {}

    def ids(text: str) -> Any:
        hit = cache.get(text)
        if hit is None:
            hit = cache[text] = IDset.from_mask(int(text, 16))
        return hit

    try:
        return [(rank, ids(c), ids(g)) for rank, c, g in kvs.conn.execute("SELECT rank, cores, gpus FROM sched_rank")]
    except (ValueError, TypeError):
        return None


# -- the queue of pending requests ------------------------------------------------------------
