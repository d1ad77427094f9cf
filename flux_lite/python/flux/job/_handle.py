"""What the job API's functions check of their arguments before a request."""

from __future__ import annotations

import errno
from typing import Any

from flux.core.handle import Flux
from flux.job.JobID import JobID


def check_handle(flux_handle: Any) -> Any:
    """A handle, or EINVAL as Flux's C API answers a NULL one."""
    if not isinstance(flux_handle, Flux):
        raise OSError(errno.EINVAL, "Invalid argument")
    return flux_handle


def jobid(value: Any) -> int:
    """A job id as an int: an int, a JobID or any encoding (ValueError if not)."""
    return int(JobID(value))
