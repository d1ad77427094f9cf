"""job last / job wait / job purge / job stats, jobs --stats and its filters,
and the test-exec attributes that make jobs fail: Flux 0.88's words and exit
codes, as Flux 0.88 gives them."""

import json

import pytest

from flux_lite.job_manager import history

RUN = "--setattr=exec.test.run_duration="
JOB = "flux-lite job: ERROR: "  # flux-job's prefix, as flux-lite spells it


def lines(text):
    return text.splitlines()


# -- job last ----------------------------------------------------------------------

def test_job_last_empty_history(flux):
    r = flux.fails("job", "last")
    assert r.stdout == ""
    assert r.stderr == JOB + "job history is empty\n"
    assert flux.fails("job", "last", "0").stderr == JOB + "job history is empty\n"


def test_job_last_counts_and_slices(flux):
    a = flux.submit(RUN + "1ms", "sleep", "inf")
    b = flux.submit(RUN + "1ms", "sleep", "inf")
    c, d, e = lines(flux.out("submit", "--cc=1-3", RUN + "1ms", "sleep", "inf"))
    assert flux.out("job", "last") == f"{e}\n"
    assert lines(flux.out("job", "last", "3")) == [e, d, c]
    assert lines(flux.out("job", "last", "100")) == [e, d, c, b, a]
    assert lines(flux.out("job", "last", "[0:2]")) == [e, d]
    assert lines(flux.out("job", "last", "[-1:]")) == [a]
    assert lines(flux.out("job", "last", "[:]")) == [e, d, c, b, a]
    assert lines(flux.out("job", "last", "[::2]")) == [e, c, a]
    assert lines(flux.out("job", "last", "[::-1]")) == [a, b, c, d, e]


@pytest.mark.parametrize("arg", ["[1]", "[1:2", "[a:]", "[::0]"])
def test_job_last_bad_slice(flux, arg):
    flux.submit(RUN + "1ms", "sleep", "inf")
    r = flux.fails("job", "last", arg)
    assert r.stderr == JOB + "could not parse python-style slice expression\n"


@pytest.mark.parametrize("args", [["foo"], ["1", "2"], ["3x"]])
def test_job_last_usage(flux, args):
    r = flux.fails("job", "last", *args)
    assert r.stdout == ""
    assert lines(r.stderr) == ["Usage: flux-lite job last SLICE", "List my most recently submitted job id(s)",
                               "  -h, --help             Display this message."]


def test_job_last_is_per_user_and_survives_rebuild(flux):
    mine = flux.submit(RUN + "1ms", "sleep", "inf")
    other = flux.submit(RUN + "1ms", "true", env={"FLUX_HANDLE_USERID": "4242"})
    assert flux.out("job", "last") == f"{mine}\n"
    assert flux.out("job", "last", env={"FLUX_HANDLE_USERID": "4242"}) == f"{other}\n"
    # drop the derived index: it is rebuilt from the eventlogs
    import sqlite3

    conn = sqlite3.connect(f"{flux.state_dir}/kvs.sqlite")
    conn.execute("DROP TABLE jobs")
    conn.commit()
    conn.close()
    assert flux.out("job", "last", "10") == f"{mine}\n"


def test_slice_follows_flux_slicing():
    from hypothesis import given
    from hypothesis import strategies as st

    ints = st.one_of(st.none(), st.integers(-12, 12))

    def reference(start, stop, step, length):
        # flux-core's slice cursor, step by step: like Python's slicing, except
        # that an index still out of range after adding length is not clamped
        step = 1 if step is None else step
        first = 0 if start is None else start
        end = length if stop is None else stop
        first += length if first < 0 else 0
        end += length if end < 0 else 0
        if step < 0:
            first = length - 1 if start is None else first
            end = -1 if stop is None else end

        def overrun(i):
            return (i >= end or i >= length) if step > 0 else (i <= end or i < 0)

        out, i = [], first
        while not overrun(i):
            if 0 <= i < length:
                out.append(i)
            i += step
        return out

    @given(ints, ints, ints.filter(lambda s: s != 0), st.integers(0, 9))
    def check(start, stop, step, length):
        text = "[{}:{}:{}]".format(*("" if v is None else v for v in (start, stop, step)))
        got = history.slice_indices(history.parse_slice(text), length)
        assert got == reference(start, stop, step, length)
        if start is None or -length <= start < length:
            assert got == list(range(length))[start:stop:step]

    check()


