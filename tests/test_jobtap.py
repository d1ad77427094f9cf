"""flux jobtap: the job manager's plugins (list, load, remove, query) in
Flux 0.88's words; the builtins' effects when removed and reloaded; the
shipped plugins flux-lite emulates (alloc-bypass.so, alloc-check.so,
perilog.so) with the events Flux posts, on the virtual clock."""

import json

from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.job_manager.jobtap import BUILTINS, PLUGIN_DIR

BUILTIN_LIST = "".join(f"{name}\n" for name in BUILTINS)


def as_flux(flux, *args, env=None, input=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", input=input,
                           catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def names(flux, *opts):
    return as_flux(flux, "jobtap", "list", *opts)[1].splitlines()


def error(text):
    return (1, "", f"flux-jobtap: ERROR: {text}\n")


# -- list / load / remove / query ---------------------------------------------------


def test_list_starts_with_the_builtins(flux):
    assert as_flux(flux, "jobtap", "list") == (0, "", "")
    assert as_flux(flux, "jobtap", "list", "-a") == (0, BUILTIN_LIST, "")
    assert BUILTINS[-2:] == (".post-event", ".update-queue")


def test_load_shipped_plugin_list_and_query(flux):
    assert as_flux(flux, "jobtap", "load", "alloc-check.so") == (0, "", "")
    assert as_flux(flux, "jobtap", "list") == (0, "alloc-check.so\n", "")
    assert names(flux, "-a") == [*BUILTINS, "alloc-check.so"]
    assert as_flux(flux, "jobtap", "query", "alloc-check.so") == (
        0, '{"name":"alloc-check.so","path":"%s/alloc-check.so"}\n' % PLUGIN_DIR, "")
    assert as_flux(flux, "jobtap", "query", ".update-duration") == (
        0, '{"name":".update-duration","path":"builtin"}\n', "")
    assert as_flux(flux, "jobtap", "load", "alloc-check.so") == error("alloc-check.so already loaded")
    assert as_flux(flux, "jobtap", "query", "foo.so") == error("foo.so: plugin not found")


def test_load_by_path(flux, tmp_path):
    path = tmp_path / "plugins" / "alloc-bypass.so"
    path.parent.mkdir()
    path.write_bytes(b"\x7fELF")
    assert as_flux(flux, "jobtap", "load", path) == (0, "", "")
    assert json.loads(as_flux(flux, "jobtap", "query", "alloc-bypass.so")[1]) == {
        "name": "alloc-bypass.so", "path": str(path)}
    assert as_flux(flux, "jobtap", "load", tmp_path / "nope" / "alloc-check.so") == error(
        f"{tmp_path}/nope/alloc-check.so not found")
    # a plugin file flux-lite cannot run: one clear line
    other = tmp_path / "plugins" / "update-test.so"
    other.write_bytes(b"\x7fELF")
    assert as_flux(flux, "jobtap", "load", other) == error(
        f"{other}: flux-lite cannot load this jobtap plugin (it emulates alloc-bypass.so, alloc-check.so, "
        "perilog.so and the builtins only)")
    assert names(flux) == ["alloc-bypass.so"]


def test_unknown_names(flux):
    assert as_flux(flux, "jobtap", "load", "foo.so") == error("foo.so not found")
    assert as_flux(flux, "jobtap", "load", ".foo") == error(".foo not found")
    assert as_flux(flux, "jobtap", "remove", "foo.so") == error("foo.so not found")
    assert as_flux(flux, "jobtap", "remove", "x*") == error("x* not found")
    assert as_flux(flux, "jobtap", "load", "alloc-check.so", "foo") == error("Missing required value for key foo")
    assert names(flux, "-a") == list(BUILTINS)


def test_remove_rules(flux):
    as_flux(flux, "jobtap", "load", "alloc-check.so")
    # a builtin is removed like any plugin, and loads again at the end (twice if loaded twice)
    assert as_flux(flux, "jobtap", "remove", ".history") == (0, "", "")
    assert ".history" not in names(flux, "-a")
    assert as_flux(flux, "jobtap", "load", ".history") == (0, "", "")
    assert as_flux(flux, "jobtap", "load", ".history") == (0, "", "")
    assert names(flux, "-a")[-3:] == ["alloc-check.so", ".history", ".history"]
    # all: every plugin but the builtins
    assert as_flux(flux, "jobtap", "remove", "all") == (0, "", "")
    assert names(flux) == []
    assert as_flux(flux, "jobtap", "remove", "all") == (0, "", "")
    assert names(flux, "-a")[-2:] == [".history", ".history"]
    # a name removes every plugin of that name; a glob matches a leading period only with one
    assert as_flux(flux, "jobtap", "remove", ".history") == (0, "", "")
    as_flux(flux, "jobtap", "load", "perilog.so")
    assert as_flux(flux, "jobtap", "remove", "*") == (0, "", "")
    assert names(flux) == []
    assert as_flux(flux, "jobtap", "remove", ".u*") == (0, "", "")
    assert names(flux, "-a") == [n for n in BUILTINS if not n.startswith((".u", ".history"))]


def test_load_with_remove(flux):
    as_flux(flux, "jobtap", "load", "alloc-check.so")
    assert as_flux(flux, "jobtap", "load", "-r", "all", "alloc-check.so") == (0, "", "")
    assert as_flux(flux, "jobtap", "load", "--remove=*", "perilog.so") == (0, "", "")
    assert names(flux) == ["perilog.so"]
    # the removal fails: nothing changes, and Flux's command names the plugin to load
    assert as_flux(flux, "jobtap", "load", "-r", "nothere", "alloc-check.so") == error("alloc-check.so not found")
    assert names(flux) == ["perilog.so"]


def test_help(flux):
    code, out, _ = as_flux(flux, "jobtap", "--help")
    assert code == 0 and "query" in out
    assert as_flux(flux, "jobtap", "remove")[0] == 2


# -- the builtins -------------------------------------------------------------------------


def test_update_duration_owner_allow_any(flux):
    flux("config", "load", input=json.dumps({"policy": {"limits": {"duration": "1h"}}}))
    jobid = flux.submit("--urgency=hold", "-t", "1m", "true")
    assert as_flux(flux, "update", jobid, "duration=2h") == (0, "", "")  # the owner bypasses the limit
    assert as_flux(flux, "jobtap", "remove", ".update-duration") == (0, "", "")
    assert as_flux(flux, "update", jobid, "duration=1m") == (
        1, "", "flux-update: ERROR: update of attributes.system.duration not supported\n")
    assert as_flux(flux, "jobtap", "load", ".update-duration", "owner-allow-any=0") == (0, "", "")
    code, _, err = as_flux(flux, "update", jobid, "duration=3h")
    assert code == 1 and "requested duration (3h) exceeds policy limit of 1h" in err
    # the setting outlives a reload without it (a static of the job manager in Flux)
    as_flux(flux, "jobtap", "remove", ".update-duration")
    as_flux(flux, "jobtap", "load", ".update-duration")
    assert as_flux(flux, "update", jobid, "duration=3h")[0] == 1
    assert as_flux(flux, "update", jobid, "duration=30m") == (0, "", "")


def test_update_queue_only_while_loaded(flux):
    flux("config", "load", input=json.dumps({"queues": {"debug": {}, "batch": {}},
                                             "policy": {"jobspec": {"defaults": {"system": {"queue": "debug"}}}}}))
    flux("queue", "start", "--all")
    jobid = flux.submit("--urgency=hold", "true")
    as_flux(flux, "jobtap", "remove", ".update-queue")
    assert ".update-queue" not in names(flux, "-a")
    assert as_flux(flux, "update", jobid, "queue=batch") == (
        1, "", "flux-update: ERROR: update of attributes.system.queue not supported\n")
    as_flux(flux, "jobtap", "load", ".update-queue")
    assert names(flux, "-a")[-1] == ".update-queue"
    assert as_flux(flux, "update", jobid, "queue=batch") == (0, "", "")


def test_limit_duration_removed(flux):
    flux("config", "load", input=json.dumps({"policy": {"limits": {"duration": "1h"}}}))
    r = flux.fails("submit", "-t", "2h", "true")
    assert "exceeds policy limit of 1h" in r.stderr
    as_flux(flux, "jobtap", "remove", ".limit-duration")
    assert flux.submit("-t", "2h", "true")


def test_dependency_schemes_removed(flux):
    jobid = flux.submit("true")
    for plugin, args in ((".dependency-after", ["--dependency=afterok:" + jobid]),
                         (".dependency-singleton", ["--dependency=singleton", "--job-name=x"]),
                         (".begin-time", ["--begin-time=+1h"])):
        as_flux(flux, "jobtap", "remove", plugin)
        scheme = args[0].split("=")[1].split(":")[0] if plugin != ".begin-time" else "begin-time"
        r = flux.fails("submit", *args, "true")
        assert f'dependency scheme "{scheme}" not supported' in r.stderr
        as_flux(flux, "jobtap", "load", plugin)
        assert flux.submit(*args, "true")


def test_history_removed(flux):
    flux.submit("true")
    as_flux(flux, "jobtap", "remove", ".history")
    assert as_flux(flux, "job", "last") == (1, "", "flux-job: Unknown service method 'job-manager.history.get'\n")
    as_flux(flux, "jobtap", "load", ".history")
    assert as_flux(flux, "job", "last")[0] == 0


def test_priority_default_removed_and_reloaded(flux):
    as_flux(flux, "jobtap", "remove", ".priority-default")
    jobid = flux.submit("--urgency=20", "true")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend"]
    assert flux.state(jobid) == "PRIORITY"
    as_flux(flux, "jobtap", "load", ".priority-default")  # a load reprioritizes every job
    assert flux.eventlog(jobid)[3:5] == ["priority", "alloc"]
    assert flux.events(jobid)[3]["context"] == {"priority": 20}


# -- alloc-bypass.so and alloc-check.so ---------------------------------------------------


def bypass_R(flux):
    return flux.out("R", "encode", "-r", "0").strip()


def test_alloc_bypass_then_alloc_check(flux):
    as_flux(flux, "jobtap", "load", "alloc-bypass.so")
    as_flux(flux, "jobtap", "load", "alloc-check.so")
    bypass = flux.submit("--setattr=alloc-bypass.R=" + bypass_R(flux), "-n1", "sleep", "inf")
    assert flux.eventlog(bypass) == ["submit", "set-flags", "validate", "depend", "priority", "alloc", "start"]
    events = flux.events(bypass)
    assert events[1]["context"] == {"flags": ["alloc-bypass"]}
    assert events[5]["context"] == {"bypass": True}
    assert flux.state(bypass) == "RUN"
    # the scheduler never heard of it: it gives rank 0 to the next job
    jobid = flux.submit("--flags=waitable", "-N1", "true")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "exception",
                                    "free", "clean"]
    exc = flux.events(jobid)[5]["context"]
    assert exc == {"type": "alloc-check", "severity": 0, "note": "resources already allocated", "userid": 0}
    assert flux.out("jobs", "-no", "{result}", jobid) == "FAILED\n"
    assert flux("job", "wait", jobid, check=False).exit_code == 1
    # freed: its resources are no longer counted, nor sent to the scheduler
    flux("cancel", bypass)
    assert flux.eventlog(bypass)[-4:] == ["finish", "release", "free", "clean"]
    flux("run", "-N1", "true")
    as_flux(flux, "jobtap", "remove", "alloc-check.so")
    as_flux(flux, "jobtap", "remove", "alloc-bypass.so")
    assert names(flux) == []


