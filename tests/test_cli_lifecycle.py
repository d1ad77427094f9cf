"""CLI tests of the job lifecycle: submit, events, cancel, hold, timeout, run,
jobs, job info/eventlog/wait-event/timeleft/raise/urgency/id, determinism.

Expected values are what Flux 0.88 prints. The default `flux`
fixture is a 4-node x 2-core instance on a virtual clock that starts at
1767225600.0, so every timestamp below is exact.
"""

import json
import os
import pwd

import pytest

UID = os.getuid()
USER = pwd.getpwuid(UID).pw_name
GUEST = {"FLUX_HANDLE_USERID": "1234"}
T0 = 1767225600.0  # flux_lite.instance.VIRTUAL_START

HEADER = "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO"


def jobs_line(jobid, name, st, ntasks, nnodes, t, info, user=USER):
    """One line of the default `flux jobs` format."""
    return f"{jobid:>12} {user:<8} {name:<10.10} {st:>2} {ntasks:>6} {nnodes:>6} {t:>8} {info}"


def ts(t):
    return f"{t:.6f}"


def submit_line(t, urgency=16, userid=UID, flags=0):
    return f"{ts(t)} submit userid={userid} urgency={urgency} flags={flags} version=1"


def lines(text):
    return text.splitlines()


def err(result):
    return result.stderr.strip()


def ctx(flux, jobid, name, nth=0):
    """Context of the nth event called name."""
    found = [e for e in flux.events(jobid) if e["name"] == name]
    return found[nth].get("context")


def fill(flux, n=4):
    """Occupy n whole nodes with jobs that run until canceled."""
    return [flux.submit("-N1", "sleep", "inf") for _ in range(n)]


# ----------------------------------------------------------- normal completion


def test_normal_completion_event_sequence_and_contexts(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "start"]
    flux.advance("59s")
    assert flux.state(jobid) == "RUN"
    flux.advance("1s")
    events = flux.events(jobid)
    assert [e["name"] for e in events] == [
        "submit", "validate", "depend", "priority", "alloc", "start",
        "finish", "release", "free", "clean",
    ]
    by = {e["name"]: e for e in events}
    assert by["submit"]["context"] == {"userid": UID, "urgency": 16, "flags": 0, "version": 1}
    assert list(by["submit"]["context"]) == ["userid", "urgency", "flags", "version"]
    assert by["priority"]["context"] == {"priority": 16}
    assert by["alloc"]["context"] == {"annotations": {"sched": {"resource_summary": "rank0/core[0-1]"}}}
    assert by["finish"]["context"] == {"status": 0}
    assert by["release"]["context"] == {"ranks": "all", "final": True}
    for name in ("validate", "depend", "start", "free", "clean"):
        assert "context" not in by[name], name
    assert by["submit"]["timestamp"] == T0
    assert by["start"]["timestamp"] == T0
    for name in ("finish", "release", "free", "clean"):
        assert by[name]["timestamp"] == T0 + 60
    assert flux.out("jobs", "-a", "-no", "{status} {result} {returncode} {success}", jobid).strip() == \
        "COMPLETED COMPLETED 0 True"


def test_eventlog_text_and_json_forms_match_flux(flux):
    # as Flux 0.88 prints `flux job eventlog` and `-f json` of the short job
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=0.2s", "hostname")
    flux.advance("1s")
    assert lines(flux.out("job", "eventlog", jobid)) == [
        submit_line(T0),
        f"{ts(T0)} validate",
        f"{ts(T0)} depend",
        f"{ts(T0)} priority priority=16",
        f'{ts(T0)} alloc annotations={{"sched":{{"resource_summary":"rank0/core[0-1]"}}}}',
        f"{ts(T0)} start",
        f"{ts(T0 + 0.2)} finish status=0",
        f'{ts(T0 + 0.2)} release ranks="all" final=true',
        f"{ts(T0 + 0.2)} free",
        f"{ts(T0 + 0.2)} clean",
    ]
    raw = lines(flux.out("job", "eventlog", "-f", "json", jobid))
    assert raw[0] == ('{"timestamp":1767225600.0,"name":"submit","context":'
                      f'{{"userid":{UID},"urgency":16,"flags":0,"version":1}}}}')
    assert raw[1] == '{"timestamp":1767225600.0,"name":"validate"}'
    assert raw[3] == '{"timestamp":1767225600.0,"name":"priority","context":{"priority":16}}'
    assert raw[-4] == '{"timestamp":1767225600.2,"name":"finish","context":{"status":0}}'
    assert raw[-1] == '{"timestamp":1767225600.2,"name":"clean"}'


def test_eventlog_human_and_offset_time_formats(flux, utc):
    # Flux 0.88's `flux job eventlog -H`: date at the first line, then offsets
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=10s", "hostname")
    flux.advance("10s")
    out = lines(flux.out("job", "eventlog", "-H", jobid))
    assert out[:2] == [f"[Jan01 00:00] submit userid={UID} urgency=16 flags=0 version=1",
                       "[  +0.000000] validate"]
    assert out[6:] == ["[ +10.000000] finish status=0", '[ +10.000000] release ranks="all" final=true',
                       "[ +10.000000] free", "[ +10.000000] clean"]
    out = lines(flux.out("job", "eventlog", "-T", "offset", jobid))
    assert out[0] == f"0.000000 submit userid={UID} urgency=16 flags=0 version=1"
    assert out[-1] == "10.000000 clean"
    out = lines(flux.out("job", "eventlog", "-T", "iso", jobid))
    assert out[-1].split()[1] == "clean" and out[-1].startswith("2026-01-01T00:00:10")


def test_jobs_pending_line(flux):
    running = fill(flux)
    jobid = flux.submit("-N1", "-t", "5m", "hostname")
    assert lines(flux.out("jobs", "-f", "pending")) == [HEADER, jobs_line(jobid, "hostname", "S", 1, 1, "5m", "")]
    assert lines(flux.out("jobs"))[1] == jobs_line(jobid, "hostname", "S", 1, 1, "5m", "")
    # running jobs with equal t_run: order unspecified in Flux (job_running_cmp)
    assert sorted(lines(flux.out("jobs"))[2:]) == sorted(jobs_line(j, "sleep", "R", 1, 1, "-", f"node{i}")
                                                         for i, j in enumerate(running))


