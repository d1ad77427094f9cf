"""flux.resource.ResourceCount: an RFC 14 count of a jobspec resource
(an integer, a range dict, an RFC 45 string or an idset), read by the same
parser as flux-lite's schedulers (flux_lite.sched.request)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flux.idset import IDset
from flux_lite.sched.request import Count, parse_count

__all__ = ["ResourceCount"]


class ResourceCount:
    """``min``, ``max`` (None: unbounded) and ``_values``, the valid counts of
    a stepped or idset count as an IDset (None for a plain range)."""

    __slots__ = ("min", "max", "_values")

    def __init__(self, mn: int, mx: int | None, values: IDset | None = None) -> None:
        self.min = mn
        self.max = mx
        self._values = values

    @classmethod
    def _of(cls, count: Count) -> ResourceCount:
        return cls(count.min, count.max, None if count.values is None else IDset(count.values))

    @classmethod
    def from_count_spec(cls, v: Any, default: int = 1) -> ResourceCount:
        """The count of a jobspec vertex's ``count`` value (ValueError when
        invalid); a value of another type is the fixed count default."""
        if isinstance(v, (int, dict, str)):
            return cls._of(parse_count(v))
        return cls(default, default)

    def scaled(self, factor: int) -> ResourceCount:
        """Every value times factor (self when factor is 1)."""
        if factor == 1:
            return self
        values = None if self._values is None else IDset(v * factor for v in self._values)
        return ResourceCount(self.min * factor, None if self.max is None else self.max * factor, values)

    def valid_counts(self, available: int) -> Iterator[int]:
        """The valid counts up to available, largest first."""
        cap = available if self.max is None else min(available, self.max)
        if cap < self.min:
            return
        if self._values is not None:
            for v in reversed(list(self._values)):
                if self.min <= v <= cap:
                    yield v
        else:
            yield from range(cap, self.min - 1, -1)

    def __repr__(self) -> str:
        if self._values is not None:
            return f"ResourceCount({self.min}, {self.max}, values={self._values!r})"
        return f"ResourceCount({self.min}, {self.max})"
