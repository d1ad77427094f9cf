"""Eventlogs are the source of truth (a restart rebuilds everything from them):
the derived tables (`jobs`, `timers`) can be dropped at any point of a
workload and the next command rebuilds them from the eventlogs, with nothing
visible changing, and running jobs still ending at the right times.
"""

import sqlite3
from pathlib import Path

import pytest


def drop(flux, *tables):
    conn = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"))
    try:
        for table in tables:
            conn.execute(f"DROP TABLE {table}")
        conn.commit()
    finally:
        conn.close()


def tables(flux):
    conn = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"))
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def workload(f):
    """A mix of completed, timed-out, canceled, running, pending and held jobs."""
    ids = []
    for d in ("30s", "60s", "90s", "120s", "150s"):
        ids.append(f.submit("-N1", "-t", "10m", f"--setattr=exec.test.run_duration={d}", "true"))
    ids.append(f.submit("-N1", "-t", "1m", "sleep", "inf"))      # times out 1m after it starts
    ids.append(f.submit("--urgency=hold", "true"))
    ids.append(f.submit("-N2", "-t", "5m", "--setattr=exec.test.run_duration=100s", "true"))
    ids.append(f.submit("-n1", "--urgency=20", "-t", "3m", "sleep", "inf"))
    f.advance("45s")
    ids.append(f.submit("-N1", "-t", "2m", "--setattr=exec.test.run_duration=10s", "true"))
    f("cancel", ids[4])
    # duration updates live only in jobspec-update/resource-update events
    f("update", ids[3], "duration=+3m")   # running: expiration moves to 13m
    f("update", ids[8], "duration=4m")    # pending
    f("update", ids[5], "duration=+30s")  # running without end: now times out 90s after start
    return ids


def snapshot(f, ids):
    return {
        "jobs": f.out("jobs", "-a"),
        "fields": f.out("jobs", "-a", "-o", "{id.f58} {state} {status} {result} {returncode} {priority} "
                                            "{t_submit} {t_run} {t_cleanup} {t_inactive} {expiration} "
                                            "{ranks}"),
        # annotations of active jobs (those of inactive jobs are checked in
        # test_canceled_pending_job_annotations_cleared)
        "annotations": f.out("jobs", "-o", "{id.f58} {annotations}"),
        "eventlogs": {j: f.out("job", "eventlog", "-f", "json", j) for j in ids},
        "resources": f.out("resource", "list"),
        "now": f.now(),
    }


@pytest.fixture
def pair(flux_factory):
    """Two instances fed the same commands: one will lose its derived tables."""
    a = flux_factory("--test-size=4", "--test-cores=2", name="a")
    b = flux_factory("--test-size=4", "--test-cores=2", name="b")
    return a, b


@pytest.mark.parametrize("which", [("jobs", "timers"), ("timers",)])
def test_dropped_tables_rebuilt_with_identical_view(pair, which):
    a, b = pair
    ids = workload(a)
    assert workload(b) == ids
    before = snapshot(a, ids)
    drop(a, *which)
    assert a.out("jobs", "-a") == before["jobs"]   # any command rebuilds
    assert {"jobs", "timers"} <= tables(a)
    assert snapshot(a, ids) == before
    assert snapshot(a, ids) == snapshot(b, ids)
    assert "job-manager.info[0]: restart: job index and timers rebuilt from eventlogs" in a.dmesg()


@pytest.mark.parametrize("which", [("jobs", "timers"), ("jobs",)])
def test_running_jobs_end_at_the_right_times_after_rebuild(pair, which):
    a, b = pair
    ids = workload(a)
    workload(b)
    drop(a, *which)
    for step in ("20s", "1m", "3m", "10m"):
        a.advance(step)
        b.advance(step)
        assert snapshot(a, ids) == snapshot(b, ids), step
    # completion times follow the run durations, whatever happened in between
    t0 = 1767225600.0
    ends = a.out("jobs", "-a", "-no", "{id.f58} {t_inactive}", *ids[:4]).split()
    assert [float(x) for x in ends[1::2]] == [t0 + 30, t0 + 60, t0 + 90, t0 + 120]
    assert a.out("jobs", "-a", "-no", "{duration} {expiration}", ids[3]).split() == ["780.0", str(t0 + 780)]
    events = {e["name"]: e for e in a.events(ids[5])}
    assert events["exception"]["context"]["type"] == "timeout"
    assert events["exception"]["timestamp"] == events["start"]["timestamp"] + 90
    assert a.out("jobs", "-no", "{status}", ids[6]).strip() == "SCHED"  # still held


def test_rebuild_then_command_that_changes_state(pair):
    a, b = pair
    ids = workload(a)
    workload(b)
    drop(a, "jobs", "timers")
    for f in (a, b):
        f("job", "urgency", ids[6], "default")
        f("cancel", ids[8])
        f.advance("5m")
    assert snapshot(a, ids) == snapshot(b, ids)
    a("sched", "check")


def test_rebuild_while_scheduler_unloaded(pair):
    a, b = pair
    for f in (a, b):
        f("module", "remove", "sched-simple")
    ids = [a.submit("-n1", "true") for _ in range(3)]
    assert [b.submit("-n1", "true") for _ in range(3)] == ids
    drop(a, "jobs", "timers")
    assert a.out("jobs", "-a") == b.out("jobs", "-a")
    assert "sched-simple" not in a.out("module", "list")
    for f in (a, b):
        f("module", "load", "sched-simple")
    assert snapshot(a, ids) == snapshot(b, ids)


def test_rebuild_twice_and_after_every_command(pair):
    a, b = pair
    cmds = [
        ("submit", "-N1", "-t", "2m", "--setattr=exec.test.run_duration=30s", "true"),
        ("submit", "-N1", "-t", "1m", "sleep", "inf"),
        ("clock", "advance", "20s"),
        ("submit", "-N4", "-t", "1m", "true"),
        ("clock", "advance", "20s"),
        ("submit", "--urgency=hold", "true"),
        ("clock", "advance", "1m"),
    ]
    for cmd in cmds:
        a(*cmd)
        b(*cmd)
        drop(a, "jobs", "timers")
        assert a.out("jobs", "-a") == b.out("jobs", "-a"), cmd
    ids = a.out("jobs", "-a", "-no", "{id.f58}").split()
    assert snapshot(a, ids) == snapshot(b, ids)


def test_canceled_pending_job_annotations_cleared(flux):
    flux.submit("-N4", "-t", "10m", "sleep", "inf")
    pending = flux.submit("-N1", "-t", "1m", "true")
    assert flux.out("jobs", "-no", "{annotations.sched.t_estimate}", pending).strip() == str(1767225600.0 + 600)
    flux("cancel", pending)
    assert flux.out("jobs", "-a", "-no", "{annotations}", pending).strip() == ""
    drop(flux, "jobs", "timers")
    assert flux.out("jobs", "-a", "-no", "{annotations}", pending).strip() == ""