def test_jobs_shows_running_then_completed(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    flux.advance("45s")
    assert lines(flux.out("jobs")) == [HEADER, jobs_line(jobid, "hostname", "R", 1, 1, "45s", "node0")]
    flux.advance("15s")
    assert lines(flux.out("jobs")) == [HEADER]
    assert lines(flux.out("jobs", "-a")) == [HEADER, jobs_line(jobid, "hostname", "CD", 1, 1, "1m", "node0")]


def test_empty_instance_listings(flux):
    # as in Flux 0.88: `flux jobs -a` is the header alone, `-n` prints nothing
    assert flux.out("jobs", "-a") == HEADER + "\n"
    assert flux.out("jobs", "-a", "-n") == ""


# ------------------------------------------------------------------- cancel


def test_cancel_running_job(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    flux.advance("10s")
    result = flux("cancel", jobid)
    assert result.stdout == "" and result.stderr == ""  # silent on success
    t = T0 + 10
    assert lines(flux.out("job", "eventlog", jobid))[6:] == [
        f'{ts(t)} exception type="cancel" severity=0 note="" userid={UID}',
        f"{ts(t)} finish status=15",
        f'{ts(t)} release ranks="all" final=true',
        f"{ts(t)} free",
        f"{ts(t)} clean",
    ]
    assert list(ctx(flux, jobid, "exception")) == ["type", "severity", "note", "userid"]
    assert flux.out("jobs", "-a", "-o", "{id.f58} {state} {result} {status} {returncode} {exception.type} "
                    "{exception.note}", jobid) == (
        "JOBID STATE RESULT STATUS RC EXCEPTION-TYPE EXCEPTION-NOTE\n"
        f"{jobid} INACTIVE CANCELED CANCELED -15 cancel \n")
    assert lines(flux.out("jobs", "-a")) == [HEADER, jobs_line(jobid, "hostname", "CA", 1, 1, "10s", "node0")]
    # nothing more happens at the old run end
    flux.advance("1m")
    assert flux.eventlog(jobid)[-1] == "clean" and len(flux.eventlog(jobid)) == 11
    assert flux.out("resource", "list", "-s", "free", "-no", "{nnodes} {ncores}").strip() == "4 8"


def test_cancel_pending_job_has_no_free(flux):
    fill(flux)
    jobid = flux.submit("-N1", "hostname")
    assert flux.state(jobid) == "SCHED"
    flux("cancel", "-m", "no longer needed", jobid)
    assert lines(flux.out("job", "eventlog", jobid)) == [
        submit_line(T0),
        f"{ts(T0)} validate",
        f"{ts(T0)} depend",
        f"{ts(T0)} priority priority=16",
        f'{ts(T0)} exception type="cancel" severity=0 note="no longer needed" userid={UID}',
        f"{ts(T0)} clean",
    ]
    assert flux.out("jobs", "-a", "-no", "{status} {returncode} {exception.note}", jobid).strip() == \
        "CANCELED -128 no longer needed"
    # the canceled request does not leak resources or disturb the running jobs
    assert flux.out("jobs", "-f", "running", "-no", "{id.f58}").count("\n") == 4
    assert flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}").strip() == "4"


def test_cancel_error_messages_and_exit_codes(flux):
    done = flux.submit("-N1", "-t", "1m", "--setattr=exec.test.run_duration=1s", "true")
    flux.advance("2s")
    r = flux.fails("cancel", done)
    assert err(r) == f"flux-lite cancel: ERROR: {done}: job is inactive"
    r = flux.fails("cancel", "f123")  # f58 detection first: a valid id
    assert err(r) == "flux-lite cancel: ERROR: f23: unknown job id"
    live = flux.submit("-N1", "sleep", "inf")
    r = flux.fails("cancel", "--all", live)
    assert err(r).endswith("Do not specify a list of jobids with --all,--user,--states options")
    assert flux.state(live) == "RUN"
    # one bad id does not stop the others, but the exit code says so
    r = flux.fails("cancel", "f123", live)
    assert flux.state(live) == "INACTIVE"
    r = flux.fails("cancel", "notajobid", code=2)


def test_cancel_all_summaries(flux):
    r = flux("cancel", "--all")
    assert err(r) == "flux-lite cancel: Matched 0 jobs"
    one = flux.submit("-N1", "sleep", "inf")
    r = flux("cancel", "--all")
    assert err(r) == "flux-lite cancel: Canceled 1 job (0 errors)"
    assert flux.state(one) == "INACTIVE"
    jobs = fill(flux, 4) + [flux.submit("-N1", "sleep", "inf"), flux.submit("--urgency=hold", "sleep", "inf")]
    r = flux("cancel", "--all")
    assert err(r) == "flux-lite cancel: Canceled 6 jobs (0 errors)"
    assert {flux.state(j) for j in jobs} == {"INACTIVE"}
    assert err(flux("cancel", "--all", "-q")) == ""


def test_cancel_states_selects_pending_only(flux):
    running = fill(flux)
    pending = [flux.submit("-N1", "sleep", "inf"), flux.submit("-N1", "sleep", "inf")]
    r = flux("cancel", "--states=pending")
    assert err(r) == "flux-lite cancel: Canceled 2 jobs (0 errors)"
    assert [flux.state(j) for j in pending] == ["INACTIVE", "INACTIVE"]
    assert [flux.state(j) for j in running] == ["RUN"] * 4


def test_cancel_dry_run_message(flux):
    jobs = fill(flux, 2)
    r = flux("cancel", "--all", "--dry-run")
    assert err(r) == "flux-lite cancel: Would cancel 2 jobs"
    assert [flux.state(j) for j in jobs] == ["RUN", "RUN"]


def test_cancel_quiet_only_hides_matched_zero(flux):
    fill(flux, 2)
    assert err(flux("cancel", "--all", "-q")) == "flux-lite cancel: Canceled 2 jobs (0 errors)"


def test_cancel_without_targets_exits_1(flux):
    r = flux.fails("cancel", code=1)
    assert "No target jobs were provided" in r.stderr


# -------------------------------------------------------------- hold / urgency


def test_held_job_is_never_allocated_until_released(flux):
    jobid = flux.submit("--urgency=hold", "-N1", "hostname")
    assert ctx(flux, jobid, "submit")["urgency"] == 0
    assert ctx(flux, jobid, "priority") == {"priority": 0}
    assert lines(flux.out("jobs")) == [HEADER, jobs_line(jobid, "hostname", "S", 1, 1, "-", "held")]
    flux.advance("1h")  # resources are free the whole time
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority"]
    flux("job", "urgency", jobid, "default")
    t = T0 + 3600
    assert lines(flux.out("job", "eventlog", jobid))[4:] == [
        f"{ts(t)} urgency userid={UID} urgency=16",
        f"{ts(t)} priority priority=16",
        f'{ts(t)} alloc annotations={{"sched":{{"resource_summary":"rank0/core[0-1]"}}}}',
        f"{ts(t)} start",
        # hostname prints the node's name and ends at once
        f"{ts(t)} finish status=0",
        f'{ts(t)} release ranks="all" final=true',
        f"{ts(t)} free",
        f"{ts(t)} clean",
    ]


def test_hold_then_cancel_shows_dash_time_and_no_info(flux):
    # as in Flux 0.88: a canceled held job is CA, TIME '-', INFO empty, RC -128
    jobid = flux.submit("--urgency=hold", "sleep", "inf")
    flux("cancel", jobid)
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "exception", "clean"]
    assert lines(flux.out("jobs", "-a")) == [HEADER, jobs_line(jobid, "sleep", "CA", 1, "-", "-", "")]
    assert flux.out("jobs", "-a", "-no", "{returncode}", jobid).strip() == "-128"


