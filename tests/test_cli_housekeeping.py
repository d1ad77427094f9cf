"""CLI tests for housekeeping, against Flux 0.88's outputs.

Nothing executes in flux-lite, so the housekeeping script of the sharness
tests is simulated through flux-lite's config keys: `duration` (every rank),
`rank-durations` ({TARGETS: FSD|inf}, e.g. rank 3 sleeping 10 s),
`fail-ranks` (nonzero exit) and `drain-on-failure`, or by the command itself
when the job emulation knows it (`sleep inf`, `false`). Jobs "run" in test-exec
mode (`exec.test.run_duration`); the 4-node x 2-core instance runs on a
virtual clock, so every release happens at an exact instant.
"""

import json

import pytest


RUN1S = "--setattr=exec.test.run_duration=1s"
HEADER = "       JOBID NNODES #ACTIVE  RUNTIME NODELIST"
ERR = "flux-lite housekeeping: ERROR: "


@pytest.fixture(autouse=True)
def sched_debug(request):
    """As t2226: sched-simple loaded with log-level=debug, so that its
    alloc and free lines reach dmesg (at the default, info, they do not)."""
    if "flux" in request.fixturenames:
        request.getfixturevalue("flux")("module", "reload", "sched-simple", "log-level=debug")


# -- helpers -------------------------------------------------------------------------


def hk_config(flux, **keys):
    """Load a config whose [job-manager.housekeeping] table holds KEYS (- for _)."""
    table = {"command": ["hk.sh"]}
    table.update({k.replace("_", "-"): v for k, v in keys.items()})
    flux("config", "load", input=json.dumps({"job-manager": {"housekeeping": table}}))


def hk_list(flux, *args):
    return flux.out("housekeeping", "list", *args)


def running(flux):
    """t2226's "running N": how many jobs are in housekeeping."""
    return len(hk_list(flux, "-no", "{id}").splitlines())


def allocated_nnodes(flux, *args, env=None):
    return int(flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}", *args, env=env).strip())


def stats(flux):
    return json.loads(flux.out("module", "stats", "job-manager"))["housekeeping"]


def frees(flux, jobid=None):
    """sched-simple's debug lines for frees, without the prefix."""
    prefix = "sched-simple.debug[0]: free: "
    out = [line[len("sched-simple.debug[0]: "):] for line in flux.dmesg() if line.startswith(prefix)]
    if jobid is not None:
        out = [line for line in out if line.startswith(f"free: {jobid}: ")]
    return out


def hk_log(flux):
    return [line for line in flux.dmesg() if "housekeeping" in line]


def row(jobid, nnodes, active, runtime, nodelist):
    return f"{jobid:>12} {nnodes:>6} {active:>7} {runtime:>8} {nodelist}"


def sched_clean(flux):
    r = flux("sched", "check", check=False)
    assert r.exit_code == 0, r.stdout
    assert r.stdout == "sched check: ok\n"


def run(flux, *args):
    """A 1 s job in test-exec mode, waited for until it is INACTIVE (as `flux run`,
    which under the virtual clock advances it by 1 s); returns the job id."""
    jobid = flux.out("submit", "--wait-event=clean", *args, RUN1S, "true").strip()
    assert flux.state(jobid) == "INACTIVE"
    return jobid


# -- command line -----------------------------------------------------------


def test_help_and_usage(flux):
    for args in (("--help",), ("list", "--help"), ("kill", "--help")):
        assert flux("housekeeping", *args).exit_code == 0
    out = flux.out("housekeeping", "kill", "--help")
    for opt in ("-s, --signal", "-t, --targets", "-j, --jobid", "--all"):
        assert opt in out
    out = flux.out("housekeeping", "list", "--help")
    for opt in ("-i, --include", "-n, --no-header", "-o, --format"):
        assert opt in out
    flux.fails("housekeeping", code=2)


def test_kill_selector_errors(flux):
    r = flux.fails("housekeeping", "kill")
    assert r.stderr == ERR + "specify at least one of --targets, --jobid, or --all\n"
    r = flux.fails("housekeeping", "kill", "--all", "--jobid=f1")
    assert r.stderr == ERR + "do not specify --jobid with --all\n"


