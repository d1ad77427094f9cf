"""flux-lite version: the lines `flux version` prints (flux-core's t0016 reads them)."""

import subprocess
import sys
from importlib.metadata import version


def test_version_prints_flux_lines():
    r = subprocess.run([sys.executable, "-m", "flux_lite", "version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    number = version("flux-lite")
    assert r.stdout == f"commands:    \t\t{number}\nlibflux-core:\t\t{number}\nbuild-options:\t\t+flux-lite\n"
    assert r.stderr == ""
