"""The typed boundary type-checks: the RFC 27 protocol module, the job index,
the scheduler base and the scheduler-module registry (mypy, configured in
pyproject.toml)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TYPED = ["flux_lite/protocol.py", "flux_lite/job_manager/index.py", "flux_lite/sched/base.py",
         "flux_lite/sched/registry.py"]


def test_typed_modules_pass_mypy(tmp_path):
    pytest.importorskip("mypy")
    env = dict(os.environ, MYPY_CACHE_DIR=str(tmp_path / "mypy-cache"))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *TYPED],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