def test_unconfigured(flux):
    assert stats(flux) == {"running": {}, "config": {"release-after": -1, "command": ""}}
    assert hk_list(flux) == HEADER + "\n"
    # (the transcript cannot show whether a blank line follows: compare without it)
    assert hk_list(flux, "-o", "help").rstrip("\n") == (
        "\nConfigured flux-housekeeping output formats:\n\n"
        "  default      Default flux-housekeeping format string\n"
        "  pending      flux-housekeeping format string including active nodes only")
    # without housekeeping the whole R goes back at once
    jobid = run(flux, "-N4")
    assert frees(flux, jobid) == [f"free: {jobid}: rank[0-3]/core[0-1] (final)"]
    assert running(flux) == 0
    sched_clean(flux)


# -- config ------------------------------------------------------


def test_bad_configs_are_refused(flux):
    before = flux.out("config", "get")
    r = flux.fails("config", "load", input=json.dumps(
        {"job-manager": {"housekeeping": {"command": ["hk.sh"], "release-after": "foo"}}}))
    assert r.stderr == ("flux-lite config: ERROR: load: error updating job-manager: "
                        "job-manager.housekeeping.release-after FSD parse error\n")
    r = flux.fails("config", "load", input=json.dumps({"job-manager": {"housekeeping": {"xyz": 42}}}))
    assert "left unpacked" in r.stderr
    assert flux.out("config", "get") == before


def test_release_after_in_stats_and_reset(flux):
    hk_config(flux, release_after="0")
    assert stats(flux)["config"] == {"release-after": 0, "command": "hk.sh"}
    hk_config(flux, release_after="5s")
    assert stats(flux)["config"] == {"release-after": 5, "command": "hk.sh"}
    # omitting release-after resets it to "never" (-1), as in flux-core
    flux("config", "load", input=json.dumps({"job-manager": {"housekeeping": {"command": ["true"]}}}))
    assert stats(flux)["config"] == {"release-after": -1, "command": "true"}


# -- where and when it runs ---------------------------------------------------------


def test_runs_on_the_jobs_ranks_only(flux):
    """A 2-node job on ranks 1-2 keeps exactly ranks 1-2 in housekeeping."""
    hold0 = flux.submit("-N1", "--setattr=exec.test.run_duration=1h", "true")
    hk_config(flux, duration="5s")
    flux("dmesg", "-C")
    jobid = run(flux, "-N2")
    # job-list brackets several ranks
    assert flux.out("jobs", "-a", "-no", "{ranks} {state}", jobid).strip() == "[1-2] INACTIVE"
    assert hk_list(flux, "-o", "{id.f58} {ranks} {pending.ranks}") == f"JOBID RANKS ACTIVE_RANKS\n{jobid} 1-2 1-2\n"
    assert stats(flux)["running"][jobid]["pending"] == "1-2"
    flux.advance("5s")
    assert running(flux) == 0
    assert frees(flux) == [f"free: {jobid}: rank[1-2]/core[0-1] (final)"]
    assert hk_log(flux) == [f"job-manager.debug[0]: housekeeping: {jobid} started",
                            f"job-manager.debug[0]: housekeeping: {jobid} complete"]
    flux("cancel", hold0)
    sched_clean(flux)


def test_release_after_unset_one_final_free(flux):
    hk_config(flux, rank_durations={"3": "10s"})
    flux("dmesg", "-C")
    jobid = run(flux, "-N4")
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 4, 1, "0s", "node[0-3]") + "\n"
    assert allocated_nnodes(flux) == 4
    flux.advance("9s")
    assert allocated_nnodes(flux) == 4 and frees(flux) == []
    flux.advance("1s")
    assert frees(flux) == [f"free: {jobid}: rank[0-3]/core[0-1] (final)"]
    assert running(flux) == 0 and allocated_nnodes(flux) == 0
    sched_clean(flux)


