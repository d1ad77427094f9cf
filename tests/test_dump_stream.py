"""dump and restore stream: a bounded number of jobs read and written at a
time, whatever the instance's size; the decompression budget accepts every
archive dump writes and refuses a bomb. (Small sizes: the structure is what
is checked; bench/history.py measures the large ones.)"""

import gzip
import io
import os

import pytest
from conftest import Flux

NJOBS = 200


class CountingConn:
    """A connection whose cursors count the rows handed out."""

    def __init__(self, conn):
        self.conn = conn
        self.rows = 0

    def execute(self, *args):
        return CountingCursor(self, self.conn.execute(*args))

    def __getattr__(self, name):
        return getattr(self.conn, name)


class CountingCursor:
    def __init__(self, owner, cur):
        self.owner = owner
        self.cur = cur

    def __iter__(self):
        for row in self.cur:
            self.owner.rows += 1
            yield row

    def fetchone(self):
        row = self.cur.fetchone()
        self.owner.rows += row is not None
        return row

    def fetchmany(self, n):
        rows = self.cur.fetchmany(n)
        self.owner.rows += len(rows)
        return rows

    def fetchall(self):
        rows = self.cur.fetchall()
        self.owner.rows += len(rows)
        return rows

    def __getattr__(self, name):
        return getattr(self.cur, name)


@pytest.fixture
def many(flux):
    """NJOBS jobs: half of them ran to completion, half pending."""
    flux("submit", "--cc=1-100", "-S", "exec.test.run_duration=1s", "true")
    flux.advance("1h")
    flux("submit", "--cc=1-100", "-n1", "--urgency=hold", "true")
    return flux


def test_dump_reads_a_bounded_number_of_rows_before_writing(many, monkeypatch):
    """The first job's entries come out after a batch of jobs' rows were
    read: the archive is made as the instance is read, not after reading
    all of it."""
    from flux_lite import dump
    from flux_lite.instance import Instance

    monkeypatch.setattr(dump, "JOBS_PER_BATCH", 4)

    inst = Instance.open(many.state_dir)
    try:
        with inst.read_session() as broker:
            counting = CountingConn(broker.kvs.conn)
            broker.kvs.conn = counting
            try:
                stream = dump.entries(broker)
                seen = []
                for entry in stream:
                    seen.append(entry.path)
                    if entry.path.startswith("job/") and entry.path.endswith("/jobspec"):
                        break
                # a batch's rows (4 jobs, 4 keys each), the instance's few keys, the first index rows
                assert counting.rows < 50, counting.rows
                assert len(seen) < 20
                rest = sum(1 for _ in stream)
                assert counting.rows > 4 * NJOBS  # (and then all of them)
                assert rest > 4 * NJOBS
            finally:
                broker.kvs.conn = counting.conn
    finally:
        inst.close()


def test_archive_write_writes_as_entries_come(tmp_path):
    """archive.write consumes its entries as it writes: the file grows
    before the last entry is made."""
    from flux_lite import archive

    out = tmp_path / "x.tar"
    tmp = tmp_path / f".x.tar.{os.getpid()}.tmp"
    sizes = []

    def entries():
        for i in range(12):
            sizes.append(tmp.stat().st_size if tmp.exists() else 0)
            yield archive.Entry(f"big/{i}", data=os.urandom(512 << 10))

    archive.write(str(out), entries())
    assert sizes[-1] > 2 << 20  # 5 MiB and more were out when the last entry came
    assert len(archive.read(str(out))) == 12


def test_archive_entries_reads_as_they_are_used(tmp_path):
    """archive.entries reads the archive as its entries are used: the first
    comes after a chunk of a much larger file."""
    from flux_lite import archive

    data = gzip.compress(archive.encode(
        [archive.Entry(f"big/{i}", data=os.urandom(256 << 10)) for i in range(40)], "tar"), 1)

    class Counting(io.BytesIO):
        read_so_far = 0

        def read(self, n=-1):
            out = super().read(n)
            self.read_so_far += len(out)
            return out

    f = Counting(data)
    it = archive.entries("-", stdin=f)
    first = next(it)
    assert first.path == "big/0"
    assert f.read_so_far <= (1 << 20) + 512 < len(data) // 4
    assert sum(1 for _ in it) == 39


