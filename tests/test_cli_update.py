"""CLI tests for `flux-lite update`.

Expected values come from real Flux 0.88 runs (updates of pending, running
and sub-instance jobs),
with flux-lite's program prefix (`flux-lite update: ERROR: ...`).
The instance is the 4-node x 2-core virtual-clock fixture; nothing moves in
time unless a test advances the clock.
"""

import os
import json

import pytest

from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import decode

GUEST = {"FLUX_HANDLE_USERID": "1234"}
RUN10M = "--setattr=exec.test.run_duration=10m"
RUN1S = "--setattr=exec.test.run_duration=1s"
DURATION = "attributes.system.duration"

ERR = "flux-lite update: ERROR: "
INFO = "flux-lite update: INFO: "


# -- helpers -------------------------------------------------------------------------


def execution(flux, jobid):
    """R.execution as the job manager has it now (resource-update applied)."""
    return json.loads(flux.out("job", "info", jobid, "R"))["execution"]


def tail(flux, jobid, n):
    """The last n events as (name, context) pairs."""
    return [(e["name"], e.get("context")) for e in flux.events(jobid)[-n:]]


def refused(flux, *args, msg, env=None):
    """`update ARGS` fails with exit 1 and exactly this ERROR line, nothing on stdout."""
    r = flux.fails("update", *args, code=1, env=env)
    assert r.stderr == ERR + msg + "\n"
    assert r.stdout == ""
    return r


def sched_clean(flux):
    r = flux("sched", "check", check=False)
    assert r.exit_code == 0, r.stdout
    assert r.stdout == "sched check: ok\n"


def load_config(flux, cfg):
    flux("config", "load", input=json.dumps(cfg))


def rpc_update(flux, jobid, updates):
    """Raw job-manager.update {id, updates} (what `flux python ... h.rpc(...)` does)."""
    from flux_lite.instance import Instance
    from flux_lite.job_manager import update as upd

    inst = Instance.open(flux.state_dir)
    try:
        with inst.session() as broker:
            upd.update_job(broker, decode(jobid), updates)
    finally:
        inst.close()


@pytest.fixture
def busy(flux):
    """As in Flux 0.88: an exclusive 4-node job running 10m (duration 30m),
    a pending job blocked behind it, a held job with 5m and a held unlimited job."""
    running = flux.submit("-N4", "--exclusive", "-t", "30m", RUN10M, "true")
    pending = flux.submit("-N1", "-t", "5m", RUN1S, "true")
    held = flux.submit("--urgency=hold", "-N1", "-t", "5m", RUN1S, "true")
    unlimited = flux.submit("--urgency=hold", "-N1", RUN1S, "true")
    return flux, running, pending, held, unlimited


# -- usage and lookup errors ------------------------------------------------


def test_usage_errors_exit_2(flux):
    r = flux.fails("update", code=2)
    assert "JOBID" in r.stderr and r.stdout == ""
    r = flux.fails("update", "1234", code=2)
    assert "KEY=VALUE" in r.stderr and r.stdout == ""
    r = flux.fails("update", "notajobid", "duration=10m", code=2)
    assert "invalid JobID value: 'notajobid'" in r.stderr


def test_help(flux):
    r = flux("update", "--help")
    for opt in ("-n, --dry-run", "-v, --verbose", "--wait"):
        assert opt in r.stdout


@pytest.mark.parametrize("jobid", ["f123", "f1", "ƒ1", "12345"])
def test_unknown_job_id(flux, jobid):
    refused(flux, jobid, "duration=10m", msg="unknown job id")
    refused(flux, jobid, "duration=1m", msg="unknown job id", env=GUEST)


def test_inactive_job(flux):
    jobid = flux.submit(RUN1S, "true")
    flux.advance("1s")
    assert flux.state(jobid) == "INACTIVE"
    refused(flux, jobid, "duration=1m", msg="job is inactive")
    # a guest gets the same answer (the inactive check comes before ownership)
    refused(flux, jobid, "duration=1m", msg="job is inactive", env=GUEST)


# -- unsupported keys, all-or-nothing -----------------


def test_unsupported_keys(busy):
    flux, _running, pending, _held, _unl = busy
    before = flux.events(pending)
    refused(flux, pending, "foo=bar", msg="update of attributes.system.foo not supported")
    refused(flux, pending, "attributes.system.foo=bar", msg="update of attributes.system.foo not supported")
    refused(flux, pending, "test=foo", msg="update of attributes.system.test not supported")
    refused(flux, pending, "name=newname", msg="update of attributes.system.job.name not supported")
    refused(flux, pending, "queue=batch", msg="'batch' is not a valid queue")
    refused(flux, pending, "tasks.foo=1", msg="update of tasks.foo not supported")
    refused(flux, pending, "resources.x=y", msg="update of resources.x not supported")
    # all or nothing: the duration in front of a bad key is not applied
    refused(flux, pending, "duration=12345", "name=foo",
            msg="update of attributes.system.job.name not supported")
    assert flux.events(pending) == before
    assert flux.out("jobs", "-no", "{duration}", pending).strip() == "300.0"