def test_slice_parser_garbage_is_one_error():
    from hypothesis import given
    from hypothesis import strategies as st

    from flux_lite.errors import FluxLiteError

    @given(st.text(alphabet="[]:-+0123456789 a", max_size=12))
    def check(text):
        try:
            spec = history.parse_slice(text)
        except FluxLiteError as exc:
            assert str(exc) == "could not parse python-style slice expression"
            return
        history.slice_indices(spec, 5)

    check()


# -- job wait ----------------------------------------------------------------------

def test_job_wait_lifecycle(flux):
    r = flux.fails("job", "wait", code=2)
    assert r.stderr == JOB + "there are no more waitable jobs\n"
    ok = flux.submit("--flags=waitable", RUN + "0.2s", "sleep", "inf")
    r = flux("job", "wait", ok)
    assert (r.stdout, r.stderr) == ("", "")
    r = flux.fails("job", "wait", ok, code=2)
    assert r.stderr == JOB + "invalid job id, or job may be inactive and not waitable\n"
    bad = flux.submit("--flags=waitable", "--setattr=exec.test.wait_status=256", RUN + "0.2s", "false")
    r = flux.fails("job", "wait", bad)
    assert r.stderr == JOB + "task(s) exited with exit code 1\n"
    any_ = flux.submit("--flags=waitable", RUN + "0.2s", "sleep", "inf")
    assert flux.out("job", "wait") == f"{any_}\n"
    assert flux.fails("job", "wait", code=2).stderr == JOB + "there are no more waitable jobs\n"


def test_job_wait_all_reports_failures_in_end_order(flux):
    timeout = flux.submit("--flags=waitable", "-t", "1s", RUN + "60s", "sleep", "inf")
    flux.submit("--flags=waitable", RUN + "0.1s", "sleep", "inf")
    held = flux.submit("--flags=waitable", "--urgency=hold", RUN + "0.1s", "sleep", "inf")
    flux("cancel", held)
    failed = flux.submit("--flags=waitable", "--setattr=exec.test.wait_status=256", RUN + "0.1s", "false")
    r = flux.fails("job", "wait", "--all")
    assert r.stdout == ""
    assert lines(r.stderr) == [
        f"{held}: Fatal exception type=cancel ",
        f"{failed}: task(s) exited with exit code 1",
        f"{timeout}: Fatal exception type=timeout resource allocation expired",
    ]
    r = flux("job", "wait", "--all")
    assert (r.stdout, r.stderr) == ("", "")
    a = flux.submit("--flags=waitable", RUN + "0.1s", "sleep", "inf")
    b = flux.submit("--flags=waitable", RUN + "0.1s", "sleep", "inf")
    r = flux("job", "wait", "--all", "-v")
    assert lines(r.stderr) == [f"{a}: job completed successfully", f"{b}: job completed successfully"]


def test_job_wait_refusals(flux):
    plain = flux.submit(RUN + "0.1s", "sleep", "inf")
    r = flux.fails("job", "wait", plain, code=2)
    assert r.stderr == JOB + "job was not submitted with FLUX_JOB_WAITABLE\n"
    r = flux.fails("job", "wait", "f1234", code=2)
    assert r.stderr == JOB + "invalid job id, or job may be inactive and not waitable\n"
    r = flux.fails("job", "wait", "bad")
    assert r.stderr == JOB + 'error parsing jobid: "bad"\n'
    r = flux.fails("job", "wait", "--all", plain)
    assert r.stderr == JOB + "jobid not supported with --all: No such file or directory\n"


def test_job_wait_after_clean_and_verbose_single(flux):
    jobid = flux.submit("--flags=waitable", RUN + "0.1s", "sleep", "inf")
    flux("job", "wait-event", "-t", "10", jobid, "clean")
    r = flux("job", "wait", "-v", jobid)
    assert (r.stdout, r.stderr) == ("", "")


def test_job_wait_signals_and_exec_exceptions(flux):
    killed = flux.submit("--flags=waitable", "--setattr=exec.test.wait_status=9", RUN + "0.1s", "sh")
    assert flux.fails("job", "wait", killed).stderr == JOB + "job shell Killed\n"
    mock = flux.submit("--flags=waitable", "--setattr=exec.test.mock_exception=run", RUN + "60s", "true")
    assert flux.fails("job", "wait", mock).stderr == \
        JOB + "Fatal exception type=exec mock run exception generated\n"


