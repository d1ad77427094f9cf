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
    exe = shutil.which("flux-lite") or str(pathlib.Path(sys.executable).parent / "flux-lite")
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
