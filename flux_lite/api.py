"""flux-lite's own Python API: what Flux has no call for.

Flux's API is the `flux` package (`flux python`, flux-lite-python(1)). What a
real Flux cannot do -- create an instance in a directory, move its virtual
clock, replay a workload trace, dump and restore -- flux-lite offers here,
importable from any Python that has flux-lite installed::

    from flux_lite import api

    inst = api.start("/tmp/rehearsal", size=16, cores=8)   # virtual clock
    api.advance(inst, 3600)                                 # one simulated hour
    summary = api.replay("tests/data/kth-sp2-first400.swf", policy="easy")
    api.dump(inst, "/tmp/rehearsal.tgz")                    # a Flux KVS archive
    copy = api.restore("/tmp/rehearsal.tgz", "/tmp/copy")   # a new instance from it

Every call is what the command of the same name does (flux-lite start,
clock advance, replay, dump, restore), with its checks, and raises FluxLiteError (a
ValueError for malformed input) with the command's message on failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flux_lite import archive, restore as restoremod, study, workload
from flux_lite import config as configmod
from flux_lite.dump import batched_entries as dump_entries
from flux_lite.instance import Instance

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
           keep: str | os.PathLike[str] | None = None, progress: Progress | None = None,
           config: dict[str, Any] | str | os.PathLike[str] | None = None, queue_map: str | None = None,
           jobs_out: str | os.PathLike[str] | None = None, swf_out: str | os.PathLike[str] | None = None,
           series_out: str | os.PathLike[str] | None = None, series_step: float | None = None,
           users: str = "synthetic") -> dict[str, Any]:
    """Replay an SWF trace (plain or gzip) on a new virtual-clock instance, as
    `flux-lite replay` does; returns its summary (what --json prints, without
    the trace's name). keep: create the instance there (a new directory) and
    keep it; by default it is removed. config (a dict or a file), queue_map
    ("N=NAME,..."), jobs_out, swf_out, series_out, series_step (seconds) and
    users ("synthetic" or "local") are the command's options."""
    cfg = configmod.load_file(os.fspath(config)) if isinstance(config, (str, os.PathLike)) else config

    def path(p: str | os.PathLike[str] | None) -> str | None:
        return None if p is None else os.fspath(p)

    run = study.replay_point(os.fspath(trace), policy, nodes=nodes, cores_per_node=cores_per_node, limit=limit,
                             config=cfg, queue_map=workload.parse_queue_map(queue_map) if queue_map else None,
                             jobs_out=path(jobs_out), swf_out=path(swf_out), series_out=path(series_out),
                             series_step=series_step, names=users, keep=path(keep), progress=progress)
    return dict(run["summary"], skipped=run["skipped"])


def dump(instance: Instance, path: str | os.PathLike[str], *, checkpoint: bool = False,
         progress: Progress | None = None) -> int:
    """Write the instance to a Flux KVS archive at path (as `flux-lite dump`;
    the format follows the extension: .tar, .tgz, .tar.gz, .tar.bz2,
    .tar.xz, .zip, .cpio), a batch of jobs at a time; returns the number of
    keys written. checkpoint: a shutdown dump (with checkpoint/job-manager and
    checkpoint/resource). progress(keys, 0) is called as keys are written.
    The archive appears whole or not at all."""
    out = os.fspath(path)
    archive.check_output(out)
    with instance.read_session() as broker:
        return archive.write(out, dump_entries(broker, checkpoint=checkpoint),
                             on_entry=None if progress is None else (lambda _entry, n: progress(n, 0)),
                             parallel=True)


def restore(path: str | os.PathLike[str], state_dir: str | os.PathLike[str], *, force: bool = False,
            clock: str | None = None, config: dict[str, Any] | str | os.PathLike[str] | None = None,
            max_size: int | None = None, progress: Progress | None = None) -> Instance:
    """Create an instance at state_dir from a Flux KVS archive, as `flux-lite
    restore` does: one written by flux-lite or by a real `flux dump`, read as
    a stream. force replaces an instance already there; clock: "virtual" or
    "real" (default: the archive's, else real); config as for start;
    max_size: what the archive may decompress to (default: 200 times its
    size, at least 512 MiB). progress(keys, blobs) is called as keys are
    restored. Returns the instance, open."""
    src = os.fspath(path)
    cfg = configmod.load_file(os.fspath(config)) if isinstance(config, (str, os.PathLike)) else config
    done = restoremod.restore(Path(state_dir), archive.entries(src, max_size=max_size), force=force,
                              clock=clock, config=cfg, source=src,
                              on_entry=None if progress is None else (lambda _entry, k, b: progress(k, b)))
    return done.instance