def test_urgency_hold_of_pending_job(flux):
    fill(flux)
    jobid = flux.submit("-N1", "sleep", "inf")
    flux("job", "urgency", jobid, "hold")
    assert lines(flux.out("job", "eventlog", jobid))[-2:] == [
        f"{ts(T0)} urgency userid={UID} urgency=0",
        f"{ts(T0)} priority priority=0",
    ]
    assert flux.out("jobs", "-no", "{contextual_info}", jobid).strip() == "held"
    flux("cancel", "--states=running")
    assert flux.state(jobid) == "SCHED"
    assert "alloc" not in flux.eventlog(jobid)


def test_expedite_goes_first(flux):
    running = fill(flux)
    a = flux.submit("-N1", "sleep", "inf")
    b = flux.submit("-N1", "--urgency=20", "sleep", "inf")
    c = flux.submit("-N1", "--urgency=expedite", "sleep", "inf")
    assert ctx(flux, c, "priority") == {"priority": 4294967295}
    assert flux.out("jobs", "-f", "pending", "-no", "{id.f58} {urgency} {priority}").splitlines() == [
        f"{c} 31 4294967295", f"{b} 20 20", f"{a} 16 16",
    ]
    flux("cancel", running[0])
    assert flux.state(c) == "RUN" and flux.state(b) == "SCHED"
    flux("job", "urgency", a, "expedite")
    flux("cancel", running[1])
    assert flux.state(a) == "RUN" and flux.state(b) == "SCHED"


def test_urgency_errors(flux):
    pending = flux.submit("--urgency=hold", "sleep", "inf")
    r = flux.fails("job", "urgency", pending, "32")
    assert err(r).endswith("urgency value is out of range")
    r = flux.fails("job", "urgency", "f123", "10")
    assert err(r).endswith("unknown job")
    running = flux.submit("-N1", "sleep", "inf")
    r = flux.fails("job", "urgency", running, "10")
    assert err(r).endswith("urgency cannot be changed once resources are allocated")
    flux("cancel", running)
    r = flux.fails("job", "urgency", running, "10")
    assert err(r).endswith("job is inactive")
    flux("job", "urgency", pending, "5")
    assert flux.eventlog(pending)[4:] == ["urgency", "priority", "alloc", "start"]


def test_urgency_verbose_prints_old_value(flux):
    fill(flux)
    jobid = flux.submit("--urgency=hold", "sleep", "inf")
    assert flux("job", "urgency", "-v", jobid, "20").stderr == "old urgency: job held\n"
    assert flux("job", "urgency", "-v", jobid, "expedite").stderr == "old urgency: 20\n"
    assert flux("job", "urgency", "-v", jobid, "3").stderr == "old urgency: job expedited\n"


def test_submit_urgency_range(flux):
    r = flux.fails("submit", "--urgency=32", "sleep", "inf")
    assert err(r).endswith("urgency range is [0:31]")
    assert flux.out("jobs", "-a", "-n") == ""


# ------------------------------------------------------------------- timeout


def test_timeout_at_exactly_start_plus_limit(flux):
    flux.advance("7s")
    jobid = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    start = [e for e in flux.events(jobid) if e["name"] == "start"][0]["timestamp"]
    assert start == T0 + 7
    flux.advance("59.999s")
    assert flux.state(jobid) == "RUN"
    flux.advance("0.001s")
    events = flux.events(jobid)
    assert [e["name"] for e in events][6:] == ["exception", "finish", "release", "free", "clean"]
    exc = events[6]
    assert exc["timestamp"] == start + 60
    assert exc["context"]["type"] == "timeout"
    assert exc["context"]["severity"] == 0
    assert exc["context"]["note"] == "resource allocation expired"
    assert all(e["timestamp"] == start + 60 for e in events[6:])
    assert flux.out("jobs", "-a", "-no", "{status} {result} {exception.type} {exception.note}", jobid).strip() \
        == "TIMEOUT TIMEOUT timeout resource allocation expired"
    assert lines(flux.out("jobs", "-a")) == [HEADER, jobs_line(jobid, "sleep", "TO", 1, 1, "1m", "node0")]


def test_run_duration_longer_than_limit_times_out(flux):
    jobid = flux.submit("-N1", "-t", "1m", "--setattr=exec.test.run_duration=90s", "true")
    flux.advance("2m")
    assert flux.out("jobs", "-a", "-no", "{result} {runtime}", jobid).strip() == "TIMEOUT 60.0"


def test_timeout_exception_context_matches_flux(flux):
    # flux-core job-manager start.c posts exec exceptions as {type, severity, userid=owner, note}
    jobid = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    flux.advance("1m")
    line = [ln for ln in lines(flux.out("job", "eventlog", jobid)) if " exception " in ln][0]
    assert line == f'{ts(T0 + 60)} exception type="timeout" severity=0 userid={UID} ' \
                   'note="resource allocation expired"'


def test_timeout_kills_with_sigalrm(flux):
    # Flux's job-exec timelimit_cb kills with SIGALRM: in test exec mode the
    # "shell" dies of it (finish status=14, returncode -14, `run` exits 142)
    jobid = flux.submit("-N1", "-t", "1m", "-S", "exec.test.run_duration=0s", "true")
    flux.advance("1m")
    assert ctx(flux, jobid, "finish") == {"status": 14}
    assert flux.out("jobs", "-a", "-no", "{returncode}", jobid).strip() == "-14"
    flux.fails("run", "-N1", "-t", "1m", "-S", "exec.test.run_duration=0s", "true", code=142)
    # a real command: the shell passes SIGALRM on, its task dies of it (exit code 142)
    jobid = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    flux.advance("1m")
    assert ctx(flux, jobid, "finish") == {"status": 142 << 8}
    assert flux.out("jobs", "-a", "-no", "{returncode}", jobid).strip() == "142"
    r = flux.fails("run", "-N1", "-t", "1m", "sleep", "inf", code=142)
    assert r.stderr.endswith("resource allocation expired\nflux-lite job: task(s) Alarm clock\n")


