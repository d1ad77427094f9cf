"""Jobs that behave like the commands they name (flux_lite/job_manager/emulate.py):
output in the job's output eventlog (RFC 24), exit codes in the finish
status, printed by run, job attach and submit --watch, on the virtual clock."""

import json

import pytest

from flux_lite.job_manager import emulate

T0 = 1767225600.0


def output_events(flux, jobid):
    text = flux.out("job", "eventlog", "-f", "json", "-p", "guest.output", jobid)
    assert flux.out("job", "eventlog", "-f", "json", "-p", "output", jobid) == text
    return [json.loads(line) for line in text.splitlines()]


def test_run_hostname_prints_each_node_name(flux):
    r = flux("run", "-N2", "hostname")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "node0\nnode1\n", "")
    r = flux("run", "-N2", "-n4", "-l", "hostname")
    assert r.stdout == "0: node0\n1: node0\n2: node1\n3: node1\n"


def test_output_eventlog_is_rfc24(flux):
    flux("run", "-N2", "hostname")
    jobid = flux.out("job", "last").strip()
    assert output_events(flux, jobid) == [
        {"timestamp": T0, "name": "header", "context": {
            "version": 1, "encoding": {"stdout": "UTF-8", "stderr": "UTF-8"},
            "count": {"stdout": 2, "stderr": 2}, "options": {}}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdout", "rank": "0", "data": "node0\n"}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdout", "rank": "1", "data": "node1\n"}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdout", "rank": "0", "eof": True}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stderr", "rank": "0", "eof": True}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdout", "rank": "1", "eof": True}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stderr", "rank": "1", "eof": True}},
    ]
    # the job itself: started and finished at once, status 0
    assert flux.eventlog(jobid)[5:] == ["start", "finish", "release", "free", "clean"]
    assert flux.events(jobid)[6]["context"] == {"status": 0}


def test_exit_codes_flow_into_status_and_run(flux):
    r = flux.fails("run", "false", code=1)
    assert (r.stdout, r.stderr) == ("", "flux-lite job: task(s) exited with exit code 1\n")
    r = flux.fails("run", "sh", "-c", "exit 3", code=3)
    assert r.stderr == "flux-lite job: task(s) exited with exit code 3\n"
    jobid = flux.out("job", "last").strip()
    assert [e["context"] for e in flux.events(jobid) if e["name"] == "finish"] == [{"status": 768}]
    assert flux.out("jobs", "-no", "{result} {returncode}", jobid) == "FAILED 3\n"
    flux.fails("job", "status", jobid, code=3)
    assert flux.fails("run", "/bin/false", code=1).stdout == ""
    r = flux("run", "true")
    assert (r.stdout, r.stderr) == ("", "")


def test_waitable_job_wait_reports_the_exit_code(flux):
    jobid = flux.submit("--flags=waitable", "sh", "-c", "echo hi; exit 2")
    r = flux.fails("job", "wait", jobid, code=1)
    assert r.stderr.endswith(": task(s) exited with exit code 2\n")


def test_sleep_takes_its_time_and_completes(flux):
    jobid = flux.submit("sleep", "5")
    flux.advance("4s")
    assert flux.state(jobid) == "RUN"
    flux.advance("1s")
    assert flux.out("jobs", "-no", "{state} {result} {runtime}", jobid) == "INACTIVE COMPLETED 5.0\n"
    # coreutils forms: suffixes, sums, floats
    jobid = flux.submit("sleep", "1m", "0.5")
    flux.advance("60s")
    assert flux.state(jobid) == "RUN"
    flux.advance("0.5s")
    assert flux.state(jobid) == "INACTIVE"
    r = flux.fails("run", "sleep", "1ms", code=1)
    assert r.stderr == ("sleep: invalid time interval '1ms'\nTry 'sleep --help' for more information.\n"
                        "flux-lite job: task(s) exited with exit code 1\n")


