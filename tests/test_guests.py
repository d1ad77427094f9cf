"""Guests: what Flux keeps for the instance owner, flux-lite does too.

A guest is simulated as the tests elsewhere do: the owner's process with
FLUX_HANDLE_USERID set to another uid.
"""

import pytest

from flux_lite.formats.jobid import decode, kvs_key

GUEST = {"FLUX_HANDLE_USERID": "1234"}
OTHER = {"FLUX_HANDLE_USERID": "4321"}


def owner_only(result, operation):
    assert result.exit_code == 1, result.output
    assert result.stderr.endswith(f": ERROR: Operation not permitted: {operation} is for the instance owner\n"), \
        result.stderr


@pytest.mark.parametrize("args,operation", [
    (["module", "debug", "sched-simple"], "module debug"),
    (["module", "debug", "--setbit=1", "sched-simple"], "module debug"),
    (["module", "debug", "-s", "1", "job-exec"], "module debug"),
    (["dmesg"], "dmesg"), (["dmesg", "-C"], "dmesg"), (["dmesg", "-c"], "dmesg"), (["dmesg", "-H"], "dmesg"),
    (["clock", "advance", "1h"], "clock advance"),
])
def test_owner_only_as_in_flux(flux, args, operation):
    jobid = flux.submit("-t", "30m", "sleep", "inf", env=GUEST)
    before_log = flux.out("dmesg")
    t0 = flux.now()
    owner_only(flux(*args, env=GUEST, check=False), operation)
    # nothing changed: the log, the clock, the debug flags, the guest's job
    assert flux.out("dmesg") == before_log
    assert flux.now() == t0
    assert flux.out("module", "debug", "sched-simple") == "0x0\n"
    assert flux.state(jobid) == "RUN"
    # the owner may
    assert flux(*args, check=False).exit_code == 0


def test_guest_debug_cannot_fail_every_allocation(flux):
    flux.fails("module", "debug", "--setbit=1", "sched-simple", env=GUEST)
    jobid = flux.submit("sleep", "inf", env=GUEST)
    assert flux.state(jobid) == "RUN"


@pytest.mark.parametrize("suffix", ["eventlog", "jobspec", "R", "J"])
def test_kvs_get_of_other_users_job_keys(flux, suffix):
    mine = flux.submit("true", env=GUEST)
    theirs = flux.submit("true", env=OTHER)
    key = kvs_key(decode(theirs), suffix)
    r = flux.fails("kvs", "get", key, env=GUEST)
    assert r.stderr == "flux-lite kvs: ERROR: access is restricted to job/instance owner\n"
    assert r.stdout == ""
    assert flux("kvs", "get", kvs_key(decode(mine), suffix), env=GUEST).exit_code == 0
    assert flux("kvs", "get", key).exit_code == 0  # the owner
    if suffix == "eventlog":
        r = flux.fails("kvs", "eventlog", "get", key, env=GUEST)
        assert r.stderr == "flux-lite kvs: ERROR: access is restricted to job/instance owner\n"
        assert "submit" in flux.out("kvs", "eventlog", "get", kvs_key(decode(mine), suffix), env=GUEST)


def test_wait_event_on_another_users_job(flux):
    theirs = flux.submit("-t", "1m", "--setattr=exec.test.run_duration=10s", "true", env=OTHER)
    t0 = flux.now()
    r = flux.fails("job", "wait-event", theirs, "clean", env=GUEST)
    assert r.stderr == "flux-lite job: ERROR: access is restricted to job/instance owner\n"
    assert flux.now() == t0
    assert flux.out("job", "wait-event", theirs, "start", env=OTHER).endswith("start\n")
    assert flux.out("job", "wait-event", theirs, "clean").endswith("clean\n")  # the owner


def test_job_status_on_another_users_job(flux):
    # job status waits for the job's end: a guest's wait on someone else's
    # job would move the shared clock and time out everyone's jobs
    theirs = flux.submit("-t", "1m", "sleep", "inf", env=OTHER)
    t0 = flux.now()
    r = flux.fails("job", "status", theirs, env=GUEST)
    assert r.stderr == "flux-lite job: ERROR: access is restricted to job/instance owner\n"
    assert flux.now() == t0 and flux.state(theirs) == "RUN"
    mine = flux.submit("--setattr=exec.test.run_duration=10s", "true", env=GUEST)
    assert flux("job", "status", mine, env=GUEST).exit_code == 0
    assert flux("job", "status", theirs, check=False).exit_code == 142  # the owner: timed out at 1m


def test_clock_next_only_reads_the_clock(flux):
    # `clock next` prints when the next timed event is due; it moves nothing,
    # so a guest may ask (advancing is the owner's: test_owner_only_as_in_flux)
    jobid = flux.submit("-t", "1m", "sleep", "inf", env=OTHER)
    t0 = flux.now()
    assert flux.out("clock", "next", env=GUEST) == "1767225660.000000 2026-01-01T00:01:00.000000Z\n"
    assert flux.now() == t0 and flux.state(jobid) == "RUN"
