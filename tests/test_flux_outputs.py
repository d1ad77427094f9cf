"""Flux's outputs, field by field: what `flux jobs` (text and --json) shows,
eventlogs of jobs the exec system fails, sched-simple's log level, `module`
list/stats, `kvs ls`, and flux-resource's format names.

Expected texts are those real Flux 0.88 printed,
or flux-core's sources where no recorded run shows the case.
"""

import json

import pytest

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


# -- sched-simple's log level, module list and stats ---------------------------------------


def _sched_lines(flux):
    return [line for line in flux.dmesg() if line.startswith(("sched-simple.", "broker.debug[0]: module-python"))]


def test_sched_simple_logs_debug_lines_only_at_debug(flux):
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    flux("dmesg", "-C")
    flux("module", "reload", "sched-simple")  # the default level is info
    lines = _sched_lines(flux)
    assert lines[0].startswith("broker.debug[0]: module-python-exec sched-simple pid=")
    assert lines[1:] == [f"sched-simple.info[0]: hello: {jobid}: rank0/core[0-1]",
                         "sched-simple.info[0]: ready: queue-depth=8 log-level=info pool-class=Rv1Pool Rv1 "
                         "rank[0-3]/core[0-1]"]
    flux("cancel", jobid)
    assert not [line for line in flux.dmesg() if line.startswith("sched-simple.debug")]
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    flux("dmesg", "-C")
    flux("module", "reload", "sched-simple", "log-level=debug")
    assert _sched_lines(flux)[1:] == [
        f"sched-simple.info[0]: hello: {jobid}: rank0/core[0-1]",
        f"sched-simple.debug[0]: hello: id={jobid} priority=16 userid=0 t_submit={T0:.1f}",
        "sched-simple.info[0]: ready: queue-depth=8 log-level=debug pool-class=Rv1Pool Rv1 rank[0-3]/core[0-1]"]
    flux("dmesg", "-C")
    flux("cancel", jobid)
    assert _sched_lines(flux) == [f"sched-simple.debug[0]: free: {jobid}: rank0/core[0-1] (final)"]
    # a level above info hides the info lines too
    flux("module", "reload", "sched-simple", "log-level=err")
    flux("dmesg", "-C")
    flux("module", "reload", "sched-simple", "log-level=err")
    assert _sched_lines(flux)[1:] == []


MODULE_HEADER = "Module                    Idle  S Sendq Recvq Service\n"


def test_module_list_columns(flux):
    assert outcome(as_flux(flux, "module", "list")) == (0, MODULE_HEADER + (
        "job-exec                     0  R     0     0 \n"
        "job-ingest                   0  R     0     0 \n"
        "job-list                     0  R     0     0 \n"
        "job-manager                  0  R     0     0 \n"
        "resource                     0  R     0     0 \n"
        "sched-simple                 0  R     0     0 feasibility,sched\n"), "")
    lines = flux.out("module", "list", "-l").splitlines()
    assert lines[0] == "Module                    Idle  S Sendq Recvq Service  Path"
    assert lines[6].startswith("sched-simple                 0  R     0     0 feasibi+ /")
    assert lines[6].endswith("simple.py")
    flux("module", "remove", "sched-simple")
    assert "sched-simple" not in flux.out("module", "list")


def test_module_stats_keys_and_format(flux):
    jobid = flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.advance("1s")
    blocker = flux.submit("-N4", "-S", "exec.test.run_duration=60s", "true")
    waiting = flux.submit("-N1", "true")  # in sched-simple's queue
    out = flux.out("module", "stats", "job-manager")
    events = sum(len(flux.eventlog(j)) for j in (jobid, blocker, waiting))
    # jansson's JSON_INDENT(1)
    assert out.splitlines()[:9] == [
        "{", ' "journal": {', '  "listeners": 0,', f'  "events": {events}', " },",
        ' "active_jobs": 2,', ' "inactive_jobs": 1,', f' "max_jobid": {int(flux.out("job", "id", waiting))},',
        ' "housekeeping": {']
    assert out.endswith('   "release-after": -1.0,\n   "command": ""\n  }\n }\n}\n')
    stats = json.loads(flux.out("module", "stats", "sched-simple"))
    assert list(stats) == ["sched_passes", "sched_yields", "forecast_passes", "forecast_yields", "sched_delay",
                           "sched_duration_ewma", "sched_interval_ewma", "pending_jobs",
                           "policy", "queue-depth", "allocated_jobs", "debug"]
    assert stats["pending_jobs"] == 1
    assert flux.out("module", "stats", "-p", "inactive_jobs", "job-manager") == "1\n"
    assert flux.out("module", "stats", "-p", "housekeeping.config.release-after", "job-manager") == "-1.000000\n"
    assert outcome(as_flux(flux, "module", "stats", "-p", "nope.x", "job-manager")) == (
        1, "", "flux-module: `nope.x' not found in response\n")


