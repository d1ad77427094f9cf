"""flux-sched's own sharness tests through flux-lite as `flux`
(bench/fluxion_sharness.sh), for a flux-sched source tree given in
FLUX_SCHED_SRC; skipped without one (flux-sched's test files never enter
this repository).

Only files flux-lite passes whole are run here, the quick ones (the full
table is in bench/README.md): ion-resource's stats and update (t6002, t4009),
the resource module's configuration through `flux broker` (t4010).
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "fluxion_sharness.sh"
SRC = os.environ.get("FLUX_SCHED_SRC")
SHIM = os.environ.get("FLUX_SHIM") or str(ROOT.parent / "shared" / "sharness" / "shim" / "flux")

pytestmark = pytest.mark.skipif(
    not SRC or not os.path.isdir(os.path.join(SRC or "", "t")) or not os.access(SHIM, os.X_OK)
    or shutil.which("jq") is None,
    reason="needs FLUX_SCHED_SRC (a flux-sched tree), flux-core's sharness shim (FLUX_SHIM) and jq")

PASSING = ("t6002-graph-hwloc.t", "t4009-match-update.t", "t4010-match-conf.t")


@pytest.mark.parametrize("test", PASSING)
def test_flux_sched_sharness_file_passes_under_flux_lite(test, tmp_path):
    flux_lite = shutil.which("flux-lite", path=os.path.dirname(sys.executable)) or shutil.which("flux-lite")
    env = dict(os.environ, SH_WORK=str(tmp_path), FLUX_LITE=flux_lite, FLUX_SHIM=SHIM, SH_TIMEOUT="240")
    subprocess.run([str(SCRIPT), "lite", test], env=env, check=True, capture_output=True, timeout=300)
    total, ok, skip, fail, rc, _secs = (tmp_path / "lite" / test.replace(".t", ".counts")).read_text().split()
    log = (tmp_path / "lite" / test.replace(".t", ".log")).read_text(errors="replace")
    assert (fail, rc) == ("0", "0") and int(ok) > 0, log[-3000:]
