"""flux.idset: Flux's mutable IDset over flux-lite's RFC 22 idsets.

The value is flux_lite.formats.idset.IDset (immutable ranges); an IDset here
holds one and replaces it on every change. Flags and errors are libidset's as
Flux's bindings show them.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from flux_lite.errors import IdsetError
from flux_lite.formats.idset import IDSET_MAX_ID
from flux_lite.formats.idset import IDset as _Value

__all__ = ["IDset", "decode", "IDSET_INVALID_ID", "IDSET_FLAG_RANGE", "IDSET_FLAG_BRACKETS"]

#: libidset's "no id" (UINT_MAX - 1): first/last of an empty set, next past the last
IDSET_INVALID_ID = 2**32 - 2
IDSET_FLAG_BRACKETS = 2
IDSET_FLAG_RANGE = 4


def _invalid(arg: Any) -> ValueError:
    return ValueError(f"IDset(): Invalid argument: {arg}")


def _value_of(arg: Any) -> _Value:
    """The library value of an IDset argument (IDset, idset string, int or iterable of ints)."""
    if isinstance(arg, IDset):
        return arg._ids
    if isinstance(arg, str):
        try:
            return _Value.parse(arg)
        except IdsetError:
            raise _invalid(arg) from None
    if isinstance(arg, numbers.Integral) and not isinstance(arg, bool):
        if arg < 0 or arg > IDSET_MAX_ID:
            raise _invalid(arg)
        return _Value((int(arg),))
    if isinstance(arg, Iterable):
        ids = list(arg)
        for i in ids:
            if not isinstance(i, numbers.Integral) or isinstance(i, bool):
                raise TypeError(f"IDset() expected an idset string or iterable of integers, got {type(i)}")
            if i < 0 or i > IDSET_MAX_ID:
                raise _invalid(",".join(str(n) for n in sorted(ids)))
        return _Value(int(i) for i in ids)
    raise TypeError(f"IDset() expected an idset string or iterable, got {type(arg)}")


def _check_index(i: Any, name: str) -> int:
    if not isinstance(i, numbers.Integral):
        raise TypeError(f"IDset.{name} supports integers, not {type(i)}")
    if i < 0:
        raise ValueError(f"negative index passed to IDset.{name}")
    if i > IDSET_MAX_ID:
        raise ValueError(f"index {i} passed to IDset.{name} is too large")
    return int(i)


class IDset:
    """A set of non-negative integers with RFC 22 encoding."""

    def __init__(self, arg: Any = "", flags: int = IDSET_FLAG_RANGE) -> None:
        self._ids = _value_of(arg)
        self.default_flags = flags

    @classmethod
    def _of(cls, value: _Value, flags: int = IDSET_FLAG_RANGE) -> IDset:
        new = cls.__new__(cls)
        new._ids = value
        new.default_flags = flags
        return new

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"IDset('{self.encode(flags=IDSET_FLAG_RANGE)}')"

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self):
        return iter(self._ids)

    def __contains__(self, i: Any) -> bool:
        return self.test(i)

    def __getitem__(self, i: Any) -> bool:
        return self.test(i)

    def __setitem__(self, i: Any, value: Any) -> None:
        if not isinstance(value, bool) and value in (0, 1):
            value = bool(value)
        if not isinstance(value, bool):
            raise TypeError(f"IDset setitem must be bool or 0,1 not {type(value)}")
        if value:
            self.set(i)
        else:
            self.clear(i)

    def __eq__(self, other: Any) -> bool:  # type: ignore[override]
        return self.equal(other)

    def __ne__(self, other: Any) -> bool:  # type: ignore[override]
        return not self.equal(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __add__(self, arg: Any) -> IDset:
        return self.union(arg)

    def __or__(self, arg: Any) -> IDset:
        return self.union(arg)

    def __sub__(self, arg: Any) -> IDset:
        return self.difference(arg)

    def __and__(self, arg: Any) -> IDset:
        return self.intersect(arg)

    def __iadd__(self, arg: Any) -> IDset:
        return self.add(arg)

    def __isub__(self, arg: Any) -> IDset:
        return self.subtract(arg)

    def equal(self, other: Any) -> bool:
        if not isinstance(other, IDset):
            raise TypeError(f"IDset.equal() expected an IDset, got {type(other)}")
        return self._ids == other._ids

    def set_flags(self, flags: int) -> None:
        """Default encoding flags: IDSET_FLAG_RANGE and/or IDSET_FLAG_BRACKETS."""
        self.default_flags = flags

    def test(self, i: Any) -> bool:
        """True if id i is in the set."""
        return _check_index(i, "test") in self._ids

    def set(self, start: Any, end: Any = None) -> IDset:
        """Add id start, or the ids start..end; returns self."""
        lo = _check_index(start, "set")
        hi = lo if end is None else _check_index(end, "set")
        if hi < lo:
            raise ValueError(f"can't set range with {start} > {end}")
        self._ids = self._ids | _Value.range(lo, hi)
        return self

    def clear(self, start: Any, end: Any = None) -> IDset:
        """Remove id start, or the ids start..end; returns self."""
        lo = _check_index(start, "clear")
        hi = lo if end is None else _check_index(end, "clear")
        if hi < lo:
            raise ValueError(f"can't set range with {start} > {end}")
        self._ids = self._ids - _Value.range(lo, hi)
        return self

    def expand(self) -> list[int]:
        return list(self._ids)

    def count(self) -> int:
        return len(self._ids)

    def copy(self) -> IDset:
        return IDset._of(self._ids, self.default_flags)

    def encode(self, flags: int | None = None) -> str:
        """The set as a string: ranges with IDSET_FLAG_RANGE, brackets
        around more than one id with IDSET_FLAG_BRACKETS."""
        if flags is None:
            flags = self.default_flags
        if flags & IDSET_FLAG_RANGE:
            text = str(self._ids)
        else:
            text = ",".join(str(i) for i in self._ids)
        if flags & IDSET_FLAG_BRACKETS and len(self._ids) > 1:
            return f"[{text}]"
        return text

    def first(self) -> int:
        """Smallest id, IDSET_INVALID_ID when empty."""
        first = self._ids.first()
        return IDSET_INVALID_ID if first is None else first

    def last(self) -> int:
        """Largest id, IDSET_INVALID_ID when empty."""
        last = self._ids.last()
        return IDSET_INVALID_ID if last is None else last

    def next(self, i: Any) -> int:
        """Smallest id greater than i, IDSET_INVALID_ID when none."""
        i = _check_index(i, "next")
        for lo, hi in self._ids.ranges():
            if hi > i:
                return max(lo, i + 1)
        return IDSET_INVALID_ID

    def add(self, arg: Any) -> IDset:
        """Add the ids of arg (IDset, string or iterable) in place; returns self."""
        self._ids = self._ids | _value_of(arg)
        return self

    def subtract(self, arg: Any) -> IDset:
        """Remove the ids of arg in place; returns self."""
        self._ids = self._ids - _value_of(arg)
        return self

    def union(self, *args: Any) -> IDset:
        result = self._ids
        for arg in args:
            result = result | _value_of(arg)
        return IDset._of(result)

    def intersect(self, *args: Any) -> IDset:
        result = self._ids
        for arg in args:
            result = result & _value_of(arg)
        return IDset._of(result)

    def difference(self, *args: Any) -> IDset:
        result = self._ids
        for arg in args:
            result = result - _value_of(arg)
        return IDset._of(result)


def decode(string: str) -> IDset:
    """An IDset from an idset string."""
    return IDset(string)
