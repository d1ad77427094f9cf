"""Flux's own words: program names, usage errors, option spellings, and Flux
scripts run unchanged under `flux-lite start`.

Expected texts are real Flux 0.88's (as it printed them, or flux-core's
sources where no recorded run shows the case).
"""

import os
import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli

SCRIPTS = pathlib.Path(__file__).resolve().parent / "flux_scripts"


def as_flux(flux, *args, input=None, env=None):
    """Run a command as `flux` (the program name) against flux's instance."""
    full_env = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", "COLUMNS": "80"}
    full_env.update(env or {})
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, env=full_env,
                              prog_name="flux", catch_exceptions=False)


def outcome(result):
    return result.exit_code, result.stdout, result.stderr


# -- argparse usage errors (Flux's Python commands): exit 2 ------------------------------

UPDATE_USAGE = "usage: flux-update [-h] [-n] [-v] [--wait] JOBID KEY=VALUE [KEY=VALUE ...]\n"


@pytest.mark.parametrize("args, message", [
    ((), "the following arguments are required: JOBID, KEY=VALUE"),
    (("1234",), "the following arguments are required: KEY=VALUE"),
    (("notajobid", "duration=10m"), "argument JOBID: invalid JobID value: 'notajobid'"),
])
def test_update_usage_errors(flux, args, message):
    assert outcome(as_flux(flux, "update", *args)) == (2, "", UPDATE_USAGE + f"flux-update: error: {message}\n")


def test_group_without_or_with_unknown_subcommand(flux):
    usage = "usage: flux-housekeeping [-h] {list,kill} ...\n"
    assert outcome(as_flux(flux, "housekeeping")) == (
        2, "", usage + "flux-housekeeping: error: the following arguments are required: subcommand\n")
    assert outcome(as_flux(flux, "housekeeping", "bogus")) == (
        2, "", usage + "flux-housekeeping: error: argument subcommand: invalid choice: 'bogus' "
        "(choose from 'list', 'kill')\n")


def test_bad_value_names_the_option_and_its_parser(flux):
    r = as_flux(flux, "housekeeping", "kill", "-s", "foo")
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith("usage: flux-housekeeping kill [-h] [-s SIGNUM]")
    assert lines[-1] == "flux-housekeeping kill: error: argument -s/--signal: invalid int value: 'foo'"


def test_unrecognized_arguments_are_reported_by_the_top_parser(flux):
    r = as_flux(flux, "housekeeping", "list", "--bogus")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["usage: flux-housekeeping [-h] {list,kill} ...",
                                     "flux-housekeeping: error: unrecognized arguments: --bogus"]
    r = as_flux(flux, "update", "--bogus")
    assert r.stderr == UPDATE_USAGE + "flux-update: error: unrecognized arguments: --bogus\n"


def test_option_missing_its_value(flux):
    r = as_flux(flux, "jobs", "-o")
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == "flux-jobs: error: argument -o/--format: expected one argument"


def test_cancel_has_its_own_usage_line(flux):
    assert outcome(as_flux(flux, "cancel", "bad")) == (
        2, "", "usage: flux cancel [OPTIONS] [JOBID...]\n"
        "flux-cancel: error: argument JOBID...: invalid JobID value: 'bad'\n")


def test_long_usage_wraps_as_argparse_does(flux):
    r = as_flux(flux, "jobs", "--bogus")
    lines = r.stderr.splitlines()[:-1]
    assert len(lines) > 1 and all(len(line) <= 78 for line in lines)
    # continuation lines line up under the first option; positionals start a line
    indent = " " * len("usage: flux-jobs ")
    assert all(line.startswith(indent) and line[len(indent)] != " " for line in lines[1:])
    assert lines[-1] == indent + "[JOBIDS ...]"
    assert " ".join(line.strip() for line in lines).startswith("usage: flux-jobs [-h] [-a] [-A] ")


# -- C commands (liboptparse): exit 1 ----------------------------------------------------


