"""RFC 29 hostlists: ordered lists of host names with a compressed encoding.

The model follows flux-core's libhostlist: a hostlist is a list of *host
ranges*, each either ``prefix`` + a run of numbers ``lo..hi`` printed with a
zero-padding ``width``, or a single host without a numeric part.  Appending a
range merges it into the previous one only when the prefix matches and the
numbers continue it (``hi + 1 == lo``); encoding puts adjacent numeric ranges
with the same prefix into one bracket list.  So ``foo[1,1,2,1]`` stays
``foo[1,1-2,1]``, ``vm,vm,vm,vm`` stays as is, and hosts produced from an
expression with a suffix (``foo[0-4]-eth2``) are kept as single hosts and
printed one by one, exactly like libhostlist.

Deviations from libhostlist (all stricter): a range with an empty upper bound
(``foo[1-]``), brackets after the closing one (``a[1]-[2]``), ``]`` in a
prefix, and spaces or signs inside brackets are rejected.
"""

from __future__ import annotations

import re
from functools import lru_cache

from flux_lite.errors import HostlistError
from flux_lite.formats.idset import IDset

__all__ = ["Hostlist"]

_MAX_RANGE = 1 << 20  # hosts per lo-hi range (libhostlist MAX_RANGE)
_MAX_RANGES = 10240  # ranges per bracket list (libhostlist MAX_RANGES)
_SEPARATORS = re.compile(r"[\t, ]+")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_TRAILING_DIGITS = re.compile(r"[0-9]+\Z")
_INVALID_HOST_CHARS = re.compile(r"[\[\],\t ]")


def _zero_padded(num, width):
    return max(width - len(str(num)), 0)


def _width_equiv(n, wn, m, wm):
    """libhostlist width_equiv(): return (ok, wn, wm) with adjusted widths."""
    npad = _zero_padded(n, wn)
    nmpad = _zero_padded(n, wm)
    mpad = _zero_padded(m, wm)
    mnpad = _zero_padded(m, wn)
    if npad != nmpad and mpad != mnpad:
        return False, wn, wm
    if npad != nmpad:
        return True, wn, wn
    return True, wm, wm


# A range is a tuple (prefix, lo, hi, width); a single host is (name, None, None, 0).


def _append_range(ranges, rng):
    """Append a range to the list, merging with the tail like libhostlist."""
    if ranges:
        tail = ranges[-1]
        if (
            tail[1] is not None
            and rng[1] is not None
            and tail[0] == rng[0]
            and tail[2] + 1 == rng[1]
        ):
            wn, wm = tail[3], rng[3]
            if wn == wm:  # equal widths always merge (the common case)
                ranges[-1] = (tail[0], tail[1], rng[2], wm)
                return
            # _width_equiv inlined: unpadded names of growing digit counts
            # (node9, node10, ...) come here once per host
            ln, lm = len(str(tail[1])), len(str(rng[1]))
            npad = wn - ln if wn > ln else 0
            nmpad = wm - ln if wm > ln else 0
            if npad == nmpad:
                ranges[-1] = (tail[0], tail[1], rng[2], wm)
                return
            mpad = wm - lm if wm > lm else 0
            mnpad = wn - lm if wn > lm else 0
            if mpad == mnpad:
                ranges[-1] = (tail[0], tail[1], rng[2], wn)
                return
    ranges.append(rng)


# valid host names seen by from_hosts -> their range (an instance's few
# names make every job's nodelist)
_HOST_RANGES: dict = {}


@lru_cache(maxsize=65536)
def _host_range(name):
    """Range for one host name without brackets (hostlist_append_host)."""
    m = _TRAILING_DIGITS.search(name)
    if m is None:
        return (name, None, None, 0)
    digits = m.group(0)
    num = int(digits)
    return (name[: m.start()], num, num, len(digits))


def _bad(text):
    return HostlistError(f"Invalid hostlist: '{text}'")