def test_alloc_bypass_guest_and_bad_R(flux):
    as_flux(flux, "jobtap", "load", "alloc-bypass.so")
    r = flux.fails("submit", "--setattr=alloc-bypass.R=" + bypass_R(flux), "true",
                   env={"FLUX_HANDLE_USERID": "1234"})
    assert "Guest user cannot use alloc bypass" in r.stderr
    r = flux.fails("submit", '--setattr=alloc-bypass.R={"version":1}', "true")
    assert "alloc-bypass: invalid R" in r.stderr


def test_alloc_check_knows_jobs_allocated_since_loaded(flux):
    as_flux(flux, "jobtap", "load", "alloc-bypass.so")
    bypass = flux.submit("--setattr=alloc-bypass.R=" + bypass_R(flux), "sleep", "inf")
    as_flux(flux, "jobtap", "load", "alloc-check.so")
    jobid = flux.submit("-N1", "true")  # double booked, but alloc-check never saw the bypass job's R
    assert "exception" not in flux.eventlog(jobid)
    flux("cancel", bypass)


# -- perilog.so --------------------------------------------------------------------------


def perilog_config(flux, **tables):
    flux("config", "load", input=json.dumps({"job-manager": tables}))


def test_perilog_query_conf(flux):
    perilog_config(flux, prolog={"command": ["true"]}, epilog={"command": ["sleep", "2"], "per-rank": True})
    as_flux(flux, "jobtap", "load", "perilog.so")
    assert json.loads(as_flux(flux, "jobtap", "query", "perilog.so")[1]) == {
        "name": "perilog.so", "path": f"{PLUGIN_DIR}/perilog.so",
        "conf": {"prolog": {"command": ["true"], "per_rank": False, "cancel_on_exception": True,
                            "timeout": 1800.0, "kill-timeout": 60.0},
                 "epilog": {"command": ["sleep", "2"], "per_rank": True, "cancel_on_exception": False,
                            "timeout": 0.0, "kill-timeout": 60.0}},
        "procs": {}}


