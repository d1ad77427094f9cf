"""job-list: job listings by request (flux.job.job_list, JobList, JobStats)."""

from __future__ import annotations

import errno
from collections.abc import Iterator

from flux_lite import job_list
from flux_lite.errors import FluxLiteError
from flux_lite.instance import Instance
from flux_lite.job_manager import stats
from flux_lite.job_manager.job import INACTIVE
from flux_lite.services.table import Payload, Service, field, service, streamed

SERVICES: list[Service] = []

_NUMBER = (int, float)


def _attrs(payload: Payload) -> list:
    attrs = field(payload, "attrs", list)
    if not all(isinstance(a, str) for a in attrs):
        raise FluxLiteError("attrs must be an array of strings", errno=errno.EPROTO)
    return attrs


def _legacy_constraint(payload: Payload) -> dict | None:
    """The constraint of the older request (userid, states and results, all
    three, and name and queue if given), as job-list builds it: every term
    must hold (a zero states or results, or an unknown userid, is no term);
    None when the request is not of that form."""
    values: list[int] = []
    for key in ("userid", "states", "results"):
        value = payload.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        values.append(value)
    name, queue = payload.get("name"), payload.get("queue")
    if name is not None and not isinstance(name, str) or queue is not None and not isinstance(queue, str):
        return None
    userid, states, results = values
    terms: list = []
    if userid & 0xFFFFFFFF != job_list.USERID_UNKNOWN:
        terms.append({"userid": [userid & 0xFFFFFFFF]})
    if name is not None:
        terms.append({"name": [name]})
    if queue is not None:
        terms.append({"queue": [queue]})
    if states:
        terms.append({"states": [states]})
    if results:
        terms.append({"results": [results]})
    return {"and": terms}


@service(SERVICES, "job-list.list")
def list_(instance: Instance, payload: Payload) -> Payload:
    """{max_entries, attrs, since?, constraint?} -> {jobs}. The older
    request's userid, states and results are read too (a constraint of them)."""
    max_entries = field(payload, "max_entries", int)
    attrs = _attrs(payload)
    since = float(field(payload, "since", _NUMBER, 0.0))
    constraint = payload.get("constraint")
    if constraint is None:
        constraint = _legacy_constraint(payload)
    with instance.read_session() as broker:
        jobs = job_list.list_jobs(broker, attrs, max_entries, since, constraint)
    return {"jobs": jobs}


@streamed(SERVICES, "job-list.list")
def list_stream(instance: Instance, payload: Payload) -> Iterator[Payload]:
    """A streaming job-list.list: the same jobs, one a response, the first
    with the listing's version (1); the stream then ends."""
    jobs = list_(instance, payload)["jobs"]
    for i, job in enumerate(jobs):
        yield {"jobs": [job], "version": 1} if i == 0 else {"jobs": [job]}


@service(SERVICES, "job-list.list-inactive")
def list_inactive(instance: Instance, payload: Payload) -> Payload:
    """{max_entries, since, attrs, name?} -> {jobs}: inactive jobs, newest first."""
    terms: list = [{"states": [INACTIVE]}]
    name = payload.get("name")
    if isinstance(name, str):
        terms.append({"name": [name]})
    with instance.read_session() as broker:
        jobs = job_list.list_jobs(broker, _attrs(payload), field(payload, "max_entries", int),
                                  float(field(payload, "since", _NUMBER, 0.0)), {"and": terms})
    return {"jobs": jobs}


@service(SERVICES, "job-list.list-id")
def list_id(instance: Instance, payload: Payload) -> Payload:
    """{id, attrs} -> {job}."""
    jobid = field(payload, "id", int)
    attrs = _attrs(payload)
    with instance.read_session() as broker:
        return {"job": job_list.list_id(broker, jobid, attrs)}


@service(SERVICES, "job-list.list-attrs")
def list_attrs(instance: Instance, payload: Payload) -> Payload:
    return {"attrs": [*job_list.ATTRS, "all"]}


@service(SERVICES, "job-list.job-stats")
def job_stats(instance: Instance, payload: Payload) -> Payload:
    with instance.read_session() as broker:
        return stats.job_stats(broker, queues=True)  # (job-list's answer has its queues)


@service(SERVICES, "job-list.job-state-pause")
def job_state_pause(instance: Instance, payload: Payload) -> None:
    """The owner's test hook: jobs submitted from now on go unseen by
    job-list (`flux job list-ids` waits for them) until the unpause. The
    response has no payload, as job-list's."""
    with instance.read_session() as broker:
        job_list.pause_state_updates(broker)


@service(SERVICES, "job-list.job-state-unpause")
def job_state_unpause(instance: Instance, payload: Payload) -> None:
    with instance.read_session() as broker:
        job_list.unpause_state_updates(broker)