# ----------------------------------------------------------------------- run


def test_run_waits_and_advances_the_virtual_clock(flux):
    r = flux("run", "-N1", "-t", "5m", "--setattr=exec.test.run_duration=90s", "hostname")
    assert r.exit_code == 0
    assert flux.now() == T0 + 90
    assert flux.out("jobs", "-a", "-no", "{status} {runtime}").strip() == "COMPLETED 90.0"


def test_run_exit_codes(flux):
    # canceled-by-timeout job: a signal exit (128+signal); a job that never ran: 1
    r = flux("run", "-N1", "-t", "1m", "sleep", "inf", check=False)
    assert r.exit_code > 128
    assert flux.now() == T0 + 60
    r = flux.fails("run", "-n1", "-c", "3", "-N1", "hostname")
    assert "unsatisfiable request" in r.stderr
    # nothing can end this job under a virtual clock: refused, not a hang
    r = flux.fails("run", "-N1", "sleep", "inf")
    assert flux.now() == T0 + 60


# ------------------------------------------------------------------------ jobs


def test_jobs_ordering_pending_running_inactive(flux):
    r1 = flux.submit("-N1", "-t", "10m", "--setattr=exec.test.run_duration=100s", "true")  # t_run 0
    flux.advance("10s")
    r2 = flux.submit("-N1", "-t", "10m", "--setattr=exec.test.run_duration=20s", "true")   # t_run 10
    flux.advance("10s")
    r3 = flux.submit("-N1", "-t", "10m", "--setattr=exec.test.run_duration=100s", "true")  # t_run 20
    flux.advance("10s")
    r4 = flux.submit("-N1", "-t", "10m", "--setattr=exec.test.run_duration=100s", "true")  # t_run 30
    p1 = flux.submit("-N1", "sleep", "inf")
    p2 = flux.submit("-N1", "--urgency=20", "sleep", "inf")
    p3 = flux.submit("-N1", "--urgency=hold", "sleep", "inf")
    p4 = flux.submit("-N1", "--urgency=20", "sleep", "inf")
    c1 = flux.submit("--urgency=hold", "sleep", "inf")
    flux("cancel", c1)  # t_inactive 30
    # r2 ended at 30 (before p1 was submitted), so p1 took its node: t_run 30 like r4
    order = flux.out("jobs", "-a", "-no", "{id.f58}").split()
    assert order[:3] == [p2, p4, p3]            # pending: priority desc, then id asc
    assert set(order[3:5]) == {r4, p1}          # running: t_run desc (ties unspecified)
    assert order[5:7] == [r3, r1]
    assert order[7:] == [c1, r2]                # inactive: t_inactive desc, then id desc
    flux.advance("1s")
    flux("cancel", p2, p3, p4)
    inactive = flux.out("jobs", "-f", "inactive", "-no", "{id.f58}").split()
    assert inactive == [p4, p3, p2, c1, r2]


def test_jobs_filters_and_count(flux):
    done = flux.submit("-N1", "-t", "1m", "--setattr=exec.test.run_duration=1s", "true")
    tout = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    canc = flux.submit("-N1", "sleep", "inf")
    run = flux.submit("-N1", "sleep", "inf")
    flux.advance("1m")
    flux("cancel", canc)
    more = fill(flux, 3)
    pend = [flux.submit("-N1", "sleep", "inf"), flux.submit("-N1", "sleep", "inf")]

    def ids(*args):
        return flux.out("jobs", "-no", "{id.f58}", *args).split()

    assert set(ids()) == {run, *more, *pend}
    assert ids("-f", "pending") == pend
    assert ids("-f", "sched") == pend
    assert set(ids("-f", "running")) == {run, *more}
    assert set(ids("-f", "run")) == {run, *more}
    assert ids("-f", "completed") == [done]
    assert ids("-f", "canceled") == [canc]
    assert ids("-f", "timeout") == [tout]
    assert set(ids("-f", "canceled,timeout")) == {canc, tout}
    assert set(ids("-f", "inactive")) == {done, tout, canc}
    assert len(ids("-a")) == 9
    assert ids("-a", "-c", "2") == ids("-a")[:2] == pend
    r = flux.fails("jobs", "-f", "bogus")
    assert "Invalid filter specified: bogus" in r.stderr
    flux.fails("jobs", "f123")  # an unknown job id
    assert ids(done) == [done]  # explicit ids are listed whatever their state


def test_jobs_count_truncation_warning(flux):
    for _ in range(3):
        flux.submit("--urgency=hold", "sleep", "inf")
    r = flux("jobs", "-c", "2")
    assert len(r.stdout.splitlines()) == 3
    assert r.stderr == ("warning: output truncated at 2 jobs.\n"
                        "Use --count to increase returned results or use filters to alter results.\n")
    assert flux("jobs", "-c", "2", "-n").stderr == ""
    assert flux("jobs", "-c", "3").stderr == ""


def test_jobs_output_formats_from_transcript(flux, utc):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    out = flux.out("jobs", "-a", "-o", "{id.f58} {state} {status} {nnodes} {ranks} {duration} "
                                       "{expiration!d:%FT%T}")
    assert out == ("JOBID STATE STATUS NNODES RANKS DURATION EXPIRATION\n"
                   f"{jobid} RUN RUN 1 0 300.0 2026-01-01T00:05:00\n")


def test_jobs_json(flux):
    jobid = flux.submit("-N1", "-t", "5m", "sleep", "inf")
    doc = json.loads(flux.out("jobs", "--json"))
    assert list(doc) == ["jobs"] and len(doc["jobs"]) == 1
    job = doc["jobs"][0]
    assert job["id"] == int(flux.out("job", "id", jobid))
    assert job["userid"] == UID
    assert job["state"] == "RUN"
    assert job["duration"] == 300.0
    assert job["expiration"] == T0 + 300
    assert job["nodelist"] == "node0"
    flux("cancel", jobid)
    assert json.loads(flux.out("jobs", "--json"))["jobs"] == []
    assert json.loads(flux.out("jobs", "-a", "--json"))["jobs"][0]["result"] == "CANCELED"


def test_jobs_json_single_id_is_one_object(flux):
    jobid = flux.submit("-N1", "sleep", "inf")
    doc = json.loads(flux.out("jobs", "--json", jobid))
    assert doc["state"] == "RUN"


