"""flux-lite's own Python API: what Flux has no call for.

Flux's API is the `flux` package (`flux python`, flux-lite-python(1)). What a
real Flux cannot do -- create an instance in a directory, move its virtual
clock, replay a workload trace, dump and restore -- flux-lite offers here,
importable from any Python that has flux-lite installed::

    from flux_lite import api

    inst = api.start("/tmp/rehearsal", size=16, cores=8)   # virtual clock
    api.advance(inst, 3600)                                 # one simulated hour
    summary = api.replay("tests/data/kth-sp2-first400.swf", policy="easy")

Every call is what the command of the same name does (flux-lite start,
clock advance, replay), with its checks, and raises FluxLiteError (a
ValueError for malformed input) with the command's message on failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flux_lite import config as configmod
from flux_lite import workload
from flux_lite.instance import Instance
from flux_lite.sched import registry

Progress = Callable[[int, int], None]


def start(state_dir: str | os.PathLike[str], *, size: int = 1, cores: int = 4, gpus: int = 0,
          hosts: str | None = None, config: dict[str, Any] | str | os.PathLike[str] | None = None,
          clock: str = "virtual", force: bool = False) -> Instance:
    """Create an instance at state_dir (as `flux-lite start`) and return it open.

    config: the configuration as a dict, or the path of a YAML, TOML or JSON
    file. The clock is virtual unless clock="real". Close the instance
    (`inst.close()`, or use it as a context manager) when done."""
    cfg = configmod.load_file(os.fspath(config)) if isinstance(config, (str, os.PathLike)) else config
    return Instance.create(Path(state_dir), config=cfg, size=size, hosts=hosts, cores=cores, gpus=gpus,
                           clock=clock, force=force)


def open(state_dir: str | os.PathLike[str] | None = None) -> Instance:  # noqa: A001 (the verb is the name)
    """The instance at state_dir (default: FLUX_LITE_STATE_DIR, else the default instance)."""
    return Instance.open(state_dir)


def now(instance: Instance) -> float:
    """The instance's clock (seconds since the epoch), brought up to date."""
    with instance.session() as broker:
        return float(broker.now)


def advance(instance: Instance, seconds: float, progress: Progress | None = None) -> float:
    """Move a virtual clock forward by seconds, running everything that falls
    due (as `flux-lite clock advance`); returns the new time. Owner only."""
    return float(instance.advance_clock(float(seconds), progress=progress))


def replay(trace: str | os.PathLike[str], *, policy: str | None = None, nodes: int | None = None,
           cores_per_node: int | None = None, limit: int | None = None,
           keep: str | os.PathLike[str] | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Replay an SWF trace (plain or gzip) on a new virtual-clock instance, as
    `flux-lite replay` does; returns its summary (what --json prints, without
    the trace's name). keep: create the instance there (a new directory) and
    keep it; by default it is removed."""
    summary, tr = workload.replay_file(os.fspath(trace), policy or registry.default_policy(), nodes,
                                       cores_per_node, limit, None if keep is None else os.fspath(keep),
                                       progress=progress)
    return dict(summary, skipped=tr.skipped)
