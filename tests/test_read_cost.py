"""Reading commands read only what they print: no write lock, no job-manager
working set, records decoded only for the rows shown; single-job commands
read that job's row, not every active job."""

import json
import sqlite3
from pathlib import Path

import pytest

from flux_lite.formats.jobid import f58
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
    """Nor any job-manager or scheduler state: no scheduler module is
    loaded, no running job's R is read (resource list reads the pool's
    rows, one per busy rank), no timer is read."""
    from flux_lite.broker import Broker
    from flux_lite.sched import loader

    flux, pending, _ = busy
    _no_working_set(monkeypatch)

    def refuse(*args, **kw):
        raise AssertionError("a reading command loaded job-manager or scheduler state")
    monkeypatch.setattr(loader, "load_persisted", refuse)
    monkeypatch.setattr(JobIndex, "held_Rs", refuse)
    monkeypatch.setattr(JobIndex, "holding_resources", refuse)
    monkeypatch.setattr(Broker, "_timer_init", refuse)
    monkeypatch.setattr(Broker, "save", refuse)
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


def _count_listing_decodes(monkeypatch):
    """Ids of the rows whose listing column is decoded; decoding any whole
    record (the data column) fails."""
    from flux_lite import stored
    from flux_lite.job_manager import index

    decoded = []
    real = index.listing_record

    def counting(row):
        decoded.append(row[0])
        return real(row)

    def refuse(*args, **kw):
        raise AssertionError("a listing decoded a whole record")
    monkeypatch.setattr(index, "listing_record", counting)
    monkeypatch.setattr(stored, "decode_row", refuse)
    return decoded


def test_jobs_count_decodes_only_what_it_prints(busy, monkeypatch):
    flux, pending, _ = busy
    decoded = _count_listing_decodes(monkeypatch)
    out = flux.out("jobs", "-n", "-c", "2", "-o", "{id}")
    assert len(out.split()) == 2
    assert len(decoded) <= 3  # the rows shown, and one to know the output is truncated
    # highest priority first, then by id: the listing order is kept
    assert out.split() == pending[:2]


@pytest.mark.parametrize("argv", [("jobs", "-a"), ("jobs", "-a", "-c", "0"), ("jobs", "-a", "-c", "4"),
                                  ("jobs", "-a", "--json"), ("jobs", "-f", "completed"), ("pgrep", "-a", "true")],
                         ids=" ".join)
def test_jobs_listing_decodes_only_the_listing_of_what_it_prints(busy, monkeypatch, argv):
    """A listing reads each printed job's listing column (and one more row
    to know it is truncated), never a whole record."""
    flux, pending, done = busy
    decoded = _count_listing_decodes(monkeypatch)
    listed = flux.out(*argv, "-n", "-o", "{id}").split() if "--json" not in argv else \
        [job["jobid"] for job in json.loads(flux.out(*argv))["jobs"]]
    assert listed and len(set(decoded)) == len(decoded)  # each row decoded once
    assert [f58(i) for i in decoded[:len(listed)]] == listed
    assert len(decoded) <= len(listed) + ("-c" in argv and argv[-1] != "0")


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


def test_writers_touch_only_the_jobs_they_need(flux, monkeypatch):
    """submit, urgency and cancel with a long queue: the alloc queue reads its
    candidates from the index (limited mode sends the best 8), so no command
    loads every active job, and the order is still priority, then id."""
    blocker = flux.submit("-N4", "--exclusive", "-S", "exec.test.run_duration=1h", "true")
    queued = [flux.submit("-n1", "-S", "exec.test.run_duration=1m", "true") for _ in range(12)]
    _no_working_set(monkeypatch)
    urgent = flux.submit("--urgency=20", "-n1", "-S", "exec.test.run_duration=1m", "true")
    flux("job", "urgency", queued[-1], "18")
    flux("cancel", queued[0])
    flux("cancel", blocker)  # 8 cores free: the urgent, the raised, then the oldest
    running = {j for j in [urgent, *queued] if flux.state(j) == "RUN"}
    assert running == {urgent, queued[-1], *queued[1:7]}
    monkeypatch.undo()  # queue status -v counts over every job
    assert flux.out("queue", "status", "-v").splitlines()[2:4] == [
        "0 alloc requests queued", "4 alloc requests pending to scheduler"]


@pytest.fixture
def long_queue(flux):
    """Every core busy for an hour, 300 one-core jobs pending behind."""
    flux.submit("-N4", "--exclusive", "-S", "exec.test.run_duration=1h", "true")
    flux("submit", "--cc=1-300", "--quiet", "-n1", "-t", "10m", "true")
    pending = flux.out("jobs", "-n", "-c", "0", "-f", "pending", "-o", "{id}").split()
    assert len(pending) == 300
    return flux, pending


def _count_decoded(monkeypatch):
    """Job ids whose stored record the job manager turned into a Job."""
    from flux_lite.job_manager import index

    loaded = []
    real = index.job_from_record

    def counting(rec):
        loaded.append(rec["id"])
        return real(rec)
    monkeypatch.setattr(index, "job_from_record", counting)
    return loaded


class _CountingCursor:
    def __init__(self, cur, rows):
        self._cur, self._rows = cur, rows

    def __iter__(self):
        for row in self._cur:
            self._rows[0] += 1
            yield row

    def fetchone(self):
        row = self._cur.fetchone()
        self._rows[0] += row is not None
        return row

    def fetchall(self):
        out = self._cur.fetchall()
        self._rows[0] += len(out)
        return out

    def __getattr__(self, name):
        return getattr(self._cur, name)