def test_release_after_zero_frees_each_rank(flux):
    """Four frees, rank0..rank3, exactly one final."""
    hk_config(flux, release_after="0")
    flux("dmesg", "-C")
    jobid = run(flux, "-n4", "-N4")
    lines = frees(flux, jobid)
    assert lines == [f"free: {jobid}: rank{r}/core0" for r in range(3)] + [f"free: {jobid}: rank3/core0 (final)"]
    assert sum("final" in line for line in lines) == 1
    assert running(flux) == 0
    sched_clean(flux)


def test_release_after_5s_with_straggler(flux):
    """As in Flux 0.88: rank 3 takes 10 s, release-after 5 s:
    one partial free at the timer, one final free when rank 3 is done."""
    hk_config(flux, release_after="5s", rank_durations={"3": "10s"})
    flux("dmesg", "-C")
    r = flux("run", "-N4", RUN1S, "true")
    # flux run (flux job attach) on a test-exec job, which has no output eventlog
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "flux-lite job: No job output found\n")
    jobid = flux.out("jobs", "-a", "-no", "{id.f58}").strip()
    t_end = flux.now()

    # the job is over, its nodes are not: INACTIVE in jobs, allocated in resource list
    assert flux.state(jobid) == "INACTIVE"
    assert flux.out("jobs", "-a", "-no", "{status}", jobid).strip() == "COMPLETED"
    assert flux.eventlog(jobid)[-4:] == ["finish", "release", "free", "clean"]
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 4, 1, "0s", "node[0-3]") + "\n"
    assert flux.out("resource", "list") == (
        "     STATE NNODES NCORES NGPUS NODELIST\n"
        "      free      0      0     0 \n"
        " allocated      4      8     0 node[0-3]\n"
        "      down      0      0     0 \n")
    assert "housekeeping" in flux.out("resource", "status")

    flux.advance("1s")
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 4, 1, "1.000s", "node[0-3]") + "\n"
    assert hk_list(flux, "-o", "{id.f58} {allocated.ranks} {pending.ranks}") == (
        f"JOBID RANKS ACTIVE_RANKS\n{jobid} 0-3 3\n")
    assert stats(flux) == {
        "running": {jobid: {"t_start": t_end, "pending": "3", "allocated": "0-3"}},
        "config": {"release-after": 5, "command": "hk.sh"},
    }
    assert frees(flux) == []

    flux.advance("4s")  # the release-after timer
    assert frees(flux) == [f"free: {jobid}: rank[0-2]/core[0-1]"]
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 1, 1, "5.000s", "node3") + "\n"
    assert hk_list(flux, "-o", "pending") == (
        f"       JOBID #ACTIVE  RUNTIME ACTIVE_NODES\n{jobid:>12}       1   5.000s node3\n")
    assert stats(flux)["running"][jobid] == {"t_start": t_end, "pending": "3", "allocated": "3"}
    assert allocated_nnodes(flux) == 1
    assert allocated_nnodes(flux, "--from-sched") == 1
    sched_clean(flux)

    flux.advance("4s")
    assert running(flux) == 1 and len(frees(flux)) == 1
    flux.advance("1s")  # rank 3 done, 10 s after the job ended
    assert frees(flux) == [f"free: {jobid}: rank[0-2]/core[0-1]", f"free: {jobid}: rank3/core[0-1] (final)"]
    assert hk_list(flux) == HEADER + "\n"
    assert stats(flux)["running"] == {}
    assert allocated_nnodes(flux) == 0
    assert hk_log(flux) == [f"job-manager.debug[0]: housekeeping: {jobid} started",
                            f"job-manager.debug[0]: housekeeping: {jobid} complete"]
    sched_clean(flux)


def test_housekeeping_nodes_are_not_reallocated(flux):
    """While rank 3 is in housekeeping, a 4-node job waits; it starts when rank 3 is released."""
    hk_config(flux, release_after="0", rank_durations={"3": "10s"})
    first = run(flux, "-N4")
    second = flux.submit("-N4", RUN1S, "true")
    assert flux.state(second) == "SCHED"
    small = flux.submit("-N3", RUN1S, "true")
    # FCFS: the 3-node job waits behind the blocked head
    assert flux.state(small) == "SCHED"
    flux.advance("10s")
    assert flux.state(second) == "RUN"
    assert frees(flux, first)[-1] == f"free: {first}: rank3/core[0-1] (final)"
    sched_clean(flux)


