"""job-info: a job's records and eventlogs, for those who may read them."""

from __future__ import annotations

import copy
import errno
import json
from collections.abc import Iterator
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats.eventlog import format_json
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.formats.jobspec import apply_updates
from flux_lite.instance import Instance
from flux_lite.job_info import EXEC_EVENTLOG, exec_eventlog, lookup_keys
from flux_lite.job_manager import waiters
from flux_lite.services.table import Payload, Service, field, service, wait_for

SERVICES: list[Service] = []

# job-info.lookup flags (Flux's FLUX_JOB_LOOKUP_*)
LOOKUP_JSON_DECODE = 1
LOOKUP_CURRENT = 2
# job-info.eventlog-watch flags (Flux's FLUX_JOB_EVENT_WATCH_*)
WATCH_WAITCREATE = 1
WATCH_INITIAL_SENTINEL = 2


@service(SERVICES, "job-info.lookup")
def lookup(instance: Instance, payload: Payload) -> Payload:
    """{id, KEY: value...}: each key's text (jobspec and R decoded with
    JSON_DECODE; with CURRENT, the job's updates applied to them)."""
    jobid = field(payload, "id", int)
    keys = field(payload, "keys", list)
    flags = field(payload, "flags", int, 0)
    if flags & ~(LOOKUP_JSON_DECODE | LOOKUP_CURRENT) or not all(isinstance(k, str) for k in keys):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    with instance.read_session() as broker:
        values = lookup_keys(broker, jobid, keys, current=bool(flags & LOOKUP_CURRENT))
    out: Payload = {"id": jobid}
    for key, text in values.items():
        out[key] = json.loads(text) if flags & LOOKUP_JSON_DECODE and key in ("jobspec", "R") else text
    return out


@service(SERVICES, "job-info.eventlog-watch", streaming=True)
def eventlog_watch(instance: Instance, payload: Payload) -> Iterator[Payload | None]:
    """A job's eventlog, entry by entry. The main eventlog ends (ENODATA)
    after `clean`; a guest eventlog (guest.output...) once the job is
    inactive and every entry was sent, at once if the job never ran. One
    the started job has not written is ENOENT: flux-lite runs no job shell,
    so guest.exec.eventlog never comes.

    Each entry not yet written is waited for as `flux job wait-event` waits:
    under a virtual clock, simulated time passes until it is posted."""
    jobid = field(payload, "id", int)
    path = field(payload, "path", str, "eventlog")
    flags = field(payload, "flags", int, 0)
    if flags & ~(WATCH_WAITCREATE | WATCH_INITIAL_SENTINEL):
        raise FluxLiteError("eventlog-watch request rejected with invalid flag", errno=errno.EPROTO)
    # INITIAL_SENTINEL: an empty response (None) once what is there is sent
    # (after the clean of a job that has ended too)
    sentinel = bool(flags & WATCH_INITIAL_SENTINEL)
    main = path == "eventlog"
    key = kvs_key(jobid, path)
    sent = 0
    while True:
        def more(broker: Any, sent: int = sent) -> Any:
            entries = waiters.readable_eventlog(broker, jobid)
            if entries is None:
                return f"job {f58(jobid)} not found"
            ended = bool(entries) and entries[-1]["name"] == "clean"
            if not main:
                started = any(e["name"] == "start" for e in entries)
                if path == EXEC_EVENTLOG:
                    entries = exec_eventlog(broker, broker.jm.load_any(jobid), entries)
                else:
                    entries = broker.kvs.get_eventlog(key)
                if entries is None:
                    # a job's shell writes its eventlogs when the job starts:
                    # one still missing then never comes (a job that never
                    # ran has none: its watch just ends)
                    return "unwritten" if started else [] if ended else None
            if len(entries) > sent:
                return entries[sent:]
            if not main and ended:
                return []  # the job is over: its guest eventlog has no more
            return None

        found = wait_for(instance, more, f"event {sent + 1} of the {path} of job {f58(jobid)} cannot arrive")
        if found == "unwritten":
            raise FluxLiteError(f"{path}: not written: flux-lite runs no job shell", errno=errno.ENOENT)
        if isinstance(found, str):
            raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
        if not found:
            return
        for entry in found:
            sent += 1
            yield {"event": format_json(entry) + "\n"}  # (an eventlog line, as job-info sends it)
            if main and entry["name"] == "clean":
                if sentinel:  # (still the first batch: what was there)
                    yield None
                return
        if sentinel:
            sentinel = False
            yield None


# the key an update watch follows -> the event that updates it
_UPDATE_EVENTS = {"R": "resource-update", "jobspec": "jobspec-update"}


def _updated(key: str, value: Any, context: Any) -> Any:
    """value (R or jobspec) after one update event's context, as job-info applies it."""
    if not isinstance(context, dict) or not isinstance(value, dict):
        return value
    if key == "jobspec":
        return apply_updates(value, context)
    value = copy.deepcopy(value)
    if "expiration" in context:
        value.setdefault("execution", {})["expiration"] = context["expiration"]
    return value


@service(SERVICES, "job-info.update-lookup")
def update_lookup(instance: Instance, payload: Payload) -> Payload:
    """{id, key: "R", flags: 0} -> {id, R}: R with its updates (job-info's
    older request; update-watch is the newer)."""
    jobid = field(payload, "id", int)
    key = field(payload, "key", str)
    if field(payload, "flags", int):
        raise FluxLiteError("update-lookup request rejected with invalid flag", errno=errno.EPROTO)
    if key != "R":
        raise FluxLiteError("update-lookup unsupported key specified", errno=errno.EINVAL)
    with instance.read_session() as broker:
        values = lookup_keys(broker, jobid, [key], current=True)
    return {"id": jobid, key: json.loads(values[key])}


@service(SERVICES, "job-info.update-watch", streaming=True)
def update_watch(instance: Instance, payload: Payload) -> Iterator[Payload]:
    """{id, key: "R" or "jobspec", flags: 0} -> {KEY: value}, the value with
    its updates now, then again after each update event (resource-update,
    jobspec-update); the stream ends (ENODATA) once the job is clean. Each
    event is waited for as `flux job wait-event` waits."""
    jobid = field(payload, "id", int)
    key = field(payload, "key", str)
    if field(payload, "flags", int):
        raise FluxLiteError("update-watch request rejected with invalid flag", errno=errno.EPROTO)
    if key not in _UPDATE_EVENTS:
        raise FluxLiteError("update-watch unsupported key specified", errno=errno.EINVAL)
    event = _UPDATE_EVENTS[key]
    with instance.read_session() as broker:
        entries = waiters.readable_eventlog(broker, jobid)
        if entries is None:
            raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
        value = json.loads(lookup_keys(broker, jobid, [key], current=True)[key])
    seen = sum(1 for e in entries if e["name"] == event)
    yield {key: value}
    if entries[-1]["name"] == "clean":
        return
    while True:
        def more(broker: Any, seen: int = seen) -> Any:
            entries = waiters.readable_eventlog(broker, jobid) or []
            updates = [e for e in entries if e["name"] == event]
            if len(updates) > seen:
                return updates[seen:]
            return "clean" if entries and entries[-1]["name"] == "clean" else None

        found = wait_for(instance, more, f"update {seen + 1} of the {key} of job {f58(jobid)} cannot arrive",
                         watches=[{"service": "job-info", "jobid": jobid, "guest": False, "update": True}])
        if found == "clean":
            return
        for entry in found:
            seen += 1
            value = _updated(key, value, entry.get("context"))
            yield {key: value}
