"""Scheduler reload while housekeeping holds resources (as Flux 0.88 does it).

A partially released housekeeping allocation survives a reload only when the
new scheduler says partial-ok in its hello; without it the job manager
terminates that housekeeping and forgets it, so its ranks are free at once in
both views (`resource list` from the job manager and `--from-sched`).
"""

import json

import pytest

RUN1S = "--setattr=exec.test.run_duration=1s"
RUN10M = "--setattr=exec.test.run_duration=10m"
HEADER = "       JOBID NNODES #ACTIVE  RUNTIME NODELIST"

NOPARTIAL = [
    pytest.param(("module", "reload", "sched-simple", "test-hello-nopartial", "log-level=debug"),
                 id="module-reload"),
    pytest.param(("module", "reload", "-f", "sched-simple", "test-hello-nopartial", "log-level=debug"),
                 id="module-reload-f"),
    pytest.param(("sched", "reload", "--no-partial-ok"), id="sched-reload"),
]
PARTIAL = [
    pytest.param(("module", "reload", "sched-simple", "log-level=debug"), id="module-reload"),
    pytest.param(("module", "reload", "-f", "sched-simple", "log-level=debug"), id="module-reload-f"),
    pytest.param(("sched", "reload"), id="sched-reload"),
]


@pytest.fixture(autouse=True)
def sched_debug(request):
    """As t2226: sched-simple loaded with log-level=debug, so that its
    alloc and free lines reach dmesg (at the default, info, they do not)."""
    if "flux" in request.fixturenames:
        request.getfixturevalue("flux")("module", "reload", "sched-simple", "log-level=debug")


# -- helpers ----------------------------------------------------------------------------------


def hk_config(flux, **keys):
    table = {"command": ["hk.sh"]}
    table.update({k.replace("_", "-"): v for k, v in keys.items()})
    flux("config", "load", input=json.dumps({"job-manager": {"housekeeping": table}}))


def running(flux):
    return len(flux.out("housekeeping", "list", "-no", "{id}").splitlines())


def stragglers(flux):
    return [int(n) for n in flux.out("housekeeping", "list", "-no", "{nnodes}").split()]


def allocated(flux, field="nnodes"):
    """(job-manager view, scheduler view via --from-sched, scheduler view via the env variable)."""
    args = ("resource", "list", "-s", "allocated", "-no", "{" + field + "}")
    return (
        flux.out(*args).strip(),
        flux.out(*args, "--from-sched").strip(),
        flux.out(*args, env={"FLUX_RESOURCE_LIST_RPC": "sched.resource-status"}).strip(),
    )


def frees(flux, jobid):
    prefix = f"sched-simple.debug[0]: free: {jobid}: "
    return [line[len("sched-simple.debug[0]: "):] for line in flux.dmesg() if line.startswith(prefix)]


def sched_clean(flux):
    r = flux("sched", "check", check=False)
    assert r.exit_code == 0, r.stdout
    assert r.stdout == "sched check: ok\n"


def run(flux, *args):
    jobid = flux.out("submit", "--wait-event=clean", *args, RUN1S, "true").strip()
    assert flux.state(jobid) == "INACTIVE"
    return jobid


@pytest.fixture
def straggler(flux):
    """Setup: release-after "0", rank 3 takes 10 s; a 4-node job has just ended."""
    hk_config(flux, release_after="0", rank_durations={"3": "10s"})
    jobid = run(flux, "-N4")
    assert running(flux) == 1 and stragglers(flux) == [1]
    assert allocated(flux) == ("1", "1", "1")
    assert frees(flux, jobid) == [f"free: {jobid}: rank{r}/core[0-1]" for r in range(3)]
    flux("dmesg", "-C")
    return flux, jobid


# -- no partial-ok ----------------------------------------------------------------------------------