# -- kvs ls --------------------------------------------------------------------------------


def test_kvs_ls_columns_as_flux(flux):
    jobid = flux.submit("-S", "exec.test.run_duration=60s", "true")
    key = flux.out("job", "id", "--to=kvs", jobid).strip()
    # names in columns of the longest name plus 4, as many as fit in $COLUMNS (80)
    root = ("checkpoint     config         instance       job            job-manager\n"
            "resource       sched\n")
    assert outcome(as_flux(flux, "kvs", "ls")) == (0, root, "")
    assert as_flux(flux, "kvs", "ls", "-w", "30").stdout == (
        "checkpoint     config\ninstance       job\njob-manager    resource\nsched\n")
    assert as_flux(flux, "kvs", "ls", "-1").stdout.splitlines()[:3] == ["checkpoint", "config", "instance"]
    assert as_flux(flux, "kvs", "ls", "-F", "-w", "0").stdout == \
        "checkpoint.    config         instance.      job.           job-manager.   resource.      sched.\n"
    # a trailing dot is accepted (and asks for a directory)
    assert as_flux(flux, "kvs", "ls", key + ".").stdout == "J           R           eventlog    jobspec\n"
    assert as_flux(flux, "kvs", "ls", "-d", "job.").stdout == "job\n"
    # values first, then each directory under a heading; errors name the key and exit 1
    r = as_flux(flux, "kvs", "ls", "sched", "config", "nosuch", "config.", "resource")
    assert outcome(r) == (1, "config\n\nresource:\nR              drain-state    eventlog\n\nsched:\nmodule    state\n",
                          "nosuch: No such file or directory\nconfig: Not a directory\n")
    r = as_flux(flux, "kvs", "ls", "-R", "-1", key)
    assert r.stdout == f"{key}:\nJ\nR\neventlog\njobspec\n"


# -- flux-resource formats -------------------------------------------------------------------


def test_named_formats_as_flux_utilconfig_gives_them(flux):
    for cmd in (("resource", "list"), ("resource", "status"), ("resource", "drain"), ("jobs",),
                ("housekeeping", "list")):
        prog = "flux-" + cmd[0]
        assert outcome(as_flux(flux, *cmd, "-o", "bogus")) == (
            1, "", f"{prog}: ERROR: --format: No such format bogus (Did you mean '{{bogus}}'?)\n"), cmd
    assert as_flux(flux, "jobs", "-o", "id name").stderr == \
        "flux-jobs: ERROR: --format: No such format id name (Did you mean '{id} {name}'?)\n"
    # the heading names the command, the config table the subcommand
    assert as_flux(flux, "resource", "list", "-o", "help").stdout.startswith(
        "\nConfigured flux-resource output formats:\n\n  default      Default flux-resource list format string\n")
    assert as_flux(flux, "resource", "list", "-o", "get-config=rlist").stdout.splitlines()[0] == \
        "[list.formats.rlist]"
    # FLUX_RESOURCE_LIST_FORMAT_DEFAULT names the default format
    r = as_flux(flux, "resource", "list", env={"FLUX_RESOURCE_LIST_FORMAT_DEFAULT": "rlist"})
    assert r.stdout.splitlines()[0] == "     STATE NNODES NCORES +NGPUS LIST"


def test_resource_eventlog_starts_with_resource_define(flux, flux_factory):
    assert flux.out("kvs", "eventlog", "get", "resource.eventlog") == \
        f'{T0:.6f} resource-define method="dynamic-discovery"\n'
    flux("resource", "drain", "1", "broken")
    assert [line.split()[1] for line in flux.out("kvs", "eventlog", "get", "resource.eventlog").splitlines()] == \
        ["resource-define", "drain"]
    configured = flux_factory(config="resource:\n  config:\n    - hosts: n[0-1]\n      cores: 0-1\n",
                              name="configured")
    assert configured.out("kvs", "eventlog", "get", "resource.eventlog") == \
        f'{T0:.6f} resource-define method="configuration"\n'


