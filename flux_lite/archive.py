"""Reading and writing the archives `flux dump` writes and `flux restore` reads.

An archive holds one entry per KVS value: a regular file whose path is the key
with ``.`` turned into ``/``, or a symlink for a KVS symlink (target
``NAMESPACE::TARGET``). Flux uses libarchive: it writes the format named by the
output file's extension (``-`` is a tar on stdout) and reads whatever format and
compression it recognizes. This module does the same for the formats the Python
standard library can carry: tar (plain, gzip, bzip2, xz; also zstd where the
interpreter has it), zip and cpio (odc and newc).

Archives stream both ways, as libarchive's do: `write` takes the entries as
they come and `entries` yields them as they are read, so a dump or a restore
holds one entry and a buffer at a time, whatever the archive's size (a zip
alone keeps its table of contents in memory, as zip needs it at the end).

A compressed archive is decompressed within a budget tied to its size: at
most RATIO times its compressed size (never less than MIN_BUDGET), or what
max_size says. Every archive flux-lite writes compresses far less than that
(RATIO says how much); a decompression bomb stops at the budget.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from dataclasses import dataclass
from zlib import adler32

from flux_lite.errors import FluxLiteError
from flux_lite.forked import worker

UNRECOGNIZED = "Unrecognized archive format"


class ArchiveError(FluxLiteError):
    pass


@dataclass
class Entry:
    """One archive member: a regular file (data) or a symlink (target)."""

    path: str
    data: bytes = b""
    target: str | None = None  # set for symlinks
    mtime: float = 0.0

    @property
    def is_symlink(self) -> bool:
        return self.target is not None


@dataclass
class Batch:
    """Entries to be made by make(arg) where the writer chooses: in its own
    process, or (a tar written with parallel=True) in a second one while it
    makes the next batch itself. make is a module-level function and arg
    plain data (both are sent to the other process); make returns (entries,
    extra), and then(extra), when given, is called in the writer's process,
    batch after batch in order, once the batch's entries are written."""

    make: Callable[[Any], tuple[list[Entry], Any]]
    arg: Any
    then: Callable[[Any], None] | None = None


class _Sync:
    """See SYNC."""


# in a stream of entries and batches: every batch before it is written, its
# then() called, before the stream is asked for the next item (what the
# stream makes next depends on them)
SYNC = _Sync()

Item = Entry | Batch | _Sync  # what write() takes


def expand(items: Iterable[Item]) -> Iterator[Entry]:
    """A stream of entries and batches as entries only (each batch made here)."""
    for item in items:
        if item is SYNC:
            continue
        if type(item) is Batch:
            made, extra = item.make(item.arg)
            yield from made
            if item.then is not None:
                item.then(extra)
        else:
            yield item  # type: ignore[misc]


# -- writing --------------------------------------------------------------------

# extension -> (container, compression), as libarchive's by-extension table
_WRITE_FORMATS = (
    (".tar.gz", ("tar", "gz")),
    (".tar.bz2", ("tar", "bz2")),
    (".tar.xz", ("tar", "xz")),
    (".tgz", ("tar", "gz")),
    (".tar", ("tar", None)),
    (".zip", ("zip", None)),
    (".jar", ("zip", None)),
    (".cpio", ("cpio", None)),
)

# gzip level: zlib's default, as libarchive writes (9 costs twice the time for 2% less)
GZIP_LEVEL = 6
_FLUSH_AT = 1 << 20  # bytes gathered before one write


def write_format(path: str) -> tuple[str, str | None]:
    """(container, compression) for an output path; '-' is a plain tar."""
    if path == "-":
        return ("tar", None)
    lower = path.lower()
    for ext, fmt in _WRITE_FORMATS:
        if lower.endswith(ext):
            return fmt
    raise ArchiveError(f"No such format '{path}'")


def encode(entries: Iterable[Entry], container: str, compression: str | None = None,
           uid: int = 0, gid: int = 0) -> bytes:
    """The archive bytes holding entries (mode 0644, owner uid/gid)."""
    buf = io.BytesIO()
    write_stream(buf, entries, container, compression, uid=uid, gid=gid)
    return buf.getvalue()