def test_queue_update_of_running_job(busy):
    flux, running, _pending, _held, _unl = busy
    refused(flux, running, "queue=batch", msg="update of queue for running job not supported")


# -- duration values ---------------------------------------------------


@pytest.mark.parametrize("arg", ["duration=foo", "duration=10x", "duration=+foo", "duration=", "duration"])
def test_invalid_fsd(busy, arg):
    flux, _running, pending, _held, _unl = busy
    refused(flux, pending, arg, msg="invalid Flux standard duration")


def test_relative_update_of_unlimited_job(busy):
    flux, _running, _pending, _held, unlimited = busy
    refused(flux, unlimited, "duration=+1m", msg=f"duration for {unlimited} is unlimited, can't update by +1m")
    refused(flux, unlimited, "duration=-1m", msg=f"duration for {unlimited} is unlimited, can't update by -1m")
    assert flux.eventlog(unlimited) == ["submit", "validate", "depend", "priority"]
    r = flux("update", "-v", unlimited, "duration=10m")
    assert r.stderr == INFO + "updated attributes.system.duration to 600.0\n"


def test_relative_reductions(busy):
    flux, _running, pending, _held, _unl = busy
    flux("update", pending, "duration=2m")
    refused(flux, pending, "duration=-2m", msg=f"current duration for {pending} (2m) cannot be reduced by 2m")
    refused(flux, pending, "duration=-1h", msg=f"current duration for {pending} (2m) cannot be reduced by 1h")
    # quirk: "-1" is minus one second
    r = flux("update", pending, "duration=-1")
    assert r.stderr == "" and r.stdout == ""
    assert tail(flux, pending, 2) == [("jobspec-update", {DURATION: 119.0}), ("priority", {"priority": 16})]


def test_reduce_below_zero_held_job(flux):
    """Current 60s, -1h refused."""
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true")
    refused(flux, jobid, "duration=-1h", msg=f"current duration for {jobid} (1m) cannot be reduced by 1h")


# -- dry run --------------------------------------------------------------------------


def test_dry_run(flux):
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true")
    before = flux.events(jobid)
    assert flux.out("update", "--dry-run", jobid, "duration=+1m") == '{"attributes.system.duration": 120.0}\n'
    assert flux.out("update", "-n", jobid, "duration=-30s") == '{"attributes.system.duration": 30.0}\n'
    assert flux.out("update", "--dry", jobid, "duration=inf") == '{"attributes.system.duration": 0.0}\n'
    assert flux.out("update", "-n", jobid, "duration=0") == '{"attributes.system.duration": 0.0}\n'
    assert flux.out("update", "-n", jobid, "duration=1.5h", "name=foo") == (
        '{"attributes.system.duration": 5400.0, "attributes.system.job.name": "foo"}\n')
    assert flux.out("update", "-n", jobid, "attributes.system.duration=60", "tasks.foo=1", "resources.x=y") == (
        '{"attributes.system.duration": 60.0, "tasks.foo": 1, "resources.x": "y"}\n')
    # an infinite result means unlimited
    assert flux.out("update", "-n", jobid, "duration=+inf") == '{"attributes.system.duration": 0.0}\n'
    assert flux.out("update", "-n", jobid, "duration=infinity") == '{"attributes.system.duration": 0.0}\n'
    # a repeated key keeps the last value
    assert flux.out("update", "-n", jobid, "duration=1m", "duration=2m") == (
        '{"attributes.system.duration": 120.0}\n')
    assert flux.events(jobid) == before


# -- pending and held jobs ---------------------------------------------


