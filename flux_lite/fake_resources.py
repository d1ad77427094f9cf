"""[fake-resources]: the synthetic R an instance starts with
(flux-config-fake-resources(5)), as Flux's ``fake-resources`` rc1 task
installs it before the resource module loads.

``nnodes`` nodes named ``{host-prefix}0``, ``{host-prefix}1``... (default
``fake``), each with ``cores-per-node`` cores (default 64) and
``gpus-per-node`` gpus (default 0: no gpu in R); with ``hwloc-xml-path``,
each node has the cores and gpus of that hwloc XML file instead. Then the
amender (``amend-r``) is called on R as a dict: ``module:function`` is
imported (the flux package first on the path, as in Flux's rc1, where it is
a Python script), a path is loaded as a file and its ``amend`` is used; it
gets ``hwloc_xml=`` the XML file's text (or None) and returns the R to
install. Every failure is a ConfigError with the words of Flux's task.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from typing import Any, Callable

from flux_lite import bindings
from flux_lite.errors import ConfigError, FormatError
from flux_lite.formats import hwloc
from flux_lite.formats.rset import Rset

__all__ = ["fake_R", "load_amender", "MAX_NODES", "MAX_PER_NODE"]

# bounds that keep one start within seconds and megabytes (flux-lite start's own)
MAX_NODES = 100000
MAX_PER_NODE = 4096

_PREFIX = "[fake-resources] amend-r"


def _flux_package_first() -> None:
    here = str(bindings.PATH)
    if here not in sys.path:
        sys.path.insert(0, here)


def load_amender(spec: str) -> Callable[..., Any]:
    """The callable amend-r names (ConfigError with Flux's words if none)."""
    _flux_package_first()
    if ":" in spec:
        modname, fname = spec.split(":", 1)
        try:
            module = importlib.import_module(modname)
        except Exception as exc:  # (the user's module may raise anything while importing)
            raise ConfigError(f"{_PREFIX}: failed to import module {modname!r}: {exc}") from None
        fn = getattr(module, fname, None)
        if fn is None:
            raise ConfigError(f"{_PREFIX}: module {modname!r} has no attribute {fname!r}")
        return fn
    path = os.path.expanduser(spec)
    if not os.path.isfile(path):
        raise ConfigError(f"{_PREFIX}: file not found: {path!r}")
    try:
        name = "_flux_lite_amender_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ImportError("not a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        raise ConfigError(f"{_PREFIX}: failed to load {path!r}: {exc}") from None
    fn = getattr(module, "amend", None)
    if fn is None:
        raise ConfigError(f"{_PREFIX}: file {path!r} has no 'amend' callable at module scope")
    return fn


def _read_xml(path: str) -> tuple[str, hwloc.Topology]:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"[fake-resources] hwloc-xml-path: {path}: {reason}") from None
    try:
        return text, hwloc.parse(text)
    except FormatError as exc:
        raise ConfigError(f"[fake-resources] hwloc-xml-path: {path}: {exc}") from None


def fake_R(fake: dict) -> dict:
    """R (a dict) from a validated [fake-resources] table."""
    nnodes = fake["nnodes"]
    cores = fake.get("cores-per-node", 64)
    gpus = fake.get("gpus-per-node", 0)
    if nnodes > MAX_NODES:
        raise ConfigError(f"fake-resources.nnodes: at most {MAX_NODES}")
    xml = None
    if fake.get("hwloc-xml-path"):
        xml, topo = _read_xml(fake["hwloc-xml-path"])
        cores, gpus = topo.ncores, topo.ngpus
    if cores > MAX_PER_NODE or gpus > MAX_PER_NODE:
        raise ConfigError(f"fake-resources: at most {MAX_PER_NODE} cores and gpus per node")
    prefix = fake.get("host-prefix", "fake")
    R = Rset.build([(f"{prefix}{i}", cores, gpus, ()) for i in range(nnodes)]).to_dict()
    spec = fake.get("amend-r")
    if spec:
        amend = load_amender(spec)
        try:
            R = amend(json.loads(json.dumps(R)), hwloc_xml=xml)
        except Exception as exc:  # (the amender is the user's code)
            raise ConfigError(f"{_PREFIX}: {spec}: {type(exc).__name__}: {exc}") from None
        if not isinstance(R, dict):
            raise ConfigError(f"{_PREFIX}: {spec}: the amender returned no R object")
    return R
