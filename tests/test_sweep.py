"""flux-lite sweep: a grid of replays, on local processes or as jobs of a
real Flux; each point is the `flux-lite replay` it stands for."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from test_readme_script import flux_lite_env

KTH = str(Path(__file__).parent / "data" / "kth-sp2-first400.swf")
GRID = ["--policy=fcfs,easy", "--set=sched.queue-depth=4,32", "--limit=200"]


def single(flux, tmp_path, policy, depth):
    cfg = tmp_path / f"c{depth}.json"
    cfg.write_text(json.dumps({"sched": {"queue-depth": depth}}))
    return json.loads(flux.out("replay", f"--policy={policy}", f"--config={cfg}", "--limit=200", "--json", KTH))


def test_local_sweep_points_are_the_single_replays(flux, tmp_path):
    out = tmp_path / "out"
    lines = flux.out("sweep", *GRID, "-j", "2", "--json", f"--out-dir={out}", KTH).splitlines()
    got = [json.loads(line) for line in lines]
    assert [(g["policy"], g["params"]) for g in got] == [
        ("fcfs", {"sched.queue-depth": 4}), ("fcfs", {"sched.queue-depth": 32}),
        ("easy", {"sched.queue-depth": 4}), ("easy", {"sched.queue-depth": 32})]
    for n, g in enumerate(got, 1):
        want = single(flux, tmp_path, g["policy"], g["params"]["sched.queue-depth"])
        assert {k: v for k, v in g.items() if k != "params"} == want
        assert json.loads((out / f"point-{n:04d}.json").read_text()) == want
        assert len((out / f"point-{n:04d}.csv").read_text().splitlines()) == 201
    assert got[2]["wait_mean"] > got[3]["wait_mean"]  # easy looks deeper with a deeper queue
    table = flux.out("sweep", *GRID, KTH).splitlines()
    assert table[0].split() == ["TRACE", "POLICY", "sched.queue-depth", "JOBS", "MAKESPAN", "UTILIZATION",
                                "WAIT_MEAN", "WAIT_P50", "WAIT_P95", "WAIT_MAX", "BOUNDED_SLOWDOWN", "USER_WAIT_MAX"]
    assert table[4].split()[:4] == ["kth-sp2-first400.swf", "easy", "32", "200"]
    assert table[4].split()[6] == f"{got[3]['wait_mean']:.0f}s"


@pytest.mark.parametrize("args,message", [
    (["--set=sched.queue-depth"], "--set: expected KEY=VALUE[,VALUE...]"),
    (["--set=sched.nope=1"], "nope"),
    (["--on-flux"], "--on-flux needs --out-dir"),
])
def test_sweep_bad_options(flux, args, message):
    r = flux("sweep", *args, KTH, check=False)
    assert r.exit_code in (1, 2) and message in r.stderr and "Traceback" not in r.stderr


FAKE_FLUX = """#!{python}
# a stand-in for flux: `submit` runs the job at once (its stdout and stderr to
# --output and --error) and prints an id; `job attach` reports its exit status
import subprocess, sys, os
args = sys.argv[1:]
state = os.path.join(os.path.dirname(os.path.abspath(__file__)), "status")
if args[0] == "submit":
    opts = dict(a[2:].split("=", 1) for a in args[1:args.index("--")])
    with open(opts["output"], "w") as out, open(opts["error"], "w") as err:
        rc = subprocess.run(args[args.index("--") + 1:], stdout=out, stderr=err).returncode
    n = len(os.listdir(state))
    open(os.path.join(state, str(n)), "w").write(str(rc))
    print(f"fake{{n}}")
elif args[:2] == ["job", "attach"]:
    sys.exit(int(open(os.path.join(state, args[2][4:])).read()))
