"""RFC 22 idsets: immutable sets of non-negative integers.

An :class:`IDset` is stored as a sorted tuple of disjoint, non-adjacent
inclusive ranges ``((lo, hi), ...)``, so ``0-2147483646`` costs one tuple and
parsing or encoding never expands ranges.  Set operations merge ranges; for
small sets they go through Python int bitmasks, which is what the resource
pool uses internally as well (:meth:`IDset.as_mask`, :meth:`IDset.from_mask`).

Decoding follows flux-core's ``idset_decode`` strictly:
comma separated ids or ``lo-hi`` ranges in ascending order, optionally
wrapped in one pair of brackets, no leading zeros, ``hi > lo`` in ranges,
empty tokens skipped, ``""`` is the empty set.
"""

from __future__ import annotations

import operator
import re
from functools import lru_cache

from flux_lite.errors import IdsetError

__all__ = ["IDset", "IDSET_MAX_ID"]

#: Largest id flux-core accepts (universe size INT_MAX + 1).
IDSET_MAX_ID = 2**31 - 1

# Above this the bitmask fast path would allocate too much memory.
_MASK_LIMIT = 1 << 16

_TOKEN = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")
_ULONG_MAX = 2**64 - 1


def _mask_to_ranges(mask):
    """Split an int bitmask into a tuple of (lo, hi) runs (ascending)."""
    out = []
    while mask:
        low = mask & -mask
        run = mask & ~(mask + low)
        out.append((low.bit_length() - 1, run.bit_length() - 1))
        mask ^= run
    return tuple(out)


def _ranges_to_mask(ranges):
    mask = 0
    for lo, hi in ranges:
        mask |= (1 << (hi + 1)) - (1 << lo)
    return mask


def _normalize(ranges):
    """Sort and merge arbitrary (lo, hi) pairs into canonical form."""
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _check_id(i):
    if i < 0:
        raise IdsetError(f"invalid id {i}: ids must be non-negative")
    if i > IDSET_MAX_ID:
        raise IdsetError("set universe size would exceed maximum")


