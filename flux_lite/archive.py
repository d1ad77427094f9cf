"""Reading and writing the archives `flux dump` writes and `flux restore` reads.

An archive holds one entry per KVS value: a regular file whose path is the key
with ``.`` turned into ``/``, or a symlink for a KVS symlink (target
``NAMESPACE::TARGET``). Flux uses libarchive: it writes the format named by the
output file's extension (``-`` is a tar on stdout) and reads whatever format and
compression it recognizes. This module does the same for the formats the Python
standard library can carry: tar (plain, gzip, bzip2, xz; also zstd where the
interpreter has it), zip and cpio (odc and newc).

Everything is read into memory before anyone uses it, so a junk or truncated
archive fails before anything is created.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from dataclasses import dataclass

from flux_lite.errors import FluxLiteError

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


def write_format(path: str) -> tuple[str, str | None]:
    """(container, compression) for an output path; '-' is a plain tar."""
    if path == "-":
        return ("tar", None)
    lower = path.lower()
    for ext, fmt in _WRITE_FORMATS:
        if lower.endswith(ext):
            return fmt
    raise ArchiveError(f"No such format '{path}'")


def encode(entries: list[Entry], container: str, compression: str | None = None,
           uid: int = 0, gid: int = 0) -> bytes:
    """The archive bytes holding entries (mode 0644, owner uid/gid)."""
    if container == "tar":
        data = _encode_tar(entries, uid, gid)
    elif container == "zip":
        data = _encode_zip(entries)
    elif container == "cpio":
        data = _encode_cpio(entries, uid, gid)
    else:  # pragma: no cover - write_format never yields another
        raise ArchiveError(f"unknown archive container {container}")
    if compression == "gz":
        import gzip

        data = gzip.compress(data, mtime=0)
    elif compression == "bz2":
        import bz2

        data = bz2.compress(data)
    elif compression == "xz":
        import lzma

        data = lzma.compress(data)
    return data


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


def _encode_tar(entries, uid, gid):
    """A tar archive: plain ustar headers (pax only for entries that need
    it), as libarchive's "pax restricted" format that flux dump writes."""
    out = []
    for e in entries:
        if e.is_symlink:
            header = _ustar_header(e.path, 0, 0, uid, gid, e.target)
            body = b""
        else:
            header = _ustar_header(e.path, len(e.data), int(e.mtime), uid, gid)
            body = e.data
        if header is None:
            header = _pax_header(e, uid, gid)
        out.append(header)
        if body:
            out.append(body)
            out.append(bytes(-len(body) % 512))
    out.append(bytes(1024))
    return b"".join(out)


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


def _encode_zip(entries):
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for e in entries:
            import time

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
    return buf.getvalue()


def _encode_cpio(entries, uid, gid):
    """POSIX octet-oriented cpio ("odc"), libarchive's "cpio" format."""
    out = io.BytesIO()

    def member(name, mode, mtime, data, ino):
        namebytes = name.encode() + b"\0"
        header = "070707%06o%06o%06o%06o%06o%06o%06o%011o%06o%011o" % (
            0, ino & 0o777777, mode, uid, gid, 1, 0, int(mtime), len(namebytes), len(data))
        out.write(header.encode() + namebytes + data)

    for ino, e in enumerate(entries, 1):
        if e.is_symlink:
            member(e.path, stat.S_IFLNK | 0o644, 0, e.target.encode(), ino)
        else:
            member(e.path, stat.S_IFREG | 0o644, e.mtime, e.data, ino)
    member("TRAILER!!!", 0, 0, b"", 0)
    return out.getvalue()


def write(path: str, entries: list[Entry], stdout=None) -> None:
    """Write entries to path in the format its extension names ('-': stdout).

    The file appears whole or not at all: it is written beside its final name
    and renamed into place.
    """
    container, compression = write_format(path)
    data = encode(entries, container, compression, uid=os.getuid(), gid=os.getgid())
    if path == "-":
        stdout.write(data)
        stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ArchiveError(f"Failed to open '{path}'") from None


# -- reading --------------------------------------------------------------------


# what one archive may cost, read and after decompression (a dump holds about
# 5 KB per job: 10^5 jobs fit); /dev/zero or a decompression bomb is refused
MAX_ARCHIVE = 512 << 20

_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")