def test_waitable_survives_rebuild_while_active(flux):
    jobid = flux.submit("--flags=waitable", RUN + "10s", "sleep", "inf")
    import sqlite3

    conn = sqlite3.connect(f"{flux.state_dir}/kvs.sqlite")
    conn.execute("PRAGMA user_version = 0")  # an older layout: everything derived is rebuilt
    conn.commit()
    conn.close()
    assert flux.out("job", "wait") == f"{jobid}\n"


def test_submit_flags_bogus(flux):
    # Flux 0.88: a value checked after parsing, exit 1
    r = flux.fails("submit", "--flags=bogus", RUN + "0.1s", "true", code=1)
    assert r.stderr == "flux-lite submit: ERROR: --flags: Unknown flag bogus\n"


# -- test exec attributes ------------------------------------------------------------

def test_wait_status_and_mock_exception_events(flux):
    jobid = flux.submit("--setattr=exec.test.wait_status=256", RUN + "0.1s", "false")
    flux.advance("1s")
    events = flux.events(jobid)
    assert [e for e in events if e["name"] == "finish"][0]["context"] == {"status": 256}
    mock = flux.submit("--setattr=exec.test.mock_exception=run", RUN + "60s", "true")
    names = flux.eventlog(mock)
    assert names[names.index("start"):] == ["start", "exception", "finish", "release", "free", "clean"]
    exc = [e for e in flux.events(mock) if e["name"] == "exception"][0]["context"]
    assert exc == {"type": "exec", "severity": 0, "userid": exc["userid"],
                   "note": "mock run exception generated"}
    assert [e for e in flux.events(mock) if e["name"] == "finish"][0]["context"] == {"status": 15}
    init = flux.submit("--setattr=exec.test.mock_exception=init", RUN + "60s", "true")
    assert "start" not in flux.eventlog(init)
    assert flux.out("jobs", "-no", "{result} {exception.note}", init) == \
        "FAILED mock initialization exception generated\n"


# -- jobs --stats, filters, formats ------------------------------------------------------