def test_restore_writes_in_batches_as_it_reads(many, tmp_path, monkeypatch):
    """restore writes BATCH rows at a time while the archive is still being
    read: never all the jobs at once."""
    from flux_lite import archive
    from flux_lite import restore as restoremod

    out = tmp_path / "x.tar"
    many("dump", "-q", str(out))
    monkeypatch.setattr(restoremod, "BATCH", 50)
    events = []
    real_write = restoremod._write

    def write(kvs, rows):
        events.append(("write", len(rows)))
        real_write(kvs, rows)

    monkeypatch.setattr(restoremod, "_write", write)

    def entries():
        for e in archive.entries(str(out)):
            events.append(("read", 1))
            yield e

    # (read here, in this process, so that the reads and the writes interleave in one list)
    restoremod.restore(tmp_path / "copy", entries(), clock="virtual", parallel=False).close()
    writes = [n for kind, n in events if kind == "write"]
    assert max(writes) <= 50 + 5  # a batch, and the rest of a job's directory (its 5 keys)
    assert len(writes) >= 4 * NJOBS // 50  # the jobs' keys went in batch after batch
    first_write = next(i for i, (kind, _) in enumerate(events) if kind == "write")
    nreads = sum(1 for kind, _ in events if kind == "read")
    assert first_write < 60 < nreads  # writing began long before the archive was read
    copy = Flux(tmp_path / "copy")
    assert copy.out("jobs", "-a") == many.out("jobs", "-a")


@pytest.mark.parametrize("ext", ["tgz", "tar.bz2", "tar.xz"])
def test_budget_accepts_every_dump(many, tmp_path, monkeypatch, ext):
    """The budget alone (no floor): a dump in every compressed format is far
    within RATIO times its size, and restores."""
    from flux_lite import archive

    monkeypatch.setattr(archive, "MIN_BUDGET", 0)
    out = tmp_path / f"x.{ext}"
    many("dump", "-q", str(out))
    plain = tmp_path / "x.tar"
    many("dump", "-q", str(plain))
    ratio = plain.stat().st_size / out.stat().st_size
    codec = {"tgz": "gz", "tar.bz2": "bz2", "tar.xz": "xz"}[ext]
    assert ratio < archive.RATIO[codec] / 4, ratio
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(out))
    assert copy.out("jobs", "-a") == many.out("jobs", "-a")


def test_max_size_overrides_the_budget(many, tmp_path, monkeypatch):
    from flux_lite import archive

    monkeypatch.setattr(archive, "MIN_BUDGET", 0)
    monkeypatch.setitem(archive.RATIO, "gz", 2)  # as if this dump were a bomb
    out = tmp_path / "x.tgz"
    many("dump", "-q", str(out))
    copy = Flux(tmp_path / "copy")
    r = copy.fails("restore", "-q", str(out))
    assert "(over 2 times its compressed size, as a decompression bomb is): " \
           "if it is genuine, allow more with --max-size=SIZE" in r.stderr
    assert not (tmp_path / "copy").exists()
    r = copy.fails("start", "--restore", str(out), "--max-size=10K")
    assert r.stderr == "flux-lite start: ERROR: archive larger than 10240 bytes once decompressed (--max-size)\n"
    copy("start", "--restore", str(out), "--max-size=1G")
    assert copy.out("jobs", "-a") == many.out("jobs", "-a")
    r = copy.fails("restore", "--max-size=lots", str(out))
    assert r.stderr == ("flux-lite restore: --max-size: invalid size 'lots' "
                        "(a number of bytes, or with K, M, G or T)\n")


def test_parse_size():
    from flux_lite import archive

    assert archive.parse_size("4096") == 4096
    assert archive.parse_size("512M") == 512 << 20
    assert archive.parse_size("1.5g") == 3 << 29
    assert archive.parse_size("2GiB") == 2 << 30
    for bad in ("", "-1", "0", "12Q", "G"):
        with pytest.raises(archive.ArchiveError):
            archive.parse_size(bad)