# -------------------------------------------------------------------- job info


def test_job_info_R_jobspec_eventlog(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    # as in Flux 0.88: R with starttime/expiration/nslots/nodelist, Flux's spacing
    assert flux.out("job", "info", jobid, "R") == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0-1"}}], '
        f'"starttime": {T0}, "expiration": {T0 + 300}, "nslots": 1, "nodelist": ["node0"]}}}}\n')
    js = json.loads(flux.out("job", "info", jobid, "jobspec"))
    assert list(js) == ["resources", "tasks", "attributes", "version"]
    assert js["resources"] == [{"type": "node", "count": 1, "exclusive": True, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}], "label": "task"}]}]
    assert js["tasks"] == [{"command": ["hostname"], "slot": "task", "count": {"per_slot": 1}}]
    assert js["attributes"]["system"]["duration"] == 300.0
    assert js["attributes"]["system"]["exec"] == {"test": {"run_duration": "60s"}}
    assert js["version"] == 1
    assert flux.out("job", "info", jobid, "eventlog") == flux.out("job", "eventlog", "-f", "json", jobid)
    flux("job", "info", jobid, "J")
    pending = flux.submit("--urgency=hold", "sleep", "inf")
    flux.fails("job", "info", pending, "R")
    flux.fails("job", "info", "f123", "jobspec")


def test_job_info_R_reflects_the_allocation(flux):
    a = flux.submit("-n3", "sleep", "inf")
    assert json.loads(flux.out("job", "info", a, "R")) == {"version": 1, "execution": {
        "R_lite": [{"rank": "0", "children": {"core": "0-1"}}, {"rank": "1", "children": {"core": "0"}}],
        "starttime": T0, "expiration": 0.0, "nslots": 3, "nodelist": ["node[0-1]"]}}
    b = flux.submit("-n2", "-c2", "sleep", "inf")
    assert json.loads(flux.out("job", "info", b, "R"))["execution"]["R_lite"] == [
        {"rank": "2-3", "children": {"core": "0-1"}}]
    assert flux.out("jobs", "-o", "{id.f58} {ntasks} {nnodes} {ncores} {ranks} {nodelist}") == (
        "JOBID NTASKS NNODES NCORES RANKS NODELIST\n"
        f"{a} 3 2 3 [0-1] node[0-1]\n"  # job-list brackets a multi-rank idset
        f"{b} 2 2 4 [2-3] node[2-3]\n")


# ------------------------------------------------------------------ wait-event