# -- failures (drain-on-failure) --------------------------------------------------------


def test_launch_failure_on_every_rank(flux):
    """command=/noexist -- simulated as every rank failing."""
    flux("config", "load", input=json.dumps(
        {"job-manager": {"housekeeping": {"command": ["/noexist"], "fail-ranks": "0-3"}}}))
    flux("dmesg", "-C")
    jobid = run(flux)
    assert flux.out("jobs", "-a", "-no", "{result}", jobid).strip() == "COMPLETED"
    assert any("nonzero exit code" in line or "error launching process" in line for line in flux.dmesg())
    assert running(flux) == 0
    assert allocated_nnodes(flux) == 0
    sched_clean(flux)


def test_failure_on_rank_3_is_logged_not_drained(flux):
    """As in Flux 0.88."""
    hk_config(flux, fail_ranks="3", duration="2s")
    flux("dmesg", "-C")
    jobid = run(flux, "-N4")
    assert flux.out("jobs", "-a", "-no", "{result}", jobid).strip() == "COMPLETED"
    flux.advance("2s")
    assert hk_log(flux) == [
        f"job-manager.debug[0]: housekeeping: {jobid} started",
        f"job-manager.err[0]: housekeeping: node3 (rank 3) {jobid}: nonzero exit code",
        f"job-manager.debug[0]: housekeeping: {jobid} complete",
    ]
    assert frees(flux) == [f"free: {jobid}: rank[0-3]/core[0-1] (final)"]
    assert running(flux) == 0
    assert flux.out("resource", "status") == "       STATEUP NNODES NODELIST\n       avail ✔      4 node[0-3]\n"
    assert flux.out("resource", "list", "-s", "free", "-no", "{nnodes}").strip() == "4"
    sched_clean(flux)


def test_drain_on_failure(flux):
    hk_config(flux, fail_ranks="2-3", drain_on_failure=True)
    jobid = run(flux, "-N4")
    assert running(flux) == 0
    assert flux.out("resource", "status", "-s", "drained", "-no", "{nnodes} {ranks} {reason}") == (
        f"2 2-3 housekeeping@{jobid} nonzero exit code\n")
    assert flux.out("resource", "list", "-s", "down", "-no", "{nnodes} {nodelist}").strip() == "2 node[2-3]"
    # a failed rank is still released to the scheduler, and drained nodes are not reused
    assert frees(flux, jobid) == [f"free: {jobid}: rank[0-3]/core[0-1] (final)"]
    other = flux.submit("-N3", RUN1S, "true")
    assert flux.state(other) == "SCHED"
    sched_clean(flux)


def test_drain_on_failure_killed(flux):
    hk_config(flux, duration="inf", drain_on_failure=True)
    jobid = run(flux, "-N2")
    flux("housekeeping", "kill", "--all")
    assert flux.out("resource", "status", "-s", "drained", "-no", "{ranks} {reason}") == (
        f"0-1 housekeeping@{jobid} Terminated\n")
    sched_clean(flux)


# -- kill -------------------------------------------------------------------


def test_kill_all(flux):
    """Two 2-node jobs stuck in housekeeping, kill --all --signal=15."""
    hk_config(flux, duration="inf")
    flux("dmesg", "-C")
    ids = flux.out("submit", "--cc=0-1", "-N2", "--wait-event=clean", RUN1S, "true").split()
    assert [flux.state(j) for j in ids] == ["INACTIVE", "INACTIVE"]
    assert hk_list(flux) == "\n".join([HEADER, row(ids[0], 2, 2, "0s", "node[0-1]"),
                                       row(ids[1], 2, 2, "0s", "node[2-3]")]) + "\n"
    assert running(flux) == 2
    assert allocated_nnodes(flux) == 4
    r = flux("housekeeping", "kill", "--all", "--signal=15")
    assert (r.stdout, r.stderr) == ("", "")
    assert running(flux) == 0
    assert allocated_nnodes(flux) == 0
    assert [line for line in hk_log(flux) if ".err[" in line] == [
        f"job-manager.err[0]: housekeeping: node[0-1] (rank 0-1) {ids[0]}: Terminated",
        f"job-manager.err[0]: housekeeping: node[2-3] (rank 2-3) {ids[1]}: Terminated",
    ]
    assert frees(flux) == [f"free: {ids[0]}: rank[0-1]/core[0-1] (final)",
                           f"free: {ids[1]}: rank[2-3]/core[0-1] (final)"]
    sched_clean(flux)