def _known_start(head: bytes) -> bool:
    """Whether head (the first 512 bytes, or all of a shorter file) can
    begin an archive this module reads."""
    return (head.startswith(_COMPRESSED) or head[:6] in (b"070707", b"070701", b"070702")
            or head[:4] in (b"PK\x03\x04", b"PK\x05\x06") or len(head) < 512 or _looks_like_tar(head))


def read_bytes(path: str, stdin=None, limit: int | None = None) -> bytes:
    """The raw bytes of an archive file ('-': all of stdin). What cannot
    start an archive is refused after its first block, and anything past
    limit bytes (default MAX_ARCHIVE: /dev/zero, a runaway pipe) is refused too."""
    limit = MAX_ARCHIVE if limit is None else limit
    try:
        f = stdin if path == "-" else open(path, "rb")
    except OSError:
        raise ArchiveError(f"Failed to open '{path}'") from None
    try:
        head = f.read(512)
        if not _known_start(head):
            raise ArchiveError(UNRECOGNIZED)
        data = head + f.read(limit + 1 - len(head))
    except OSError:
        raise ArchiveError(f"Failed to read '{path}'") from None
    finally:
        if f is not stdin:
            f.close()
    if len(data) > limit:
        raise ArchiveError(f"archive larger than {limit >> 20} MiB")
    return data


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


def _bounded_decompress(new, data, limit):
    """Every stream in data (gzip and bzip2 allow several in a row), at most
    limit bytes of output: a decompression bomb stops at the limit."""
    out = bytearray()
    while data:
        d = new()
        out += d.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise ArchiveError(f"archive larger than {limit >> 20} MiB once decompressed")
        if not d.eof:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        data = d.unused_data
        if data.strip(b"\0") == b"":  # trailing padding, as gzip(1) tolerates
            break
    return bytes(out)


def _decompress(data):
    """Undo a compression layer recognized by its magic bytes."""
    try:
        new = _decompressor(data)
        if new is not None:
            return _bounded_decompress(new, data, MAX_ARCHIVE)
    except Exception as exc:  # each codec has its own error class (lzma.LZMAError, ...)
        # a compressed stream cut short or damaged
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"Truncated or damaged compressed archive: {exc}") from None
    return None


def parse(data: bytes) -> list[Entry]:
    """The entries of an archive given as bytes (any supported format)."""
    inner = _decompress(data)
    if inner is not None:
        data = inner
    if data[:6] in (b"070707", b"070701", b"070702"):
        return _parse_cpio(data)
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return _parse_zip(data)
    if _looks_like_tar(data):
        return _parse_tar(data)
    raise ArchiveError(UNRECOGNIZED)


def read(path: str, stdin=None) -> list[Entry]:
    """The entries of the archive at path ('-': stdin)."""
    return parse(read_bytes(path, stdin))


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
    path = name
    while path.startswith("./"):
        path = path[2:]
    path = path.rstrip("/")
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ArchiveError(f"invalid path in archive: '{name}'")
    return path


_ZERO_BLOCK = bytes(512)


def _parse_ustar(data):
    """The entries of a plain ustar archive (what flux dump and flux-lite dump
    write), read directly: several times faster than tarfile on archives of
    tens of thousands of small entries. None for anything else (pax or GNU
    extension headers, directories, ...), which tarfile then reads."""
    entries = []
    pos = 0
    n = len(data)
    while pos + 512 <= n:
        h = data[pos:pos + 512]
        if h == _ZERO_BLOCK:
            return entries
        try:
            chksum = int(h[148:156].rstrip(b"\0 ").strip() or b"-1", 8)
        except ValueError:
            return None
        if chksum != sum(h[:148]) + 256 + sum(h[156:]) or h[257:262] != b"ustar":
            return None
        flag = h[156:157]
        if flag not in (b"0", b"\0", b"2") or h[124] & 0x80 or h[136] & 0x80:
            return None
        try:
            size = int(h[124:136].rstrip(b"\0 ").strip() or b"0", 8)
            mtime = int(h[136:148].rstrip(b"\0 ").strip() or b"0", 8)
            name = h[0:100].split(b"\0", 1)[0].decode()
            prefix = h[345:500].split(b"\0", 1)[0].decode()
            linkname = h[157:257].split(b"\0", 1)[0].decode()
        except (ValueError, UnicodeDecodeError):
            return None
        if prefix:
            name = f"{prefix}/{name}"
        start = pos + 512
        if flag == b"2":
            entries.append(Entry(_clean_path(name), target=linkname, mtime=float(mtime)))
            size = 0
        else:
            if start + size > n:
                raise ArchiveError("Truncated tar archive")
            entries.append(Entry(_clean_path(name), data=data[start:start + size], mtime=float(mtime)))
        pos = start + ((size + 511) & ~511)
        if pos > n:
            raise ArchiveError("Truncated tar archive")  # the padding is cut off
    if data[pos:].strip(b"\0"):
        raise ArchiveError("Truncated tar archive")
    return entries


