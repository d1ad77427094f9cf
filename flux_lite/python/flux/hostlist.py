"""flux.hostlist: Flux's mutable Hostlist over flux-lite's RFC 29 hostlists.

The value is flux_lite.formats.hostlist.Hostlist (immutable); a Hostlist here
holds one and replaces it on every change, so decoding, encoding and the
merging of ranges are the library's (libhostlist's rules).
"""

from __future__ import annotations

import errno
import numbers
import os
from collections.abc import Iterable
from typing import Any

from flux_lite.errors import HostlistError
from flux_lite.formats.hostlist import Hostlist as _Value
from flux_lite.formats.hostlist import _host_range

__all__ = ["Hostlist", "decode"]


def _not_found() -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))


def _value_of(arg: Any) -> _Value:
    """The library value of a Hostlist argument (str, Hostlist or iterable of str)."""
    if isinstance(arg, Hostlist):
        return arg._hl
    if isinstance(arg, str):
        try:
            return _Value.parse(arg)
        except HostlistError:
            raise ValueError(f"Invalid hostlist: '{arg}'") from None
    if isinstance(arg, Iterable):
        value = _Value()
        for hosts in arg:
            if not isinstance(hosts, str):
                raise TypeError(f"Hostlist(): expected string or Iterable, got {type(hosts)}")
            try:
                value = value + _Value.parse(hosts)
            except HostlistError:
                raise ValueError(f"Invalid hostlist: '{hosts}'") from None
        return value
    raise TypeError(f"Hostlist(): expected string or Iterable, got {type(arg)}")


def _sort_key(host: str) -> tuple:
    # libhostlist orders ranges by prefix (bytes), single hosts before
    # numbered ones of the same prefix, then by number
    prefix, lo, _, width = _host_range(host)
    return (prefix.encode("utf-8"), lo is not None, lo or 0, width)


class Hostlist:
    """An ordered list of host names with RFC 29 encoding (duplicates allowed)."""

    def __init__(self, arg: Any = "") -> None:
        self._hl = _value_of(arg)

    @classmethod
    def _of(cls, value: _Value) -> Hostlist:
        new = cls.__new__(cls)
        new._hl = value
        return new

    def __str__(self) -> str:
        return self._hl.encode()

    def __repr__(self) -> str:
        return f"Hostlist('{self}')"

    def __len__(self) -> int:
        return len(self._hl)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, numbers.Integral):
            n = len(self._hl)
            i = int(index) + n if index < 0 else int(index)
            if 0 <= i < n:
                return self._hl[i]
            raise IndexError("Hostlist index out of range")
        hosts = self._hl.expand()
        if isinstance(index, slice):
            return Hostlist._of(_Value.from_hosts(hosts[index]))
        if isinstance(index, Iterable):
            picked = []
            for n in index:
                if not isinstance(n, numbers.Integral):
                    raise TypeError(f"Invalid Hostlist index '{n}'")
                picked.append(self[n])
            return Hostlist._of(_Value.from_hosts(picked))
        raise TypeError("Hostlist index must be integer or slice")

    def __iter__(self):
        return iter(self._hl.expand())

    def __contains__(self, name: Any) -> bool:
        return name in self._hl

    def encode(self) -> str:
        """The RFC 29 encoding."""
        return self._hl.encode()

    def count(self) -> int:
        """Number of hosts."""
        return len(self._hl)

    def append(self, *args: Any) -> int:
        """Append hostlists (Hostlist, string or iterable of strings);
        returns the number of hosts added."""
        added = 0
        for arg in args:
            value = _value_of(arg)
            self._hl = self._hl + value
            added += len(value)
        return added

    def delete(self, hosts: Any) -> int:
        """Delete the first occurrence of each host of `hosts` (a hostlist);
        returns the number deleted."""
        hosts = _value_of(str(hosts))
        remaining = self._hl.expand()
        deleted = 0
        for host in hosts:
            try:
                remaining.remove(host)
            except ValueError:
                continue
            deleted += 1
        if deleted:
            self._hl = _Value.from_hosts(remaining)
        return deleted

    def sort(self) -> Hostlist:
        """Sort in place (by prefix, then number); returns self."""
        self._hl = _Value.from_hosts(sorted(self._hl.expand(), key=_sort_key))
        return self

    def uniq(self) -> Hostlist:
        """Sort and drop duplicate hosts in place; returns self."""
        self._hl = _Value.from_hosts(sorted(set(self._hl.expand()), key=_sort_key))
        return self

    def expand(self) -> list[str]:
        """The hosts as a list."""
        return self._hl.expand()

    def copy(self) -> Hostlist:
        return Hostlist._of(self._hl)

    def find(self, host: str) -> int:
        """Position of the first occurrence of host (FileNotFoundError if absent)."""
        if not isinstance(host, str):
            raise TypeError(f"Hostlist.find(): expected str, got {type(host)}")
        try:
            return self._hl.index(host)
        except HostlistError:
            raise _not_found() from None

    def index(self, hosts: Any, ignore_nomatch: bool = False) -> list[int]:
        """Positions of each host of `hosts`; FileNotFoundError naming the
        hosts not present unless ignore_nomatch."""
        ids = []
        missing = []
        for host in _value_of(hosts):
            try:
                ids.append(self._hl.index(host))
            except HostlistError:
                missing.append(host)
        if missing and not ignore_nomatch:
            suffix = "s" if len(missing) > 1 else ""
            raise FileNotFoundError(f"host{suffix} '{_Value.from_hosts(missing)}' not found")
        return ids


def decode(arg: Any) -> Hostlist:
    """A Hostlist from an RFC 29 string or an iterable of them."""
    return Hostlist(arg)
