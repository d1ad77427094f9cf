"""resource.exclude and [job-manager.housekeeping] checked as Flux checks them.

Flux 0.88's words: the resource module's (exclude.c, inventory.c, rlist.c)
when it loads with an exclude set it cannot use, and the job manager's
housekeeping config parser with jansson's strict unpack.
"""

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli
from test_flux_words import as_flux, outcome


def _start(tmp_path, toml, size=4):
    conf = tmp_path / "conf.toml"
    conf.write_text(toml)
    state = tmp_path / "new"
    r = CliRunner().invoke(cli, ["--state-dir", str(state), "start", f"--test-size={size}", "-c", str(conf)],
                           catch_exceptions=False)
    return r, state


# hosts can be named only when R is configured (Flux's resource module has no R
# to map them with before it discovers the instance's resources)
CONFIGURED_R = '[[resource.config]]\nhosts = "node[0-3]"\n'
UNMAPPABLE = "R is unavailable for mapping hostnames to ranks"


@pytest.mark.parametrize("exclude, message, R", [
    ('"4"', "exclude set 4 is out of range", ""),
    ('"0-9"', "exclude set 0-9 is out of range", CONFIGURED_R),
    ('"0-999999999"', "exclude set 0-999999999 is out of range", ""),
    ('"nosuch"', "error decoding exclude set nosuch: invalid targets: invalid hosts: nosuch", CONFIGURED_R),
    ('"node[3-5],foo"', "error decoding exclude set node[3-5],foo: invalid targets: invalid hosts: node[4-5],foo",
     CONFIGURED_R),
    ('"[["', "error decoding exclude set [[: invalid targets: Hostlist cannot be decoded", CONFIGURED_R),
    ('"[["', f"error decoding exclude set [[: {UNMAPPABLE}", ""),
    ('"node1"', f"error decoding exclude set node1: {UNMAPPABLE}", ""),
    ("3", "error parsing [resource] configuration: Expected string, got integer", ""),
])
def test_start_refuses_an_exclude_set_it_cannot_use(tmp_path, exclude, message, R):
    r, state = _start(tmp_path, f"[resource]\nexclude = {exclude}\n{R}")
    assert outcome(r) == (1, "", f"flux-lite start: ERROR: {message}\n")
    assert not state.exists()  # nothing was created


@pytest.mark.parametrize("exclude, ranks, R", [
    ('"3"', "3", ""), ('"node[1-2]"', "1-2", CONFIGURED_R), ('""', "", "")])
def test_start_takes_an_exclude_set_within_the_instance(tmp_path, exclude, ranks, R):
    r, state = _start(tmp_path, f"[resource]\nexclude = {exclude}\n{R}")
    assert r.exit_code == 0, r.stderr
    out = CliRunner().invoke(cli, ["--state-dir", str(state), "resource", "status", "-s", "exclude", "-no",
                                   "{ranks}"]).stdout
    assert out.strip() == ranks


@pytest.mark.parametrize("exclude, message", [
    ("9", "exclude set 9 is out of range"),
    ("node7", "error decoding exclude set node7: invalid targets: invalid hosts: node7"),
])
def test_config_load_refuses_an_exclude_set_the_instance_cannot_use(flux, exclude, message):
    before = flux.out("config", "get")
    r = as_flux(flux, "config", "load", input=f'[resource]\nexclude = "{exclude}"\n')
    assert outcome(r) == (1, "", f"flux-config: load: error updating resource: {message}\n")
    assert flux.out("config", "get") == before
    as_flux(flux, "config", "load", input='[resource]\nexclude = "node3"\n')
    assert flux.out("config", "get", "resource.exclude") == "node3\n"


@pytest.mark.parametrize("table, message", [
    # jansson's strict unpack: value types first, in the parser's key order
    ('command = ["true"]\nrelease-after = 5\n', "job-manager.housekeeping: Expected string, got integer"),
    ('command = ["true"]\nuse-systemd-unit = "yes"\n',
     "job-manager.housekeeping: Expected true or false, got string"),
    ('command = ["true"]\nexit-on-first-error = 1\n',
     "job-manager.housekeeping: Expected true or false, got integer"),
    ('command = ["true"]\nrelease-after = 5\nbogus = 1\n', "job-manager.housekeeping: Expected string, got integer"),
    # then the keys left over, all of them
    ('command = ["true"]\nxyz = 1\nabc = 2\n', "job-manager.housekeeping: 2 object item(s) left unpacked: xyz, abc"),
    # then release-after, then the command
    ('command = "true"\nrelease-after = "soon"\n', "job-manager.housekeeping.release-after FSD parse error"),
    ('command = "true"\n', "error creating housekeeping command"),
    ('command = [1]\n', "error creating housekeeping command"),
    ('command = []\n', "error creating housekeeping command"),
])
def test_housekeeping_config_errors_as_flux(flux, table, message):
    r = as_flux(flux, "config", "load", input="[job-manager.housekeeping]\n" + table)
    assert outcome(r) == (1, "", f"flux-config: load: error updating job-manager: {message}\n")


def test_housekeeping_config_errors_at_start(tmp_path):
    r, state = _start(tmp_path, '[job-manager.housekeeping]\ncommand = ["true"]\nrelease-after = 5\n')
    assert outcome(r) == (1, "", "flux-lite start: ERROR: job-manager.housekeeping: Expected string, got integer\n")
    assert not state.exists()


# -- submit --dry-run: the environment, as Flux's jobspecs carry it ------------------------


def test_dry_run_jobspec_carries_the_environment_after_duration(flux, tmp_path, monkeypatch):
    import json
    import os

    monkeypatch.chdir(tmp_path)
    out = flux.out("submit", "--dry-run", "-N1", "-t", "5m", "-S", "exec.test.run_duration=60s", "hostname",
                   env={"FLUX_LITE_DRY_RUN_TEST": "yes"})
    system = json.loads(out)["attributes"]["system"]
    # Flux's order: duration, environment, cwd, then what the options add
    assert list(system) == ["duration", "environment", "cwd", "shell", "exec"]  # (shell: the rlimits)
    assert system["environment"]["FLUX_LITE_DRY_RUN_TEST"] == "yes"
    assert system["environment"] == {**os.environ, "FLUX_LITE_DRY_RUN_TEST": "yes",
                                     "FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1"}
    assert out.startswith('{"resources": [{"type": "node", "count": 1, "exclusive": true, ')
    assert f'"cwd": "{tmp_path}", ' in out
    assert out.endswith('"exec": {"test": {"run_duration": "60s"}}}}, "version": 1}\n')
    # run --dry-run too; nothing was submitted
    system = json.loads(flux.out("run", "--dry-run", "true"))["attributes"]["system"]
    assert list(system)[:3] == ["duration", "environment", "cwd"]
    assert flux.out("jobs", "-a", "-n") == ""


def test_dry_run_with_cc_prints_the_first_copy_as_flux_submit_does(flux):
    import json

    out = flux.out("submit", "--dry-run", "--cc=3-5", "echo", "{cc}")
    lines = out.splitlines()
    assert len(lines) == 1
    js = json.loads(lines[0])
    assert js["tasks"][0]["command"] == ["echo", "3"]
    assert js["attributes"]["system"]["environment"]["FLUX_JOB_CC"] == "3"


def test_submitted_jobspec_has_no_environment(flux):
    import json

    jobid = flux.submit("-S", "exec.test.run_duration=1s", "true")
    js = json.loads(flux.out("job", "info", jobid, "jobspec"))
    assert "environment" not in js["attributes"]["system"]  # ingest drops it, as Flux's
