"""Job dependencies (RFC 26), as recorded from Flux 0.88 in
Flux 0.88 transcripts: submit/run --dependency and
--begin-time, the DEPEND state, dependency-add/remove before validate,
dependency exceptions, checks against inactive prerequisites, every syntax
error, the listing fields, and persistence across reloads and rebuilds.
"""

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ERR = "flux-lite submit: ERROR: "
GUEST = {"FLUX_HANDLE_USERID": "1234"}
RUN1MS = "--setattr=exec.test.run_duration=1ms"
FAIL = "--setattr=exec.test.wait_status=256"


def ctx_events(flux, jobid):
    """(name, context) of each event."""
    return [(e["name"], e.get("context", {})) for e in flux.events(jobid)]


def held(flux, *args, duration="1s"):
    return flux.submit("--urgency=hold", f"--setattr=exec.test.run_duration={duration}", *args, "true")


def dependent(flux, uri, *args):
    return flux.submit(f"--dependency={uri}", RUN1MS, *args, "true")


def wait_clean(flux, jobid):
    flux("job", "wait-event", "-t", "100", jobid, "clean")


@pytest.mark.parametrize("cmd", ["submit", "run"])
def test_help_names_the_options(flux, cmd):
    text = " ".join(flux.out(cmd, "--help").split())
    assert "--dependency URI Set an RFC 26 dependency URI for this job" in text
    assert ('--begin-time +FSD|TIME Set minimum start time as offset in FSD (e.g. +1h) or an absolute '
            'TIME (e.g. "3pm") for job') in text


# -- afterok --------------------------------------------------------------------------------------------


def test_afterok_waits_in_depend_and_is_listed(flux):
    a = held(flux)
    b = dependent(flux, f"afterok:{a}")
    assert flux.out("jobs").splitlines() == [
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO",
        f"{a:>12} root     true        S      1      -        - held",
        f"{b:>12} root     true        D      1      -        - depends:after-success={a}",
    ]
    assert flux.out("jobs", "-a", "-o", "deps").splitlines() == [
        "       JOBID NAME       URG PRI          STATE    DEPENDENCIES",
        f"{a:>12} true       0   0            SCHED    ",
        f"{b:>12} true       16               DEPEND   after-success={a}",
    ]
    fmt = "{id.f58} {state} {state_single} {status} {status_abbrev} {dependencies}"
    assert flux.out("jobs", "-a", "-o", fmt).splitlines() == [
        "JOBID STATE S STATUS ST DEPENDENCIES",
        f"{a} SCHED S SCHED S ",
        f"{b} DEPEND D DEPEND D after-success={a}",
    ]
    doc = json.loads(flux.out("jobs", "--json", b))
    assert {k: doc[k] for k in ("state", "dependencies", "urgency", "priority")} == {
        "state": "DEPEND", "dependencies": [f"after-success={a}"], "urgency": 16, "priority": None}
    events = ctx_events(flux, b)
    assert events == [
        ("submit", {"userid": events[0][1]["userid"], "urgency": 16, "flags": 0, "version": 1}),
        ("dependency-add", {"description": f"after-success={a}"}),
        ("validate", {}),
    ]
    js = json.loads(flux.out("job", "info", b, "jobspec"))
    assert js["attributes"]["system"]["dependencies"] == [{"scheme": "afterok", "value": a}]


def test_afterok_released_when_prerequisite_succeeds(flux):
    a = held(flux)
    b = dependent(flux, f"afterok:{a}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert flux.eventlog(b) == ["submit", "dependency-add", "validate", "dependency-remove", "depend",
                                "priority", "alloc", "start", "finish", "release", "free", "clean"]
    assert flux.events(b)[3]["context"] == {"description": f"after-success={a}"}
    # the release comes when the prerequisite becomes inactive
    assert flux.events(b)[3]["timestamp"] == flux.events(a)[-1]["timestamp"]
    assert flux.out("jobs", "-a", "-o", "deps").splitlines()[1:] == [
        f"{b:>12} true       16  16           INACTIVE ",
        f"{a:>12} true       16  16           INACTIVE ",
    ]


def test_afterok_prerequisite_fails_raises_dependency_exception(flux):
    a = flux.submit("--urgency=hold", FAIL, "--setattr=exec.test.run_duration=0.1s", "false")
    b = dependent(flux, f"afterok:{a}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert ctx_events(flux, b)[3:] == [
        ("exception", {"type": "dependency", "severity": 0,
                       "note": f"dependency after-success={a} can never be satisfied", "userid": 0}),
        ("clean", {}),
    ]
    out = flux.out("jobs", "-a", "-o", "{id.f58} {status} {result} {exception.type} {exception.note}", a, b)
    assert out.splitlines() == [
        "JOBID STATUS RESULT EXCEPTION-TYPE EXCEPTION-NOTE",
        f"{a} FAILED FAILED  ",
        f"{b} FAILED FAILED dependency dependency after-success={a} can never be satisfied",
    ]


def test_afterok_prerequisite_canceled_pending_never_started(flux):
    a = held(flux)
    b = dependent(flux, f"afterok:{a}")
    flux("cancel", a)
    assert flux.eventlog(b) == ["submit", "dependency-add", "validate", "exception", "clean"]
    assert flux.events(b)[3]["context"]["note"] == f"dependency after-success={a} job never started"


def test_afterok_prerequisite_canceled_running_can_never_be_satisfied(flux):
    a = flux.submit("--setattr=exec.test.run_duration=300s", "true")
    b = dependent(flux, f"afterok:{a}")
    assert flux.state(a) == "RUN"
    flux("cancel", a)
    assert flux.events(b)[3]["context"]["note"] == f"dependency after-success={a} can never be satisfied"
    assert flux.eventlog(b)[-1] == "clean"


# -- afternotok, afterany ---------------------------------------------------------------------------