def test_c_command_errors(flux):
    assert outcome(as_flux(flux, "job", "urgency", "--bogus", "f1", "1")) == (
        1, "", "flux-job urgency: unrecognized option '--bogus'\n"
        "Try `flux-job urgency --help' for more information.\n")
    # liboptparse is POSIXLY_CORRECT: after the first operand, an option is an operand
    assert outcome(as_flux(flux, "job", "urgency", "f1", "--bogus")) == (
        1, "", 'flux-job: error parsing urgency: "--bogus"\n')
    assert outcome(as_flux(flux, "job", "wait-event", "bad", "start")) == (
        1, "", 'flux-job: error parsing jobid: "bad"\n')
    assert outcome(as_flux(flux, "job", "urgency", "f1", "bogus")) == (
        1, "", 'flux-job: error parsing urgency: "bogus"\n')
    assert outcome(as_flux(flux, "job", "eventlog", "f1234")) == (1, "", "flux-job: job f1234 not found\n")
    assert outcome(as_flux(flux, "job", "info", "f1234", "jobspec")) == (1, "", "flux-job: invalid job id\n")
    r = as_flux(flux, "job", "urgency")
    assert r.exit_code == 1 and r.stderr.startswith("Usage: flux-job urgency")
    # flux-kvs: log_err_exit ("%s", key); liboptparse's unknown subcommand
    assert outcome(as_flux(flux, "kvs", "get", "nosuch")) == (1, "", "flux-kvs: nosuch: No such file or directory\n")
    assert outcome(as_flux(flux, "kvs", "get", "resource")) == (1, "", "flux-kvs: resource: Is a directory\n")
    # (eventlog get: log_err_exit ("flux_kvs_lookup_get"))
    assert outcome(as_flux(flux, "kvs", "eventlog", "get", "nosuch")) == (
        1, "", "flux-kvs: flux_kvs_lookup_get: No such file or directory\n")
    assert as_flux(flux, "kvs", "bogus").stderr.splitlines()[0] == "Usage: flux-kvs [OPTIONS] COMMAND ARGS"
    assert outcome(as_flux(flux, "dmesg", "-d")) == (1, "", "flux-dmesg: --delta can only be used with --human\n")


def test_job_info_missing_keys_as_job_info_lookup_says(flux):
    pending = flux.submit("--urgency=hold", "true")
    assert outcome(as_flux(flux, "job", "info", pending, "R")) == (1, "", "flux-job: R: key not found\n")
    assert outcome(as_flux(flux, "job", "info", pending, "bogus")) == (1, "", "flux-job: bogus: key not found\n")
    assert outcome(as_flux(flux, "job", "info", pending, "guest.output")) == (
        1, "", "flux-job: guest.output: key not found\n")


def test_urgency_minus_one_is_a_value(flux):
    jobid = flux.submit("--urgency=hold", "true")
    for value in ("-1", "32", "-4294967264"):
        assert outcome(as_flux(flux, "job", "urgency", jobid, value)) == (
            1, "", f"flux-job: {jobid}: urgency value is out of range\n"), value
    # names in any case; -v reports the old urgency
    assert outcome(as_flux(flux, "job", "urgency", "-v", jobid, "EXPEDITE")) == (0, "", "old urgency: job held\n")


def test_c_commands_echo_ids_as_typed_python_ones_reencode(flux):
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    dec = flux.out("job", "id", jobid).strip()
    assert outcome(as_flux(flux, "job", "raise", "-s", "8", dec)) == (
        1, "", f"flux-job: raise {dec}: invalid exception severity\n")
    assert outcome(as_flux(flux, "cancel", "f1234")) == (1, "", "flux-cancel: ERROR: f234: unknown job id\n")