def write_stream(out, entries: Iterable[Item], container: str, compression: str | None = None,
                 uid: int = 0, gid: int = 0, on_entry: Callable[[Entry | None, int], None] | None = None,
                 parallel: bool = False) -> int:
    """Write entries (and batches of them) to the binary file out as they
    come; returns their number. on_entry(entry, n) sees each one once it is
    written (None for a batch made in a second process: see _write_tar)."""
    helper = enc = None
    if container == "tar":
        enc = _TarEncoder(uid, gid)
        if parallel:
            # forked before the compressor's thread starts: a fork copies only
            # the thread that makes it, not the locks the others hold
            helper = worker(lambda request: enc.made(*request))
    try:
        sink = _compressing(out, compression)
        if enc is not None:
            n = _write_tar(sink, entries, enc, on_entry, helper)
        elif container == "zip":
            n = _write_zip(sink, expand(entries), on_entry)
        elif container == "cpio":
            n = _write_cpio(sink, expand(entries), uid, gid, on_entry)
        else:  # pragma: no cover - write_format never yields another
            raise ArchiveError(f"unknown archive container {container}")
    finally:
        if helper is not None:
            helper.close()
    if sink is not out:
        sink.close()  # the compressor's trailer (out itself stays open)
    return n


def _compressing(out, compression):
    if compression == "gz":
        return _GzipWriter(out)
    if compression == "bz2":
        import bz2

        return bz2.BZ2File(out, "wb")
    if compression == "xz":
        import lzma

        return lzma.LZMAFile(out, "wb")
    return out


def _ustar_header(name, size, mtime, uid, gid, symlink_target=None):
    """One ustar header block, or None when the entry needs pax extensions."""
    try:
        raw = name.encode("ascii")
        link = (symlink_target or "").encode("ascii")
    except UnicodeEncodeError:
        return None
    prefix = b""
    if len(raw) > 100:
        cut = raw.rfind(b"/", 0, 156)
        if cut <= 0 or len(raw) - cut - 1 > 100:
            return None
        prefix, raw = raw[:cut], raw[cut + 1:]
    if len(link) > 100 or not 0 <= uid < 0o777777 or not 0 <= gid < 0o777777 \
            or not 0 <= mtime < 0o77777777777 or size >= 0o77777777777:
        return None
    # the spelling of libarchive's ustar writer: 6 octal digits, space, NUL;
    # 11 digits and a space for size and time
    header = b"".join([
        raw.ljust(100, b"\0"),
        b"000644 \0",
        b"%06o \0" % uid,
        b"%06o \0" % gid,
        b"%011o " % size,
        b"%011o " % mtime,
        b"        ",
        b"2" if symlink_target is not None else b"0",
        link.ljust(100, b"\0"),
        b"ustar\x0000",
        bytes(64),  # uname, gname: numeric ids only, as flux dump writes
        b"000000 \0",  # devmajor
        b"000000 \0",  # devminor
        prefix.ljust(155, b"\0"),
        bytes(12),
    ])
    chksum = b"%06o\0 " % sum(header)
    return header[:148] + chksum + header[156:]


def _pax_header(e, uid, gid):
    """Header blocks (a pax extended header first) for an entry ustar cannot hold."""
    info = tarfile.TarInfo(e.path)
    info.mode = 0o644
    info.uid, info.gid = uid, gid
    info.uname = info.gname = ""
    if e.is_symlink:
        info.type = tarfile.SYMTYPE
        info.linkname = e.target
        info.mtime = 0
    else:
        info.size = len(e.data)
        info.mtime = int(e.mtime)
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")




