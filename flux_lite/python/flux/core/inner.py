"""flux.core.inner: what scripts call through Flux's cffi bindings (`ffi`,
`raw`) that needs no broker: libjob's names of job states and results
(flux_job_statetostr, flux_job_strtostate, flux_job_resulttostr,
flux_job_strtoresult), as flux-core's test helper job-conv.py uses them.

flux-lite has no libflux: `ffi.new` makes the one-cell arrays those calls
fill, and any other `raw` function is an AttributeError that says so.
"""

from __future__ import annotations

import errno
import re
from typing import Any

from flux import constants as _c

# (number, long name, short name), as libjob's tables; fmt "L"/"l" long, "S"/"s" short
_STATES = ((_c.FLUX_JOB_STATE_NEW, "NEW", "N"), (_c.FLUX_JOB_STATE_DEPEND, "DEPEND", "D"),
           (_c.FLUX_JOB_STATE_PRIORITY, "PRIORITY", "P"), (_c.FLUX_JOB_STATE_SCHED, "SCHED", "S"),
           (_c.FLUX_JOB_STATE_RUN, "RUN", "R"), (_c.FLUX_JOB_STATE_CLEANUP, "CLEANUP", "C"),
           (_c.FLUX_JOB_STATE_INACTIVE, "INACTIVE", "I"), (_c.FLUX_JOB_STATE_PENDING, "PENDING", "PD"),
           (_c.FLUX_JOB_STATE_RUNNING, "RUNNING", "RU"), (_c.FLUX_JOB_STATE_ACTIVE, "ACTIVE", "A"))
_RESULTS = ((_c.FLUX_JOB_RESULT_COMPLETED, "COMPLETED", "CD"), (_c.FLUX_JOB_RESULT_FAILED, "FAILED", "F"),
            (_c.FLUX_JOB_RESULT_CANCELED, "CANCELED", "CA"), (_c.FLUX_JOB_RESULT_TIMEOUT, "TIMEOUT", "TO"))
_UNKNOWN = (0, "(unknown)", "?")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _name(table: tuple, num: int, fmt: Any) -> bytes:
    entry = next((e for e in table if e[0] == num), _UNKNOWN)
    f = _text(fmt or "L")[:1]
    name = entry[2] if f in ("S", "s") else entry[1]
    return (name.lower() if f in ("s", "l") else name).encode()


def _number(table: tuple, s: Any, out: Any) -> int:
    text = _text(s)
    for num, long_name, short_name in table:
        if text in (long_name, long_name.lower(), short_name, short_name.lower()):
            if out is not None:
                out[0] = num
            return 0
    raise OSError(errno.EINVAL, "Invalid argument")


class _FFI:
    def new(self, ctype: str, init: Any = None) -> list:
        """A zeroed array of the C type `T [N]` (what the calls fill)."""
        m = re.fullmatch(r"\s*[\w ]+?\s*\[\s*(\d+)\s*\]\s*", ctype)
        if m is None:
            raise TypeError(f"flux-lite's ffi makes arrays only, not {ctype!r}")
        return [0] * int(m.group(1))

    def string(self, value: Any) -> bytes:
        return value if isinstance(value, bytes) else str(value).encode()


class _Raw:
    def flux_job_statetostr(self, state: int, fmt: Any) -> bytes:
        return _name(_STATES, state, fmt)

    def flux_job_strtostate(self, s: Any, state: Any) -> int:
        return _number(_STATES, s, state)

    def flux_job_resulttostr(self, result: int, fmt: Any) -> bytes:
        return _name(_RESULTS, result, fmt)

    def flux_job_strtoresult(self, s: Any, result: Any) -> int:
        return _number(_RESULTS, s, result)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"flux.core.inner.raw.{name}: flux-lite has no libflux "
                             "(it has libjob's state and result names only)")


ffi = _FFI()
raw = _Raw()
