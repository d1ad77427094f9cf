"""`flux-lite dump`: the instance as a Flux KVS archive.

The archive has Flux's layout, so `flux restore` (or `flux start
-Scontent.restore=`) reads it as it reads one of its own: one entry per KVS
value, the path being the key with ``.`` turned into ``/``. Per job ``J``
(re-encoded as Flux encodes an unsigned jobspec), ``jobspec``, ``eventlog``,
``R``; ``guest/exec/eventlog`` for inactive jobs that ran, and a ``guest``
symlink into the job's guest namespace while it runs; ``resource/R``,
``resource/eventlog``, ``admin/eventlog``; with ``checkpoint=True`` also
``checkpoint/job-manager`` and ``checkpoint/resource``, as Flux's dump at
shutdown has them.

Everything that is flux-lite's own (its configuration, clock, scheduler
state, housekeeping, the derived tables) goes under ``flux-lite/``, a
directory Flux never reads; that is what lets a flux-lite dump come back into
flux-lite exactly as it was.
"""

from __future__ import annotations

import base64
import json
import re

from flux_lite import __version__, access
from flux_lite.archive import Entry
from flux_lite.formats import eventlog
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import kvs_key, kvs_namespace
from flux_lite.formats.signed import sign_none
from flux_lite.job_manager import index
from flux_lite.job_manager.job import INACTIVE
from flux_lite.schema import DERIVED_VERSION
from flux_lite.stored import row_text

PREFIX = "flux-lite"  # flux-lite's own keys, under a directory Flux ignores
FOREIGN = "archive"  # keys of a Flux archive flux-lite has no use for, kept as they were
FORMAT_VERSION = 1
# derived tables, rebuilt from the eventlogs when an archive's layout is older
SKIP_TABLES = {"kvs"}
# per-job keys Flux has (guest/* too)
JOB_KEYS = ("J", "R", "eventlog", "jobspec")


_JOB_DIR = re.compile(r"job\.[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}(\.|$)")


def is_job_dir(parts: list[str]) -> bool:
    """Do the key's components start with a job directory (job.XXXX.XXXX.XXXX.XXXX)?"""
    return len(parts) >= 5 and parts[0] == "job" and _JOB_DIR.match(".".join(parts[:5])) is not None


def flux_path(key: str) -> str | None:
    """The archive path of a KVS key that is part of Flux's layout, else None."""
    if key.startswith(FOREIGN + "."):
        return key[len(FOREIGN) + 1:].replace(".", "/")
    parts = key.split(".")
    if is_job_dir(parts) and len(parts) >= 6:
        if (len(parts) == 6 and parts[5] in JOB_KEYS) or parts[5] == "guest":
            return "/".join(parts)
        return None
    if key in ("resource.R", "resource.eventlog") or parts[0] == "admin":
        return "/".join(parts)
    return None


def _text(kind: str, value: str) -> bytes:
    if kind == "base64":
        return base64.b64decode(value)
    return value.encode()


def _jobid_of(key: str) -> int:
    return int("".join(key.split(".")[1:5]), 16)