def test_wait_event_prints_the_event_and_advances_the_clock(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    assert flux.out("job", "wait-event", "-t", "30", jobid, "start") == f"{ts(T0)} start\n"
    assert flux.now() == T0
    assert flux.out("job", "wait-event", jobid, "clean") == f"{ts(T0 + 60)} clean\n"
    assert flux.now() == T0 + 60
    out = flux.out("job", "wait-event", "-m", "status=0", jobid, "finish")
    assert out == f"{ts(T0 + 60)} finish status=0\n"
    out = flux.out("job", "wait-event", "-m", "ranks=all", jobid, "release")
    assert out == f'{ts(T0 + 60)} release ranks="all" final=true\n'
    out = flux.out("job", "wait-event", "-f", "json", jobid, "priority")
    assert out == '{"timestamp":1767225600.0,"name":"priority","context":{"priority":16}}\n'
    assert flux.out("job", "wait-event", "-q", jobid, "clean") == ""
    assert len(lines(flux.out("job", "wait-event", "-v", jobid, "start"))) == 6


def test_wait_event_on_a_pending_job_advances_to_its_start(flux):
    running = fill(flux, 3)
    short = flux.submit("-N1", "-t", "1m", "--setattr=exec.test.run_duration=10s", "true")
    waiting = flux.submit("-N1", "sleep", "inf")
    assert flux.out("job", "wait-event", "-t", "30", waiting, "start") == f"{ts(T0 + 10)} start\n"
    assert flux.now() == T0 + 10
    assert flux.state(short) == "INACTIVE"
    assert [flux.state(j) for j in running] == ["RUN"] * 3


def test_wait_event_that_can_never_arrive_is_refused(flux):
    jobid = flux.submit("-N1", "sleep", "inf")  # runs until canceled
    r = flux.fails("job", "wait-event", jobid, "clean")
    assert "cannot arrive" in r.stderr
    assert flux.now() == T0
    assert flux.state(jobid) == "RUN"


def test_wait_event_errors(flux):
    held = flux.submit("--urgency=hold", "sleep", "inf")
    r = flux.fails("job", "wait-event", "-t", "0.25", held, "alloc")
    assert err(r).endswith("wait-event timeout on event 'alloc'")
    r = flux.fails("job", "wait-event", "-c", "2", held, "priority")
    flux("cancel", held)
    r = flux.fails("job", "wait-event", held, "alloc")
    assert err(r).endswith("event 'alloc' never received")
    r = flux.fails("job", "wait-event", "f123", "start")
    assert "not found" in r.stderr
    r = flux.fails("job", "wait-event", "-m", "status=1", held, "priority")


def test_wait_event_timeout_lets_simulated_time_pass(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=10s", "true")
    held = flux.submit("--urgency=hold", "sleep", "inf")
    r = flux.fails("job", "wait-event", "-t", "30", held, "alloc")
    assert err(r).endswith("wait-event timeout on event 'alloc'")
    assert flux.now() == T0 + 30
    assert flux.state(jobid) == "INACTIVE"


# -------------------------------------------------------------------- timeleft


def test_timeleft(flux):
    jobid = flux.submit("-N1", "-t", "5m", "sleep", "inf")
    assert flux.out("job", "timeleft", jobid) == "300\n"
    flux.advance("100.5s")
    assert flux.out("job", "timeleft", jobid) == "199\n"
    held = flux.submit("--urgency=hold", "sleep", "inf")
    r = flux.fails("job", "timeleft", held)
    assert err(r).endswith(f"job {held} has not started")
    flux("cancel", jobid)
    assert flux.out("job", "timeleft", jobid) == "0\n"


def test_timeleft_unlimited_prints_uint_max(flux):
    jobid = flux.submit("-N1", "sleep", "inf")
    assert flux.out("job", "timeleft", jobid) == "4294967295\n"


def test_timeleft_rounds_up_last_second(flux):
    jobid = flux.submit("-N1", "-t", "1m", "sleep", "inf")
    flux.advance("59.5s")
    assert flux.state(jobid) == "RUN"
    assert flux.out("job", "timeleft", jobid) == "1\n"


def test_timeleft_of_canceled_pending_job_is_zero(flux):
    held = flux.submit("--urgency=hold", "sleep", "inf")
    flux("cancel", held)
    assert flux.out("job", "timeleft", held) == "0\n"


# ----------------------------------------------------------------------- raise


def test_raise_errors(flux):
    pending = flux.submit("--urgency=hold", "sleep", "inf")
    r = flux.fails("job", "raise", "-s", "8", pending)
    assert err(r).endswith("invalid exception severity")
    r = flux.fails("job", "raise", "-s", "-1", pending)
    assert err(r).endswith("invalid exception severity")
    for bad in ("a b", "a=b", ""):
        r = flux.fails("job", "raise", "-t", bad, pending)
        assert err(r).endswith("invalid exception type"), bad
    r = flux.fails("job", "raise", "f123")
    assert err(r).endswith("unknown job id")
    flux("cancel", pending)
    r = flux.fails("job", "raise", pending)
    assert err(r).endswith("job is inactive")
    assert flux.eventlog(pending).count("exception") == 1


def test_raise_nonfatal_and_fatal(flux):
    # as in Flux 0.88
    a = flux.submit("-N1", "sleep", "inf")
    b = flux.submit("-N1", "-S", "exec.test.run_duration=0s", "sleep", "inf")
    flux("job", "raise", "--type=test", "--severity=1", a, "nonfatal", "test")
    assert lines(flux.out("job", "eventlog", a))[-1] == \
        f'{ts(T0)} exception type="test" severity=1 note="nonfatal test" userid={UID}'
    assert flux.state(a) == "RUN"
    flux("job", "raise", "-t", "mytype", b, "--", "fatal", "exception", "note", "words")
    assert lines(flux.out("job", "eventlog", b))[6:] == [
        f'{ts(T0)} exception type="mytype" severity=0 note="fatal exception note words" userid={UID}',
        f"{ts(T0)} finish status=15",
        f'{ts(T0)} release ranks="all" final=true',
        f"{ts(T0)} free",
        f"{ts(T0)} clean",
    ]
    out = flux.out("jobs", "-a", "-no", "{state} {result} {returncode} {exception.type} {exception.severity} "
                   "{exception.note}", b)
    assert out.strip() == "INACTIVE FAILED -15 mytype 0 fatal exception note words"
    flux("cancel", a)
    # the most severe exception is the one reported
    assert flux.out("jobs", "-a", "-no", "{result} {exception.type} {exception.severity}", a).strip() == \
        "CANCELED cancel 0"


def test_nonfatal_exception_does_not_change_the_result(flux):
    # success = finish status 0 and no severity-0 exception
    jobid = flux.submit("-n1", "-t", "1m", "--setattr=exec.test.run_duration=5s", "true")
    flux("job", "raise", "-s", "3", "-t", "warn", jobid, "careful")
    flux.advance("5s")
    assert flux.out("jobs", "-a", "-no", "{result} {returncode} {exception.occurred} {exception.type} "
                    "{exception.severity} {exception.note}", jobid).strip() == "COMPLETED 0 True warn 3 careful"
    held = flux.submit("--urgency=hold", "sleep", "inf")
    flux("job", "raise", "-t", "oops", held)
    assert flux.eventlog(held)[-2:] == ["exception", "clean"]
    # no wait status and FAILED: returncode 1 (-128 is for CANCELED), as Flux
    # 0.88's JobInfo.returncode gives, and as its `jobs -o endreason` shows
    # "Exit 1" for a job failed at restart without ever finishing
    assert flux.out("jobs", "-a", "-no", "{result} {returncode} {exception.type}", held).strip() == \
        "FAILED 1 oops"


def test_raise_message_option(flux):
    jobid = flux.submit("-N1", "sleep", "inf")
    flux("job", "raise", "--type=test", "--severity=1", "--message=nonfatal test", jobid)
    assert lines(flux.out("job", "eventlog", jobid))[-1] == \
        f'{ts(T0)} exception type="test" severity=1 note="nonfatal test" userid={UID}'


def test_raise_words_after_the_id_are_the_note(flux):
    jobid = flux.submit("-N1", "sleep", "inf")
    flux("job", "raise", jobid, "-t", "")
    assert lines(flux.out("job", "eventlog", jobid))[6] == \
        f'{ts(T0)} exception type="cancel" severity=0 note="-t " userid={UID}'


# ---------------------------------------------------------------------- guests


def test_guest_access_rules(flux):
    mine = flux.submit("--urgency=hold", "sleep", "inf")
    theirs = flux.submit("--urgency=hold", "sleep", "inf", env=GUEST)
    assert ctx(flux, theirs, "submit")["userid"] == 1234
    r = flux.fails("cancel", mine, env=GUEST)
    assert err(r) == f"flux-lite cancel: ERROR: {mine}: guests can only raise exceptions on their own jobs"
    r = flux.fails("job", "raise", mine, env=GUEST)
    assert err(r).endswith("guests can only raise exceptions on their own jobs")
    r = flux.fails("job", "urgency", mine, "10", env=GUEST)
    assert err(r).endswith("guests can only reprioritize their own jobs")
    r = flux.fails("job", "urgency", theirs, "17", env=GUEST)
    assert err(r).endswith("guests can only adjust urgency <= default")
    r = flux.fails("submit", "--urgency=17", "true", env=GUEST)
    assert err(r).endswith("only the instance owner can submit with urgency >16")
    assert flux.eventlog(mine) == ["submit", "validate", "depend", "priority"]
    # a guest sees and manages its own jobs only
    assert flux.out("jobs", "-no", "{id.f58}", env=GUEST).split() == [theirs]
    assert flux.out("jobs", "-no", "{id.f58}").split() == [mine]
    assert sorted(flux.out("jobs", "-A", "-no", "{id.f58}").split()) == sorted([mine, theirs])
    assert flux.out("jobs", "-A", "-no", "{userid}", theirs).strip() == "1234"
    flux("job", "urgency", theirs, "10", env=GUEST)
    flux("cancel", theirs, env=GUEST)
    assert ctx(flux, theirs, "exception")["userid"] == 1234
    assert ctx(flux, theirs, "urgency") == {"userid": 1234, "urgency": 10}
    # the owner may act on anyone's job
    other = flux.submit("--urgency=hold", "true", env=GUEST)
    flux("cancel", other)
    assert ctx(flux, other, "exception")["userid"] == UID
    r = flux("cancel", "--all", env=GUEST)
    assert err(r) == "flux-lite cancel: Matched 0 jobs"
    assert flux.state(mine) == "SCHED"
    # cancel --all targets the caller's own jobs, even for the owner; -u selects others
    last = flux.submit("--urgency=hold", "true", env=GUEST)
    r = flux.fails("cancel", "--user=all", env=GUEST)
    assert err(r).endswith("guests can only raise exceptions on their own jobs")
    assert err(flux("cancel", "--all")) == "flux-lite cancel: Canceled 1 job (0 errors)"
    assert flux.state(mine) == "INACTIVE" and flux.state(last) == "SCHED"
    assert err(flux("cancel", "--user=1234")) == "flux-lite cancel: Canceled 1 job (0 errors)"
    assert flux.state(last) == "INACTIVE"


# ---------------------------------------------------------------------- job id

MAX = "18446744073709551615"


@pytest.mark.parametrize("text", [MAX, "0xffffffffffffffff", "job.ffff.ffff.ffff.ffff", "ffff.ffff.ffff.ffff",
                                  "natural-analyze-verbal--natural-analyze-verbal", "fjpXCZedGfVQ",
                                  "ƒjpXCZedGfVQ"])
def test_job_id_max_vectors(flux, text):
    assert flux.out("job", "id", text) == MAX + "\n"


@pytest.mark.parametrize("text", ["0", "0x0", "job.0000.0000.0000.0000", "0000.0000.0000.0000",
                                  "academy-academy-academy--academy-academy-academy", "f1", "ƒ1"])
def test_job_id_min_vectors(flux, text):
    assert flux.out("job", "id", text) == "0\n"


@pytest.mark.parametrize("to,mx,mn", [
    ("dec", MAX, "0"),
    ("words", "natural-analyze-verbal--natural-analyze-verbal",
     "academy-academy-academy--academy-academy-academy"),
    ("kvs", "job.ffff.ffff.ffff.ffff", "job.0000.0000.0000.0000"),
    ("hex", "0xffffffffffffffff", "0x0"),
    ("dothex", "ffff.ffff.ffff.ffff", "0000.0000.0000.0000"),
    ("f58", "fjpXCZedGfVQ", "f1"),
    ("F58", "fjpXCZedGfVQ", "f1"),  # encoding names are case-insensitive
    ("f58plain", "fjpXCZedGfVQ", "f1"),
])
def test_job_id_encodings(flux, to, mx, mn):
    assert flux.out("job", "id", f"--to={to}", MAX, "0") == f"{mx}\n{mn}\n"


@pytest.mark.parametrize("bad", ["badstring", "job.0000.0000", "job.0000.0000.0000.000P", "42plusbad", "meep",
                                 "18446744073709551616", "bad-words"])
def test_job_id_rejects(flux, bad):
    flux.fails("job", "id", bad)


def test_job_id_stdin_and_misc(flux):
    assert flux.out("job", "id", "42") == "42\n"
    assert flux.out("job", "id", input="42\n") == "42\n"
    assert flux.out("job", "id", input="42 \n 42\n") == "42\n42\n"
    flux.fails("job", "id", input="")
    r = flux("job", "id", "--to=invalid", "42", check=False)
    assert r.exit_code != 0
    # as in Flux 0.88
    assert flux.out("job", "id", "--to=dec", "ƒYpmarK") == "20887633920\n"
    assert flux.out("job", "id", "--to=hex", "ƒYpmarK") == "0x4dd000000\n"
    assert flux.out("job", "id", "--to=f58plain", "ƒYpmarK") == "fYpmarK\n"
    assert flux.out("job", "namespace", "1") == "job-1\n"
    # ids of real jobs round-trip through every encoding
    jobid = flux.submit("sleep", "inf")
    dec = flux.out("job", "id", jobid).strip()
    for enc in ("hex", "dothex", "kvs", "words", "f58", "f58plain"):
        assert flux.out("job", "id", flux.out("job", "id", f"--to={enc}", jobid).strip()).strip() == dec


def test_job_id_f58_prefix_follows_locale(flux):
    utf8 = {"FLUX_F58_FORCE_ASCII": None, "LANG": "C.UTF-8", "LC_ALL": None, "LC_CTYPE": None}
    assert flux.out("job", "id", "--to=f58", "1", env=utf8) == "ƒ2\n"
    assert flux.out("job", "id", "--to=f58plain", "1", env=utf8) == "f2\n"
    assert flux.out("job", "id", "--to=f58", "1") == "f2\n"
    c = {"FLUX_F58_FORCE_ASCII": None, "LANG": "C", "LC_ALL": "C", "LC_CTYPE": None}
    assert flux.out("job", "id", "--to=f58", "1", env=c) == "f2\n"


def test_job_namespace_negative_exits_1(flux):
    flux.fails("job", "namespace", "--", "-1", code=1)


# -------------------------------------------------------------------- submit


def test_submit_prints_f58_ids_that_increase(flux):
    a = flux.submit("sleep", "inf")
    b = flux.submit("sleep", "inf")
    assert a.startswith("f") and b.startswith("f")
    assert int(flux.out("job", "id", b)) == int(flux.out("job", "id", a)) + 1
    flux.advance("1s")
    c = flux.submit("sleep", "inf")
    # FLUID: the timestamp field (ms since the instance epoch) moved by 1000
    assert int(flux.out("job", "id", c)) >> 24 == (int(flux.out("job", "id", a)) >> 24) + 1000


def test_submit_dry_run_creates_nothing(flux, flux_factory):
    fresh = flux_factory("--test-size=4", "--test-cores=2", name="fresh")
    r = flux("submit", "--dry-run", "-N1", "-t", "5m", "hostname")
    js = json.loads(r.stdout)
    assert js["tasks"][0]["command"] == ["hostname"]
    assert js["attributes"]["system"]["duration"] == 300.0
    assert js["version"] == 1
    assert flux.out("jobs", "-a", "-n") == ""
    assert "job." not in flux.out("kvs", "ls").split()
    # -t is minutes without a unit (as flux submit), else an FSD
    for arg, seconds in (("2", 120.0), ("90s", 90.0), ("1.5h", 5400.0), ("0.5", 30.0)):
        js = json.loads(flux.out("submit", "--dry-run", "-t", arg, "sleep", "inf"))
        assert js["attributes"]["system"]["duration"] == seconds, arg
    # a bad -t is a value Flux checks after parsing: exit 1, its words
    r = flux.fails("submit", "--dry-run", "-t", "soon", "true", code=1)
    assert r.stderr == "flux-lite submit: ERROR: invalid Flux standard duration\n"
    # and does not use up a job id
    assert flux.submit("sleep", "inf") == fresh.submit("sleep", "inf")


def test_submit_cc(flux):
    out = flux.out("submit", "--cc=1-3", "-N1", "-t", "10m", "--setattr=exec.test.run_duration=10m",
                   "echo", "{cc}")
    ids = out.split()
    assert len(ids) == 3
    commands = [json.loads(flux.out("job", "info", j, "jobspec"))["tasks"][0]["command"] for j in ids]
    assert commands == [["echo", "1"], ["echo", "2"], ["echo", "3"]]
    assert [flux.state(j) for j in ids] == ["RUN"] * 3
    assert sorted(flux.out("jobs", "-no", "{name} {nodelist}").splitlines()) == ["echo node0", "echo node1",
                                                                                   "echo node2"]


def test_submit_wait_event(flux):
    r = flux("submit", "--wait-event=start", "-N1", "-t", "1m", "--setattr=exec.test.run_duration=5s", "true")
    jobid = r.stdout.strip()
    assert flux.eventlog(jobid)[-1] == "start"
    assert flux.now() == T0
    r = flux("submit", "--wait-event=clean", "-N1", "-t", "1m", "--setattr=exec.test.run_duration=5s", "true")
    assert flux.state(r.stdout.strip()) == "INACTIVE"
    assert flux.now() == T0 + 5
    r = flux.fails("submit", "--wait-event=alloc", "--urgency=hold", "sleep", "inf")


def test_submit_flags_in_submit_context(flux):
    jobid = flux.submit("--flags=waitable", "sleep", "inf")
    assert ctx(flux, jobid, "submit")["flags"] == 4
    jobid = flux.submit("--flags=debug", "-n1", "-t", "1m", "--setattr=exec.test.run_duration=1s", "true")
    assert ctx(flux, jobid, "submit")["flags"] == 2
    assert "debug.alloc-request" in flux.eventlog(jobid)
    assert flux("submit", "--flags=bogus", "true", check=False).exit_code != 0
    assert len(flux.out("jobs", "-a", "-n").splitlines()) == 2


def test_debug_flag_events(flux):
    jobid = flux.submit("--flags=debug", "-n1", "-t", "1m", "--setattr=exec.test.run_duration=1s", "true")
    flux.advance("1s")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "debug.alloc-request", "alloc",
                                    "debug.start-request", "start", "finish", "release", "free", "clean"]


JOBSPEC_YAML = """\
version: 1
resources:
  - type: slot
    count: 1
    label: task
    with:
      - type: core
        count: 1
tasks:
  - command: ["sleep", "10"]
    slot: task
    count:
      per_slot: 1
attributes:
  system:
    duration: 60
    exec:
      test:
        run_duration: 10s
"""


def test_job_submit_yaml_file(flux, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOBSPEC_YAML)
    r = flux("job", "submit", str(path))
    jobid = r.stdout.strip()
    assert r.stdout == jobid + "\n" and r.stderr == ""
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "start"]
    assert ctx(flux, jobid, "alloc") == {"annotations": {"sched": {"resource_summary": "rank0/core0"}}}
    js = json.loads(flux.out("job", "info", jobid, "jobspec"))
    assert js["tasks"][0]["command"] == ["sleep", "10"]
    assert js["attributes"]["system"]["duration"] == 60
    assert flux.out("jobs", "-no", "{name} {ntasks} {duration}", jobid).strip() == "sleep 1 60.0"
    flux.advance("10s")
    assert flux.out("jobs", "-a", "-no", "{result}", jobid).strip() == "COMPLETED"
    # from stdin, with an urgency
    r = flux("job", "submit", "--urgency=hold", input=JOBSPEC_YAML)
    assert ctx(flux, r.stdout.strip(), "submit")["urgency"] == 0


