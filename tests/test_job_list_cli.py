"""flux job list / list-inactive / list-ids / raiseall / timeleft and
wait-event -p: job-list's records and flux-job's words."""

import json

from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.formats.jobid import decode

T0 = 1767225600.0


def as_flux(flux, *args, env=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def records(text):
    return [json.loads(line) for line in text.splitlines()]


def scenario(flux):
    """A job running with a 10s limit, a pending one (waits for the first), a held one."""
    run = flux.submit("-N2", "-t", "10s", "sleep", "100")
    pend = flux.submit("--job-name=pend", "-N4", "true")
    held = flux.submit("--urgency=hold", "hostname")
    flux.advance("1s")
    return run, pend, held


def test_job_list_prints_job_list_records_in_jansson_form(flux, tmp_path):
    run, pend, held = scenario(flux)
    cwd = flux.out("job", "info", run, "jobspec") and json.loads(flux.out("job", "info", run, "jobspec"))[
        "attributes"]["system"]["cwd"]
    out = flux.out("job", "list")
    # pending by priority (the held job last), then running; json_dumps(o, 0)'s spacing
    assert out.splitlines()[2] == (
        f'{{"id": {decode(run)}, "userid": 0, "urgency": 16, "priority": 16, "t_submit": 1767225600.0, '
        '"t_depend": 1767225600.0, "t_priority": 1767225600.0, "t_sched": 1767225600.0, '
        f'"t_run": 1767225600.0, "state": 16, "name": "sleep", "cwd": {json.dumps(cwd)}, "ntasks": 2, '
        '"ncores": 4, "duration": 10.0, "nnodes": 2, "ranks": "[0-1]", "nodelist": "node[0-1]", '
        '"expiration": 1767225610.0, "annotations": {"sched": {"resource_summary": "rank[0-1]/core[0-1]"}}}')
    recs = records(out)
    assert [r["id"] for r in recs] == [decode(pend), decode(held), decode(run)]
    assert recs[1] == {"id": decode(held), "userid": 0, "urgency": 0, "priority": 0, "t_submit": T0,
                       "t_depend": T0, "t_priority": T0, "t_sched": T0, "state": 8, "name": "hostname",
                       "cwd": cwd, "ntasks": 1, "ncores": 1, "duration": 0.0}
    # -s: states (any case, short forms); running = run|cleanup
    assert [r["id"] for r in records(flux.out("job", "list", "-s", "RUN"))] == [decode(run)]
    assert [r["id"] for r in records(flux.out("job", "list", "-s", "pd"))] == [decode(pend), decode(held)]
    assert [r["id"] for r in records(flux.out("job", "list", "-s", "depend,priority", "-s", "sched"))] == [
        decode(pend), decode(held)]
    assert flux.out("job", "list", "-s", "cleanup") == ""
    assert [r["id"] for r in records(flux.out("job", "list", "-c", "1"))] == [decode(pend)]
    assert flux.out("job", "list", "-u", "4242") == ""
    assert as_flux(flux, "job", "list", "-s", "foo") == (1, "", "flux-job: error parsing --states: foo is unknown\n")
    assert as_flux(flux, "job", "list", "-c", "x") == (1, "", "list: Option 'count' requires an integer argument\n")
    assert as_flux(flux, "job", "list", "-c", "-1") == (
        1, "", "flux-job: flux job-list.list: invalid payload: max_entries < 0 not allowed\n")
    assert as_flux(flux, "job", "list", "-u", "nosuchuser") == (1, "", "flux-job: unknown user nosuchuser\n")
    assert as_flux(flux, "job", "list", "extra") == (1, "", "Usage: flux-job list [OPTIONS]\n")


def test_job_list_inactive_records_results_and_exceptions(flux):
    run, pend, held = scenario(flux)
    flux.advance("20s")  # run times out at +10s, then pend runs and completes
    assert flux.out("job", "list") == flux.out("job", "list", "-s", "sched")
    recs = records(flux.out("job", "list", "-a"))
    assert [r["id"] for r in recs] == [decode(held), decode(pend), decode(run)]
    timed_out = recs[2]
    assert {k: timed_out[k] for k in ("t_cleanup", "t_inactive", "state", "success", "exception_occurred",
                                      "exception_type", "exception_severity", "exception_note", "result",
                                      "expiration", "waitstatus")} == {
        "t_cleanup": T0 + 10, "t_inactive": T0 + 10, "state": 64, "success": False,
        "exception_occurred": True, "exception_type": "timeout", "exception_severity": 0,
        "exception_note": "resource allocation expired", "result": 8, "expiration": T0 + 10,
        "waitstatus": 36352}
    assert list(timed_out)[-4:] == ["result", "expiration", "annotations", "waitstatus"]
    done = recs[1]
    assert (done["success"], done["exception_occurred"], done["result"], done["waitstatus"]) == (True, False, 1, 0)
    assert "exception_type" not in done
    # raiseall: a dry run first, then the exception on every active job of the caller
    assert as_flux(flux, "job", "raiseall", "-s", "0", "cancel", "gone") == (
        0, "", "flux-job: Command matched 1 jobs (-f to confirm)\n")
    assert as_flux(flux, "job", "raiseall", "-f", "-s", "0", "cancel", "gone") == (
        0, "", "flux-job: Raised exception on 1 jobs (0 errors)\n")
    assert as_flux(flux, "job", "raiseall", "-f", "cancel") == (0, "", "flux-job: Command matched 0 jobs\n")
    canceled = records(flux.out("job", "list-inactive", "-c", "1"))[0]
    assert canceled["id"] == decode(held)
    assert {k: canceled[k] for k in ("exception_type", "exception_note", "result")} == {
        "exception_type": "cancel", "exception_note": "gone", "result": 4}
    assert "t_run" not in canceled and "ranks" not in canceled and "expiration" not in canceled
    # every user's, newest first; --since keeps those that ended after T
    assert [r["id"] for r in records(flux.out("job", "list-inactive"))] == [decode(held), decode(pend), decode(run)]
    assert [r["id"] for r in records(flux.out("job", "list-inactive", "--since", str(T0 + 15)))] == [decode(held)]
    assert as_flux(flux, "job", "list-inactive", "-s", "soon") == (
        1, "", "list-inactive: Option 'since' requires a floating point argument\n")


def test_raiseall_options_and_errors(flux):
    a = flux.submit("sleep", "100")
    b = flux.submit("--urgency=hold", "sleep", "100")
    # severity 7 (the default) is a note: the jobs go on
    assert as_flux(flux, "job", "raiseall", "-S", "sched", "-f", "note", "hello", "there") == (
        0, "", "flux-job: Raised exception on 1 jobs (0 errors)\n")
    exc = [e for e in flux.events(b) if e["name"] == "exception"]
    assert exc == [{"timestamp": T0, "name": "exception",
                    "context": {"type": "note", "severity": 7, "note": "hello there", "userid": 0}}]
    assert flux.state(a) == "RUN" and flux.state(b) == "SCHED"
    assert as_flux(flux, "job", "raiseall", "-S", "inactive", "x") == (
        1, "", "flux-job: Exceptions cannot be raised on inactive jobs\n")
    assert as_flux(flux, "job", "raiseall", "-s", "8", "-f", "x") == (
        1, "", "flux-job: raiseall: invalid exception severity\n")
    assert as_flux(flux, "job", "raiseall", "-f", "a=b") == (1, "", "flux-job: raiseall: invalid exception type\n")
    assert as_flux(flux, "job", "raiseall") == (1, "", "Usage: flux-job raiseall OPTIONS type [message ...]\n")
    # a guest may not target everyone's jobs
    guest = {"FLUX_HANDLE_USERID": "4242", "FLUX_HANDLE_ROLEMASK": "2"}
    assert as_flux(flux, "job", "raiseall", "-u", "all", "cancel", env=guest) == (
        1, "", "flux-job: raiseall: guests can only raise exceptions on their own jobs\n")
    assert as_flux(flux, "job", "raiseall", "cancel", env=guest) == (0, "", "flux-job: Command matched 0 jobs\n")


def test_list_ids_waits_for_the_state(flux):
    run, pend, held = scenario(flux)
    assert [r["id"] for r in records(flux.out("job", "list-ids", held, run))] == [decode(held), decode(run)]
    # pend runs once run's limit expires (+10s): the clock advances to it
    rec = records(flux.out("job", "list-ids", "--wait-state=run", pend))[0]
    assert rec["id"] == decode(pend) and rec["t_run"] == T0 + 10
    assert flux.now() == T0 + 10
    # an inactive job is printed whatever the state asked for
    assert records(flux.out("job", "list-ids", "-W", "sched", run))[0]["state"] == 64
    assert as_flux(flux, "job", "list-ids", "-W", "foo", run) == (1, "", "flux-job: invalid job state specified\n")
    assert as_flux(flux, "job", "list-ids", "-W", "new", run) == (
        1, "", "flux-job: flux job-list.list-id: invalid payload: invalid state specified\n")
    assert as_flux(flux, "job", "list-ids") == (1, "", "Usage: flux-job list-ids [OPTIONS] ID [ID ...]\n")
    code, out, err = as_flux(flux, "job", "list-ids", run, "1234567890")
    assert (code, [r["id"] for r in records(out)], err) == (
        1, [decode(run)], "flux-job: flux job-list.list-d: No such file or directory\n")
    assert as_flux(flux, "job", "list-ids", "bad!")[2] == 'flux-job: error parsing jobid: "bad!"\n'
    # a held job never runs: said, not waited for forever
    code, out, err = as_flux(flux, "job", "list-ids", "-W", "run", held)
    assert (code, out) == (1, "") and "cannot reach the state under the virtual clock" in err


def test_timeleft_of_a_job_the_enclosing_job_and_the_instance(flux):
    assert as_flux(flux, "job", "timeleft") == (0, "4294967295\n", "")
    assert as_flux(flux, "job", "timeleft", "-H") == (0, "infinity\n", "")
    job = flux.submit("-t", "1m", "sleep", "100")
    flux.advance("500ms")
    assert as_flux(flux, "job", "timeleft", job) == (0, "59\n", "")
    assert as_flux(flux, "job", "timeleft", "-H", job) == (0, "59.5s\n", "")
    # inside a job: FLUX_JOB_ID names it
    assert as_flux(flux, "job", "timeleft", env={"FLUX_JOB_ID": job}) == (0, "59\n", "")
    flux.advance("1m")
    assert as_flux(flux, "job", "timeleft", job) == (0, "0\n", "")
    held = flux.submit("--urgency=hold", "true")
    assert as_flux(flux, "job", "timeleft", held) == (1, "", f"flux-job: job {held} has not started\n")
    assert as_flux(flux, "job", "timeleft", "x1234") == (1, "", "flux-job: failed to parse jobid x1234\n")
    assert as_flux(flux, "job", "timeleft", "f1234") == (1, "", "flux-job: f1234: no such jobid\n")
    assert as_flux(flux, "job", "timeleft", job, "x") == (1, "", "Usage: flux-job timeleft [JOBID]\n")


def test_wait_event_in_guest_and_other_eventlogs(flux):
    job = flux.submit("-N2", "hostname")
    # the guest output eventlog exists once the job has started; found in it
    code, out, err = as_flux(flux, "job", "wait-event", "-p", "output", job, "data")
    assert (code, err) == (0, "") and out.split()[1] == "data"
    code, out, err = as_flux(flux, "job", "wait-event", "-v", "-W", "-p", "guest.output", "-c", "2", job, "data")
    assert (code, err) == (0, "") and [line.split()[1] for line in out.splitlines()] == ["header", "data", "data"]
    assert as_flux(flux, "job", "wait-event", "-p", "guest.foobar", job, "x") == (
        1, "", "flux-job: eventlog path guest.foobar not found\n")
    assert as_flux(flux, "job", "wait-event", "-W", "-p", "guest.invalid", job, "x") == (
        1, "", "flux-job: eventlog path guest.invalid not found\n")
    assert as_flux(flux, "job", "wait-event", "-p", "foobar", job, "submit") == (
        1, "", "flux-job: eventlog path foobar not found\n")
    assert as_flux(flux, "job", "wait-event", "-p", "guest.", job, "submit") == (
        1, "", "flux-job: eventlog path guest. not found\n")
    assert as_flux(flux, "job", "wait-event", "-p", "eventlog", job, "submit")[1].split()[1] == "submit"
    # a guest eventlog ends with the job
    assert as_flux(flux, "job", "wait-event", "-p", "output", job, "foobar") == (
        1, "", "flux-job: event 'foobar' never received\n")
    assert as_flux(flux, "job", "wait-event", "--match-context=foo", job, "submit") == (
        1, "", "flux-job: must specify a context test as key=value\n")
    assert as_flux(flux, "job", "wait-event", "1234567890", "submit") == (
        1, "", "flux-job: job 1234567890 not found\n")


def test_wait_event_waits_for_a_guest_eventlog_of_a_pending_job(flux):
    first = flux.submit("-N4", "sleep", "30")
    job = flux.submit("echo", "hi")
    code, out, err = as_flux(flux, "job", "wait-event", "-p", "output", job, "data")
    assert (code, out, err) == (0, '1767225630.000000 data stream="stdout" rank="0" data="hi\\n"\n', "")
    assert flux.state(first) == "INACTIVE"


def test_wait_event_path_of_a_job_that_never_starts(flux):
    job = flux.submit("--urgency=hold", "true")
    flux("cancel", job)
    assert as_flux(flux, "job", "wait-event", "-v", "-p", "exec", job, "done") == (
        1, "", "flux-job: event 'done' never received\n")


def test_list_commands_are_hidden_as_in_flux(flux):
    code, out, err = as_flux(flux, "job")
    names = [line.split()[0] for line in err.splitlines() if line.startswith("   ")]
    assert code == 1 and "raiseall" in names and "taskmap" in names
    assert not {"list", "list-inactive", "list-ids"} & set(names)


# -- flux jobs --from-stdin: job-list's objects listed as read ------------------

ROUND_TRIP_FORMAT = ("{id.f58} {userid} {username} {urgency} {priority} {state} {name} {queue} {ntasks} {nnodes}"
                     " {ranks} {nodelist} {duration} {expiration} {t_submit} {t_run} {t_inactive} {runtime}"
                     " {result} {status} {success} {returncode} {waitstatus} {exception.occurred}"
                     " {exception.type} {exception.note} {inactive_reason} {contextual_info}"
                     " {dependencies} {sched.t_estimate}")


def test_jobs_from_stdin_lists_job_list_objects_as_the_instance_lists_its_jobs(flux):
    run, pend, held = scenario(flux)
    flux.out("cancel", held)
    failing = flux.submit("false")
    flux.advance("20s")
    objects = flux.out("job", "list", "-a")
    assert len(objects.splitlines()) == 4
    listed = flux.out("jobs", "-a", "-no", ROUND_TRIP_FORMAT)
    assert flux.out("jobs", "-no", ROUND_TRIP_FORMAT, "--from-stdin", input=objects) == listed
    # every state and result: pending, timeout, canceled before running, failed
    assert sorted(line.split()[0] for line in listed.splitlines()) == sorted([run, pend, held, failing])
    # colored by result as the instance's own listing is
    colored = flux.out("jobs", "-a", "-o", "{id.f58} {result}", "--color=always")
    assert "\x1b[" in colored
    assert flux.out("jobs", "-o", "{id.f58} {result}", "--color=always", "--from-stdin", input=objects) == colored


def test_jobs_from_stdin_keeps_the_stated_result_and_wait_status():
    # an object need not agree with what it was derived from: completed on a
    # signal (returncode -15), canceled before running (-128), still running ("")
    lines = [
        {"id": 1, "userid": 0, "urgency": 16, "t_submit": 1.0, "state": 16, "name": "sleep", "ntasks": 1},
        {"id": 2, "userid": 0, "urgency": 16, "t_submit": 1.0, "state": 64, "name": "sleep", "ntasks": 1,
         "success": True, "exception_occurred": False, "result": 1, "waitstatus": 15},
        {"id": 3, "userid": 0, "urgency": 16, "t_submit": 1.0, "state": 64, "name": "sleep", "ntasks": 1,
         "success": False, "exception_occurred": True, "exception_severity": 0, "exception_type": "cancel",
         "exception_note": "interrupted by ctrl-C", "result": 4},
        {"id": 4, "userid": 0, "urgency": 16, "t_submit": 1.0, "state": 64, "name": "x", "ntasks": 1,
         "success": False, "exception_occurred": False, "result": 2, "waitstatus": 10752},
    ]
    text = "".join(json.dumps(o) + "\n" for o in lines)
    # no instance is needed (flux-jobs reads no broker for this)
    fmt = "--format={returncode:h} {result:h} {inactive_reason:h}"
    r = CliRunner().invoke(cli, ["jobs", "-n", "--from-stdin", fmt], input=text,
                           env={"FLUX_LITE_STATE_DIR": "/nonexistent/state"}, prog_name="flux")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["- - -", "-15 COMPLETED Exit -15",
                                     "-128 CANCELED Canceled: interrupted by ctrl-C", "42 FAILED Exit 42"]


def test_jobs_from_stdin_bad_input_is_one_error_line():
    r = CliRunner().invoke(cli, ["jobs", "--from-stdin"], input='{"id": 1, "state": 8}\nfoo\n',
                           env={"FLUX_LITE_STATE_DIR": "/nonexistent/state"}, prog_name="flux")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == "flux-jobs: ERROR: JSON input error: line 2: Expecting value: line 1 column 1 (char 0)\n"
    r = CliRunner().invoke(cli, ["jobs", "--from-stdin"], input='[1]\n',
                           env={"FLUX_LITE_STATE_DIR": "/nonexistent/state"}, prog_name="flux")
    assert r.exit_code == 1
    assert r.stderr == "flux-jobs: ERROR: JSON input error: line 1: job object is not a JSON object\n"


def test_jobs_from_stdin_without_input_prints_the_heading():
    r = CliRunner().invoke(cli, ["jobs", "--from-stdin"], input="",
                           env={"FLUX_LITE_STATE_DIR": "/nonexistent/state"}, prog_name="flux")
    assert (r.exit_code, r.stdout) == (0, "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO\n")


def test_module_remove_job_list_leaves_listings_without_a_service(flux):
    jobid = flux.submit("true")
    assert "job-list " in flux.out("module", "list")
    assert as_flux(flux, "module", "remove", "job-list") == (0, "", "")
    assert "job-list " not in flux.out("module", "list")
    # Flux 0.88's words, command by command
    assert as_flux(flux, "jobs") == (1, "", "flux-jobs: ERROR: No service matching job-list.list is registered\n")
    assert as_flux(flux, "job", "list") == (
        1, "", "flux-job: flux job-list.list: No service matching job-list.list is registered\n")
    assert as_flux(flux, "job", "list-ids", jobid) == (
        1, "", "flux-job: flux job-list.list-d: No service matching job-list.list-id is registered\n")
    assert as_flux(flux, "module", "stats", "job-list") == (
        1, "", "flux-module: job-list.stats-get: No service matching job-list.stats-get is registered\n")
    assert as_flux(flux, "pgrep", "true")[2] == "flux-pgrep: ERROR: No service matching job-list.list is registered\n"
    assert as_flux(flux, "module", "remove", "job-list") == (
        1, "", "flux-module: remove job-list: No such file or directory\n")
    assert as_flux(flux, "module", "remove", "-f", "job-list")[0] == 0
    # jobs go on meanwhile; the module lists them all once loaded again
    flux.advance("1s")
    assert as_flux(flux, "module", "load", "job-list") == (0, "", "")
    assert as_flux(flux, "module", "load", "job-list") == (1, "", "flux-module: load job-list: File exists\n")
    assert as_flux(flux, "module", "reload", "job-list")[0] == 0
    assert flux.out("jobs", "-a", "-no", "{id.f58} {status}") == f"{jobid} COMPLETED\n"
    stats = json.loads(flux.out("module", "stats", "job-list"))
    assert stats["jobs"] == {"pending": 0, "running": 0, "inactive": 1}


def test_module_remove_job_list_is_the_owners(flux):
    assert as_flux(flux, "module", "remove", "job-list", env={"FLUX_HANDLE_ROLEMASK": "0x2"}) == (
        1, "", "flux-module: remove job-list: Operation not permitted\n")
    assert as_flux(flux, "module", "stats", "--parse", "idsync.waits", "job-list") == (0, "0\n", "")


def test_jobs_sort_and_width(flux):
    ids = [flux.submit(f"-n{n}", "true") for n in (2, 1, 2)]
    flux.advance("1s")
    # ntasks ascending, then newest first; --sort replaces the format's sort:
    expected = [f"1 {ids[1]}", f"2 {ids[2]}", f"2 {ids[0]}"]
    assert flux.out("jobs", "-an", "--sort=ntasks,-t_submit", "-o", "{ntasks} {id.f58}").splitlines() == expected
    assert flux.out("jobs", "-an", "--sort=ntasks,-t_submit", "-o", "sort:t_submit {ntasks} {id.f58}"
                    ).splitlines() == expected
    assert as_flux(flux, "jobs", "-a", "--sort=foo") == (1, "", "flux-jobs: ERROR: Invalid sort key: foo\n")
    lines = flux.out("jobs", "-a", "-w", "10").splitlines()
    assert lines[0] == "       JO+" and all(len(line) <= 10 and line.endswith("+") for line in lines)
    # -w without N: the terminal's width, and no limit when the output is no terminal
    assert flux.out("jobs", "-a", "-w", "--color=never") == flux.out("jobs", "-a", "--color=never")


def test_job_memo_sets_the_user_annotations(flux):
    jobid = flux.submit("--urgency=hold", "true")
    assert as_flux(flux, "job", "memo", jobid, "a.b=1", "c=xyz", "d") == (
        1, "", "flux-job: memo: no value for key=d\n")
    assert as_flux(flux, "job", "memo", jobid, "a.b=1", "c=xyz", "d=[1,2]") == (0, "", "")
    assert as_flux(flux, "job", "memo", "--volatile", jobid, "c=null", "a.x=2") == (0, "", "")
    memos = [e for e in flux.events(jobid) if e["name"] == "memo"]
    assert [e["context"] for e in memos] == [{"a": {"b": 1}, "c": "xyz", "d": [1, 2]}]
    # as flux-jobs prints them: json.dumps' spacing, nested objects as JSON
    assert flux.out("jobs", "-no", "{user}|{user.a.b}|{user.a}|{annotations}", jobid) == (
        '{"a": {"b": 1, "x": 2}, "d": [1, 2]}|1|{"b": 1, "x": 2}|{"user": {"a": {"b": 1, "x": 2}, "d": [1, 2]}}\n')
    code, _, err = as_flux(flux, "job", "memo", jobid, "e=1", env={"FLUX_HANDLE_USERID": "4242"})
    assert (code, err) == (1, "flux-job: memo: guests can only add a memo to their own jobs\n")
    assert as_flux(flux, "job", "memo", "f1", "a=1") == (1, "", "flux-job: memo: unknown job id\n")
    flux("cancel", jobid)
    assert as_flux(flux, "job", "memo", jobid, "a=1") == (1, "", "flux-job: memo: job is inactive\n")
    assert as_flux(flux, "job", "memo")[2] == (
        "Usage: flux-job memo [--volatile] id key=value [key=value, ...]\n")


def test_jobs_include_ranks_or_hosts(flux):
    a = flux.submit("-N1", "--requires=host:node1", "true")
    b = flux.submit("-N2", "--requires=ranks:2-3", "true")
    flux.advance("1s")
    listed = lambda *args: sorted(flux.out("jobs", "-a", "-no", "{id.f58}", *args).split())  # noqa: E731
    assert listed("-i", "1") == [a] and listed("-i", "node1") == [a]
    assert listed("-i", "3") == [b] and listed("-i", "node[0,3]") == [b]
    # ranges stay ranges (no billion ids in memory)
    assert listed("-i", "0-999999999") == sorted([a, b])
    assert as_flux(flux, "jobs", "-i", "node[") == (1, "", "flux-jobs: ERROR: -i/--include: invalid targets: node[\n")
    assert as_flux(flux, "overlay", "status", "-H", "0-999999999") == (
        1, "", "flux-overlay: 0-999999999: invalid target\n")


def test_jobs_cwd_field(flux, tmp_path):
    # as Flux 0.88: the job's attributes.system.cwd, heading CWD (t2800 54)
    here = flux.submit("true")
    there = flux.submit(f"--cwd={tmp_path}", "true")
    out = flux.out("jobs", "-a", "-o", "{cwd}|{id}").splitlines()
    assert out[0] == "CWD|JOBID"
    assert f"{tmp_path}|{there}" in out and any(line.endswith(f"|{here}") for line in out)


def test_jobs_time_fields_of_every_state(flux):
    # {t_priority} and {t_sched}, as Flux 0.88 names them (t2800 67)
    flux.submit("true")
    out = flux.out("jobs", "-a", "-o", "{t_submit},{t_depend},{t_priority},{t_sched}").splitlines()
    assert out[0] == "T_SUBMIT,T_DEPEND,T_PRIORITY,T_SCHED"
    assert all(float(v) > 0 for v in out[1].split(","))


def test_jobs_state_and_result_emoji(flux):
    # as Flux 0.88 prints them (t2800 52, 74, 108): a pending or running job has no result
    done = flux.submit("true")
    running = flux.submit("sleep", "inf")
    out = flux.out("jobs", "-a", "-o", "{state_emoji}|{result_emoji}|{id}").splitlines()
    assert out[0] == "STATE|RESULT|JOBID"
    assert f"\U0001f3c3|\u3000|{running}" in out and f"\U0001f480|\U0001f600|{done}" in out


def test_free_form_annotation_headings(flux):
    # as flux-jobs heads them (t2800 108): annotations.X -> X, sched.X and user.X whole
    out = flux.out("jobs", "--from-stdin", "-o", "{annotations.sched.foo}|{sched.foobar}|{user.foobar}|{user}",
                   input="")
    assert out == "SCHED.FOO|SCHED.FOOBAR|USER.FOOBAR|USER\n"