class _TarEncoder:
    """Entries as tar blocks: plain ustar headers (pax only for entries that
    need it), as libarchive's "pax restricted" format that flux dump writes.

    The common header (an ASCII name of at most 100 bytes) is put together
    from pieces made once, its checksum from theirs: a dump writes millions."""

    def __init__(self, uid: int, gid: int) -> None:
        self.uid, self.gid = uid, gid
        self.ids = b"000644 \0" + b"%06o \0" % uid + b"%06o \0" % gid
        self.tail = b"ustar\x0000" + bytes(64) + b"000000 \0" * 2 + bytes(167)
        self.fast = 0 <= uid < 0o777777 and 0 <= gid < 0o777777
        self.base = sum(self.ids) + sum(self.tail) + 8 * 32  # (the checksum field counts as spaces)
        self.times: dict[int, tuple[bytes, int]] = {}

    def add(self, e: Entry, pending: list[bytes]) -> int:
        """Append e's blocks to pending; returns their size."""
        target = e.target
        header = None
        path = e.path
        if self.fast and len(path) <= 100 and path.isascii():
            raw = path.encode()
            if target is None:
                body = e.data
                blen = len(body)
                mt = int(e.mtime)
                tm = self.times.get(mt)
                if tm is None and 0 <= mt < 0o77777777777:
                    field = b"%011o " % mt
                    tm = self.times[mt] = (field, sum(field))
                if tm is not None and blen < 0o77777777777:
                    sz = b"%011o " % blen
                    head = raw + _NAMES[len(raw):] + self.ids + sz + tm[0]
                    chk = self.base + sum(raw) + sum(sz) + tm[1] + 48  # (typeflag '0')
                    header = b"".join((head, b"%06o\0 " % chk, b"0", _LINK0, self.tail))
            else:
                body = b""
                if len(target) <= 100 and target.isascii():
                    link = target.encode()
                    field = b"%011o " % 0
                    head = raw + _NAMES[len(raw):] + self.ids + field + field
                    chk = self.base + sum(raw) + 2 * sum(field) + 50 + sum(link)  # (typeflag '2')
                    header = b"".join((head, b"%06o\0 " % chk, b"2", link + _LINK0[len(link):], self.tail))
        if header is None:
            if target is not None:
                header = _ustar_header(e.path, 0, 0, self.uid, self.gid, target)
                body = b""
            else:
                header = _ustar_header(e.path, len(e.data), int(e.mtime), self.uid, self.gid)
                body = e.data
            if header is None:
                header = _pax_header(e, self.uid, self.gid)
        pending.append(header)
        size = len(header)
        if body:
            pending.append(body)
            pad = -len(body) % 512
            if pad:
                pending.append(_ZERO_BLOCK[:pad])
            size += len(body) + pad
        return size

    def made(self, make, arg) -> tuple[bytes, int, Any]:
        """A batch's entries made (make(arg)) and encoded: (blocks, count, extra)."""
        made, extra = make(arg)
        pending: list[bytes] = []
        for e in made:
            self.add(e, pending)
        return b"".join(pending), len(made), extra


_NAMES = bytes(100)
_LINK0 = bytes(100)


def _write_tar(out, entries, enc: _TarEncoder, on_entry, helper=None):
    """A tar archive of entries (and batches: see Batch). With a helper (a
    flux_lite.forked.worker making enc.made), a second process makes and
    encodes every other batch while this one does the next; on_entry then
    sees None for the entries of a batch, once, with the count after it."""
    pending: list[bytes] = []
    size = 0
    n = 0
    waiting: Batch | None = None  # the batch the helper is making

    def write_batch(item, blocks, count, extra):
        nonlocal n
        out.write(blocks)
        n += count
        if item.then is not None:
            item.then(extra)
        if on_entry is not None:
            on_entry(None, n)

    def collect():
        nonlocal waiting
        item, waiting = waiting, None
        write_batch(item, *helper.result())

    for e in entries:
        if e is SYNC:
            if waiting is not None:
                collect()
            continue
        if type(e) is Batch:
            if size:
                out.write(b"".join(pending))
                pending.clear()
                size = 0
            if helper is None:
                write_batch(e, *enc.made(e.make, e.arg))
                continue
            if waiting is None:
                helper.submit((e.make, e.arg))
                waiting = e
            else:
                mine = enc.made(e.make, e.arg)  # (while the helper makes the one before)
                collect()
                write_batch(e, *mine)
            continue
        if waiting is not None:
            collect()
        size += enc.add(e, pending)
        if size >= _FLUSH_AT:
            out.write(b"".join(pending))
            pending.clear()
            size = 0
        n += 1
        if on_entry is not None:
            on_entry(e, n)
    if waiting is not None:
        collect()
    pending.append(bytes(1024))
    out.write(b"".join(pending))
    return n


