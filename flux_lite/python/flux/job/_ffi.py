"""flux.job._ffi (flux.job.ffi): the one piece of Flux's cffi object scripts touch.

Flux's scripts and tests pass ``ffi.NULL`` where the C API takes a pointer
(a handle, a jobspec): flux-lite has no C layer, so NULL is a sentinel that
the handle API rejects with EINVAL, as Flux's C functions do.
"""

from __future__ import annotations


class _Null:
    """The NULL pointer: falsy, equal only to itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<cdata 'void *' NULL>"

    def __bool__(self) -> bool:
        return False


class FFI:
    """Flux's ``ffi`` as far as Python callers use it: ``ffi.NULL``."""

    NULL = _Null()


ffi = FFI()


def is_null(value: object) -> bool:
    """True for ``ffi.NULL`` (what the handle API rejects with EINVAL)."""
    return value is FFI.NULL
