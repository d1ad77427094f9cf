"""CLI tests of the sched-simple scheduler.

Most tests use Flux's t2300 shape: two ranks of two cores, ``rank[0-1]/core[0-1]``.
flux-lite has no exec module to unload, so "jobs that stay allocated" are jobs
without a run duration or time limit (``sleep inf``): they run until canceled.
"""

import json
import os

import pytest

UID = os.getuid()
T0 = 1767225600.0


@pytest.fixture
def flux22(flux_factory):
    return flux_factory("--test-size=2", "--test-cores=2")


def alloc_summary(flux, jobid):
    for e in flux.events(jobid):
        if e["name"] == "alloc":
            return e["context"]["annotations"]["sched"]["resource_summary"]
    return None


def free_rlist(flux):
    return flux.out("resource", "list", "-s", "free", "-no", "{rlist}").strip()


def err(r):
    return r.stderr.strip()


def submit_n(flux, n, *args):
    return [flux.submit("-n1", *(args or ("sleep", "inf"))) for _ in range(n)]


# ------------------------------------------------------------ sched-simple


def test_free_rlist_after_start(flux22):
    assert free_rlist(flux22) == "rank[0-1]/core[0-1]"
    assert any(line.endswith("ready: queue-depth=8 log-level=info pool-class=Rv1Pool Rv1 rank[0-1]/core[0-1]")
               for line in flux22.dmesg())
    assert "job-manager.debug[0]: scheduler: ready limited" in flux22.dmesg()


def test_second_scheduler_refused(flux22):
    r = flux22.fails("module", "load", "sched-simple")
    assert "already" in r.stderr
    r = flux22.fails("module", "load", "sched-backfill")
    assert "already" in r.stderr
    assert "sched-simple" in flux22.out("module", "list")
    jobid = flux22.submit("-n1", "sleep", "inf")
    assert alloc_summary(flux22, jobid) == "rank0/core0"


@pytest.mark.parametrize("arg", ["mode=foobar", "mode=limited=-1", "mode=limited=0", "queue-depth=bogus",
                                 "log-level=bogus", "log_level=debug", "bogus-arg"])
def test_bad_module_arguments_fail(flux22, arg):
    flux22("module", "remove", "sched-simple")
    flux22.fails("module", "load", "sched-simple", arg, code=1)
    assert "sched-simple" not in flux22.out("module", "list")
    flux22("module", "load", "sched-simple", "log-level=debug")
    assert "sched-simple" in flux22.out("module", "list")


def test_bad_module_argument_exits_1(flux22):
    # Flux 0.88: 'flux-module: load sched-simple: Invalid argument', exit 1
    flux22.fails("module", "reload", "sched-simple", "bogus-arg", code=1)
    # the failed reload removed the old module (as in Flux): nothing to remove now
    flux22.fails("module", "remove", "sched-simple", code=1)
    flux22.fails("module", "load", "sched-simple", "mode=foobar", code=1)
    flux22("module", "load", "sched-simple")


def test_failed_reload_leaves_no_scheduler(flux22):
    flux22("module", "reload", "sched-simple", "bogus-arg", check=False)
    assert "sched-simple" not in flux22.out("module", "list")


# ------------------------------------------------------------ sched-simple


def test_too_many_cores_is_denied(flux22):
    jobid = flux22.submit("-n1", "-c", "3", "hostname")
    assert flux22.eventlog(jobid) == ["submit", "validate", "depend", "priority", "exception", "clean"]
    exc = [e for e in flux22.events(jobid) if e["name"] == "exception"][0]["context"]
    assert exc == {"type": "alloc", "severity": 0,
                   "note": "unsatisfiable request: need 1 slot(s) of 3 core(s), only 0 such slot(s) "
                           "available (total cores: 4)",
                   "userid": UID}
    # never ran and FAILED: returncode 1 (-128 is for CANCELED), as Flux's JobInfo.returncode
    assert flux22.out("jobs", "-a", "-no", "{result} {returncode} {exception.type}", jobid).strip() == \
        "FAILED 1 alloc"
    assert free_rlist(flux22) == "rank[0-1]/core[0-1]"