def _parse_tar(data):
    fast = _parse_ustar(data)
    if fast is not None:
        return fast
    entries = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                if member.isdir():
                    continue
                if member.issym():
                    entries.append(Entry(_clean_path(member.name), target=member.linkname,
                                         mtime=float(member.mtime)))
                elif member.isreg():
                    f = tar.extractfile(member)
                    body = f.read()
                    if len(body) != member.size:
                        raise ArchiveError("Truncated tar archive")
                    entries.append(Entry(_clean_path(member.name), data=body, mtime=float(member.mtime)))
                else:
                    raise ArchiveError(f"{member.name}: unsupported archive entry type")
            # tarfile stops quietly at a header it cannot read; libarchive
            # calls a partial or damaged header after the members truncation
            rest = data[tar.offset:tar.offset + 512]
            if rest.strip(b"\0"):
                raise ArchiveError("Truncated tar archive")
    except tarfile.ReadError as exc:
        if "unexpected end" in str(exc) or "truncated" in str(exc).lower():
            raise ArchiveError("Truncated tar archive") from None
        raise ArchiveError(UNRECOGNIZED) from None
    except (tarfile.TarError, EOFError):
        raise ArchiveError("Truncated tar archive") from None
    return entries


def _parse_zip(data):
    import zipfile

    entries = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                body = zf.read(info)
                mode = info.external_attr >> 16
                mtime = _zip_time(info.date_time)
                if info.create_system == 3 and stat.S_ISLNK(mode):
                    entries.append(Entry(_clean_path(info.filename), target=body.decode("utf-8", "replace"),
                                         mtime=mtime))
                else:
                    entries.append(Entry(_clean_path(info.filename), data=body, mtime=mtime))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError):
        raise ArchiveError("Truncated or damaged zip archive") from None
    return entries


def _zip_time(date_time):
    import calendar

    try:
        return float(calendar.timegm(tuple(date_time) + (0, 0, 0)))
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _parse_cpio(data):
    entries = []
    pos = 0
    n = len(data)
    while True:
        magic = data[pos:pos + 6]
        if magic == b"070707":
            hdr = data[pos:pos + 76]
            if len(hdr) < 76:
                raise ArchiveError("Truncated cpio archive")
            try:
                mode = int(hdr[18:24], 8)
                mtime = int(hdr[48:59], 8)
                namesize = int(hdr[59:65], 8)
                filesize = int(hdr[65:76], 8)
            except ValueError:
                raise ArchiveError("Damaged cpio archive") from None
            name_start = pos + 76
            data_start = name_start + namesize
            align = 1
        elif magic in (b"070701", b"070702"):
            hdr = data[pos:pos + 110]
            if len(hdr) < 110:
                raise ArchiveError("Truncated cpio archive")
            try:
                fields = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
            except ValueError:
                raise ArchiveError("Damaged cpio archive") from None
            mode, mtime, filesize, namesize = fields[1], fields[5], fields[6], fields[11]
            name_start = pos + 110
            data_start = name_start + namesize
            data_start += (-data_start) % 4
            align = 4
        else:
            if not entries and pos == 0:
                raise ArchiveError(UNRECOGNIZED)
            raise ArchiveError("Truncated cpio archive")
        name = data[name_start:name_start + namesize].rstrip(b"\0").decode("utf-8", "replace")
        end = data_start + filesize
        if end > n:
            raise ArchiveError("Truncated cpio archive")
        if name == "TRAILER!!!":
            return entries
        body = data[data_start:end]
        pos = end + ((-end) % align)
        if stat.S_ISDIR(mode):
            continue
        if stat.S_ISLNK(mode):
            entries.append(Entry(_clean_path(name), target=body.decode("utf-8", "replace"), mtime=float(mtime)))
        elif stat.S_ISREG(mode):
            entries.append(Entry(_clean_path(name), data=body, mtime=float(mtime)))
        else:
            raise ArchiveError(f"{name}: unsupported archive entry type")
