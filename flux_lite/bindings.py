"""Where flux-lite's `flux` Python package lives, and the environment that finds it.

The package imitates the API of Flux's Python bindings (`import flux`), so it
must never shadow a real Flux's bindings: it is not installed as a top-level
package. It sits in the directory PATH below, which `flux python`, `flux-lite
env` and `flux-lite start COMMAND` (and nothing else) put first on PYTHONPATH.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PATH = Path(__file__).resolve().parent / "python"


def pythonpath(environ: Mapping[str, str] | None = None) -> str:
    """PYTHONPATH with the bindings' directory first (once)."""
    environ = os.environ if environ is None else environ
    here = str(PATH)
    parts = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *parts])