def test_module_load_errors(flux):
    assert outcome(as_flux(flux, "module", "load", "sched-simple")) == (
        1, "", "flux-module: load sched-simple: File exists\n")
    # a failed reload leaves no scheduler loaded, as in Flux
    assert outcome(as_flux(flux, "module", "reload", "sched-simple", "bogus-arg")) == (
        1, "", "flux-module: load sched-simple: Invalid argument\n")
    assert outcome(as_flux(flux, "module", "remove", "sched-simple")) == (
        1, "", "flux-module: remove sched-simple: No such file or directory\n")


def test_unknown_command(flux):
    assert outcome(as_flux(flux, "bogus")) == (1, "", "flux: `bogus' is not a flux command.  See 'flux --help'\n")
    r = flux.fails("bogus")
    assert r.stderr == "flux-lite: `bogus' is not a flux-lite command.  See 'flux-lite --help'\n"


# -- values checked after parsing: exit 1, Flux's words ------------------------------------


@pytest.mark.parametrize("args, message", [
    (("-N0", "true"), "node count must be an integer >= 1 (if set)"),
    (("-N", "foo", "true"), "--nodes: invalid int value 'foo'"),
    (("-t", "foo", "true"), "invalid Flux standard duration"),
    (("-t", "-5", "true"), "duration must not be negative"),
    (("-t", "-1m", "true"), "invalid Flux standard duration"),  # parse_fsd refuses a negative FSD
    (("-t", "inf", "true"), "duration must be a normal, finite value"),
    (("--cc=foo", "true"), "IDset(): Invalid argument: foo"),
    (("--urgency=bogus", "true"), "invalid literal for int() with base 10: 'bogus'"),
    (("--flags=bogus", "true"), "--flags: Unknown flag bogus"),
    ((), "job command and arguments are missing"),
])
def test_submit_values_checked_after_parsing(flux, args, message):
    assert outcome(as_flux(flux, "submit", *args)) == (1, "", f"flux-submit: ERROR: {message}\n")
    assert outcome(flux("submit", *args, check=False)) == (1, "", f"flux-lite submit: ERROR: {message}\n")
    assert flux.out("jobs", "-a", "-n") == ""


def test_minus_n_zero_is_one_task(flux):
    import json

    js = json.loads(flux.out("submit", "--dry-run", "-n0", "true"))
    assert js["resources"][0]["count"] == 1


# -- program names --------------------------------------------------------------------


def test_messages_carry_the_program_name(flux):
    jobid = flux.submit("-N1", "-t", "5m", "-S", "exec.test.run_duration=60s", "true")
    assert outcome(as_flux(flux, "update", jobid, "duration=foo")) == (
        1, "", "flux-update: ERROR: invalid Flux standard duration\n")
    assert outcome(as_flux(flux, "update", "-v", jobid, "duration=+5m")) == (
        0, "", "flux-update: INFO: updated attributes.system.duration to 600.0\n")
    assert outcome(as_flux(flux, "jobs", "-u", "nosuchuser")) == (
        1, "", "flux-jobs: ERROR: Invalid user nosuchuser specified\n")
    assert outcome(as_flux(flux, "cancel", "--all", "--dry-run")) == (0, "", "flux-cancel: Would cancel 1 job\n")
    # as flux-lite, the same words with flux-lite's names
    r = flux("update", "-v", jobid, "duration=+5m")
    assert r.stderr == "flux-lite update: INFO: updated attributes.system.duration to 900.0\n"
    r = flux.fails("update", code=2, env={"COLUMNS": "80"})
    # 81 columns: argparse puts the positionals on a line of their own
    assert r.stderr.splitlines() == [
        "usage: flux-lite update [-h] [-n] [-v] [--wait]",
        "                        JOBID KEY=VALUE [KEY=VALUE ...]",
        "flux-lite update: error: the following arguments are required: JOBID, KEY=VALUE"]


# -- option spellings -------------------------------------------------------------------