@pytest.mark.parametrize("reload", NOPARTIAL)
def test_reload_without_partial_ok_terminates_straggler(straggler, reload):
    flux, jobid = straggler
    flux(*reload)
    log = flux.dmesg()
    assert "job-manager.debug[0]: scheduler: hello" in log
    assert (f"job-manager.err[0]: housekeeping: node3 (rank 3) from {jobid} will be terminated because "
            "scheduler does not support restart with partially released resources") in log
    assert not any(f"hello: {jobid}" in line or f"hello: id={jobid}" in line for line in log)
    assert running(flux) == 0
    assert flux.out("housekeeping", "list") == HEADER + "\n"
    assert allocated(flux) == ("0", "0", "0")
    sched_clean(flux)
    # the terminated housekeeping is forgotten: no further free, ever
    flux.advance("15s")
    assert frees(flux, jobid) == []
    assert not any(jobid in line for line in flux.dmesg() if "will be terminated" not in line)
    assert allocated(flux) == ("0", "0", "0")
    sched_clean(flux)
    # and a 4-node job fits at once
    other = flux.submit("-N4", RUN1S, "true")
    assert flux.state(other) == "RUN"
    sched_clean(flux)


def test_nopartial_reload_frees_straggler_for_pending_job(flux):
    """As in Flux 0.88: rank 3 in housekeeping, ranks 0-2 running, jobs pending;
    after the no-partial-ok reload the first pending job gets rank 3 at once."""
    hk_config(flux, release_after="0", rank_durations={"3": "60s"})
    hk_job = run(flux, "-N4")
    ids = flux.out("submit", "--cc=1-3", "-N1", "-t", "10m", RUN10M, "true").split()
    pending = flux.submit("-N1", "-t", "5m", RUN1S, "true")
    pending2 = flux.submit("-N2", "-t", "5m", RUN1S, "true")
    assert [flux.state(j) for j in ids] == ["RUN"] * 3
    assert flux.state(pending) == "SCHED"
    assert allocated(flux) == ("4", "4", "4")
    assert flux.out("housekeeping", "list", "-o", "{id.f58} {allocated.ranks} {pending.ranks}") == (
        f"JOBID RANKS ACTIVE_RANKS\n{hk_job} 3 3\n")
    flux("dmesg", "-C")
    flux("module", "reload", "-f", "sched-simple", "test-hello-nopartial", "log-level=debug")
    log = flux.dmesg()
    assert (f"job-manager.err[0]: housekeeping: node3 (rank 3) from {hk_job} will be terminated because "
            "scheduler does not support restart with partially released resources") in log
    for jobid, rank in zip(ids, range(3)):
        assert f"sched-simple.info[0]: hello: {jobid}: rank{rank}/core[0-1]" in log
    assert f"sched-simple.debug[0]: alloc: {pending}: rank3/core[0-1]" in log
    assert flux.state(pending) == "RUN"
    assert flux.state(pending2) == "SCHED"
    assert flux.out("housekeeping", "list") == HEADER + "\n"
    assert allocated(flux) == ("4", "4", "4")
    sched_clean(flux)


# -- partial-ok ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reload", PARTIAL)
def test_reload_with_partial_ok_keeps_straggler(straggler, reload):
    flux, jobid = straggler
    flux(*reload)
    log = flux.dmesg()
    assert "job-manager.debug[0]: scheduler: hello +partial-ok" in log
    assert f"sched-simple.info[0]: hello: {jobid}: rank3/core[0-1]" in log
    assert not any("will be terminated" in line for line in log)
    assert running(flux) == 1
    assert allocated(flux) == ("1", "1", "1")
    assert allocated(flux, "ranks") == ("3", "3", "3")
    sched_clean(flux)
    # the final free covers exactly the remainder
    flux.advance("9s")
    assert frees(flux, jobid) == []
    flux.advance("1s")
    assert frees(flux, jobid) == [f"free: {jobid}: rank3/core[0-1] (final)"]
    assert running(flux) == 0
    assert allocated(flux) == ("0", "0", "0")
    sched_clean(flux)
    # the housekeeping config in force is the "0" of the setup
    stats = json.loads(flux.out("module", "stats", "job-manager"))["housekeeping"]
    assert stats["config"]["release-after"] == 0


def test_hello_log_line_order(straggler):
    flux, jobid = straggler
    flux("module", "reload", "sched-simple", "log-level=debug")
    lines = [line for line in flux.dmesg() if line.startswith("sched-simple.") and "hello" in line]
    assert lines[0] == f"sched-simple.info[0]: hello: {jobid}: rank3/core[0-1]"
    assert lines[1].startswith(f"sched-simple.debug[0]: hello: id={jobid} priority=16 userid=")