def test_long_drain_reasons_keep_the_nodelist_column(flux):
    flux("resource", "drain", "1", "a reason much longer than thirty characters")
    flux("resource", "drain", "2", "short")
    assert flux.out("resource", "drain").splitlines() == [
        "TIME         STATE    REASON                         NODELIST",
        "Jan01 00:00  drained  a reason much longer than thi+ node1",
        "Jan01 00:00  drained  short                          node2"]


def test_refused_submissions_print_errno_and_message(flux):
    assert outcome(as_flux(flux, "submit", "-q", "x", "true")) == (1, "", "[Errno 22] 'x' is not a valid queue\n")
    # flux run reports it as flux-run's error
    assert outcome(as_flux(flux, "run", "-q", "x", "true")) == (1, "", "flux-run: ERROR: 'x' is not a valid queue\n")


def test_job_id_errors_as_flux_job(flux):
    assert outcome(as_flux(flux, "job", "id", "--to=bogus", "1")) == (1, "", "flux-job: Unknown to=bogus\n")
    assert outcome(as_flux(flux, "job", "id", "bogus")) == (1, "", "flux-job: bogus: malformed input\n")
    assert outcome(as_flux(flux, "job", "id", input="")) == (1, "", "")


def test_cancel_messages_as_flux_cancel(flux):
    running = flux.submit("-N1", "-S", "exec.test.run_duration=300s", "true")
    held = flux.submit("--urgency=hold", "true")
    done = flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.advance("1s")
    assert outcome(as_flux(flux, "cancel")) == (1, "", "flux-cancel: ERROR: No target jobs were provided\n")
    assert outcome(as_flux(flux, "cancel", "--all", "--dry-run")) == (0, "", "flux-cancel: Would cancel 2 jobs\n")
    assert outcome(as_flux(flux, "cancel", "-n", "--all", "--states=run")) == (
        0, "", "flux-cancel: Would cancel 1 job\n")
    assert outcome(as_flux(flux, "cancel", done)) == (1, "", f"flux-cancel: ERROR: {done}: job is inactive\n")
    assert outcome(as_flux(flux, "cancel", "f123")) == (1, "", "flux-cancel: ERROR: f23: unknown job id\n")
    assert outcome(as_flux(flux, "cancel", "--all")) == (0, "", "flux-cancel: Canceled 2 jobs (0 errors)\n")
    assert outcome(as_flux(flux, "cancel", "--all")) == (0, "", "flux-cancel: Matched 0 jobs\n")
    assert flux.out("jobs", "-no", "{status}", running, held) == "CANCELED\nCANCELED\n"


def test_jobs_named_formats_in_flux_order(flux):
    assert as_flux(flux, "jobs", "-o", "help").stdout == (
        "\nConfigured flux-jobs output formats:\n\n"
        "  default      Default flux-jobs format string\n"
        "  cute         Cute flux-jobs format string (default with emojis)\n"
        "  long         Extended flux-jobs format string\n"
        "  deps         Show job urgency, priority, and dependencies\n"
        "  endreason    Show why each job ended\n")


# -- --color[=WHEN] and NO_COLOR --------------------------------------------------------------

GREEN, RED, GRAY, RESET = "\x1b[01;32m", "\x1b[01;31m", "\x1b[37m", "\x1b[0;0m"


@pytest.fixture
def terminal(monkeypatch):
    """stdout is a terminal, as `auto` sees it."""
    from flux_lite.cli import output

    monkeypatch.setattr(output, "is_tty", lambda stream=None: True)