def test_kill_by_jobid(flux):
    """--jobid as a decimal id, and -j as f58."""
    hk_config(flux, duration="inf")
    jobid = run(flux, "-N4")
    assert running(flux) == 1
    dec = flux.out("job", "id", jobid).strip()
    flux("housekeeping", "kill", f"--jobid={dec}", "--signal=15")
    assert running(flux) == 0
    jobid = run(flux, "-N4")
    # an unknown job id is not an error, and kills nothing
    assert flux("housekeeping", "kill", "--jobid=f123").stdout == ""
    assert running(flux) == 1
    flux("housekeeping", "kill", "-j", jobid)
    assert running(flux) == 0
    assert f"job-manager.err[0]: housekeeping: node[0-3] (rank 0-3) {jobid}: Terminated" in flux.dmesg()
    sched_clean(flux)


def test_four_single_node_jobs_include_and_targets(flux):
    """The kill variants, as Flux 0.88 answers them."""
    hk_config(flux, duration="inf")
    ids = flux.out("submit", "--cc=0-3", "-N1", "--wait-event=clean", RUN1S, "true").split()
    assert running(flux) == 4
    assert allocated_nnodes(flux) == 4
    assert [flux.state(j) for j in ids] == ["INACTIVE"] * 4
    assert len(hk_list(flux, "-n").splitlines()) == 4
    assert hk_list(flux, "-n") == "".join(row(j, 1, 1, "0s", f"node{r}") + "\n" for r, j in enumerate(ids))

    # -i: ranks or hosts; each job's sets are intersected; empty jobs are dropped
    assert hk_list(flux, "-i", "0") == HEADER + "\n" + row(ids[0], 1, 1, "0s", "node0") + "\n"
    assert hk_list(flux, "-i", "0", "-no", "{ranks}") == "0\n"
    assert hk_list(flux, "-i", "0,3", "-no", "{ranks}") == "0,3\n"
    assert hk_list(flux, "-i", "0,3") == "\n".join(
        [HEADER, row(ids[0], 1, 1, "0s", "node0"), row(ids[3], 1, 1, "0s", "node3")]) + "\n"
    assert hk_list(flux, "-i", "node0", "-no", "{ranks}") == "0\n"
    # an unknown host is an error, as Flux's Hostlist.index makes it
    r = flux.fails("housekeeping", "list", "-i", "nosuchhost")
    assert r.stderr == "flux-lite housekeeping: ERROR: host 'nosuchhost' not found\n"
    assert hk_list(flux, "-i", "0-3", "-no", "{ranks}") == "0-3\n"
    flux.fails("housekeeping", "list", "-i", "foo[")
    r = flux.fails("housekeeping", "list", "-o", "{foo}")
    assert r.stderr == ERR + "Error in user format: Unknown format field: foo\n"
    r = flux.fails("housekeeping", "list", "-o", "{id.f58")
    assert r.stderr == ERR + "Error in user format: expected '}' before end of string\n"

    flux("housekeeping", "kill", "--targets=0-1")
    assert hk_list(flux, "-no", "{id.f58} {ranks}") == f"{ids[2]} 2\n{ids[3]} 3\n"
    r = flux.fails("housekeeping", "kill", "--targets=nosuchhost")
    assert r.stderr == ERR + "didn't find nosuchhost in instance hostlist\n"
    r = flux.fails("housekeeping", "kill", "--targets=foo[")
    assert r.stderr == ERR + "--targets must be a valid Idset or Hostlist\n"
    # signaling a rank with nothing running there changes nothing
    flux("housekeeping", "kill", "--targets=0", "--signal=9")
    assert running(flux) == 2
    flux("housekeeping", "kill", "--targets=node2", "-s", "9")
    assert hk_list(flux, "-o", "{id.f58} {ranks}") == f"JOBID RANKS\n{ids[3]} 3\n"
    # guests may not kill housekeeping
    flux.fails("housekeeping", "kill", "--targets=3", env={"FLUX_HANDLE_USERID": "1234"})
    assert running(flux) == 1
    flux("housekeeping", "kill", "--targets=0-3", "--signal=15")
    assert running(flux) == 0
    assert allocated_nnodes(flux) == 0
    assert [line for line in hk_log(flux) if ".err[" in line] == [
        f"job-manager.err[0]: housekeeping: node0 (rank 0) {ids[0]}: Terminated",
        f"job-manager.err[0]: housekeeping: node1 (rank 1) {ids[1]}: Terminated",
        f"job-manager.err[0]: housekeeping: node2 (rank 2) {ids[2]}: Killed",
        f"job-manager.err[0]: housekeeping: node3 (rank 3) {ids[3]}: Terminated",
    ]
    sched_clean(flux)


