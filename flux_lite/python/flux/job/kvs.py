"""flux.job.kvs: a job's KVS directories."""

from __future__ import annotations

from typing import Any

import flux.kvs
from flux.job._handle import jobid
from flux_lite.formats.jobid import kvs_key


def job_kvs(flux_handle: Any, jobid: Any) -> Any:
    """The job's KVS directory (flux.kvs.KVSDir)."""
    return flux.kvs.get_dir(flux_handle, kvs_key(_jobid(jobid)))


def job_kvs_guest(flux_handle: Any, jobid: Any) -> Any:
    """The job's guest directory (what its shell wrote: output, exec eventlog)."""
    return flux.kvs.get_dir(flux_handle, kvs_key(_jobid(jobid), "guest"))


_jobid = jobid