def test_python_commands_take_flux_hidden_aliases_not_abbreviations(flux):
    listing = flux.out("resource", "list", "--states=free")
    assert as_flux(flux, "resource", "list", "--state=free").stdout == listing
    assert flux.out("resource", "list", "--state", "free") == listing
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    assert as_flux(flux, "update", "--dry", jobid, "duration=1m").stdout == '{"attributes.system.duration": 60.0}\n'
    # FluxArgumentParser sets allow_abbrev=False
    r = as_flux(flux, "resource", "list", "--stat=free")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        2, "flux-resource: error: unrecognized arguments: --stat")


def test_c_commands_take_unique_prefixes(flux):
    jobid = flux.submit("true")
    full = flux.out("job", "eventlog", "--format=json", jobid)
    assert flux.out("job", "eventlog", "--form=json", jobid) == full
    assert flux.out("job", "eventlog", "--f", "json", jobid) == full
    # ambiguous (--time-format, --format? no: --f is unique above) and unknown prefixes are errors
    r = as_flux(flux, "job", "eventlog", "--xyz", jobid)
    assert outcome(r) == (1, "", "flux-job eventlog: unrecognized option '--xyz'\n"
                          "Try `flux-job eventlog --help' for more information.\n")


def test_options_after_the_command_belong_to_it(flux):
    import json

    js = json.loads(flux.out("submit", "--dry-run", "-N1", "echo", "--state=x", "--dry"))
    assert js["tasks"][0]["command"] == ["echo", "--state=x", "--dry"]


# -- flux-lite env, and scripts under flux-lite start -------------------------------------