def _write_zip(out, entries, on_entry):
    import time
    import zipfile

    n = 0
    # (zipfile needs to seek back over what it wrote only when it cannot: a
    # pipe gets data descriptors instead)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for e in entries:
            stamp = time.gmtime(max(int(e.mtime), 315532800))[:6]  # zip starts in 1980
            info = zipfile.ZipInfo(e.path, date_time=stamp)
            info.create_system = 3  # unix: external_attr carries the mode
            if e.is_symlink:
                info.external_attr = (stat.S_IFLNK | 0o644) << 16
                zf.writestr(info, e.target.encode())
            else:
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, e.data)
            n += 1
            if on_entry is not None:
                on_entry(e, n)
    return n


def _write_cpio(out, entries, uid, gid, on_entry):
    """POSIX octet-oriented cpio ("odc"), libarchive's "cpio" format."""

    def member(name, mode, mtime, data, ino):
        namebytes = name.encode() + b"\0"
        header = "070707%06o%06o%06o%06o%06o%06o%06o%011o%06o%011o" % (
            0, ino & 0o777777, mode, uid, gid, 1, 0, int(mtime), len(namebytes), len(data))
        out.write(header.encode() + namebytes + data)

    n = 0
    for n, e in enumerate(entries, 1):
        if e.is_symlink:
            member(e.path, stat.S_IFLNK | 0o644, 0, e.target.encode(), n)
        else:
            member(e.path, stat.S_IFREG | 0o644, e.mtime, e.data, n)
        if on_entry is not None:
            on_entry(e, n)
    member("TRAILER!!!", 0, 0, b"", 0)
    return n


def check_output(path: str) -> None:
    """Refuse, before anything is read, an output path that cannot be
    written: an unknown extension, a missing or read-only directory, a
    directory named as the file ('-' is stdout)."""
    write_format(path)
    if path == "-":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK) or os.path.isdir(path):
        raise ArchiveError(f"Failed to open '{path}'")


def write(path: str, entries: Iterable[Item], stdout=None,
          on_entry: Callable[[Entry | None, int], None] | None = None, parallel: bool = False) -> int:
    """Write entries (and batches: Batch) to path in the format its
    extension names ('-': stdout), as they come; returns their number.
    parallel: a tar's batches are made by two processes (see _write_tar).

    The file appears whole or not at all: it is written beside its final name
    and renamed into place.
    """
    container, compression = write_format(path)
    uid, gid = os.getuid(), os.getgid()
    if path == "-":
        n = write_stream(stdout, entries, container, compression, uid, gid, on_entry, parallel)
        stdout.flush()
        return n
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        f = open(tmp, "wb")
    except OSError:
        raise ArchiveError(f"Failed to open '{path}'") from None
    try:
        with f:
            n = write_stream(f, entries, container, compression, uid, gid, on_entry, parallel)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ArchiveError(f"Failed to write '{path}': {exc.strerror or exc}") from None
        raise
    return n


