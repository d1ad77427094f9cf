"""flux getattr, lsattr, uptime, overlay status, logger,
module unload, config reload: what the brokers say, in Flux's words."""

from click.testing import CliRunner

from flux_lite import __version__
from flux_lite.cli.main import cli


def as_flux(flux, *args, env=None, input=None):
    full = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1", **(env or {})}
    r = CliRunner().invoke(cli, [str(a) for a in args], env=full, prog_name="flux", input=input,
                           catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_getattr_and_lsattr(flux):
    assert as_flux(flux, "getattr", "size") == (0, "4\n", "")
    assert as_flux(flux, "getattr", "rank") == (0, "0\n", "")
    assert as_flux(flux, "getattr", "hostlist") == (0, "node[0-3]\n", "")
    assert as_flux(flux, "getattr", "instance-level") == (0, "0\n", "")
    assert as_flux(flux, "getattr", "version") == (0, f"{__version__}\n", "")
    assert as_flux(flux, "getattr", "broker.starttime") == (0, "1767225600.000000\n", "")
    assert as_flux(flux, "getattr", "nosuch") == (1, "", "flux-getattr: nosuch: No such file or directory\n")
    names = as_flux(flux, "lsattr")[1].splitlines()
    assert names == sorted(names) and {"rank", "size", "version", "tbon.topo"} <= set(names)
    assert "size                                    4" in as_flux(flux, "lsattr", "-v")[1].splitlines()


def test_uptime(flux, utc):
    import os

    from flux_lite.users import username

    flux.advance("90s")
    assert as_flux(flux, "uptime") == (
        0, f" 00:01:30 run 1.5m,  owner {username(os.getuid())},  depth 0,  size 4\n", "")
    flux("resource", "drain", "1-2", "maint")
    flux("queue", "disable", "-m", "maintenance")
    flux("queue", "stop")
    code, out, err = as_flux(flux, "uptime")
    assert out.splitlines()[0].endswith("size 4,  2 drained")
    assert out.splitlines()[1] == "  submit disabled,  scheduler stopped"


def test_overlay_status(flux_factory):
    flux = flux_factory("--test-size=4")
    assert as_flux(flux, "overlay", "status") == (
        0, "0 node0: full\n├─ 1 node1: full\n├─ 2 node2: full\n└─ 3 node3: full\n", "")
    assert as_flux(flux, "overlay", "status", "--summary") == (0, "full\n", "")
    assert as_flux(flux, "overlay", "status", "--down") == (0, "", "")
    assert as_flux(flux, "overlay", "status", "--no-pretty") == (
        0, "0 node0: full\n1 node1: full\n2 node2: full\n3 node3: full\n", "")
    assert as_flux(flux, "overlay", "status", "-H", "node2") == (
        0, "<<0 node0>>: full\n├─ 1 node1: full\n├─ <<2 node2>>: full\n└─ 3 node3: full\n", "")
    assert as_flux(flux, "overlay", "status", "-r", "2") == (0, "2 node2: full\n", "")
    assert as_flux(flux, "overlay", "status", "--wait=full", "--summary") == (0, "full\n", "")
    assert as_flux(flux, "overlay", "status", "-H", "node9")[0] == 1
    assert as_flux(flux, "overlay", "status", "-Lfoo")[0] == 1
    # a tree deeper than one level: kary:32 of 40 ranks (rank 1 the parent of 33-39)
    big = flux_factory("--test-size=40", name="big")
    expected = (["0 node0: full", "├─ 1 node1: full"]
                + [f"│  ├─ {r} node{r}: full" for r in range(33, 39)] + ["│  └─ 39 node39: full"]
                + [f"├─ {r} node{r}: full" for r in range(2, 32)] + ["└─ 32 node32: full"])
    assert as_flux(big, "overlay", "status")[1].splitlines() == expected


def test_logger_and_dmesg(flux):
    assert as_flux(flux, "logger", "hello", "world") == (0, "", "")
    assert as_flux(flux, "logger", "-s", "err", "-n", "maint", input="from stdin") == (0, "", "")
    assert flux.dmesg()[-2:] == ["logger.notice[0]: hello world", "maint.err[0]: from stdin"]
    assert as_flux(flux, "logger", "--severity=loud", "x") == (
        1, "", "flux-logger: invalid severity: Use emerg|alert|crit|err|warning|notice|info|debug\n")


def test_module_unload_is_remove(flux):
    assert as_flux(flux, "module", "unload", "sched-simple") == (0, "", "")
    assert "sched-simple" not in flux.out("module", "list")
    flux("module", "load", "sched-simple")


def test_config_reload_reads_flux_conf_dir(flux, tmp_path):
    confdir = tmp_path / "conf"
    confdir.mkdir()
    (confdir / "queues.toml").write_text("[queues.debug]\n[queues.batch]\n")
    assert as_flux(flux, "config", "reload", env={"FLUX_CONF_DIR": str(confdir)}) == (0, "", "")
    assert flux.out("config", "get", "queues") == '{"debug":{},"batch":{}}\n'
    assert as_flux(flux, "config", "reload", env={"FLUX_CONF_DIR": ""}) == (
        1, "", "flux-config: reload: no configuration path: flux-lite keeps none from start "
               "(set FLUX_CONF_DIR, or use config load PATH)\n")


def test_module_remove_and_load_job_exec(flux):
    # without job-exec, allocated jobs wait in RUN with no start (as Flux's
    # job manager waits for an exec service); loading it starts them
    assert as_flux(flux, "module", "remove", "job-exec") == (0, "", "")
    job = flux.submit("-N1", "sleep", "1")
    assert flux.state(job) == "RUN" and flux.eventlog(job)[-1] == "alloc"
    flux.advance("10s")
    assert flux.eventlog(job)[-1] == "alloc"
    assert "job-exec" not in as_flux(flux, "module", "list")[1]
    assert as_flux(flux, "module", "remove", "job-exec") == (
        1, "", "flux-module: remove job-exec: No such file or directory\n")
    assert as_flux(flux, "module", "remove", "-f", "job-exec") == (0, "", "")
    # canceled before it started: no finish, no release; freed at once
    other = flux.submit("-N1", "sleep", "10")
    flux("cancel", other)
    assert flux.eventlog(other)[-3:] == ["exception", "free", "clean"]
    assert as_flux(flux, "module", "load", "job-exec") == (0, "", "")
    assert flux.eventlog(job)[-1] == "start"
    assert as_flux(flux, "module", "load", "job-exec") == (1, "", "flux-module: load job-exec: File exists\n")
    assert "job-exec" in as_flux(flux, "module", "list")[1]
    flux.advance("1s")
    assert flux.state(job) == "INACTIVE"
    assert as_flux(flux, "module", "reload", "job-exec") == (0, "", "")


def test_module_remove_and_reload_job_ingest(flux, tmp_path):
    import json

    js = json.loads(flux.out("run", "--dry-run", "true"))
    js["attributes"]["foo"] = 1  # the validator refuses it
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(js))
    assert as_flux(flux, "job", "submit", bad) == (1, "", "flux-job: Extraneous key (foo)\n")
    # disable-validator: every job is ingested as one with the novalidate flag
    assert as_flux(flux, "module", "reload", "-f", "job-ingest", "disable-validator") == (0, "", "")
    code, out, err = as_flux(flux, "job", "submit", bad)
    assert (code, err) == (0, "") and flux.state(out.strip()) in ("RUN", "INACTIVE")
    # an unknown argument fails the load, and (a reload) leaves the module removed
    assert as_flux(flux, "module", "reload", "job-ingest", "foo=bar") == (
        1, "", "flux-module: load job-ingest: Invalid argument\n")
    assert "job-ingest.err[0]: Invalid option: foo=bar" in flux.out("dmesg")
    assert "job-ingest" not in as_flux(flux, "module", "list")[1]
    assert as_flux(flux, "module", "remove", "job-ingest") == (
        1, "", "flux-module: remove job-ingest: No such file or directory\n")
    assert as_flux(flux, "submit", "true") == (
        1, "", "[Errno 38] No service matching job-ingest.submit is registered\n")
    assert as_flux(flux, "module", "load", "job-ingest") == (0, "", "")
    assert as_flux(flux, "module", "load", "job-ingest") == (1, "", "flux-module: load job-ingest: File exists\n")
    assert as_flux(flux, "job", "submit", bad)[0] == 1  # validated again


def test_job_submit_short_options(flux):
    # flux job submit's -u/--urgency and -f/--flags (Flux's short options)
    spec = flux.out("submit", "--dry-run", "true")
    held = flux.out("job", "submit", "-u0", "-", input=spec).strip()
    debug = flux.out("job", "submit", "-u", "31", "-f", "debug", input=spec).strip()
    assert flux.out("jobs", "-no", "{urgency}", held) == "0\n"
    assert flux.events(debug)[0]["context"]["urgency"] == 31
    assert flux.events(debug)[0]["context"]["flags"] != 0
