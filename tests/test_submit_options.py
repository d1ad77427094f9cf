"""Submission options recorded in the jobspec as flux submit records them
(--dry-run prints it), and the job's environment kept for its commands."""

import json
import os

from click.testing import CliRunner

from flux_lite.cli.main import cli


def as_flux(flux, *args, env=None, input=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", input=input,
                           catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def dry(flux, *args, env=None, rlimit=False):
    """The jobspec --dry-run prints; without rlimit, less the limits of this
    process it always records (shell.options.rlimit)."""
    code, out, err = as_flux(flux, "submit", "--dry-run", *args, env=env)
    assert (code, err) == (0, ""), (code, err)
    js = json.loads(out)
    if not rlimit:
        shell = js["attributes"]["system"]["shell"]
        del shell["options"]["rlimit"]
        if not shell["options"]:
            del js["attributes"]["system"]["shell"]
    return js


def system(js):
    return js["attributes"]["system"]


def test_env_rules_in_order(flux):
    env = {"FOO": "bar", "FOO_ONE": "1", "FOO_TWO": "2"}
    assert system(dry(flux, "--env=-*", "hostname"))["environment"] == {}
    assert system(dry(flux, "--env-remove=*", "hostname"))["environment"] == {}
    assert system(dry(flux, "--env=-*", "--env", "FOO", "hostname", env=env))["environment"] == {"FOO": "bar"}
    assert system(dry(flux, "--env=-*", "--env=FOO_*", "hostname", env=env))["environment"] == {
        "FOO_ONE": "1", "FOO_TWO": "2"}
    assert system(dry(flux, "--env=-*", "--env=/^FOO_.*/", "hostname", env=env))["environment"] == {
        "FOO_ONE": "1", "FOO_TWO": "2"}
    assert system(dry(flux, "--env=-*", "--env", "PATH=/bin", "hostname"))["environment"] == {"PATH": "/bin"}
    assert system(dry(flux, "--env=-*", "--env", "FOO=$FOO:baz", "hostname", env=env))["environment"] == {
        "FOO": "bar:baz"}
    # rules apply in command-line order, whichever option gives them
    js = dry(flux, "--env=-*", "--env=FOO_*", "--env-remove=FOO_ONE", "hostname", env=env)
    assert system(js)["environment"] == {"FOO_TWO": "2"}
    js = dry(flux, "--env-remove=FOO_ONE", "--env=-*", "--env=FOO_*", "hostname", env=env)
    assert system(js)["environment"] == {"FOO_ONE": "1", "FOO_TWO": "2"}
    # a mustache value is the shell's to expand
    js = dry(flux, "--env=-*", "--env=RANK={{rank}}", "hostname")
    assert (system(js)["environment"], system(js)["shell"]["options"]["env-expand"]) == ({}, {"RANK": "{{rank}}"})
    assert as_flux(flux, "submit", "--dry-run", "--env=X=$NOPE_NOT_SET", "true") == (
        1, "", "flux-submit: ERROR: --env: Variable 'NOPE_NOT_SET' not found in X=$NOPE_NOT_SET\n")
    # the environment comes right after the duration, as Flux's Jobspec sets it
    assert list(system(dry(flux, "--env=-*", "true"))) == ["duration", "environment", "cwd"]


def test_env_file(flux, tmp_path):
    envfile = tmp_path / "envfile"
    envfile.write_text("-*\nFOO=bar\nBAR=${FOO}/baz\n")
    for arg in (f"--env=^{envfile}", f"--env-file={envfile}"):
        assert system(dry(flux, arg, "hostname"))["environment"] == {"FOO": "bar", "BAR": "bar/baz"}
    code, out, err = as_flux(flux, "submit", "--dry-run", f"--env-file={tmp_path}/none", "true")
    assert (code, out) == (1, "") and err.startswith("flux-submit: ERROR: --env: [Errno 2] No such file or directory")


def test_shell_options_signal_taskmap_unbuffered(flux):
    opts = system(dry(flux, "--setopt", "foo=true", "-o", "baz", "-o", "bar.baz=42", "hostname"))["shell"]["options"]
    assert opts == {"foo": True, "baz": 1, "bar": {"baz": 42}}
    assert system(dry(flux, "--signal=SIGUSR2@2m", "true"))["shell"]["options"]["signal"] == {
        "signum": 12, "timeleft": 120.0}
    assert system(dry(flux, "--signal=@30", "true"))["shell"]["options"]["signal"] == {"signum": 10, "timeleft": 30.0}
    assert system(dry(flux, "--signal=TERM", "true"))["shell"]["options"]["signal"] == {"signum": 15, "timeleft": 60}
    assert as_flux(flux, "submit", "--signal=FOO", "true") == (
        1, "", "flux-submit: ERROR: --signal=FOO: signal 'FOO' is invalid\n")
    assert as_flux(flux, "submit", "--signal=0", "true") == (
        1, "", "flux-submit: ERROR: --signal=0: signal must be > 0\n")
    assert system(dry(flux, "--taskmap=cyclic:2", "true"))["shell"]["options"]["taskmap"] == {
        "scheme": "cyclic", "value": "2"}
    assert system(dry(flux, "--taskmap=block", "true"))["shell"]["options"]["taskmap"] == {
        "scheme": "block", "value": ""}
    opts = system(dry(flux, "-u", "true"))["shell"]["options"]
    assert opts == {"output": {"stdout": {"buffer": {"type": "none"}}, "stderr": {"buffer": {"type": "none"}},
                               "batch-timeout": 0.05},
                    "input": {"batch-timeout": 0.0}}


def test_setattr_forms_cwd_bank_flags(flux, tmp_path):
    attrs = dry(flux, "--env=-*", "--setattr", "user.meep=false", "--setattr", 'user.foo="xxx"',
                "--setattr", "user.foo2=yyy", "--setattr", "foo", "--setattr", ".test=a", "--setattr", "test2=b",
                "--setattr", "system.bar=42", "-S", "baz", "-Sbiz=4", "hostname")["attributes"]
    assert attrs["user"] == {"meep": False, "foo": "xxx", "foo2": "yyy"}
    assert attrs["test"] == "a"
    assert {k: attrs["system"][k] for k in ("foo", "test2", "bar", "baz", "biz")} == {
        "foo": 1, "test2": "b", "bar": 42, "baz": 1, "biz": 4}
    value = [{"foo": "value", "bar": 42}, {"foo": "value2", "bar": None}]
    (tmp_path / "attr.json").write_text(json.dumps(value))
    assert dry(flux, "--setattr", f"^user.foo={tmp_path}/attr.json", "true")["attributes"]["user"]["foo"] == value
    (tmp_path / "bad.json").write_text("[ {foo: 1 ]")
    code, out, err = as_flux(flux, "submit", "--dry-run", "--setattr", f"^user.foo={tmp_path}/bad.json", "true")
    assert (code, out) == (1, "") and err.startswith(f"flux-submit: ERROR: --setattr: {tmp_path}/bad.json:")
    assert system(dry(flux, "--cwd=/foo/bar/baz", "hostname"))["cwd"] == "/foo/bar/baz"
    assert system(dry(flux, "-B", "mybank2", "hostname"))["bank"] == "mybank2"
    assert system(dry(flux, "--bank=mybank", "hostname"))["bank"] == "mybank"
    # --flags may be repeated
    job = flux.submit("--flags=debug", "--flags", "waitable", "true")
    assert flux.events(job)[0]["context"]["flags"] == 6
    assert as_flux(flux, "submit", "--flags=notaflag", "true")[0] == 1
    # the command after --, and options after the command are the command's
    assert dry(flux, "-n2", "--", "hostname", "--n=2")["tasks"][0]["command"] == ["hostname", "--n=2"]
    assert dry(flux, "-n2", "hostname", "--job-name=foo")["tasks"][0]["command"] == ["hostname", "--job-name=foo"]


def test_add_file(flux, tmp_path):
    (tmp_path / "file.txt").write_text("This is a test file\n")
    (tmp_path / "file.binary").write_bytes(b"\xff\xfe\x00\x01")
    files = system(dry(flux, f"--add-file={tmp_path}/file.txt", f"--add-file=bin={tmp_path}/file.binary",
                       "--add-file=test:0700=#!/bin/sh\\ntrue\\n", "cat"))["files"]
    mode = os.stat(tmp_path / "file.txt").st_mode
    assert files["file.txt"] == {"mode": mode, "size": 20, "data": "This is a test file\n", "encoding": "utf-8"}
    assert files["bin"]["encoding"] == "base64" and files["bin"]["data"] == "//4AAQ=="
    assert files["test"] == {"mode": 0o100700, "data": "#!/bin/sh\ntrue\n", "encoding": "utf-8"}
    code, out, err = as_flux(flux, "submit", "--add-file=/nonexistent", "true")
    assert (code, out) == (1, "") and "--add-file=/nonexistent: [Errno 2] No such file or directory" in err
    assert as_flux(flux, "submit", f"--add-file={tmp_path}", "true")[0] == 1


def test_per_resource_options(flux):
    js = dry(flux, "--env=-*", "-N", "2", "--tasks-per-node=2", "true")
    assert js["resources"] == [{"type": "node", "count": 2, "exclusive": True, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}], "label": "task"}]}]
    assert system(js)["shell"]["options"]["per-resource"] == {"type": "node", "count": 2}
    js = dry(flux, "--cores=4", "--tasks-per-core=2", "true")
    assert js["resources"] == [{"type": "slot", "count": 4, "with": [{"type": "core", "count": 1}], "label": "task"}]
    assert system(js)["shell"]["options"]["per-resource"] == {"type": "core", "count": 2}
    assert as_flux(flux, "submit", "--cores=2", "-n2", "true") == (
        1, "", "flux-submit: ERROR: Per-resource options can't be used with per-task options. "
               "(See --help for details)\n")
    assert as_flux(flux, "submit", "--tasks-per-node=1", "--tasks-per-core=1", "-N1", "true") == (
        1, "", "flux-submit: ERROR: Do not specify both the number of tasks per node and per core\n")
    assert as_flux(flux, "submit", "--gpus-per-node=1", "true") == (
        1, "", "flux-submit: ERROR: --gpus-per-node requires --nodes\n")
    assert as_flux(flux, "submit", "--tasks-per-node=0", "-N1", "true") == (
        1, "", "flux-submit: ERROR: --tasks-per-node must be >= 1\n")
    # four tasks on two nodes: hostname runs on each
    out = flux.out("run", "-N2", "--tasks-per-node=2", "-l", "hostname")
    assert sorted(out.splitlines()) == ["0: node0", "1: node0", "2: node1", "3: node1"]


