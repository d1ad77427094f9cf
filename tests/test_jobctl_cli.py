"""pgrep / pkill, cancel's selections, dmesg -H, and what run and submit --wait
report: Flux 0.88's words and exit codes."""

import datetime
import re

import pytest

RUN = "--setattr=exec.test.run_duration="


def lines(text):
    return text.splitlines()


# -- pgrep / pkill -----------------------------------------------------------------

@pytest.fixture
def named(flux):
    """alpha (done), alpha (running), beta (held), as in the transcript."""
    done = flux.submit("--job-name=alpha", RUN + "1ms", "sleep", "inf")
    flux.advance("1s")
    running = flux.submit("--job-name=alpha", RUN + "300s", "sleep", "inf")
    held = flux.submit("--job-name=beta", "--urgency=hold", RUN + "1ms", "sleep", "inf")
    return done, running, held


def test_pgrep_names_and_states(flux, named):
    done, running, held = named
    assert flux.out("pgrep", "alpha") == f"{running}\n"
    assert lines(flux.out("pgrep", "-a", "alpha")) == [running, done]
    assert lines(flux.out("pgrep", "-a", "-n", "-o", "{id.f58} {name} {state}", "alpha")) == [
        f"{running} alpha RUN", f"{done} alpha INACTIVE"]
    assert lines(flux.out("pgrep", "-a", "-o", "{id.f58} {name}", "alpha"))[0] == "JOBID NAME"
    assert flux.out("pgrep", "-a", "^be") == f"{held}\n"
    assert flux.out("pgrep", "-a", "name:^be") == f"{held}\n"
    r = flux.fails("pgrep", "nomatch")
    assert (r.stdout, r.stderr) == ("", "")
    assert flux.out("pgrep", "-f", "completed", "alpha") == f"{done}\n"
    assert flux.out("pgrep", "-c", "1", "-a", "alpha") == f"{running}\n"


def test_pgrep_id_range(flux, named):
    done, running, held = named
    # pending before running, as jobs lists them
    assert lines(flux.out("pgrep", f"{running}..{held}")) == [held, running]
    assert lines(flux.out("pgrep", "-a", f"{done}..{running}")) == [running, done]


def test_pgrep_expression_errors(flux, named):
    r = flux.fails("pgrep", "-a", "(bad", code=2)
    assert r.stderr == ("flux-lite pgrep: ERROR: expression error: "
                        "missing ), unterminated subpattern at position 0\n")
    r = flux.fails("pgrep", "a", "b", code=2)
    assert r.stderr == "flux-lite pgrep: ERROR: expression error: Only one pattern can be provided\n"


def test_pgrep_users(flux, named):
    other = flux.submit("--job-name=alpha", RUN + "300s", "true", env={"FLUX_HANDLE_USERID": "4242"})
    assert other not in flux.out("pgrep", "alpha")
    assert other in flux.out("pgrep", "-A", "alpha")
    assert flux.out("pgrep", "-u", "4242", "alpha") == f"{other}\n"
    assert flux.fails("pgrep", "-u", "nosuchuser", "alpha").stderr == \
        "flux-lite pgrep: ERROR: Invalid user nosuchuser specified\n"


def test_pkill(flux, named):
    done, running, held = named
    r = flux.fails("pkill", "nomatch")
    assert (r.stdout, r.stderr) == ("", "")
    r = flux("pkill", "beta")
    assert (r.stdout, r.stderr) == ("", "flux-lite pkill: INFO: Canceled 1 job\n")
    r = flux("pkill", "--wait", "alpha")
    assert r.stderr == "flux-lite pkill: INFO: Canceled 1 job\n"
    assert lines(flux.out("jobs", "-a", "-no", "{id.f58} {status_abbrev}")) == [
        f"{held} CA", f"{running} CA", f"{done} CD"]
    assert flux.fails("pkill", "-a", "alpha", code=2).exit_code == 2  # pkill has no -a


# -- cancel ------------------------------------------------------------------------