def test_perilog_events_and_timing(flux):
    perilog_config(flux, prolog={"command": ["sleep", "3"]}, epilog={"command": ["sleep", "2"], "per-rank": True})
    as_flux(flux, "jobtap", "load", "perilog.so")
    t0 = flux.now()
    jobid = flux.submit("-N2", "true")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "prolog-start"]
    procs = json.loads(as_flux(flux, "jobtap", "query", "perilog.so")[1])["procs"]
    assert procs == {jobid: {"name": "prolog", "state": "running", "total": 1, "active": 1,
                             "active_ranks": "0", "remaining_time": 1800}}
    flux.advance("3s")
    assert flux.eventlog(jobid)[5:] == ["prolog-start", "prolog-finish", "start", "finish", "epilog-start",
                                        "release"]
    assert flux.state(jobid) == "CLEANUP"
    flux.advance("2s")
    events = flux.events(jobid)
    assert [e["name"] for e in events[-3:]] == ["epilog-finish", "free", "clean"]
    assert events[6]["context"] == {"description": "job-manager.prolog", "status": 0}
    assert events[-3]["context"] == {"description": "job-manager.epilog", "status": 0}
    assert events[-3]["timestamp"] - t0 == 5.0
    assert flux.out("jobs", "-no", "{result}", jobid) == "COMPLETED\n"


