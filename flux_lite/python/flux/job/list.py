"""flux.job.list: job listings (job-list.list, job-list.list-id)."""

from __future__ import annotations

import errno
import os
import pwd
from collections.abc import Iterable, Iterator
from typing import Any

from flux import constants
from flux.job._handle import check_handle
from flux.job.info import JobInfo
from flux.job.JobID import JobID
from flux.rpc import RPC


class JobListRPC(RPC):
    """A job-list.list request: get_jobs() is the list of job dicts."""

    def get_jobs(self) -> list[dict]:
        return list(self.get()["jobs"])

    def get_jobinfos(self) -> Iterator[JobInfo]:
        for job in self.get_jobs():
            yield JobInfo(job)


def job_list(flux_handle: Any, max_entries: int = 1000, attrs: Iterable[str] = ("all",), userid: int = os.getuid(),
             states: int = 0, results: int = 0, since: float = 0.0, name: str | None = None,
             queue: str | Iterable[str] | None = None, constraint: dict | None = None) -> JobListRPC:
    """Jobs of userid (FLUX_USERID_UNKNOWN: every user's) in job-list's order
    (pending, running, then inactive, newest first), at most max_entries
    (0: all), filtered by state and result bits, name, queue, an RFC 43
    constraint and (inactive jobs) since."""
    check_handle(flux_handle)
    terms: list = [] if constraint is None else [constraint]
    if userid != constants.FLUX_USERID_UNKNOWN:
        terms.append({"userid": [userid]})
    if name:
        terms.append({"name": [name]})
    if queue:
        if isinstance(queue, str):
            queue = [queue]
        if not isinstance(queue, Iterable):
            raise ValueError("queue parameter must be a string or iterable")
        terms.append({"queue": list(queue)})
    if states and results:
        terms.append({"or": [{"states": [states]}, {"results": [results]}]})
    elif states:
        terms.append({"states": [states]})
    elif results:
        terms.append({"results": [results]})
    payload = {"max_entries": int(max_entries), "attrs": list(attrs), "since": since,
               "constraint": {"and": terms}}
    return JobListRPC(flux_handle, "job-list.list", payload)


def job_list_inactive(flux_handle: Any, since: float = 0.0, max_entries: int = 1000,
                      attrs: Iterable[str] = ("all",), name: str | None = None,
                      queue: str | Iterable[str] | None = None, constraint: dict | None = None) -> JobListRPC:
    """Inactive jobs of every user, most recently inactive first."""
    return job_list(flux_handle, max_entries=max_entries, attrs=attrs, userid=constants.FLUX_USERID_UNKNOWN,
                    states=constants.FLUX_JOB_STATE_INACTIVE, since=since, name=name, queue=queue,
                    constraint=constraint)


class JobListIdRPC(RPC):
    """A job-list.list-id request: get_job() is the job's dict (ENOENT,
    FileNotFoundError, for no such job)."""

    jobid: Any = None

    def get_job(self) -> dict:
        return self.get()["job"]

    def get_jobinfo(self) -> JobInfo:
        return JobInfo(self.get_job())


def job_list_id(flux_handle: Any, jobid: Any, attrs: Iterable[str] = ("all",)) -> JobListIdRPC:
    check_handle(flux_handle)
    rpc = JobListIdRPC(flux_handle, "job-list.list-id", {"id": int(JobID(jobid)), "attrs": list(attrs)})
    rpc.jobid = jobid if isinstance(jobid, JobID) else JobID(jobid)
    return rpc


def get_job(flux_handle: Any, jobid: Any) -> dict | None:
    """Everything job-list knows of a job (JobInfo.to_dict(filtered=False)),
    or None when there is no such job."""
    try:
        info = job_list_id(flux_handle, jobid).get_jobinfo()
    except FileNotFoundError:
        return None
    return info.to_dict(filtered=False)