def test_pending_job_update_sequence(busy):
    flux, running, pending, _held, _unl = busy
    r = flux("update", pending, "duration=10m")
    assert (r.stdout, r.stderr) == ("", "")
    assert tail(flux, pending, 3) == [
        ("priority", {"priority": 16}),
        ("jobspec-update", {DURATION: 600.0}),
        ("priority", {"priority": 16}),
    ]
    text = flux.out("job", "eventlog", pending).splitlines()
    assert [line.split(" ", 1)[1] for line in text[-2:]] == [
        "jobspec-update attributes.system.duration=600.0", "priority priority=16"]

    r = flux("update", "-v", pending, "duration=+5m")
    assert (r.stdout, r.stderr) == ("", INFO + "updated attributes.system.duration to 900.0\n")
    r = flux("update", "--verbose", pending, "duration=-1m")
    assert r.stderr == INFO + "updated attributes.system.duration to 840.0\n"
    assert flux.out("update", "--dry-run", pending, "duration=+5m") == '{"attributes.system.duration": 1140.0}\n'
    r = flux("update", "--wait", "-v", pending, "duration=2m")
    assert r.stderr == INFO + "updated attributes.system.duration to 120.0\n"

    names = flux.eventlog(pending)
    assert names == ["submit", "validate", "depend", "priority"] + ["jobspec-update", "priority"] * 4
    durations = [e["context"][DURATION] for e in flux.events(pending) if e["name"] == "jobspec-update"]
    assert durations == [600.0, 900.0, 840.0, 120.0]
    assert json.loads(flux.out("job", "info", pending, "jobspec"))["attributes"]["system"]["duration"] == 120
    assert flux.out("jobs", "-o", "{id.f58} {state} {duration} {duration!F} {status}", pending) == (
        f"JOBID STATE DURATION DURATION STATUS\n{pending} SCHED 120.0 2m SCHED\n")

    # the alloc request is re-sent with the new jobspec: once the exclusive job
    # ends, the pending job runs with the updated duration
    flux.advance("10m")
    assert flux.state(running) == "INACTIVE"
    assert flux.eventlog(pending)[-2:] == ["alloc", "start"]
    ex = execution(flux, pending)
    assert ex["expiration"] - ex["starttime"] == pytest.approx(120.0)
    sched_clean(flux)


def test_held_job_updates(busy):
    flux, _running, _pending, held, _unl = busy
    for arg, value in (("duration=1h", "3600.0"), ("duration=+1h", "7200.0"), ("duration=-90m", "1800.0")):
        r = flux("update", "-v", held, arg)
        assert r.stderr == INFO + f"updated attributes.system.duration to {value}\n"
    events = [(e["name"], e.get("context")) for e in flux.events(held)]
    assert events[3:] == [
        ("priority", {"priority": 0}),
        ("jobspec-update", {DURATION: 3600.0}), ("priority", {"priority": 0}),
        ("jobspec-update", {DURATION: 7200.0}), ("priority", {"priority": 0}),
        ("jobspec-update", {DURATION: 1800.0}), ("priority", {"priority": 0}),
    ]


def test_update_wait(flux):
    """--wait returns once the jobspec-update is in the eventlog."""
    jobid = flux.submit("--urgency=hold", "sleep", "60")
    r = flux("update", "--wait", jobid, "duration=1m")
    assert (r.stdout, r.stderr) == ("", "")
    lines = flux.out("job", "eventlog", jobid).splitlines()
    assert any(line.endswith(" jobspec-update attributes.system.duration=60.0") for line in lines)


def test_held_job_update_release_and_run_honours_new_duration(flux):
    jobid = flux.submit("--urgency=hold", "-t", "5m", RUN10M, "true")
    flux("update", jobid, "duration=1m")
    flux.advance("30s")
    flux("job", "urgency", jobid, "default")
    assert flux.eventlog(jobid)[-4:] == ["urgency", "priority", "alloc", "start"]
    ex = execution(flux, jobid)
    assert ex["expiration"] == ex["starttime"] + 60.0
    flux.advance("59s")
    assert flux.state(jobid) == "RUN"
    flux.advance("1s")
    events = flux.events(jobid)
    exc = [e for e in events if e["name"] == "exception"]
    assert [e["context"] for e in exc] == [
        {"type": "timeout", "severity": 0, "userid": os.getuid(), "note": "resource allocation expired"}]
    assert exc[0]["timestamp"] == ex["starttime"] + 60.0
    assert flux.out("jobs", "-a", "-no", "{state} {result}", jobid).strip() == "INACTIVE TIMEOUT"
    sched_clean(flux)


def test_tiny_duration_then_release_times_out(flux):
    """Duration=0.1s on a held job; released, it runs and times out."""
    jobid = flux.submit("--urgency=hold", "sleep", "60")
    flux("update", jobid, "duration=0.1s")
    flux("job", "urgency", jobid, "default")
    ex = execution(flux, jobid)
    assert round((ex["expiration"] - ex["starttime"]) * 10) == 1
    # virtual clock: the timeout fires only once the clock moves past it
    flux.advance("1s")
    exc = [e["context"] for e in flux.events(jobid) if e["name"] == "exception"]
    assert exc and exc[0]["type"] == "timeout"
    assert flux.state(jobid) == "INACTIVE"


