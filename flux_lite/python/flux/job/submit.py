"""flux.job.submit: submit a jobspec (job-ingest.submit)."""

from __future__ import annotations

import errno
from typing import Any

from flux import constants
from flux.job._ffi import is_null
from flux.job._handle import check_handle
from flux.job.JobID import JobID
from flux.rpc import RPC


class SubmitFuture(RPC):
    """The response to a submission: ``get_id()`` is the new job's JobID."""

    def get_id(self) -> JobID:
        return submit_get_id(self)


def _jobspec_text(jobspec: Any) -> str:
    """A Jobspec, its JSON text (str or bytes) as Flux takes them; NULL is
    EINVAL, anything else TypeError."""
    if hasattr(jobspec, "dumps") and callable(jobspec.dumps):
        return jobspec.dumps()
    if isinstance(jobspec, bytes):
        return jobspec.decode("utf-8")
    if isinstance(jobspec, str):
        return jobspec
    if jobspec is None or is_null(jobspec):
        raise OSError(errno.EINVAL, "Invalid argument")
    raise TypeError(f"jobspec must be a Jobspec, str or bytes, not {type(jobspec).__name__}")


def submit_async(flux_handle: Any, jobspec: Any, urgency: int = constants.FLUX_JOB_URGENCY_DEFAULT,
                 waitable: bool = False, debug: bool = False, pre_signed: bool = False,
                 novalidate: bool = False) -> SubmitFuture:
    """Submit a job; the future's get_id() is its id. waitable (job.wait),
    urgency above the default and novalidate are the instance owner's.
    pre_signed: jobspec is J already (signed, mechanism none)."""
    check_handle(flux_handle)
    text = _jobspec_text(jobspec)
    if isinstance(urgency, bool) or not isinstance(urgency, int):
        raise TypeError("urgency must be an integer")
    flags = 0
    if waitable:
        flags |= constants.FLUX_JOB_WAITABLE
    if debug:
        flags |= constants.FLUX_JOB_DEBUG
    if novalidate:
        flags |= constants.FLUX_JOB_NOVALIDATE
    # J is sent as the jobspec itself unless signed already: job-ingest
    # takes either (flux-lite signs with mechanism none when it stores J)
    payload = {"J": text, "urgency": urgency, "flags": flags}
    return SubmitFuture(flux_handle, "job-ingest.submit", payload)


def submit_get_id(future: Any) -> JobID:
    """The job id of a submission's future (blocks until it is answered)."""
    if future is None or is_null(future) or not hasattr(future, "get"):
        raise OSError(errno.EINVAL, "future must not be None/NULL")
    return JobID(future.get()["id"])


def submit(flux_handle: Any, jobspec: Any, urgency: int = constants.FLUX_JOB_URGENCY_DEFAULT,
           waitable: bool = False, debug: bool = False, pre_signed: bool = False,
           novalidate: bool = False) -> JobID:
    """Submit a job and return its id."""
    return submit_async(flux_handle, jobspec, urgency, waitable, debug, pre_signed, novalidate).get_id()