def test_the_job_keeps_its_environment(flux):
    env = {"HOME": "/home/someone", "MYVAR": "hello"}
    assert as_flux(flux, "run", "printenv", "HOME", env=env) == (0, "/home/someone\n", "")
    assert as_flux(flux, "run", "--env=MYVAR=changed", "printenv", "MYVAR", env=env) == (0, "changed\n", "")
    assert as_flux(flux, "run", "--env=-MYVAR", "printenv", "MYVAR", env=env)[0] == 1
    assert as_flux(flux, "run", "sh", "-c", "echo $MYVAR; exit 3", env=env) == (
        3, "hello\n", "flux-job: task(s) exited with exit code 3\n")
    # J keeps it (the stored jobspec does not, as Flux's ingest drops it)
    job = flux.submit("--env=-*", "--env=ONLY=1", "true")
    assert json.loads(flux.out("job", "info", job, "jobspec"))["attributes"]["system"].get("environment") is None
    code, out, err = as_flux(flux, "job", "info", "-o", job, "jobspec")
    assert json.loads(out)["attributes"]["system"]["environment"] == {"ONLY": "1"}
    # each --cc copy has its FLUX_JOB_CC
    code, out, err = as_flux(flux, "submit", "--quiet", "--watch", "--cc=0-3", "sh", "-c", "echo $FLUX_JOB_CC")
    assert (code, sorted(out.split()), err) == (0, ["0", "1", "2", "3"], "")