def test_canceled_sleep_inf_dies_of_sigterm(flux):
    jobid = flux.submit("sleep", "inf")
    flux.advance("1h")
    assert flux.state(jobid) == "RUN"
    flux("cancel", jobid)
    finish = [e for e in flux.events(jobid) if e["name"] == "finish"]
    assert finish == [{"timestamp": T0 + 3600, "name": "finish", "context": {"status": 143 << 8}}]
    assert flux.out("jobs", "-no", "{result} {returncode}", jobid) == "CANCELED 143\n"
    r = flux.fails("job", "attach", jobid, code=143)
    assert r.stderr == (f"3600.000s: job.exception {jobid} type=cancel severity=0 \n"
                        "flux-lite job: task(s) Terminated\n")
    # each task's end of file, at the kill
    assert [e["context"] for e in output_events(flux, jobid)[1:]] == [
        {"stream": "stdout", "rank": "0", "eof": True}, {"stream": "stderr", "rank": "0", "eof": True}]


def test_time_limit_ends_sleep_with_sigalrm(flux):
    r = flux.fails("run", "-t", "5s", "sleep", "10", code=142)
    assert r.stderr.endswith("5.000s: job.exception " + flux.out("job", "last").strip()
                             + " type=timeout severity=0 resource allocation expired\n"
                             "flux-lite job: task(s) Alarm clock\n")


def test_test_mode_takes_precedence(flux):
    jobid = flux.submit("-S", "exec.test.run_duration=10s", "hostname")
    flux.advance("10s")
    assert flux.state(jobid) == "INACTIVE"
    r = flux.fails("job", "eventlog", "-p", "guest.output", jobid)
    assert r.stderr.endswith("guest.output: No such file or directory\n")
    r = flux("job", "attach", jobid)
    assert (r.stdout, r.stderr) == ("", "flux-lite job: No job output found\n")


def test_output_of_scripts_in_time(flux):
    r = flux("run", "sh", "-c", "echo a; sleep 2; printenv FLUX_TASK_RANK")
    assert r.stdout == "a\n0\n"
    jobid = flux.out("job", "last").strip()
    data = [(e["timestamp"] - T0, e["context"].get("data")) for e in output_events(flux, jobid)[1:]]
    assert data == [(0.0, "a\n"), (2.0, "0\n"), (2.0, None), (2.0, None)]
    r = flux("run", "-n2", "-l", "sh", "-c", "echo task $FLUX_TASK_RANK of $FLUX_JOB_SIZE && false || echo x")
    assert r.stdout == "0: task 0 of 2\n0: x\n1: task 1 of 2\n1: x\n"