def test_gpu_request_without_gpus_is_denied(flux22):
    jobid = flux22.submit("-n1", "-g1", "hostname")
    assert "exception" in flux22.eventlog(jobid)
    text = flux22.out("job", "eventlog", jobid)
    assert "gpu" in text.lower()
    assert 'type="alloc"' in text
    assert "unsatisfiable request: need 1 slot(s) with 1 GPU(s) each, only 0 available (total GPUs: 0)" in text


def test_infeasible_job_does_not_block_the_queue(flux22):
    # an InfeasibleRequest is denied and the pass continues
    bad = flux22.submit("-N3", "sleep", "inf")
    good = flux22.submit("-n1", "sleep", "inf")
    assert "exception" in flux22.eventlog(bad)
    assert "unsatisfiable request" in flux22.out("jobs", "-a", "-no", "{exception.note}", bad)
    assert alloc_summary(flux22, good) == "rank0/core0"


def test_jobspec_without_system_denied_by_scheduler(flux22, tmp_path):
    js = {"version": 1,
          "resources": [{"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}],
          "tasks": [{"command": ["hostname"], "slot": "task", "count": {"per_slot": 1}}],
          "attributes": {}}
    path = tmp_path / "nosys.json"
    path.write_text(json.dumps(js))
    jobid = flux22.out("job", "submit", "--flags=novalidate", str(path)).strip()
    assert "exception" in flux22.eventlog(jobid)
    assert "getting duration: Object item not found: system" in flux22.out("job", "eventlog", jobid)


# ------------------------------------------------------------ sched-simple


def test_worst_fit_order_cancel_and_refill(flux22):
    jobs = submit_n(flux22, 5)
    assert [alloc_summary(flux22, j) for j in jobs[:4]] == ["rank0/core0", "rank1/core0", "rank0/core1",
                                                          "rank1/core1"]
    allocs = [[e for e in flux22.events(j) if e["name"] == "alloc"][0]["context"] for j in jobs[:4]]
    assert allocs[0] == {"annotations": {"sched": {"resource_summary": "rank0/core0"}}}
    assert flux22.eventlog(jobs[4]) == ["submit", "validate", "depend", "priority"]
    assert free_rlist(flux22) == ""
    # cancel job3 -> exception and free; job5 gets its core
    flux22("cancel", jobs[2])
    assert flux22.eventlog(jobs[2])[-5:] == ["exception", "finish", "release", "free", "clean"]
    assert alloc_summary(flux22, jobs[4]) == "rank0/core1"
    assert free_rlist(flux22) == ""
    # cancel all -> everything free again
    r = flux22("cancel", "--all")
    assert err(r) == "flux-lite cancel: Canceled 4 jobs (0 errors)"
    assert free_rlist(flux22) == "rank[0-1]/core[0-1]"
    assert flux22.out("jobs", "-n") == ""


def test_fifo_head_of_line_blocking(flux22):
    small = flux22.submit("-n1", "sleep", "inf")
    big = flux22.submit("-n4", "sleep", "inf")         # needs every core: waits for `small`
    behind = flux22.submit("-n1", "sleep", "inf")      # would fit, but FIFO: may not pass the head
    assert flux22.state(big) == "SCHED" and flux22.state(behind) == "SCHED"
    flux22.advance("1h")
    assert flux22.state(behind) == "SCHED"
    flux22("cancel", small)
    assert alloc_summary(flux22, big) == "rank[0-1]/core[0-1]"
    assert flux22.state(behind) == "SCHED"


def test_priority_order_within_the_queue(flux22):
    running = submit_n(flux22, 4)
    a = flux22.submit("-n1", "sleep", "inf")
    b = flux22.submit("-n1", "--urgency=18", "sleep", "inf")
    c = flux22.submit("-n1", "--urgency=17", "sleep", "inf")
    flux22("cancel", running[1])
    assert flux22.state(b) == "RUN" and flux22.state(c) == "SCHED" and flux22.state(a) == "SCHED"
    assert alloc_summary(flux22, b) == "rank1/core0"
    flux22("cancel", running[3])
    assert flux22.state(c) == "RUN" and flux22.state(a) == "SCHED"


# --------------------------------------------------------- sched-simple


def test_reload_keeps_allocations(flux22):
    jobs = submit_n(flux22, 4)
    flux22("dmesg", "-C")
    flux22("module", "reload", "sched-simple")
    assert free_rlist(flux22) == ""
    assert len(flux22.out("jobs", "-n").splitlines()) == 4
    log = flux22.dmesg()
    assert log[:3] == ["broker.debug[0]: rmmod sched-simple", "broker.debug[0]: module sched-simple exited",
                       "broker.debug[0]: insmod sched-simple"]
    # sched-simple is a Python module: the broker runs it in a process of its own
    assert log[3].startswith("broker.debug[0]: module-python-exec sched-simple pid=")
    assert log[4] == "job-manager.debug[0]: scheduler: hello +partial-ok"
    # at the default log level (info), no debug lines
    assert not [line for line in log if line.startswith("sched-simple.debug")]
    hellos = [line for line in log if line.startswith("sched-simple.info[0]: hello: ")]
    # one line per allocated job (Flux's hello order is the job manager's hash order)
    assert sorted(hellos) == sorted(f"sched-simple.info[0]: hello: {j}: {s}" for j, s in
                                    zip(jobs, ["rank0/core0", "rank1/core0", "rank0/core1", "rank1/core1"]))
    assert log[-2:] == ["job-manager.debug[0]: scheduler: ready limited",
                        "sched-simple.info[0]: ready: queue-depth=8 log-level=info pool-class=Rv1Pool Rv1 "
                        "rank[0-1]/core[0-1]"]
    # no double booking after the reload: a new job waits
    extra = flux22.submit("-n1", "sleep", "inf")
    assert flux22.state(extra) == "SCHED"
    flux22("cancel", jobs[0])
    assert alloc_summary(flux22, extra) == "rank0/core0"
    flux22("sched", "check")


def test_remove_then_cancel_all_leaves_nothing_pending(flux22):
    jobs = submit_n(flux22, 5)
    flux22("module", "remove", "sched-simple")
    assert "sched-simple" not in flux22.out("module", "list")
    # no scheduler: new jobs wait in SCHED without any alloc
    late = flux22.submit("-n1", "sleep", "inf")
    assert flux22.eventlog(late) == ["submit", "validate", "depend", "priority"]
    r = flux22("cancel", "--all")
    assert err(r) == "flux-lite cancel: Canceled 6 jobs (0 errors)"
    for jobid in jobs[:4]:
        assert flux22.eventlog(jobid)[-5:] == ["exception", "finish", "release", "free", "clean"]
    for jobid in (jobs[4], late):
        assert flux22.eventlog(jobid)[-2:] == ["exception", "clean"]
    assert json.loads(flux22.out("module", "stats", "job-manager"))["active_jobs"] == 0
    flux22("dmesg", "-C")
    flux22("module", "load", "sched-simple", "mode=unlimited")
    log = flux22.dmesg()
    assert "job-manager.debug[0]: scheduler: ready unlimited" in log
    assert ("sched-simple.info[0]: ready: queue-depth=unlimited log-level=info pool-class=Rv1Pool Rv1 "
            "rank[0-1]/core[0-1]") in log
    assert not [line for line in log if "hello: " in line]  # nothing was still allocated
    assert free_rlist(flux22) == "rank[0-1]/core[0-1]"


def test_unloaded_scheduler_then_load_allocates_waiting_jobs(flux22):
    flux22("module", "remove", "sched-simple")
    jobs = submit_n(flux22, 3, "sleep", "inf")
    flux22.advance("1m")
    assert all(flux22.eventlog(j) == ["submit", "validate", "depend", "priority"] for j in jobs)
    flux22("module", "load", "sched-simple")
    assert [alloc_summary(flux22, j) for j in jobs] == ["rank0/core0", "rank1/core0", "rank0/core1"]


def test_unlimited_mode_urgency_wins_the_freed_slot(flux22):
    flux22("module", "reload", "sched-simple", "mode=unlimited")
    jobs = submit_n(flux22, 5)
    assert flux22.state(jobs[4]) == "SCHED"
    flux22("job", "urgency", jobs[4], "20")
    assert flux22.eventlog(jobs[4])[-2:] == ["urgency", "priority"]
    flux22("cancel", jobs[0])
    assert alloc_summary(flux22, jobs[4]) == "rank0/core0"
    flux22("cancel", "--all")
    flux22("module", "reload", "sched-simple")
    assert free_rlist(flux22) == "rank[0-1]/core[0-1]"


def test_limited_mode_urgency_wins_the_freed_slot(flux22):
    # in sched-simple's default limited mode
    jobs = submit_n(flux22, 6)
    flux22("job", "urgency", jobs[5], "20")
    flux22("cancel", jobs[0])
    assert alloc_summary(flux22, jobs[5]) == "rank0/core0"
    r = flux22.fails("job", "wait-event", "-t", "0.5", jobs[4], "alloc")
    assert err(r).endswith("wait-event timeout on event 'alloc'")


def test_more_pending_jobs_than_queue_depth(flux22):
    running = submit_n(flux22, 4)
    pending = submit_n(flux22, 12, "--setattr=exec.test.run_duration=1s", "true")  # 12 > queue-depth 8
    for j in running:
        flux22("cancel", j)
    flux22.advance("3s")
    assert [flux22.state(j) for j in pending] == ["INACTIVE"] * 12
    assert [alloc_summary(flux22, j) for j in pending[:4]] == ["rank0/core0", "rank1/core0", "rank0/core1",
                                                                "rank1/core1"]


# --------------------------------------------------------- forecast


def test_fifo_forecast_t_estimate(flux22):
    running = flux22.submit("-n4", "-t", "3600s", "sleep", "3600")
    head = flux22.submit("-n4", "-t", "3600s", "sleep", "3600")
    second = flux22.submit("-n4", "-t", "3600s", "sleep", "3600")
    out = flux22.out("jobs", "-no", "{id.f58} {annotations.sched.t_estimate} {contextual_info}")
    assert out.splitlines()[:2] == [f"{head} {T0 + 3600} eta:1h", f"{second} {T0 + 7200} eta:2h"]
    flux22.advance("10m")
    assert flux22.out("jobs", "-no", "{contextual_info}", head).strip() == "eta:50m"
    flux22("cancel", running)
    assert flux22.state(head) == "RUN"
    assert flux22.out("jobs", "-no", "{annotations.sched.t_estimate}", head).strip() == ""
    assert json.loads(json.dumps(flux22.events(head)[4]["context"])) == {
        "annotations": {"sched": {"resource_summary": "rank[0-1]/core[0-1]"}}}
    assert float(flux22.out("jobs", "-no", "{annotations.sched.t_estimate}", second)) == T0 + 600 + 3600


def test_forecast_unknown_after_job_without_duration(flux22):
    flux22.submit("-n4", "-t", "1h", "sleep", "inf")
    nodur = flux22.submit("-n4", "sleep", "inf")
    after = flux22.submit("-n1", "-t", "1m", "sleep", "inf")
    out = flux22.out("jobs", "-no", "{id.f58} {annotations.sched.t_estimate}|{contextual_info}")
    assert out.splitlines()[:2] == [f"{nodur} {T0 + 3600}|eta:1h", f"{after} |"]


def test_sched_annotations_follow_the_request(flux22):
    # a job whose request is canceled (held, scheduler unloaded) loses its
    # sched annotations; they come back when the request is sent again
    flux22.submit("-n4", "-t", "1h", "sleep", "inf")
    a = flux22.submit("-n1", "-t", "5m", "sleep", "inf")
    b = flux22.submit("-n1", "-t", "5m", "sleep", "inf")

    def info(jobid):
        return flux22.out("jobs", "-no", "{annotations}|{contextual_info}", jobid).strip()

    eta = f'{{"sched": {{"t_estimate": {T0 + 3600}}}}}|eta:1h'  # json.dumps' spacing, as flux-jobs prints it
    assert info(a) == eta and info(b) == eta
    flux22("job", "urgency", a, "hold")
    assert info(a) == "|held"
    assert info(b) == eta
    flux22("module", "remove", "sched-simple")
    assert info(b) == "|"
    flux22("module", "load", "sched-simple")
    assert info(b) == eta and info(a) == "|held"
    flux22("job", "urgency", a, "default")
    assert info(a) == eta


def test_forecast_stale_estimate_cleared_by_new_head(flux22):
    # a higher-urgency head without a time limit clears the estimate behind it
    flux22.submit("-n4", "-t", "3600s", "sleep", "3600")
    second = flux22.submit("-n4", "-t", "3600s", "sleep", "3600")
    assert flux22.out("jobs", "-no", "{annotations.sched.t_estimate}", second).strip() == str(T0 + 3600)
    head = flux22.submit("-n4", "--urgency=20", "sleep", "3600")
    assert flux22.out("jobs", "-no", "{annotations.sched.t_estimate}|{contextual_info}", head).strip() == \
        f"{T0 + 3600}|eta:1h"
    assert flux22.out("jobs", "-no", "{annotations.sched.t_estimate}|{contextual_info}", second).strip() == "|"


# --------------------------------------------------------- sched-fifo


def test_sched_fifo_is_sched_simple_without_debug_hooks(flux22):
    """flux-core's sched-fifo: the same priority FIFO and forecast (sched-simple
    extends it), its annotation t_estimate alone, and no debug hooks."""
    flux22("module", "remove", "sched-simple")
    flux22("module", "load", "sched-fifo")
    assert [line.split()[0] for line in flux22.out("module", "list").splitlines() if "sched" in line] == [
        "sched-fifo"]
    running = flux22.submit("-n1", "-t", "1h", "sleep", "3600")
    head = flux22.submit("-n4", "-t", "1h", "sleep", "inf")
    behind = flux22.submit("-n1", "-t", "1h", "sleep", "inf")   # fits, but may not pass the head
    assert flux22.state(head) == "SCHED" and flux22.state(behind) == "SCHED"
    fmt = "{annotations.sched.t_estimate} {annotations.sched.reason_pending}|"
    assert flux22.out("jobs", "-no", fmt, head, behind) == f"{T0 + 3600} |\n{T0 + 7200} |\n"
    # sched-simple's debug bits are set (module debug is the broker's) but do nothing
    flux22("module", "debug", "--setbit", "1", "sched-fifo")
    flux22("module", "debug", "--setbit", "2", "sched-fifo")
    assert flux22.out("jobs", "-no", fmt, head, behind) == f"{T0 + 3600} |\n{T0 + 7200} |\n"
    flux22("cancel", running)
    assert flux22.state(head) == "RUN" and alloc_summary(flux22, head) == "rank[0-1]/core[0-1]"
    # it takes no test-hello-nopartial; the policy "fifo" selects it
    flux22("module", "remove", "sched-fifo")
    assert flux22("module", "load", "sched-fifo", "test-hello-nopartial", check=False).exit_code != 0
    flux22("sched", "reload", "--policy=fifo")
    assert flux22.out("sched", "status").count("sched-fifo") >= 1
