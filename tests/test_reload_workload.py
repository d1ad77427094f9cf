"""Scheduler reload in the middle of a busy virtual-clock workload.

Housekeeping stragglers, a running-job extension, pending jobs, and reloads
(with and without partial-ok, and across policies) at awkward moments; after
every step `sched check` must be clean, and in the end every job must have
run exactly as long as it should, on cores nobody else held at the time.
"""

import json

import pytest

HK_CONFIG = """
job-manager:
  housekeeping:
    release-after: "0"
    rank-durations:
      "3": 45s
"""


def core_intervals(flux, jobid):
    """(start, end, {(rank, core)}) of a job that ran, from its eventlog and R."""
    events = {e["name"]: e for e in flux.events(jobid)}
    if "alloc" not in events:
        return None
    R = json.loads(flux.out("job", "info", jobid, "R"))
    cores = set()
    from flux_lite.formats.idset import IDset

    for ent in R["execution"]["R_lite"]:
        for rank in IDset.parse(ent["rank"]):
            for core in IDset.parse(ent["children"]["core"]):
                cores.add((rank, core))
    return events["alloc"]["timestamp"], events["clean"]["timestamp"], cores


def assert_no_overlap(flux, ids):
    spans = [s for s in (core_intervals(flux, j) for j in ids) if s]
    for i, (s1, e1, c1) in enumerate(spans):
        for s2, e2, c2 in spans[i + 1:]:
            if s1 < e2 and s2 < e1:
                assert not (c1 & c2), "two jobs held the same core at the same time"


def check(flux):
    result = flux("sched", "check", check=False)
    assert result.exit_code == 0, result.stdout


@pytest.mark.parametrize("policies", [("fcfs", "fcfs"), ("fcfs", "easy"), ("easy", "conservative")])
def test_reload_mid_workload(flux_factory, policies):
    first, second = policies
    flux = flux_factory("--test-size=4", "--test-cores=2", config=HK_CONFIG)
    if first != "fcfs":
        flux("sched", "reload", f"--policy={first}")
    t0 = flux.now()
    # three 1-node jobs of known lengths, one 2-node job, one long job to extend
    a = flux.submit("-N4", "-t", "10m", "-S", "exec.test.run_duration=10s", "true")
    flux.advance("10s")  # a ends; rank 3 straggles in housekeeping for 45 s
    check(flux)
    b = flux.submit("-N1", "-t", "10m", "-S", "exec.test.run_duration=100s", "true")
    c = flux.submit("-N1", "-t", "5m", "-S", "exec.test.run_duration=30s", "true")
    d = flux.submit("-N2", "-t", "5m", "-S", "exec.test.run_duration=20s", "true")
    e = flux.submit("-N1", "-t", "2m", "sleep", "inf")  # runs until its 2m limit: TIMEOUT
    f = flux.submit("-N1", "-t", "1m", "-S", "exec.test.run_duration=5s", "true")
    check(flux)
    # extend the long job while it runs
    assert flux.state(b) == "RUN"
    flux("update", b, "duration=+10m")
    flux.advance("5s")
    check(flux)
    # reload while the straggler holds rank 3 (partly released allocation)
    flux("sched", "reload", f"--policy={second}")
    check(flux)
    hk = flux.out("housekeeping", "list", "-no", "{id.f58} {allocated.ranks}").split()
    assert hk == [a, "3"]
    flux.advance("20s")
    check(flux)
    flux("sched", "reload", "--no-partial-ok")  # drops the straggler's allocation
    check(flux)
    assert flux.out("housekeeping", "list", "-n") == ""
    flux.advance("30m")
    check(flux)
    ids = [a, b, c, d, e, f]
    status = flux.out("jobs", "-a", "-no", "{id.f58} {status}", *ids).split()
    assert dict(zip(status[::2], status[1::2])) == {
        a: "COMPLETED", b: "COMPLETED", c: "COMPLETED", d: "COMPLETED", e: "TIMEOUT", f: "COMPLETED",
    }
    # each job ran exactly as long as it should
    want = {a: 10, b: 100, c: 30, d: 20, e: 120, f: 5}
    for jobid, seconds in want.items():
        ev = {x["name"]: x["timestamp"] for x in flux.events(jobid)}
        end = ev.get("finish")
        assert end - ev["start"] == pytest.approx(seconds), jobid
    assert_no_overlap(flux, ids)
    assert flux.now() >= t0 + 1800
    # nothing is left allocated
    assert flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}").strip() == "0"
    assert flux.out("resource", "list", "--from-sched", "-s", "allocated", "-no", "{nnodes}").strip() == "0"


def test_reload_keeps_updated_expiration(flux_factory):
    """Better than Flux: hello hands the scheduler the job's current R."""
    flux = flux_factory("--test-size=1", "--test-cores=2")
    run = flux.submit("-N1", "-t", "10m", "sleep", "inf")
    pend = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    assert flux.out("jobs", "-no", "{contextual_info}", pend).strip() == "eta:10m"
    flux("update", run, "duration=+1h")
    assert flux.out("jobs", "-no", "{contextual_info}", pend).strip() == "eta:1.167h"
    flux("module", "reload", "sched-simple")
    assert flux.out("jobs", "-no", "{contextual_info}", pend).strip() == "eta:1.167h"
    flux.advance("70m")
    ev = {x["name"]: x for x in flux.events(run)}
    assert ev["exception"]["context"]["type"] == "timeout"
    assert flux.state(pend) == "RUN"
    check(flux)