class IDset:
    """Immutable, hashable set of non-negative ints with RFC 22 encoding."""

    __slots__ = ("_r", "_n", "_s")

    def __init__(self, ids=()):
        if isinstance(ids, IDset):
            self._r, self._n, self._s = ids._r, ids._n, ids._s
            return
        if isinstance(ids, str):
            other = IDset.parse(ids)
            self._r, self._n, self._s = other._r, other._n, other._s
            return
        vals = sorted({operator.index(i) for i in ids})
        if vals:
            _check_id(vals[0])
            _check_id(vals[-1])
        out = []
        for v in vals:
            if out and v == out[-1][1] + 1:
                out[-1] = (out[-1][0], v)
            else:
                out.append((v, v))
        self._r = tuple(out)
        self._n = len(vals)
        self._s = None

    # -- constructors ------------------------------------------------------

    @classmethod
    def _make(cls, ranges, count=None):
        """Build from canonical ranges without validation."""
        self = object.__new__(cls)
        self._r = ranges
        if count is None:
            count = 0
            for lo, hi in ranges:
                count += hi - lo + 1
        self._n = count
        self._s = None
        return self

    @classmethod
    def parse(cls, text):
        """Decode an RFC 22 idset string; raise IdsetError when malformed."""
        if not isinstance(text, str):
            raise IdsetError(f"idset must be a string, not {type(text).__name__}")
        return _parse_cached(text)

    @classmethod
    def range(cls, lo, hi):
        """The ids lo..hi inclusive (empty when hi < lo)."""
        lo, hi = int(lo), int(hi)
        if hi < lo:
            return _EMPTY
        _check_id(lo)
        _check_id(hi)
        return cls._make(((lo, hi),), hi - lo + 1)

    @classmethod
    def from_ranges(cls, ranges):
        """Build from inclusive (lo, hi) pairs in any order (may overlap)."""
        pairs = []
        for lo, hi in ranges:
            lo, hi = int(lo), int(hi)
            if hi < lo:
                continue
            _check_id(lo)
            _check_id(hi)
            pairs.append((lo, hi))
        return cls._make(_normalize(pairs))

    @classmethod
    def from_mask(cls, mask):
        """Build from an int bitmask (bit i set means id i is a member)."""
        if mask < 0:
            raise IdsetError("bitmask must be non-negative")
        if not mask:
            return _EMPTY
        cached = _MASK_CACHE.get(mask)
        if cached is not None:
            return cached
        self = cls._make(_mask_to_ranges(mask), mask.bit_count())
        if len(_MASK_CACHE) > 4096:
            _MASK_CACHE.clear()
        _MASK_CACHE[mask] = self
        return self

    # -- encoding ----------------------------------------------------------

    def __str__(self):
        s = self._s
        if s is None:
            s = self._s = ",".join(
                str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self._r
            )
        return s

    def encode(self, brackets=True):
        """Ranged encoding; brackets only when there is more than one id."""
        s = str(self)
        if brackets and self._n > 1:
            return f"[{s}]"
        return s

    def __repr__(self):
        return f"IDset('{self}')"

    # -- container protocol ------------------------------------------------

    def __len__(self):
        return self._n

    def count(self):
        """Number of members (same as len)."""
        return self._n

    def __bool__(self):
        return self._n > 0

    def __iter__(self):
        for lo, hi in self._r:
            yield from range(lo, hi + 1)

    def __reversed__(self):
        for lo, hi in reversed(self._r):
            yield from range(hi, lo - 1, -1)

    def __contains__(self, i):
        r = self._r
        if not r or not isinstance(i, int):
            return False
        lo_i, hi_i = 0, len(r)
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            lo, hi = r[mid]
            if i < lo:
                hi_i = mid
            elif i > hi:
                lo_i = mid + 1
            else:
                return True
        return False

    def __eq__(self, other):
        if isinstance(other, IDset):
            return self._r == other._r
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, IDset):
            return self._r != other._r
        return NotImplemented

    def __hash__(self):
        return hash(self._r)

    def __reduce__(self):
        return (IDset.parse, (str(self),))

    def first(self):
        """Smallest member, or None when empty."""
        return self._r[0][0] if self._r else None

    def last(self):
        """Largest member, or None when empty."""
        return self._r[-1][1] if self._r else None

    def ranges(self):
        """The canonical tuple of inclusive (lo, hi) runs."""
        return self._r

    def to_list(self):
        return list(self)

    def first_n(self, n):
        """IDset of the n smallest members (all of them if n >= len)."""
        if n >= self._n:
            return self
        out = []
        left = n
        for lo, hi in self._r:
            if left <= 0:
                break
            size = hi - lo + 1
            if size <= left:
                out.append((lo, hi))
                left -= size
            else:
                out.append((lo, lo + left - 1))
                left = 0
        return IDset._make(tuple(out), max(n, 0))

    def as_mask(self):
        """Int bitmask of the members (only sensible for small ids)."""
        return _ranges_to_mask(self._r)

    # -- set operations ----------------------------------------------------

    def _small(self):
        r = self._r
        return not r or r[-1][1] < _MASK_LIMIT

    def __or__(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        if not other._n:
            return self
        if not self._n:
            return other
        if self._small() and other._small():
            return IDset.from_mask(
                _ranges_to_mask(self._r) | _ranges_to_mask(other._r)
            )
        return IDset._make(_normalize(self._r + other._r))

    __ror__ = __or__

    def __and__(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        if not self._n or not other._n:
            return _EMPTY
        if self._small() and other._small():
            return IDset.from_mask(
                _ranges_to_mask(self._r) & _ranges_to_mask(other._r)
            )
        a, b = self._r, other._r
        i = j = 0
        out = []
        while i < len(a) and j < len(b):
            lo = max(a[i][0], b[j][0])
            hi = min(a[i][1], b[j][1])
            if lo <= hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return IDset._make(tuple(out))

    __rand__ = __and__

    def __sub__(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        if not self._n or not other._n:
            return self
        if self._small() and other._small():
            a = _ranges_to_mask(self._r)
            return IDset.from_mask(a & ~_ranges_to_mask(other._r))
        out = []
        b = other._r
        j = 0
        for lo, hi in self._r:
            while j < len(b) and b[j][1] < lo:
                j += 1
            k = j
            cur = lo
            while k < len(b) and b[k][0] <= hi:
                if b[k][0] > cur:
                    out.append((cur, b[k][0] - 1))
                cur = max(cur, b[k][1] + 1)
                if cur > hi:
                    break
                k += 1
            if cur <= hi:
                out.append((cur, hi))
        return IDset._make(tuple(out))

    def __rsub__(self, other):
        return _coerce(other) - self

    def __xor__(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        return (self - other) | (other - self)

    __rxor__ = __xor__

    def union(self, *others):
        result = self
        for o in others:
            result = result | o
        return result

    def intersection(self, *others):
        result = self
        for o in others:
            result = result & o
        return result

    def difference(self, *others):
        result = self
        for o in others:
            result = result - o
        return result

    def symmetric_difference(self, other):
        return self ^ other

    def issubset(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        return self._n <= other._n and not (self - other)

    def issuperset(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        return other.issubset(self)

    def isdisjoint(self, other):
        if not isinstance(other, IDset):
            other = _coerce(other)
        return not (self & other)

    def __le__(self, other):
        if not isinstance(other, IDset):
            return NotImplemented
        return self.issubset(other)

    def __ge__(self, other):
        if not isinstance(other, IDset):
            return NotImplemented
        return other.issubset(self)

    def __lt__(self, other):
        if not isinstance(other, IDset):
            return NotImplemented
        return self._n < other._n and self.issubset(other)

    def __gt__(self, other):
        if not isinstance(other, IDset):
            return NotImplemented
        return other < self


def _coerce(other):
    if isinstance(other, IDset):
        return other
    if isinstance(other, (str, set, frozenset, list, tuple, range)):
        return IDset(other)
    raise TypeError(f"cannot combine IDset with {type(other).__name__}")


_EMPTY = IDset._make((), 0)
_MASK_CACHE: dict = {}


@lru_cache(maxsize=8192)
def _parse_cached(text):
    s = text
    if s.isdigit() and s.isascii() and (s[0] != "0" or len(s) == 1):
        # one id (an R_lite rank: a reload parses thousands), as below makes it
        n = int(s)
        if n <= IDSET_MAX_ID:
            return IDset._make(((n, n),), 1)
    if len(s) >= 2 and s[0] == "[" and s[-1] == "]":
        s = s[1:-1]
    if "[" in s or "]" in s:
        raise IdsetError("mismatched or nested brackets")
    out = []
    count = 0
    maxid = -1
    match = _TOKEN.fullmatch
    for tok in s.split(","):
        if not tok:
            continue
        m = match(tok)
        if m is None:
            raise IdsetError(f"error parsing range '{tok}'")
        lo = int(m.group(1))
        hi_s = m.group(2)
        hi = lo if hi_s is None else int(hi_s)
        if hi_s is not None and hi <= lo:
            raise IdsetError(f"error parsing range '{tok}'")
        if hi > _ULONG_MAX:
            raise IdsetError(f"error parsing range '{tok}'")
        if lo <= maxid:
            raise IdsetError(f"range '{tok}' is out of order")
        if out and lo == maxid + 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
        count += hi - lo + 1
        maxid = hi
    if maxid > IDSET_MAX_ID:
        raise IdsetError("set universe size would exceed maximum")
    if not out:
        return _EMPTY
    result = IDset._make(tuple(out), count)
    return result