def test_echo_printenv_pwd_id_getattr(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert flux.out("run", "echo", "-n", "a", "b") == "a b"
    assert flux.out("run", "echo", "-e", "a\\tb") == "a\tb\n"
    assert flux.out("run", "pwd") == f"{tmp_path}\n"
    jobid_line = flux.out("run", "printenv", "FLUX_JOB_ID")
    assert jobid_line == flux.out("job", "last")
    assert flux.fails("run", "printenv", "NOT_SET", code=1).stdout == ""
    assert flux.out("run", "-N4", "-l", "flux", "getattr", "rank") == "0: 0\n1: 1\n2: 2\n3: 3\n"
    assert flux.out("run", "id").startswith("uid=")
    assert flux.out("run", "env", "A=1", "printenv", "A") == "1\n"


def test_submit_watch_prints_output(flux):
    r = flux("submit", "--watch", "-n2", "echo", "hi")
    jobid = r.stdout.splitlines()[0]
    assert r.stdout == f"{jobid}\nhi\nhi\n"
    r = flux("submit", "--watch", "-l", "--cc=1-2", "echo", "{cc}")
    ids = r.stdout.splitlines()[:2]
    assert r.stdout.splitlines()[2:] == [f"{ids[0]}: 1", f"{ids[1]}: 2"]
    flux.fails("submit", "--watch", "sh", "-c", "exit 4", code=4)


def test_job_attach_unknown_job(flux):
    r = flux.fails("job", "attach", "f4ER")
    assert r.stderr == "flux-lite job: ERROR: Failed to attach to f4ER: No such job\n"


def test_not_emulated_commands_run_as_before(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simulate").write_text("#!/usr/bin/python3\nprint(1)\n")  # not a shell script
    jobid = flux.submit("-t", "1m", "./simulate")
    flux.advance("59s")
    assert flux.state(jobid) == "RUN"
    # a script that does more than the table knows is not emulated either
    jobid = flux.submit("-t", "1m", "sh", "-c", "echo $(hostname) | tee out")
    flux.advance("30s")
    assert flux.state(jobid) == "RUN"


def test_rebuilt_timers_keep_an_emulated_job_on_time(flux):
    jobid = flux.submit("sh", "-c", "sleep 10; echo done")
    flux.advance("3s")
    assert flux.out("fsck", "--rebuild") == "fsck: ok (derived tables rebuilt)\n"
    flux.advance("7s")
    assert flux.out("jobs", "-no", "{state} {result}", jobid) == "INACTIVE COMPLETED\n"
    assert flux.out("job", "attach", jobid) == "done\n"


@pytest.mark.parametrize("arg, seconds", [("5", 5.0), ("0.5", 0.5), ("1m", 60.0), ("2h", 7200.0), ("1d", 86400.0),
                                          ("inf", float("inf")), ("infinity", float("inf")), ("1e2", 100.0),
                                          ("x", None), ("-1", None), ("nan", None), ("1ms", None), ("", None)])
def test_sleep_intervals_as_coreutils(arg, seconds):
    assert emulate.sleep_interval(arg) == seconds


def test_task_layout_follows_the_shell():
    R = {"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}],
                                     "nodelist": ["n[0-1]"], "starttime": 0.0, "expiration": 0.0}}

    def js(ntasks, slot_size=1):
        return {"version": 1, "resources": [{"type": "slot", "count": ntasks, "label": "task",
                                             "with": [{"type": "core", "count": slot_size}]}],
                "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
                "attributes": {"system": {"duration": 0}}}

    assert [(t.rank, t.broker_rank, t.hostname) for t in emulate.task_layout(js(3), R)] == [
        (0, 0, "n0"), (1, 0, "n0"), (2, 1, "n1")]
    assert [t.broker_rank for t in emulate.task_layout(js(2), R)] == [0, 1]
    # more tasks than cores: the shell oversubscribes, round-robin again
    assert [t.broker_rank for t in emulate.task_layout(js(6), R)] == [0, 0, 0, 1, 1, 1]


def test_output_files_with_templates(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = flux.fails("run", "-N2", "--output=out.{{id}}", "sh", "-c", "hostname; printenv NOT_SET", code=1)
    jobid = flux.out("job", "last").strip()
    assert r.stdout == ""
    assert r.stderr == (f"[0-1]: stdout redirected to out.{jobid}\n[0-1]: stderr redirected to out.{jobid}\n"
                        "flux-lite job: task(s) exited with exit code 1\n")
    assert (tmp_path / f"out.{jobid}").read_text() == "node0\nnode1\n"
    # per-task files, labels, stderr apart; the eventlog says where they went
    flux("run", "-n2", "-l", "--output=o-{{taskid}}.txt", "--error=e.txt", "sh", "-c", "echo hi; sleep 1; echo x")
    assert (tmp_path / "o-0.txt").read_text() == "0: hi\n0: x\n"
    assert (tmp_path / "o-1.txt").read_text() == "1: hi\n1: x\n"
    assert (tmp_path / "e.txt").read_text() == ""
    jobid = flux.out("job", "last").strip()
    assert [(e["name"], e["context"]) for e in output_events(flux, jobid)[1:]] == [
        ("redirect", {"stream": "stdout", "rank": "[0-1]", "path": "o-{{taskid}}.txt"}),
        ("redirect", {"stream": "stderr", "rank": "[0-1]", "path": "e.txt"})]
    js = json.loads(flux.out("submit", "--dry-run", "-l", "--output=foo.{{id}}", "hostname"))
    assert js["attributes"]["system"]["shell"]["options"].pop("rlimit") and js["attributes"]["system"]["shell"] == {
        "options": {"output": {"stdout": {"type": "file", "path": "foo.{{id}}", "label": True}}}}


def test_job_kill_signals_the_tasks(flux):
    a = flux.submit("sleep", "inf")
    test_mode = flux.submit("-S", "exec.test.run_duration=0s", "true")
    flux.advance("10s")
    flux("job", "kill", a)
    assert flux.eventlog(a)[-5:] == ["start", "finish", "release", "free", "clean"]
    assert flux.out("jobs", "-no", "{result} {returncode}", a) == "FAILED 143\n"
    r = flux.fails("job", "attach", a, code=143)
    assert r.stderr == "flux-lite job: task(s) Terminated\n"
    # no shell to hear it in the test exec mode; a signal that ends no process
    flux("job", "kill", "-s", "SIGKILL", test_mode)
    b = flux.submit("sleep", "10")
    flux("job", "kill", "--signal=CONT", b)
    assert [flux.state(test_mode), flux.state(b)] == ["RUN", "RUN"]
    flux("job", "kill", "-s", "9", b)
    assert flux.out("jobs", "-no", "{returncode}", b) == "137\n"
    # Flux's words
    r = flux.fails("job", "kill", a, test_mode, "f1111")
    assert r.stderr == f"flux-lite job: kill {a}: job is inactive\nflux-lite job: kill f1111: unknown job id\n"
    r = flux.fails("job", "kill", "-s", "FOO", test_mode)
    assert r.stderr == "flux-lite job: ERROR: kill: Invalid signal FOO\n"
    # 0 is refused before any request; a number too high by the job manager
    assert flux.fails("job", "kill", "-s", "0", test_mode).stderr == "flux-lite job: ERROR: kill: Invalid signal 0\n"
    r = flux.fails("job", "kill", "-s", "99", test_mode)
    assert r.stderr == f"flux-lite job: kill {test_mode}: Invalid signal number\n"
    assert flux.fails("job", "raiseall", "--states=", "test").stderr == \
        "flux-lite job: ERROR: no states specified\n"
    pending = flux.submit("--urgency=hold", "true")
    r = flux.fails("job", "kill", pending)
    assert r.stderr == f"flux-lite job: kill {pending}: job is not running\n"
    r = flux.fails("job", "kill", test_mode, env={"FLUX_HANDLE_USERID": "1234"})
    assert r.stderr == f"flux-lite job: kill {test_mode}: guests may only send signals to their own jobs\n"


def test_real_clock_run_says_once_when_a_job_cannot_end_by_itself(tmp_path, monkeypatch):
    from conftest import Flux

    from flux_lite import instance

    wall = [1796100000.0]
    monkeypatch.setattr(instance, "wall_time", lambda: wall[0])
    monkeypatch.setattr(instance, "wall_sleep", lambda s: wall.__setitem__(0, wall[0] + 20))  # (nothing sleeps)
    flux = Flux(tmp_path / "state")
    flux("start", "--test-size=2", "--test-cores=2", "--clock=real")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simulate").write_text("#!/usr/bin/python3\n")  # (here, but not a command flux-lite emulates)
    r = flux.fails("run", "-t", "1m", "./simulate", code=142)
    jobid = flux.out("job", "last").strip()
    assert r.stderr.splitlines()[0] == (
        f"flux-lite run: {jobid}: ./simulate is not a command flux-lite emulates and the job has no run duration "
        "(exec.test.run_duration, exec.default-run-duration): it runs until its time limit (1m) or until canceled")
    assert r.stderr.count("is not a command") == 1
    # an emulated command, or one given a run duration, is not a worry
    r = flux("run", "hostname")
    assert (r.stdout, r.stderr) == ("node0\n", "")
    r = flux("run", "-S", "exec.test.run_duration=1s", "./simulate")
    assert r.stderr == "flux-lite job: No job output found\n"


def test_job_killall(flux):
    ids = flux.out("submit", "--cc=1-3", "sleep", "inf").split()
    theirs = flux.submit("sleep", "inf", env={"FLUX_HANDLE_USERID": "1234"})
    assert flux("job", "killall").stderr == "flux-lite job: Command matched 3 jobs (-f to confirm)\n"
    assert flux("job", "killall", "-u", "all").stderr == "flux-lite job: Command matched 4 jobs (-f to confirm)\n"
    assert flux("job", "killall", "-f").stderr == "flux-lite job: Terminated 3 jobs (0 errors)\n"
    assert {flux.out("jobs", "-no", "{returncode}", j) for j in ids} == {"143\n"}
    assert flux.state(theirs) == "RUN"
    assert flux("job", "killall").stderr == "flux-lite job: Command matched 0 jobs\n"
    r = flux.fails("job", "killall", "-u", "all", env={"FLUX_HANDLE_USERID": "1234"})
    assert r.stderr == "flux-lite job: ERROR: killall: guests can only kill their own jobs\n"
    r = flux("job", "killall", "-f", "-s", "SIGKILL", env={"FLUX_HANDLE_USERID": "1234"})
    assert r.stderr == "flux-lite job: Killed 1 jobs (0 errors)\n"
    assert flux.out("jobs", "-A", "-no", "{returncode}", theirs) == "137\n"


def test_submit_wait_event_on_the_exec_eventlog(flux):
    # flux submit --wait-event=exec.NAME waits for NAME in the job's exec eventlog
    r = flux("submit", "--wait-event=exec.shell.init", "sleep", "inf")
    jobid = r.stdout.strip()
    assert flux.state(jobid) == "RUN"
    assert "shell.init" in flux.out("job", "eventlog", "-p", "exec", jobid)
    r = flux("submit", "--wait-event=exec.shell.start", "-N2", "hostname")
    assert flux.state(r.stdout.strip()) in ("RUN", "INACTIVE")


def test_a_command_this_machine_lacks_fails_to_start(flux, tmp_path, monkeypatch):
    # as Flux's job shell on this machine: exec fails, the shell exits 127
    monkeypatch.chdir(tmp_path)
    r = flux.fails("run", "-n2", "nosuchcommand", code=127)
    jobid = flux.out("job", "last").strip()
    note = "task 0 (host node0): start failed: nosuchcommand: No such file or directory"
    assert r.stderr == (f"0.000s: flux-shell[0]: FATAL: {note}\n"
                        f"0.000s: job.exception {jobid} type=exec severity=0 {note}\n"
                        "flux-lite job: task(s) exited with exit code 127\n")
    assert flux.eventlog(jobid)[-6:] == ["start", "exception", "finish", "release", "free", "clean"]
    exc = flux.events(jobid)[-5]["context"]
    assert list(exc) == ["type", "severity", "note", "userid"] and exc["note"] == note
    assert [line.split()[1] for line in flux.out("job", "eventlog", "-p", "exec", jobid).splitlines()] == [
        "init", "starting", "shell.init", "shell-exit", "complete", "done"]
    assert flux.out("jobs", "-no", "{result} {returncode}", jobid) == "FAILED 127\n"
    flux.fails("run", "./missing.sh", code=127)
    # a configured default run duration runs it for that long instead (a rehearsal of real applications)
    cfg = tmp_path / "exec.toml"
    cfg.write_text('[exec]\ndefault-run-duration = "1m"\n')
    flux("config", "load", str(cfg))
    jobid = flux.submit("lammps")
    flux.advance("30s")
    assert flux.state(jobid) == "RUN"


def test_shell_scripts_run_as_their_commands(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "sleepinf.sh"
    script.write_text('#!/bin/sh\necho "job started"\nsleep inf\n')
    jobid = flux.submit("./sleepinf.sh")
    assert "job started" in flux.out("job", "wait-event", "-W", "-p", "guest.output", jobid, "data")
    flux("job", "kill", jobid)
    assert flux.out("jobs", "-no", "{result} {returncode}", jobid) == "FAILED 143\n"
    (tmp_path / "rank.sh").write_text("#!/bin/bash\necho $FLUX_TASK_RANK\nexit 3\n")
    r = flux.fails("run", "-n2", "./rank.sh", code=3)
    assert r.stdout == "0\n1\n"


def test_cat_reads_run_stdin_or_the_input_file(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # flux run forwards its standard input to the tasks (RFC 24 input eventlog)
    r = flux("run", "cat", input="hello\n")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "hello\n", "")
    jobid = flux.out("job", "last").strip()
    key = flux.out("job", "id", "--to=kvs", jobid).strip() + ".guest.input"
    assert [json.loads(line) for line in flux.out("kvs", "get", key).splitlines() if line] == [
        {"timestamp": T0, "name": "header", "context": {
            "version": 1, "encoding": {"stdin": "UTF-8"}, "count": {"stdin": 1}, "options": {}}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdin", "rank": "all", "data": "hello\n"}},
        {"timestamp": T0, "name": "data", "context": {"stream": "stdin", "rank": "all", "eof": True}},
    ]
    # --input=IDSET: only those tasks get it
    r = flux("run", "-n2", "--input=1", "-l", "cat", input="hi\n")
    assert (r.exit_code, r.stdout) == (0, "1: hi\n")
    # --input=FILE, relative to the job's directory; run then reads nothing of its own
    (tmp_path / "in.txt").write_text("a\nb\n")
    r = flux("run", "-n2", "-l", "--input=in.txt", "cat", input="ignored\n")
    assert (r.exit_code, r.stdout) == (0, "0: a\n0: b\n1: a\n1: b\n")
    # a submitted job reads nothing (no one attached to give it input)
    job = flux.submit("cat")
    assert flux("job", "attach", job).stdout == ""
    # cat of files is not emulated
    assert emulate.plan({"tasks": [{"command": ["cat", "x"]}]}, None, 1, 0) is None


def test_a_bare_exit_fails_to_start_as_in_flux(flux):
    """`exit` is a shell builtin, no program: Flux's job shell cannot start it
    (a real 0.88's outputs; `sh -c 'exit 3'` is how a job exits 3)."""
    r = flux("run", "exit", "3", check=False)
    jobid = flux.out("job", "last").strip()
    note = "task 0 (host node0): start failed: exit: No such file or directory"
    assert (r.exit_code, r.stdout, r.stderr) == (127, "", (
        f"0.000s: flux-shell[0]: FATAL: {note}\n"
        f"0.000s: job.exception {jobid} type=exec severity=0 {note}\n"
        "flux-lite job: task(s) exited with exit code 127\n"))
    jobid = flux.out("job", "last").strip()
    assert [line.split(" ", 1)[1] for line in flux.out("job", "eventlog", jobid).splitlines()][5:] == [
        "start", f'exception type="exec" severity=0 note="{note}" userid=0', "finish status=32512",
        'release ranks="all" final=true', "free", "clean"]
    assert [(e["name"], e["context"]) for e in output_events(flux, jobid)][1:] == [
        ("log", {"rank": 0, "level": 0, "message": note, "file": "shell.c", "line": 2036})]
    assert flux("run", "sh", "-c", "exit 3", check=False).exit_code == 3


def test_flux_job_timeleft_in_a_task(flux):
    # the task measures its time left a moment after the job starts, as in Flux
    assert flux.out("run", "flux", "job", "timeleft") == "4294967295\n"
    assert flux.out("run", "flux", "job", "timeleft", "-H") == "infinity\n"
    assert flux.out("run", "-t", "1m", "flux", "job", "timeleft") == "59\n"
    assert flux.out("run", "-t", "1m", "flux", "job", "timeleft", "-H") == "59.999s\n"
    assert flux.out("run", "-n2", "-t", "2h", "flux", "job", "timeleft") == "7199\n7199\n"
    assert flux.out("run", "-t", "1m", "sh", "-c", "sleep 10; flux job timeleft") == "49\n"


def test_job_raise_takes_several_jobs_then_the_note(flux):
    ids = flux.out("submit", "--cc=1-3", "sleep", "600").split()
    flux("job", "raise", *ids, "raise", "multiple", "jobs")
    for jobid in ids:
        exc = [e for e in flux.events(jobid) if e["name"] == "exception"]
        assert exc[0]["context"]["note"] == "raise multiple jobs" and exc[0]["context"]["type"] == "cancel"
    r = flux.fails("job", "raise", ids[0], "f1111")
    assert r.stderr == f"flux-lite job: raise {ids[0]}: job is inactive\nflux-lite job: raise f1111: unknown job id\n"
    r = flux.fails("job", "raise", "-m", "x", ids[0], "note")
    assert r.stderr == "flux-lite job: ERROR: Do not set note on command line and with --message\n"