"""


def fake_flux(tmp_path):
    d = tmp_path / "fakeflux"
    (d / "status").mkdir(parents=True)
    exe = d / "flux"
    exe.write_text(FAKE_FLUX.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_on_flux_gathers_what_the_jobs_write(flux, tmp_path):
    """--on-flux submits one `flux-lite replay --json --jobs-out` per point and
    gathers the same table as a local sweep (flux stood in for by a script)."""
    exe = fake_flux(tmp_path)
    local = flux.out("sweep", *GRID, "--json", f"--out-dir={tmp_path / 'local'}", KTH).splitlines()
    remote = flux.out("sweep", *GRID, "--json", "--on-flux", f"--flux={exe}", f"--out-dir={tmp_path / 'f'}",
                      KTH).splitlines()
    assert [json.loads(line).pop("flux_jobid") for line in remote] == ["fake0", "fake1", "fake2", "fake3"]
    assert [{k: v for k, v in json.loads(line).items() if k != "flux_jobid"} for line in remote] == \
           [json.loads(line) for line in local]
    for n in range(1, 5):
        assert (tmp_path / "f" / f"point-{n:04d}.csv").read_text() == \
               (tmp_path / "local" / f"point-{n:04d}.csv").read_text()
    cfg = json.loads((tmp_path / "f" / "point-0004.config.json").read_text())
    assert cfg == {"sched": {"queue-depth": 32}}


def test_queue_map_reaches_every_point_here_and_on_flux(flux, tmp_path):
    cfg = tmp_path / "q.toml"
    cfg.write_text('[queues.batch]\n[queues.debug]\npolicy.limits.duration = "1h"\n')
    args = ["--policy=easy", f"--config={cfg}", "--queue-map=-1=batch", "--limit=30", "--json"]
    local = json.loads(flux.out("sweep", *args, f"--out-dir={tmp_path / 'l'}", KTH))
    remote = json.loads(flux.out("sweep", *args, "--on-flux", f"--flux={fake_flux(tmp_path)}",
                                 f"--out-dir={tmp_path / 'f'}", KTH))
    assert remote.pop("flux_jobid") == "fake0" and remote == local
    for d in ("l", "f"):
        rows = (tmp_path / d / "point-0001.csv").read_text().splitlines()
        assert len(rows) == 31 and all(",batch," in row for row in rows[1:])


def test_on_flux_a_failed_point_is_one_line(flux, tmp_path):
    exe = fake_flux(tmp_path)
    r = flux.fails("sweep", "--on-flux", f"--flux={exe}", f"--out-dir={tmp_path / 'f'}",
                   str(tmp_path / "missing.swf"))
    assert r.stderr.count("\n") == 1
    assert "sweep point point-0001 (flux job fake0) failed" in r.stderr and "missing.swf" in r.stderr


# a real Flux (flux-core): FLUX_LITE_TEST_FLUX names its flux command, else `flux` on PATH
REAL_FLUX = os.environ.get("FLUX_LITE_TEST_FLUX") or shutil.which("flux")


@pytest.mark.skipif(not REAL_FLUX, reason="no flux command (set FLUX_LITE_TEST_FLUX or put flux on PATH)")
def test_on_real_flux(tmp_path):
    """Each point a job of a test instance of a real Flux; same results as locally."""
    exe, env = flux_lite_env(tmp_path)
    env.pop("PYTHONPATH", None)
    args = [exe, "sweep", *GRID, "--json", f"--flux={REAL_FLUX}"]
    remote = subprocess.run([REAL_FLUX, "start", "--test-size=2", *args, "--on-flux", f"--out-dir={tmp_path / 'f'}",
                             KTH], env=env, capture_output=True, text=True, timeout=600)
    assert remote.returncode == 0, remote.stderr
    local = subprocess.run(args + [KTH], env=env, capture_output=True, text=True, timeout=600)
    got = [json.loads(line) for line in remote.stdout.splitlines()]
    assert all(g.pop("flux_jobid").startswith(("ƒ", "f")) for g in got)
    assert got == [json.loads(line) for line in local.stdout.splitlines()]
