"""The watches in progress on an instance: what Flux's modules count in
``flux module stats`` (job-info's watchers, kvs-watch's per-namespace
watchers, job-list's id waits).

In Flux these are requests a module holds in memory while a client waits.
flux-lite has no resident module: a waiting command is a process polling the
state directory. So a command that has to wait announces its watch in a file
of the state directory's ``watch/`` directory for as long as it waits, and
the stats count the announcements whose process is alive. This is runtime
state, like a broker's memory, not instance state: nothing of it is in the
KVS, dumps or restores, and a killed waiter's file is ignored (and removed
by the next reader).

A watch is a small JSON object: ``{"service": "job-info", "jobid": N,
"guest": bool}`` for an eventlog watch of a job (with ``"update": true``
for an update watch of its R or jobspec, which the broker socket serves), ``{"service": "kvs-watch",
"namespace": NS}`` for a watch of a KVS key, ``{"service": "job-list",
"jobid": N}`` for a job-list id wait.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path

WATCH_DIR = "watch"
_seq = itertools.count()


def _directory(state_dir: str | Path) -> Path:
    return Path(state_dir) / WATCH_DIR


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


@contextlib.contextmanager
def announced(state_dir: str | Path, watches: list[dict]) -> Iterator[None]:
    """Announce watches for the duration of the block (best effort: a state
    directory this process may not write to leaves them unannounced, and the
    wait goes on)."""
    path = None
    if watches:
        directory = _directory(state_dir)
        name = f"{os.getpid()}-{next(_seq)}"
        try:
            directory.mkdir(exist_ok=True)
            tmp = directory / f".{name}.tmp"
            tmp.write_text(json.dumps(watches))
            path = directory / f"{name}.json"
            os.replace(tmp, path)
        except OSError:
            path = None
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def live(state_dir: str | Path) -> list[dict]:
    """Every watch announced by a process still alive."""
    directory = _directory(state_dir)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out: list[dict] = []
    for name in names:
        if not name.endswith(".json"):
            continue
        pid_text = name.split("-", 1)[0]
        path = directory / name
        if not pid_text.isdigit() or not _alive(int(pid_text)):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            watches = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # gone since the listing, or being written
        if isinstance(watches, list):
            out.extend(w for w in watches if isinstance(w, dict))
    return out