def test_unloaded_scheduler_reconciles_on_hello(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=2")
    a = flux.submit("-N1", "-S", "exec.test.run_duration=10s", "true")
    b = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    c = flux.submit("-N1", "sleep", "inf")
    flux("module", "remove", "sched-simple")
    assert flux.state(c) == "SCHED"
    flux.advance("10s")  # a ends while no scheduler: its free is not sent
    d = flux.submit("-n1", "sleep", "inf")
    flux("cancel", b)
    assert flux.out("module", "list").count("sched-simple") == 0
    flux("module", "load", "sched-simple")
    assert flux.state(c) == "RUN" and flux.state(d) == "RUN"
    check(flux)
    assert flux.eventlog(b)[-3:] == ["release", "free", "clean"]
    assert flux.eventlog(a)[-2:] == ["free", "clean"]


def test_policy_switch_changes_the_plan(flux):
    """fcfs -> easy -> conservative by reload, on one queue: the plan changes each time.

    4 nodes: a 2-node job runs for 10m; queued: A (4 nodes, 5m), B (2 nodes, 5m),
    C (2 nodes, 20m).
    """
    t0 = flux.now()
    flux.submit("-N2", "-t", "10m", "-S", "exec.test.run_duration=10m", "true")
    a = flux.submit("-N4", "-t", "5m", "sleep", "inf")
    b = flux.submit("-N2", "-t", "5m", "sleep", "inf")
    c = flux.submit("-N2", "-t", "20m", "sleep", "inf")

    def plan():
        out = {}
        for line in flux.out("jobs", "-no", "{id.f58} {state} {annotations.sched.t_estimate}", a, b, c).splitlines():
            jobid, state, *est = line.split()
            out[jobid] = (state, float(est[0]) - t0 if est else None)
        return out

    # fcfs: head-of-line blocking; everyone waits behind A, forecast in order
    assert plan() == {a: ("SCHED", 600.0), b: ("SCHED", 900.0), c: ("SCHED", 900.0)}
    # easy: A is reserved at 10m, B backfills now (it ends before A starts), C waits unplanned
    flux("sched", "reload", "--policy=easy")
    assert plan() == {a: ("SCHED", 600.0), b: ("RUN", None), c: ("SCHED", None)}
    assert flux.out("jobs", "-no", "{annotations.sched.backfill}", b).strip() == a
    # conservative: C gets a reservation too, after A (a 20m job cannot fit before it)
    flux("sched", "reload", "--policy=conservative")
    assert plan() == {a: ("SCHED", 600.0), b: ("RUN", None), c: ("SCHED", 900.0)}
    check(flux)
    flux.advance("40m")
    assert flux.out("jobs", "-a", "-no", "{status}", a, b, c).split() == ["TIMEOUT"] * 3
    check(flux)


def test_hello_failure_raises_scheduler_restart(flux_factory):
    """A job whose R cannot be re-allocated at hello."""
    flux = flux_factory("--test-size=1", "--test-cores=2")
    jobid = flux.submit("-N1", "sleep", "inf")
    assert flux.state(jobid) == "RUN"
    flux("config", "load", input='resource: {exclude: "0"}\n')
    flux("module", "reload", "sched-simple")
    events = flux.events(jobid)
    names = [e["name"] for e in events]
    assert names[-4:] == ["exception", "finish", "release", "clean"] and "free" not in names
    exc = [e for e in events if e["name"] == "exception"][0]["context"]
    assert exc["type"] == "scheduler-restart" and exc["severity"] == 0
    assert exc["note"] == "failed to reallocate R for running job"
    assert any("raising fatal exception on running job" in line for line in flux.dmesg())
    # restore: the resources of the failed job count as released, no double booking
    flux("config", "load", input="{}\n")
    flux("module", "reload", "sched-simple")
    rc = flux("run", "-N1", "-S", "exec.test.run_duration=1s", "true")
    assert rc.exit_code == 0
    check(flux)


def test_reload_running_job_and_partial_hello(flux_factory):
    """A running job survives reload; a partly released
    housekeeping allocation comes back as just the straggling rank."""
    flux = flux_factory("--test-size=2", "--test-cores=2", config="""
job-manager:
  housekeeping:
    release-after: 1s
    rank-durations:
      "1": 300s
""")
    running = flux.submit("-N1", "-t", "1h", "sleep", "inf")
    done = flux.submit("-N1", "-S", "exec.test.run_duration=1s", "true")
    flux("module", "reload", "sched-simple")
    assert flux.state(running) == "RUN"
    flux.advance("3s")
    assert flux.state(done) == "INACTIVE"
    stats = json.loads(flux.out("module", "stats", "job-manager"))["housekeeping"]["running"]
    assert stats == {done: {"t_start": pytest.approx(flux.now() - 2), "pending": "1", "allocated": "1"}}
    flux("module", "reload", "sched-simple")
    sched_alloc = flux.out("resource", "list", "--from-sched", "-s", "allocated", "-no", "{ranks}").strip()
    assert sched_alloc == "0-1"  # rank 0: the running job; rank 1: the straggler
    assert "hello: " + done + ": rank1/core[0-1]" in " ".join(flux.dmesg())
    check(flux)