def test_jobs_stats_empty(flux):
    r = flux.fails("jobs", "--stats-only")
    assert r.stdout == "0 running, 0 completed, 0 failed, 0 pending, 0 inactive purged\n"
    assert flux.out("jobs", "--stats") == (
        "0 running, 0 completed, 0 failed, 0 pending, 0 inactive purged\n"
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO\n")


def test_jobs_stats_counts(flux):
    flux.submit(RUN + "1ms", "sleep", "inf")
    flux.submit("--setattr=exec.test.wait_status=256", RUN + "1ms", "false")
    flux.submit("-t", "1s", RUN + "60s", "sleep", "inf")
    gone = flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    flux("cancel", gone)
    flux.advance("2s")
    held = flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    run = flux.submit(RUN + "300s", "sleep", "inf")
    line = "1 running, 1 completed, 3 failed, 1 pending, 0 inactive purged"
    r = flux("jobs", "--stats")
    assert lines(r.stdout)[0] == line
    assert [ln.split()[0] for ln in lines(r.stdout)[2:]] == [held, run]
    assert flux.out("jobs", "--stats-only") == line + "\n"
    assert flux.out("jobs", "--stats-only", "-a") == line + "\n"
    doc = json.loads(flux.out("job", "stats"))
    assert doc == {"job_states": {"depend": 0, "priority": 0, "sched": 1, "run": 1, "cleanup": 0,
                                  "inactive": 4, "total": 6},
                   "successful": 1, "failed": 1, "canceled": 1, "timeout": 1, "inactive_purged": 0,
                   "queues": []}
    flux("cancel", held, run)
    r = flux.fails("jobs", "--stats-only")
    assert r.stdout == "0 running, 1 completed, 5 failed, 0 pending, 0 inactive purged\n"
    r = flux.fails("jobs", "--json", "--stats")
    assert r.stderr.endswith("--json incompatible with --stats or --stats-only\n")


def test_jobs_truncation_warning_with_stats(flux):
    for _ in range(3):
        flux.submit(RUN + "1ms", "sleep", "inf")
    r = flux("jobs", "--stats", "-a", "-c", "2")
    assert len(lines(r.stdout)) == 4
    assert r.stderr == ("warning: output truncated at 2 jobs.\n"
                        "Use --count to increase returned results or use filters to alter results.\n")


def test_jobs_name_and_since(flux):
    done = flux.submit("--job-name=alpha", RUN + "1ms", "sleep", "inf")
    flux.advance("1h")
    running = flux.submit("--job-name=alpha", RUN + "300s", "sleep", "inf")
    beta = flux.submit("--job-name=beta", "--urgency=hold", RUN + "1ms", "sleep", "inf")
    recent = flux.submit("--job-name=gamma", RUN + "1ms", "sleep", "inf")
    flux.advance("1s")
    assert flux.out("jobs", "-no", "{id.f58}", "--name=alpha") == f"{running}\n"
    assert lines(flux.out("jobs", "-a", "-no", "{id.f58}", "--name=alpha")) == [running, done]
    assert flux.out("jobs", "--name=nomatch") == \
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO\n"
    # --since implies -a; inactive jobs older than WHEN are left out
    assert lines(flux.out("jobs", "-no", "{id.f58}", "--since=-30m")) == [beta, running, recent]
    assert lines(flux.out("jobs", "-no", "{id.f58}", "--since=-2h")) == [beta, running, recent, done]
    assert lines(flux.out("jobs", "-no", "{id.f58}", "--since=-2h", "-f", "completed")) == [recent, done]
    r = flux.fails("jobs", "--since=+1h")
    assert r.stderr == "flux-lite jobs: ERROR: --since=+1h appears to be in the future\n"
    r = flux.fails("jobs", "--since=bogus")
    assert r.stderr == "flux-lite jobs: ERROR: could not convert string to float: 'bogus'\n"
    now = flux.now()
    assert lines(flux.out("jobs", "-no", "{id.f58}", f"--since={now - 60}")) == [beta, running, recent]
    import datetime

    stamp = datetime.datetime.fromtimestamp(now - 120).strftime("%Y-%m-%d %H:%M")
    assert lines(flux.out("jobs", "-no", "{id.f58}", f"--since={stamp}")) == [beta, running, recent]


def test_jobs_user_and_filter_errors(flux):
    flux.submit(RUN + "300s", "sleep", "inf")
    assert flux.fails("jobs", "-u", "nosuchuser").stderr == \
        "flux-lite jobs: ERROR: Invalid user nosuchuser specified\n"
    assert flux.fails("jobs", "-f", "bogus").stderr == \
        "flux-lite jobs: ERROR: Invalid filter specified: bogus\n"
    assert flux.out("jobs", "-u", "12345") == \
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO\n"
    assert len(lines(flux.out("jobs", "-u", "all"))) == 2


def test_endreason_and_cute_formats(flux):
    flux.submit(RUN + "1ms", "sleep", "inf")
    flux.submit("--setattr=exec.test.wait_status=256", RUN + "1ms", "false")
    flux.submit("--setattr=exec.test.wait_status=768", RUN + "1ms", "sh")
    flux.submit("--setattr=exec.test.wait_status=9", RUN + "1ms", "sh")
    flux.submit("-t", "1s", RUN + "60s", "sleep", "inf")
    plain = flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    noted = flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    flux("cancel", plain)
    flux("cancel", "-m", "operator says no", noted)
    flux.submit("--setattr=exec.test.mock_exception=run", RUN + "60s", "true")
    flux.submit("-N5", RUN + "1s", "sleep", "inf")
    flux.advance("2s")
    out = lines(flux.out("jobs", "-a", "-no", "{status_abbrev} {inactive_reason}"))
    assert sorted(out) == sorted([
        "F Exception: type=alloc note=unsatisfiable request: need 5 exclusive node(s), only 4 eligible",
        "F Exit -15",
        "TO Timeout",
        "CA Canceled: operator says no",
        "CA Canceled",
        "F Exit -9",
        "F Exit 3",
        "F Exit 1",
        "CD Exit 0",
    ])
    header = lines(flux.out("jobs", "-a", "-o", "endreason"))[0]
    assert header == "       JOBID USER     NAME       ST   T_INACTIVE INACTIVE-REASON"
    flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    r = flux("jobs", "-a", "-c", "2", "-o", "cute")
    assert lines(r.stdout)[0] == "       JOBID USER     NAME       STATUS NTASKS NNODES     TIME INFO"
    assert "\U0001f4c5" in lines(r.stdout)[1]
    assert flux.out("jobs", "-no", "{state}:{inactive_reason}") == "SCHED:\n"


# -- job purge -----------------------------------------------------------------------

def _finish(flux, n):
    ids = lines(flux.out("submit", f"--cc=1-{n}" if n > 1 else "--cc=1", RUN + "1ms", "sleep", "inf"))
    flux.advance("1s")
    return ids


def test_purge_by_count_and_age(flux):
    ids = _finish(flux, 12)
    assert flux.out("job", "purge") == "use --force to purge 0 of 12 inactive jobs\n"
    assert flux.out("job", "purge", "--num-limit=10") == "use --force to purge 2 of 12 inactive jobs\n"
    assert flux.out("job", "purge", "--force", "--num-limit=10") == "purged 2 inactive jobs, 10 remaining\n"
    assert flux.out("jobs", "--stats-only", check=False) == \
        "0 running, 10 completed, 0 failed, 0 pending, 2 inactive purged\n"
    assert len(lines(flux.out("jobs", "-an"))) == 10
    # the oldest went: from the listing, the history and the KVS
    assert lines(flux.out("job", "last", "100")) == ids[::-1][:10]
    r = flux.fails("job", "eventlog", ids[0])
    assert r.stderr.endswith(f"job {ids[0]} not found\n")
    assert flux.fails("jobs", ids[0]).stderr.endswith(f"JobID {ids[0]} unknown\n")
    assert flux.out("job", "purge", "--force", "--num-limit=10") == "purged 0 inactive jobs, 10 remaining\n"
    assert flux.out("job", "purge", "--age-limit=1h") == "use --force to purge 0 of 10 inactive jobs\n"
    assert flux.out("job", "purge", "--age-limit=1ms") == "use --force to purge 10 of 10 inactive jobs\n"
    assert flux.out("job", "purge", "--force", "--age-limit=1ms", "--num-limit=5") == \
        "purged 10 inactive jobs, 0 remaining\n"
    assert flux.out("jobs", "-an") == ""
    assert flux.out("job", "purge", "--force", "--num-limit=-1") == "purged 0 inactive jobs, 0 remaining\n"
    assert flux.out("job", "purge", "--force", "--num-limit=0") == "purged 0 inactive jobs, 0 remaining\n"
    kvs_jobs = flux.out("kvs", "ls", "job", check=False)
    assert kvs_jobs.strip() == ""


def test_purge_by_id(flux):
    active = flux.submit(RUN + "300s", "sleep", "inf")
    done = flux.submit(RUN + "1ms", "sleep", "inf")
    flux.advance("1s")
    assert lines(flux.out("job", "last", "[:3]")) == [done, active]
    r = flux.fails("job", "purge", active)
    assert r.stderr == JOB + "purge: cannot purge active job\n"
    assert flux.out("job", "purge", done) == "use --force to purge 1 of 1 inactive jobs\n"
    assert flux.out("job", "purge", "--force", done) == "purged 1 inactive jobs, 0 remaining\n"
    assert flux.fails("job", "purge", "--force", done).stderr == JOB + "purge: id not found\n"
    assert flux.fails("job", "purge", "--force", "f1234").stderr == JOB + "purge: id not found\n"
    assert lines(flux.out("job", "last", "[:3]")) == [active]
    assert flux.out("jobs", "--stats-only", "-a") == "1 running, 0 completed, 0 failed, 0 pending, 1 inactive purged\n"


def test_purge_option_errors(flux):
    r = flux.fails("job", "purge", "--force", "--age-limit=bad")
    assert r.stderr == "flux-lite job purge: purge: Invalid argument for option 'age-limit': 'bad'\n"
    r = flux.fails("job", "purge", "--force", "--batch=0")
    assert r.stderr == JOB + "purge: batch must be >= 1 and <= 100\n"
    r = flux.fails("job", "purge", "--force", "--batch=101")
    assert r.stderr == JOB + "purge: batch must be >= 1 and <= 100\n"
    r = flux.fails("job", "purge", "--num-limit=-2")
    assert r.stderr == JOB + "purge: if set, num limit must be >= 0\n"


def test_purge_is_owner_only(flux):
    _finish(flux, 1)
    r = flux.fails("job", "purge", "--force", "--num-limit=0", env={"FLUX_HANDLE_USERID": "4242"})
    assert r.stderr == JOB + "purge: Operation not permitted: purge is for the instance owner\n"


def test_purged_zombie_can_still_be_waited(flux):
    """Flux's job manager keeps a waitable job that nobody waited on (a zombie)
    after purging it: the wait still answers, once."""
    ok = flux.submit("--flags=waitable", RUN + "1ms", "sleep", "inf")
    bad = flux.submit("--flags=waitable", "--setattr=exec.test.wait_status=256", RUN + "1ms", "false")
    flux.advance("1s")
    assert flux.out("job", "purge", "--force", "--num-limit=0") == "purged 2 inactive jobs, 0 remaining\n"
    assert flux.out("jobs", "-an") == ""
    r = flux.fails("job", "wait", bad)
    assert r.stderr == JOB + "task(s) exited with exit code 1\n"
    assert flux.out("job", "wait") == f"{ok}\n"
    assert flux.fails("job", "wait", code=2).stderr == JOB + "there are no more waitable jobs\n"
    assert flux.fails("job", "wait", ok, code=2).stderr == \
        JOB + "invalid job id, or job may be inactive and not waitable\n"


def test_purged_zombies_in_end_order_with_live_ones(flux):
    first = flux.submit("--flags=waitable", RUN + "1ms", "sleep", "inf")
    flux.advance("1s")
    flux("job", "purge", "--force", first)
    second = flux.submit("--flags=waitable", RUN + "1ms", "false")
    flux.advance("1s")
    r = flux("job", "wait", "--all", "-v")
    assert lines(r.stderr) == [f"{first}: job completed successfully", f"{second}: job completed successfully"]


def test_config_purges_automatically(flux_factory):
    flux = flux_factory("--test-size=2", config="job-manager:\n  inactive-num-limit: 3\n")
    ids = _finish(flux, 5)
    assert lines(flux.out("jobs", "-a", "-no", "{id.f58}")) == ids[::-1][:3]
    assert flux.out("jobs", "--stats-only", check=False).endswith("2 inactive purged\n")
    assert "job-manager.debug[0]: purged 2 inactive jobs" in flux.dmesg()


def test_config_age_limit(flux_factory):
    flux = flux_factory("--test-size=2", config="job-manager:\n  inactive-age-limit: 1h\n")
    old = _finish(flux, 2)
    flux.advance("30m")
    new = _finish(flux, 1)
    assert len(lines(flux.out("jobs", "-an"))) == 3
    flux.advance("40m")
    assert lines(flux.out("jobs", "-a", "-no", "{id.f58}")) == new
    assert flux.fails("job", "info", old[0], "jobspec").exit_code == 1


@pytest.mark.parametrize("conf,message", [
    ("inactive-age-limit: bogus", "job-manager.inactive-age-limit: invalid FSD"),
    ("inactive-age-limit: 5", "job-manager.inactive-age-limit: invalid FSD"),
    ("inactive-num-limit: -1", "job-manager.inactive-num-limit: must be >= 0"),
    ("inactive-num-limit: many", "job-manager.max-inactive-*: Expected integer, got string"),
])
def test_config_purge_keys_checked(tmp_path, flux_factory, conf, message):
    from flux_lite import config

    with pytest.raises(config.ConfigError) as err:
        config.load_text(f"job-manager:\n  {conf}\n")
    assert str(err.value) == message


# -- job status ------------------------------------------------------------------------

def test_job_status(flux):
    ok = flux.submit(RUN + "0.2s", "sleep", "inf")
    bad = flux.submit("--setattr=exec.test.wait_status=256", RUN + "0.2s", "false")
    r = flux.fails("job", "status", ok, bad)
    assert (r.stdout, r.stderr) == ("", "")
    assert flux.fails("job", "status", "-v", bad).stderr == f"flux-lite job: {bad}: exited with exit code 1\n"
    doc = json.loads(flux.fails("job", "status", "--json", bad).stdout)
    assert list(doc) == ["id", "exception_occurred", "t_submit", "t_run", "t_cleanup", "waitstatus", "result"]
    assert (doc["exception_occurred"], doc["waitstatus"], doc["result"]) == (False, 256, 2)
    assert flux("job", "status", ok).exit_code == 0
    killed = flux.submit("--setattr=exec.test.wait_status=9", RUN + "0.2s", "sh")
    r = flux.fails("job", "status", "-v", killed, code=137)
    assert r.stderr == f"flux-lite job: {killed}: job shell died by signal 9\n"
    held = flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    flux("cancel", held)
    r = flux.fails("job", "status", "-vv", "--json", held)
    assert json.loads(r.stdout)["result"] == 4
    assert r.stderr == f"flux-lite job: {held}: exception type=cancel\n"
    assert flux.fails("job", "status", "-e", "5", held, code=5).exit_code == 5
    assert flux.fails("job", "status", "f1234").stderr == "flux-lite job: ERROR: f1234: No such job\n"
    r = flux.fails("job", "status", "-v", ok, bad)
    assert lines(r.stderr) == ["flux-lite job: fetching status for 2 jobs", "flux-lite job: all done.",
                               f"flux-lite job: {bad}: exited with exit code 1"]


def test_jansson_reals():
    from flux_lite.job_manager.attach import dumps_jansson

    assert dumps_jansson({"t": 1796102578.2409143, "n": 2, "z": 3.0}) == '{"t":1796102578.2409143,"n":2,"z":3.0}'


def test_since_parser_garbage_is_one_error():
    from hypothesis import given
    from hypothesis import strategies as st

    from flux_lite import job_list
    from flux_lite.errors import FluxLiteError

    now = 1796102581.0

    @given(st.text(max_size=20))
    def check(text):
        try:
            when = job_list.parse_since(text, now)
        except FluxLiteError as exc:
            assert str(exc).startswith("could not convert string to float") or \
                str(exc) == f"--since={text} appears to be in the future"
            return
        assert not when > now  # (nan passes, as float("nan") does in flux-jobs)

    check()


def test_named_format_get_config(flux):
    assert flux.out("jobs", "-o", "get-config=cute") == (
        "[formats.cute]\n"
        'description = "Cute flux-jobs format string (default with emojis)"\n'
        'format = "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_emoji:>5.5} '
        '{ntasks:>6} {nnodes:>6h} {contextual_time!F:>8h} {contextual_info}"\n')
    assert flux.out("jobs", "-o", "get-config=endreason") == (
        "[formats.endreason]\n"
        'description = "Show why each job ended"\n'
        'format = "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_abbrev:>2.2} '
        '{t_inactive!d:%b%d %R::>12h} {inactive_reason}"\n')
    assert flux.fails("jobs", "-o", "get-config=nope").stderr.endswith("--format: No such format nope\n")


def test_job_wait_stalled_under_virtual_clock(flux):
    """A waitable job with nothing left that could end it: one error, not a hang."""
    jobid = flux.submit("--flags=waitable", "sleep", "inf")  # no run duration, no time limit
    for args in (["job", "wait", jobid], ["job", "wait"], ["job", "wait", "--all"]):
        r = flux.fails(*args)
        assert r.stderr.startswith("flux-lite job: ERROR: ") and "cannot end under the virtual clock" in r.stderr
    flux("cancel", jobid)
    assert flux.fails("job", "wait", jobid).stderr == "flux-lite job: ERROR: Fatal exception type=cancel \n"


def test_waitable_is_the_owners(flux):
    guest = {"FLUX_HANDLE_USERID": "4242"}
    r = flux.fails("submit", "--flags=waitable", RUN + "1s", "true", env=guest)
    assert r.stderr.endswith("only the instance owner can submit with FLUX_JOB_WAITABLE\n")
    flux.submit("--flags=waitable", RUN + "1s", "sleep", "inf")
    r = flux.fails("job", "wait", env=guest)
    assert r.stderr == JOB + "Operation not permitted: job wait is for the instance owner\n"


def test_last_counts_only_what_a_slice_from_the_newest_end_needs():
    """history.last is the slice of the whole history, newest first, for
    every slice form (those from the newest end count only up to their
    stop: the answers must not change)."""
    import random
    import sqlite3

    from flux_lite.job_manager import index as jobindex

    conn = sqlite3.connect(":memory:")
    jobindex.create(conn)
    ids = list(range(1000, 1037))
    conn.executemany("INSERT INTO jobs(id, userid, state, data) VALUES (?, ?, 64, '{}')",
                     [(i, 7 if i % 3 else 8) for i in ids])
    mine = sorted((i for i in ids if i % 3), reverse=True)
    rng = random.Random(5)
    parts = ["", "0", "1", "2", "5", "30", "40", "-1", "-3", "-40"]
    for _ in range(400):
        start, stop = rng.choice(parts), rng.choice(parts)
        step = rng.choice(["", "1", "2", "-1", "-2", "3"])
        text = f"[{start}:{stop}" + (f":{step}]" if step else "]")
        whole = [mine[i] for i in history.slice_indices(history.parse_slice(text), len(mine))]
        assert history.last(conn, 7, text) == whole, text