# -- raw requests -----------------------------------------------------------------------


def test_raw_update_requests(flux):
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true")
    with pytest.raises(FluxLiteError) as info:
        rpc_update(flux, jobid, {DURATION: -1.0})
    assert (info.value.errno, str(info.value)) == (22, "duration must not be negative")
    with pytest.raises(FluxLiteError) as info:
        rpc_update(flux, jobid, {DURATION: "foo"})
    assert (info.value.errno, str(info.value)) == (22, "plugin args unpack failed")
    with pytest.raises(FluxLiteError) as info:
        rpc_update(flux, jobid, ["not", "an", "object"])
    assert info.value.errno == 71  # EPROTO
    with pytest.raises(FluxLiteError) as info:
        rpc_update(flux, jobid, {"foo": 1})
    assert (info.value.errno, str(info.value)) == (22, "one or more jobspec updates are invalid")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority"]
    # an empty update is accepted: a bare jobspec-update, then priority
    rpc_update(flux, jobid, {})
    rpc_update(flux, jobid, {DURATION: 300.0})
    lines = [line.split(" ", 1)[1] for line in flux.out("job", "eventlog", jobid).splitlines()]
    assert lines[4:] == ["jobspec-update", "priority priority=0",
                         "jobspec-update attributes.system.duration=300.0", "priority priority=0"]


# -- running jobs ---------------------------------------------------------------


def test_running_job_update_sequence(busy):
    flux, running, pending, _held, _unl = busy
    ex = execution(flux, running)
    start = ex["starttime"]
    assert ex["expiration"] == start + 1800.0
    r = flux("update", running, "duration=10m")
    assert (r.stdout, r.stderr) == ("", "")
    assert tail(flux, running, 2) == [("jobspec-update", {DURATION: 600.0}),
                                      ("resource-update", {"expiration": start + 600.0})]
    assert execution(flux, running)["expiration"] == start + 600.0
    r = flux("update", "-v", running, "duration=+5m")
    assert r.stderr == INFO + "updated attributes.system.duration to 900.0\n"
    assert execution(flux, running)["expiration"] == start + 900.0
    r = flux("update", "-v", running, "duration=-1m")
    assert r.stderr == INFO + "updated attributes.system.duration to 840.0\n"
    assert execution(flux, running)["expiration"] == start + 840.0
    # the JSON payload as in Flux; flux-lite adds a preview line per queued job
    # whose estimated start would move, on stderr (man flux-lite-update)
    r = flux("update", "-n", running, "duration=+5m")
    assert r.stdout == '{"attributes.system.duration": 1140.0}\n'
    assert r.stderr == f"{pending}: t_estimate 2026-01-01T00:14:00Z -> 2026-01-01T00:19:00Z (+300s)\n"
    assert execution(flux, running)["expiration"] == start + 840.0

    # virtual clock: at the start instant start+10ms is still in the future,
    # so move the clock before asking for an expiration in the past
    flux.advance("1s")
    refused(flux, running, "duration=10ms", msg="requested duration places job expiration in the past")
    refused(flux, running, "duration=-14m", msg=f"current duration for {running} (14m) cannot be reduced by 14m")
    assert flux.out("job", "timeleft", running) == "839\n"

    assert flux.eventlog(running)[6:] == ["jobspec-update", "resource-update"] * 3
    assert [e["context"] for e in flux.events(running)[6:]] == [
        {DURATION: 600.0}, {"expiration": start + 600.0},
        {DURATION: 900.0}, {"expiration": start + 900.0},
        {DURATION: 840.0}, {"expiration": start + 840.0},
    ]
    assert flux.out("jobs", "-no", "{state} {duration} {expiration}", running).split() == [
        "RUN", "840.0", str(start + 840.0)]
    assert json.loads(flux.out("job", "info", running, "jobspec"))["attributes"]["system"]["duration"] == 840
    execlog = [line for line in flux.dmesg() if line.startswith("job-exec.debug[0]: updated expiration")]
    assert execlog == [f"job-exec.debug[0]: updated expiration of {running} to {start + d:.2f}"
                       for d in (600.0, 900.0, 840.0)]
    # the KVS R is never rewritten: only the job manager's copy moves
    kvs_R = json.loads(flux.out("kvs", "get", flux.out("job", "id", "--to=kvs", running).strip() + ".R"))
    assert kvs_R["execution"]["expiration"] == start + 1800.0
    sched_clean(flux)