def _tokens(text):
    """Split on separators outside brackets (libhostlist next_tok)."""
    if "[" not in text:
        return [t for t in _SEPARATORS.split(text) if t]
    out = []
    level = 0
    start = None
    for i, c in enumerate(text):
        if level == 0 and c in "\t, ":
            if start is not None:
                out.append(text[start:i])
                start = None
            continue
        if start is None:
            start = i
        if c == "[":
            level += 1
        elif c == "]":
            level -= 1
    if start is not None:
        out.append(text[start:])
    return out


_SPECIAL = re.compile(r"[\[\],\t ]")


@lru_cache(maxsize=4096)
def _decode(text):
    """Decode an RFC 29 string into a tuple of ranges."""
    if text and _SPECIAL.search(text) is None:
        return (_host_range(text),)
    ranges = []
    for tok in _tokens(text):
        p = tok.find("[")
        if p < 0:
            if "]" in tok:
                raise _bad(text)
            _append_range(ranges, _host_range(tok))
            continue
        prefix = tok[:p]
        q = tok.find("]", p)
        if q < 0 or "]" in prefix:
            raise _bad(text)
        body = tok[p + 1 : q]
        suffix = tok[q + 1 :]
        if "[" in body or "[" in suffix or "]" in suffix:
            raise _bad(text)
        parts = body.split(",")
        if len(parts) > _MAX_RANGES:
            raise _bad(text)
        parsed = []
        for part in parts:
            m = _RANGE.fullmatch(part)
            if m is None:
                raise _bad(text)
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else int(m.group(2))
            if hi < lo or hi - lo + 1 > _MAX_RANGE:
                raise _bad(text)
            parsed.append((lo, hi, len(m.group(1))))
        if suffix:
            for lo, hi, width in parsed:
                for n in range(lo, hi + 1):
                    name = f"{prefix}{n:0{width}d}{suffix}"
                    _append_range(ranges, (name, None, None, 0))
        else:
            for lo, hi, width in parsed:
                _append_range(ranges, (prefix, lo, hi, width))
    return tuple(ranges)


def _encode(ranges):
    out = []
    i = 0
    n = len(ranges)
    while i < n:
        prefix, lo, hi, width = ranges[i]
        if lo is None:
            out.append(prefix)
            i += 1
            continue
        j = i + 1
        while j < n and ranges[j][1] is not None and ranges[j][0] == prefix:
            j += 1
        parts = []
        for _, rlo, rhi, rwidth in ranges[i:j]:
            if rlo == rhi:
                parts.append(f"{rlo:0{rwidth}d}")
            else:
                parts.append(f"{rlo:0{rwidth}d}-{rhi:0{rwidth}d}")
        if j - i > 1 or lo != hi:
            out.append(f"{prefix}[{','.join(parts)}]")
        else:
            out.append(prefix + parts[0])
        i = j
    return ",".join(out)


def _expand(ranges):
    hosts = []
    for prefix, lo, hi, width in ranges:
        if lo is None:
            hosts.append(prefix)
        elif width <= 1:
            hosts.extend([f"{prefix}{k}" for k in range(lo, hi + 1)])
        else:
            hosts.extend([f"{prefix}{k:0{width}d}" for k in range(lo, hi + 1)])
    return tuple(hosts)