def test_format_1_dump_restores_as_flux_lite(many, tmp_path):
    """A dump written before dumps streamed (format 1: flux-lite/format last,
    with the digest of the sorted content and the kinds; each table whole in
    flux-lite/tables/NAME) comes back as the flux-lite dump it is."""
    import json

    from flux_lite import archive, dump

    out = tmp_path / "x.tar"
    many("dump", "-q", str(out))
    entries = archive.read(str(out))
    fmt = json.loads(next(e.data for e in entries if e.path == "flux-lite/format"))
    content = json.loads(next(e.data for e in entries if e.path == "flux-lite/content"))
    flux = [e for e in entries if not e.path.startswith("flux-lite/")]
    own = [e for e in entries if e.path.startswith("flux-lite/kvs/")]
    tables = {}
    for e in entries:
        parts = e.path.split("/")
        if parts[1] == "tables":
            chunk = json.loads(e.data)
            if parts[3] == "000000":
                tables[parts[2]] = chunk
            else:
                tables[parts[2]]["rows"] += chunk
    fmt.update(version=1, kinds=content["kinds"], content=dump.content_digest(flux))
    old = flux + own + [archive.Entry("flux-lite/format", data=json.dumps(fmt).encode())] + [
        archive.Entry(f"flux-lite/tables/{name}", data=json.dumps(t).encode()) for name, t in sorted(tables.items())]
    path = tmp_path / "old.tar"
    path.write_bytes(archive.encode(old, "tar"))
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(path))
    assert copy.out("jobs", "-a") == many.out("jobs", "-a")
    assert any(line.endswith("(flux-lite dump)") for line in copy.dmesg())
    # and with its content changed: the archive is Flux's
    flux[-1] = archive.Entry(flux[-1].path, data=flux[-1].data + b"\n")
    path.write_bytes(archive.encode(flux + own + old[len(flux) + len(own):], "tar"))
    stale = Flux(tmp_path / "stale")
    stale("restore", "-q", "--clock=virtual", str(path))
    assert "broker.info[0]: flux-lite state in the archive is older than its content: ignored" in stale.dmesg()


def test_parallel_dump_writes_the_same_archive(many, tmp_path, monkeypatch):
    """Job batches made by two processes (every other one by the helper)
    give byte for byte the archive one process writes, the content digest
    included."""
    from flux_lite import archive, dump
    from flux_lite.instance import Instance

    monkeypatch.setattr(dump, "JOBS_PER_BATCH", 7)  # many batches, an odd number
    outs = {}
    for parallel in (False, True):
        out = tmp_path / f"{parallel}.tar"
        inst = Instance.open(many.state_dir)
        try:
            with inst.read_session() as broker:
                seen: list[int] = []
                n = archive.write(str(out), dump.batched_entries(broker), parallel=parallel,
                                  on_entry=lambda e, k, seen=seen: seen.append(k))
        finally:
            inst.close()
        assert seen[-1] == n and seen == sorted(seen)
        outs[parallel] = out.read_bytes()
    assert outs[True] == outs[False]
    entries = archive.parse(outs[True])
    assert sum(1 for e in entries if e.path.endswith("/eventlog") and e.path.count("/") == 5) == NJOBS


def test_restore_packs_inactive_records_of_an_older_dump(many, tmp_path):
    """A format 2 dump carries the index records as text: restored, an
    inactive job's record is stored packed all the same (as the index
    stores it), and the jobs list as before."""
    import base64
    import json
    import sqlite3

    from flux_lite import archive
    from flux_lite.stored import row_text

    out = tmp_path / "x.tar"
    many("dump", "-q", str(out))
    entries = archive.read(str(out))
    old = []
    for e in entries:
        if e.path == "flux-lite/format":
            fmt = json.loads(e.data)
            fmt["version"] = 2
            e = archive.Entry(e.path, data=json.dumps(fmt).encode(), mtime=e.mtime)
        elif e.path.startswith("flux-lite/tables/jobs/"):
            chunk = json.loads(e.data)
            rows = chunk["rows"] if isinstance(chunk, dict) else chunk
            for row in rows:
                for i, cell in enumerate(row):
                    if isinstance(cell, dict):  # back to the text a format 2 dump wrote
                        row[i] = row_text(base64.b64decode(cell["z"]))
            e = archive.Entry(e.path, data=json.dumps(chunk).encode(), mtime=e.mtime)
        old.append(e)
    older = tmp_path / "older.tar"
    older.write_bytes(archive.encode(old, "tar"))
    assert b'{"z":' not in older.read_bytes()
    copy = Flux(tmp_path / "copy")
    copy("restore", "-q", str(older))
    conn = sqlite3.connect(str(tmp_path / "copy" / "kvs.sqlite"))
    kinds = dict(conn.execute("SELECT state, group_concat(DISTINCT typeof(data)) FROM jobs GROUP BY state"))
    conn.close()
    assert kinds[64] == "blob" and kinds[8] == "text"  # inactive packed, pending as they were
    assert copy.out("jobs", "-a") == many.out("jobs", "-a")