def test_running_job_extend_relative(flux):
    """+1m moves the expiration by 60 s and tells the exec system."""
    jobid = flux.submit("-t", "5m", "sleep", "300")
    old = execution(flux, jobid)["expiration"]
    flux("update", jobid, "duration=+1m")
    assert execution(flux, jobid)["expiration"] == old + 60
    assert f"job-exec.debug[0]: updated expiration of {jobid} to {old + 60:.2f}" in flux.dmesg()
    flux("cancel", jobid)
    assert flux.eventlog(jobid)[-1] == "clean"
    sched_clean(flux)


def test_running_job_unlimited_and_back(flux):
    """duration=0 means no expiration at all."""
    jobid = flux.submit("-t", "5m", RUN10M, "true")
    start = execution(flux, jobid)["starttime"]
    r = flux("update", "--wait", "-v", jobid, "duration=+1m")
    assert r.stderr == INFO + "updated attributes.system.duration to 360.0\n"
    r = flux("update", "-v", jobid, "duration=0")
    assert r.stderr == INFO + "updated attributes.system.duration to 0.0\n"
    assert tail(flux, jobid, 2) == [("jobspec-update", {DURATION: 0.0}), ("resource-update", {"expiration": 0.0})]
    assert execution(flux, jobid)["expiration"] == 0
    assert flux.out("job", "timeleft", jobid) == "4294967295\n"
    refused(flux, jobid, "duration=+1m", msg=f"duration for {jobid} is unlimited, can't update by +1m")
    # no timeout at the old expiration (5m or 6m)
    flux.advance("7m")
    assert flux.state(jobid) == "RUN"
    r = flux("update", "-v", jobid, "duration=20m")
    assert r.stderr == INFO + "updated attributes.system.duration to 1200.0\n"
    assert execution(flux, jobid)["expiration"] == start + 1200.0
    # the job's own run of 10m ends it first
    flux.advance("3m")
    assert flux.out("jobs", "-a", "-no", "{result}", jobid).strip() == "COMPLETED"
    sched_clean(flux)


def test_running_job_shortened_times_out_exactly_at_new_expiration(flux):
    jobid = flux.submit("-t", "5m", RUN10M, "true")
    start = execution(flux, jobid)["starttime"]
    flux.advance("30s")
    flux("update", jobid, "duration=2m")
    assert tail(flux, jobid, 1) == [("resource-update", {"expiration": start + 120.0})]
    flux.advance("89s")
    assert flux.state(jobid) == "RUN"
    flux.advance("1s")
    events = flux.events(jobid)
    assert [e["name"] for e in events][-5:] == ["exception", "finish", "release", "free", "clean"]
    exc = events[-5]
    assert exc["timestamp"] == start + 120.0
    assert exc["context"] == {"type": "timeout", "severity": 0, "userid": os.getuid(),
                              "note": "resource allocation expired"}
    assert flux.out("jobs", "-a", "-no", "{result}", jobid).strip() == "TIMEOUT"
    sched_clean(flux)


def test_running_job_extended_outlives_old_expiration(flux):
    jobid = flux.submit("-t", "1m", RUN10M, "true")
    start = execution(flux, jobid)["starttime"]
    flux("update", jobid, "duration=3m")
    flux.advance("2m")
    assert flux.state(jobid) == "RUN"
    flux.advance("1m")
    exc = [e for e in flux.events(jobid) if e["name"] == "exception"]
    assert [(e["timestamp"], e["context"]["type"]) for e in exc] == [(start + 180.0, "timeout")]
    sched_clean(flux)


def test_scheduler_refuses_expiration_update(flux):
    """sched-simple debug bit 4 refuses sched.expiration."""
    jobid = flux.submit("-t", "5m", RUN10M, "true")
    ex = execution(flux, jobid)
    flux("module", "debug", "--set", "4", "sched-simple")
    assert flux.out("module", "debug", "sched-simple").strip() == "0x4"
    refused(flux, jobid, "duration=+10m", msg="scheduler refused expiration update")
    refused(flux, jobid, "-v", "duration=1m", msg="scheduler refused expiration update")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "start"]
    assert execution(flux, jobid) == ex
    flux("module", "debug", "--clear", "sched-simple")
    r = flux("update", "-v", jobid, "duration=+10m")
    assert r.stderr == INFO + "updated attributes.system.duration to 900.0\n"
    assert tail(flux, jobid, 1) == [("resource-update", {"expiration": ex["starttime"] + 900.0})]
    flux("cancel", jobid)
    sched_clean(flux)


def test_module_debug_set_prints_flags(flux):
    assert flux.out("module", "debug", "--set", "4", "sched-simple") == "0x4\n"