def _submit_userid(eventlog_text: str) -> int:
    first = eventlog_text.split("\n", 1)[0]
    try:
        return int(json.loads(first).get("context", {}).get("userid", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


def collect(broker, checkpoint: bool = False) -> list[Entry]:
    """The archive entries for the instance as it is now (inside a session).

    Only the instance owner may dump: the archive holds every user's jobs."""
    access.require_owner(broker.instance.identity, "dump")
    kvs = broker.kvs
    now = broker.now
    kvs.flush()
    rows = list(kvs.rows())  # (packed values unpacked)
    values = {key: (kind, value) for key, kind, value in rows}

    head: list[Entry] = []
    resource: list[Entry] = []
    links: list[Entry] = []
    jobfiles: list[Entry] = []
    guests: list[Entry] = []
    foreign: list[Entry] = []
    own: list[Entry] = []

    def add(bucket, path, data, mtime=now):
        bucket.append(Entry(path, data=data, mtime=mtime))

    # job states from the index: which jobs are running, which ran and ended
    states: dict[int, tuple] = {}
    for jobid, raw in index.raw_rows(kvs.conn):
        rec = json.loads(raw)
        states[jobid] = (rec["state"], rec.get("started"), rec.get("finished"))

    own_kinds: dict[str, str] = {}  # flux-lite's keys that are not JSON documents
    guest_dirs: set[str] = set()
    for key in values:
        parts = key.split(".")
        if is_job_dir(parts) and len(parts) >= 6 and parts[5] == "guest":
            guest_dirs.add(".".join(parts[:5]))

    for key, (kind, value) in values.items():
        path = flux_path(key)
        if path is None:
            if kind != "json":
                own_kinds[key] = kind
            add(own, f"{PREFIX}/kvs/" + key.replace(".", "/"), _text(kind, value))
            continue
        if kind == "symlink":
            links.append(Entry(path, target=value, mtime=0))
            continue
        data = _text(kind, value)
        parts = key.split(".")
        if is_job_dir(parts):
            if parts[5] == "J" and kind == "json":
                userid = _submit_userid(values.get(".".join(parts[:5]) + ".eventlog", ("", ""))[1])
                data = sign_none(value, userid).encode()
            add(guests if parts[5] == "guest" else jobfiles, path, data)
        elif parts[0] == "admin":
            head.append(Entry(path, data=data, mtime=now))
        elif key.startswith(FOREIGN + "."):
            add(foreign, path, data)
        else:
            add(resource, path, data)

    # the exec system's part: a running job's guest namespace is a symlink;
    # once the job is inactive its exec eventlog is in the job's directory
    for jobid, (state, started, finished) in sorted(states.items()):
        jobdir = kvs_key(jobid)
        if not started or jobdir in guest_dirs:
            continue
        if state != INACTIVE:
            links.append(Entry(jobdir.replace(".", "/") + "/guest", target=f"{kvs_namespace(jobid)}::.", mtime=0))
        elif finished:
            text = values.get(jobdir + ".eventlog", ("", ""))[1]
            log = _exec_eventlog(eventlog.decode(text) if text else [])
            if log:
                add(guests, jobdir.replace(".", "/") + "/guest/exec/eventlog", log.encode())

    # admin/eventlog: the instance's start (and, at a shutdown dump, finish)
    admin = values.get("admin.eventlog")
    admin_text = admin[1] if admin else eventlog.encode_entry(
        broker.instance.meta.get("start", now), "start",
        {"version": 1, "core_version": f"flux-lite-{__version__}"})
    if checkpoint:
        admin_text += eventlog.encode_entry(now, "finish", {"version": 1})
    head = [e for e in head if e.path != "admin/eventlog"]
    head.insert(0, Entry("admin/eventlog", data=admin_text.encode(), mtime=now))

    if checkpoint:
        head.append(Entry("checkpoint/job-manager", data=eventlog.dumps(
            job_manager_checkpoint(broker)).encode(), mtime=now))
        head.append(Entry("checkpoint/resource", data=eventlog.dumps(
            resource_checkpoint(broker)).encode(), mtime=now))

    # flux-lite's derived tables, so that a restore needs no replay
    conn = kvs.conn
    user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    jobfiles.sort(key=lambda e: e.path)
    guests.sort(key=lambda e: e.path)
    links.sort(key=lambda e: e.path)
    resource.sort(key=lambda e: (e.path != "resource/R", e.path))
    flux_entries = head + resource + links + jobfiles + guests + foreign
    own.append(Entry(f"{PREFIX}/format", data=json.dumps(
        {"version": FORMAT_VERSION, "derived_version": user_version or DERIVED_VERSION,
         "flux_lite": __version__, "kinds": own_kinds,
         "content": content_digest(flux_entries)}).encode(), mtime=now))
    for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"):
        if name in SKIP_TABLES:
            continue
        indexes = [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL "
            "ORDER BY name", (name,))]
        cur = conn.execute(f'SELECT * FROM "{name}"')
        columns = [d[0] for d in cur.description]
        # (a packed jobs-index record as its text: stored.row_text)
        table_rows = [[row_text(v) if type(v) is bytes else v for v in r] for r in cur]
        own.append(Entry(f"{PREFIX}/tables/{name}", data=json.dumps(
            {"sql": sql, "indexes": indexes, "columns": columns, "rows": table_rows},
            separators=(",", ":")).encode(), mtime=now))

    return flux_entries + own


def content_digest(entries) -> str:
    """A digest of the Flux-layout entries: flux-lite's own state in an archive
    is only valid with exactly the content it was written with (a real Flux
    that restored the dump and dumped again has changed it)."""
    import hashlib

    h = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.path):
        body = b"L" + e.target.encode() if e.is_symlink else b"F" + e.data
        for part in (e.path.encode(), body):
            h.update(b"%d:" % len(part))
            h.update(part)
    return "sha256:" + h.hexdigest()


def _exec_eventlog(entries) -> str:
    """The exec system's eventlog of a job that ran, as Flux's job-exec writes it."""
    start = finish = None
    for entry in entries:
        if entry["name"] == "start" and start is None:
            start = entry["timestamp"]
        elif entry["name"] == "finish" and finish is None:
            finish = entry
    if start is None or finish is None:
        return ""
    status = (finish.get("context") or {}).get("status", 0)
    t = finish["timestamp"]
    return "".join([
        eventlog.encode_entry(start, "init"),
        eventlog.encode_entry(start, "starting"),
        eventlog.encode_entry(start, "recoverable"),
        eventlog.encode_entry(t, "complete", {"status": status}),
        eventlog.encode_entry(t, "done"),
    ])


def queue_states(broker) -> list[dict]:
    """Queue enable/start states in checkpoint.job-manager's shape."""
    return broker.queues.checkpoint()


def job_manager_checkpoint(broker) -> dict:
    ckpt = broker.kvs.get("checkpoint.job-manager") or {}
    max_jobid = int(ckpt.get("max_jobid") or 0)

    max_jobid = max(max_jobid, index.max_id(broker.kvs.conn))
    return {"version": 1, "max_jobid": max_jobid, "queue": queue_states(broker)}


def resource_checkpoint(broker) -> dict:
    """Drain state as Flux's resource module checkpoints it: ranks with the
    same reason and (whole-second) time grouped into one idset."""
    res = broker.resources
    groups: dict[tuple[float, str], list[int]] = {}
    for rank, info in sorted(res.drained.items()):
        groups.setdefault((float(round(info["timestamp"])), info.get("reason") or ""), []).append(rank)
    state: dict[str, dict] = {}
    for (ts, reason), ranks in groups.items():
        state[str(IDset(ranks))] = {"timestamp": ts, "reason": reason, "nodelist": res.hostlist_of(ranks)}
    return {"timestamp": broker.now, "drain_state": state}
