"""flux.job.kvslookup: a job's keys (job-info.lookup): jobspec, R, eventlog, J."""

from __future__ import annotations

import errno
import json
from collections.abc import Iterable
from typing import Any

from flux import constants
from flux.job._handle import check_handle
from flux.job.JobID import JobID
from flux.rpc import RPC
from flux_lite.formats.signed import unwrap_J


def _decode(data: dict) -> dict:
    for key in ("jobspec", "R"):
        if isinstance(data.get(key), str):
            try:
                data[key] = json.loads(data[key])
            except ValueError:
                pass  # left as it is, as Flux leaves what it cannot decode
    return data


class JobInfoLookupRPC(RPC):
    """A job-info.lookup request: get() has each key's text, get_decode()
    jobspec and R decoded."""

    jobid: Any = None

    def get_decode(self) -> dict:
        return _decode(dict(self.get()))


def job_info_lookup(flux_handle: Any, jobid: Any, keys: Iterable[str] = ("jobspec",),
                    flags: int = 0) -> JobInfoLookupRPC:
    """Look up keys of a job; flags: FLUX_JOB_LOOKUP_CURRENT (updates applied
    to jobspec and R), FLUX_JOB_LOOKUP_JSON_DECODE."""
    check_handle(flux_handle)
    rpc = JobInfoLookupRPC(flux_handle, "job-info.lookup", {"id": int(JobID(jobid)), "keys": list(keys),
                                                             "flags": flags})
    rpc.jobid = jobid if isinstance(jobid, JobID) else JobID(jobid)
    return rpc


def _lookup_keys(keys: list[str], original: bool) -> list[str]:
    # the original jobspec is J's payload
    keys = list(keys)
    if original and "jobspec" in keys:
        keys.remove("jobspec")
        if "J" not in keys:
            keys.append("J")
    return keys


def _finish(data: dict, decode: bool, keys: list[str], original: bool) -> dict:
    if original and "jobspec" in keys:
        data["jobspec"] = unwrap_J(data["J"]) or data["J"]
        if decode:
            _decode(data)
        if "J" not in keys:
            data.pop("J")
    return data


def job_kvs_lookup(flux_handle: Any, jobid: Any, keys: Iterable[str] = ("jobspec",), decode: bool = True,
                   original: bool = False, base: bool = False) -> dict | None:
    """A job's keys (None when there is no such job or key): jobspec and R
    as updated (base: as first stored), decoded; original: the jobspec as
    submitted."""
    keys = list(keys)
    flags = 0 if base else constants.FLUX_JOB_LOOKUP_CURRENT
    rpc = job_info_lookup(flux_handle, jobid, _lookup_keys(keys, original), flags)
    try:
        data = rpc.get_decode() if decode else dict(rpc.get())
    except FileNotFoundError:
        return None
    return _finish(data, decode, keys, original)


class JobKVSLookupFuture:
    """Several lookups: get() / get_decode() the answers, errors the failures."""

    def __init__(self) -> None:
        self.children: list[JobInfoLookupRPC] = []
        self.errors: list[str] = []

    def push(self, child: JobInfoLookupRPC) -> None:
        self.children.append(child)

    def wait_for(self, timeout: float = -1.0) -> JobKVSLookupFuture:
        return self

    def _get(self, decode: bool) -> list[dict]:
        out = []
        for child in self.children:
            try:
                out.append(child.get_decode() if decode else dict(child.get()))
            except OSError as err:
                if err.errno == errno.ENOENT:
                    self.errors.append(f"JobID {child.jobid.orig} unknown")
                else:
                    self.errors.append(f"rpc: {err.strerror}")
        return out

    def get(self) -> list[dict]:
        return self._get(False)

    def get_decode(self) -> list[dict]:
        return self._get(True)


class JobKVSLookup:
    """Keys of several jobs (see job_kvs_lookup); errors lists the failures."""

    def __init__(self, flux_handle: Any, ids: Iterable[Any] = (), keys: Iterable[str] = ("jobspec",),
                 decode: bool = True, original: bool = False, base: bool = False) -> None:
        self.handle = flux_handle
        self.keys = list(keys)
        self.keyslookup = _lookup_keys(self.keys, original)
        self.ids = [JobID(i) for i in ids] if ids else []
        self.decode = decode
        self.original = original
        self.base = base
        self.errors: list[str] = []

    def fetch_data(self) -> JobKVSLookupFuture:
        flags = 0 if self.base else constants.FLUX_JOB_LOOKUP_CURRENT
        future = JobKVSLookupFuture()
        for jobid in self.ids:
            future.push(job_info_lookup(self.handle, jobid, self.keyslookup, flags))
        return future

    def data(self) -> list[dict]:
        future = self.fetch_data()
        data = future.get_decode() if self.decode else future.get()
        self.errors = future.errors
        return [_finish(d, self.decode, self.keys, self.original) for d in data]
