"""Flux's job-info service: one job's records, to its owner and the instance owner.

`flux job eventlog`, `job info` and `job timeleft` read a job through here, so
the access rule (and Flux's words when it refuses) is the library's, not the
command's.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from flux_lite import access, watchers
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.formats.rset import Rset
from flux_lite.formats.taskmap import Taskmap
from flux_lite.job_manager import attach, emulate
from flux_lite.job_manager.exec import START_FAILED
from flux_lite.job_manager.job import CLEANUP, RUN
from flux_lite.job_manager.waiters import readable_eventlog
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
            text = _current_R(broker, jobid, job.R) if job.R else None
        else:
            raw = broker.kvs.get_raw(kvs_key(jobid, key))
            text = None if raw is None else raw[1]
            if text is not None and key == "J" and raw[0] == "json":
                text = sign_none(text, job.userid)
        if text is None:
            raise FluxLiteError(f"{key}: key not found", errno=errno.ENOENT)
        out[key] = text
    return out


def _current_R(broker: Any, jobid: int, R: dict) -> str:
    """The job's R with its updates: the job manager's copy, which drops
    the scheduler's ``scheduling`` key (as Flux's does), given it back from
    the stored R (job-info reads R from the KVS, then applies the updates)."""
    raw = broker.kvs.get_raw(kvs_key(jobid, "R"))
    if raw is not None and '"scheduling"' in raw[1] and "scheduling" not in R:
        try:
            stored = json.loads(raw[1])
        except ValueError:
            stored = None
        if isinstance(stored, dict) and "scheduling" in stored:
            R = dict(R, scheduling=stored["scheduling"])
    return json.dumps(R)


EXEC_EVENTLOG = "guest.exec.eventlog"


def exec_eventlog(broker: Any, job: Any, entries: list | None = None) -> list | None:
    """The job's exec eventlog (guest.exec.eventlog) as Flux's job-exec and
    job shell write it, or None before the job starts. flux-lite stores
    none: it is the job's start and finish seen from the exec system --
    init, starting, then (a job shell's) shell.init and shell.start with
    the task map, and complete (the wait status) and done once it finished;
    a job of the test execution mode has no job shell, and is recoverable.
    entries: the job's eventlog, when the caller has it."""
    if entries is None:
        entries = broker.kvs.get_eventlog(kvs_key(job.id, "eventlog")) or []
    start = next((e for e in entries if e["name"] == "start"), None)
    if start is None:
        return None
    finish = next((e for e in entries if e["name"] == "finish"), None)
    t = start["timestamp"]
    out = [eventlog.make_entry(t, "init"), eventlog.make_entry(t, "starting")]
    system = ((job.jobspec or {}).get("attributes") or {}).get("system") or {}
    exec_conf = system.get("exec")
    if isinstance(exec_conf, dict) and "test" in exec_conf:
        out.append(eventlog.make_entry(t, "recoverable"))
    else:
        tmap = job_taskmap(job)
        ranks = sorted(Rset.from_dict(job.R).ranks) if job.R else []
        userid = job.userid if isinstance(job.userid, int) else 0
        out.append(eventlog.make_entry(t, "shell.init", {
            "service": f"{userid}-shell-{f58(job.id)}", "leader-rank": ranks[0] if ranks else 0,
            "size": len(ranks)}))
        failed = next((e for e in entries if e["name"] == "exception"
                       and START_FAILED in str((e.get("context") or {}).get("note", ""))), None)
        if failed is not None:
            # a task could not start: the shell exits at once, without shell.start
            status = (finish or {}).get("context", {}).get("status", 0) if finish else 0
            out.append(eventlog.make_entry(failed["timestamp"], "shell-exit", {"rank": 0, "wait_status": status}))
        elif tmap is not None:
            out.append(eventlog.make_entry(t, "shell.start", {"taskmap": tmap.to_json()}))
    if finish is not None:
        status = (finish.get("context") or {}).get("status", 0)
        out.append(eventlog.make_entry(finish["timestamp"], "complete", {"status": status}))
        out.append(eventlog.make_entry(finish["timestamp"], "done"))
    return out


def watched(broker: Any, jobid: int, stop: str = "clean") -> list | None:
    """The job's eventlog up to its first `stop` event (all of it once the
    job is inactive without one), or None while it has not got there, as
    flux submit's --wait-event watches; ``exec.NAME`` is NAME in the exec
    eventlog (the job's eventlog is then given up to its start)."""
    if not stop.startswith("exec."):
        return attach.watched(broker, jobid, stop)
    entries = readable_eventlog(broker, jobid)
    if not entries:
        return None
    job = broker.jm.index.load_any(jobid)
    name = stop[len("exec."):]
    if job is not None and any(e["name"] == name for e in exec_eventlog(broker, job, entries) or ()):
        return next((entries[: i + 1] for i, e in enumerate(entries) if e["name"] == "start"), entries)
    return entries if entries[-1]["name"] == "clean" else None


def job_taskmap(job: Any) -> Taskmap | None:
    """The job's task map as its job shell lays the tasks out (the block
    map: each node's tasks numbered in turn), None without R."""
    if not job.R:
        return None
    tasks = emulate.task_layout(job.jobspec, job.R)
    if tasks is None:
        return None
    ranks = sorted({t.broker_rank for t in tasks})
    nodeid = {rank: i for i, rank in enumerate(ranks)}
    counts = [0] * len(ranks)
    for task in tasks:
        counts[nodeid[task.broker_rank]] += 1
    return Taskmap.from_counts(counts)


# flux job's short names of a job's eventlogs
EVENTLOG_PATHS = {"exec": "guest.exec.eventlog", "output": "guest.output", "input": "guest.input"}


def path_event_matcher(broker: Any, jobid: int, typed: str, path: str, name: str, match: str | None, count: int,
                       waitcreate: bool) -> Any:
    """As job-info's eventlog watch serves flux job wait-event -p PATH: the
    main eventlog ends at clean; a guest eventlog (guest.*) exists once the
    job has started, and ends with the job; any other eventlog under the
    job's directory never ends. None while waiting; (entries, entry) once
    found; the error text if it never can be."""
    main = readable_eventlog(broker, jobid)
    if main is None:
        return f"job {typed} not found"
    # the main eventlog ends at clean: what is appended after it is not seen
    end = next((i for i, e in enumerate(main) if e["name"] == "clean"), None)
    ended = end is not None
    if end is not None:
        main = main[: end + 1]
    if path == "eventlog":
        entries = main
    else:
        entries = broker.kvs.get_eventlog(kvs_key(jobid, path)) if _valid_path(path) else None
        if entries is None and path == EXEC_EVENTLOG:
            entries = exec_eventlog(broker, broker.jm.load_any(jobid), main)
    if entries is None:
        if path.startswith("guest."):
            started = any(e["name"] == "start" for e in main)
            if not started:
                # the guest namespace comes with the start: wait for it, or for the end
                return f"event '{name}' never received" if ended else None
            if waitcreate and not ended:
                return None
        elif waitcreate:
            return None
        return f"eventlog path {path} not found"
    seen = 0
    for i, entry in enumerate(entries):
        if entry["name"] == name and (match is None or eventlog.context_value_matches(
                entry.get("context") or {}, *match.split("=", 1))):
            seen += 1
            if seen == count:
                return entries[: i + 1], entry
    if ended and (path == "eventlog" or path.startswith("guest.")):
        return f"event '{name}' never received"
    return None


def _valid_path(path: str) -> bool:
    return bool(path) and not path.startswith(".") and not path.endswith(".") and ".." not in path


# -- module stats: the watches in progress (flux_lite.watchers) ---------------------

def _started(broker: Any, jobid: int) -> bool:
    """Whether a job's guest namespace exists: started, not yet inactive."""
    job = broker.jm.lookup(jobid)
    return job is not None and job.state in (RUN, CLEANUP)


def module_stats(broker: Any) -> dict:
    """job-info's `flux module stats`: its eventlog watches (guest_watchers:
    those of a guest.* path, which a pending job's also counts while it
    waits for the job to start)."""
    ws = [w for w in watchers.live(broker.instance.state_dir) if w.get("service") == "job-info"]
    # (an update watch is an eventlog watch of job-info's own as well, as in Flux)
    return {"lookups": 0, "watchers": len(ws), "guest_watchers": sum(1 for w in ws if w.get("guest")),
            "update_lookups": 0, "update_watchers": sum(1 for w in ws if w.get("update"))}


def kvs_watch_stats(broker: Any) -> dict:
    """kvs-watch's `flux module stats`: the namespaces watched and the
    watches of each. A job-info watch is one of kvs-watch too: of the
    primary namespace, or of the job's guest namespace once it exists.
    flux-lite's KVS has no root sequence: each namespace shows what Flux
    shows before it has seen a commit (rootseq -1, rootref "(null)")."""
    counts: dict[str, int] = {}
    for w in watchers.live(broker.instance.state_dir):
        if w.get("service") == "kvs-watch" and isinstance(w.get("namespace"), str):
            ns = w["namespace"]
        elif w.get("service") == "job-info" and isinstance(w.get("jobid"), int):
            ns = f"job-{w['jobid']}" if w.get("guest") and _started(broker, w["jobid"]) else "primary"
        else:
            continue
        counts[ns] = counts.get(ns, 0) + 1
    namespaces = {ns: {"owner": _namespace_owner(broker, ns), "rootseq": -1, "rootref": "(null)", "watchers": n}
                  for ns, n in counts.items()}
    return {"watchers": sum(counts.values()), "namespace-count": len(namespaces), "namespaces": namespaces}


def _namespace_owner(broker: Any, ns: str) -> int:
    """The user a watched namespace belongs to: the instance owner's
    primary, a job's guest namespace its owner's (-1 when unknown)."""
    if ns == "primary":
        return broker.instance.identity.owner
    job = broker.jm.load_any(int(ns[4:])) if ns.startswith("job-") and ns[4:].isdigit() else None
    userid = getattr(job, "userid", None)
    return userid if isinstance(userid, int) else -1