def test_failed_prolog_fails_the_job_and_runs_the_epilog(flux):
    perilog_config(flux, prolog={"command": ["false"], "per-rank": True}, epilog={"command": ["true"]})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("-N2", "true")
    events = flux.events(jobid)
    assert [e["name"] for e in events[4:]] == ["alloc", "prolog-start", "exception", "epilog-start",
                                               "prolog-finish", "epilog-finish", "free", "clean"]
    assert events[6]["context"] == {"type": "prolog", "severity": 0, "userid": 0,
                                    "note": "prolog exited with code=1 on node[0-1] (rank 0-1)"}
    assert events[8]["context"] == {"description": "job-manager.prolog", "status": 256}
    assert flux.out("jobs", "-no", "{result}", jobid) == "FAILED\n"


def test_failed_epilog_is_a_nonfatal_exception(flux):
    perilog_config(flux, epilog={"command": ["false"]})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("true")
    events = flux.events(jobid)
    exc = [e["context"] for e in events if e["name"] == "exception"]
    assert exc == [{"type": "epilog", "severity": 2, "userid": 0,
                    "note": "epilog exited with code=1 on unknown (rank (null))"}]
    assert events[-1]["name"] == "clean"


def test_perilog_removed_lets_held_jobs_go(flux):
    perilog_config(flux, epilog={"command": ["sleep", "60"]})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("true")
    assert flux.state(jobid) == "CLEANUP"
    as_flux(flux, "jobtap", "remove", "perilog.so")
    assert flux.state(jobid) == "INACTIVE"


def test_prolog_canceled(flux):
    perilog_config(flux, prolog={"command": ["sleep", "60"]})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("-N2", "true")
    procs = json.loads(as_flux(flux, "jobtap", "query", "perilog.so")[1])["procs"]
    assert procs[jobid]["remaining_time"] == 1800  # (the timeout's)
    flux("cancel", jobid)
    events = flux.events(jobid)
    assert [e["name"] for e in events[5:]] == ["prolog-start", "exception", "prolog-finish", "free", "clean"]
    assert events[7]["context"] == {"description": "job-manager.prolog", "status": 15}
    assert flux.out("jobs", "-no", "{result}", jobid) == "CANCELED\n"
    assert json.loads(as_flux(flux, "jobtap", "query", "perilog.so")[1])["procs"] == {}


def test_bypass_job_not_in_hello(flux):
    as_flux(flux, "jobtap", "load", "alloc-bypass.so")
    bypass = flux.submit("--setattr=alloc-bypass.R=" + bypass_R(flux), "sleep", "inf")
    flux("module", "reload", "sched-simple")
    # the scheduler still thinks rank 0 free: a 4-node job runs beside the bypass job
    assert flux.state(flux.submit("-N4", "true")) == "INACTIVE"
    flux("cancel", bypass)
    assert flux.eventlog(bypass)[-2:] == ["free", "clean"]