def test_jobs_color_by_result_as_flux_jobs(flux):
    done = flux.submit("-S", "exec.test.run_duration=1s", "true")
    timeout = flux.submit("-t", "1s", "-S", "exec.test.run_duration=60s", "true")
    failed = flux.submit("-S", "exec.test.run_duration=1s", "-S", "exec.test.wait_status=256", "false")
    running = flux.submit("-S", "exec.test.run_duration=60s", "true")
    canceled = flux.submit("--urgency=hold", "true")
    flux("cancel", canceled)
    flux.advance("2s")
    fmt = "{id.f58} {result}"
    plain = flux.out("jobs", "-a", "-o", fmt).splitlines()
    assert plain == ["JOBID RESULT", f"{running} ", f"{failed} FAILED", f"{timeout} TIMEOUT",
                     f"{done} COMPLETED", f"{canceled} CANCELED"]
    # the color before the line, the reset after its newline; the header and active jobs plain
    assert flux.out("jobs", "-a", "-o", fmt, "--color") == (
        f"JOBID RESULT\n{running} \n{RED}{failed} FAILED\n{RESET}{RED}{timeout} TIMEOUT\n{RESET}"
        f"{GREEN}{done} COMPLETED\n{RESET}{GRAY}{canceled} CANCELED\n{RESET}")
    assert flux.out("jobs", "-a", "-o", fmt, "--color=always") == flux.out("jobs", "-a", "-o", fmt, "--color")
    assert flux.out("jobs", "-a", "-o", fmt, "--color=never").splitlines() == plain
    assert flux.out("jobs", "-a", "-o", fmt, "--color=auto").splitlines() == plain  # not a terminal
    r = as_flux(flux, "jobs", "--color=bogus")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (2, "flux-jobs: error: Invalid argument to --color: 'bogus'")
    assert r.stderr.startswith("usage: flux-jobs ") and "[--color [WHEN]]" in r.stderr


def test_no_color_makes_never_the_default(flux, terminal):
    jobid = flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.advance("1s")
    flux("resource", "drain", "1", "broken")
    colored = f"{GREEN}{jobid}\n{RESET}"
    assert flux.out("jobs", "-a", "-no", "{id.f58}") == colored  # auto, on a terminal
    assert flux.out("jobs", "-a", "-no", "{id.f58}", env={"NO_COLOR": ""}) == colored  # empty: unset
    assert flux.out("jobs", "-a", "-no", "{id.f58}", env={"NO_COLOR": "1"}) == f"{jobid}\n"
    assert flux.out("jobs", "-a", "-no", "{id.f58}", "--color", env={"NO_COLOR": "1"}) == colored
    status = flux.out("resource", "status", "-n")
    assert status.splitlines()[0] == f"       avail {GREEN} ✔{RESET}      3 node[0,2-3]"
    assert flux.out("resource", "status", "-n", env={"NO_COLOR": "1"}).splitlines()[0] == \
        "       avail ✔      3 node[0,2-3]"
    # queue list colors its EN/ST columns on a terminal, unless NO_COLOR
    assert flux.out("queue", "list", "-n").startswith(f" {GREEN} ✔{RESET} {GREEN} ✔{RESET} ")
    assert flux.out("queue", "list", "-n", env={"NO_COLOR": "1"}).startswith("  ✔  ✔ ")
    assert "\x1b" not in flux.out("dmesg", env={"NO_COLOR": "1"})
    assert "\x1b" in flux.out("dmesg")


def test_resource_color_up_column(flux):
    flux("resource", "drain", "1", "broken")
    plain = "       STATEUP NNODES NODELIST\n       avail ✔      3 node[0,2-3]\n     drained ✔      1 node1\n"
    assert flux.out("resource", "status") == plain
    # Flux's formats carry the color fields; without color they go with the space before them
    assert flux.out("resource", "status", "-L") == (
        "       STATE UP NNODES NODELIST\n"
        f"       avail {GREEN} ✔{RESET}      3 node[0,2-3]\n"
        f"     drained {GREEN} ✔{RESET}      1 node1\n")
    assert flux.out("resource", "status", "--color=never") == plain
    assert as_flux(flux, "resource", "status", "-o", "get-config=default").stdout.splitlines()[-1] == \
        'format = "{state:>12} {color_up}{up:>2}{color_off} {nnodes:>6} {nodelist}"'
    fmt = "{nodelist}:{color_up}{up.ascii}{color_off}"
    # text before a dropped field stays unless it is only blanks or a sentinel
    assert flux.out("resource", "drain", "-no", fmt) == "node1:y\n"
    assert flux.out("resource", "drain", "-no", "{nodelist} ?:{color_up}{up.ascii}") == "node1y\n"
    assert flux.out("resource", "drain", "-no", fmt, "-L") == f"node1:{GREEN}y{RESET}\n"
    r = as_flux(flux, "resource", "drain", "--color=bogus")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        2, "flux-resource drain: error: Invalid argument to --color: 'bogus'")