def test_include_malformed_hostlist_message(flux):
    r = flux.fails("housekeeping", "list", "-i", "foo[")
    assert r.stderr == ERR + "Invalid hostlist: 'foo['\n"


def test_kill_partially_released_job(flux):
    """Killing the straggler of a partial release sends the final free for it alone."""
    hk_config(flux, release_after="0", rank_durations={"3": "inf"})
    flux("dmesg", "-C")
    jobid = run(flux, "-N4")
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 1, 1, "0s", "node3") + "\n"
    assert stats(flux)["running"][jobid]["allocated"] == "3"
    flux("housekeeping", "kill", "--targets=3")
    assert frees(flux, jobid)[-1] == f"free: {jobid}: rank3/core[0-1] (final)"
    assert sum("(final)" in line for line in frees(flux, jobid)) == 1
    assert running(flux) == 0 and allocated_nnodes(flux) == 0
    sched_clean(flux)


def test_release_after_timer_starts_at_first_finished_rank(flux):
    """6.3: the release-after timer is armed when the first rank finishes; once it
    has expired, each later rank is released as it finishes."""
    hk_config(flux, release_after="5s", rank_durations={"0": "1s", "1": "2s", "2": "10s", "3": "20s"})
    flux("dmesg", "-C")
    jobid = run(flux, "-N4")
    flux.advance("5s")
    assert frees(flux) == []  # 5 s after the hand-off, but only 4 s after rank 0 finished
    flux.advance("1s")
    assert frees(flux) == [f"free: {jobid}: rank[0-1]/core[0-1]"]
    assert hk_list(flux, "-no", "{allocated.ranks} {pending.ranks}") == "2-3 2-3\n"
    flux.advance("4s")
    assert frees(flux)[1:] == [f"free: {jobid}: rank2/core[0-1]"]
    flux.advance("9s")
    assert len(frees(flux)) == 2
    flux.advance("1s")
    assert frees(flux)[2:] == [f"free: {jobid}: rank3/core[0-1] (final)"]
    assert running(flux) == 0
    sched_clean(flux)


def test_canceled_jobs_and_housekeeping(flux):
    """A running job canceled still gets housekeeping; a pending one holds nothing."""
    hk_config(flux, duration="5s")
    jobid = flux.submit("-N2", "--setattr=exec.test.run_duration=1h", "true")
    pending = flux.submit("-N4", RUN1S, "true")
    assert flux.state(pending) == "SCHED"
    flux("cancel", jobid)
    flux("cancel", pending)
    assert flux.eventlog(jobid)[-5:] == ["exception", "finish", "release", "free", "clean"]
    assert flux.eventlog(pending)[-2:] == ["exception", "clean"]
    assert hk_list(flux) == HEADER + "\n" + row(jobid, 2, 2, "0s", "node[0-1]") + "\n"
    flux.advance("5s")
    assert running(flux) == 0
    sched_clean(flux)