@pytest.mark.parametrize("text", [
    "version: 1\nresources: [\n",                       # YAML syntax error
    '{"version": 1}',                                  # missing keys
    JOBSPEC_YAML.replace("version: 1", "version: 2"),  # wrong version
    "- just\n- a list\n",
])
def test_job_submit_malformed_is_refused_cleanly(flux, tmp_path, text):
    before = flux.out("kvs", "ls", "-R")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    r = flux.fails("job", "submit", str(path))
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("flux-lite job: ERROR: ")
    assert flux.out("kvs", "ls", "-R") == before
    assert flux.out("jobs", "-a", "-n") == ""
    flux.fails("job", "submit", str(tmp_path / "missing.yaml"))


# ---------------------------------------------------------------- determinism


def _workload(f):
    ids = [f.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")]
    ids += f.out("submit", "--cc=0-2", "-N1", "-t", "1m", "sleep", "inf").split()
    f.advance("30s")
    ids.append(f.submit("--urgency=hold", "sleep", "inf"))
    ids.append(f.submit("-n2", "-t", "10m", "--setattr=exec.test.run_duration=2m", "true"))
    f("cancel", ids[2])
    f("job", "urgency", ids[-2], "default")
    f.advance("3m")
    f("run", "-N2", "-t", "1m", "--setattr=exec.test.run_duration=10s", "true")
    return ids


def test_same_commands_same_ids_and_eventlogs(flux_factory):
    a = flux_factory("--test-size=4", "--test-cores=2", name="a")
    b = flux_factory("--test-size=4", "--test-cores=2", name="b")
    ids_a, ids_b = _workload(a), _workload(b)
    assert ids_a == ids_b
    for jobid in ids_a:
        assert a.out("job", "eventlog", "-f", "json", jobid) == b.out("job", "eventlog", "-f", "json", jobid)
        assert a.out("job", "info", jobid, "eventlog") == b.out("job", "info", jobid, "eventlog")
    assert a.out("jobs", "-a") == b.out("jobs", "-a")
    assert a.out("resource", "list") == b.out("resource", "list")
    assert a.now() == b.now()


def test_wait_event_sees_nothing_after_clean(flux):
    # job-info's watch ends at clean: an event appended after it is never
    # received, and a context test that fails on the whole eventlog fails at once
    jobid = flux.submit("true")
    flux.advance("1s")
    kvsdir = flux.out("job", "id", "--to=kvs", jobid).strip()
    flux("kvs", "eventlog", "append", f"{kvsdir}.eventlog", "foobar")
    assert err(flux.fails("job", "wait-event", jobid, "foobar")).endswith("event 'foobar' never received")
    assert err(flux.fails("job", "wait-event", "--match-context=foo=bar", jobid, "submit")).endswith(
        "event 'submit' never received")
    r = flux.fails("job", "wait-event", "--waitcreate", "-p", "guest.invalid", jobid, "foobar")
    assert err(r).endswith("eventlog path guest.invalid not found")