def test_dmesg_bad_color_as_liboptparse(flux):
    # optparse_get_color's optparse_fatalmsg: the full program name first
    assert outcome(as_flux(flux, "dmesg", "--color=bogus")) == (
        1, "", "flux-dmesg: Invalid argument to --color: 'bogus'\n")


def test_job_eventlog_and_wait_event_color_as_libeventlog(flux, utc):
    jobid = flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.advance("1s")
    G, Y, B, GRAYV, M, R0 = "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[37m", "\x1b[35m", "\x1b[0m"
    submit = (f"{G}{T0:.6f}{R0} {Y}submit{R0} {B}userid{R0}={GRAYV}0{R0} {B}urgency{R0}={GRAYV}16{R0} "
              f"{B}flags{R0}={GRAYV}0{R0} {B}version{R0}={GRAYV}1{R0}")
    alloc = f'{G}{T0:.6f}{R0} {Y}alloc{R0} {B}annotations{R0}={M}{{"sched":{{"resource_summary":"rank0/core0"}}}}{R0}'
    for opt in ("-L", "--color", "--color=always", "--col", "-Lalways"):
        lines = flux.out("job", "eventlog", opt, jobid).splitlines()
        assert lines[0] == submit and lines[4] == alloc, opt
    assert "\x1b" not in flux.out("job", "eventlog", "--color=never", jobid)
    assert "\x1b" not in flux.out("job", "eventlog", "-L", "-f", "json", jobid)  # JSON is never colored
    # liboptparse takes an optional value only attached: `-L ID` is -L, then the id
    assert flux.out("job", "wait-event", "-L", jobid, "submit") == submit + "\n"
    assert flux.out("job", "wait-event", "-H", jobid, "alloc") == \
        '[Jan01 00:00] alloc annotations={"sched":{"resource_summary":"rank0/core0"}}\n'
    assert outcome(as_flux(flux, "job", "eventlog", "--color=bogus", jobid)) == (
        1, "", "flux-job eventlog: Invalid argument to --color: 'bogus'\n")


def test_resource_list_formats_are_fluxs_strings(flux):
    # flux-core 0.88's builtin formats, sentinels and all
    assert as_flux(flux, "resource", "list", "-o", "get-config=default").stdout.splitlines()[-1] == (
        'format = "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} +:{ncores:>6} ?+:{ngpus:>5} '
        '{nodelist}"')
    assert as_flux(flux, "resource", "list", "-o", "get-config=rlist").stdout.splitlines()[-1] == (
        'format = "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} +:{ncores:>6} ?:+{ngpus:>5} '
        '{rlist}"')
    # "?:+" is no sentinel: "?:" is removed from the text, the "+" printed
    assert flux.out("resource", "list", "-o", "rlist") == (
        "     STATE NNODES NCORES +NGPUS LIST\n"
        "      free      4      8 +    0 rank[0-3]/core[0-1]\n"
        " allocated      0      0 +    0 \n"
        "      down      0      0 +    0 \n")


def test_journal_events_count_what_was_posted(flux):
    # a counter, as Flux's journal keeps one: a purge does not take events back,
    # and reading it costs nothing per job held
    jobid = flux.submit("-S", "exec.test.run_duration=1s", "true")
    flux.advance("1s")
    posted = len(flux.eventlog(jobid))
    assert flux.out("module", "stats", "-p", "journal.events", "job-manager") == f"{posted}\n"
    flux("job", "purge", "--force", "--num-limit=0")
    assert flux.out("jobs", "-a", "-no", "{id}") == ""
    assert flux.out("module", "stats", "-p", "journal.events", "job-manager") == f"{posted}\n"
    # an instance without the counter (older, restored) starts it from the jobs it holds
    import sqlite3
    from flux_lite.job_manager.manager import JOURNAL_EVENTS_KEY

    other = flux.submit("true")
    held = len(flux.eventlog(other))
    conn = sqlite3.connect(f"{flux.state_dir}/kvs.sqlite")
    with conn:
        conn.execute("DELETE FROM kvs WHERE key = ?", (JOURNAL_EVENTS_KEY,))
    conn.close()
    assert flux.out("module", "stats", "-p", "journal.events", "job-manager") == f"{held}\n"
