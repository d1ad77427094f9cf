"""Flux's job-info service: one job's records, to its owner and the instance owner.

`flux job eventlog`, `job info` and `job timeleft` read a job through here, so
the access rule (and Flux's words when it refuses) is the library's, not the
command's.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.formats.signed import sign_none, unwrap_J


def lookup(broker: Any, jobid: int, not_found: str | None = None, denied: str | None = None) -> Any:
    """The job, or Flux's error: not_found / denied are the texts the asking
    command prints (each subcommand of flux job words them its own way)."""
    job = broker.jm.load_any(jobid)
    if job is None:
        raise FluxLiteError(not_found or f"job {f58(jobid)} not found", errno=errno.ENOENT)
    if denied is None:
        access.require_job_access(broker.instance.identity, job.userid)
    else:
        access.require_job_access(broker.instance.identity, job.userid, denied)
    return job


def lookup_keys(broker: Any, jobid: int, keys: list[str], current: bool = True, original: bool = False,
                not_found: str = "invalid job id") -> dict[str, str]:
    """job-info.lookup: the text of each of a job's keys, by key.

    current: jobspec and R with the job's updates applied (jobspec-update,
    resource-update events), as FLUX_JOB_LOOKUP_CURRENT asks; else as first
    stored. original: jobspec is the one submitted (J's payload, with its
    environment). J is signed as Flux stores it (mechanism none). A key the
    job does not have is ENOENT, "KEY: key not found" (job-info's words)."""
    job = lookup(broker, jobid, not_found=not_found)
    out: dict[str, str] = {}
    for key in keys:
        if key == "jobspec" and original:
            raw = broker.kvs.get_raw(kvs_key(jobid, "J"))
            text = unwrap_J(raw[1]) or raw[1] if raw is not None else None
        elif key == "jobspec" and current:
            text = json.dumps(job.jobspec)
        elif key == "R" and current:
            text = json.dumps(job.R) if job.R else None
        else:
            raw = broker.kvs.get_raw(kvs_key(jobid, key))
            text = None if raw is None else raw[1]
            if text is not None and key == "J" and raw[0] == "json":
                text = sign_none(text, job.userid)
        if text is None:
            raise FluxLiteError(f"{key}: key not found", errno=errno.ENOENT)
        out[key] = text
    return out