def test_list_merges_rows_and_resource_status(flux):
    hk_config(flux, duration="inf")
    flux.out("submit", "--cc=0-3", "-N1", "--wait-event=clean", RUN1S, "true")
    # rows identical except for node fields are merged, ranks unioned
    assert hk_list(flux, "-no", "{nnodes}") == "4\n"
    assert hk_list(flux, "-no", "{nnodes} {nodelist} {ranks}") == "4 node[0-3] 0-3\n"
    assert flux.out("resource", "status", "-s", "housekeeping") == (
        "       STATEUP NNODES NODELIST\nhousekeeping ✔      4 node[0-3]\n")
    flux("housekeeping", "kill", "--all")
    # a state asked for with -s prints its line even when empty, as in Flux
    assert flux.out("resource", "status", "-s", "housekeeping") == (
        "       STATEUP NNODES NODELIST\nhousekeeping ✔      0 \n")
    assert flux.out("resource", "status", "-s", "housekeeping", "--skip-empty") == (
        "       STATEUP NNODES NODELIST\n")
    sched_clean(flux)


def test_config_change_applies_to_later_jobs_only(flux):
    """6.2: a running housekeeping allocation keeps the settings it started with."""
    hk_config(flux, release_after="5s", rank_durations={"3": "10s"})
    flux("dmesg", "-C")
    first = run(flux, "-N4")
    flux("config", "load", input="")  # housekeeping off
    assert stats(flux)["config"] == {"release-after": -1, "command": ""}
    assert stats(flux)["running"][first]["pending"] == "3"
    later = flux.submit("-N1", RUN1S, "true")
    assert flux.state(later) == "SCHED"  # every rank is still held
    flux.advance("5s")
    assert frees(flux) == [f"free: {first}: rank[0-2]/core[0-1]"]
    assert flux.state(later) == "RUN"
    flux.advance("1s")  # the later job ran 1 s; without housekeeping it frees at once
    assert frees(flux, later) == [f"free: {later}: rank0/core[0-1] (final)"]
    assert running(flux) == 1
    flux.advance("3s")
    assert running(flux) == 1
    flux.advance("1s")
    assert frees(flux, first)[-1] == f"free: {first}: rank3/core[0-1] (final)"
    assert running(flux) == 0
    sched_clean(flux)


def test_kill_jobid_all(flux):
    hk_config(flux, duration="inf")
    flux.out("submit", "--cc=0-1", "-N2", "--wait-event=clean", RUN1S, "true")
    assert running(flux) == 2
    r = flux.fails("housekeeping", "kill", "--all", "--jobid=all")
    assert r.stderr == ERR + "do not specify --jobid with --all\n"
    flux("housekeeping", "kill", "-j", "all", "-s", "2")
    assert running(flux) == 0
    assert sum(line.endswith(": Interrupt") for line in hk_log(flux)) == 2
    sched_clean(flux)


def test_list_fields(flux):
    """Every field of `housekeeping list -o`, as Flux 0.88 prints them."""
    hk_config(flux, release_after="0", rank_durations={"3": "20s"})
    jobid = run(flux, "-N4")
    t_start = flux.now()
    flux.advance("1s")
    dec = flux.out("job", "id", jobid).strip()
    hexid = flux.out("job", "id", "--to=hex", jobid).strip()
    assert hk_list(flux, "-o", "{id} | {id.f58} | {id.dec} | {id.hex} | {t_start} | {runtime} | {runtime!F} | "
                               "{runtime!H}") == (
        "JOBID | JOBID | JOBID | JOBID | T_START | RUNTIME | RUNTIME | RUNTIME\n"
        f"{jobid} | {jobid} | {dec} | {hexid} | {t_start} | 1.0 | 1.000s | 0:00:01\n")
    assert hk_list(flux, "-o", "{id.f58} ranks={ranks} nnodes={nnodes} nodelist={nodelist}") == (
        f"JOBID ranks=RANKS nnodes=NNODES nodelist=NODELIST\n{jobid} ranks=3 nnodes=1 nodelist=node3\n")
    assert hk_list(flux, "-o", "{id.f58} {allocated.ranks} {allocated.nnodes} {allocated.nodelist}") == (
        f"JOBID RANKS NNODES NODELIST\n{jobid} 3 1 node3\n")
    assert hk_list(flux, "-o", "{id.f58} {pending.ranks} {pending.nnodes} {pending.nodelist}") == (
        f"JOBID ACTIVE_RANKS #ACTIVE ACTIVE_NODES\n{jobid} 3 1 node3\n")
    assert hk_list(flux, "-no", "{pending.ranks}") == "3\n"
    assert hk_list(flux, "-o", "default") == HEADER + "\n" + row(jobid, 1, 1, "1.000s", "node3") + "\n"
    flux("housekeeping", "kill", "--all")
    sched_clean(flux)


