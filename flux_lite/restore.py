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

The archive streams in: each entry is written to the new instance's
database as it is read, BATCH at a time, and only what is small is kept
aside (the instance-wide keys, the checkpoints, flux-lite's own keys). Which
kind of archive it is, and whether flux-lite's state in it still matches its
content, is known at its end; then the restore is finished one way or the
other, all in the one transaction that builds the instance, which is
published only once it is complete: an archive that fails part way leaves
nothing behind.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from flux_lite import __version__
from flux_lite import config as configmod
from flux_lite.archive import ArchiveError, Entry
from flux_lite.dump import FOREIGN, PREFIX, ContentDigest, content_digest, flux_path, is_job_dir
from flux_lite.forked import available as forked_available
from flux_lite.forked import forked
from flux_lite.formats.signed import unwrap_J
from flux_lite.formats import eventlog
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58, jobid_of_key
from flux_lite.formats.rset import Rset
from flux_lite.instance import Instance
from flux_lite.job_manager.job import CLEANUP, DEPEND, INACTIVE, PRIORITY, RUN, SCHED
from flux_lite.job_manager.queues import STATE_KEY
from flux_lite.rebuild import rebuild
from flux_lite.schema import DERIVED_VERSION, TABLES
from flux_lite.kvs import PACKED, decode_value
from flux_lite.stored import pack, pack_row

# values shorter than this are stored inline in a Flux KVS directory entry;
# longer ones become a content blob (flux-core's BLOBREF_MAX_STRING_SIZE)
BLOBREF_MAX_STRING_SIZE = 72

EXEC_RESTART_NOTE = "failed to create guest ns: No such file or directory"

BATCH = 1000  # entries written to the database at a time
# an archive without a streamed format record (a Flux dump, or a flux-lite
# dump written before dumps streamed) may turn out at its end to be a
# flux-lite dump whose digest is of the sorted content: that content is kept
# to check it, up to this much (past it such an archive restores as Flux's)
LEGACY_DIGEST_BUFFER = 64 << 20

# keys the new instance writes itself: the archive's are kept aside to put
# back, or read (R) before the instance is made
_KEPT = ("resource.R", "resource.eventlog")

_UPSERT = ("INSERT INTO kvs(key, kind, value) VALUES (?, ?, ?) "
           "ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, value = excluded.value")


@dataclass
class Restored:
    """A restore's outcome: the instance, and the counts of flux restore's last line."""

    instance: Instance
    nkeys: int
    nblobs: int

    def close(self) -> None:
        self.instance.close()


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
    if "." not in path and "//" not in path and path[:1] != "/" and path[-1:] != "/" and path:
        return path.replace("/", ".")
    parts = path.split("/")
    if any(not p or "." in p for p in parts):
        raise ArchiveError(f"invalid key in archive: '{path}'")
    return ".".join(parts)


class _Blobs:
    """The blob count of Flux's restore: each value of BLOBREF_MAX_STRING_SIZE
    bytes or more, each directory, the root. A million jobs' directories
    would not fit in a set: they are counted as they come in an archive
    flux-lite wrote (one job directory after another, in order), else
    afterwards from the keys written, in order (job_dirs_from)."""

    def __init__(self) -> None:
        self.values = 0
        self.dirs: set[tuple[str, ...]] = set()
        self.job_dirs = 0
        self.prev: list[str] = []

    def add(self, parts: list[str], entry: Entry) -> None:
        if not entry.is_symlink and len(entry.data) >= BLOBREF_MAX_STRING_SIZE:
            self.values += 1
        if parts[0] == "job" and len(parts) > 2:
            self.dirs.add(("job",))
            self.job_dirs += self._new_dirs(parts)
        else:
            for n in range(1, len(parts)):
                self.dirs.add(tuple(parts[:n]))

    def add_job_value(self, key: str, entry: Entry) -> None:
        """add() of a job's J, R, eventlog or jobspec (key: job.XXXX.XXXX.XXXX.XXXX.NAME)."""
        if len(entry.data) >= BLOBREF_MAX_STRING_SIZE:
            self.values += 1
        self.dirs.add(("job",))
        prev = self.prev
        if len(prev) == 4 and key[4:8] == prev[0] and key[9:13] == prev[1] and key[14:18] == prev[2] \
                and key[19:23] == prev[3]:
            return
        self.job_dirs += self._new_dirs(key.split("."))

    def _new_dirs(self, parts: list[str]) -> int:
        """The directories below job/ of a path that the one before did not have."""
        dirs = parts[1:-1]
        prev = self.prev
        common = 0
        while common < len(dirs) and common < len(prev) and dirs[common] == prev[common]:
            common += 1
        self.prev = dirs
        return len(dirs) - common

    def job_dirs_from(self, conn) -> None:
        """Count the directories below job/ again, from the keys written, in
        key order (where each directory's keys are together)."""
        import heapq

        ours = (r[0] for r in conn.execute("SELECT key FROM kvs WHERE key > 'job.' AND key < 'job/' ORDER BY key"))
        kept = (r[0] for r in conn.execute(
            f"SELECT substr(key, {len(FOREIGN) + 2}) FROM kvs WHERE key > '{FOREIGN}.job.' "
            f"AND key < '{FOREIGN}.job/' ORDER BY key"))
        self.prev = []
        self.job_dirs = 0
        for key in heapq.merge(ours, kept):
            parts = key.split(".")
            if len(parts) > 2:
                self.job_dirs += self._new_dirs(parts)

    @property
    def total(self) -> int:
        return self.values + len(self.dirs) + self.job_dirs + 1  # the root too


@dataclass
class _Stream:
    """What a restore keeps of an archive besides the rows it has written."""

    format: dict | None = None  # flux-lite/format, when a flux-lite dump
    format_first: bool = False  # it came first: flux-lite wrote the archive in its own order
    content: dict | None = None  # flux-lite/content (streamed dumps)
    own: dict = field(default_factory=dict)  # flux-lite's own keys: key -> (path, bytes)
    kept: dict = field(default_factory=dict)  # _KEPT, admin.* and checkpoint.* keys: key -> (kind, text)
    tables: dict = field(default_factory=dict)  # derived tables made: name -> (index statements, columns)
    nkeys: int = 0
    blobs: _Blobs = field(default_factory=_Blobs)
    mtime: float = 0.0  # the newest entry's time: when the dump was made
    digest: ContentDigest = field(default_factory=ContentDigest)
    legacy: list | None = field(default_factory=list)  # (path, body) for a format 1 digest
    legacy_size: int = 0
    stale: bool = False  # flux-lite's own state was dropped: the content changed since

    @property
    def streamed_format(self) -> bool:
        return self.format is not None and self.format.get("version", 1) >= 2


# a job's J, R, eventlog or jobspec: most of any archive
_JOB_VALUE = re.compile(r"job/[0-9a-f]{4}/[0-9a-f]{4}/[0-9a-f]{4}/[0-9a-f]{4}/(J|R|eventlog|jobspec)")


def _read(kvs, entries: Iterable[Entry], on_entry, parallel: bool = False) -> _Stream:
    """Write the archive's entries into the new database as they come.

    Two stages: _scan reads the archive and does what needs every entry in
    order (the counts, the digest, flux-lite's records), _store what needs
    the database (the rows, the tables). With parallel, the scan runs in a
    second process (flux_lite.forked) while this one stores."""
    if not parallel:
        return _store(kvs, _scan(entries), on_entry)
    with forked(lambda: _scan(entries), heavy=_heavy) as items:
        return _store(kvs, items, on_entry)


def _heavy(item: tuple) -> bool:
    """A chunk of a table (up to TABLE_CHUNK rows): sent on its own."""
    return item[0] == "t"


def _scan(entries: Iterable[Entry]) -> Iterator[tuple]:
    """The archive's entries as the store needs them, in order, each as
    (what, path, count, blobs, ...) with the running counts of the progress
    line (blobs lag by one, as Flux's do): ("j", ..., key, name, kind, text)
    for a job's J, R, eventlog or jobspec (most of any archive), ("e", ...,
    key, parts, data, target) for any other Flux key, ("t", ..., data, name,
    chunk) for a chunk of a derived table, ("o", ...) for flux-lite's other
    records (kept in the _Stream); last ("end", the _Stream of what was
    counted and kept)."""
    st = _Stream()
    blobs = st.blobs
    digest = st.digest
    job_value = _JOB_VALUE.fullmatch
    for i, entry in enumerate(entries, 1):
        path = entry.path
        nblobs = blobs.values
        st.nkeys = i
        if entry.mtime > st.mtime:
            st.mtime = entry.mtime
        m = job_value(path)
        if m is not None and entry.target is None:
            # the common case, at once: a job's value, in the job's directory
            key = path.replace("/", ".")
            blobs.add_job_value(key, entry)
            digest.add(entry)
            if st.legacy is not None and not st.streamed_format:
                _legacy(st, entry)
            name = m.group(1)
            yield ("j", path, i, nblobs, key, name, *_job_value(name, entry.data, key))
            continue
        key = _key_of(path)
        parts = key.split(".")
        blobs.add(parts, entry)
        if parts[0] == PREFIX:
            table = _own_entry(st, entry, parts[1:])
            if table is not None:
                yield ("t", path, i, nblobs, entry.data, *table)
            else:
                yield ("o", path, i, nblobs)
            continue
        digest.add(entry)
        if st.legacy is not None and not st.streamed_format:
            _legacy(st, entry)
        yield ("e", path, i, nblobs, key, parts, entry.data, entry.target)
    yield ("end", st)


def _store(kvs, items: Iterable[tuple], on_entry) -> _Stream:
    """The scanned entries into the database (see _scan); on_entry(entry,
    count, blobs) sees each one first."""
    conn = kvs.conn
    rows: list[tuple[str, str, str]] = []
    job = _JobDir(rows)
    tables: dict = {}
    kept: dict = {}
    for item in items:
        what, path = item[0], item[1]
        if what == "end":
            st = path
            job.end()
            _write(kvs, rows)
            st.tables = tables
            st.kept = kept
            return st
        if on_entry is not None:
            on_entry(Entry(path, target=item[7] if what == "e" else None), item[2], item[3])
        if job.dir is not None and not path.startswith(job.dir):
            job.end()
            if len(rows) >= BATCH:
                _write(kvs, rows)
        if what == "j":
            job.add(path, *item[4:])
            continue
        if what == "e":
            key, parts, data, target = item[4:]
            if target is not None:
                kind, text = "symlink", target
            elif len(parts) == 6 and parts[5] in ("jobspec", "R", "eventlog", "J") and is_job_dir(parts):
                kind, text = _job_value(parts[5], data, key)
            else:
                kind, text = _kind_for(key, data)
            if parts[0] in ("checkpoint", "admin") or key in _KEPT:
                kept[key] = (kind, text)
                if parts[0] == "checkpoint":
                    continue  # the new instance's own checkpoint is the one that counts
            row = (key if flux_path(key) is not None else f"{FOREIGN}.{key}", kind, text)
            if job.dir is not None:  # (in the job's directory: its guest namespace's exec eventlog)
                job.values.append(row)
                continue
            rows.append(row)
            if len(rows) >= BATCH:
                _write(kvs, rows)
        elif what == "t":
            _table_entry(conn, tables, path, *item[4:])
    raise ArchiveError("the archive's reading ended early")  # (the scan always ends with "end")


_CLEAN = '"name":"clean"'


class _JobDir:
    """The values of the job directory being read, held until it ends: an
    inactive job's (its eventlog ends with clean) are stored packed, as the
    job manager stores them once a job is inactive (stored.pack)."""

    __slots__ = ("rows", "dir", "values", "inactive")

    def __init__(self, rows: list) -> None:
        self.rows = rows  # where the values go once the directory ends
        self.dir: str | None = None  # "job/XXXX/XXXX/XXXX/XXXX/"
        self.values: list[tuple[str, str, str]] = []
        self.inactive = False

    def add(self, path: str, key: str, name: str, kind: str, text: str) -> None:
        d = path[:24]
        if d != self.dir:
            self.end()
            self.dir = d
        if name == "eventlog" and kind == "eventlog" and text.endswith("\n") \
                and _CLEAN in text[text.rfind("\n", 0, len(text) - 1):]:
            self.inactive = True
        self.values.append((key, kind, text))

    def end(self) -> None:
        if self.values:
            if self.inactive:
                self.rows.extend((key, "z" + kind, pack(text)) if kind in ("json", "eventlog") else (key, kind, text)
                                 for key, kind, text in self.values)
            else:
                self.rows.extend(self.values)
            self.values = []
        self.dir = None
        self.inactive = False


def _legacy(st, entry):
    body = b"L" + entry.target.encode() if entry.is_symlink else b"F" + entry.data
    st.legacy_size += len(body) + len(entry.path)
    st.legacy.append((entry.path, body))
    if st.legacy_size > LEGACY_DIGEST_BUFFER:
        st.legacy = None


def _write(kvs, rows):
    for key, _, _ in rows:
        if not key.isprintable():
            raise ArchiveError(f"invalid key in archive: {key!r}: control characters")
    try:
        kvs.conn.executemany(_UPSERT, rows)
    except UnicodeEncodeError:
        raise ArchiveError("invalid key in archive: not UTF-8") from None
    rows.clear()


def _job_value(name, data, key):
    """(kind, text) of a job's J, jobspec, R or eventlog (a million of each:
    the kind is known by the name; a Flux archive's are checked at the end)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return _kind_for(key, data)
    if name == "eventlog":
        return "eventlog", text
    if name == "J":
        payload = unwrap_J(text)
        if payload is not None:
            return "json", payload
        return _kind_for(key, data)
    return "json", text


def _own_entry(st: _Stream, entry: Entry, rest: list[str]) -> tuple[str, str | None] | None:
    """An entry under flux-lite/: the format and content records, an own key,
    or a derived table's (format 1: one entry; streamed: chunks of its rows),
    which is returned (name, chunk) for the store."""
    if entry.is_symlink:
        raise ArchiveError(f"{entry.path}: unknown flux-lite entry")
    if rest == ["format"] and st.nkeys == 1:
        st.format_first = True
    if rest in (["format"], ["content"]):
        try:
            value = json.loads(entry.data)
            assert isinstance(value, dict)
        except (ValueError, AssertionError):
            raise ArchiveError(f"{entry.path}: not a flux-lite dump {rest[0]} record") from None
        setattr(st, rest[0], value)
    elif len(rest) in (2, 3) and rest[0] == "tables":
        return rest[1], None if len(rest) == 2 else rest[2]
    elif len(rest) >= 2 and rest[0] == "kvs":
        st.own[".".join(rest[1:])] = (entry.path, entry.data)
    else:
        raise ArchiveError(f"{entry.path}: unknown flux-lite entry")
    return None


_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _table_entry(conn, tables, path, data, name, chunk):
    """A chunk of a derived table into the new database (tables: name ->
    (index statements, columns) of those begun)."""
    if not _TABLE_NAME.fullmatch(name) or name == "kvs" or name.startswith("sqlite_"):
        raise ArchiveError(f"{path}: not a table flux-lite dumps")
    try:
        table = json.loads(data)
        if chunk is None or chunk == "000000":
            assert isinstance(table, dict) and isinstance(table.get("sql"), str)
            assert table["sql"].lstrip().upper().startswith("CREATE TABLE")
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute(table["sql"])
            rows = table["rows"]
            columns = table["columns"]
            tables[name] = ([str(sql) for sql in table.get("indexes") or []], columns)
        else:
            assert isinstance(table, list) and name in tables
            rows = table
            columns = tables[name][1]
        if rows:
            _packed_cells(rows)
            if name == "jobs" and "data" in columns and "state" in columns:
                _pack_inactive_records(rows, columns.index("state"), columns.index("data"))
            marks = ", ".join("?" * len(columns))
            cols = ", ".join(f'"{c}"' for c in columns)
            conn.executemany(f'INSERT INTO "{name}" ({cols}) VALUES ({marks})', rows)
    except (KeyError, TypeError, ValueError, AssertionError) as exc:
        raise ArchiveError(f"{path}: damaged table ({exc})") from None
    except sqlite3.Error as exc:  # a table that does not fit
        raise ArchiveError(f"{path}: {exc}") from None


def _pack_inactive_records(rows, state: int, data: int) -> None:
    """An inactive job's index record as the index stores it: packed (an
    archive written before dumps carried them packed has their text)."""
    for row in rows:
        if row[state] == INACTIVE and type(row[data]) is str:
            row[data] = pack_row(row[data])


def _packed_cells(rows) -> None:
    """A table chunk's packed cells ({"z": base64}: dump._cell) back to the
    bytes they were; TypeError/ValueError when damaged."""
    for row in rows:
        for i, cell in enumerate(row):
            if type(cell) is dict:
                row[i] = base64.b64decode(cell["z"], validate=True)


def _from_flux_lite(st: _Stream) -> bool:
    """Is this a flux-lite dump whose own state matches the content beside it?
    (A real Flux that ran on it and dumped it again has changed the content:
    the archive is Flux's now.)"""
    if st.format is None:
        st.legacy = None  # (up to LEGACY_DIGEST_BUFFER of content, for nothing)
        if st.own:
            raise ArchiveError("flux-lite keys without flux-lite/format: damaged flux-lite dump")
        return False
    if st.streamed_format:
        ok = st.content is not None and st.content.get("content") == st.digest.hexdigest()
    else:
        ok = st.legacy is not None and st.format.get("content") == content_digest(
            Entry(path, data=body[1:]) if body[:1] == b"F" else Entry(path, target=body[1:].decode())
            for path, body in st.legacy)
    st.legacy = None
    if not ok:
        st.stale = True
    return ok


# -- restoring --------------------------------------------------------------------


def restore(state_dir, entries: Iterable[Entry], *, force: bool = False, clock: str | None = None,
            config: dict | None = None, resources: dict | None = None, source: str = "archive",
            on_entry: Callable[[Entry, int, int], None] | None = None, parallel: bool | None = None) -> Restored:
    """Create the instance at state_dir from an archive's entries, read as
    they come; on_entry(entry, keys, blobs) sees each one with the running
    counts (blobs lag by one, as Flux's do).

    resources: the keyword arguments of a fresh instance's resource set
    (size, hosts, cores, gpus) to use instead of the archive's resource/R
    (Flux archives only). parallel: read the archive in a second process
    (default: where fork(2) is); on_entry is then called there.
    """
    counts: list[int] = []

    def populate(sd, kvs):
        with kvs.transaction():
            st = _read(kvs, entries, on_entry, forked_available() if parallel is None else parallel)
            ours = _from_flux_lite(st)
            if not (ours and st.format_first):
                st.blobs.job_dirs_from(kvs.conn)
            counts[:] = [st.nkeys, st.blobs.total]
            if ours:
                if resources:
                    raise ArchiveError(
                        "a flux-lite dump brings its own resources: --test-* options cannot change them")
                _finish_flux_lite(sd, kvs, st, clock, config, source)
            else:
                _finish_flux(sd, kvs, st, clock, config, resources, source)

    inst = Instance.create(state_dir, force=force, populate=populate)
    return Restored(inst, counts[0], counts[1])


def _finish_flux_lite(state_dir, kvs, st, clock, config, source):
    """A flux-lite dump: every key and table back as they were."""
    conn = kvs.conn
    # the derived tables a current instance has; an archive with another
    # layout (or without one of them) gets them rebuilt from the eventlogs
    derived = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", TABLES)) - {"dmesg"}
    same_layout = st.format.get("derived_version") == DERIVED_VERSION and derived <= set(st.tables)
    for name, (indexes, _) in st.tables.items():
        if not same_layout and name in derived:
            conn.execute(f'DROP TABLE "{name}"')  # rebuilt from the eventlogs below
            continue
        try:
            for sql in indexes:  # (made once the rows are in: faster)
                conn.execute(sql)
        except sqlite3.Error as exc:
            raise ArchiveError(f"{PREFIX}/tables/{name}: {exc}") from None
    for stmt in TABLES.split(";"):
        if stmt.strip():
            conn.execute(stmt)
    # flux-lite's own keys: their kinds are recorded in the content (format 1: format) record
    kinds = (st.content if st.streamed_format else st.format).get("kinds") or {}
    for key, (path, data) in sorted(st.own.items()):
        kind = kinds.get(key, "json")
        if kind == "base64":
            kvs.put_text(key, base64.b64encode(data).decode(), kind=kind)
        else:
            try:
                kvs.put_text(key, data.decode(), kind=kind)
            except UnicodeDecodeError:
                raise ArchiveError(f"{path}: not UTF-8 text") from None
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


def _finish_flux(state_dir, kvs, st, clock, config, resources, source):
    """A Flux dump (or a flux-lite one whose content moved on): flux-lite's
    own state is dropped, the jobs are checked, and the instance is made
    around them as a Flux job manager restarts on that content."""
    conn = kvs.conn
    for name in st.tables:
        conn.execute(f'DROP TABLE "{name}"')
    st.tables = {}
    st.own = {}
    latest = _check_jobs(conn)
    ck = _json_or_none(st.kept.get("checkpoint.resource", ("", ""))[1])
    if isinstance(ck, dict) and isinstance(ck.get("timestamp"), (int, float)):
        latest = max(latest, float(ck["timestamp"]))
    R = None
    kwargs = dict(resources or {})
    if resources:
        pass
    elif config and (config.get("resource") or {}).get("config"):
        pass  # the configuration's resource.config wins, as in a fresh instance
    else:
        R = _archive_R(st)
    start = None
    if (clock or (config or {}).get("clock", {}).get("mode")) == "virtual" and not (config or {}).get(
            "clock", {}).get("start"):
        # a virtual clock starts just after the last thing the archive records
        start = float(math.floor(latest) + 1) if latest else None
    # what Instance.create works out of its arguments, for the database at hand
    cfg, R, mode, start = Instance.settings(config, R, clock, start, **kwargs)
    Instance._populate(state_dir, kvs, cfg, R, mode, start,
                       prepare=lambda inst, ctx: _prepare_flux(inst, ctx, st, source))


def _check_jobs(conn) -> float:
    """Every job must replay: its eventlogs decode, jobspec and R parse.
    Returns the last time the archive's eventlogs record. (Read back from
    the database, BATCH rows at a time.)"""
    latest = 0.0
    cur = conn.execute("SELECT key, kind, value FROM kvs WHERE kind IN ('eventlog', 'zeventlog') "
                       "OR (key > 'job.' AND key < 'job/' AND (key LIKE '%.jobspec' OR key LIKE '%.R'))")
    while True:
        rows = cur.fetchmany(BATCH)
        if not rows:
            return latest
        for key, kind, text in rows:
            if kind in PACKED:  # (an inactive job's, packed as it was read: _JobDir)
                kind, text = decode_value(key, kind, text)
            name = key[len(FOREIGN) + 1:] if key.startswith(FOREIGN + ".") else key
            if kind == "eventlog":
                try:
                    entries = eventlog.decode_all(text)
                except ValueError as exc:
                    raise ArchiveError(f"{name.replace('.', '/')}: {exc}") from None
                for e in entries:
                    ts = e.get("timestamp")
                    if isinstance(ts, (int, float)) and ts > latest:
                        latest = float(ts)
                continue
            if key.endswith((".jobspec", ".R")) and key.count(".") == 5 and is_job_dir(key.split(".")):
                try:
                    ok = kind == "json" and isinstance(json.loads(text), dict)
                except ValueError:
                    ok = False
                if not ok:
                    raise ArchiveError(f"{name.replace('.', '/')}: not a JSON object")


def _archive_R(st):
    val = st.kept.get("resource.R")
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




def _prepare_flux(inst, ctx, st, source):
    """A Flux dump: its content, then what Flux's job manager does on restart."""
    kvs = ctx.kvs
    kvs.flush()
    # the archive's keys are in place; put back those the new instance wrote over
    for key, (kind, text) in sorted(st.kept.items()):
        if key == "resource.eventlog" or key.startswith("admin."):
            kvs.put_text(key, text, kind=kind)
    ckpt = _json_or_none(st.kept["checkpoint.job-manager"][1]) if "checkpoint.job-manager" in st.kept else None
    drain_ckpt = _json_or_none(st.kept["checkpoint.resource"][1]) if "checkpoint.resource" in st.kept else None
    inst.log("broker", "info", f"restoring {source}")
    if st.stale:
        inst.log("broker", "info", "flux-lite state in the archive is older than its content: ignored")
    inst.log("kvs", "info", f"restored KVS from checkpoint on {_iso(st.mtime)}")
    _append_admin_start(kvs, ctx.now)

    # job ids continue above the archive's; queue states come from the checkpoint
    njobs, max_jobid = _job_count(kvs)
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
    ctx.log("job-manager", "info", f"restart: {njobs} jobs")
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


def _job_count(kvs):
    """(jobs, highest job id) among the job directories with an eventlog
    (replay.job_ids, counted as the keys go by rather than listed)."""
    kvs.flush()
    n = top = 0
    for (key,) in kvs.conn.execute(
            "SELECT key FROM kvs WHERE key > 'job.' AND key < 'job/' AND key LIKE '%.eventlog'"):
        if key.count(".") == 5:
            jobid = jobid_of_key(key)
            if jobid is not None:
                n += 1
                top = max(top, jobid)
    return n, top


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
    res.replay()  # with the events just appended


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