def test_rlimit_and_input_recorded_as_flux_records_them(flux, tmp_path):
    import resource

    # (Flux's dry-run of these options, t2710 and a real 0.88)
    js = dry(flux, "--rlimit=-*,core", "--signal=USR1@60", "--output=o.txt", "--input=in.txt", "-u",
             "--setopt=x=1", "true", rlimit=True)
    assert json.dumps(system(js)["shell"]) == (
        '{"options": {"input": {"stdin": {"type": "file", "path": "in.txt"}, "batch-timeout": 0.0}, '
        '"output": {"stdout": {"type": "file", "path": "o.txt", "buffer": {"type": "none"}}, '
        '"stderr": {"buffer": {"type": "none"}}, "batch-timeout": 0.05}, '
        f'"rlimit": {{"core": {resource.getrlimit(resource.RLIMIT_CORE)[0]}}}, '
        '"signal": {"signum": 10, "timeleft": 60.0}, "x": 1}}')
    limits = system(dry(flux, "--rlimit=nofile=100,-core", "--rlimit=stack=unlimited", "true",
                        rlimit=True))["shell"]["options"]["rlimit"]
    assert list(limits) == ["cpu", "fsize", "data", "stack", "nofile", "as", "rss", "nproc"]
    assert (limits["nofile"], limits["stack"]) == (100, -1)
    # every limit is recorded with --dry-run, as Flux records it in every job
    assert "memlock" not in system(dry(flux, "true", rlimit=True))["shell"]["options"]["rlimit"]
    assert as_flux(flux, "submit", "--rlimit=foo=1", "true") == (1, "", 'flux-submit: ERROR: Invalid rlimit "foo"\n')
    assert as_flux(flux, "submit", "--rlimit=nofile=abc", "true") == (
        1, "", "flux-submit: ERROR: Invalid value in nofile=abc\n")
    # a submitted job keeps the limits asked for, and no others when none are
    job = flux.submit("--rlimit=-*,nofile=64", "true")
    assert json.loads(flux.out("job", "info", job, "jobspec"))["attributes"]["system"]["shell"] == {
        "options": {"rlimit": {"nofile": 64}}}
    job = flux.submit("true")
    assert "shell" not in json.loads(flux.out("job", "info", job, "jobspec"))["attributes"]["system"]
    # an idset is per-task input, which only run takes (Flux's words, from its logger "flux")
    assert as_flux(flux, "submit", "--input=0", "true") == (
        1, "", "flux: ERROR: per-task input not supported for submit\n")
