"""Reading commands read only what they print: no write lock, no job-manager
working set, records decoded only for the rows shown; single-job commands
read that job's row, not every active job."""

import sqlite3
from pathlib import Path

import pytest

from flux_lite import job_list
from flux_lite.job_manager.index import JobIndex
from flux_lite.kvs import KVS

READERS = [
    ("jobs",),
    ("jobs", "-a", "-c", "3"),
    ("job", "eventlog", "{id}"),
    ("job", "info", "{id}", "jobspec"),
    ("resource", "list"),
    ("resource", "status"),
    ("housekeeping", "list"),
    ("queue", "status"),
    ("job", "last"),
]


@pytest.fixture
def busy(flux):
    """One running job holding every node, five pending behind it, one done."""
    done = flux.submit("-n1", "-S", "exec.test.run_duration=1s", "true")
    flux.advance("2s")
    flux.submit("-N4", "--exclusive", "-S", "exec.test.run_duration=1h", "true")
    pending = [flux.submit("-n1", "-t", "10m", "true") for _ in range(5)]
    assert flux.state(pending[0]) == "SCHED"
    return flux, pending, done


def _no_working_set(monkeypatch):
    def refuse(self):
        raise AssertionError("a reading command loaded every active job")
    monkeypatch.setattr(JobIndex, "jobs", property(refuse))


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a))
def test_readers_load_no_working_set(busy, monkeypatch, argv):
    flux, pending, _ = busy
    _no_working_set(monkeypatch)
    flux(*[a.replace("{id}", pending[-1]) for a in argv])


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a))
def test_readers_take_no_write_lock(busy, monkeypatch, argv):
    flux, pending, _ = busy
    monkeypatch.setattr(KVS, "BUSY_TIMEOUT", 0.2)  # a reader that waited would fail, not hang
    holder = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another command in the middle of its transaction
    try:
        flux(*[a.replace("{id}", pending[-1]) for a in argv])
        # a writer must wait for it (and here gives up)
        r = flux.fails("submit", "true")
        assert "locked" in r.stderr or "lock" in r.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_jobs_count_decodes_only_what_it_prints(busy, monkeypatch):
    flux, pending, _ = busy
    decoded = []
    real = job_list.good_rows

    def counting(rows):
        for rec in real(rows):
            decoded.append(rec["id"])
            yield rec
    monkeypatch.setattr(job_list, "good_rows", counting)
    out = flux.out("jobs", "-n", "-c", "2", "-o", "{id}")
    assert len(out.split()) == 2
    assert len(decoded) <= 3  # the rows shown, and one to know the output is truncated
    # highest priority first, then by id: the listing order is kept
    assert out.split() == pending[:2]


def test_writers_still_queue_in_order(busy):
    """A job whose urgency rises is queued ahead of older jobs: the queue
    is rebuilt from every job when a job may need an alloc request."""
    flux, pending, _ = busy
    flux("job", "urgency", pending[-1], "20")
    flux("cancel", pending[0])
    out = flux.out("jobs", "-n", "-f", "pending", "-o", "{id}")
    assert out.split() == [pending[-1], *pending[1:-1]]


def test_real_clock_reader_catches_up(tmp_path):
    """Under a real clock, a reader that finds a timer due runs the catch-up."""
    import time

    from conftest import Flux

    flux = Flux(tmp_path / "s")
    flux("start", "--test-size=1", "--clock=real")
    jobid = flux.submit("-n1", "-S", "exec.test.run_duration=0.1s", "true")
    time.sleep(0.3)
    assert flux.out("jobs", "-no", "{state}", jobid).strip() == "INACTIVE"
