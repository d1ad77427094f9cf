"""A command writes what it changes: timer changes are row updates of the
timers table, and the scheduler's pool is saved row by row (the ranks and
allocations that changed), whatever else the instance holds."""

import re
import sqlite3
from pathlib import Path

import pytest

from flux_lite.kvs import KVS


@pytest.fixture
def crowded(flux_factory):
    """64 one-core jobs running on 16 nodes x 8 cores, each with its
    expiration and run-end timers; 64 cores left free."""
    flux = flux_factory("--test-size=16", "--test-cores=8")
    flux("submit", "--cc=1-64", "--quiet", "-n1", "-t", "1h", "-S", "exec.test.run_duration=30m", "true")
    running = flux.out("jobs", "-n", "-c", "0", "-f", "running", "-o", "{id}").split()
    assert len(running) == 64
    return flux, running


def _trace(monkeypatch):
    """Every SQL statement the command runs, bound values expanded (each
    row of an executemany is a statement of its own)."""
    statements = []
    real = KVS.__init__

    def init(self, *args, **kw):
        real(self, *args, **kw)
        self.conn.set_trace_callback(statements.append)
    monkeypatch.setattr(KVS, "__init__", init)
    return statements


def _writes(statements, table):
    pattern = re.compile(rf"^\s*(INSERT|DELETE|UPDATE|REPLACE)\b.*\b{table}\b", re.I | re.S)
    return [s for s in statements if pattern.match(s)]


def test_timer_changes_are_row_updates(crowded, monkeypatch):
    """update duration of one running job moves its expiration: the timers
    table loses that job's old row and gains one, nothing else."""
    flux, running = crowded
    statements = _trace(monkeypatch)
    flux("update", running[0], "duration=+1m")
    writes = _writes(statements, "timers")
    assert 1 <= len(writes) <= 2, writes
    assert not any(re.match(r"\s*DELETE FROM timers\s*$", s) for s in writes)


def test_pool_saved_row_by_row(crowded, monkeypatch):
    """A job allocated beside 64 others writes its allocation's row and its
    rank's; a job freed deletes its row and rewrites its rank's. The
    pending-request rows are written only for jobs that wait."""
    flux, running = crowded
    statements = _trace(monkeypatch)
    flux.submit("-n1", "-t", "1h", "sleep", "inf")
    assert len(_writes(statements, "sched_alloc")) == 1
    assert len(_writes(statements, "sched_rank")) == 1
    assert len(_writes(statements, "jobs")) == 1  # the new job's row, written once
    statements.clear()
    flux("cancel", running[5])
    assert len(_writes(statements, "sched_alloc")) == 1
    assert len(_writes(statements, "sched_rank")) == 1
    assert _writes(statements, "sched_queue") == []


def test_catch_up_touches_only_due_timers(crowded, monkeypatch):
    """Advancing the clock past nothing reads only the earliest timer rows
    and writes none."""
    flux, running = crowded
    statements = _trace(monkeypatch)
    flux.advance("1m")
    assert _writes(statements, "timers") == []
    assert _writes(statements, "jobs") == []


# -- sched reload: hello rebuilds the rows the tables hold ---------------------------------


def _pool_rows(flux):
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite")
    try:
        return (conn.execute("SELECT id, end_time, parts FROM sched_alloc ORDER BY id").fetchall(),
                conn.execute("SELECT rank, cores, gpus FROM sched_rank ORDER BY rank").fetchall())
    finally:
        conn.close()


def _sql(flux, *statements):
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


@pytest.mark.parametrize("args", [("sched", "reload"), ("sched", "reload", "--policy=easy")])
def test_sched_reload_rewrites_no_equal_row(crowded, monkeypatch, args):
    """The old module's rank and allocation rows stay until the new one
    saves its pool, which hello rebuilt the same: nothing is written (the
    64 jobs' rows, and the 16 ranks', are those of before)."""
    flux, running = crowded
    before = _pool_rows(flux)
    statements = _trace(monkeypatch)
    flux(*args)
    assert _writes(statements, "sched_alloc") == []
    assert _writes(statements, "sched_rank") == []
    assert _pool_rows(flux) == before
    assert flux.out("sched", "check") == "sched check: ok\n"


def test_sched_reload_writes_the_rows_that_differ(crowded, monkeypatch):
    """Rows that are not what hello rebuilds are rewritten, and rows of
    nothing hello reports are deleted: the tables end as a fresh load's."""
    flux, running = crowded
    before = _pool_rows(flux)
    first, rank0 = before[0][0], before[1][0]
    _sql(flux, f"UPDATE sched_alloc SET end_time = 1.0 WHERE id = {first[0]}",
         "INSERT INTO sched_alloc(id, end_time, parts) VALUES (1, 0.0, '3:1:0')",
         f"DELETE FROM sched_rank WHERE rank = {rank0[0]}",
         "INSERT INTO sched_rank(rank, cores, gpus) VALUES (99, 'ff', '0')")
    statements = _trace(monkeypatch)
    flux("sched", "reload")
    assert len(_writes(statements, "sched_alloc")) == 2  # the changed row, the stray one
    assert len(_writes(statements, "sched_rank")) == 2  # the missing rank, the stray one
    assert _pool_rows(flux) == before
    assert flux.out("sched", "check") == "sched check: ok\n"


def _reload_in_library(flux, name, fail=False, monkeypatch=None):
    """loader.module_reload in one session; fail: the new module's start
    raises, and the caller keeps the removal (as `module reload` does)."""
    from flux_lite.errors import FluxLiteError
    from flux_lite.instance import Instance
    from flux_lite.sched import loader
    from flux_lite.sched.base import Scheduler

    if fail:
        def refuse(self, progress=None):
            raise FluxLiteError("refused")
        monkeypatch.setattr(Scheduler, "start", refuse)
    inst = Instance.open(flux.state_dir)
    try:
        with inst.session() as broker:
            try:
                loader.module_reload(broker, name, [] if name.endswith(".py") else {})
            except FluxLiteError as exc:
                assert fail and str(exc) == "refused"
    finally:
        inst.close()


def test_reload_to_a_module_file_or_a_failed_load_leaves_no_pool_rows(crowded, monkeypatch):
    """The rows are kept only for a scheduler that saves its pool over them:
    a module file keeps its own state, and a load that fails leaves none."""
    flux, running = crowded
    tiny = str(Path(__file__).parent / "flux_modules" / "sched-tiny.py")
    _reload_in_library(flux, tiny)
    assert _pool_rows(flux) == ([], [])
    assert "sched-tiny" in flux.out("module", "list")
    flux("module", "reload", "sched-simple")
    assert len(_pool_rows(flux)[0]) == 64
    _reload_in_library(flux, "sched-simple", fail=True, monkeypatch=monkeypatch)
    assert _pool_rows(flux) == ([], [])
