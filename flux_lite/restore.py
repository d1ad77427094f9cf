"""Restoring a Flux KVS archive (`flux dump`'s, or flux-lite's own) into a new instance.

Two kinds of archive come in:

- **a flux-lite dump** (it has ``flux-lite/format``): the instance comes back
  exactly as it was dumped: every key, the derived tables, the clock, the
  scheduler's state. Running jobs go on running.
- **a Flux dump**: the new instance gets the archive's resources
  (``resource/R``), drains, jobs and queue states, and then does what a Flux
  job manager does when it restarts on that content: pending jobs get
  ``flux-restart`` and a fresh ``priority``; jobs that were running fail with
  the exec exception Flux's job-exec raises when it cannot recover their guest
  namespace (their dependents as Flux's dependency plugin treats them); new
  job ids continue above the archive's highest.

The archive is read and checked whole before anything is created; the
instance is published only once it is complete.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sqlite3
from dataclasses import dataclass, field

from flux_lite import __version__
from flux_lite import config as configmod
from flux_lite.archive import ArchiveError, Entry
from flux_lite.dump import FOREIGN, JOB_KEYS, PREFIX, content_digest, flux_path, is_job_dir
from flux_lite.formats.signed import unwrap_J
from flux_lite.formats import eventlog
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset
from flux_lite.instance import Instance
from flux_lite.job_manager import replay
from flux_lite.job_manager.job import CLEANUP, DEPEND, PRIORITY, RUN, SCHED
from flux_lite.job_manager.queues import STATE_KEY
from flux_lite.rebuild import rebuild
from flux_lite.schema import DERIVED_VERSION, TABLES

# values shorter than this are stored inline in a Flux KVS directory entry;
# longer ones become a content blob (flux-core's BLOBREF_MAX_STRING_SIZE)
BLOBREF_MAX_STRING_SIZE = 72

EXEC_RESTART_NOTE = "failed to create guest ns: No such file or directory"


@dataclass
class Snapshot:
    """An archive's content, checked and sorted into what a restore needs."""

    keys: dict = field(default_factory=dict)  # KVS key -> (kind, text), Flux layout
    own: dict = field(default_factory=dict)  # flux-lite's own keys (flux-lite dumps)
    tables: dict = field(default_factory=dict)  # derived tables (flux-lite dumps)
    format: dict | None = None  # flux-lite/format, when a flux-lite dump
    nkeys: int = 0
    nblobs: int = 0
    max_timestamp: float = 0.0
    mtime: float = 0.0  # the newest entry's time: when the dump was made
    stale: bool = False  # flux-lite's own state was dropped: the content changed since

    @property
    def from_flux_lite(self) -> bool:
        return self.format is not None