class JobListIdsFuture:
    """Several list-id requests as one listing: errors collects the failures."""

    def __init__(self) -> None:
        self.children: list[JobListIdRPC] = []
        self.errors: list[str] = []

    def push(self, child: JobListIdRPC) -> None:
        self.children.append(child)

    def wait_for(self, timeout: float = -1.0) -> JobListIdsFuture:
        return self

    def get_jobs(self) -> list[dict]:
        jobs = []
        for child in self.children:
            try:
                jobs.append(child.get_job())
            except OSError as err:
                if err.errno == errno.ENOENT:
                    self.errors.append(f"JobID {child.jobid.orig} unknown")
                else:
                    self.errors.append(f"rpc: {err.strerror}")
        return jobs

    def get_jobinfos(self) -> list[JobInfo]:
        return [JobInfo(job) for job in self.get_jobs()]


class JobList:
    """A job query: the jobs of a user (default: the caller; "all": every
    user) filtered by states and results (filters: names such as "pending",
    "running", "inactive", "completed", "failed"...), or the jobs of ids."""

    STATES = {
        "depend": constants.FLUX_JOB_STATE_DEPEND,
        "priority": constants.FLUX_JOB_STATE_PRIORITY,
        "sched": constants.FLUX_JOB_STATE_SCHED,
        "run": constants.FLUX_JOB_STATE_RUN,
        "cleanup": constants.FLUX_JOB_STATE_CLEANUP,
        "inactive": constants.FLUX_JOB_STATE_INACTIVE,
        "pending": constants.FLUX_JOB_STATE_PENDING,
        "running": constants.FLUX_JOB_STATE_RUNNING,
        "active": constants.FLUX_JOB_STATE_ACTIVE,
    }
    RESULTS = {
        "completed": constants.FLUX_JOB_RESULT_COMPLETED,
        "failed": constants.FLUX_JOB_RESULT_FAILED,
        "canceled": constants.FLUX_JOB_RESULT_CANCELED,
        "timeout": constants.FLUX_JOB_RESULT_TIMEOUT,
    }

    def __init__(self, flux_handle: Any, attrs: Iterable[str] = ("all",), filters: Iterable[str] = (),
                 ids: Iterable[Any] = (), user: str | int | None = None, max_entries: int = 1000,
                 since: float = 0.0, name: str | None = None, queue: str | Iterable[str] | None = None,
                 constraint: dict | None = None) -> None:
        self.handle = flux_handle
        self.attrs = list(attrs)
        self.states = 0
        self.results = 0
        self.max_entries = max_entries
        self.since = since
        self.name = name
        self.queue = queue
        self.ids = [JobID(i) for i in ids] if ids else None
        self.errors: list[str] = []
        for fname in filters:
            for word in fname.split(","):
                self.add_filter(word)
        self.set_user(user)
        self.constraint = constraint

    def set_user(self, user: str | int | None) -> None:
        """Only jobs of user: a name, a userid, or "all"."""
        if user is None:
            self.userid = os.getuid()
        elif user == "all":
            self.userid = constants.FLUX_USERID_UNKNOWN
        elif isinstance(user, int):
            self.userid = user
        else:
            try:
                self.userid = pwd.getpwnam(user).pw_uid
            except KeyError:
                try:
                    self.userid = int(user)
                except ValueError:
                    raise ValueError(f"Invalid user {user} specified") from None

    def add_filter(self, fname: str) -> None:
        """A state or result filter (ValueError for an unknown name)."""
        fname = fname.lower()
        if fname in self.STATES:
            self.states |= self.STATES[fname]
        elif fname in self.RESULTS:
            self.results |= self.RESULTS[fname]
        else:
            raise ValueError(f"Invalid filter specified: {fname}")

    def fetch_jobs(self) -> JobListRPC | JobListIdsFuture:
        if self.ids:
            listids = JobListIdsFuture()
            for jobid in self.ids:
                listids.push(job_list_id(self.handle, jobid, self.attrs))
            return listids
        return job_list(self.handle, max_entries=self.max_entries, attrs=self.attrs, userid=self.userid,
                        states=self.states, results=self.results, since=self.since, name=self.name,
                        queue=self.queue, constraint=self.constraint)

    def jobs(self) -> list[JobInfo]:
        """The jobs, as JobInfo objects (failures of an id query: errors)."""
        rpc = self.fetch_jobs()
        jobs = rpc.get_jobs()
        if isinstance(rpc, JobListIdsFuture):
            self.errors = rpc.errors
        return [JobInfo(job) for job in jobs]
