"""flux-lite's sched-simple scenarios, run with flux-core's own sched-simple.py
(a Python module file, hosted) in place of flux-lite's sched-simple.

The module is taken from a flux-core source tree given at test time
(FLUX_CORE_SRC, else /work/flux-core-src); without one these tests skip.
The scenarios are those of test_cli_reload_hk.py (reload with running and
housekeeping jobs, partial release), test_cli_sched_simple.py and
test_cli_update.py (expiration updates, the module's debug bit 4 refusing
them), unchanged: the module file is named
sched-simple, so their `module reload sched-simple` and `sched reload`
reload it. One is left out: test_running_job_update_sequence checks `update
--dry-run`'s account of moved estimates, flux-lite's own request
(sched.expiration-preview), which a module file does not answer.
"""

import os
from pathlib import Path

import pytest

from conftest import make_instance
from test_cli_reload_hk import *  # noqa: F401,F403
from test_cli_sched_simple import *  # noqa: F401,F403
from test_cli_update import *  # noqa: F401,F403

del test_running_job_update_sequence  # noqa: F821 (see above)

SCHED_SIMPLE = Path(os.environ.get("FLUX_CORE_SRC", "/work/flux-core-src")) / "src" / "modules" / "sched-simple.py"


@pytest.fixture
def flux(tmp_path):
    """The conftest's 4-node instance, with flux-core's sched-simple.py loaded."""
    if not SCHED_SIMPLE.exists():
        pytest.skip("no flux-core source tree (set FLUX_CORE_SRC)")
    fx = make_instance(tmp_path, "--test-size=4", "--test-cores=2")
    fx("module", "reload", SCHED_SIMPLE)
    return fx
