"""job-manager: the requests a script makes about its jobs (wait, raise,
kill, urgency, update), the job manager's stats and the resources it holds.

Each handler calls the library function the matching command calls
(`flux job wait`, `job raise` / `cancel`, `job kill`, `job urgency`,
`update`), so the checks, the permission rules and Flux's words are theirs.
"""

from __future__ import annotations

import errno
from typing import Any

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.job_manager import exec as exec_
from flux_lite.job_manager import joblist, update, wait
from flux_lite.services.table import Payload, Service, field, service, wait_for

SERVICES: list[Service] = []

# FLUX_JOBID_ANY: wait for any waitable job
JOBID_ANY = 0xFFFFFFFFFFFFFFFF


@service(SERVICES, "job-manager.wait", waits=True)
def job_wait(instance: Instance, payload: Payload) -> Payload:
    """A waitable job's end: {id, success, errstr} (each job is reaped once;
    ECHILD when there is nothing, or nothing more, to wait for)."""
    jobid = field(payload, "id", int)
    if jobid == JOBID_ANY:
        def check(broker: Any) -> Any:
            return wait.check_any(broker)
        what = "the waitable jobs"
    else:
        def check(broker: Any) -> Any:
            return wait.check_one(broker, jobid)
        what = "the job"
    jid, success, errstr = wait_for(instance, check, f"{what} cannot end")
    return {"id": jid, "success": success, "errstr": errstr}


@service(SERVICES, "job-manager.raise")
def job_raise(instance: Instance, payload: Payload) -> Payload:
    jobid = field(payload, "id", int)
    severity = field(payload, "severity", int)
    etype = field(payload, "type", str)
    note = payload.get("note")
    if note is not None and not isinstance(note, str):
        note = None
    with instance.session() as broker:
        broker.jm.request_raise(jobid, severity, etype, note)
    return {}


@service(SERVICES, "job-manager.kill")
def job_kill(instance: Instance, payload: Payload) -> Payload:
    jobid = field(payload, "id", int)
    signum = field(payload, "signum", int)
    with instance.session() as broker:
        exec_.request_kill(broker, jobid, signum)
    return {}


@service(SERVICES, "job-manager.urgency")
def job_urgency(instance: Instance, payload: Payload) -> Payload:
    """{old_urgency}: the urgency the job had."""
    jobid = field(payload, "id", int)
    urgency = field(payload, "urgency", int)
    with instance.session() as broker:
        old = broker.jm.set_urgency(jobid, urgency)
    return {"old_urgency": old}


@service(SERVICES, "job-manager.update")
def job_update(instance: Instance, payload: Payload) -> Payload:
    jobid = field(payload, "id", int)
    updates = field(payload, "updates", dict)
    with instance.session() as broker:
        update.update_job(broker, jobid, updates)
    return {}


@service(SERVICES, "job-manager.stats-get")
def stats_get(instance: Instance, payload: Payload) -> Payload:
    with instance.read_session() as broker:
        return broker.jm.stats()


@service(SERVICES, "job-manager.resource-status")
def resource_status(instance: Instance, payload: Payload) -> Payload:
    """{allocated: R}: what jobs and housekeeping hold (as `resource list`
    counts allocated, and Flux's job manager answers the resource module)."""
    with instance.read_session() as broker:
        R = broker.resources.allocated_rset().to_dict()
    # (a union of allocations has no times; an empty one names one empty hostlist, as librlist writes them)
    execution = R["execution"]
    execution["starttime"] = execution["expiration"] = 0.0
    if not execution.get("nodelist"):
        execution["nodelist"] = [""]
    return {"allocated": R}


@service(SERVICES, "job-exec.override")
def exec_override(instance: Instance, payload: Payload) -> Payload | None:
    """{event: start|finish, jobid, status?}: `flux job-exec-override`."""
    event = field(payload, "event", str)
    jobid = field(payload, "jobid", int)
    status = payload.get("status", 0)
    if not isinstance(status, int) or isinstance(status, bool):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    with instance.session() as broker:
        admin.job_exec_override(broker, jobid, event, status)
    return None


@service(SERVICES, "job-manager.list")
def job_list(instance: Instance, payload: Payload) -> Payload:
    """{max_entries} -> {jobs}: the job manager's jobs (flux-core's list-jobs test program)."""
    max_entries = field(payload, "max_entries", int)
    if max_entries < 0:
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    with instance.read_session() as broker:
        return {"jobs": joblist.list_jobs(broker, max_entries)}


@service(SERVICES, "job-manager.getattr")
def job_getattr(instance: Instance, payload: Payload) -> Payload:
    """{id, attrs: [jobspec, R, eventlog]} -> {ATTR: value}: a job's
    redacted jobspec, R and eventlog (its owner's and the instance owner's)."""
    jobid = field(payload, "id", int)
    attrs = field(payload, "attrs", list)
    with instance.read_session() as broker:
        return joblist.job_attrs(broker, jobid, attrs)
