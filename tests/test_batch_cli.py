"""flux batch (a job whose jobspec carries its script, as Flux's),
flux bulksubmit and flux alloc's clear refusal."""

import json

from click.testing import CliRunner

from flux_lite.cli.main import cli


def as_flux(flux, *args, env=None, input=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", input=input,
                           catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


SCRIPT = "#!/bin/sh\n#FLUX: -N2 --job-name=myjob\n#FLUX: -t 10m\nflux run hostname\n"


def test_batch_jobspec_carries_the_script(flux, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT)
    code, out, err = as_flux(flux, "batch", "--dry-run", "--env=-*", str(script), "a1")
    assert (code, err) == (0, "")
    js = json.loads(out)
    assert js["resources"] == [{"type": "node", "count": 2, "exclusive": True, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}], "label": "task"}]}]
    assert js["tasks"] == [{"command": ["flux", "broker", "{{tmpdir}}/script", "a1"], "slot": "task",
                            "count": {"per_slot": 1}}]
    system = js["attributes"]["system"]
    assert (system["duration"], system["job"], system["environment"]) == (600.0, {"name": "myjob"}, {})
    assert system["shell"]["options"].pop("rlimit")
    assert system["shell"]["options"] == {"output": {"stdout": {"type": "file", "path": "flux-{{id}}.out"}},
                                          "per-resource": {"type": "node"}, "mpi": "none", "exit-timeout": "none"}
    assert system["files"] == {"script": {"mode": 0o100700, "data": SCRIPT, "encoding": "utf-8"}}
    # the command line's options over the directives
    js = json.loads(as_flux(flux, "batch", "--dry-run", "-N1", "-t", "5", str(script))[1])
    assert (js["resources"][0]["count"], js["attributes"]["system"]["duration"]) == (1, 300.0)
    # submitted: the job runs as a command flux-lite does not emulate (to its limit)
    code, out, err = as_flux(flux, "batch", str(script))
    jobid = out.strip()
    assert (code, err) == (0, "")
    assert flux.out("jobs", "-no", "{name} {nnodes} {status}", jobid) == "myjob 2 RUN\n"
    assert json.loads(flux.out("job", "info", jobid, "jobspec"))["attributes"]["system"]["files"]["script"][
        "data"] == SCRIPT


def test_batch_wrap_conf_and_errors(flux, tmp_path):
    js = json.loads(as_flux(flux, "batch", "--dry-run", "-n1", "--wrap", input="hostname\n")[1])
    system = js["attributes"]["system"]
    assert (system["files"]["script"]["data"], system["job"]["name"]) == ("#!/bin/sh\nhostname\n", "batch")
    js = json.loads(as_flux(flux, "batch", "--dry-run", "-n2", "--conf=resource.noverify=true",
                            "--broker-opts=-Sbroker.foo=1", "--wrap", "hostname")[1])
    assert js["tasks"][0]["command"] == ["flux", "broker", "-Sbroker.foo=1", "-c{{tmpdir}}/conf.json",
                                         "{{tmpdir}}/script"]
    assert js["attributes"]["system"]["files"]["conf.json"] == {
        "mode": 0o100600, "data": {"resource": {"noverify": True}}}
    (tmp_path / "noshebang.sh").write_text("echo hi\n")
    assert as_flux(flux, "batch", "-n1", str(tmp_path / "noshebang.sh")) == (
        1, "", f"flux-batch: ERROR: {tmp_path}/noshebang.sh does not appear to start with '#!'\n")
    assert as_flux(flux, "batch", "--wrap", "true") == (
        1, "", "flux-batch: ERROR: Number of slots to allocate must be specified\n")
    (tmp_path / "bad.sh").write_text("#!/bin/sh\n#FLUX: hostname\n")
    assert as_flux(flux, "batch", "-n1", str(tmp_path / "bad.sh")) == (
        1, "", f"flux-batch: ERROR: {tmp_path}/bad.sh: line 2: Unknown directive:  hostname\n")


def test_bulksubmit(flux):
    code, out, err = as_flux(flux, "bulksubmit", "--dry-run", "--job-name={}-{seq1}", "echo", "{}", "{1}",
                             ":::", "a", "b", ":::", "1", "2")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "bulksubmit: submit --job-name=a-1 echo a 1", "bulksubmit: submit --job-name=a-2 echo a 2",
        "bulksubmit: submit --job-name=b-3 echo b 1", "bulksubmit: submit --job-name=b-4 echo b 2"]
    # inputs from standard input; the jobs run and their output is watched
    assert as_flux(flux, "bulksubmit", "--quiet", "--watch", "echo", "{}", input="x\ny\n") == (0, "x\ny\n", "")
    # linked lists are taken in turn
    code, out, err = as_flux(flux, "bulksubmit", "--dry-run", "echo", "{0}", "{1}", ":::", "a", "b", ":::+", "1", "2")
    assert out.splitlines() == ["bulksubmit: submit echo a 1", "bulksubmit: submit echo b 2"]
    assert as_flux(flux, "bulksubmit", "echo", input="") == (
        1, "", "flux-bulksubmit: ERROR: no jobs provided for bulk submission\n")
    # --cc copies of each
    code, out, err = as_flux(flux, "bulksubmit", "--cc=1-2", "true", ":::", "a", "b")
    assert (code, len(out.split()), err) == (0, 4, "")


def test_alloc_says_what_to_do_instead(flux):
    code, out, err = as_flux(flux, "alloc", "-N1", "--conf=x=1")
    assert (code, out) == (1, "")
    assert err == ("flux-alloc: ERROR: flux-lite runs no processes, so it cannot start an interactive instance in "
                   "an allocation: submit a batch script (flux-lite batch), or a job (flux-lite submit, run)\n")


def test_bulksubmit_empty_separator(flux):
    # Flux's words (split's own); found by tests/test_fuzz.py as a traceback
    assert as_flux(flux, "bulksubmit", "--sep=", "--dry-run", "echo", "{}", input="a b\n") == (
        1, "", "flux-bulksubmit: ERROR: empty separator\n")


def test_bulksubmit_bad_replacement_is_one_error_line(flux):
    # str.format's own words, as flux-bulksubmit reports them (it was a traceback)
    for args in (["--job-name={", "true"], ["true", "{"], ["true", "{0!z}"]):
        code, out, err = as_flux(flux, "bulksubmit", "--dry-run", *args, input="x\n")
        assert (code, out) == (1, "")
        assert err in ("flux-bulksubmit: ERROR: Single '{' encountered in format string\n",
                       "flux-bulksubmit: ERROR: Unknown conversion specifier z\n")


def test_bulksubmit_lone_brace_in_an_option(flux):
    # (Flux's str.format raises ValueError, which its CLI reports as the error)
    r = flux.fails("bulksubmit", "--dry-run", "--taskmap", "{", "echo", "{}", input="a\n")
    assert r.stderr == "flux-lite bulksubmit: ERROR: Single '{' encountered in format string\n"
