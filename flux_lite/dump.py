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
import hashlib
import itertools
import json
import re
from collections.abc import Iterator

from flux_lite import __version__, access
from flux_lite.archive import SYNC, Batch, Entry, Item, expand
from flux_lite.formats import eventlog
from flux_lite.formats.jobid import kvs_key, kvs_namespace
from flux_lite.formats.signed import sign_none
from flux_lite.job_manager import index
from flux_lite.job_manager.job import INACTIVE
from flux_lite.schema import DERIVED_VERSION
from flux_lite.kvs import PACKED, decode_value
from flux_lite.stored import PACKED_ROW, row_text

PREFIX = "flux-lite"  # flux-lite's own keys, under a directory Flux ignores
FOREIGN = "archive"  # keys of a Flux archive flux-lite has no use for, kept as they were
# 2: streamed (format first, content digest after the jobs, tables in chunks);
# 3: a packed jobs-index record in a table chunk is {"z": base64} (_cell)
FORMAT_VERSION = 3
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


_USERID = re.compile(r'^\{"timestamp":[0-9.e+-]+,"name":"submit","context":\{"userid":([0-9]+)[,}]')


def _submit_userid(eventlog_text: str) -> int:
    m = _USERID.match(eventlog_text)
    if m is not None:
        return int(m.group(1))
    first = eventlog_text.split("\n", 1)[0]
    try:
        return int(json.loads(first).get("context", {}).get("userid", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


TABLE_CHUNK = 2000  # table rows per archive entry (flux-lite/tables/NAME/N)
_JOB_DIR_LEN = len("job.0000.0000.0000.0000")


def collect(broker, checkpoint: bool = False) -> list[Entry]:
    """Every archive entry at once (small instances: tests); see entries()."""
    return list(entries(broker, checkpoint))


def entries(broker, checkpoint: bool = False) -> Iterator[Entry]:
    """The archive entries for the instance as it is now (inside a session),
    produced as they are written: a bounded number of jobs is read at a time
    (batched_entries(), every batch made here)."""
    return expand(batched_entries(broker, checkpoint))


JOBS_PER_BATCH = 256  # job directories per archive.Batch


def batched_entries(broker, checkpoint: bool = False) -> Iterator[Item]:
    """entries(), with the jobs' entries in archive.Batch items (JOBS_PER_BATCH
    job directories each, read here: a writer may make their entries in a
    second process; see archive.write's parallel).

    Order: flux-lite/format (so that a restore knows at once what it reads),
    Flux's keys (the admin and checkpoint keys, resource/, one job directory
    after another, keys kept from a Flux archive), then flux-lite's own:
    flux-lite/content (the digest of everything Flux reads, which only the
    end of a stream knows), its keys, and its derived tables in chunks.

    Only the instance owner may dump: the archive holds every user's jobs."""
    access.require_owner(broker.instance.identity, "dump")
    kvs = broker.kvs
    now = broker.now
    kvs.flush()
    conn = kvs.conn
    user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    yield Entry(f"{PREFIX}/format", data=json.dumps(
        {"version": FORMAT_VERSION, "derived_version": user_version or DERIVED_VERSION,
         "flux_lite": __version__}).encode(), mtime=now)

    digest = ContentDigest()
    own: list[tuple[str, str, str]] = []  # flux-lite's own keys (a few: the instance's)

    def flux(entry):
        digest.add(entry)
        return entry

    # everything outside job.* and archive.*: a few instance-wide keys
    top = [_plain(*row) for row in conn.execute(
        "SELECT key, kind, value FROM kvs WHERE key < 'archive.' "
        "OR (key > 'archive/' AND key < 'job.') OR key > 'job/' ORDER BY key")]
    head: list[Entry] = []
    resource: list[Entry] = []
    admin_text = None
    for key, kind, value in top:
        path = flux_path(key)
        if path is None:
            own.append((key, kind, value))
        elif key == "admin.eventlog":
            admin_text = value
        elif kind == "symlink":
            head.append(Entry(path, target=value, mtime=0))
        elif key.startswith("admin."):
            head.append(Entry(path, data=_text(kind, value), mtime=now))
        else:
            resource.append(Entry(path, data=_text(kind, value), mtime=now))
    del top

    # admin/eventlog: the instance's start (and, at a shutdown dump, finish)
    if admin_text is None:
        admin_text = eventlog.encode_entry(
            broker.instance.meta.get("start", now), "start",
            {"version": 1, "core_version": f"flux-lite-{__version__}"})
    if checkpoint:
        admin_text += eventlog.encode_entry(now, "finish", {"version": 1})
    yield flux(Entry("admin/eventlog", data=admin_text.encode(), mtime=now))
    for e in head:
        yield flux(e)
    if checkpoint:
        yield flux(Entry("checkpoint/job-manager", data=eventlog.dumps(
            job_manager_checkpoint(broker)).encode(), mtime=now))
        yield flux(Entry("checkpoint/resource", data=eventlog.dumps(
            resource_checkpoint(broker)).encode(), mtime=now))
    resource.sort(key=lambda e: (e.path != "resource/R", e.path))
    for e in resource:
        yield flux(e)

    # the jobs, one directory at a time, beside their state in the index
    def then(extra):
        total, more_own = extra
        digest.total += total
        own.extend(more_own)

    batch: list = []
    for job in _job_dirs(conn):
        batch.append(job)
        if len(batch) >= JOBS_PER_BATCH:
            yield Batch(_make_jobs, (now, batch), then)
            batch = []
    if batch:
        yield Batch(_make_jobs, (now, batch), then)
    yield SYNC  # (the digest below counts every batch's entries)

    # keys of a Flux archive flux-lite has no use for, back under their names
    for key, kind, value in kvs.rows(FOREIGN):
        path = flux_path(key) or key.replace(".", "/")
        if kind == "symlink":
            yield flux(Entry(path, target=value, mtime=0))
        else:
            yield flux(Entry(path, data=_text(kind, value), mtime=now))

    # flux-lite's own: the content digest and its keys' kinds, the keys, the tables
    kinds = {key: kind for key, kind, _ in own if kind != "json"}
    yield Entry(f"{PREFIX}/content", data=json.dumps(
        {"content": digest.hexdigest(), "kinds": kinds}).encode(), mtime=now)
    for key, kind, value in own:
        yield Entry(f"{PREFIX}/kvs/" + key.replace(".", "/"), data=_text(kind, value), mtime=now)
    yield from _table_entries(conn, now)


def _job_dirs(conn) -> Iterator[tuple]:
    """Each job directory's rows as stored, beside the job's state in the
    index: (jobdir, rows, state, started) in id order, started only for an
    active job (an inactive one's eventlog says it itself). A key under job.
    outside any job directory comes as (None, [its row], None, False): it is
    flux-lite's own."""
    states = iter(conn.execute("SELECT id, state FROM jobs ORDER BY id"))
    pending = next(states, None)
    rows = conn.execute("SELECT key, kind, value FROM kvs WHERE key > 'job.' AND key < 'job/' ORDER BY key")

    def alone(state):  # a job in the index without keys
        return (kvs_key(state[0]), [], state, state[1] != INACTIVE and _started(conn, state[0]))

    group: list[tuple[str, str, str]] = []
    jobdir = None
    for row in itertools.chain(rows, [None]):
        key: str = row[0] if row is not None else ""
        if row is not None and key[:_JOB_DIR_LEN] == jobdir and (len(key) == _JOB_DIR_LEN or key[_JOB_DIR_LEN] == "."):
            group.append(row)
            continue
        if jobdir is not None:
            jobid = _jobid_of(jobdir)
            while pending is not None and pending[0] < jobid:
                yield alone(pending)
                pending = next(states, None)
            state = None
            if pending is not None and pending[0] == jobid:
                state, pending = pending, next(states, None)
            yield (jobdir, group, state, state is not None and state[1] != INACTIVE and _started(conn, jobid))
            group = []
            jobdir = None
        if row is None:
            break
        if is_job_dir(key.split(".", 5)[:5]) and (len(key) == _JOB_DIR_LEN or key[_JOB_DIR_LEN] == "."):
            jobdir = key[:_JOB_DIR_LEN]
            group.append(row)
        else:
            yield (None, [row], None, False)  # job.* keys outside any job directory: flux-lite's own
    while pending is not None:
        yield alone(pending)
        pending = next(states, None)


def _make_jobs(arg) -> tuple[list[Entry], tuple[int, list]]:
    """A Batch's entries: each job's (see _job_dir), and (the digest of them
    as ContentDigest adds it, the rows that are flux-lite's own)."""
    now, jobs = arg
    made: list[Entry] = []
    own: list = []
    digest = ContentDigest()
    for jobdir, rows, state, started in jobs:
        if jobdir is None:
            own.extend(_plain(*row) for row in rows)
            continue
        for e in _job_dir(jobdir, rows, state, started, now, own):
            digest.add(e)
            made.append(e)
    return made, (digest.total, own)


def _job_dir(jobdir, rows, state, started, now, own) -> Iterator[Entry]:
    """One job's entries: J (signed as Flux writes an unsigned job), R,
    eventlog, jobspec, its guest namespace; the exec system's part made up
    from the state in the index (a running job's guest namespace is a
    symlink; once the job is inactive its exec eventlog is in its directory)."""
    has_guest = False
    log_text = ""
    n = _JOB_DIR_LEN + 1
    rows = [_plain(*row) if row[1] in PACKED else row for row in rows]
    for key, _kind, value in rows:
        if key[n:] == "eventlog":
            log_text = value
    dirpath = jobdir.replace(".", "/")
    for row in rows:
        key, kind, value = row
        name = key[n:]
        if name.startswith("guest") and (len(name) == 5 or name[5] == "."):
            has_guest = True
        elif name not in JOB_KEYS:
            own.append(row)  # not Flux's: kept with flux-lite's own keys
            continue
        path = dirpath + "/" + name.replace(".", "/")
        if kind == "symlink":
            yield Entry(path, target=value, mtime=0)
        elif name == "J" and kind == "json":
            yield Entry(path, data=sign_none(value, _submit_userid(log_text)).encode(), mtime=now)
        elif kind in ("json", "eventlog", "raw"):
            yield Entry(path, data=value.encode(), mtime=now)
        else:
            yield Entry(path, data=_text(kind, value), mtime=now)
    if state is None or has_guest:
        return
    if state[1] != INACTIVE:
        if started:
            yield Entry(dirpath + "/guest", target=f"{kvs_namespace(_jobid_of(jobdir))}::.", mtime=0)
    elif log_text:
        # (an inactive job that never started, or never finished, has none)
        log = exec_eventlog_of(log_text)
        if log:
            yield Entry(dirpath + "/guest/exec/eventlog", data=log.encode(), mtime=now)


def _started(conn, jobid: int) -> bool:
    """Has an active job started (its record in the index says)? Asked of
    the few active jobs only: an inactive one's eventlog says it itself."""
    row = conn.execute("SELECT json_extract(CASE WHEN typeof(data) = 'blob' THEN flux_lite_unpack(data) "
                       "ELSE data END, '$.started') FROM jobs WHERE id = ?", (jobid,)).fetchone()
    return bool(row and row[0])


def _table_entries(conn, now) -> Iterator[Entry]:
    """flux-lite's derived tables, so that a restore needs no replay: per
    table its layout, then its rows, TABLE_CHUNK at a time."""
    tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                          "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
    for name, sql in tables:
        if name in SKIP_TABLES:
            continue
        indexes = [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL "
            "ORDER BY name", (name,))]
        cur = conn.execute(f'SELECT * FROM "{name}"')
        columns = [d[0] for d in cur.description]
        chunk = _texts(cur.fetchmany(TABLE_CHUNK))
        # the first chunk holds the layout too (in Flux's key order it comes first)
        yield Entry(f"{PREFIX}/tables/{name}/000000", data=json.dumps(
            {"sql": sql, "indexes": indexes, "columns": columns, "rows": chunk},
            separators=(",", ":")).encode(), mtime=now)
        n = 1
        while True:
            chunk = _texts(cur.fetchmany(TABLE_CHUNK))
            if not chunk:
                break
            yield Entry(f"{PREFIX}/tables/{name}/{n:06d}", data=json.dumps(
                chunk, separators=(",", ":")).encode(), mtime=now)
            n += 1


def _texts(rows):
    """Table rows as JSON can hold them: a packed jobs-index record as
    {"z": base64 of it} (restore stores it as it was, packed: unpacking
    and packing again would cost both sides more than the base64), any
    other bytes as their text (stored.row_text)."""
    return [[_cell(v) if type(v) is bytes else v for v in r] for r in rows]


def _cell(v: bytes):
    if v[:1] == PACKED_ROW:
        return {"z": base64.b64encode(v).decode()}
    return row_text(v)


def _plain(key, kind, value):
    """A kvs row as its plain kind and text (an inactive job's values are packed)."""
    if kind in PACKED:
        kind, value = decode_value(key, kind, value)
    return key, kind, value


class ContentDigest:
    """The digest of an archive's Flux-layout entries, in any order (a real
    Flux that restores a dump writes its own back in its own order): the sum
    of each entry's SHA-256. flux-lite's own state in an archive is only valid
    with exactly the content it was written with (a real Flux that restored
    the dump, ran and dumped again has changed it)."""

    PREFIX = "sha256-sum:"

    def __init__(self) -> None:
        self.total = 0

    def add(self, e: Entry) -> None:
        path = e.path.encode()
        if e.target is None:
            h = hashlib.sha256(b"%d:%sF%s" % (len(path), path, e.data))
        else:
            h = hashlib.sha256(b"%d:%sL%s" % (len(path), path, e.target.encode()))
        self.total += int.from_bytes(h.digest(), "big")

    def hexdigest(self) -> str:
        return self.PREFIX + f"{self.total & _MASK256:064x}"


_MASK256 = (1 << 256) - 1


def content_digest(entries) -> str:
    """The digest format 1 archives carry: of the Flux-layout entries sorted
    by path (an archive written before dumps streamed)."""
    h = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.path):
        body = b"L" + e.target.encode() if e.is_symlink else b"F" + e.data
        for part in (e.path.encode(), body):
            h.update(b"%d:" % len(part))
            h.update(part)
    return "sha256:" + h.hexdigest()


