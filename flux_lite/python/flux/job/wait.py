"""flux.job.wait: waitable jobs (job-manager.wait) and any job's result."""

from __future__ import annotations

import errno
import json
from collections import namedtuple
from typing import Any

from flux import constants
from flux.future import Future
from flux.job._ffi import is_null
from flux.job._handle import check_handle, jobid
from flux.job.info import JobInfo
from flux.rpc import RPC

JobWaitResult = namedtuple("JobWaitResult", "jobid, success, errstr")


class JobWaitFuture(RPC):
    def get_status(self) -> JobWaitResult:
        """(jobid, success, errstr) of the job waited for."""
        return wait_get_status(self)


def wait_async(flux_handle: Any, jobid: Any = constants.FLUX_JOBID_ANY) -> JobWaitFuture:
    """Wait for a waitable job (any, by default) to end. Each job is waited
    for once; ECHILD when there is none (left) to wait for. Under a virtual
    clock, simulated time passes while waiting."""
    check_handle(flux_handle)
    target = constants.FLUX_JOBID_ANY if jobid == constants.FLUX_JOBID_ANY else _jobid(jobid)
    return JobWaitFuture(flux_handle, "job-manager.wait", {"id": target})


def wait_get_status(future: Any) -> JobWaitResult:
    if future is None or is_null(future):
        raise OSError(errno.EINVAL, "future must not be None/NULL")
    resp = future.get()
    return JobWaitResult(int(resp["id"]), bool(resp["success"]), resp.get("errstr", ""))


def wait(flux_handle: Any, jobid: Any = constants.FLUX_JOBID_ANY) -> JobWaitResult:
    """Wait for a waitable job to end: (jobid, success, errstr)."""
    return wait_async(flux_handle, jobid).get_status()


class JobResultFuture(Future):
    """A job's result, once it is inactive (flux_job_result's document)."""

    def get_dict(self) -> dict:
        return self.get()

    def get_info(self) -> JobInfo:
        return JobInfo(self.get_dict())


def result_async(flux_handle: Any, jobid: Any, flags: int = 0) -> JobResultFuture:
    """The result of any job (waitable or not, as often as asked), read from
    its eventlog once it ends; simulated time passes until then."""
    check_handle(flux_handle)
    target = _jobid(jobid)

    def fetch() -> dict:
        from flux_lite.job_manager.attach import result_doc

        stream = flux_handle._stream("job-info.eventlog-watch", {"id": target, "path": "eventlog"})
        return result_doc(target, [json.loads(r["event"]) for r in stream])

    return JobResultFuture(flux_handle, fetch)


def result(flux_handle: Any, jobid: Any, flags: int = 0) -> Any:
    """The job's result as a JobInfo (id, result, returncode, waitstatus, runtime...)."""
    return result_async(flux_handle, jobid, flags).get_info()


_jobid = jobid