def test_plugins_configured_at_start(flux_factory, tmp_path):
    toml = tmp_path / "jm.toml"
    toml.write_text('[[job-manager.plugins]]\nload = "alloc-bypass.so"\n'
                    '[[job-manager.plugins]]\nremove = ".history"\nload = "alloc-check.so"\n')
    flux = flux_factory("--test-size=2", "-c", toml)
    assert names(flux) == ["alloc-bypass.so", "alloc-check.so"]
    assert ".history" not in names(flux, "-a")
    # later config loads do not touch the plugins (as in Flux)
    flux("config", "load", input=json.dumps({"job-manager": {"plugins": [{"load": "perilog.so"}]}}))
    assert names(flux) == ["alloc-bypass.so", "alloc-check.so"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[[job-manager.plugins]]\nload = "foo.so"\n')
    r = flux.fails("start", "--test-size=2", "-c", bad, "--force")
    assert "[job-manager.plugins][0]: load: foo.so: No such plugin found" in r.stderr
    bad.write_text('[job-manager]\nplugins = 1\n')
    r = flux.fails("start", "--test-size=2", "-c", bad, "--force")
    assert "[job-manager.plugins] config must be an array" in r.stderr


def test_bypass_per_resource_node(flux):
    as_flux(flux, "jobtap", "load", "alloc-bypass.so")
    R = flux.out("kvs", "get", "resource.R").strip()
    r = flux("run", "--setattr=system.alloc-bypass.R=" + R, "-o", "per-resource.type=node", "hostname")
    assert sorted(r.stdout.split()) == ["node0", "node1", "node2", "node3"]


def test_perilog_config_checked_while_loaded(flux):
    def load(text):
        return as_flux(flux, "config", "load", input=text)

    assert load('[job-manager.prolog]\ncommand = "foo"\n') == (0, "", "")  # (not loaded: not its business)
    flux("config", "load", input="")
    as_flux(flux, "jobtap", "load", "perilog.so")
    prefix = "flux-config: load: error updating job-manager: "
    for text, msg in (('[job-manager.prolog]\ncommand = "foo"\n', "[job-manager.prolog]: command must be an array"),
                      ('[job-manager.prolog]\ncommand = ["x"]\nfoo = 1\n',
                       "[job-manager.prolog]: 1 object item(s) left unpacked: foo"),
                      ("[job-manager.epilog]\n", "[job-manager.epilog]: no command specified and exec.imp not defined"),
                      ('[job-manager.prolog]\ncommand = ["x"]\ntimeout = "5x"\n',
                       "[job-manager.prolog]: invalid prolog timeout"),
                      ("[job-manager.prolog]\ncommand = [1, 2]\n", "[job-manager.prolog]: malformed prolog command"),
                      ('[job-manager.perilog]\nlog-ignore = "x"\n',
                       "[job-manager.perilog]: error parsing log-ignore: not an array"),
                      ('[job-manager.perilog]\nlog-ignore = ["["]\n',
                       "[job-manager.perilog]: error parsing log-ignore: Failed to compile regex: [")):
        assert load(text) == (1, "", prefix + msg + "\n")
    as_flux(flux, "jobtap", "remove", "perilog.so")
    load('[job-manager.prolog]\ncommand = "foo"\n')
    assert as_flux(flux, "jobtap", "load", "perilog.so") == error("[job-manager.prolog]: command must be an array")


def test_per_rank_prolog_output_logged_and_failure_drains(flux):
    perilog_config(flux, prolog={"command": ["flux", "getattr", "rank"], "per-rank": True},
                   perilog={"log-ignore": ["^1$"]})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("-N2", "true")
    logged = [line for line in flux.dmesg() if ": prolog: " in line]
    assert logged == [f"job-manager.info[0]: {jobid}: prolog: node0 (rank 0): stdout: 0"]
    perilog_config(flux, prolog={"command": ["false"], "per-rank": True})
    jobid = flux.submit("-N4", "true")
    assert flux.state(jobid) == "INACTIVE"
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}") == f"0-3 prolog failed for job {jobid}\n"


def test_prolog_timeout(flux):
    perilog_config(flux, prolog={"command": ["sleep", "60"], "timeout": "10s", "per-rank": True})
    as_flux(flux, "jobtap", "load", "perilog.so")
    jobid = flux.submit("-N1", "true")
    flux.advance("10s")
    events = flux.events(jobid)
    assert [e["name"] for e in events[5:]] == ["prolog-start", "exception", "prolog-finish", "free", "clean"]
    assert events[6]["context"]["note"] == "prolog timed out on node0 (rank 0)"
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}") == f"0 prolog timed out for job {jobid}\n"
