"""The README's admin script (Flux's Python API) runs verbatim under `flux python`, printing what the README shows."""

import re
import shutil
import subprocess

import pytest
from test_readme_script import ROOT, flux_lite_env

HEADING = "## Scripting with Flux's Python API"


def section_blocks():
    """The indented blocks of the README section, unindented, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"\n\n((?:(?:    .*)?\n)+)", section)
    return ["".join(line[4:] + "\n" for line in block.rstrip("\n").splitlines()) for block in blocks]


# the script needs the whole API: skipped until flux.job's job calls and flux.resource's sets are in
API = ROOT / "flux_lite" / "python" / "flux"
MISSING = [p for p in ("job/list.py", "job/submit.py", "job/Jobspec.py", "resource/ResourceSet.py",
                       "resource/__init__.py") if not (API / p).exists()]
if not MISSING and "resource_list" not in (API / "resource" / "__init__.py").read_text():
    MISSING.append("flux.resource.resource_list")


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.skipif(bool(MISSING), reason=f"flux package modules not there yet: {MISSING}")
def test_readme_admin_script(tmp_path):
    exe, env = flux_lite_env(tmp_path)
    env.pop("FLUX_LITE_STATE_DIR")  # `start COMMAND` makes its own instance
    script, command, output = section_blocks()[:3]
    for call in ("resource_list(h)", "resource_status(h)", "QueueList(h)", "JobList(h, filters=[\"pending\"]",
                 "flux.job.cancel(", "JobspecV1.from_command(", "flux.job.submit(", "event_wait(", "flux.job.wait("):
        assert call in script
    assert "flux python admin.py" in command
    (tmp_path / "admin.py").write_text(script)
    r = subprocess.run(["sh", "-e", "-c", command], env=env, capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == output.replace("\u0192", "f")  # FLUX_F58_FORCE_ASCII