class Hostlist:
    """Immutable ordered list of host names (duplicates allowed)."""

    __slots__ = ("_ranges", "_hosts", "_str", "_index")

    def __init__(self, hosts=()):
        if isinstance(hosts, Hostlist):
            ranges = hosts._ranges
        elif isinstance(hosts, str):
            ranges = _decode(hosts)
        else:
            acc = []
            for h in hosts:
                if not isinstance(h, str):
                    raise TypeError(
                        f"Hostlist(): expected string or Iterable, got {type(h)}"
                    )
                for rng in _decode(h):
                    _append_range(acc, rng)
            ranges = tuple(acc)
        self._ranges = ranges
        self._hosts = None
        self._str = None
        self._index = None

    @classmethod
    def parse(cls, text):
        """Decode an RFC 29 hostlist string; HostlistError if malformed."""
        if not isinstance(text, str):
            raise HostlistError(f"Invalid hostlist: '{text}'")
        return cls(text)

    @staticmethod
    def rank_prefix(names, ranks):
        """The prefix P when every name is P followed by its rank (no zero
        padding), so that the hostlist of any of them is P + the idset of
        their ranks in brackets (P + the rank for one): else None."""
        if not names:
            return None
        first = str(ranks[0])
        prefix = names[0][: -len(first)] if names[0].endswith(first) else ""
        if not prefix or prefix[-1].isdigit() or _INVALID_HOST_CHARS.search(prefix):
            return None
        if any(name != prefix + str(rank) for name, rank in zip(names, ranks)):
            return None
        return prefix

    @classmethod
    def from_hosts(cls, names):
        """Build from individual host names (each one host, no expressions)."""
        acc = []
        known = _HOST_RANGES
        for name in names:
            rng = known.get(name)
            if rng is None:
                if not name or _INVALID_HOST_CHARS.search(name):
                    raise HostlistError(f"invalid hostname: '{name}'")
                rng = _host_range(name)
                if len(known) >= 65536:
                    known.clear()
                known[name] = rng
            _append_range(acc, rng)
        self = object.__new__(cls)
        self._ranges = tuple(acc)
        self._hosts = None
        self._str = None
        self._index = None
        return self

    # -- encoding ----------------------------------------------------------

    def encode(self):
        s = self._str
        if s is None:
            s = self._str = _encode(self._ranges)
        return s

    def __str__(self):
        return self.encode()

    def __repr__(self):
        return f"Hostlist('{self.encode()}')"

    # -- sequence protocol -------------------------------------------------

    def _expanded(self):
        h = self._hosts
        if h is None:
            h = self._hosts = _expand(self._ranges)
        return h

    def expand(self):
        """The host names as a list."""
        return list(self._expanded())

    def __len__(self):
        n = 0
        for _, lo, hi, _w in self._ranges:
            n += 1 if lo is None else hi - lo + 1
        return n

    def count(self, host=None):
        """Number of hosts, or occurrences of `host` when given."""
        if host is None:
            return len(self)
        return self._expanded().count(host)

    def __iter__(self):
        return iter(self._expanded())

    def __getitem__(self, index):
        hosts = self._expanded()
        if isinstance(index, slice):
            return list(hosts[index])
        try:
            return hosts[index]
        except IndexError:
            raise IndexError("Hostlist index out of range") from None

    def __contains__(self, host):
        return host in self._host_index()

    def _host_index(self):
        idx = self._index
        if idx is None:
            idx = {}
            for i, h in enumerate(self._expanded()):
                idx.setdefault(h, []).append(i)
            self._index = idx
        return idx

    def index(self, host):
        """Position of the first occurrence of `host` (HostlistError if absent)."""
        positions = self._host_index().get(host)
        if not positions:
            raise HostlistError(f"{host} not found in hostlist")
        return positions[0]

    def ranks_of(self, hosts, strict=True):
        """IDset of all positions holding any of `hosts` (hostlist or names).

        With strict=True a host that is not present raises HostlistError.
        """
        if isinstance(hosts, str):
            hosts = Hostlist(hosts)
        idx = self._host_index()
        found = []
        for h in hosts:
            positions = idx.get(h)
            if positions is None:
                if strict:
                    raise HostlistError(f"{h} not found in hostlist")
                continue
            found.extend(positions)
        return IDset(found)

    def __eq__(self, other):
        if isinstance(other, Hostlist):
            return self._expanded() == other._expanded()
        return NotImplemented

    def __hash__(self):
        return hash(self._expanded())

    def __add__(self, other):
        if not isinstance(other, Hostlist):
            other = Hostlist(other)
        acc = list(self._ranges)
        for rng in other._ranges:
            _append_range(acc, rng)
        new = object.__new__(Hostlist)
        new._ranges = tuple(acc)
        new._hosts = None
        new._str = None
        new._index = None
        return new

    def __bool__(self):
        return bool(self._ranges)

    def __reduce__(self):
        return (Hostlist, (self.encode(),))

    def uniq(self):
        """New Hostlist without duplicates, keeping first occurrences."""
        return Hostlist.from_hosts(dict.fromkeys(self._expanded()))