def test_drain_on_failure_leaves_an_already_drained_rank_alone(flux_factory):
    """A housekeeping failure on a rank an admin drained meanwhile keeps the
    admin's reason (like the systemd unit's `flux resource drain`), and the
    command that ran into it still succeeds."""
    flux = flux_factory("--test-size=2", "--test-cores=2", config=(
        "job-manager:\n  housekeeping:\n    fail-ranks: \"0-1\"\n    drain-on-failure: true\n"))
    jobid = flux.submit("-N2", "-S", "exec.test.run_duration=10s", "true")
    flux("resource", "drain", "1", "maint")
    flux.advance("10s")
    rows = {line.split()[0]: line.split()[1] for line in
            flux.out("resource", "status", "-s", "drained", "-no", "{ranks} {reason}").splitlines()}
    assert rows == {"0": f"housekeeping@{jobid}", "1": "maint"}
    assert flux("sched", "check").exit_code == 0


# -- a command the job emulation knows, simulated as it would run ----------------------


def test_a_sleep_inf_command_holds_the_nodes_until_killed(flux):
    # t2354-resource-status's configuration, as Flux 0.88 shows it
    flux("config", "load", input=json.dumps(
        {"job-manager": {"housekeeping": {"release-after": "0", "command": ["sleep", "inf"]}}}))
    jobid = run(flux, "-N4")
    flux.advance("1h")
    assert flux.out("resource", "status") == ("       STATEUP NNODES NODELIST\n       avail ✔      4 node[0-3]\n"
                                              "housekeeping ✔      4 node[0-3]\n")
    flux("housekeeping", "kill", "--targets=0-1")
    assert flux.out("resource", "status", "-s", "housekeeping", "-no", "{ranks}") == "2-3\n"
    assert hk_list(flux, "-no", "{id} {nnodes} {nodelist}") == f"{jobid} 2 node[2-3]\n"


def test_sleep_false_and_overrides(flux):
    hk_config(flux, command=["sleep", "30"])
    jobid = run(flux, "-N2")
    flux.advance("29s")
    assert running(flux) == 1
    flux.advance("1s")
    assert running(flux) == 0
    # a command that exits nonzero fails on every rank
    hk_config(flux, command=["false"])
    flux("dmesg", "-C")
    jobid = run(flux, "-N2")
    assert f"job-manager.err[0]: housekeeping: node[0-1] (rank 0-1) {jobid}: nonzero exit code" in hk_log(flux)
    assert running(flux) == 0
    # the simulation keys, when set, say instead
    hk_config(flux, command=["sleep", "inf"], duration="5s", fail_ranks="1")
    flux("dmesg", "-C")
    jobid = run(flux, "-N2")
    assert running(flux) == 1
    flux.advance("5s")
    assert running(flux) == 0
    assert f"job-manager.err[0]: housekeeping: node1 (rank 1) {jobid}: nonzero exit code" in hk_log(flux)
    # a command it does not know finishes at once, as before
    hk_config(flux, command=["/usr/libexec/site-epilog"])
    run(flux, "-N2")
    assert running(flux) == 0
