"""Flux's outputs, field by field: what `flux jobs` (text and --json) shows,
eventlogs of jobs the exec system fails, sched-simple's log level, `module`
list/stats, `kvs ls`, and flux-resource's format names.

Expected texts are real Flux 0.88's (the transcripts in shared/reference),
or flux-core's sources where no recorded run shows the case.
"""

import json

from click.testing import CliRunner

from flux_lite.cli.main import cli


def as_flux(flux, *args, input=None, env=None):
    """Run a command as `flux` (the program name) against flux's instance."""
    full_env = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", "COLUMNS": "80"}
    full_env.update(env or {})
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, env=full_env,
                              prog_name="flux", catch_exceptions=False)


def outcome(result):
    return result.exit_code, result.stdout, result.stderr


T0 = 1767225600.0

# -- flux jobs fields ---------------------------------------------------------------------


def test_jobs_fields_as_job_list_gives_them(flux):
    two = flux.submit("-N2", "-n2", "-S", "exec.test.run_duration=60s", "true")
    one = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    cores = flux.submit("--urgency=hold", "-n3", "true")  # pending: cores counted from the jobspec
    nodes = flux.submit("--urgency=hold", "-N2", "true")  # pending, whole nodes: unknown until R
    done = flux.submit("-n1", "-S", "exec.test.run_duration=1s", "true")
    flux.advance("2s")
    fmt = "{id.f58}|{state}|{ncores}|{nnodes}|{ranks}|{exception.occurred}|{exception.type}|{inactive_reason}"
    assert flux.out("jobs", "-a", "-no", fmt).splitlines() == [
        f"{cores}|SCHED|3|||||",
        f"{nodes}|SCHED||2||||",
        f"{two}|RUN|2|2|[0-1]|||",          # more than one rank: in brackets
        f"{one}|RUN|2|1|2|||",
        f"{done}|INACTIVE|1|1|3|False||Exit 0",
    ]
    flux("cancel", cores)
    assert flux.out("jobs", "-no", fmt, cores) == f"{cores}|INACTIVE|3|||True|cancel|Canceled\n"


def test_jobs_json_has_only_what_the_job_has(flux):
    running = flux.submit("-N1", "-n2", "-t", "10m", "-S", "exec.test.run_duration=60s", "sleep", "60")
    held = flux.submit("--urgency=hold", "-n1", "true")
    flux.advance("5s")
    doc = json.loads(flux.out("jobs", "--json", running))
    cwd = doc["cwd"]
    assert doc == {
        "t_depend": T0, "t_priority": T0, "t_sched": T0, "t_run": T0, "duration": 600.0,
        "expiration": T0 + 600, "name": "sleep", "cwd": cwd, "ntasks": 2, "ncores": 2, "nnodes": 1,
        "priority": 16, "ranks": "0", "nodelist": "node0", "id": int(flux.out("job", "id", running)),
        "t_submit": T0, "t_remaining": 595.0, "state": "RUN", "username": "root", "userid": 0,
        "urgency": 16, "runtime": 5.0, "status": "RUN", "dependencies": [], "jobid": running,
        "annotations": {"sched": {"resource_summary": "rank0/core[0-1]"}}, "exception": {"occurred": False},
    }
    # no result, success, returncode or waitstatus while active (jq: `.result | not`)
    assert list(json.loads(flux.out("jobs", "--json", held))) == [
        "t_depend", "t_priority", "t_sched", "duration", "name", "cwd", "ntasks", "ncores", "priority", "id",
        "t_submit", "state", "username", "userid", "urgency", "status", "dependencies", "jobid",
        "annotations", "exception"]
    flux("cancel", running, held)
    doc = json.loads(flux.out("jobs", "--json", running))
    assert {k: doc[k] for k in ("t_cleanup", "t_inactive", "success", "result", "waitstatus", "status",
                                "returncode", "runtime", "exception")} == {
        "t_cleanup": T0 + 5, "t_inactive": T0 + 5, "success": False, "result": "CANCELED",
        "waitstatus": 15, "status": "CANCELED", "returncode": -15, "runtime": 5.0,
        "exception": {"occurred": True, "severity": 0, "type": "cancel", "note": ""}}
    assert "t_remaining" not in doc and "ranks" in doc
    # canceled before it ran: nothing about resources, and no zero runtime
    doc = json.loads(flux.out("jobs", "--json", held))
    assert "ranks" not in doc and "runtime" not in doc and "t_run" not in doc
    assert doc["returncode"] == -128
    # several jobs: one object holding the list
    assert {j["jobid"] for j in json.loads(flux.out("jobs", "-a", "--json"))["jobs"]} == {running, held}


# -- exec exceptions: eventlogs as Flux writes them ---------------------------------------


def _eventlog(flux, jobid):
    return [line.split(" ", 1)[1] for line in flux.out("job", "eventlog", jobid).splitlines()]


def test_exec_exceptions_carry_userid_and_release_the_resources(flux):
    head = ["submit userid=0 urgency=16 flags=0 version=1", "validate", "depend", "priority priority=16",
            'alloc annotations={"sched":{"resource_summary":"rank0/core0"}}']
    # job-exec fails the job before it starts: it releases at once
    init = flux.submit("-S", "exec.test.mock_exception=init", "true")
    assert _eventlog(flux, init) == head + [
        'exception type="exec" severity=0 userid=0 note="mock initialization exception generated"',
        'release ranks="all" final=true', "free", "clean"]
    bad = flux.submit("-S", "exec.test.run_duration=0", "true")
    assert _eventlog(flux, bad) == head + [
        'exception type="exec" severity=0 userid=0 note="failed to initialize testconf: No such file or directory"',
        'release ranks="all" final=true', "free", "clean"]
    # once started, the job is killed first
    run = flux.submit("-S", "exec.test.mock_exception=run", "-S", "exec.test.run_duration=60s", "true")
    assert _eventlog(flux, run) == head + [
        "start", 'exception type="exec" severity=0 userid=0 note="mock run exception generated"',
        "finish status=15", 'release ranks="all" final=true', "free", "clean"]
    assert flux.out("jobs", "-no", "{status} {returncode} {inactive_reason}", init, run) == \
        "FAILED 1 Exit 1\nFAILED -15 Exit -15\n"


def test_jobs_as_a_guest_lists_the_guests_jobs(flux):
    guest = {"FLUX_HANDLE_USERID": "1234"}
    mine = flux.submit("-S", "exec.test.run_duration=60s", "true")
    theirs = flux.submit("-S", "exec.test.run_duration=60s", "true", env=guest)
    # flux-jobs' default --user is the caller
    assert flux.out("jobs", "-no", "{id.f58} {userid}", env=guest) == f"{theirs} 1234\n"
    assert flux.out("jobs", "-no", "{id.f58} {userid}") == f"{mine} 0\n"
    assert flux.out("jobs", "-A", "-no", "{id.f58}", env=guest).split() == [mine, theirs]
