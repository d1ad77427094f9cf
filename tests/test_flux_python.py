"""`flux python` and the `flux` package's handle: where it lives, requests, streams, the reactor."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from flux_lite import bindings

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_python(flux, *args, env=None):
    """`flux-lite python ARGS` as a user runs it (a subprocess: it execs the interpreter)."""
    full = dict(os.environ, FLUX_LITE_STATE_DIR=flux.state_dir, **(env or {}))
    full.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-m", "flux_lite", "python", *args], env=full,
                          capture_output=True, text=True, timeout=60)


def test_the_package_is_not_installed_at_the_top_level():
    # never shadow a real Flux's bindings: only the entry points put it on the path
    r = subprocess.run([sys.executable, "-c", "import flux; print(flux.__file__)"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, cwd="/")
    assert r.returncode != 0 or not r.stdout.startswith(str(bindings.PATH))


def test_get_path_and_list_versions(flux):
    r = run_python(flux, "--get-path")
    assert r.returncode == 0 and r.stdout == f"{bindings.PATH}\n"
    r = run_python(flux, "--list-versions")
    assert r.stdout == f"python{sys.version_info.major}.{sys.version_info.minor}\n"


def test_python_runs_a_script_on_the_selected_instance(flux, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys, flux\nh = flux.Flux()\nprint(h.attr_get('local-uri'), sys.argv[1:])\n")
    r = run_python(flux, str(script), "a", "-b")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"local://{flux.state_dir} ['a', '-b']\n"
    # a script's exit code is the command's
    assert run_python(flux, "-c", "raise SystemExit(3)").returncode == 3


def test_import_flux_costs_what_it_touches(flux):
    r = run_python(flux, "-c", "import sys, flux; print(sorted(m for m in sys.modules "
                   "if m.startswith(('flux_lite.instance', 'flux_lite.services', 'rich', 'yaml', 'intervaltree', "
                   "'sqlite3'))))")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n"


def test_env_and_start_put_the_package_on_pythonpath(flux, tmp_path):
    r = subprocess.run([sys.executable, "-m", "flux_lite", "--state-dir", flux.state_dir, "env"],
                       capture_output=True, text=True, timeout=60)
    assert f'export PYTHONPATH="{bindings.PATH}' in r.stdout
    r = subprocess.run([sys.executable, "-m", "flux_lite", "start", "--test-size=2", sys.executable, "-c",
                        "import flux; print(flux.Flux().attr_get('rank'))"],
                       capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "0\n"


def test_package_data_ships_every_module():
    # a wheel holds the package through pyproject's package-data globs: each file must match one
    import fnmatch

    text = (ROOT / "pyproject.toml").read_text()
    globs = text.split('"flux_lite" = [', 1)[1].split("]", 1)[0].replace('"', "").split(", ")
    for path in bindings.PATH.rglob("*.py"):
        rel = path.relative_to(bindings.PATH.parent).as_posix()
        assert any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/") for g in globs), rel


def test_handle_errors_are_oserrors_with_errno(pyflux):
    h = pyflux.Flux()
    with pytest.raises(OSError) as exc:
        h.attr_get("no-such-attribute")
    assert exc.value.errno == 2
    with pytest.raises(OSError) as exc:
        h.rpc("no-such.service").get()
    assert (exc.value.errno, exc.value.strerror) == (38, "Function not implemented")
    with pytest.raises(OSError) as exc:
        h.rpc("attr.get", "not json").get()
    assert exc.value.errno == 71  # EPROTO
    with pytest.raises(OSError) as exc:
        h.rpc("attr.get", {"name": 7}).get()
    assert exc.value.errno == 71


def test_no_instance_is_enoent(pyflux, tmp_path):
    with pytest.raises(OSError) as exc:
        pyflux.Flux(f"local://{tmp_path}/none")
    assert exc.value.errno == 2 and "Unable to connect to Flux" in str(exc.value)


def test_rpc_get_and_get_str(pyflux, flux):
    h = pyflux.Flux()
    f = h.rpc("attr.get", {"name": "rank"})
    assert f.get() == {"value": "0", "flags": 0}
    assert f.get_str() == '{"value":"0","flags":0}'  # compact, as Flux's payloads
    assert f.is_ready()


def test_job_manager_resource_status_is_what_jobs_hold(pyflux, flux):
    # as Flux 0.88 answers (t2354-resource-status reads its node count)
    h = pyflux.Flux()
    empty = {"version": 1, "execution": {"R_lite": [], "starttime": 0.0, "expiration": 0.0, "nodelist": [""]}}
    assert h.rpc("job-manager.resource-status").get() == {"allocated": empty}
    flux.submit("-N2", "sleep", "inf")
    assert h.rpc("job-manager.resource-status").get() == {"allocated": {"version": 1, "execution": {
        "R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}], "starttime": 0.0, "expiration": 0.0,
        "nodelist": ["node[0-1]"]}}}


def test_job_manager_getattr(pyflux, flux):
    # as Flux 0.88 answers (t2292-job-update-running reads R's expiration so)
    jobid = flux.submit("-t", "5m", "sleep", "300")
    dec = int(flux.out("job", "id", "--to=dec", jobid))
    h = pyflux.Flux()
    R = h.rpc("job-manager.getattr", {"id": dec, "attrs": ["R"]}).get()["R"]
    flux("update", jobid, "duration=+1m")
    again = h.rpc("job-manager.getattr", {"id": dec, "attrs": ["R"]}).get()["R"]
    assert again["execution"]["expiration"] == R["execution"]["expiration"] + 60
    got = h.rpc("job-manager.getattr", {"id": dec, "attrs": ["jobspec", "eventlog"]}).get()
    assert "environment" not in got["jobspec"]["attributes"]["system"]
    assert got["eventlog"][1] == {"timestamp": got["eventlog"][1]["timestamp"], "name": "validate"}
    for payload, code, text in [({"id": dec, "attrs": ["bogus"]}, 2, "unknown attr bogus"),
                                ({"id": 12345, "attrs": ["R"]}, 22, "unknown job"),
                                ({"id": dec, "attrs": [7]}, 71, "attribute list contains non-string")]:
        with pytest.raises(OSError) as exc:
            h.rpc("job-manager.getattr", payload).get()
        assert (exc.value.errno, exc.value.strerror) == (code, text)


def test_inner_has_libjobs_state_and_result_names(pyflux):
    # what flux-core's job-conv.py test helper calls through Flux's cffi bindings
    from flux.core.inner import ffi, raw

    assert [raw.flux_job_statetostr(n, "L") for n in (1, 8, 16, 64, 3)] == [
        b"NEW", b"SCHED", b"RUN", b"INACTIVE", b"(unknown)"]
    assert [raw.flux_job_statetostr(n, f) for n, f in ((14, "S"), (48, "s"), (62, "l"), (5, "S"))] == [
        b"PD", b"ru", b"active", b"?"]
    assert [raw.flux_job_resulttostr(n, f) for n, f in ((1, "L"), (4, "S"), (8, "l"), (0, "L"))] == [
        b"COMPLETED", b"CA", b"timeout", b"(unknown)"]
    cell = ffi.new("flux_job_state_t [1]")
    for text, num in (("sched", 8), ("R", 16), ("PD", 14), ("inactive", 64)):
        assert raw.flux_job_strtostate(text, cell) == 0 and cell[0] == num
    result = ffi.new("flux_job_result_t [1]")
    assert raw.flux_job_strtoresult(b"TO", result) == 0 and result[0] == 8
    for bad in ("Sched", "bogus", ""):
        with pytest.raises(OSError):
            raw.flux_job_strtostate(bad, cell)
    with pytest.raises(AttributeError, match="flux-lite has no libflux"):
        getattr(raw, "flux_open")  # noqa: B009 (the lookup is what is tested)


def test_streaming_eventlog_watch_through_the_reactor(pyflux, flux):
    from flux.constants import FLUX_RPC_STREAMING

    jobid = flux.submit("-n1", "sleep", "10")
    dec = int(flux.out("job", "id", "--to=dec", jobid))
    h = pyflux.Flux()
    seen = []

    def cb(f, tag):
        try:
            seen.append((tag, json.loads(f.get()["event"])["name"]))
        except OSError as exc:
            seen.append((tag, exc.errno))
            return
        f.reset()

    h.rpc("job-info.eventlog-watch", {"id": dec}, flags=FLUX_RPC_STREAMING).then(cb, "w")
    assert h.reactor_run() == 0
    names = [name for _tag, name in seen]
    assert names == ["submit", "validate", "depend", "priority", "alloc", "start", "finish", "release",
                     "free", "clean", 61]  # ENODATA ends the stream
    # simulated time passed while watching, as wait-event lets it
    assert flux.now() == pytest.approx(float(flux.out("jobs", "-no", "{t_submit}", jobid)) + 10)


def test_log_goes_to_dmesg(pyflux, flux):
    h = pyflux.Flux()
    h.log(3, "disk %s is %d%% full", "/tmp", 99)
    assert any(line.endswith("disk /tmp is 99% full") and ".err[0]" in line for line in flux.dmesg()), flux.dmesg()


def test_python_starts_before_the_command_table_loads(flux):
    # Flux's `flux python` is a small C program; flux-lite's execs before click and the commands load
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "flux_lite", "python", "-c", "pass"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FLUX_LITE_STATE_DIR=flux.state_dir))
    assert r.returncode == 0, r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "flux_lite.cli.launch" in imported
    assert not {"click", "flux_lite.cli.main", "flux_lite.instance"} & imported


def test_state_dir_option_reaches_the_script(flux, tmp_path):
    r = subprocess.run([sys.executable, "-m", "flux_lite", f"--state-dir={flux.state_dir}", "python", "-c",
                        "import flux; print(flux.Flux().attr_get('local-uri'))"],
                       capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k not in ("FLUX_LITE_STATE_DIR", "PYTHONPATH")})
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"local://{flux.state_dir}\n"
    r = subprocess.run([sys.executable, "-m", "flux_lite", "--state-dir=", "python", "-c", "pass"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "python" not in r.stdout