def test_reload_before_any_release_reports_whole_allocation(flux):
    """A housekeeping allocation with nothing released yet is a whole one:
    reported even without partial-ok (4.3 step 3, 4.6)."""
    hk_config(flux, rank_durations={"3": "10s"})  # release-after unset: nothing released before the end
    jobid = run(flux, "-N4")
    assert allocated(flux) == ("4", "4", "4")
    flux("dmesg", "-C")
    flux("sched", "reload", "--no-partial-ok")
    log = flux.dmesg()
    assert not any("will be terminated" in line for line in log)
    assert f"sched-simple.info[0]: hello: {jobid}: rank[0-3]/core[0-1]" in log
    assert allocated(flux) == ("4", "4", "4")
    sched_clean(flux)
    flux.advance("10s")
    assert frees(flux, jobid) == [f"free: {jobid}: rank[0-3]/core[0-1] (final)"]
    assert allocated(flux) == ("0", "0", "0")
    sched_clean(flux)


# -- partial release cross-check ------------------------------------------------------------------------------


def test_partial_release_all_cores_free_afterwards(flux):
    """Command sleep 0, release-after 0s."""
    hk_config(flux, release_after="0s", duration="0")
    jobid = run(flux, "-N4", "-n4")
    assert running(flux) == 0
    assert flux.out("resource", "list", "-s", "free", "-no", "{nnodes} {ncores}").strip() == "4 8"
    assert allocated(flux) == ("0", "0", "0")
    log = flux.dmesg()
    assert not any("free RPC failed to remove all resources" in line for line in log)
    assert not any("free callback raised" in line for line in log)
    assert sum("(final)" in line for line in frees(flux, jobid)) == 1
    sched_clean(flux)


@pytest.mark.parametrize("reload", NOPARTIAL[2:] + PARTIAL[2:])
def test_stuck_rank_0_survives_reload_until_killed(flux, reload):
    """Housekeeping stuck on rank 0 after ranks 1-3 were released.

    With partial-ok the remaining rank is re-registered (1 allocated before and
    after the reload, 0 after kill --all); without it the allocation is dropped
    at hello."""
    hk_config(flux, release_after="0s", rank_durations={"0": "inf"})
    jobid = run(flux, "-N4")
    assert flux.out("housekeeping", "list", "-no", "{id.f58} {nnodes}") == f"{jobid} 1\n"
    assert allocated(flux) == ("1", "1", "1")
    flux(*reload)
    if "--no-partial-ok" in reload:
        assert allocated(flux) == ("0", "0", "0")
        assert running(flux) == 0
    else:
        assert allocated(flux) == ("1", "1", "1")
        assert allocated(flux, "ranks") == ("0", "0", "0")
        flux("housekeeping", "kill", "--all")
        assert allocated(flux) == ("0", "0", "0")
        assert frees(flux, jobid)[-1] == f"free: {jobid}: rank0/core[0-1] (final)"
    sched_clean(flux)


def test_stuck_rank_0_and_running_job_across_reload(flux):
    """Plus a running -N1 job: 2 nodes allocated before and after; kill -> 1."""
    hk_config(flux, release_after="0s", rank_durations={"0": "inf"})
    run(flux, "-N4")
    sleeper = flux.submit("-N1", "--setattr=exec.test.run_duration=3600s", "sleep", "3600")
    assert flux.state(sleeper) == "RUN"
    assert flux.out("jobs", "-no", "{ranks}", sleeper).strip() == "1"
    assert allocated(flux) == ("2", "2", "2")
    flux("sched", "reload")
    assert allocated(flux) == ("2", "2", "2")
    assert allocated(flux, "ranks") == ("0-1", "0-1", "0-1")
    sched_clean(flux)
    flux("housekeeping", "kill", "--all")
    assert allocated(flux) == ("1", "1", "1")
    assert running(flux) == 0
    sched_clean(flux)
    flux("cancel", sleeper)
    assert allocated(flux) == ("0", "0", "0")
    sched_clean(flux)