def test_afternotok_released_by_failure(flux):
    a = flux.submit("--urgency=hold", FAIL, "--setattr=exec.test.run_duration=0.1s", "false")
    b = dependent(flux, f"afternotok:{a}")
    assert flux.out("jobs", "-no", "{id.f58} {state} {dependencies}", b) == f"{b} DEPEND after-failure={a}\n"
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert flux.eventlog(b)[:6] == ["submit", "dependency-add", "validate", "dependency-remove", "depend",
                                    "priority"]
    assert flux.out("jobs", "-no", "{status}", b) == "COMPLETED\n"


def test_afternotok_prerequisite_succeeds_exception(flux):
    a = held(flux, duration="0.1s")
    b = dependent(flux, f"afternotok:{a}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert flux.events(b)[3]["context"]["note"] == f"dependency after-failure={a} can never be satisfied"


def test_afterany_released_when_prerequisite_canceled_pending(flux):
    a = held(flux)
    b = dependent(flux, f"afterany:{a}")
    assert flux.out("jobs", "-no", "{id.f58} {state} {dependencies}", b) == f"{b} DEPEND after-finish={a}\n"
    flux("cancel", a)
    wait_clean(flux, b)
    assert flux.eventlog(b)[3:6] == ["dependency-remove", "depend", "priority"]
    assert flux.out("jobs", "-no", "{status}", b) == "COMPLETED\n"


# -- afterstart and the deprecated after --------------------------------------------------------------


def test_afterstart_and_deprecated_after(flux):
    a = held(flux, duration="2s")
    b = dependent(flux, f"afterstart:{a}")
    r = flux("submit", f"--dependency=after:{a}", RUN1MS, "true")
    c = r.stdout.strip()
    assert r.stderr == "dependency scheme 'after' is deprecated, use 'afterstart'\n"
    assert flux.out("jobs", "-o", "deps").splitlines()[1:] == [
        f"{a:>12} true       0   0            SCHED    ",
        f"{b:>12} true       16               DEPEND   after-start={a}",
        f"{c:>12} true       16               DEPEND   after-start={a}",
    ]
    assert ctx_events(flux, c)[1:] == [
        ("exception", {"type": "dependency", "severity": 3,
                       "note": "dependency scheme 'after' is deprecated, use 'afterstart'", "userid": 0}),
        ("dependency-add", {"description": f"after-start={a}"}),
        ("validate", {}),
    ]
    js = json.loads(flux.out("job", "info", c, "jobspec"))
    assert js["attributes"]["system"]["dependencies"] == [{"scheme": "after", "value": a}]
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    wait_clean(flux, c)
    start = next(e["timestamp"] for e in flux.events(a) if e["name"] == "start")
    for job in (b, c):
        ev = flux.events(job)
        removed = next(e for e in ev if e["name"] == "dependency-remove")
        assert removed["timestamp"] == start
        assert flux.out("jobs", "-no", "{status}", job) == "COMPLETED\n"
    assert flux.state(a) == "RUN"  # released at the prerequisite's start, not its end


def test_afterstart_prerequisite_canceled_before_start(flux):
    a = held(flux)
    b = dependent(flux, f"afterstart:{a}")
    flux("cancel", a)
    assert flux.events(b)[3]["context"]["note"] == f"dependency after-start={a} job never started"


def test_afterstart_on_running_job_satisfied_at_once(flux):
    a = flux.submit("--setattr=exec.test.run_duration=300s", "true")
    b = dependent(flux, f"afterstart:{a}")
    assert flux.eventlog(b)[:5] == ["submit", "dependency-add", "dependency-remove", "validate", "depend"]


# -- afterexcept ------------------------------------------------------------------------------------------


def test_afterexcept_released_by_timeout(flux):
    a = flux.submit("--urgency=hold", "-t", "1s", "--setattr=exec.test.run_duration=60s", "true")
    b = dependent(flux, f"afterexcept:{a}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert "timeout" in [e.get("context", {}).get("type") for e in flux.events(a)]
    assert flux.eventlog(b)[3:5] == ["dependency-remove", "depend"]
    assert flux.events(b)[3]["context"] == {"description": f"after-except={a}"}


def test_afterexcept_prerequisite_succeeds_exception(flux):
    a = held(flux, duration="0.1s")
    b = dependent(flux, f"afterexcept:{a}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, b)
    assert flux.events(b)[3]["context"]["note"] == f"dependency after-except={a} can never be satisfied"


# -- inactive prerequisites, checked at submit -------------------------------------------------------------


@pytest.fixture
def done(flux):
    """A completed and a failed inactive job."""
    ok = flux.submit(RUN1MS, "true")
    bad = flux.submit(FAIL, RUN1MS, "false")
    wait_clean(flux, ok)
    wait_clean(flux, bad)
    return ok, bad


def test_afterok_on_completed_job_satisfied_before_validate(flux, done):
    ok, _bad = done
    b = dependent(flux, f"afterok:{ok}")
    assert flux.eventlog(b)[:6] == ["submit", "dependency-add", "dependency-remove", "validate", "depend",
                                    "priority"]
    assert flux.events(b)[2]["context"] == {"description": f"after-success={ok}"}


@pytest.mark.parametrize("uri, msg", [
    ("afterok:{bad}", "dependency: afterok: job {bad} failed or was canceled"),
    ("afternotok:{ok}", "dependency: afternotok: job {ok} succeeded"),
    ("afterexcept:{ok}", "dependency: afterexcept: job {ok}: no exception"),
])
def test_inactive_prerequisite_rejections(flux, done, uri, msg):
    ok, bad = done
    before = flux.out("jobs", "-a", "-no", "{id}")
    r = flux.fails("submit", "--dependency=" + uri.format(ok=ok, bad=bad), RUN1MS, "true")
    assert r.stderr == ERR + msg.format(ok=ok, bad=bad) + "\n"
    assert r.stdout == ""
    assert flux.out("jobs", "-a", "-no", "{id}") == before  # no job was created


@pytest.mark.parametrize("uri", ["afternotok:{bad}", "afterany:{bad}", "afterstart:{ok}"])
def test_inactive_prerequisite_accepted(flux, done, uri):
    ok, bad = done
    b = dependent(flux, uri.format(ok=ok, bad=bad))
    wait_clean(flux, b)
    assert flux.eventlog(b)[1:4] == ["dependency-add", "dependency-remove", "validate"]
    assert flux.out("jobs", "-no", "{status}", b) == "COMPLETED\n"


def test_run_with_rejected_dependency(flux, done):
    _ok, bad = done
    r = flux.fails("run", f"--dependency=afterok:{bad}", RUN1MS, "true")
    assert r.stderr == f"flux-lite run: ERROR: dependency: afterok: job {bad} failed or was canceled\n"


def test_inactive_prerequisite_that_never_ran(flux):
    a = held(flux)
    flux("cancel", a)
    r = flux.fails("submit", f"--dependency=afternotok:{a}", RUN1MS, "true")
    assert r.stderr == ERR + f"dependency: after: {a} never started\n"
    b = dependent(flux, f"afterany:{a}")  # afterany is satisfied by any end
    assert flux.eventlog(b)[1:3] == ["dependency-add", "dependency-remove"]


# -- bad targets and bad syntax ----------------------------------------------------------------------------


@pytest.mark.parametrize("uri, msg", [
    ("afterok:f1234", "dependency: afterok: id f1234: job not found"),
    ("afterok:1234", "dependency: afterok: id 1234: job not found"),
    ("afterok:-1", 'dependency: afterok: "-1" is not a valid jobid'),
    ("afterok:bar", 'dependency: afterok: "bar" is not a valid jobid'),
    ("afterok", 'dependency: afterok: "" is not a valid jobid'),
    ("afterok:", 'dependency: afterok: "" is not a valid jobid'),
    ("afterok:18446744073709551615", 'dependency: afterok: "18446744073709551615" is not a valid jobid'),
    ("afterok:18446744073709551614", "dependency: afterok: id 18446744073709551614: job not found"),
    ("afterok:%%%", 'dependency: afterok: "%%%" is not a valid jobid'),
    ("1:2", 'Invalid dependency URI "1:2"'),
    ("foo:1", 'dependency scheme "foo" not supported'),
    ("foo", 'dependency scheme "foo" not supported'),
    ("", 'Invalid dependency URI ":"'),
    ("begin-time:bad", "Invalid begin-time=bad"),
    ("begin-time:-5", "Invalid begin-time=-5"),
    ("begin-time:inf", "Invalid begin-time=inf"),
    ("singleton", "singleton jobs require a job name"),
])
def test_bad_dependencies(flux, uri, msg):
    r = flux.fails("submit", f"--dependency={uri}", RUN1MS, "true")
    assert r.stderr == ERR + msg + "\n"
    assert r.stdout == ""
    assert flux.out("jobs", "-a", "-n") == ""


def test_bad_begin_time_option(flux):
    r = flux.fails("submit", "--begin-time=bad", RUN1MS, "true")
    assert r.stderr == ERR + 'Invalid datetime: "bad"\n'


def test_dependency_of_another_user_refused(flux):
    a = held(flux)
    r = flux.fails("submit", f"--dependency=afterok:{a}", RUN1MS, "true", env=GUEST)
    assert r.stderr == ERR + f"afterok: Permission denied for job {a}\n"


def test_uri_query_becomes_entry_keys(flux, done):
    ok, _bad = done
    b = dependent(flux, f"afterok:{ok}?foo=bar&n=3&x=1&x=2.5")
    js = json.loads(flux.out("job", "info", b, "jobspec"))
    assert js["attributes"]["system"]["dependencies"] == [
        {"scheme": "afterok", "value": ok, "foo": "bar", "n": 3, "x": [1, 2.5]}]


def test_dependencies_in_dry_run(flux):
    js = json.loads(flux.out("submit", "--dry-run", "--dependency=afterany:fABC", "true"))
    assert js["attributes"]["system"]["dependencies"] == [{"scheme": "afterany", "value": "fABC"}]


# -- begin-time ------------------------------------------------------------------------------------------


def begin_text(ts, now):
    dt = datetime.fromtimestamp(ts)
    text = f"begin@{dt:%H:%M}" if dt.date() == datetime.fromtimestamp(now).date() else f"begin@{dt:%b%d-%H:%M}"
    return text + (f":{dt:%S}" if dt.second else "")


def test_begin_time_follows_the_virtual_clock(flux):
    now = flux.now()
    a = flux.submit("--begin-time=+1m", RUN1MS, "true")
    b = flux.submit(f"--dependency=begin-time:{int(now) + 3600}.5", RUN1MS, "true")
    assert flux.out("jobs", "-o", "deps").splitlines()[1:] == [
        f"{a:>12} true       16               DEPEND   {begin_text(now + 60, now)}",
        f"{b:>12} true       16               DEPEND   {begin_text(now + 3600.5, now)}",
    ]
    assert flux.out("jobs", "-no", "{contextual_info}", a) == f"depends:{begin_text(now + 60, now)}\n"
    assert ctx_events(flux, a)[1] == ("dependency-add", {"description": "begin-time=%.3f" % (now + 60)})
    js = json.loads(flux.out("job", "info", a, "jobspec"))
    assert js["attributes"]["system"]["dependencies"] == [{"scheme": "begin-time", "value": repr(now + 60)}]
    js = json.loads(flux.out("job", "info", b, "jobspec"))
    assert js["attributes"]["system"]["dependencies"] == [
        {"scheme": "begin-time", "value": f"{int(now) + 3600}.5"}]
    flux.advance("59s")
    assert flux.state(a) == "DEPEND"
    flux.advance("1s")
    assert flux.eventlog(a)[3:6] == ["dependency-remove", "depend", "priority"]
    assert flux.events(a)[3]["timestamp"] == now + 60
    assert flux.state(b) == "DEPEND"
    # clock next: the begin-time is a timer the clock moves to
    flux("job", "wait-event", "-t", "7200", b, "clean")
    assert flux.events(b)[3]["timestamp"] == now + 3600.5


def test_begin_time_in_the_past(flux):
    a = flux.submit("--dependency=begin-time:1", RUN1MS, "true")
    assert ctx_events(flux, a)[1:5] == [
        ("dependency-add", {"description": "begin-time=1.000"}),
        ("validate", {}),
        ("dependency-remove", {"description": "begin-time=1.000"}),
        ("depend", {}),
    ]
    b = flux.submit("--begin-time=-1h", RUN1MS, "true")
    assert flux.eventlog(b)[2:5] == ["validate", "dependency-remove", "depend"]


def test_begin_time_past_the_clock_range_waits_without_a_timer(flux):
    a = flux.submit("--dependency=begin-time:1e20", RUN1MS, "true")
    assert flux.state(a) == "DEPEND"
    assert flux.out("clock", "next") == ""
    r = flux.fails("job", "wait-event", a, "clean")
    assert "nothing left to happen under the virtual clock" in r.stderr
    assert flux.now() == 1767225600.0
    flux("cancel", a)
    assert flux.eventlog(a)[-1] == "clean"


def test_cancel_of_begin_time_job_drops_its_timer(flux):
    a = flux.submit("--begin-time=+1m", RUN1MS, "true")
    flux("cancel", a)
    assert ctx_events(flux, a)[3:] == [("exception", {"type": "cancel", "severity": 0, "note": "",
                                                      "userid": ctx_events(flux, a)[3][1]["userid"]}),
                                       ("clean", {})]
    flux.advance("2m")
    assert flux.eventlog(a)[-1] == "clean"
    assert flux.out("jobs", "-a", "-o", "deps").splitlines()[1].endswith("INACTIVE " +
                                                                         begin_text(flux.now() - 60,
                                                                                    flux.now()))


@pytest.mark.parametrize("text, expect", [
    ("now", lambda n: n),
    ("+90s", lambda n: n + 90),
    ("-1h", lambda n: n - 3600),
    ("15:30", lambda n: datetime.fromtimestamp(n).replace(hour=15, minute=30, second=0).timestamp()),
    ("3pm", lambda n: datetime.fromtimestamp(n).replace(hour=15, minute=0, second=0).timestamp()),
    ("12am", lambda n: datetime.fromtimestamp(n).replace(hour=0, minute=0, second=0).timestamp()),
    ("2030-01-02 08:15:30", lambda n: datetime(2030, 1, 2, 8, 15, 30).timestamp()),
])
def test_parse_datetime(text, expect):
    from flux_lite.job_manager.dependency import parse_datetime

    now = 1767225600.0
    assert parse_datetime(text, now) == expect(now)


@pytest.mark.parametrize("text, message", [
    ("bad", 'Invalid datetime: "bad"'), ("", 'Invalid datetime: ""'), ("25:00", 'Invalid datetime: "25:00"'),
    ("2030-13-01", 'Invalid datetime: "2030-13-01"'), ("10", 'Invalid datetime: "10"'),
    # an offset is a Python FSD, with flux.util.parse_fsd's error
    ("+", "invalid Flux standard duration"), ("+1x", "invalid Flux standard duration"),
    ("-1.5.5h", "invalid Flux standard duration"), ("+-1h", "invalid Flux standard duration"),
])
def test_parse_datetime_rejects(text, message):
    from flux_lite.errors import FluxLiteError
    from flux_lite.job_manager.dependency import parse_datetime

    with pytest.raises(FluxLiteError) as info:
        parse_datetime(text, 1767225600.0)
    assert str(info.value) == message


@pytest.mark.parametrize("text", ["+inf", "+1e20s", "-1e20s"])
def test_parse_datetime_rejects_times_no_calendar_shows(text):
    # Flux fails converting these to a datetime, with Python's message
    from flux_lite.errors import FluxLiteError
    from flux_lite.job_manager.dependency import parse_datetime

    with pytest.raises(FluxLiteError, match="out of range|convert"):
        parse_datetime(text, 1767225600.0)


def _local(n, **fields):
    return datetime.fromtimestamp(n).replace(microsecond=0, **fields)


@pytest.mark.parametrize("text, expect", [
    ("noon", lambda n: _local(n, hour=12, minute=0, second=0)),
    ("midnight", lambda n: _local(n, hour=0, minute=0, second=0)),
    ("tomorrow", lambda n: _local(n, hour=0, minute=0, second=0) + timedelta(days=1)),
    ("tomorrow 8am", lambda n: _local(n, hour=8, minute=0, second=0) + timedelta(days=1)),
    ("10:00", lambda n: _local(n, hour=10, minute=0, second=0)),
    ("2025-01-01 10:00", lambda n: datetime(2025, 1, 1, 10, 0)),
    ("in 1 hour", lambda n: _local(n) + timedelta(hours=1)),
    ("in 2 days", lambda n: _local(n) + timedelta(days=2)),
    ("in 5 minutes", lambda n: _local(n) + timedelta(minutes=5)),
])
def test_parse_datetime_words(text, expect):
    # the forms common to parsedatetime (Flux's parser) and the built-in reader;
    # relative words count from the instance clock, in whole seconds
    from flux_lite.job_manager.dependency import parse_datetime

    now = 1767263400.25
    assert parse_datetime(text, now) == expect(now).timestamp()


@pytest.mark.parametrize("text", ["noon", "midnight", "tomorrow", "10:00", "3pm", "2025-01-01 10:00", "in 1 hour",
                                  "in 3 weeks", "tomorrow 8am", "today 17:45:10"])
def test_builtin_reader_agrees_with_parsedatetime(text):
    # without parsedatetime the built-in reader stands in for it: same answers
    pytest.importorskip("parsedatetime")
    from flux_lite.formats import when

    for now in (1767263400.25, 1767225600.0, 1790000000.9):
        assert when._builtin(text, now) == when.parse(text, now), (text, now)


def test_parse_datetime_natural_language_as_flux():
    # what only parsedatetime reads (Flux requires it)
    pytest.importorskip("parsedatetime")
    from flux_lite.job_manager.dependency import parse_datetime

    now = datetime(2026, 1, 1, 10, 30).timestamp()  # a Thursday
    assert parse_datetime("next monday", now) == datetime(2026, 1, 5).timestamp()
    assert parse_datetime("yesterday", now) == datetime(2025, 12, 31).timestamp()
    assert parse_datetime("8am tomorrow", now) == datetime(2026, 1, 2, 8).timestamp()
    assert parse_datetime("Jan 5", now) == datetime(2026, 1, 5, 10, 30).timestamp()
    assert parse_datetime("1 hour", now) == datetime(2026, 1, 1, 11, 30).timestamp()


# -- singleton ---------------------------------------------------------------------------------------------


def test_singleton(flux):
    a = flux.submit("--job-name=solo", "--dependency=singleton", "--setattr=exec.test.run_duration=2s", "true")
    b = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true")
    c = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true")
    d = flux.submit("--job-name=solo", RUN1MS, "true")
    other = flux.submit("--job-name=other", "--dependency=singleton", RUN1MS, "true")
    assert "dependency-add" not in flux.eventlog(a)
    assert "dependency-add" not in flux.eventlog(other)
    lines = flux.out("jobs", "-a", "-o", "deps").splitlines()
    assert f"{b:>12} solo       16               DEPEND   singleton" in lines
    assert f"{c:>12} solo       16               DEPEND   singleton" in lines
    assert ctx_events(flux, b)[1:3] == [("dependency-add", {"description": "singleton"}), ("validate", {})]
    flux.advance("1s")
    assert flux.out("jobs", "-no", "{status}", d) == "COMPLETED\n"
    assert flux.state(b) == flux.state(c) == "DEPEND"  # a still runs
    wait_clean(flux, c)
    a_clean = flux.events(a)[-1]["timestamp"]
    b_clean = flux.events(b)[-1]["timestamp"]
    assert flux.events(b)[3] == {"timestamp": a_clean, "name": "dependency-remove",
                                 "context": {"description": "singleton"}}
    # one at a time: c goes only when b has ended
    assert flux.events(c)[3]["timestamp"] == b_clean > a_clean


def test_singleton_canceled_waiter_releases_next(flux):
    a = flux.submit("--job-name=solo", "--setattr=exec.test.run_duration=10s", "true")
    b = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true")
    c = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true")
    flux("cancel", b)
    assert flux.state(c) == "DEPEND"
    flux("cancel", a)
    assert flux.eventlog(c)[3:5] == ["dependency-remove", "depend"]


def test_singleton_per_user(flux):
    flux.submit("--job-name=solo", "--setattr=exec.test.run_duration=10s", "true")
    g = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true", env=GUEST)
    assert "dependency-add" not in flux.eventlog(g)


# -- urgency and cancel in DEPEND; several dependencies --------------------------------------------------


def test_urgency_and_cancel_in_depend_with_two_dependencies(flux):
    a = held(flux)
    b = held(flux)
    c = flux.submit(f"--dependency=afterok:{a}", f"--dependency=afterany:{b}", RUN1MS, "true")
    assert flux.out("jobs").splitlines()[3] == (
        f"{c:>12} root     true        D      1      -        - depends:after-success={a},after-finish={b}")
    flux("job", "urgency", c, "31")
    flux("job", "urgency", c, "hold")
    r = flux("job", "urgency", "-v", c, "expedite")
    assert r.stderr == "old urgency: job held\n"
    flux("job", "urgency", c, "default")
    assert flux.out("jobs", "-o", "deps", c).splitlines()[1] == (
        f"{c:>12} true       16               DEPEND   after-success={a},after-finish={b}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, a)
    assert flux.out("jobs", "-o", "deps", c).splitlines()[1] == (
        f"{c:>12} true       16               DEPEND   after-finish={b}")
    flux("cancel", c)
    assert ctx_events(flux, c)[:8] == [
        ctx_events(flux, c)[0],
        ("dependency-add", {"description": f"after-success={a}"}),
        ("dependency-add", {"description": f"after-finish={b}"}),
        ("validate", {}),
        ("urgency", {"userid": 0, "urgency": 31}),
        ("urgency", {"userid": 0, "urgency": 0}),
        ("urgency", {"userid": 0, "urgency": 31}),
        ("urgency", {"userid": 0, "urgency": 16}),
    ]
    assert flux.eventlog(c)[8:] == ["dependency-remove", "exception", "clean"]
    assert flux.out("jobs", "-a", "-o", "{id.f58} {state} {status} {result} {dependencies}", c).splitlines() == [
        "JOBID STATE STATUS RESULT DEPENDENCIES", f"{c} INACTIVE CANCELED CANCELED after-finish={b}"]
    # the canceled dependent no longer waits on b: b's end changes nothing for it
    flux("cancel", b)
    assert flux.eventlog(c)[-1] == "clean"
    assert len(flux.eventlog(c)) == 11


def test_afterok_chain_fails_one_after_another(flux):
    a = flux.submit("--urgency=hold", FAIL, "--setattr=exec.test.run_duration=0.1s", "false")
    b = dependent(flux, f"afterok:{a}")
    c = dependent(flux, f"afterok:{b}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, c)
    out = flux.out("jobs", "-a", "-o", "{id.f58} {status} {exception.type} {exception.note}", a, b, c)
    assert out.splitlines() == [
        "JOBID STATUS EXCEPTION-TYPE EXCEPTION-NOTE",
        f"{a} FAILED  ",
        f"{b} FAILED dependency dependency after-success={a} can never be satisfied",
        f"{c} FAILED dependency dependency after-success={b} job never started",
    ]


def test_chain_end_reasons(flux):
    a = flux.submit("--urgency=hold", FAIL, "--setattr=exec.test.run_duration=0.1s", "false")
    b = dependent(flux, f"afterok:{a}")
    c = dependent(flux, f"afterok:{b}")
    flux("job", "urgency", a, "default")
    wait_clean(flux, c)
    lines = flux.out("jobs", "-a", "-o", "{id.f58} {inactive_reason}").splitlines()
    assert lines[1:] == [
        f"{c} Exception: type=dependency note=dependency after-success={b} job never started",
        f"{b} Exception: type=dependency note=dependency after-success={a} can never be satisfied",
        f"{a} Exit 1",
    ]


def test_dependencies_processed_in_order(flux, done):
    ok, _bad = done
    a = held(flux)
    r = flux("submit", f"--dependency=afterany:{a}", f"--dependency=after:{ok}", "--begin-time=+1m",
             RUN1MS, "true")
    b = r.stdout.strip()
    assert r.stderr == "dependency scheme 'after' is deprecated, use 'afterstart'\n"
    now = flux.now()
    assert [(n, c.get("description", c.get("severity"))) for n, c in ctx_events(flux, b)[1:]] == [
        ("dependency-add", f"after-finish={a}"),
        ("exception", 3),
        ("dependency-add", f"after-start={ok}"),
        ("dependency-remove", f"after-start={ok}"),
        ("dependency-add", "begin-time=%.3f" % (now + 60)),
        ("validate", None),
    ]
    assert flux.out("jobs", "-no", "{dependencies}", b) == f"after-finish={a},{begin_text(now + 60, now)}\n"
    flux("cancel", a)
    assert flux.state(b) == "DEPEND"
    flux.advance("1m")
    assert flux.eventlog(b)[-6:] == ["dependency-remove", "dependency-remove", "depend", "priority", "alloc",
                                     "start"]


def test_singleton_copies(flux):
    ids = flux.out("submit", "--cc=1-3", "--job-name=solo", "--dependency=singleton", RUN1MS,
                   "true").split()
    assert [flux.state(j) for j in ids] == ["RUN", "DEPEND", "DEPEND"]
    wait_clean(flux, ids[2])
    starts = [next(e["timestamp"] for e in flux.events(j) if e["name"] == "start") for j in ids]
    assert starts == sorted(starts) and len(set(starts)) == 3


# -- persistence: scheduler reload, index rebuild ------------------------------------------------------


def drop(flux, *tables):
    conn = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"))
    try:
        for table in tables:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.commit()
    finally:
        conn.close()


def workload(flux):
    a = held(flux)
    b = dependent(flux, f"afterok:{a}")
    s1 = flux.submit("--job-name=solo", "--setattr=exec.test.run_duration=10s", "true")
    s2 = flux.submit("--job-name=solo", "--dependency=singleton", RUN1MS, "true")
    t = flux.submit("--begin-time=+1m", RUN1MS, "true")
    return a, b, s1, s2, t


def finish(flux, ids):
    a, b, s1, s2, t = ids
    flux("job", "urgency", a, "default")
    flux.advance("2m")
    return {j: flux.out("job", "eventlog", j) for j in ids}


@pytest.mark.parametrize("disturb", ["none", "reload", "rebuild"])
def test_dependencies_survive_reload_and_rebuild(flux_factory, disturb):
    ref = flux_factory("--test-size=4", "--test-cores=2", name="ref")
    ref_ids = workload(ref)
    f = flux_factory("--test-size=4", "--test-cores=2", name="other")
    ids = workload(f)
    assert ids == ref_ids
    listing = f.out("jobs", "-a", "-o", "deps")
    if disturb == "reload":
        f("sched", "reload")
    elif disturb == "rebuild":
        drop(f, "jobs", "timers", "depends", "job_names")
    assert f.out("jobs", "-a", "-o", "deps") == listing
    assert finish(f, ids) == finish(ref, ref_ids)


# -- clocks ------------------------------------------------------------------------------------------------


def test_begin_time_is_the_next_timed_event(flux):
    now = flux.now()
    a = flux.submit("--begin-time=+90s", RUN1MS, "true")
    nxt = flux.out("clock", "next")
    assert nxt.split()[0] == "%.6f" % (now + 90)
    flux.advance("90s")
    assert flux.eventlog(a)[3:5] == ["dependency-remove", "depend"]


def test_begin_time_under_the_real_clock(tmp_path, monkeypatch):
    import time

    from conftest import Flux

    flux = Flux(tmp_path / "real")
    flux("start", "--test-size=1")
    t0 = time.time()
    a = flux.submit("--begin-time=+1h", RUN1MS, "true")
    js = json.loads(flux.out("job", "info", a, "jobspec"))
    begin = float(js["attributes"]["system"]["dependencies"][0]["value"])
    assert t0 + 3600 <= begin <= time.time() + 3600
    assert flux.state(a) == "DEPEND"
    # an hour of wall time later, the next command finds the job released
    monkeypatch.setattr(time, "time", lambda: begin + 1)
    assert flux.state(a) != "DEPEND"
    assert flux.events(a)[3]["name"] == "dependency-remove"
    # stamped when it was due, as Flux's timer would, not when a command observed it
    assert flux.events(a)[3]["timestamp"] == begin


def test_filter_depend(flux):
    a = held(flux)
    b = dependent(flux, f"afterany:{a}")
    assert flux.out("jobs", "-n", "-f", "depend", "-o", "{id.f58}") == f"{b}\n"


# -- completion --------------------------------------------------------------------------------------------


def test_dependency_completion(flux):
    from test_completion import values

    a = held(flux)
    assert "afterok:" in values(["flux-lite", "submit", "--dependency", "after"], flux.state_dir)
    assert values(["flux-lite", "run", "--dependency", "s"], flux.state_dir) == ["singleton"]
    assert values(["flux-lite", "submit", "--dependency", "afterok:"], flux.state_dir) == [f"afterok:{a}"]
    assert values(["flux-lite", "submit", "--dependency", "begin-time:"], flux.state_dir) == []


# -- parsers -----------------------------------------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402


@given(st.text(max_size=40))
def test_parse_uri_garbage_gives_an_entry_or_one_error(text):
    from flux_lite.errors import FluxLiteError
    from flux_lite.job_manager.dependency import parse_uri

    try:
        entry = parse_uri(text)
    except FluxLiteError as exc:
        assert str(exc).startswith("Invalid dependency URI ")
        return
    assert isinstance(entry["scheme"], str) and entry["scheme"]
    assert isinstance(entry["value"], str)


@given(st.text(max_size=30))
def test_parse_datetime_garbage_gives_a_time_or_one_error(text):
    from flux_lite.errors import FluxLiteError
    from flux_lite.job_manager.dependency import parse_datetime

    try:
        value = parse_datetime(text, 1767225600.0)
    except FluxLiteError as exc:
        if text[:1] in ("+", "-"):
            assert str(exc) == "invalid Flux standard duration" or "out of range" in str(exc)
        else:
            assert str(exc) == f'Invalid datetime: "{text}"' or "out of range" in str(exc), str(exc)
        return
    assert isinstance(value, float)


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_begin_time_value_round_trip(ts):
    from flux_lite.job_manager.dependency import begin_time_description, parse_timestamp

    assert parse_timestamp(repr(ts)) == ts
    assert begin_time_description(ts) == "begin-time=%.3f" % ts


@given(st.text(max_size=20))
def test_parse_timestamp_never_raises(text):
    from flux_lite.job_manager.dependency import parse_timestamp

    value = parse_timestamp(text)
    assert value is None or value >= 0


GARBAGE = ["", ":", "::", "?", "afterok:?", "afterok:ƒ", "after:\u0192\u0192", "afterok:18446744073709551616",
           "afterok:-0", "begin-time:1e999", "begin-time:-0", "begin-time: ", "singleton?x=1", "a" * 300,
           "afterok:[1-0]", "afterany:0x", "begin-time:1e20", "%", "afterstart:job.0000"]


@pytest.mark.parametrize("value", GARBAGE)
@pytest.mark.parametrize("option", ["--dependency", "--begin-time"])
def test_garbage_is_one_line(flux, option, value):
    r = flux("submit", f"{option}={value}", RUN1MS, "true", check=False)
    assert r.exit_code in (0, 1), (r.exit_code, r.stderr)
    if r.exit_code:
        lines = [x for x in r.stderr.splitlines() if "is deprecated" not in x]
        assert r.stdout == "" and len(lines) == 1
    flux("jobs", "-a")


# -- fsck ----------------------------------------------------------------------------------------------------


def test_fsck_checks_and_rebuilds_the_dependency_tables(flux):
    ids = workload(flux)
    assert flux.out("fsck") == "fsck: ok\n"
    conn = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"), isolation_level=None)
    try:
        conn.execute("DELETE FROM depends WHERE description = 'singleton'")
        conn.execute("DELETE FROM job_names WHERE jobid = (SELECT MIN(jobid) FROM job_names)")
    finally:
        conn.close()
    r = flux.fails("fsck")
    assert r.stdout.splitlines() == [
        f"job index: {ids[3]}: outstanding dependencies differ from its eventlog",
        f"job index: {ids[2]}: its name count differs from its jobspec",
        "fsck: 2 problems",
    ]
    flux("fsck", "--rebuild")
    assert flux.out("fsck") == "fsck: ok\n"
    finish(flux, ids)
    assert flux.out("jobs", "-no", "{status}", *ids) == "COMPLETED\n" * 4 + "COMPLETED\n"


# -- as `flux`: Flux's exact words ---------------------------------------------------------------------------


def as_flux(flux, *args, env=None):
    from click.testing import CliRunner

    from flux_lite.cli.main import cli

    full_env = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1"}
    full_env.update(env or {})
    return CliRunner().invoke(cli, [str(a) for a in args], env=full_env, prog_name="flux",
                              catch_exceptions=False)


@pytest.mark.parametrize("args, stderr", [
    (["submit", "--dependency=afterok:f1234"], "[Errno 22] dependency: afterok: id f1234: job not found\n"),
    (["submit", "--dependency=afterok:-1"], '[Errno 22] dependency: afterok: "-1" is not a valid jobid\n'),
    (["submit", "--dependency=foo:1"], '[Errno 22] dependency scheme "foo" not supported\n'),
    (["submit", "--dependency=begin-time:bad"], "[Errno 22] Invalid begin-time=bad\n"),
    (["submit", "--dependency=singleton"], "[Errno 22] singleton jobs require a job name\n"),
    (["submit", "--dependency="], 'flux-submit: ERROR: Invalid dependency URI ":"\n'),
    (["submit", "--begin-time=bad"], 'flux-submit: ERROR: Invalid datetime: "bad"\n'),
    (["run", "--dependency=afterok:1234"], "flux-run: ERROR: dependency: afterok: id 1234: job not found\n"),
])
def test_refusals_in_flux_words(flux, args, stderr):
    r = as_flux(flux, *args, RUN1MS, "true")
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", stderr)


def test_failed_prerequisite_in_flux_words(flux, done):
    _ok, bad = done
    r = as_flux(flux, "submit", f"--dependency=afterok:{bad}", RUN1MS, "true")
    assert r.stderr == f"[Errno 22] dependency: afterok: job {bad} failed or was canceled\n"
    r = as_flux(flux, "run", f"--dependency=afterok:{bad}", RUN1MS, "true")
    assert r.stderr == f"flux-run: ERROR: dependency: afterok: job {bad} failed or was canceled\n"


def test_dependencies_survive_dump_and_restore(flux, tmp_path):
    from conftest import Flux

    ids = workload(flux)
    listing = flux.out("jobs", "-a", "-o", "deps")
    archive = tmp_path / "deps.tar"
    flux("dump", "-q", archive)
    other = Flux(tmp_path / "restored")
    other("restore", "-q", "--clock=virtual", archive)
    assert other.out("jobs", "-a", "-o", "deps") == listing
    assert other.out("clock", "next") == flux.out("clock", "next")
    assert finish(other, ids) == finish(flux, ids)


# -- random workloads: a rebuild at any point changes nothing ----------------------------------------------


def random_ops(seed, n=40):
    import random

    rng = random.Random(seed)
    ops = []
    njobs = 0
    for _ in range(n):
        kind = rng.choice(["submit", "submit", "submit", "cancel", "urgency", "advance", "drop"])
        if kind == "submit" or njobs == 0:
            args = [f"--setattr=exec.test.run_duration={rng.choice(['1s', '5s', '20s'])}"]
            if rng.random() < 0.3:
                args.append("--urgency=hold")
            if rng.random() < 0.3:
                args += ["--job-name=solo"] + (["--dependency=singleton"] if rng.random() < 0.7 else [])
            for _ in range(rng.choice([0, 1, 1, 2])):
                if njobs and rng.random() < 0.8:
                    scheme = rng.choice(["afterok", "afternotok", "afterany", "afterstart", "afterexcept"])
                    args.append(f"--dependency={scheme}:#{rng.randrange(njobs)}")
                else:
                    args.append(f"--begin-time=+{rng.choice([3, 10, 30])}s")
            if rng.random() < 0.2:
                args.append("--setattr=exec.test.wait_status=256")
            ops.append(("submit", args))
            njobs += 1
        elif kind in ("cancel", "urgency"):
            ops.append((kind, rng.randrange(njobs)))
        elif kind == "advance":
            ops.append(("advance", f"{rng.choice([1, 4, 15])}s"))
        else:
            ops.append(("drop", None))
    return ops


def play(flux, ops, drops):
    ids = []

    def ref(k):
        # a refused submission (e.g. after a prerequisite that failed) stands
        # for the latest job accepted before it
        return next((j for j in reversed(ids[:k + 1]) if j), "f1")

    for kind, arg in ops:
        if kind == "submit":
            args = [a[:a.index("#")] + ref(int(a[a.index("#") + 1:])) if "#" in a else a for a in arg]
            r = flux("submit", *args, "true", check=False)
            ids.append(r.stdout.strip())
        elif kind == "cancel":
            flux("cancel", ref(arg), check=False)
        elif kind == "urgency":
            flux("job", "urgency", ref(arg), "default", check=False)
        elif kind == "advance":
            flux.advance(arg)
        elif drops:
            drop(flux, "jobs", "timers", "depends", "job_names")
    flux.advance("2m")
    return {j: flux.out("job", "eventlog", j) for j in ids if j}, flux.out("jobs", "-a", "-o", "deps")


@pytest.mark.parametrize("seed", [3, 4])
def test_random_dependency_workloads_replay_identically(flux_factory, seed):
    ops = random_ops(seed)
    ref = flux_factory("--test-size=2", "--test-cores=2", name="ref")
    other = flux_factory("--test-size=2", "--test-cores=2", name="other")
    assert play(other, ops, drops=True) == play(ref, ops, drops=False)


def test_malformed_dependency_events_replay_without_harm(flux):
    from flux_lite.formats.jobid import decode, kvs_key

    a = held(flux)
    key = kvs_key(decode(a)) + ".eventlog"
    conn = sqlite3.connect(str(Path(flux.state_dir) / "kvs.sqlite"), isolation_level=None)
    try:
        (value,) = conn.execute("SELECT value FROM kvs WHERE key = ?", (key,)).fetchone()
        extra = ('{"timestamp":1767225600.0,"name":"dependency-add","context":{"description":5}}\n'
                 '{"timestamp":1767225600.0,"name":"dependency-remove","context":{}}\n')
        conn.execute("UPDATE kvs SET value = ? WHERE key = ?", (value + extra, key))
    finally:
        conn.close()
    drop(flux, "jobs", "timers", "depends", "job_names")
    assert flux.out("jobs", "-no", "{id.f58} {state} {dependencies}", a) == f"{a} SCHED \n"


# -- --dependency and --begin-time interleaved -------------------------------------------------------


def test_dependency_and_begin_time_keep_command_line_order(flux):
    import json

    held = flux.submit("--urgency=hold", "true")
    now = flux.now()
    jobid = flux.submit("--begin-time=+1h", f"--dependency=afterok:{held}", "--begin-time", "+2h",
                        f"--dependency=afterany:{held}", RUN1MS, "true")
    deps = json.loads(flux.out("job", "info", jobid, "jobspec"))["attributes"]["system"]["dependencies"]
    assert deps == [{"scheme": "begin-time", "value": repr(now + 3600)},
                    {"scheme": "afterok", "value": held},
                    {"scheme": "begin-time", "value": repr(now + 7200)},
                    {"scheme": "afterany", "value": held}]
    assert ctx_events(flux, jobid)[1:5] == [
        ("dependency-add", {"description": f"begin-time={now + 3600:.3f}"}),
        ("dependency-add", {"description": f"after-success={held}"}),
        ("dependency-add", {"description": f"begin-time={now + 7200:.3f}"}),
        ("dependency-add", {"description": f"after-finish={held}"}),
    ]
    assert ctx_events(flux, jobid)[5][0] == "validate"
    # the other way round, and in run's --dry-run jobspec too
    out = flux.out("run", "--dry-run", f"--dependency=afterstart:{held}", "--begin-time=+1m",
                   "--dependency=singleton", "--job-name=x", "true")
    assert [d["scheme"] for d in json.loads(out)["attributes"]["system"]["dependencies"]] == \
        ["afterstart", "begin-time", "singleton"]


def test_begin_time_errors_come_before_dependency_ones(flux):
    # flux submit converts --begin-time while parsing its options: the
    # deprecated `after` warning of an earlier --dependency is never printed
    held = flux.submit("--urgency=hold", "true")
    r = flux.fails("submit", f"--dependency=after:{held}", "--begin-time=bad", "true")
    assert r.stderr == 'flux-lite submit: ERROR: Invalid datetime: "bad"\n'
    r = flux.fails("submit", "--dependency=foo:1", "--begin-time=+1x", "true")
    assert r.stderr == "flux-lite submit: ERROR: invalid Flux standard duration\n"
    assert flux.out("jobs", "-a", "-no", "{id}") == f"{held}\n"


@pytest.mark.parametrize("word, expect", [
    ("noon", lambda n: _local(n, hour=12, minute=0, second=0)),
    ("tomorrow", lambda n: _local(n, hour=0, minute=0, second=0) + timedelta(days=1)),
    ("in 1 hour", lambda n: _local(n) + timedelta(hours=1)),
    ("2030-01-02 08:15", lambda n: datetime(2030, 1, 2, 8, 15)),
])
def test_begin_time_words_on_the_instance_clock(flux, word, expect):
    import json

    flux.advance("1h")
    now = flux.now()
    jobid = flux.submit(f"--begin-time={word}", RUN1MS, "true")
    deps = json.loads(flux.out("job", "info", jobid, "jobspec"))["attributes"]["system"]["dependencies"]
    assert deps == [{"scheme": "begin-time", "value": repr(expect(now).timestamp())}]
    assert flux.state(jobid) in ("DEPEND", "INACTIVE")