class _GzipWriter:
    """gzip on a thread of its own: zlib lets go of the interpreter while it
    compresses, so the archive is made and compressed at the same time."""

    def __init__(self, out) -> None:
        import queue
        import threading
        import zlib

        self.out = out
        self.z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # gzip framing, mtime 0
        self.q: queue.Queue = queue.Queue(maxsize=4)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            data = self.q.get()
            if data is None:
                return
            if self.error is None:
                try:
                    self.out.write(self.z.compress(data))
                except BaseException as exc:  # handed to the writer at close
                    self.error = exc

    def write(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.q.put(data)

    def close(self) -> None:
        self.q.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
        self.out.write(self.z.flush())


# -- reading --------------------------------------------------------------------

# the decompression budget: RATIO times the compressed size, at least
# MIN_BUDGET. A dump compresses about 80 to 1 with gzip -9 and 280 to 1 with
# xz (a tar is mostly headers and padding); zeros, a bomb's usual filling,
# 1000 to 1 with gzip (its ceiling) and thousands to 1 with the others.
RATIO = {"gz": 400, "bz2": 2000, "xz": 2000, "zstd": 2000}
MIN_BUDGET = 512 << 20
_CHUNK = 1 << 20

_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")
_CPIO = (b"070707", b"070701", b"070702")


def parse_size(text: str) -> int:
    """Bytes of a size such as 4096, 512M, 2G or 1.5T (binary units)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in units and t[-1:] else ""
    try:
        value = float(t[:-1] if unit else t)
    except ValueError:
        raise ArchiveError(f"invalid size '{text}' (a number of bytes, or with K, M, G or T)") from None
    if not value > 0 or value * units[unit] > 1 << 62:
        raise ArchiveError(f"invalid size '{text}'")
    return int(value * units[unit])


def _mib(n):
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _known_start(head: bytes) -> bool:
    """Whether head (the first 512 bytes, or all of a shorter file) can
    begin an archive this module reads."""
    return (head.startswith(_COMPRESSED) or head[:6] in _CPIO
            or head[:4] in (b"PK\x03\x04", b"PK\x05\x06") or len(head) < 512 or _looks_like_tar(head))


def _codec(data):
    return {b"\x1f\x8b": "gz", b"BZ": "bz2", b"\xfd7": "xz", b"\x28\xb5": "zstd"}[data[:2]]


def _decompressor(data):
    """A factory of decompressor objects for data's compression, or None."""
    if data[:2] == b"\x1f\x8b":
        import zlib

        return lambda: zlib.decompressobj(31)  # gzip framing
    if data[:3] == b"BZh":
        import bz2

        return bz2.BZ2Decompressor
    if data[:6] == b"\xfd7zXZ\x00":
        import lzma

        return lzma.LZMADecompressor
    if data[:4] == b"\x28\xb5\x2f\xfd":
        try:
            from compression import zstd  # Python 3.14+
        except ImportError:
            raise ArchiveError("zstd-compressed archives need Python 3.14 or newer") from None
        return zstd.ZstdDecompressor
    return None


class _Source:
    """An archive's bytes as they are read, decompressed on the way when
    compressed, within the budget."""

    def __init__(self, f, head: bytes, size: int | None, max_size: int | None):
        self.f = f
        self.raw = head  # raw bytes read but not yet used
        self.raw_in = 0  # raw bytes used so far
        self.out = 0  # bytes handed out so far
        self.size = size  # the raw archive's size, when known (a regular file)
        self.max_size = max_size
        self.new = _decompressor(head)
        self.d = self.new() if self.new is not None else None
        self.ratio = RATIO[_codec(head)] if self.new is not None else 1
        self.eof = False

    @property
    def compressed(self) -> bool:
        return self.d is not None

    def entry_limit(self) -> int:
        """The largest single entry accepted (each is held in memory)."""
        if self.max_size:
            return self.max_size
        return self._budget() if self.d is not None else MIN_BUDGET

    def _budget(self):
        if self.max_size:
            return self.max_size
        basis = self.size if self.size is not None else self.raw_in
        return max(MIN_BUDGET, self.ratio * basis)

    def _read_raw(self):
        if self.raw:
            data, self.raw = self.raw, b""
        else:
            try:
                data = self.f.read(_CHUNK)
            except OSError as exc:
                raise ArchiveError(f"Failed to read the archive: {exc.strerror or exc}") from None
        self.raw_in += len(data)
        return data

    def read(self) -> bytes:
        """The next piece of the archive (b'' at its end)."""
        if self.eof:
            return b""
        if self.d is None:
            data = self._read_raw()
            self.eof = not data
            self.out += len(data)
            return data
        try:
            data = self._inflate()
        except ArchiveError:
            raise
        except Exception as exc:  # each codec has its own error class (lzma.LZMAError, ...)
            raise ArchiveError(f"Truncated or damaged compressed archive: {exc}") from None
        self.out += len(data)
        if self.out > self._budget():
            budget = self._budget()
            if self.max_size:
                raise ArchiveError(f"archive larger than {_mib(budget)} once decompressed (--max-size)")
            raise ArchiveError(
                f"archive larger than {_mib(budget)} once decompressed (over {self.ratio} times its "
                "compressed size, as a decompression bomb is): if it is genuine, "
                "allow more with --max-size=SIZE")
        if not data:
            self.eof = True
        return data

    def _inflate(self):
        d = self.d
        while True:
            if d.eof:
                rest = d.unused_data or self._read_raw()
                while rest and not rest.strip(b"\0"):
                    rest = self._read_raw()  # trailing padding, as gzip(1) tolerates
                if not rest:
                    return b""
                d = self.d = self.new()  # gzip and bzip2 allow several streams in a row
                src = rest
            elif hasattr(d, "unconsumed_tail"):  # zlib
                src = d.unconsumed_tail or self._read_raw()
                if not src:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            elif d.needs_input:
                src = self._read_raw()
                if not src:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            else:
                src = b""
            # at most a chunk out of each call: a bomb never inflates at once
            data = d.decompress(src, _CHUNK)
            if data:
                return data


class _Reader:
    """Whole blocks of a _Source, for the parsers."""

    def __init__(self, src: _Source):
        self.src = src
        self.buf = b""
        self.pos = 0

    def have(self, n: int) -> bool:
        """Are n bytes available from pos (reading more as needed)?"""
        while len(self.buf) - self.pos < n:
            more = self.src.read()
            if not more:
                return False
            self.buf = self.buf[self.pos:] + more
            self.pos = 0
        return True

    def take(self, n: int) -> bytes:
        """Up to n bytes (fewer only at the end)."""
        self.have(n)
        data = self.buf[self.pos:self.pos + n]
        self.pos += len(data)
        return data

    def skip(self, n: int) -> bool:
        """Skip n bytes; False if the archive ends first."""
        while n:
            if self.pos >= len(self.buf) and not self.have(1):
                return False
            step = min(n, len(self.buf) - self.pos)
            self.pos += step
            n -= step
        return True

    def rest_is_zero(self) -> bool:
        """Is everything left zero bytes (a tar's end padding)?"""
        while True:
            if self.buf[self.pos:].strip(b"\0"):
                return False
            self.pos = len(self.buf)
            if not self.have(1):
                return True


def _open(path, stdin):
    try:
        f = stdin if path == "-" else open(path, "rb")
    except OSError:
        raise ArchiveError(f"Failed to open '{path}'") from None
    size = None
    try:
        st = os.fstat(f.fileno())
        if stat.S_ISREG(st.st_mode):
            size = st.st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        pass
    return f, size


def entries(path: str, stdin=None, max_size: int | None = None) -> Iterator[Entry]:
    """The entries of the archive at path ('-': stdin), as they are read.

    What cannot start an archive is refused after its first block; a
    compressed archive is read within its budget (max_size: the most it may
    decompress to, and the largest entry it may hold)."""
    f, size = _open(path, stdin)
    try:
        try:
            head = f.read(512)
        except OSError:
            raise ArchiveError(f"Failed to read '{path}'") from None
        yield from _entries(_Source(f, head, size, max_size))
    finally:
        if f is not stdin:
            f.close()


def parse(data: bytes, max_size: int | None = None) -> list[Entry]:
    """The entries of an archive given as bytes (any supported format)."""
    return list(_entries(_Source(io.BytesIO(data[512:]), data[:512], len(data), max_size)))


def read(path: str, stdin=None, max_size: int | None = None) -> list[Entry]:
    """Every entry of the archive at path ('-': stdin) (small archives: tests)."""
    return list(entries(path, stdin, max_size))


def _entries(src: _Source) -> Iterator[Entry]:
    if not _known_start(src.raw):
        raise ArchiveError(UNRECOGNIZED)
    r = _Reader(src)
    r.have(512)
    head = r.buf[:512]
    if head[:6] in _CPIO:
        yield from _read_cpio(r)
    elif head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        yield from _read_zip(r)
    elif _looks_like_tar(head):
        yield from _read_tar(r)
    else:
        raise ArchiveError(UNRECOGNIZED)


def _looks_like_tar(data):
    if len(data) < 512:
        return False
    header = data[:512]
    if header[257:262] == b"ustar":
        return True
    # an old (v7) tar header has no magic: check its checksum
    try:
        stored = int(header[148:156].split(b"\0", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    computed = sum(header[:148]) + 8 * 32 + sum(header[156:])
    return stored == computed


def _clean_path(name):
    if name and name[0] not in "./" and name[-1] != "/" and "//" not in name and "/." not in name:
        return name  # (the usual case, at once)
    path = name
    while path.startswith("./"):
        path = path[2:]
    path = path.rstrip("/")
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ArchiveError(f"invalid path in archive: '{name}'")
    return path


_ZERO_BLOCK = bytes(512)
_SPACES = b" " * 8


def _number(field: bytes) -> int:
    """A tar header's numeric field: octal, or GNU's base-256."""
    if field[:1] and field[0] & 0x80:
        value = int.from_bytes(field[1:], "big")
        return value - (1 << (8 * len(field) - 8)) if field[0] & 0x40 else value
    return int(field.rstrip(b"\0 ").strip() or b"0", 8)


def _pax_records(body: bytes) -> dict[str, str]:
    """The records of a pax extended header ("LEN key=value\\n" each)."""
    out = {}
    pos = 0
    while pos < len(body) and body[pos:].strip(b"\0"):
        space = body.find(b" ", pos)
        try:
            length = int(body[pos:space])
        except ValueError:
            raise ArchiveError("Damaged pax header in tar archive") from None
        record = body[space + 1:pos + length]
        if length <= 0 or not record.endswith(b"\n") or b"=" not in record:
            raise ArchiveError("Damaged pax header in tar archive")
        key, _, value = record[:-1].partition(b"=")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def _read_tar(r: _Reader) -> Iterator[Entry]:
    """The entries of a tar archive: ustar (what flux dump and flux-lite dump
    write), pax and GNU extensions, old v7 headers; directories are skipped."""
    limit = r.src.entry_limit()
    pax: dict[str, str] = {}
    first = True
    while True:
        if len(r.buf) - r.pos < 512 and not r.have(512):
            if r.rest_is_zero():
                return  # no end blocks: accepted, as libarchive does
            raise ArchiveError("Truncated tar archive")
        h = r.buf[r.pos:r.pos + 512]
        if h == _ZERO_BLOCK:
            return
        try:
            chksum = int(h[148:156].rstrip(b"\0 ").strip() or b"-1", 8)
        except ValueError:
            chksum = -1
        # the sum of the header's bytes (the checksum field as spaces): adler32
        # has it modulo 65521 in its low half, at C speed, which is the sum
        # itself when every byte is ASCII (512 * 127 < 65521)
        if h.isascii():
            bad = (adler32(h[156:], adler32(_SPACES, adler32(h[:148]))) & 0xFFFF) != (1 + chksum) % 65521 \
                or chksum >= 65521
        else:
            bad = chksum != sum(h[:148]) + 256 + sum(h[156:])
        if bad:
            raise ArchiveError(UNRECOGNIZED if first else "Truncated tar archive")
        first = False
        r.pos += 512
        flag = h[156:157]
        try:
            if h[124] < 0x80 and h[136] < 0x80:
                try:
                    size = int(h[124:135], 8)
                    mtime = float(int(h[136:147], 8))
                except ValueError:
                    size = _number(h[124:136])
                    mtime = float(_number(h[136:148]))
            else:
                size = _number(h[124:136])
                mtime = float(_number(h[136:148]))
        except ValueError:
            raise ArchiveError("Damaged tar header") from None
        if size < 0 or size > limit:
            raise ArchiveError(f"archive entry larger than {_mib(limit)}: allow more with --max-size=SIZE"
                               if size > 0 else "Damaged tar header")
        end = r.pos + size
        if end + (-size % 512) <= len(r.buf):  # (the usual case: body and padding at hand)
            body = r.buf[r.pos:end]
            r.pos = end + (-size % 512)
        else:
            if not r.have(size):
                raise ArchiveError("Truncated tar archive")
            body = r.buf[r.pos:r.pos + size]
            r.pos += size
            if not r.skip(-size % 512):
                raise ArchiveError("Truncated tar archive")  # the padding is cut off
        if flag in (b"x", b"g", b"L", b"K"):
            if flag == b"x":
                pax.update(_pax_records(body))
            elif flag == b"L":
                pax["path"] = body.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            elif flag == b"K":
                pax["linkpath"] = body.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            continue  # ('g': global records, nothing flux-lite uses)
        raw = h[0:100].split(b"\0", 1)[0]
        if h[257:262] == b"ustar" and h[263:265] == b"00":
            prefix = h[345:500].split(b"\0", 1)[0]
            if prefix:
                raw = prefix + b"/" + raw
        name = pax.pop("path", None) or raw.decode("utf-8", "surrogateescape")
        linkname = pax.pop("linkpath", None) or h[157:257].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        if "mtime" in pax:
            try:
                mtime = float(pax["mtime"])
            except ValueError:
                pass
        pax.clear()
        if flag in (b"0", b"\0", b"7"):
            yield Entry(_clean_path(name), data=body, mtime=mtime)
        elif flag == b"2":
            yield Entry(_clean_path(name), target=linkname, mtime=mtime)
        elif flag == b"5":
            continue
        else:
            raise ArchiveError(f"{name}: unsupported archive entry type")


def _read_zip(r: _Reader) -> Iterator[Entry]:
    """A zip's entries: zip keeps its table of contents at the end, so the
    archive is first copied to a temporary file (within the budget)."""
    import tempfile
    import zipfile

    limit = r.src.entry_limit()
    with tempfile.TemporaryFile() as tmp:
        tmp.write(r.buf[r.pos:])
        while True:
            more = r.src.read()
            if not more:
                break
            tmp.write(more)
        tmp.seek(0)
        try:
            with zipfile.ZipFile(tmp) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    if info.file_size > limit:
                        raise ArchiveError(f"archive entry larger than {_mib(limit)}: "
                                           "allow more with --max-size=SIZE")
                    with zf.open(info) as member:
                        body = member.read(limit + 1)
                    if len(body) > limit:
                        raise ArchiveError(f"archive entry larger than {_mib(limit)}: "
                                           "allow more with --max-size=SIZE")
                    mode = info.external_attr >> 16
                    mtime = _zip_time(info.date_time)
                    if info.create_system == 3 and stat.S_ISLNK(mode):
                        yield Entry(_clean_path(info.filename), target=body.decode("utf-8", "replace"),
                                    mtime=mtime)
                    else:
                        yield Entry(_clean_path(info.filename), data=body, mtime=mtime)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError):
            raise ArchiveError("Truncated or damaged zip archive") from None


def _zip_time(date_time):
    import calendar

    try:
        return float(calendar.timegm(tuple(date_time) + (0, 0, 0)))
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _read_cpio(r: _Reader) -> Iterator[Entry]:
    limit = r.src.entry_limit()
    first = True
    while True:
        r.have(6)
        magic = r.buf[r.pos:r.pos + 6]
        if magic == b"070707":
            hdr = r.take(76)
            if len(hdr) < 76:
                raise ArchiveError("Truncated cpio archive")
            try:
                mode = int(hdr[18:24], 8)
                mtime = int(hdr[48:59], 8)
                namesize = int(hdr[59:65], 8)
                filesize = int(hdr[65:76], 8)
            except ValueError:
                raise ArchiveError("Damaged cpio archive") from None
            name_pad = data_pad = 0
        elif magic in (b"070701", b"070702"):
            hdr = r.take(110)
            if len(hdr) < 110:
                raise ArchiveError("Truncated cpio archive")
            try:
                fields = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
            except ValueError:
                raise ArchiveError("Damaged cpio archive") from None
            mode, mtime, filesize, namesize = fields[1], fields[5], fields[6], fields[11]
            name_pad = -(110 + namesize) % 4
            data_pad = -filesize % 4
        else:
            raise ArchiveError(UNRECOGNIZED if first else "Truncated cpio archive")
        first = False
        if filesize > limit:
            raise ArchiveError(f"archive entry larger than {_mib(limit)}: allow more with --max-size=SIZE")
        rawname = r.take(namesize)
        body = r.take(name_pad + filesize)[name_pad:]
        if len(rawname) < namesize or len(body) < filesize:
            raise ArchiveError("Truncated cpio archive")
        name = rawname.rstrip(b"\0").decode("utf-8", "replace")
        if name == "TRAILER!!!":
            return
        if not r.skip(data_pad):
            raise ArchiveError("Truncated cpio archive")
        if stat.S_ISDIR(mode):
            continue
        if stat.S_ISLNK(mode):
            yield Entry(_clean_path(name), target=body.decode("utf-8", "replace"), mtime=float(mtime))
        elif stat.S_ISREG(mode):
            yield Entry(_clean_path(name), data=body, mtime=float(mtime))
        else:
            raise ArchiveError(f"{name}: unsupported archive entry type")
