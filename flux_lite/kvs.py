"""The KVS: Flux's hierarchical key-value namespace stored in SQLite.

Keys are dotted paths with Flux's names (``job.0000.0004.b200.0000.eventlog``,
``resource.R``...). Values are JSON, except eventlogs, which are stored as
their RFC 18 text and only ever appended to. One SQLite database in WAL mode
gives the atomic multi-key commits Flux's KVS has (an ``alloc`` writes R and
appends an event together) plus crash safety; ``BEGIN IMMEDIATE`` with a busy
timeout makes parallel commands queue behind each other instead of failing.

Derived tables (job index, timers, log) live in the same database so they
commit in the same transaction as the eventlog appends they mirror.
"""

import base64
import json
import sqlite3
from contextlib import contextmanager
from errno import EINVAL, EISDIR, ELOOP, ENOENT, ENOTDIR

from flux_lite import stored
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog, jsontext
from flux_lite.formats.jobid import WideJobID
from flux_lite.formats.outputformat import escape_controls

# ids past SQLite's integer range match no row (see WideJobID)
sqlite3.register_adapter(WideJobID, lambda v: f"jobid:{int(v)}")

# kind of a stored value: 'json' (a JSON document) or 'eventlog' (RFC 18 text);
# or either of them packed (stored.pack: an inactive job's values), which
# every reader below unpacks: KVS.get_raw, get, get_eventlog, rows, and
# decode_value for a row read by other means
JSON = "json"
EVENTLOG = "eventlog"
# an empty directory (Flux's mkdir, or what an unlink leaves): a directory
# holding keys needs no row, so the row goes when its first key is written
DIR = "dir"
SYMLINK = "symlink"  # a link to another key (its value is the target)
RAW = "base64"  # bytes that are not UTF-8 text, base64-encoded
ZJSON = "zjson"
ZEVENTLOG = "zeventlog"
PACKED = {ZJSON: JSON, ZEVENTLOG: EVENTLOG}


def decode_value(key, kind, value):
    """(kind, text) of a row of the kvs table as stored: a packed value
    unpacked, with its plain kind; one that does not unpack is DamagedError."""
    plain = PACKED.get(kind)
    if plain is None:
        return kind, value
    try:
        if type(value) is not bytes:
            raise ValueError("not a packed value")
        return plain, stored.unpack(value)
    except ValueError as exc:
        raise stored.DamagedError(key, str(exc)) from None


def _unpack_sql(value):
    # (SQL function flux_lite_unpack: a jobs-index record's text, packed or not)
    return stored.row_text(value)

SCHEMA = """
CREATE TABLE IF NOT EXISTS kvs (
    key   TEXT PRIMARY KEY,
    kind  TEXT NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""


class SideFile:
    """A small file next to the database, rewritten in place through one
    descriptor kept open for the process: a command that commits often (a
    replay, a burst of submits) would otherwise pay an open, or an open and a
    rename, per transaction. Writing is best effort: what it records (who
    holds the lock, the job id high-water mark) is a safety net."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def write(self, data: bytes) -> None:
        import os

        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
                os.fchmod(self._fd, 0o600)  # whatever the umask
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))
        except OSError:
            pass

    def close(self) -> None:
        if self._fd is not None:
            import os

            os.close(self._fd)
            self._fd = None


class KVSError(FluxLiteError):
    pass


# called with a message when a command starts waiting for another's lock
# (the CLI prints it at once; the library never prints)
waiting_hook = None


# set when a write was refused on a read-only state dir: the command's error
# says so, and the CLI leaves out the readers' "is read-only" notice
refused_write = False


class ReadOnlyError(KVSError):
    def __init__(self):
        super().__init__("the state directory is read-only: this command cannot save its changes")


def sqlite_uri(path, mode):
    """A file: URI that names exactly `path`: '?', '#' and '%' in a directory
    name would otherwise start a query, a fragment or an escape, and a path
    starting with '//' would name a host."""
    import os

    path = os.path.abspath(path)
    quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file://{quoted}?mode={mode}"


