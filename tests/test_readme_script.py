"""The README's job-control script runs verbatim, with the outputs it describes."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


# an indented block; the queue rehearsal's has blank lines between its steps
ONE_BLOCK = r"\n\n((?:    .*\n)+)"
BLOCK_WITH_BLANK_LINES = r"\n\n((?:(?:    .*)?\n)+)"


def readme_block(heading, block_re):
    """The first indented block of the README section `## heading`, unindented."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    block = re.search(block_re, section).group(1)
    return "".join(line[4:] + "\n" for line in block.splitlines())


def flux_lite_env(tmp_path):
    """The installed flux-lite and an environment whose PATH and state dir reach it (skip without it)."""
    # the flux-lite of the interpreter running the tests (another on PATH may be stale)
    exe = str(pathlib.Path(sys.executable).parent / "flux-lite")
    if not os.path.exists(exe):
        exe = shutil.which("flux-lite") or exe
    if not os.path.exists(exe):
        pytest.skip("flux-lite is not installed")
    env = dict(os.environ, FLUX_LITE_STATE_DIR=str(tmp_path / "state"), FLUX_F58_FORCE_ASCII="1",
               PATH=os.path.dirname(exe) + os.pathsep + os.environ.get("PATH", ""))
    return exe, env


def readme_script():
    return readme_block("Scripting job control", ONE_BLOCK)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_readme_job_control_script(tmp_path):
    exe, env = flux_lite_env(tmp_path)
    subprocess.run([exe, "start", "--test-size=4", "--clock=virtual"], env=env, check=True,
                   capture_output=True)
    script = readme_script()
    assert "job last" in script and "jobs --stats-only" in script and "job wait" in script
    r = subprocess.run(["sh", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    ids = out[:4]
    assert all(i.startswith("f") for i in ids)
    assert out[4] == "4 running, 0 completed, 0 failed, 0 pending, 0 inactive purged"
    assert out[-3] == "0 running, 3 completed, 1 failed, 0 pending, 0 inactive purged"
    assert out[-2:] == ["some jobs failed", "purged 2 inactive jobs, 2 remaining"]
    assert r.stderr.splitlines() == [f"{ids[3]}: task(s) exited with exit code 1"] + [
        f"{i}: job completed successfully" for i in ids[:3]]


def readme_queue_script():
    return readme_block("Rehearsing queue maintenance", BLOCK_WITH_BLANK_LINES)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_readme_queue_maintenance_rehearsal(tmp_path):
    exe, env = flux_lite_env(tmp_path)
    script = readme_queue_script()
    for step in ("queue stop", "resource drain", "queue idle", "queue=debug", "sched reload --policy=easy",
                 "queue start batch"):
        assert step in script
    r = subprocess.run(["sh", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "batch: Scheduling is stopped: maintenance window",
        "2 jobs",
        "batch: Scheduling is started",
        "fSZYcou debug COMPLETED node0",
        "fSZYcov batch COMPLETED node2",
    ]
    # the scheduler that finished the job is the one the rehearsal loaded
    r = subprocess.run([exe, "module", "list"], env=env, capture_output=True, text=True)
    assert "sched-backfill" in r.stdout


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_readme_fluxion_rehearsal(tmp_path):
    exe, env = flux_lite_env(tmp_path)
    script = readme_block("Rehearsing a Fluxion site", BLOCK_WITH_BLANK_LINES)
    assert "policy = \"fluxion\"" in script and "module reload sched-fluxion-resource" in script
    r = subprocess.run(["sh", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "sched-fluxion-feasibility    0  R     0     0 feasibility",
        "sched-fluxion-qmanager       0  R     0     0 sched",
        "sched-fluxion-resource       0  R     0     0 ",
        "fSZYcor SCHED  reserved eta:1h",
        "fSZYcoq RUN node[0-2] immediate node[0-2]",
        "fSZYcos RUN node3 backfill node3",
        "2",
        "fSZYcor RUN node[1-2] reserved",
        "fSZYcos RUN node3 backfill",
    ]


def readme_test_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [line[4:] for line in section.splitlines() if line.startswith("    ") and "pytest" in line]
    assert len(commands) == 1
    return commands[0]


def test_ci_runs_the_readme_test_command_verbatim():
    command = readme_test_command()
    assert command.startswith("pip install -e '.[test]' && python -m pytest")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_readme_test_command_shows_the_pass_count(tmp_path):
    """pyproject's addopts has -q: one more -q would hide the "N passed" line."""
    import shlex

    pytest_part = readme_test_command().split("&&", 1)[1].split()
    assert pytest_part[:3] == ["python", "-m", "pytest"]
    sample = tmp_path / "test_sample.py"
    sample.write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    args = [sys.executable, *pytest_part[1:], "-p", "no:cacheprovider", "--rootdir", str(ROOT),
            "-c", str(ROOT / "pyproject.toml"), str(sample)]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, shlex.join(args) + "\n" + r.stdout + r.stderr
    assert re.match(r"2 passed in [0-9.]+s$", r.stdout.splitlines()[-1]), r.stdout


def _demo(tmp_path, exe_dir, tty=False, **extra):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("FLUX_LITE_STATE_DIR", "NO_COLOR")}
    env.update(TMPDIR=str(tmpdir), PATH=exe_dir + os.pathsep + "/usr/bin:/bin", **extra)
    if not tty:
        r = subprocess.run(["sh", str(ROOT / "scripts" / "demo.sh")], env=env, capture_output=True, text=True,
                           timeout=120)
        return r.returncode, r.stdout, sorted(os.listdir(tmpdir))
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(["sh", str(ROOT / "scripts" / "demo.sh")], env=env, stdout=follower,
                            stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode(), sorted(os.listdir(tmpdir))


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_demo_is_plain_when_piped_and_leaves_no_temp_file(tmp_path):
    exe, _env = flux_lite_env(tmp_path)
    rc, out, left = _demo(tmp_path, os.path.dirname(exe))
    assert (rc, left) == (0, [])
    assert out.startswith("\n$ flux-lite resource list\n     STATE NNODES NCORES NGPUS NODELIST\n")
    assert "\x1b" not in out
    # on a terminal the commands are bold
    rc, out, left = _demo(tmp_path, os.path.dirname(exe), tty=True)
    assert (rc, left) == (0, [])
    assert "\x1b[1m$ flux-lite resource list\x1b[0m" in out
    rc, out, left = _demo(tmp_path, os.path.dirname(exe), tty=True, NO_COLOR="1")
    assert (rc, left) == (0, []) and "\x1b" not in out and "$ flux-lite resource list" in out
    # a failed start removes the file too
    rc, out, left = _demo(tmp_path, str(tmp_path / "nothing-here"))
    assert rc != 0 and left == []