def test_cancel_selections(flux):
    held = lines(flux.out("submit", "--urgency=hold", "--cc=1-3", RUN + "1s", "sleep", "inf"))
    running = flux.submit(RUN + "300s", "sleep", "inf")
    prefix = "flux-lite cancel: "
    assert flux.fails("cancel").stderr == prefix + "ERROR: No target jobs were provided\n"
    assert flux("cancel", "--all", "--dry-run").stderr == prefix + "Would cancel 4 jobs\n"
    assert flux("cancel", "-n", "--all", "--states=run").stderr == prefix + "Would cancel 1 job\n"
    assert flux("cancel", "--user=all", "--dry-run").stderr == prefix + "Would cancel 4 jobs\n"
    assert flux("cancel", "-n", held[0], held[1]).stderr == prefix + "Would cancel 2 jobs\n"
    assert flux("cancel", "--user=nobody", "--all").stderr == prefix + "Matched 0 jobs\n"
    assert flux.fails("cancel", "--user=nosuchuser", "--all").stderr == \
        prefix + "ERROR: Invalid user nosuchuser specified\n"
    assert flux.fails("cancel", "--states=bogus", "--all").stderr == \
        prefix + "ERROR: Invalid state bogus specified\n"
    assert flux.fails("cancel", "--states=inactive", "--all").stderr == \
        prefix + "ERROR: Invalid state inactive specified\n"
    assert flux.fails("cancel", "--all", running).stderr == \
        prefix + "ERROR: Do not specify a list of jobids with --all,--user,--states options\n"
    assert flux("cancel", "--all", "--states=sched", "-m", "cleanup of pending").stderr == \
        prefix + "Canceled 3 jobs (0 errors)\n"
    assert lines(flux.out("jobs", "-a", "-no", "{id.f58} {status} {exception.note}")) == [
        f"{running} RUN "] + [f"{j} CANCELED cleanup of pending" for j in reversed(held)]
    assert flux("cancel", "--user=all").stderr == prefix + "Canceled 1 job (0 errors)\n"
    assert flux("cancel", "--all").stderr == prefix + "Matched 0 jobs\n"
    r = flux("cancel", "--all", "--quiet")
    assert (r.stdout, r.stderr) == ("", "")
    assert flux.fails("cancel", running).stderr == prefix + f"ERROR: {running}: job is inactive\n"
    # Python commands re-encode the id they were given (FLUX_F58_FORCE_ASCII here)
    assert flux.fails("cancel", "f1234").stderr == prefix + "ERROR: f234: unknown job id\n"


def test_cancel_states_repeatable(flux):
    flux.submit("--urgency=hold", RUN + "1s", "sleep", "inf")
    flux.submit(RUN + "300s", "sleep", "inf")
    assert flux("cancel", "-n", "-S", "sched", "-S", "run").stderr == "flux-lite cancel: Would cancel 2 jobs\n"
    assert flux("cancel", "-n", "-S", "SCHED,RUN").stderr == "flux-lite cancel: Would cancel 2 jobs\n"


# -- dmesg -------------------------------------------------------------------------

def _human_stamp(t):
    local = datetime.datetime.fromtimestamp(t)
    return local.strftime("[%b%d %H:%M]")