def test_module_debug_clear_without_value(flux):
    flux("module", "debug", "--set", "4", "sched-simple")
    assert flux.out("module", "debug", "--clear", "sched-simple") == "0x0\n"
    assert flux.out("module", "debug", "sched-simple") == "0x0\n"


def test_exec_expiration_failure_raises_nonfatal_exception(flux):
    """As in Flux 0.88."""
    jobid = flux.submit("-t", "5m", RUN10M, "true")
    flux("module", "debug", "--set", "1", "job-exec")
    r = flux("update", "-v", jobid, "duration=1m")
    assert r.stderr == INFO + "updated attributes.system.duration to 60.0\n"
    assert tail(flux, jobid, 3)[0][0] == "jobspec-update"
    assert tail(flux, jobid, 1) == [("exception", {
        "type": "exec", "severity": 1,
        "note": "failed to send expiration update to exec system: job termination may not coincide with expiration",
    })]
    assert flux.state(jobid) == "RUN"


# -- guests ----------------------------------------------------------


def test_guest_refused_on_other_users_jobs(busy):
    flux, running, pending, _held, _unl = busy
    refused(flux, pending, "duration=1m", msg="guests may only update their own jobs", env=GUEST)
    refused(flux, pending, "duration=+1m", msg="access is restricted to job/instance owner", env=GUEST)
    refused(flux, "-n", pending, "duration=+1m", msg="access is restricted to job/instance owner", env=GUEST)
    refused(flux, running, "duration=+1m", msg="access is restricted to job/instance owner", env=GUEST)
    refused(flux, running, "duration=1h", msg="guests may only update their own jobs", env=GUEST)
    # an absolute dry run never reaches the job manager
    r = flux("update", "-n", pending, "duration=1m", env=GUEST)
    assert r.stdout == '{"attributes.system.duration": 60.0}\n'
    assert "jobspec-update" not in flux.eventlog(pending) + flux.eventlog(running)


def test_guest_refused_on_own_running_job_owner_allowed(flux):
    """Guest cannot touch its running job; the owner can, which makes it immutable."""
    jobid = flux.submit("-t", "5m", RUN10M, "true", env=GUEST)
    assert flux.state(jobid) == "RUN"
    old = execution(flux, jobid)["expiration"]
    refused(flux, jobid, "duration=+1m", msg="duration update of running job requires instance owner privileges",
            env=GUEST)
    flux("update", jobid, "duration=+1m")
    assert execution(flux, jobid)["expiration"] == old + 60
    assert tail(flux, jobid, 3) == [
        ("set-flags", {"flags": ["immutable"]}),
        ("jobspec-update", {DURATION: 360.0}),
        ("resource-update", {"expiration": old + 60}),
    ]
    refused(flux, jobid, "duration=1m", msg="job is immutable due to previous instance owner update", env=GUEST)
    flux("cancel", jobid)
    sched_clean(flux)


def test_guest_own_job_limits_and_immutable(flux):
    """Guest updates are validated; an owner update marks the job immutable."""
    load_config(flux, {"policy": {"limits": {"duration": "1m"}}})
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true", env=GUEST)
    r = flux("update", "--wait", "-v", jobid, "duration=30s", env=GUEST)
    assert r.stderr == INFO + "updated attributes.system.duration to 30.0\n"
    r = flux("update", "--wait", "-v", jobid, "duration=1m", env=GUEST)
    assert r.stderr == INFO + "updated attributes.system.duration to 60.0\n"
    assert tail(flux, jobid, 2) == [("jobspec-update", {DURATION: 60.0}), ("priority", {"priority": 0})]
    refused(flux, jobid, "duration=1h", msg="requested duration (1h) exceeds policy limit of 1m", env=GUEST)
    refused(flux, jobid, "duration=0", msg="requested duration (unlimited) exceeds policy limit of 1m", env=GUEST)
    r = flux("update", "-v", jobid, "duration=1h")
    assert r.stderr == INFO + "updated attributes.system.duration to 3600.0\n"
    assert tail(flux, jobid, 3) == [
        ("set-flags", {"flags": ["immutable"]}),
        ("jobspec-update", {DURATION: 3600.0}),
        ("priority", {"priority": 0}),
    ]
    refused(flux, jobid, "duration=30s", msg="job is immutable due to previous instance owner update", env=GUEST)
    # the owner still can
    flux("update", jobid, "duration=2h")
    assert flux.eventlog(jobid).count("set-flags") == 2


def test_owner_update_of_own_job_never_sets_immutable(flux):
    load_config(flux, {"policy": {"limits": {"duration": "1m"}}})
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true")
    flux("update", jobid, "duration=1h")
    assert "set-flags" not in flux.eventlog(jobid)