def _env_without_instance(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLUX_LITE_STATE_DIR", "FLUX_F58_FORCE_ASCII", "COLUMNS")}
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8", **extra)
    return env


def test_env_prints_exports_and_runs_commands(flux):
    r = flux("env")
    state = pathlib.Path(flux.state_dir).absolute()
    lines = r.stdout.splitlines()
    assert lines[0] == f'export FLUX_LITE_STATE_DIR="{state}"'
    assert lines[1].startswith(f'export PATH="{state}/bin:')
    assert os.access(state / "bin" / "flux", os.X_OK)
    out = subprocess.run(["sh", "-c", 'eval "$(flux-lite env)"; command -v flux; flux jobs -a -n; '
                          'flux bogus; echo "rc=$?"'],
                         env=_env_without_instance(FLUX_LITE_STATE_DIR=str(state),
                                                   PATH=os.path.dirname(sys.executable) + ":/usr/bin:/bin"),
                         capture_output=True, text=True)
    assert out.stdout == f"{state}/bin/flux\nrc=1\n"
    assert out.stderr == "flux: `bogus' is not a flux command.  See 'flux --help'\n"
    r = flux("env", "sh", "-c", "exit 3", check=False)
    assert r.exit_code == 3


def test_env_without_an_instance(tmp_path):
    r = CliRunner().invoke(cli, ["--state-dir", str(tmp_path / "none"), "env"])
    assert r.exit_code == 1 and r.stderr.startswith("flux-lite env: ERROR: no flux-lite instance at ")


@pytest.mark.parametrize("name", ["basics", "errors", "queues", "named-queues", "dependencies", "admin"])
def test_flux_script_runs_unchanged(tmp_path, name):
    """A Flux-style test script, run as `flux-lite start --test-size=4 ./t.sh`
    (with `-c conf` when the script comes with a NAME.conf directory)."""
    import shutil

    script = tmp_path / f"{name}.sh"
    script.write_text((SCRIPTS / f"{name}.sh").read_text())
    script.chmod(0o755)
    config = []
    if (SCRIPTS / f"{name}.conf").is_dir():
        shutil.copytree(SCRIPTS / f"{name}.conf", tmp_path / "conf")
        config = ["-c", "conf"]
    out = subprocess.run([sys.executable, "-m", "flux_lite", "start", "--test-size=4", "--test-cores=2",
                          "--clock=virtual", *config, f"./{name}.sh"], cwd=tmp_path, env=_env_without_instance(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert out.stdout == (SCRIPTS / f"{name}.expected").read_text()
    assert out.returncode == 0


# -- TOML configuration, where Flux reads it ----------------------------------------------


@pytest.mark.parametrize("toml, message", [
    # Flux 0.88, housekeeping
    ('[job-manager.housekeeping]\nxyz = 42\n',
     "load: error updating job-manager: job-manager.housekeeping: 1 object item(s) left unpacked: xyz"),
    ('[job-manager.housekeeping]\n',
     "load: error updating job-manager: job-manager.housekeeping implies IMP but exec.imp is undefined"),
    ('[job-manager.housekeeping]\ncommand = [ "/bin/echo" ]\nrelease-after = "foo"\n',
     "load: error updating job-manager: job-manager.housekeeping.release-after FSD parse error"),
    # Flux 0.88, queues
    ('[queues.debug]\nrequires = "debug"\n',
     "load: error updating job-ingest: error parsing [queues.debug] config table: "
     "'requires' must be an array of property strings (RFC 20)"),
    ('[queues]\ndebug = 1\n',
     "load: error updating job-ingest: error parsing [queues.debug] config table: Expected object, got integer"),
    ('[queues.debug]\npolicy.limits.duration = "xyz"\n',
     "load: error updating job-ingest: error parsing [queues.debug.policy.limits] config table: "
     "'duration' is not a valid FSD"),
    ('[queues.debug]\n[policy.jobspec.defaults.system]\nqueue = "nope"\n',
     "load: error updating job-ingest: the [policy] config table defines a default queue nope "
     "that is not in [queues] table"),
])
def test_toml_config_load_errors_as_flux(flux, toml, message):
    assert outcome(as_flux(flux, "config", "load", input=toml)) == (1, "", f"flux-config: {message}\n")
    assert flux.out("config", "get") == "{}\n"


def test_toml_config_load_from_stdin_and_get_as_json(flux):
    toml = '[job-manager.housekeeping]\ncommand = [ "hk.sh" ]\nrelease-after = "0"\n'
    assert outcome(as_flux(flux, "config", "load", input=toml)) == (0, "", "")
    assert flux.out("config", "get", "job-manager.housekeeping") == '{"command":["hk.sh"],"release-after":"0"}\n'
    assert flux.out("config", "get", "job-manager.housekeeping.release-after") == "0\n"
    toml = '[policy.limits]\nduration = "1m"\n'
    flux("config", "load", input=toml)
    assert flux.out("config", "get", "policy") == '{"limits":{"duration":"1m"}}\n'  # as Flux 0.88
    assert flux.out("config", "get") == '{"policy":{"limits":{"duration":"1m"}}}\n'


def test_toml_config_from_a_path_file_or_directory(flux, tmp_path):
    confd = tmp_path / "conf.d"
    confd.mkdir()
    (confd / "a.toml").write_text('[policy.limits]\nduration = "1h"\n[access]\nallow-guest-user = true\n')
    (confd / "b.toml").write_text('[policy.limits]\nduration = "2h"\n')
    (confd / "ignored.yaml").write_text("policy: {limits: {duration: 9h}}\n")
    flux("config", "load", confd)
    # files merge in name order; Flux-only tables are kept and ignored
    assert flux.out("config", "get", "policy.limits.duration") == "2h\n"
    assert flux.out("config", "get", "access") == '{"allow-guest-user":true}\n'
    one = tmp_path / "one.toml"
    one.write_text('[policy.limits]\nduration = "3h"\n')
    flux("config", "load", one)
    assert flux.out("config", "get") == '{"policy":{"limits":{"duration":"3h"}}}\n'
    bad = tmp_path / "bad.toml"
    bad.write_text('[policy.limits]\nduration = \n')
    r = as_flux(flux, "config", "load", bad)
    assert r.exit_code == 1 and r.stderr.startswith(f"flux-config: Error parsing config: {bad}:2: ")
    r = as_flux(flux, "config", "load", tmp_path / "missing.toml")
    assert outcome(r) == (1, "", f"flux-config: Error parsing config: {tmp_path}/missing.toml: "
                                 "No such file or directory\n")


def test_start_reads_a_toml_config_directory(tmp_path):
    confd = tmp_path / "conf.d"
    confd.mkdir()
    (confd / "resource.toml").write_text('[[resource.config]]\nhosts = "vm[0-1]"\ncores = "0-3"\n')
    (confd / "limits.toml").write_text('[policy.limits]\nduration = "1h"\n')
    from conftest import Flux

    flux = Flux(tmp_path / "state")
    flux("start", "--clock=virtual", "-c", confd)
    assert flux.out("resource", "list", "-no", "{nnodes} {ncores} {nodelist}").splitlines()[0] == "2 8 vm[0-1]"
    r = flux.fails("submit", "-t", "2h", "true")
    assert r.stderr == "flux-lite submit: ERROR: requested duration (2h) exceeds policy limit of 1h\n"


# -- exec.default-run-duration: ordinary commands in a rehearsed Flux script ------------


def test_default_run_duration_lets_plain_jobs_finish(flux_factory):
    flux = flux_factory("--test-size=2", config="exec:\n  default-run-duration: 5s\n", name="rd")
    start = flux.now()
    r = flux("run", "./simulate", "--steps=10")  # a program flux-lite does not emulate
    assert r.exit_code == 0
    jobid = flux.out("jobs", "-a", "-no", "{id.f58}").strip()
    events = flux.events(jobid)
    finish = next(e for e in events if e["name"] == "finish")
    assert finish["context"] == {"status": 0}
    assert finish["timestamp"] - next(e["timestamp"] for e in events if e["name"] == "start") == 5.0
    assert flux.now() - start >= 5.0
    # a job with exec.test keeps its own run time
    other = flux.submit("-S", "exec.test.run_duration=60s", "true")
    flux.advance("10s")
    assert flux.state(other) == "RUN"
    # an emulated command takes its own time
    now = flux.now()
    flux("run", "true")
    flux("run", "sleep", "1")
    assert flux.now() == now + 1


def test_without_default_run_duration_plain_jobs_run_to_their_limit(flux, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simulate").write_text("#!/usr/bin/python3\n")  # a program here, not one flux-lite emulates
    jobid = flux.submit("-t", "1m", "./simulate")
    flux.advance("59s")
    assert flux.state(jobid) == "RUN"
    flux.advance("2s")
    assert flux.out("jobs", "-no", "{result}", jobid).strip() == "TIMEOUT"


# -- resource status -s STATE and the drain listing, as flux-resource prints them ---------

VALID_STATES = "all,online,avail,offline,exclude,drain,draining,drained,torpid,allocated,housekeeping"


def test_status_states_help_and_errors(flux):
    assert outcome(as_flux(flux, "resource", "status", "-s", "help")) == (
        0, "", f"flux-resource: INFO: valid states: {VALID_STATES}\n")
    assert outcome(as_flux(flux, "resource", "status", "-s", "avail,foo")) == (
        1, "", "flux-resource: ERROR: Invalid resource state foo specified\n"
        f"flux-resource: INFO: valid states: {VALID_STATES}\n")


def test_status_lists_the_states_asked_for(flux):
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    flux("resource", "drain", "1", "broken")
    flux("resource", "drain", "2-3", "bad fan")
    head = "       STATEUP NNODES NODELIST\n"
    assert flux.out("resource", "status") == head + (
        "       avail ✔      1 node0\n"
        "     drained ✔      3 node[1-3]\n")
    assert flux.out("resource", "status", "-s", "drain") == head + (
        "    draining ✔      0 \n"
        "     drained ✔      3 node[1-3]\n")
    assert flux.out("resource", "status", "-s", "allocated,avail") == head + (
        "       avail ✔      1 node0\n"
        "   allocated ✔      1 node0\n")
    assert flux.out("resource", "status", "-s", "all") == head + (
        "       avail ✔      1 node0\n"
        "     exclude ✔      0 \n"
        "   allocated ✔      1 node0\n"
        "      torpid ✔      0 \n"
        "housekeeping ✔      0 \n"
        "    draining ✔      0 \n"
        "     drained ✔      3 node[1-3]\n")
    assert flux.out("resource", "status", "-s", "offline") == head + (
        "      avail* ✗      0 \n"
        "    exclude* ✗      0 \n"
        "     torpid* ✗      0 \n"
        "housekeeping* ✗      0 \n")
    # one line per reason in the long format; -i limits the nodes
    assert flux.out("resource", "status", "-o", "long", "-s", "drained") == (
        "       STATEUP NNODES REASON                         NODELIST\n"
        "     drained ✔      1 broken                         node1\n"
        "     drained ✔      2 bad fan                        node[2-3]\n")
    assert flux.out("resource", "status", "-s", "drained", "-i", "node[2-3]", "-no", "{nnodes} {ranks}") == "2 2-3\n"
    # the hidden alias of Flux's parser
    assert as_flux(flux, "resource", "status", "--state=drain", "-n").stdout == \
        "    draining ✔      0 \n     drained ✔      3 node[1-3]\n"
    # a drained node still running a job is draining
    flux("resource", "drain", "0", "later")
    assert flux.out("resource", "status", "-s", "drain", "-no", "{state} {nodelist}") == \
        "draining node0\ndrained node[1-3]\n"
    flux("cancel", jobid)


def test_drain_listing_and_errors(flux):
    assert flux.out("resource", "drain") == "TIME         STATE    REASON                         NODELIST\n"  # 04
    flux("resource", "drain", "1", "broken")
    assert outcome(as_flux(flux, "resource", "drain", "1", "again")) == (
        1, "", "flux-resource: ERROR: [Errno 17] rank 1 already drained\n"
        "flux-resource: INFO: Use --force to overwrite existing drain reason\n")
    assert outcome(as_flux(flux, "resource", "drain", "1-2", "again")) == (
        1, "", "flux-resource: ERROR: [Errno 17] rank 1 already drained\n"
        "flux-resource: INFO: Use --force to overwrite existing drain reason\n")
    for target, message in (("9", "[Errno 22] idset is out of range"),
                            ("nosuchhost", "[Errno 22] invalid targets: invalid hosts: nosuchhost"),
                            ("foo[", "[Errno 22] invalid targets: Hostlist cannot be decoded")):
        assert outcome(as_flux(flux, "resource", "drain", target)) == (1, "", f"flux-resource: ERROR: {message}\n")
    assert outcome(as_flux(flux, "resource", "drain", "-f", "-u", "1")) == (
        1, "", "flux-resource: ERROR: Only one of --force and --update may be specified\n")
    flux.advance("2h")
    # --update keeps rank 1's reason and drains rank 2; --force replaces the reason, not the time
    flux("resource", "drain", "-u", "1-2", "upd")
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}", "-o", "long").splitlines() == [
        "Jan01 00:00  drained  1        broken                         node1",
        "Jan01 02:00  drained  2        upd                            node2"]
    flux("resource", "drain", "-f", "1", "replaced")
    assert flux.out("resource", "drain", "-no", "{timestamp!d:%H:%M} {reason} {nodelist}") == \
        "00:00 replaced node1\n02:00 upd node2\n"
    flux("resource", "drain", "-ff", "1", "again")
    assert flux.out("resource", "drain", "-no", "{timestamp!d:%H:%M} {reason} {nodelist}") == \
        "02:00 again node1\n02:00 upd node2\n"
    r = flux.fails("resource", "undrain", "3")
    assert r.stderr == "flux-lite resource: ERROR: rank 3 not drained\n"  # as real Flux 0.88 says it


def test_resource_format_errors_are_plain(flux):
    for args in (("list",), ("status",), ("drain",)):
        assert outcome(as_flux(flux, "resource", *args, "-o", "{foo}")) == (
            1, "", "flux-resource: ERROR: Unknown format field: foo\n"), args
    assert outcome(as_flux(flux, "housekeeping", "list", "-o", "{foo}")) == (
        1, "", "flux-housekeeping: ERROR: Error in user format: Unknown format field: foo\n")


# -- the README's "Using it" block runs verbatim -------------------------------------------


def _readme_block():
    text = (SCRIPTS.parent.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using it\n", 1)[1].split("\n## ", 1)[0]
    lines = [line[4:] for line in section.splitlines() if line.startswith("    ")]
    assert lines and lines[0].startswith("flux-lite start")
    return lines


def test_readme_using_it_block_runs_as_printed(tmp_path):
    script = "set -e\n" + "\n".join(_readme_block()) + "\n"
    env = _env_without_instance(FLUX_LITE_STATE_DIR=str(tmp_path / "state"),
                                PATH=os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    out = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (out.returncode, out.stderr) == (0, "")
    lines = out.stdout.splitlines()
    assert lines[0] == "ƒSZYcoq"
    # the update lands on a running job; housekeeping holds the node once it ends
    assert "     ƒSZYcoq      1       1       1m node0" in lines
    assert lines[-1] == "     ƒSZYcoq root     hostname   CD      1      1      10m node0"


# -- jobs: warnings and unknown ids, as flux-jobs gives them --------------------------------


def test_jobs_warnings_and_unknown_ids(flux):
    jobid = flux.submit("-N1", "-S", "exec.test.run_duration=60s", "true")
    r = as_flux(flux, "jobs", "-a", "-no", "{id.f58} {status}", jobid)
    assert outcome(r) == (0, f"{jobid} RUN\n", "flux-jobs: WARNING: Filtering options ignored with jobid list\n")
    r = as_flux(flux, "jobs", "-a", "-f", "running", "-no", "{id.f58}")
    assert outcome(r) == (0, f"{jobid}\n", "flux-jobs: WARNING: Both -a and --filter specified, ignoring -a\n")
    # each unknown id is reported as typed; exit 1 only when none is known
    assert outcome(as_flux(flux, "jobs", "f1234")) == (1, "", "JobID f1234 unknown\n")
    r = as_flux(flux, "jobs", "-no", "{id.f58}", "f1234", jobid)
    assert outcome(r) == (0, f"{jobid}\n", "JobID f1234 unknown\n")


def test_housekeeping_list_include_unknown_host(flux):
    assert outcome(as_flux(flux, "housekeeping", "list", "-i", "nosuchhost")) == (
        1, "", "flux-housekeeping: ERROR: host 'nosuchhost' not found\n")
    assert flux.out("housekeeping", "list", "-i", "node[0-1]", "-n") == ""


def test_a_flux_uri_that_is_no_uri_fails_to_connect(flux):
    # Flux's tests set FLUX_URI=/wrong and expect every command that connects to fail
    env = {"FLUX_URI": "/wrong"}
    assert outcome(as_flux(flux, "job", "raise", "f1", env=env)) == (
        1, "", "flux-job: flux_open: No such file or directory\n")
    assert outcome(as_flux(flux, "jobs", env=env)) == (
        1, "", "flux-jobs: ERROR: Unable to connect to Flux: Unable to find connector name '/wrong'\n")
    assert outcome(as_flux(flux, "job", "id", "f1", env=env))[0] == 0  # it connects to nothing
    # a real URI (an enclosing Flux's) changes nothing, and flux-lite's own name ignores it
    assert outcome(as_flux(flux, "jobs", env={"FLUX_URI": "local:///run/flux/local"}))[0] == 0
    assert flux("jobs", env=env).exit_code == 0
