"""flux.job.kill: signals (job-manager.kill), cancel and exceptions (job-manager.raise)."""

from __future__ import annotations

import signal
from typing import Any

from flux.job._handle import check_handle, jobid
from flux.rpc import RPC


def kill_async(flux_handle: Any, jobid: Any, signum: int | None = None) -> RPC:
    """Send a signal (default SIGTERM) to a running job."""
    check_handle(flux_handle)
    payload = {"id": _jobid(jobid), "signum": int(signum or signal.SIGTERM)}
    return RPC(flux_handle, "job-manager.kill", payload)


def kill(flux_handle: Any, jobid: Any, signum: int | None = None) -> Any:
    return kill_async(flux_handle, jobid, signum).get()


def job_raise_async(flux_handle: Any, jobid: Any, exc_type: str, severity: int = 0,
                    note: str | None = None) -> RPC:
    """Raise an exception of type exc_type on a job (severity 0 ends it)."""
    check_handle(flux_handle)
    payload = {"id": _jobid(jobid), "type": exc_type, "severity": severity, "note": note or ""}
    return RPC(flux_handle, "job-manager.raise", payload)


def job_raise(flux_handle: Any, jobid: Any, exc_type: str, severity: int = 0, note: str | None = None) -> Any:
    return job_raise_async(flux_handle, jobid, exc_type, severity, note).get()


def cancel_async(flux_handle: Any, jobid: Any, reason: str | None = None) -> RPC:
    """Cancel a pending or running job (a fatal "cancel" exception)."""
    return job_raise_async(flux_handle, jobid, "cancel", 0, reason)


def cancel(flux_handle: Any, jobid: Any, reason: str | None = None) -> Any:
    return cancel_async(flux_handle, jobid, reason).get()


# the short names scripts use (Flux's are job_raise, job_raise_async)
raise_ = job_raise
raise_async = job_raise_async
_jobid = jobid


def set_urgency_async(flux_handle: Any, jobid: Any, urgency: int) -> RPC:
    """Change a pending job's urgency (0-31; guests: their own jobs, up to 16)."""
    check_handle(flux_handle)
    return RPC(flux_handle, "job-manager.urgency", {"id": _jobid(jobid), "urgency": urgency})


def set_urgency(flux_handle: Any, jobid: Any, urgency: int) -> int:
    """Change a pending job's urgency; returns the urgency it had."""
    return set_urgency_async(flux_handle, jobid, urgency).get()["old_urgency"]