# -- policy limits and owner-allow-any -----------------------------------------------


def test_policy_limit_owner_bypass_and_owner_allow_any(flux):
    running = flux.submit("-t", "1m", RUN10M, "true")
    load_config(flux, {"policy": {"limits": {"duration": "1m"}}})
    assert json.loads(flux.out("config", "get", "policy")) == {"limits": {"duration": "1m"}}
    r = flux.fails("submit", "--urgency=hold", "-t", "2m", "true")
    assert r.stderr == "flux-lite submit: ERROR: requested duration (2m) exceeds policy limit of 1m\n"
    held = flux.submit("--urgency=hold", "-t", "1m", RUN1S, "true")
    # owner-allow-any (default): the owner bypasses the limit
    r = flux("update", "-v", held, "duration=1h")
    assert r.stderr == INFO + "updated attributes.system.duration to 3600.0\n"
    assert tail(flux, held, 2) == [("jobspec-update", {DURATION: 3600.0}), ("priority", {"priority": 0})]

    load_config(flux, {"policy": {"limits": {"duration": "1m"}},
                       "job-manager": {"update-duration": {"owner-allow-any": False}}})
    refused(flux, held, "-v", "duration=2h", msg="requested duration (2h) exceeds policy limit of 1m")
    r = flux("update", "-v", held, "duration=30s")
    assert r.stderr == INFO + "updated attributes.system.duration to 30.0\n"
    refused(flux, running, "duration=90s", msg="duration update of running job requires instance owner privileges")
    refused(flux, running, "duration=+1m", msg="duration update of running job requires instance owner privileges")

    # back to the default
    load_config(flux, {"policy": {"limits": {"duration": "1m"}}})
    r = flux("update", "-v", held, "duration=2h")
    assert r.stderr == INFO + "updated attributes.system.duration to 7200.0\n"
    r = flux("update", "-v", running, "duration=+1m")
    assert r.stderr == INFO + "updated attributes.system.duration to 120.0\n"
    assert "set-flags" not in flux.eventlog(held)
    flux("cancel", running)
    sched_clean(flux)


# -- instance expiration -----------------------------------


EXPIRING = "instance:\n  expiration: 3m\n"


def test_instance_expiration_limits_submit_and_guest_update(flux_factory):
    flux = flux_factory("--test-size=4", "--test-cores=2", config=EXPIRING)
    r = flux.fails("submit", "-t", "10m", RUN1S, "true")
    assert r.stderr == "flux-lite submit: ERROR: job duration (10m) exceeds remaining instance lifetime (3m)\n"
    # owner bypass (owner-allow-any)
    held = flux.submit("--urgency=hold", "-t", "1m", RUN1S, "true")
    r = flux("update", "-v", held, "duration=10m")
    assert r.stderr == INFO + "updated attributes.system.duration to 600.0\n"
    assert tail(flux, held, 2) == [("jobspec-update", {DURATION: 600.0}), ("priority", {"priority": 0})]
    # guests are validated against the remaining lifetime, which shrinks with time
    guest = flux.submit("--urgency=hold", "-t", "1m", "true", env=GUEST)
    refused(flux, guest, "duration=10m", msg="job duration (10m) exceeds remaining instance lifetime (3m)",
            env=GUEST)
    flux.advance("1m")
    refused(flux, guest, "duration=10m", msg="job duration (10m) exceeds remaining instance lifetime (2m)",
            env=GUEST)
    refused(flux, guest, "duration=+2m", msg="job duration (3m) exceeds remaining instance lifetime (2m)",
            env=GUEST)
    flux("update", guest, "duration=90s", env=GUEST)
    # owner with owner-allow-any off is validated too
    flux("config", "load", input=EXPIRING + "job-manager:\n  update-duration:\n    owner-allow-any: false\n")
    refused(flux, held, "duration=1h", msg="job duration (1h) exceeds remaining instance lifetime (2m)")


def test_running_job_may_be_extended_past_instance_expiration(flux_factory):
    flux = flux_factory("--test-size=4", "--test-cores=2", config=EXPIRING)
    jobid = flux.submit("-t", "2m", RUN10M, "true")
    start = execution(flux, jobid)["starttime"]
    r = flux("update", "-v", jobid, "duration=+10m")
    assert r.stderr == INFO + "updated attributes.system.duration to 720.0\n"
    assert execution(flux, jobid)["expiration"] == start + 720.0
    # inf means unlimited even inside an instance with an expiration
    flux("update", jobid, "duration=inf")
    assert tail(flux, jobid, 2) == [("jobspec-update", {DURATION: 0.0}), ("resource-update", {"expiration": 0.0})]