# json.dumps(value, separators=(",", ":"), ensure_ascii=False), one encoder for all
_COMPACT = jsontext.compact_utf8


def normalize(key):
    """A key as Flux's KVS reads it: empty components dropped ("a..b." is
    "a.b"); the root is "."."""
    return ".".join(part for part in key.split(".") if part) or "."


# the operations of a Flux KVS transaction (KVS.commit_ops)
PUT, MKDIR, UNLINK = "put", "mkdir", "unlink"


def _stored_value(data):
    """(kind, text, value) for a put's bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return RAW, base64.b64encode(data).decode(), data
    try:
        value = eventlog.jansson_loads(text)
    except (ValueError, RecursionError):
        # not JSON: a string, which is what Flux's readers make of it
        return JSON, _COMPACT(text), text
    return JSON, text, value


def _check_key(key):
    if not isinstance(key, str) or not key or key.startswith(".") or key.endswith(".") or ".." in key:
        raise KVSError(f"invalid key: {key!r}")
    if not key.isprintable():
        raise KVSError(f"invalid key: {key!r}: control characters")
    if key.isascii():
        return  # (ASCII is UTF-8)
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise KVSError(f"invalid key: {key!r}: not UTF-8") from None


class KVS:
    """A connection to STATE/kvs.sqlite.

    Use ``with kvs.transaction():`` around every command so that all of its
    writes land together or not at all.
    """

    BUSY_TIMEOUT = 120.0
    NOTICE_AFTER = 1.0

    def __init__(self, path, create=False, readonly=False):
        self.path = str(path)
        self.readonly = readonly
        try:
            if create:
                self.conn = sqlite3.connect(self.path, timeout=self.BUSY_TIMEOUT, isolation_level=None)
            elif readonly:
                self.conn = self._connect_readonly()
            else:
                # a short first wait: after it the waiter is told who holds the lock
                self.conn = sqlite3.connect(
                    sqlite_uri(self.path, "rw"), timeout=self.NOTICE_AFTER, isolation_level=None, uri=True
                )
        except sqlite3.OperationalError as exc:
            raise KVSError(f"{self.path}: {exc}") from None
        self.conn.create_function("flux_lite_unpack", 1, _unpack_sql, deterministic=True)
        if create:
            # pages a history no longer needs (its values packed, purged jobs)
            # go back to the file system at the end of a command (set before
            # anything, the WAL mode included, writes the file's first page)
            self.conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        if create:
            # a new database is built under a temporary name and published
            # whole (Instance.create): until then nothing needs WAL's second
            # copy of every page, only the means to roll back (publish()
            # turns WAL on)
            self.conn.execute("PRAGMA journal_mode=MEMORY")
            self.conn.execute("PRAGMA synchronous=OFF")
            # (a restore writes a whole history into it: 32 MiB of pages
            # cached, not the default 2, saves a tenth of a large restore)
            self.conn.execute("PRAGMA cache_size=-32768")
        elif not readonly:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        self._depth = 0
        # eventlog appends are buffered and written once per key: a submit
        # posts four events to one eventlog, a catch-up thousands
        self._appends = {}
        # puts are buffered too (a scheduling pass commits one R per job)
        self._puts = {}
        # keys to store packed once written (an inactive job's values: pack())
        self._pack = []
        # callables run once the current transaction has committed
        self._after_commit = []
        self._holder_file = SideFile(self.path + "-holder")
        self._vacuum = None  # incremental auto-vacuum (a state dir created since it was added)?
        if create:
            self.conn.executescript(SCHEMA)

    def _connect_readonly(self):
        """A read-only connection. SQLite reads a WAL database read-only only
        when its -shm file exists or can be created; in a read-only directory
        after a clean close neither -wal nor -shm exists, and the database file
        alone is the whole committed state (opened immutable)."""
        import os

        conn = sqlite3.connect(sqlite_uri(self.path, "ro"), timeout=self.BUSY_TIMEOUT,
                               isolation_level=None, uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            conn.close()
            if os.path.exists(self.path + "-wal"):
                raise
        return sqlite3.connect(sqlite_uri(self.path, "ro") + "&immutable=1", timeout=self.BUSY_TIMEOUT,
                               isolation_level=None, uri=True)

    def publish(self) -> None:
        """A new database made ready to be shared: the write-ahead log every
        instance uses, and the settings of an ordinary connection."""
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self):
        if (self._appends or self._puts or self._pack) and not self._depth:
            self.flush()
        self.conn.close()
        self._holder_file.close()

    # -- transactions -------------------------------------------------------

    @contextmanager
    def transaction(self):
        """BEGIN IMMEDIATE .. COMMIT; rolls back everything on any exception.

        Nested use joins the outer transaction.
        """
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        # read-only: a read transaction, never committed
        if self.readonly:
            self.conn.execute("BEGIN")
        else:
            self._begin_immediate()
        self._depth = 1
        try:
            yield self
            self.flush()
            if not self.readonly:
                self._release_free_pages()
        except BaseException:
            self._depth = 0
            self._appends.clear()
            self._puts.clear()
            self._pack.clear()
            self._after_commit.clear()
            self.conn.execute("ROLLBACK")
            raise
        self._depth = 0
        if self.readonly:
            self.conn.execute("ROLLBACK")
            return
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self._after_commit.clear()
            raise
        hooks, self._after_commit = self._after_commit, []
        for hook in hooks:
            hook()

    def _release_free_pages(self):
        """Give the file's free pages back when they are a quarter of it (a
        state dir made before incremental auto-vacuum keeps them for reuse)."""
        conn = self.conn
        if self._vacuum is None:
            self._vacuum = conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        if self._vacuum:
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            if free >= 256 and free * 4 >= conn.execute("PRAGMA page_count").fetchone()[0]:
                # (each step of the pragma releases one page, and Python's
                # sqlite3 steps a statement that returns no columns once)
                for _ in range(free):
                    conn.execute("PRAGMA incremental_vacuum(1)")

    def _begin_immediate(self):
        """Take the write lock; past NOTICE_AFTER seconds, say whose command
        holds it (through the waiting hook) and keep waiting up to BUSY_TIMEOUT."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if waiting_hook is not None:
                waiting_hook(f"waiting for the instance lock held by {self._holder()}")
            self.conn.execute(f"PRAGMA busy_timeout = {int((self.BUSY_TIMEOUT - self.NOTICE_AFTER) * 1000)}")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            finally:
                self.conn.execute(f"PRAGMA busy_timeout = {int(self.NOTICE_AFTER * 1000)}")
        self._write_holder()

    def _holder_path(self):
        return self.path + "-holder"

    def _write_holder(self):
        """Who holds the write lock now (read only by a command kept waiting)."""
        import os
        import sys

        words = " ".join(["flux-lite", *sys.argv[1:4]])[:120]
        self._holder_file.write(f"pid {os.getpid()} ({words})".encode("utf-8", "replace"))

    def _holder(self):
        try:
            with open(self._holder_path(), "rb") as f:
                text = f.read(200).decode("utf-8", "replace")
        except OSError:
            text = ""

        return escape_controls(text) or "another command"

    @contextmanager
    def read_transaction(self):
        """BEGIN (deferred) .. END: one consistent snapshot, no write lock.

        Readers never wait for a writer (WAL); nothing may be written inside.
        """
        if self._depth:
            yield self
            return
        self.conn.execute("BEGIN")
        self._depth = 1
        try:
            yield self
        finally:
            self._depth = 0
            dropped = bool(self._appends or self._puts or self._pack)
            self._appends.clear()
            self._puts.clear()
            self._pack.clear()
            self._after_commit.clear()
            self.conn.execute("ROLLBACK")
        if dropped:
            raise KVSError("internal error: a read-only command tried to write")

    def after_commit(self, hook):
        """Run hook() once the current transaction has committed (never if it rolls back)."""
        if hook not in self._after_commit:
            self._after_commit.append(hook)

    @property
    def in_transaction(self):
        return self._depth > 0

    # -- values -------------------------------------------------------------

    def pack(self, keys):
        """Store these keys' values packed from now on (their values are
        final: an inactive job's), once the buffered writes are written."""
        self._pack.extend(keys)

    def flush(self):
        """Write buffered puts, then buffered eventlog appends, then pack
        the values pack() named."""
        if self.readonly and (self._puts or self._appends or self._pack):
            global refused_write
            self._puts.clear()
            self._appends.clear()
            self._pack.clear()
            refused_write = True
            raise ReadOnlyError()
        self._write_buffers()
        if self._pack:
            keys, self._pack = self._pack, []
            self._pack_rows(keys)

    def _pack_rows(self, keys):
        """Store keys' values packed. Each row is deleted, then inserted
        packed: SQLite merges the pages a delete leaves underfull, never
        those an update in place shrinks (an inactive history would keep
        the pages its values filled while they were plain)."""
        conn = self.conn
        for start in range(0, len(keys), 512):
            chunk = keys[start:start + 512]
            rows = conn.execute(f"SELECT key, kind, value FROM kvs WHERE key IN ({','.join('?' * len(chunk))}) "
                                "AND kind IN ('json', 'eventlog')", chunk).fetchall()
            if rows:
                conn.executemany("DELETE FROM kvs WHERE key = ?", [(row[0],) for row in rows])
                conn.executemany("INSERT INTO kvs(key, kind, value) VALUES (?, ?, ?)",
                                 [(key, "z" + kind, stored.pack(value)) for key, kind, value in rows])

    def _write_buffers(self):
        if self._puts:
            puts, self._puts = self._puts, {}
            self.conn.executemany(
                "INSERT INTO kvs(key, kind, value) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, value = excluded.value",
                [(key, kind, text) for key, (kind, text) in puts.items()],
            )
        if not self._appends:
            return
        appends, self._appends = self._appends, {}
        # one statement for all the keys: each row it does not write (a key
        # that is not an eventlog) is missing from the total, and then the
        # first such key is named (the transaction rolls back on the error)
        cur = self.conn.executemany(
            "INSERT INTO kvs(key, kind, value) VALUES (?, 'eventlog', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = value || excluded.value "
            "WHERE kind = 'eventlog'",
            # (a generator: each joined text lives only while its row is written)
            ((key, "".join(lines)) for key, lines in appends.items()),
        )
        if cur.rowcount != len(appends):
            missed = 0
            for key, lines in appends.items():
                row = self.conn.execute("SELECT kind, value FROM kvs WHERE key = ?", (key,)).fetchone()
                if row is not None and row[0] == ZEVENTLOG:
                    # a packed eventlog (an inactive job's) grows: unpacked, appended, packed
                    _kind, text = decode_value(key, *row)
                    self.conn.execute("UPDATE kvs SET value = ? WHERE key = ?",
                                      (stored.pack(text + "".join(lines)), key))
                    missed += 1
                elif row is None or row[0] != EVENTLOG:
                    raise KVSError(f"{key}: not an eventlog")
            if cur.rowcount + missed != len(appends):
                raise KVSError("eventlog appends were not all written")

    def get_raw(self, key, default=None):
        """Return (kind, text) of a key, or default when it does not exist."""
        if key in self._appends:
            self.flush()
        row = self._row(key)
        if row is None or row[0] == DIR:
            return default  # (an empty directory's row is no value)
        return row if row[0] not in PACKED else decode_value(key, *row)

    def _row(self, key):
        buffered = self._puts.get(key)
        if buffered is not None:
            return buffered
        try:
            return self.conn.execute("SELECT kind, value FROM kvs WHERE key = ?", (key,)).fetchone()
        except UnicodeEncodeError:
            return None  # not UTF-8: no such key can have been stored

    def rows(self, directory=""):
        """(key, kind, text) of every key below directory ('' = the root), in
        key order, read lazily: the one way to read stored values in bulk
        (packed values come unpacked, as get_raw gives them)."""
        self.flush()
        if not directory or directory == ".":
            cur = self.conn.execute("SELECT key, kind, value FROM kvs ORDER BY key")
        else:
            cur = self.conn.execute("SELECT key, kind, value FROM kvs WHERE key > ? AND key < ? ORDER BY key",
                                    (directory + ".", directory + "/"))
        for key, kind, value in cur:
            if kind in PACKED:
                kind, value = decode_value(key, kind, value)
            yield key, kind, value

    def exists(self, key):
        return self.get_raw(key) is not None

    def get(self, key, default=None):
        """Return the decoded value: a JSON value, or the eventlog text.

        Keys with a registered shape (flux_lite.stored) are checked: a damaged
        value raises DamagedError naming the key, never reaches the caller.
        """
        row = self.get_raw(key)
        if row is None:
            return default
        kind, text = row

        if kind != JSON:
            if stored.check_for(key) is not None:
                raise stored.DamagedError(key, f"holds an {kind}, not a JSON value")
            return text
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise stored.DamagedError(key, "not valid JSON") from None
        return stored.checked(key, value)

    def get_eventlog(self, key):
        """The decoded entries of an eventlog key (None if absent); damage is DamagedError."""
        row = self.get_raw(key)
        if row is None:
            return None

        kind, text = row
        if kind == JSON:
            # a value `kvs put` stored (Flux's eventlog readers take any value
            # whose bytes are RFC 18 lines): several lines are a JSON string,
            # one line an object
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                value = None
            text = value if isinstance(value, str) else text if text.endswith("\n") else text + "\n"
        elif kind != EVENTLOG:
            raise stored.DamagedError(key, "not an eventlog")
        try:
            return eventlog.decode(text)
        except (ValueError, RecursionError) as exc:
            raise stored.DamagedError(key, str(exc)) from None

    def put(self, key, value):
        self.put_text(key, _COMPACT(value))

    def put_text(self, key, text, kind=JSON):
        """Store already-encoded text (used to keep Flux's exact JSON spelling)."""
        _check_key(key)
        if key in self._appends:
            self.flush()
        self._puts[key] = (kind, text)

    def append(self, key, line):
        """Append one RFC 18 line (newline-terminated) to an eventlog key."""
        lines = self._appends.get(key)
        if lines is None:
            _check_key(key)
            self._appends[key] = [line]
        else:
            lines.append(line)

    def delete(self, key):
        """Remove a key and everything under it (a directory unlink)."""
        self.flush()
        self.conn.execute(
            "DELETE FROM kvs WHERE key = ? OR (key > ? AND key < ?)",
            (key, key + ".", key + "/"),
        )

    # -- directories ----------------------------------------------------------

    def keys_under(self, directory=""):
        """All keys below directory ('' = the root), in sorted order."""
        self.flush()
        if not directory or directory == ".":
            return [r[0] for r in self.conn.execute("SELECT key FROM kvs ORDER BY key")]
        # '.' is 0x2e and '/' is 0x2f, so this range is exactly "directory.*"
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT key FROM kvs WHERE key > ? AND key < ? ORDER BY key",
                (directory + ".", directory + "/"),
            )
        ]

    def isdir(self, directory):
        self.flush()
        if not directory or directory == ".":
            return True
        row = self.conn.execute(
            "SELECT 1 FROM kvs WHERE (key > ? AND key < ?) OR (key = ? AND kind = ?) LIMIT 1",
            (directory + ".", directory + "/", directory, DIR),
        ).fetchone()
        return row is not None

    def ls(self, directory=""):
        """Immediate children of directory: names, with a trailing '.' for dirs."""
        self.flush()
        prefix = "" if directory in ("", ".") else directory + "."
        if prefix:
            rows = self.conn.execute("SELECT key, kind FROM kvs WHERE key > ? AND key < ? ORDER BY key",
                                     (directory + ".", directory + "/"))
        else:
            rows = self.conn.execute("SELECT key, kind FROM kvs ORDER BY key")
        children = {}
        for key, kind in rows:
            rest = key[len(prefix):]
            head, dot, _ = rest.partition(".")
            children[head] = children.get(head, False) or bool(dot) or kind == DIR
        return [name + ("." if isdir else "") for name, isdir in sorted(children.items())]

    # -- Flux's transaction operations (kvs.commit) ----------------------------

    def link(self, key, text, kind=JSON):
        """Flux's put of a value or directory at key: whatever was at key
        (a value, a whole directory) is replaced, and values on the way down
        become directories."""
        self.flush()
        parts = key.split(".")
        parents = [".".join(parts[:i]) for i in range(1, len(parts))]
        if parents:
            marks = ",".join("?" * len(parents))
            self.conn.execute(f"DELETE FROM kvs WHERE key IN ({marks})", parents)
        self.delete(key)
        self.put_text(key, text, kind)

    def mkdir(self, key):
        """An empty directory at key (replacing what was there)."""
        self.link(key, "{}", DIR)

    def unlink(self, key):
        """Remove key and what is under it; its directory stays, empty or not."""
        parent = key.rpartition(".")[0]
        keep = bool(parent) and self.isdir(parent)
        self.delete(key)
        if keep and not self.isdir(parent):
            self.put_text(parent, "{}", DIR)

    def commit_ops(self, ops):
        """A Flux KVS transaction (kvs.commit's ops), applied in order, in one
        transaction: (operation, key, data) with PUT and the value's bytes
        (JSON text is stored as a JSON value, other UTF-8 text as a string,
        other bytes as raw bytes), MKDIR and UNLINK with None, SYMLINK with
        the target. What instance keys it would replace or remove is refused
        (stored.check_put, check_remove); the root is EINVAL."""
        with self.transaction():
            for op, key, data in ops:
                key = normalize(key)
                if key == ".":
                    raise KVSError("Invalid argument: the root directory cannot be replaced", errno=EINVAL)
                self._check_replace(key)
                if op == PUT:
                    kind, text, value = _stored_value(data)
                    stored.check_put(key, value)
                    self.link(key, text, kind)
                elif op == MKDIR:
                    self.mkdir(key)
                elif op == UNLINK:
                    self.unlink(key)
                elif op == SYMLINK:
                    self.link(key, normalize(data), SYMLINK)
                else:
                    raise KVSError(f"{op}: unknown KVS operation", errno=EINVAL)

    def _check_replace(self, key):
        """An op at key replaces key, what is under it, and values above it."""
        parts = key.split(".")
        for i in range(1, len(parts)):
            above = ".".join(parts[:i])
            if self.get_raw(above) is not None:
                stored.check_remove(above)
        if self.get_raw(key) is not None:
            stored.check_remove(key)
        for below in self.keys_under(key):
            stored.check_remove(below)

    def lookup(self, key, readdir=False, readlink=False, check=None):
        """Flux's lookup of one key, following symlinks unless readlink:
        ("val", bytes), ("dir", ls names) with readdir, ("symlink", target)
        with readlink. check(key) is called on each key read (a requester's
        access rule). Errors as Flux's KVS answers: ENOENT, EISDIR (a
        directory without readdir), ENOTDIR, EINVAL (an empty key), ELOOP."""
        if not key:
            raise KVSError("Invalid argument", errno=EINVAL)
        key = normalize(key)
        with self.read_transaction():
            for _hop in range(10):
                if check is not None:
                    check(key)
                row = None if key == "." else self.get_raw(key)
                if row is None:
                    if not self.isdir(key):
                        raise KVSError(f"{key}: No such file or directory", errno=ENOENT)
                    if not readdir:
                        raise KVSError(f"{key}: Is a directory", errno=EISDIR)
                    return "dir", self.ls(key)
                kind, text = row
                if kind == SYMLINK:
                    if readlink:
                        return "symlink", text
                    if "::" in text:  # into another namespace (a job's guest namespace)
                        raise KVSError(f"{key}: No such file or directory", errno=ENOENT)
                    key = text
                    continue
                if readdir:
                    raise KVSError(f"{key}: Not a directory", errno=ENOTDIR)
                if readlink:
                    raise KVSError(f"{key}: Invalid argument", errno=EINVAL)
                return "val", base64.b64decode(text) if kind == RAW else text.encode()
        raise KVSError(f"{key}: Too many levels of symbolic links", errno=ELOOP)
