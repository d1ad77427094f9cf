"""flux.job.timeleft: the time left to the job a process runs in."""

from __future__ import annotations

import errno
import math
import os
from typing import Any

from flux.core.handle import Flux
from flux.job.kvslookup import job_kvs_lookup


def timeleft(flux_handle: Any = None) -> float:
    """Seconds left before the expiration of the job this process runs in
    (FLUX_JOB_ID), on the instance's clock; inf when it has none. OSError
    outside a job (flux-lite runs no processes in its jobs, so only a
    script given FLUX_JOB_ID is in one)."""
    jobid = os.environ.get("FLUX_JOB_ID")
    if not jobid:
        raise OSError(errno.EINVAL, "not running in a Flux job (FLUX_JOB_ID is not set)")
    handle = flux_handle if flux_handle is not None else Flux()
    data = job_kvs_lookup(handle, jobid, keys=["R"])
    if data is None:
        raise OSError(errno.ENOENT, f"job {jobid} has no resources")
    expiration = data["R"]["execution"].get("expiration") or 0.0
    if not expiration:
        return math.inf
    return max(expiration - handle.instance.clock_now(), 0.0)