def test_config_load_instance_expiration_updates_running_unlimited_jobs_only(flux_factory):
    flux = flux_factory("--test-size=4", "--test-cores=2", config=EXPIRING)
    t0 = json.loads(flux.out("kvs", "get", "resource.R"))["execution"]["starttime"]
    flux.advance("1m")
    unlimited = flux.submit(RUN10M, "true")
    timed = flux.submit("-t", "1m", RUN10M, "true")
    held = flux.submit("--urgency=hold", RUN1S, "true")
    assert execution(flux, unlimited)["expiration"] == t0 + 180.0
    assert execution(flux, timed)["expiration"] == t0 + 120.0
    flux("dmesg", "-C")

    flux("config", "load", input="instance:\n  expiration: 8m\n")
    new = t0 + 480.0
    assert json.loads(flux.out("kvs", "get", "resource.R"))["execution"]["expiration"] == new
    assert tail(flux, unlimited, 1) == [("resource-update", {"expiration": new})]
    assert execution(flux, unlimited)["expiration"] == new
    assert "resource-update" not in flux.eventlog(timed)
    assert "resource-update" not in flux.eventlog(held)
    log = flux.dmesg()
    for line in (
        f"job-manager.info[0]: resource expiration updated from {t0 + 180:.2f} to {new:.2f} (+300)",
        f"job-manager.info[0]: updated expiration of {unlimited} from {t0 + 180:.2f} to {new:.2f} (+300)",
        f"sched-simple.info[0]: resource expiration updated to {new:.2f}",
        f"job-exec.debug[0]: updated expiration of {unlimited} to {new:.2f}",
    ):
        assert line in log

    # the exec timer moved with it: no timeout at the old instance expiration
    flux.advance("2m")  # t0 + 180
    assert flux.state(unlimited) == "RUN"
    assert flux.out("jobs", "-a", "-no", "{result}", timed).strip() == "TIMEOUT"

    # a decrease propagates as well, then unlimited (+inf), then a value again (-inf)
    flux("config", "load", input="instance:\n  expiration: 5m\n")
    assert tail(flux, unlimited, 1) == [("resource-update", {"expiration": t0 + 300.0})]
    assert (f"job-manager.info[0]: updated expiration of {unlimited} from {new:.2f} to {t0 + 300:.2f} (-180)"
            in flux.dmesg())
    flux("config", "load", input="")
    assert tail(flux, unlimited, 1) == [("resource-update", {"expiration": 0.0})]
    assert (f"job-manager.info[0]: resource expiration updated from {t0 + 300:.2f} to 0.00 (+inf)"
            in flux.dmesg())
    flux("config", "load", input="instance:\n  expiration: 1h\n")
    assert tail(flux, unlimited, 1) == [("resource-update", {"expiration": t0 + 3600.0})]
    assert (f"job-manager.info[0]: updated expiration of {unlimited} from 0.00 to {t0 + 3600:.2f} (-inf)"
            in flux.dmesg())
    assert [e["name"] for e in flux.events(unlimited)].count("resource-update") == 4
    # the job's own 10m run ends it
    flux.advance("10m")
    assert flux.out("jobs", "-a", "-no", "{result}", unlimited).strip() == "COMPLETED"
    sched_clean(flux)


def test_instance_expiration_set_on_unlimited_instance(flux):
    """4.10: from no expiration (0) to one: delta -inf; without running jobs
    only the scheduler hears of it."""
    t0 = json.loads(flux.out("kvs", "get", "resource.R"))["execution"]["starttime"]
    flux("dmesg", "-C")
    flux("config", "load", input="instance:\n  expiration: 1h\n")
    log = flux.dmesg()
    assert f"sched-simple.info[0]: resource expiration updated to {t0 + 3600:.2f}" in log
    assert not any(line.startswith("job-manager.info[0]: resource expiration updated") for line in log)
    flux("config", "load", input="")
    jobid = flux.submit(RUN10M, "true")
    assert execution(flux, jobid)["expiration"] == 0
    flux("dmesg", "-C")
    flux("config", "load", input="instance:\n  expiration: 1h\n")
    assert tail(flux, jobid, 1) == [("resource-update", {"expiration": t0 + 3600.0})]
    assert (f"job-manager.info[0]: resource expiration updated from 0.00 to {t0 + 3600:.2f} (-inf)"
            in flux.dmesg())
    assert (f"job-manager.info[0]: updated expiration of {jobid} from 0.00 to {t0 + 3600:.2f} (-inf)"
            in flux.dmesg())
    sched_clean(flux)