class _CountingConn:
    def __init__(self, conn, rows):
        self._conn, self._rows = conn, rows

    def execute(self, *args):
        return _CountingCursor(self._conn.execute(*args), self._rows)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _count_rows(monkeypatch):
    """[rows the command's SQL statements returned]: every KVS connection
    opened from now on counts them."""
    rows = [0]
    real = KVS.__init__

    def init(self, *args, **kw):
        real(self, *args, **kw)
        self.conn = _CountingConn(self.conn, rows)
    monkeypatch.setattr(KVS, "__init__", init)
    return rows


@pytest.mark.parametrize("argv", [
    ("sched", "reload"),
    ("module", "reload", "sched-simple"),
    ("submit", "-n1", "true"),
    ("cancel", "{last}"),
    ("job", "urgency", "{last}", "31"),
    ("update", "{last}", "duration=+1m"),
    ("job", "raise", "{last}"),
], ids=lambda a: " ".join(a))
def test_writers_decode_only_what_they_touch(long_queue, monkeypatch, argv):
    """With 300 jobs pending, a command reads the job it changes plus the
    head of the alloc queue that limited mode (8) may send: never the
    queue, whether by the working set, record by record (the scheduler's
    disconnect and ready included) or id by id from the index (the alloc
    queue's candidates, the "any job in SCHED?" checks)."""
    flux, pending = long_queue
    _no_working_set(monkeypatch)
    loaded = _count_decoded(monkeypatch)
    rows = _count_rows(monkeypatch)
    flux(*[a.replace("{last}", pending[-1]) for a in argv])
    assert 0 < len(loaded) <= 20, len(loaded)
    assert rows[0] <= 100, rows[0]  # about 70: the schema check (22), the job, 16 candidates...
    monkeypatch.undo()
    # the queue is intact: limited=8 requests outstanding, the rest queued
    assert flux.out("queue", "status", "-v").splitlines()[2:4] == [
        f"{len(flux.out('jobs', '-n', '-c', '0', '-f', 'sched', '-o', '{id}').split()) - 8} alloc requests queued",
        "8 alloc requests pending to scheduler"]


def test_process_exit_leaves_objects_to_the_os(busy, tmp_path):
    """The console script freezes what the command built before the
    interpreter's final collection, so ending the process costs nothing
    that grows with what the command loaded (checked from an atexit hook,
    which runs after the command returned)."""
    import os
    import subprocess
    import sys

    flux, pending, _ = busy
    script = tmp_path / "run.py"
    script.write_text(
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'frozen={gc.get_freeze_count()}\\n'))\n"
        "from flux_lite.cli.main import main\n"
        "main(['sched', 'reload'])\n")
    env = {**os.environ, "FLUX_LITE_STATE_DIR": flux.state_dir}
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    frozen = int(r.stderr.strip().rpartition("frozen=")[2])
    assert frozen > 10000  # every object alive at the end, the modules' and the command's


def test_polling_wait_collects_each_poll_with_the_collector_off(tmp_path, monkeypatch):
    """The console script runs with the cyclic collector off; a real-clock
    wait polls in steps whose brokers and modules point at each other, so
    each poll's garbage is collected before the next, not piled up."""
    import gc

    from conftest import Flux
    from flux_lite import instance
    from flux_lite.instance import Instance

    flux = Flux(tmp_path / "s")
    flux("start", "--test-size=1", "--clock=real")
    inst = Instance.open(flux.state_dir)
    polls = []
    monkeypatch.setattr(instance, "wall_sleep", lambda seconds: polls.append(seconds))

    def check(broker):
        broker.jm.index.get(1)  # the job manager and the scheduler: cycles with the broker
        assert broker.sched is not None
        return "done" if len(polls) >= 30 else None
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        assert inst.wait(check) == "done"
        left = gc.collect()
    finally:
        if was:
            gc.enable()
        inst.close()
    assert len(polls) == 30
    assert left < 200, left  # the last poll's leftovers at most (30 piled-up polls: thousands)


def test_jobs_rows_compute_only_the_fields_printed(busy, monkeypatch):
    """A listing's rows compute the fields its format (and --json) reads,
    not every field a row can have."""
    from flux_lite.listing import jobs as jobs_listing

    flux, pending, done = busy
    computed = []
    for key, compute in list(jobs_listing._FIELDS.items()):
        def counting(info, key=key, compute=compute):
            computed.append(key)
            return compute(info)
        monkeypatch.setitem(jobs_listing._FIELDS, key, counting)
    assert flux.out("jobs", "-a", "-n", "-o", "{id} {status}").split()[-2:] == [done, "COMPLETED"]
    assert set(computed) == {"id", "status", "result", "state"}
    computed.clear()
    flux.out("jobs", "-a", "-o", "endreason")
    assert "inactive_reason" in computed and "status_emoji" not in computed and "ranks" not in computed
    computed.clear()
    monkeypatch.setattr(jobs_listing, "_JSON_BUILDER", [])  # it binds the fields' functions once
    flux.out("jobs", "-a", "--json")
    assert {"duration", "runtime", "returncode"} <= set(computed)
    assert "status_emoji" not in computed and "inactive_reason" not in computed
