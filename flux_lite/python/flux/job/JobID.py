"""flux.job.JobID: a job ID that is an int, made from any RFC 19 encoding.

The encodings are flux_lite.formats.jobid's (dec, hex, dothex, kvs, words,
f58, f58plain, emoji); this module gives them Flux's Python names and errors.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from flux_lite.errors import JobIDError
from flux_lite.formats import jobid as _jobid


def id_parse(jobid_str: str) -> int:
    """The integer job ID of any encoding; OSError(EINVAL) if it is none."""
    if not isinstance(jobid_str, str):
        raise TypeError(f"initializer for ctype 'char *' must be a str, not {type(jobid_str).__name__}")
    try:
        return int(_jobid.decode(jobid_str))
    except JobIDError:
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL)) from None


def id_encode(jobid: int, encoding: str = "f58") -> str:
    """``jobid`` in ``encoding``; OSError(EPROTO) for an unknown encoding."""
    try:
        return _jobid.encode(int(jobid), encoding)
    except JobIDError as exc:
        code = exc.errno or errno.EINVAL
        raise OSError(code, os.strerror(code)) from None


class JobID(int):
    """A Flux job ID: an int made from an int or any valid encoding.

    ``orig`` is the value it was made from, as a string; the properties give
    each encoding; ``str()`` is the F58 form, ``repr()`` ``JobID(<dec>)``.
    """

    orig_str: str

    def __new__(cls, value: Any) -> JobID:
        if isinstance(value, JobID):
            return cls(value.orig_str)
        if isinstance(value, int):
            jobid = value
        else:
            try:
                jobid = id_parse(value)
            except (OSError, TypeError):
                raise ValueError(f"{value} is not a valid Flux jobid") from None
        self = super().__new__(cls, jobid)
        self.orig_str = str(value)
        return self

    def encode(self, encoding: str = "dec") -> str:
        """This ID in another encoding."""
        return id_encode(self, encoding)

    @property
    def dec(self) -> str:
        return self.encode()

    @property
    def f58(self) -> str:
        return self.encode("f58")

    @property
    def f58plain(self) -> str:
        return self.encode("f58plain")

    @property
    def hex(self) -> str:
        return self.encode("hex")

    @property
    def dothex(self) -> str:
        return self.encode("dothex")

    @property
    def words(self) -> str:
        return self.encode("words")

    @property
    def emoji(self) -> str:
        return self.encode("emoji")

    @property
    def kvs(self) -> str:
        return self.encode("kvs")

    @property
    def orig(self) -> str:
        """The string this ID was made from."""
        return self.orig_str

    def __str__(self) -> str:
        return self.encode("f58")

    def __repr__(self) -> str:
        return f"JobID({self.dec})"
