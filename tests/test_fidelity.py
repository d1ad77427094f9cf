"""Fidelity bugs flux-core's own tests found (shared/sharness/results-notes.md):
each case is Flux 0.88's exact text and exit code, from its tests or sources."""

from click.testing import CliRunner

from flux_lite.cli.main import cli


def as_flux(flux, *args, input=None):
    """Run a command as `flux` (the program name) against flux's instance."""
    env = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1"}
    r = CliRunner().invoke(cli, [str(a) for a in args], input=input, env=env,
                           prog_name="flux", catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_kvs_eventlog_get_of_a_value_that_is_not_an_eventlog(flux):
    flux("kvs", "put", "test.noteventlog=foo", 'test.lines="{\\"timestamp\\":1,\\"name\\":\\"a\\"}\\n"')
    assert as_flux(flux, "kvs", "eventlog", "get", "test.noteventlog") == (
        1, "", "flux-kvs: cannot decode improperly formatted eventlog\n")
    # a string holding RFC 18 lines decodes, as the same bytes would in Flux's KVS
    assert as_flux(flux, "kvs", "eventlog", "get", "-u", "test.lines") == (
        0, '{"timestamp":1,"name":"a"}\n', "")


HK_SYSTEMD = "[exec]\nimp = \"/bin/echo\"\n[job-manager.housekeeping]\nuse-systemd-unit = true\n"
DEPRECATED = "job-manager.err[0]: job-manager.housekeeping.use-systemd-unit is deprecated - ignoring"


def test_use_systemd_unit_is_deprecated_at_config_load_and_start(flux, tmp_path):
    assert as_flux(flux, "config", "load", input=HK_SYSTEMD) == (0, "", "")
    assert flux.dmesg()[-1] == DEPRECATED
    conf = tmp_path / "hk.toml"
    conf.write_text(HK_SYSTEMD)
    again = as_flux(flux, "--state-dir", tmp_path / "s2", "start", "--clock=virtual", "-c", conf)
    assert again[0] == 0
    assert DEPRECATED in as_flux(flux, "--state-dir", tmp_path / "s2", "dmesg")[1]


def test_guest_queue_control_requires_owner_credentials(flux):
    import os

    guest = {"FLUX_HANDLE_USERID": str(os.getuid() + 1), "FLUX_HANDLE_ROLEMASK": "0x2"}
    for command, service in (("stop", "start"), ("start", "start"), ("disable", "enable"), ("enable", "enable"),
                             ("drain", "drain"), ("idle", "idle")):
        r = flux.fails("queue", command, env=guest)
        assert r.stderr == f"flux-lite queue: ERROR: {service}: Request requires owner credentials\n"


def test_drain_of_no_targets_and_the_undrain_event(flux):
    assert as_flux(flux, "resource", "drain", "") == (1, "", "flux-resource: ERROR: [Errno 22] idset is empty\n")
    assert as_flux(flux, "resource", "undrain", " ") == (1, "", "flux-resource: ERROR: idset is empty\n")
    flux("resource", "drain", "node0")
    flux("resource", "undrain", "node0")
    last = flux.out("kvs", "eventlog", "get", "resource.eventlog").splitlines()[-1]
    assert last.split(" ", 1)[1] == 'undrain idset="0" nodelist="node0" overwrite=0'


def test_resource_config_with_no_hosts(flux, tmp_path):
    conf = tmp_path / "empty.toml"
    conf.write_text("[resource]\nnoverify = true\nconfig = []\n")
    assert as_flux(flux, "--state-dir", tmp_path / "new", "start", "-c", conf, "true") == (
        1, "", "flux-start: error parsing [resource.config] array: no hosts configured\n")
    assert not (tmp_path / "new").exists()


# -- robustness ---------------------------------------------------------------------------


def test_start_and_restore_force_on_a_read_only_file_system(flux, tmp_path, monkeypatch):
    import errno
    import os

    archive = tmp_path / "a.tar"
    flux("dump", archive)

    def erofs(path, *args, **kw):
        # what a read-only mount answers, even for a name that does not exist
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    monkeypatch.setattr(os, "open", erofs)
    monkeypatch.setattr(os, "unlink", erofs)
    message = f"ERROR: {flux.state_dir}: cannot create the instance: Read-only file system\n"
    r = flux.fails("start", "-f", "--clock=virtual")
    assert r.stderr == "flux-lite start: " + message
    r = flux.fails("restore", "-f", archive)
    assert r.stderr == "flux-lite restore: " + message  # (before any of the archive is read)
    monkeypatch.undo()
    assert flux.out("jobs", "-an") == ""  # the instance is as it was


def test_job_submit_refuses_a_huge_yaml_jobspec_at_once(flux):
    # 14 MB of YAML took PyYAML half a minute before being refused for its size
    text = "version: 1\nattributes:\n  system:\n    x:\n" + "      - 1\n" * 110000
    r = flux.fails("job", "submit", input=text)
    assert r.stderr == "flux-lite job: ERROR: jobspec: YAML larger than 1024 KiB (a JSON jobspec may be larger)\n"


def test_config_with_a_huge_integer(flux, tmp_path):
    big = "1" * 5000  # past Python's integer conversion limit, whose error has no position
    for name, text, where in (("c.json", f'{{"instance":\n {{"x": {big}}}}}', ":2"),
                              ("c.toml", f"[instance]\nx = {big}\n", ":2"),
                              ("c.yaml", f"instance:\n  x: {big}\n", ": line 2")):
        path = tmp_path / name
        path.write_text(text)
        r = flux.fails("--state-dir", tmp_path / "new", "start", "-c", path)
        assert r.stderr == f"flux-lite start: ERROR: {path}{where}: too big integer\n"
    r = flux.fails("config", "load", input=f'{{"instance": {{"x": {big}}}}}')
    assert r.stderr == "flux-lite config: ERROR: parse error: stdin:1: too big integer\n"


def test_an_empty_state_dir_is_a_usage_error(flux):
    r = flux.fails("--state-dir", "", "jobs", code=2)
    assert r.stderr.endswith("\nError: Invalid value for '--state-dir': must not be empty\n")


def test_completion_under_the_program_name_flux():
    # the variable the scripts set, whatever the name flux-lite runs under
    env = {"_FLUX_LITE_COMPLETE": "bash_complete", "COMP_WORDS": "flux jo", "COMP_CWORD": "1"}
    r = CliRunner().invoke(cli, [], env=env, prog_name="flux", catch_exceptions=False)
    assert (r.exit_code, r.stdout) == (0, "plain,job\nplain,job-exec-override\nplain,jobs\nplain,jobtap\n")
    r = CliRunner().invoke(cli, [], env={"_FLUX_LITE_COMPLETE": "bash_source"}, prog_name="flux")
    assert "complete -o nosort -F _flux_completion flux\n" in r.stdout


def test_job_usage_on_a_missing_or_unknown_subcommand(flux):
    from flux_lite.cli.words import C_GROUP_COMMANDS

    for args in (("job",), ("job", "wrongsubcmd")):
        code, out, err = as_flux(flux, *args)
        lines = err.splitlines()
        assert (code, out, lines[:4]) == (1, "", ["Usage: flux-job [OPTIONS] COMMAND ARGS",
                                                  "  -h, --help             Display this message.", "",
                                                  "Common commands from flux-job:"])
        assert "   wait-event      Wait for an event " in lines
        # Flux's commands in Flux's order
        flux_order = [name for name, _doc in C_GROUP_COMMANDS["job"]]
        names = [line.split()[0] for line in lines[4:] if line.split()[0] in flux_order]
        assert names == sorted(names, key=flux_order.index) and {"id", "eventlog", "namespace"} <= set(names)


def test_job_namespace_reads_ids_from_stdin(flux):
    assert as_flux(flux, "job", "namespace", input="1\n f2 \n") == (0, "job-1\njob-1\n", "")
    assert as_flux(flux, "job", "namespace", "1", "2") == (0, "job-1\njob-2\n", "")
    assert as_flux(flux, "job", "namespace", "bad") == (1, "", 'flux-job: error parsing jobid: "bad"\n')
    assert as_flux(flux, "job", "namespace", "-1")[0] == 1


def test_wait_event_offsets_count_from_the_first_event(flux):
    held = flux.submit("--urgency=hold", "true")
    flux.advance("5s")
    flux("cancel", held)
    code, out, err = as_flux(flux, "job", "wait-event", "--time-format=offset", held, "exception")
    assert (code, out.split(" ")[:2], err) == (0, ["5.000000", "exception"], "")
    code, out, err = as_flux(flux, "job", "wait-event", "-v", "-T", "offset", held, "exception")
    stamps = [line.split(" ")[:2] for line in out.splitlines()]
    assert stamps[::4] == [["0.000000", "submit"], ["5.000000", "exception"]]


def test_wait_event_count_must_be_positive(flux):
    held = flux.submit("--urgency=hold", "true")
    for count in ("0", "-1"):
        assert as_flux(flux, "job", "wait-event", f"--count={count}", held, "clean") == (
            1, "", "flux-job: count must be > 0\n")
    # the job id is parsed first, as in Flux
    assert as_flux(flux, "job", "wait-event", "-c", "0", "bad", "clean") == (
        1, "", 'flux-job: error parsing jobid: "bad"\n')