def _kind_for(path_key: str, data: bytes) -> tuple[str, str]:
    """How a Flux value is stored in flux-lite's KVS: (kind, text)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return "base64", base64.b64encode(data).decode()
    if path_key.rsplit(".", 1)[-1] == "eventlog":
        return "eventlog", text
    try:
        json.loads(text)
    except ValueError:
        return "raw", text
    return "json", text


def _key_of(path: str) -> str:
    parts = path.split("/")
    if any(not p or "." in p for p in parts):
        raise ArchiveError(f"invalid key in archive: '{path}'")
    return ".".join(parts)


def load(entries: list[Entry], on_entry=None) -> Snapshot:
    """Sort and check an archive's entries; on_entry(entry, keys, blobs) sees
    each one with the running counts (blobs lag by one, as Flux's do)."""
    snap = Snapshot()
    dirs = set()
    blobs = 0
    tables = {}
    for i, entry in enumerate(entries, 1):
        key = _key_of(entry.path)
        parts = key.split(".")
        for n in range(1, len(parts)):
            dirs.add(tuple(parts[:n]))
        if on_entry is not None:
            on_entry(entry, i, blobs)
        snap.mtime = max(snap.mtime, entry.mtime)
        if not entry.is_symlink and len(entry.data) >= BLOBREF_MAX_STRING_SIZE:
            blobs += 1
        if parts[0] == PREFIX:
            rest = parts[1:]
            if rest == ["format"]:
                try:
                    snap.format = json.loads(entry.data)
                    assert isinstance(snap.format, dict)
                except (ValueError, AssertionError):
                    raise ArchiveError(f"{entry.path}: not a flux-lite dump format record") from None
            elif len(rest) == 2 and rest[0] == "tables":
                try:
                    tables[rest[1]] = json.loads(entry.data)
                except ValueError:
                    raise ArchiveError(f"{entry.path}: damaged table") from None
            elif len(rest) >= 2 and rest[0] == "kvs":
                snap.own[".".join(rest[1:])] = entry
            else:
                raise ArchiveError(f"{entry.path}: unknown flux-lite entry")
            continue
        if entry.is_symlink:
            snap.keys[key] = ("symlink", entry.target)
            continue
        if is_job_dir(parts) and len(parts) == 6 and parts[5] == "J":
            try:
                text = entry.data.decode()
            except UnicodeDecodeError:
                text = None
            payload = unwrap_J(text) if text is not None else None
            if payload is not None:
                snap.keys[key] = ("json", payload)
                continue
        snap.keys[key] = _kind_for(key, entry.data)
    snap.nkeys = len(entries)
    if snap.format is not None and snap.format.get("content") != content_digest(
            [e for e in entries if not e.path.startswith(PREFIX + "/")]):
        # flux-lite's state no longer matches the jobs beside it (a real Flux
        # ran on this content and dumped it again): the archive is Flux's now
        snap.format = None
        snap.own = {}
        tables = {}
        snap.stale = True
    snap.nblobs = blobs + len(dirs) + 1  # every directory is a blob, the root too
    # flux-lite's own keys: their kinds are recorded in the format record
    kinds = (snap.format or {}).get("kinds") or {}
    own = {}
    for key, entry in snap.own.items():
        kind = kinds.get(key, "json")
        if kind == "base64":
            own[key] = (kind, base64.b64encode(entry.data).decode())
        else:
            try:
                own[key] = (kind, entry.data.decode())
            except UnicodeDecodeError:
                raise ArchiveError(f"{entry.path}: not UTF-8 text") from None
    snap.own = own
    snap.tables = tables
    if snap.own and snap.format is None and not snap.stale:
        raise ArchiveError("flux-lite keys without flux-lite/format: damaged flux-lite dump")
    for name in ("checkpoint.job-manager", "checkpoint.resource"):
        val = snap.keys.get(name)
        if val is not None and val[0] == "json":
            ts = json.loads(val[1]).get("timestamp") if name == "checkpoint.resource" else None
            if isinstance(ts, (int, float)):
                snap.max_timestamp = max(snap.max_timestamp, float(ts))
    if not snap.from_flux_lite:
        # a flux-lite dump brings its job index; a Flux archive is replayed
        _check_jobs(snap)
    return snap


def _check_jobs(snap):
    """Every job must replay: its eventlogs decode, jobspec and R parse; and
    the last time the archive records is found."""
    latest = snap.max_timestamp
    for key, (kind, text) in snap.keys.items():
        if kind == "eventlog":
            try:
                entries = eventlog.decode(text)
            except ValueError as exc:
                raise ArchiveError(f"{key.replace('.', '/')}: {exc}") from None
            for e in entries:
                ts = e.get("timestamp")
                if isinstance(ts, (int, float)) and ts > latest:
                    latest = float(ts)
            continue
        if key.endswith((".jobspec", ".R")) and is_job_dir(key.split(".")) and key.count(".") == 5 and (
                kind != "json" or not isinstance(json.loads(text), dict)):
            raise ArchiveError(f"{key.replace('.', '/')}: not a JSON object")
    snap.max_timestamp = latest


# -- restoring --------------------------------------------------------------------


def restore(state_dir, snap: Snapshot, *, force: bool = False, clock: str | None = None,
            config: dict | None = None, resources: dict | None = None, source: str = "archive"):
    """Create the instance at state_dir from snap; returns the opened Instance.

    resources: the keyword arguments of a fresh instance's resource set
    (size, hosts, cores, gpus) to use instead of the archive's resource/R
    (Flux archives only).
    """
    if snap.from_flux_lite:
        if resources:
            raise ArchiveError("a flux-lite dump brings its own resources: --test-* options cannot change them")
        return Instance.create(state_dir, force=force,
                               populate=lambda sd, kvs: _populate_flux_lite(sd, kvs, snap, clock, config, source))
    R = None
    kwargs = {}
    if resources:
        kwargs.update(resources)
    elif config and (config.get("resource") or {}).get("config"):
        pass  # the configuration's resource.config wins, as in a fresh instance
    else:
        R = _archive_R(snap)
    start = None
    if (clock or (config or {}).get("clock", {}).get("mode")) == "virtual" and not (config or {}).get(
            "clock", {}).get("start"):
        # a virtual clock starts just after the last thing the archive records
        start = float(math.floor(snap.max_timestamp) + 1) if snap.max_timestamp else None
    return Instance.create(state_dir, config=config, clock=clock, force=force, R=R, start=start,
                           prepare=lambda inst, ctx: _prepare_flux(inst, ctx, snap, source), **kwargs)


def _archive_R(snap):
    val = snap.keys.get("resource.R")
    if val is None:
        raise ArchiveError("the archive has no resource/R: give the resources with --test-size (or a config)")
    try:
        R = json.loads(val[1])
        Rset.from_dict(R)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ArchiveError(f"resource/R: {exc}") from None
    R = dict(R)
    R["execution"] = dict(R.get("execution") or {})
    return R


def _populate_flux_lite(state_dir, kvs, snap, clock, config, source):
    """A flux-lite dump: every key and table back as they were."""
    conn = kvs.conn
    with kvs.transaction():
        import re

        # the derived tables a current instance has; an archive with another
        # layout (or without one of them) gets them rebuilt from the eventlogs
        derived = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", TABLES)) - {"dmesg"}
        same_layout = snap.format.get("derived_version") == DERIVED_VERSION and derived <= set(snap.tables)
        for name, table in sorted(snap.tables.items()):
            if not same_layout and name in derived:
                continue  # rebuilt from the eventlogs below
            try:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
                conn.execute(table["sql"])
                for sql in table.get("indexes") or []:
                    conn.execute(sql)
                columns = table["columns"]
                if table["rows"]:
                    marks = ", ".join("?" * len(columns))
                    cols = ", ".join(f'"{c}"' for c in columns)
                    conn.executemany(f'INSERT INTO "{name}" ({cols}) VALUES ({marks})', table["rows"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ArchiveError(f"{PREFIX}/tables/{name}: damaged table ({exc})") from None
            except sqlite3.Error as exc:  # a table that does not fit
                raise ArchiveError(f"{PREFIX}/tables/{name}: {exc}") from None
        for stmt in TABLES.split(";"):
            if stmt.strip():
                conn.execute(stmt)
        for key, (kind, text) in sorted(snap.own.items()):
            kvs.put_text(key, text, kind=kind)
        for key, (kind, text) in sorted(snap.keys.items()):
            if key.startswith("checkpoint."):
                continue  # flux-lite's own checkpoint (under flux-lite/) is the one that counts
            if _is_flux_lite_key(key):
                kvs.put_text(key, text, kind=kind)
            else:
                kvs.put_text(f"{FOREIGN}.{key}", text, kind=kind)
        meta = kvs.get("instance.meta")
        if not isinstance(meta, dict) or kvs.get("instance.clock") is None:
            raise ArchiveError("damaged flux-lite dump: no instance.meta or instance.clock")
        meta = dict(meta, owner=os.getuid(), uuid=os.urandom(16).hex())
        if clock:
            meta["clock"] = clock
        kvs.put("instance.meta", meta)
        if config is not None:
            kvs.put("config", configmod.validate(dict(config)))
        conn.execute(f"PRAGMA user_version = {DERIVED_VERSION if same_layout else 0}")
        inst = Instance(state_dir, kvs)
        now = kvs.get("instance.clock")["now"]
        _restart_admin_eventlog(kvs, now)
        inst.log("broker", "info", f"restored from {source} (flux-lite dump)", t=now)
        if not same_layout:

            ctx = inst.context(now)
            rebuild(ctx)
            ctx.run()
            ctx.save()
            conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")
        inst.flush_log()


def _is_flux_lite_key(key):
    return flux_path(key) is not None


def _restart_admin_eventlog(kvs, now):
    """The admin eventlog of a restarted instance: a new start after the last finish."""
    text = kvs.get("admin.eventlog")
    if not text:
        return
    try:
        last = eventlog.decode(text)[-1]["name"]
    except (ValueError, IndexError):
        return
    if last == "finish":
        kvs.append("admin.eventlog", eventlog.encode_entry(
            now, "start", {"version": 1, "core_version": f"flux-lite-{__version__}"}))


def _prepare_flux(inst, ctx, snap, source):
    """A Flux dump: its content, then what Flux's job manager does on restart."""
    kvs = ctx.kvs
    kvs.flush()
    ckpt = None
    drain_ckpt = None
    for key, (kind, text) in sorted(snap.keys.items()):
        parts = key.split(".")
        if key == "checkpoint.job-manager":
            ckpt = _json_or_none(text)
            continue
        if key == "checkpoint.resource":
            drain_ckpt = _json_or_none(text)
            continue
        if key == "resource.R":
            continue  # the instance's R is already written
        if key == "resource.eventlog" or parts[0] == "admin" or (
                is_job_dir(parts) and len(parts) >= 6 and (parts[5] in JOB_KEYS and len(parts) == 6
                                                           or parts[5] == "guest")):
            kvs.put_text(key, text, kind=kind)
        else:
            kvs.put_text(f"{FOREIGN}.{key}", text, kind=kind)
    inst.log("broker", "info", f"restoring {source}")
    if snap.stale:
        inst.log("broker", "info", "flux-lite state in the archive is older than its content: ignored")
    inst.log("kvs", "info", f"restored KVS from checkpoint on {_iso(snap.mtime)}")
    _append_admin_start(kvs, ctx.now)

    # job ids continue above the archive's; queue states come from the checkpoint
    ids = replay.job_ids(kvs)
    max_jobid = max(ids) if ids else 0
    checkpoint = {"version": 1, "max_jobid": max_jobid}
    if isinstance(ckpt, dict):
        if isinstance(ckpt.get("max_jobid"), int):
            checkpoint["max_jobid"] = max(max_jobid, ckpt["max_jobid"])
        _restore_queues(kvs, ckpt.get("queue"))
    kvs.put("checkpoint.job-manager", checkpoint)

    _restore_drains(ctx, drain_ckpt)

    # the job manager's restart: replay every eventlog, then act on what is found
    rebuild(ctx)
    jm = ctx.jm
    jobs = jm.jobs

    running = [j for j in jobs.values() if j.state & (RUN | CLEANUP)]
    ctx.log("job-manager", "info", f"restart: {len(ids)} jobs")
    ctx.log("job-manager", "info", f"restart: {len(running)} running jobs")
    if ckpt is None:
        ctx.log("job-manager", "info", "restart: checkpoint.job-manager not found")
    for job in sorted(jobs.values(), key=lambda j: j.id):
        if job.state == SCHED:
            jm.post(job, "flux-restart")
        elif job.state in (DEPEND, PRIORITY):
            jm.requeue_action(job)  # a dependency check or priority was under way
    _fail_running(ctx, sorted(running, key=lambda j: j.id))
    ctx.run()


def _restore_queues(kvs, entries):
    """Queue states from checkpoint.job-manager: enable/start and their
    reasons, by queue name (none for the anonymous queue). Queues the
    configuration does not have are ignored when read, as Flux ignores them."""
    if not isinstance(entries, list):
        return
    states = []
    for ent in entries:
        if not isinstance(ent, dict) or not isinstance(ent.get("enable"), bool):
            continue
        out = {} if not isinstance(ent.get("name"), str) else {"name": ent["name"]}
        out["enable"] = ent["enable"]
        # version 0 checkpoints have no start and call the disable reason "reason"
        out["start"] = ent["start"] if isinstance(ent.get("start"), bool) else True
        reason = ent.get("disable_reason") or ent.get("reason")
        if not out["enable"]:
            out["disable_reason"] = reason if isinstance(reason, str) else None
        if not out["start"] and isinstance(ent.get("stop_reason"), str):
            out["stop_reason"] = ent["stop_reason"]
        states.append(out)
    kvs.put(STATE_KEY, {"version": 1, "queue": states})


def _iso(t):
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _append_admin_start(kvs, now):
    kvs.append("admin.eventlog", eventlog.encode_entry(
        now, "start", {"version": 1, "core_version": f"flux-lite-{__version__}"}))


def _restore_drains(ctx, drain_ckpt):
    """Drains as Flux's resource module recovers them: the checkpointed drain
    state, then the eventlog's events after the checkpoint. flux-lite keeps its
    drains in resource.eventlog alone, so where replaying that eventlog gives
    another answer, drain/undrain events make it give Flux's."""
    if not isinstance(drain_ckpt, dict) or not isinstance(drain_ckpt.get("drain_state"), dict):
        return
    res = ctx.resources
    ck_ts = drain_ckpt.get("timestamp") or 0.0
    want = {}
    for ids, info in drain_ckpt["drain_state"].items():
        try:
            ranks = IDset.parse(ids)
        except ValueError:
            continue
        for rank in ranks:
            want[rank] = {"timestamp": float(info.get("timestamp") or 0.0), "reason": info.get("reason") or ""}
    text = ctx.kvs.get("resource.eventlog") or ""
    for entry in eventlog.decode(text) if text else []:
        if entry["timestamp"] <= ck_ts:
            continue
        c = entry.get("context") or {}
        try:
            ranks = IDset.parse(c.get("idset", ""))
        except ValueError:
            continue
        for rank in ranks:
            if entry["name"] == "drain":
                want[rank] = {"timestamp": entry["timestamp"], "reason": c.get("reason") or ""}
            elif entry["name"] == "undrain":
                want.pop(rank, None)
    have = res.drained
    valid = set(res.rset.ranks)
    undrain = [r for r in have if r not in want]
    if undrain:
        res.undrain(undrain)
    for rank, info in sorted(want.items()):
        if rank not in valid:
            continue
        if rank in have and have[rank].get("reason", "") == info["reason"]:
            continue
        ctx.kvs.append("resource.eventlog", eventlog.encode_entry(info["timestamp"], "drain", {
            "idset": str(rank), "nodelist": res.hostlist_of([rank]), "reason": info["reason"], "overwrite": 1}))
    res._drained = None  # re-read with the events just appended


def _fail_running(ctx, running):
    """Jobs that were running when the archive was made: Flux's job-exec cannot
    recover their guest namespace, raises an exec exception and releases them."""
    jm = ctx.jm
    owner = ctx.instance.owner
    for job in running:
        if job.started and not job.finished and not job.released:
            name = f58(job.id)
            # its dependents count it as never started, as Flux's restarted
            # dependency plugin does (it never saw the start)
            ctx.deps.starts_unseen.add(job.id)
            ctx.log("job-exec", "err", f"could not recover guest namespace for {name}")
            jm.post(job, "exception", {"type": "exec", "severity": 0, "userid": owner, "note": EXEC_RESTART_NOTE})
            ctx.log("job-exec", "info", f"job-exception: id={name}: {EXEC_RESTART_NOTE}")
            jm.post(job, "release", {"ranks": "all", "final": True})
        else:
            if job.finished and not job.released:
                # the exec system that would have released it is gone
                jm.post(job, "release", {"ranks": "all", "final": True})
            # allocated but not started, or part way through cleanup: carry on
            jm.requeue_action(job)