def test_dmesg_human(flux):
    # sched-simple logs each alloc and free at debug level: lines at every step
    flux("module", "reload", "sched-simple", "log-level=debug")
    flux.submit(RUN + "1s", "sleep", "inf")
    flux.advance("30s")
    flux.submit(RUN + "1s", "sleep", "inf")
    flux.advance("2m")
    flux.submit(RUN + "1s", "sleep", "inf")
    iso = lines(flux.out("dmesg"))
    times = [datetime.datetime.strptime(ln.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
             .replace(tzinfo=datetime.timezone.utc).timestamp() for ln in iso]
    human = lines(flux.out("dmesg", "-H"))
    assert len(human) == len(iso)
    base = None
    for t, ln, iso_line in zip(times, human, iso):
        rest = ln.split("] ", 1)[1]
        assert rest == iso_line.split(" ", 1)[1]
        minute = datetime.datetime.fromtimestamp(t).strftime("%Y%m%d%H%M")
        if base is None or minute != base[1]:
            assert ln.startswith(_human_stamp(t) + " ")
            base = (t, minute)
        else:
            assert re.fullmatch(r"\[ *\+\d+\.\d{6}\]", ln.split("] ", 1)[0] + "]")
            assert ln.startswith(f"[{t - base[0]:+11.6f}] ")
    assert any(ln.startswith("[ +30.000000] ") for ln in human)
    assert sum(1 for ln in human if not ln.startswith("[ ")) == 2  # two minutes, two headers


def test_dmesg_delta_and_color(flux):
    flux.submit(RUN + "1s", "sleep", "inf")
    flux.advance("10s")
    flux.submit(RUN + "1s", "sleep", "inf")
    times = [datetime.datetime.strptime(ln.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
             .replace(tzinfo=datetime.timezone.utc).timestamp() for ln in lines(flux.out("dmesg"))]
    delta = lines(flux.out("dmesg", "-H", "-d"))
    assert len(delta) == len(times) and len(times) > 3
    minute = lambda t: datetime.datetime.fromtimestamp(t).strftime("%Y%m%d%H%M")  # noqa: E731
    for i in range(1, len(times)):
        if minute(times[i]) == minute(times[i - 1]):
            # -d: each line's offset is from the line before it
            assert delta[i].startswith(f"[{times[i] - times[i - 1]:+11.6f}] ")
    r = flux.fails("dmesg", "-d")
    assert r.stderr == "flux-lite dmesg: ERROR: --delta can only be used with --human\n"
    colored = lines(flux("dmesg", "-H", "--color=always").stdout)
    first = colored[0]
    assert first.startswith("\x1b[1m\x1b[32m[") and "]\x1b[0m \x1b[33mbroker.info[0]\x1b[0m: " in first
    assert first.endswith("\x1b[0m")
    debug = [ln for ln in colored[1:] if ".debug[0]" in ln][0]
    assert debug.startswith("\x1b[32m[") and "\x1b[0m: \x1b[34m" in debug
    assert "\x1b" not in flux.out("dmesg", "-H", "--color=never")
    assert "\x1b" not in flux.out("dmesg", "-H")  # auto: not a terminal


def test_dmesg_clear_still_works(flux):
    flux("dmesg", "-C")
    assert flux.out("dmesg") == ""


# -- run and submit --wait ----------------------------------------------------------------

JOB = "flux-lite job: "


def test_run_exit_codes(flux):
    r = flux("run", RUN + "0.1s", "true")
    assert (r.stdout, r.stderr) == ("", JOB + "No job output found\n")
    r = flux.fails("run", "--setattr=exec.test.wait_status=256", RUN + "0.1s", "false", code=1)
    assert r.stderr == JOB + "No job output found\n" + JOB + "task(s) exited with exit code 1\n"
    r = flux.fails("run", "--setattr=exec.test.wait_status=768", RUN + "0.1s", "sh", code=3)
    assert r.stderr == JOB + "No job output found\n" + JOB + "task(s) exited with exit code 3\n"
    r = flux.fails("run", "--setattr=exec.test.wait_status=9", RUN + "0.1s", "sh", code=137)
    assert r.stderr == JOB + "No job output found\n" + JOB + "job shell Killed\n"


def test_run_timeout_mock_and_alloc_failure(flux):
    r = flux.fails("run", "-t", "1s", RUN + "60s", "true", code=142)
    jobid = flux.out("job", "last").strip()
    assert lines(r.stderr) == [
        JOB + "No job output found",
        f"1.000s: job.exception {jobid} type=timeout severity=0 resource allocation expired",
        JOB + "job shell Alarm clock"]
    r = flux.fails("run", "--setattr=exec.test.mock_exception=run", RUN + "60s", "true", code=143)
    jobid = flux.out("job", "last").strip()
    assert lines(r.stderr) == [
        f"0.000s: job.exception {jobid} type=exec severity=0 mock run exception generated",
        JOB + "job shell Terminated",
        JOB + "No job output found"]
    r = flux.fails("run", "-N5", RUN + "1s", "true", code=1)
    jobid = flux.out("job", "last").strip()
    assert r.stderr == (f"0.000s: job.exception {jobid} type=alloc severity=0 unsatisfiable request: "
                        "need 5 exclusive node(s), only 4 eligible\n")


def test_run_canceled_while_running(flux):
    from flux_lite.job_manager import attach

    entries = [
        {"timestamp": 10.0, "name": "submit", "context": {}},
        {"timestamp": 10.02, "name": "start"},
        {"timestamp": 11.005, "name": "exception",
         "context": {"type": "cancel", "severity": 0, "note": ""}},
        {"timestamp": 11.005, "name": "finish", "context": {"status": 15}},
    ]
    out, code = attach.attach_report(entries, "f6opVqNo")
    assert code == 143
    assert out == [(attach.LOG, "No job output found"),
                   (attach.RAW, "1.005s: job.exception f6opVqNo type=cancel severity=0 "),
                   (attach.LOG, "job shell Terminated")]


def test_submit_wait(flux):
    r = flux("submit", "--wait", RUN + "0.2s", "sleep", "inf")
    assert r.stderr == ""
    r = flux.fails("submit", "--wait", "--setattr=exec.test.wait_status=256", RUN + "0.2s", "false")
    assert r.stderr == ""
    r = flux.fails("submit", "--wait", "-t", "1s", RUN + "10s", "true", code=142)
    assert r.stderr == "job.exception: type=timeout severity=0 resource allocation expired\n"
    assert flux("submit", "--wait-event=start", RUN + "0.5s", "sleep", "inf").stderr == ""
    assert flux("submit", "--wait-event=alloc", RUN + "0.1s", "sleep", "inf").stderr == ""
    assert flux("submit", "--wait-event=bogus", RUN + "0.1s", "sleep", "inf").stderr == ""
    r = flux.fails("submit", "--cc=1-2", "--wait", "--setattr=exec.test.wait_status=256", RUN + "0.1s",
                   "false")
    assert len(lines(r.stdout)) == 2
    r = flux("submit", "--quiet", "--wait", RUN + "0.1s", "sleep", "inf")
    assert (r.stdout, r.stderr) == ("", "")
    r = flux("submit", "--watch", RUN + "0.1s", "sleep", "inf")
    assert len(lines(r.stdout)) == 1


def test_submit_wait_event_reports_fatal_exceptions(flux):
    """As flux-core's JobWatcher: the exception on stderr; exit 1 if the job never
    started, else the finish status's code (142 a timeout, 143 killed)."""
    r = flux.fails("submit", "--wait-event=start", "-N5", "true", code=1)
    assert (len(lines(r.stdout)), r.stderr) == (1, "job.exception: type=alloc severity=0 unsatisfiable request: "
                                                   "need 5 exclusive node(s), only 4 eligible\n")
    r = flux.fails("submit", "--wait-event=clean", "-t", "1s", RUN + "10s", "true", code=142)
    assert r.stderr == "job.exception: type=timeout severity=0 resource allocation expired\n"
    r = flux.fails("submit", "--wait-event=finish", "--setattr=exec.test.mock_exception=run", RUN + "10s", "true",
                   code=143)
    assert r.stderr == "job.exception: type=exec severity=0 mock run exception generated\n"


def test_submit_wait_event_canceled_before_start(flux):
    from flux_lite.job_manager import attach

    entries = [{"timestamp": 1.0, "name": "submit", "context": {}},
               {"timestamp": 3.0, "name": "exception", "context": {"type": "cancel", "severity": 0,
                                                                    "note": ""}},
               {"timestamp": 3.0, "name": "clean"}]
    assert attach.watch_report(entries) == ([(attach.RAW, "job.exception: type=cancel severity=0")], 1)


def test_dmesg_follow(flux, monkeypatch):
    """-f prints the backlog, then what is logged, until interrupted; -n skips
    the backlog. (The poll's sleep is where the interrupt arrives.)"""
    import time

    flux.submit(RUN + "1s", "sleep", "inf")
    full = flux.out("dmesg")
    calls = []

    def interrupt(seconds):
        calls.append(seconds)
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupt)
    r = flux("dmesg", "-f")
    assert r.stdout == full and calls == [0.2]
    r = flux("dmesg", "-f", "-n")
    assert r.stdout == ""


def test_pgrep_pkill_queue_filter(flux_factory):
    flux = flux_factory("--test-size=2", config="queues:\n  batch: {}\n  debug: {}\n")
    debug = flux.submit("-q", "debug", RUN + "1s", "sleep", "inf")
    batch = flux.submit("-q", "batch", RUN + "1s", "sleep", "inf")
    assert flux.out("pgrep", "-q", "debug", ".") == f"{debug}\n"
    assert lines(flux.out("pgrep", "-q", "debug,batch", ".")) == sorted([debug, batch], key=lines(
        flux.out("pgrep", ".")).index)
    assert flux("pkill", "-q", "debug", ".").stderr == "flux-lite pkill: INFO: Canceled 1 job\n"
    assert flux.out("jobs", "-a", "-no", "{id.f58} {status}") == f"{batch} SCHED\n{debug} CANCELED\n"


def test_flux_job_control_script_runs_unchanged(tmp_path):
    """tests/flux_scripts/jobctl.sh, a Flux-style script of the job-control
    commands, run as `flux-lite start --test-size=4 ./jobctl.sh`: Flux's words."""
    import os
    import pathlib
    import subprocess
    import sys

    scripts = pathlib.Path(__file__).resolve().parent / "flux_scripts"
    script = tmp_path / "jobctl.sh"
    script.write_text((scripts / "jobctl.sh").read_text(encoding="utf-8"), encoding="utf-8")
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLUX_LITE_STATE_DIR", "FLUX_F58_FORCE_ASCII", "COLUMNS")}
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8")
    out = subprocess.run([sys.executable, "-m", "flux_lite", "start", "--test-size=4", "--test-cores=2",
                          "--clock=virtual", "./jobctl.sh"], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert out.stdout == (scripts / "jobctl.expected").read_text(encoding="utf-8")
    assert out.returncode == 0