_FINISH_STATUS = ',"name":"finish","context":{"status":'


def _timestamp_before(text: str, i: int) -> float | None:
    """The timestamp of the line where text[i] is, when the line starts with it."""
    j = text.rfind("\n", 0, i) + 1
    if text.startswith('{"timestamp":', j):
        try:
            return float(text[j + 13:i])
        except ValueError:
            return None
    return None


def exec_eventlog_of(text: str) -> str:
    """_exec_eventlog of an eventlog's text: read off its first start and
    finish lines where they have the usual spelling (a dump writes one per
    job that ran), else decoded."""
    i = text.find(',"name":"start"')
    k = text.find(_FINISH_STATUS)
    if i > 0 and k > 0:
        t0 = _timestamp_before(text, i)
        t1 = _timestamp_before(text, k)
        end = text.find("}}\n", k)
        try:
            status = int(text[k + len(_FINISH_STATUS):end]) if end > 0 else None
        except ValueError:
            status = None
        if t0 is not None and t1 is not None and status is not None:
            init = eventlog.encode_entry(t0, "init")
            complete = eventlog.encode_entry(t1, "complete", {"status": status})
            return "".join([init, init.replace('"init"', '"starting"', 1),
                            init.replace('"init"', '"recoverable"', 1), complete,
                            complete.split(',"context"', 1)[0].replace('"complete"', '"done"', 1) + "}\n"])
    picked = []
    for line in text.split("\n"):
        if '"start"' in line or '"finish"' in line:
            try:
                picked.append(json.loads(line))
            except ValueError:
                continue
    return _exec_eventlog(e for e in picked if isinstance(e, dict) and "name" in e and "timestamp" in e)


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
    """Drain state as Flux's resource module checkpoints it (Resources.checkpoint)."""
    return broker.resources.checkpoint()
