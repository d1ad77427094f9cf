"""Flux's job-info service: one job's records, to its owner and the instance owner.

`flux job eventlog`, `job info` and `job timeleft` read a job through here, so
the access rule (and Flux's words when it refuses) is the library's, not the
command's.
"""

from __future__ import annotations

from typing import Any

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58


def lookup(broker: Any, jobid: int, not_found: str | None = None, denied: str | None = None) -> Any:
    """The job, or Flux's error: not_found / denied are the texts the asking
    command prints (each subcommand of flux job words them its own way)."""
    job = broker.jm.load_any(jobid)
    if job is None:
        raise FluxLiteError(not_found or f"job {f58(jobid)} not found")
    if denied is None:
        access.require_job_access(broker.instance.identity, job.userid)
    else:
        access.require_job_access(broker.instance.identity, job.userid, denied)
    return job
