"""A command writes what it changes: timer changes are row updates of the
timers table, and the scheduler's pool is saved row by row (the ranks and
allocations that changed), whatever else the instance holds."""

import re

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
