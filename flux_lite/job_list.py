"""job-list: the job records `flux-lite jobs` shows, read from the jobs index.

Records come in flux-core's job-list order (pending by priority, running by
start, inactive by end), filtered by user, state and result. What the listing
makes of them (columns, formats) is flux_lite.listing.jobs.
"""

from collections.abc import Callable
from pathlib import Path
from errno import EEXIST, EINVAL, ENOENT, ENOSYS, EPROTO

from flux_lite import access, watchers
from flux_lite.config import queue_of
from flux_lite.errors import FluxLiteError
from flux_lite.formats import when
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.job_manager import index
from flux_lite.job_manager.job import (
    ACTIVE,
    CANCELED,
    CLEANUP,
    COMPLETED,
    DEPEND,
    FAILED,
    INACTIVE,
    NEW,
    PENDING,
    PRIORITY,
    RUN,
    RUNNING,
    SCHED,
    TIMEOUT,
)

# `jobs -f` names: states, virtual states and results
FILTER_STATES = {
    "depend": DEPEND, "priority": PRIORITY, "sched": SCHED, "run": RUN, "cleanup": CLEANUP,
    "inactive": INACTIVE, "pending": PENDING, "running": RUNNING, "active": ACTIVE,
}
FILTER_RESULTS = {"completed": COMPLETED, "failed": FAILED, "canceled": CANCELED, "timeout": TIMEOUT}

DEFAULT_MAX = 1000
PROGRESS_EVERY = 500  # records between progress calls


def parse_filter(text):
    """`-f STATES`: comma list of states and results; returns (state mask, result mask)."""
    states = results = 0
    for word in filter(None, text.lower().split(",")):
        if word in FILTER_STATES:
            states |= FILTER_STATES[word]
        elif word in FILTER_RESULTS:
            results |= FILTER_RESULTS[word]
        else:
            raise FluxLiteError(f"Invalid filter specified: {word}")
    return states, results


def result_of(rec):
    """The job's result bit (COMPLETED, FAILED, CANCELED, TIMEOUT), None while active."""
    if rec["state"] != INACTIVE:
        return None
    if "result" in rec:  # a record made from job-list's object (record_from_attrs) states it
        return rec["result"]
    exc = rec.get("exception")
    fatal = exc is not None and exc["severity"] == 0
    if rec.get("finished") and rec.get("waitstatus") == 0 and not fatal:
        return COMPLETED
    if fatal and exc["type"] == "cancel":
        return CANCELED
    if fatal and exc["type"] == "timeout":
        return TIMEOUT
    return FAILED


# job-list's module state while it is removed (`flux module remove job-list`):
# its requests find no service until it is loaded again
MODULE_KEY = "job-list.module"


def module_loaded(broker) -> bool:
    """Whether the job-list module is loaded (it is unless removed)."""
    return broker.kvs.get(MODULE_KEY) is None


def require_service(broker, topic: str) -> None:
    """ENOSYS, in Flux's words, while the job-list module is removed."""
    if not module_loaded(broker):
        raise FluxLiteError(f"No service matching {topic} is registered", errno=ENOSYS)


def module_remove(broker, force: bool = False) -> None:
    """flux module remove job-list: listings fail until it is loaded again
    (the jobs are not touched: the module rebuilds its lists at load)."""
    if broker.kvs.get(MODULE_KEY) is not None:
        if force:
            return
        raise FluxLiteError("job-list: module is not loaded", errno=ENOENT)
    broker.kvs.put(MODULE_KEY, {"loaded": False})


def module_load(broker, args=()) -> None:
    """flux module load job-list (Flux's takes no arguments and ignores any)."""
    if broker.kvs.get(MODULE_KEY) is None:
        raise FluxLiteError("job-list: module is already loaded", errno=EEXIST)
    broker.kvs.delete(MODULE_KEY)


class _Rows(list):
    truncated = False


def query(broker, userid=None, states=PENDING | RUNNING, results=0, ids=None, max_entries=DEFAULT_MAX,
          name=None, since=0.0, queues=None, missing_ok=False,
          progress: Callable[[int, int], None] | None = None, include=None):
    """Job records in flux-core's job-list order (at most max_entries; the
    list's ``truncated`` says whether more matched).

    queues keeps only jobs of those queues (a set of names); name keeps only
    jobs of that name; since keeps only inactive jobs that became inactive
    after it (active jobs always pass), as job-list's do. An unknown id in
    ids raises, unless missing_ok: then the rows' ``missing`` lists them.

    progress(done, total), when given, is called at the start, every
    PROGRESS_EVERY records and at the end (total counted on the index; the
    name and queue filters may end the list early).
    """
    if ids:
        require_service(broker, "job-list.list-id")
        broker.flush()  # this command's own changes must be visible
        conn = broker.kvs.conn
        found = {}
        missing = []
        for jobid in ids:
            rec = index.listed_record(conn, jobid)
            if rec is None:
                missing.append(jobid)
                continue
            found[jobid] = rec
        if missing and missing_ok is False:
            raise FluxLiteError(f"JobID {f58(missing[0])} unknown")
        rows = _Rows(found[j] for j in ids if j in found)
        rows.missing = missing  # job-list answers each unknown id with an error
        return rows
    rows = _Rows()
    total = 0
    if progress is not None:
        broker.flush()
        total = index.listed_count(broker.kvs.conn, states, userid, since, results)
        total = min(total, max_entries) if max_entries else total
        progress(0, total)
    for rec in iter_rows(broker, userid=userid, states=states, results=results, name=name, since=since,
                         queues=queues, include=include):
        rows.append(rec)
        if max_entries and len(rows) > max_entries:
            break  # one more than asked: the output is truncated
        if progress is not None and len(rows) % PROGRESS_EVERY == 0:
            progress(min(len(rows), total), total)
    if max_entries and len(rows) > max_entries:
        rows = _Rows(rows[:max_entries])
        rows.truncated = True
    if progress is not None:
        progress(len(rows), len(rows))
    return rows


def iter_rows(broker, userid=None, states=PENDING | RUNNING, results=0, name=None, since=0.0, queues=None,
              include=None):
    """The records query() lists, one at a time: inactive jobs are decoded
    only as far as the caller reads (pgrep stops at its first matches).
    Each holds what a listing shows of the job (the index's listing column,
    index.listing_record), not the whole record."""
    require_service(broker, "job-list.list")
    broker.flush()  # this command's own changes must be visible
    conn = broker.kvs.conn
    active_mask = states & ACTIVE

    def decode(rows):
        return index.listing_records(conn, rows)
    columns = index.LISTING_SELECT
    for rec in index.active_records_ordered(conn, active_mask, userid, decode=decode, columns=columns):
        if name is not None and rec.get("name") != name:
            continue
        if queues is not None and _queue(rec) not in queues:
            continue
        if include is not None and not include(rec):
            continue
        yield rec
    if states & INACTIVE or results:
        # the index's result column: no need to decode the jobs left out
        only = results if results and not states & INACTIVE else 0
        for rec in index.inactive_records(conn, userid, since, results=only, decode=decode, columns=columns):
            if name is not None and rec.get("name") != name:
                continue
            if queues is not None and _queue(rec) not in queues:
                continue
            if include is not None and not include(rec):
                continue
            if results and not states & INACTIVE and not (result_of(rec) or 0) & results:
                continue
            yield rec


def _queue(rec):
    return queue_of(rec.get("jobspec"))


def parse_datetime(text: str, now: float) -> float:
    """A point in time as flux's parse_datetime takes it (see
    flux_lite.formats.when). ValueError if not."""
    return when.parse(text, now)


def parse_since(text: str, now: float) -> float:
    """`jobs --since=WHEN`: a datetime, or else seconds since the epoch; never
    in the future."""
    try:
        when = parse_datetime(text, now)
    except ValueError:
        try:
            when = float(text)
        except ValueError as exc:
            raise FluxLiteError(str(exc)) from None
    if when > now:
        raise FluxLiteError(f"--since={text} appears to be in the future")
    return when


# job-list's attributes ("all"), in the order its answers carry them
ATTRS = ("userid", "urgency", "priority", "t_submit", "t_depend", "t_priority", "t_sched", "t_run",
         "t_cleanup", "t_inactive", "state", "name", "cwd", "queue", "project", "bank", "ntasks", "ncores",
         "duration", "nnodes", "ranks", "nodelist", "success", "exception_occurred", "exception_type",
         "exception_severity", "exception_note", "result", "expiration", "annotations", "waitstatus",
         "dependencies")

# flux_job_strtostate's names (upper or lower case, long or short) and the
# virtual states flux-job adds (any case)
STATE_WORDS = {"new": 1, "depend": DEPEND, "priority": PRIORITY, "sched": SCHED, "run": RUN,
               "cleanup": CLEANUP, "inactive": INACTIVE, "pending": PENDING, "running": RUNNING,
               "active": ACTIVE, "n": 1, "d": DEPEND, "p": PRIORITY, "s": SCHED, "r": RUN, "c": CLEANUP,
               "i": INACTIVE, "pd": PENDING, "ru": RUNNING, "a": ACTIVE}


def parse_state(word: str) -> int | None:
    """A state name as flux_job_strtostate reads it (all upper or all lower
    case, long or short form): its mask, None if it is not one."""
    if word != word.lower() and word != word.upper():
        return None
    return STATE_WORDS.get(word.lower())


def job_attrs(rec: dict) -> dict:
    """A job as job-list answers a request for attributes "all": the id,
    then each attribute the job has (those not set yet left out), with
    job-list's values (ints for state and result, ranks as an idset in
    brackets). rec is a record of query() or iter_rows()."""
    get = rec.get
    state = rec["state"]
    inactive = state == INACTIVE
    system = ((get("jobspec") or {}).get("attributes") or {}).get("system") or {}
    out: dict = {"id": rec["id"], "userid": rec["userid"], "urgency": get("urgency")}
    # the times of states the job has reached (t_priority and t_sched: the first time)
    if get("t_sched") and get("priority") is not None:
        out["priority"] = rec["priority"]
    out["t_submit"] = float(rec["t_submit"])
    for key in ("t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive"):
        if get(key):
            out[key] = float(rec[key])
    out["state"] = state
    for key in ("name",):
        if isinstance(get(key), str):
            out[key] = rec[key]
    for key in ("cwd", "queue", "project", "bank"):
        if isinstance(system.get(key), str):
            out[key] = system[key]
    for key in ("ntasks", "ncores"):
        if type(get(key)) is int:
            out[key] = rec[key]
    duration = system.get("duration", 0)
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        out["duration"] = float(duration)
    if type(get("nnodes")) is int:
        out["nnodes"] = rec["nnodes"]
    if get("t_run") and get("ranks") not in (None, ""):
        ranks = str(rec["ranks"])
        out["ranks"] = f"[{ranks}]" if ("," in ranks or "-" in ranks) and not ranks.startswith("[") else ranks
    if get("t_run") and get("nodelist"):
        out["nodelist"] = rec["nodelist"]
    exc = get("exception")
    if inactive:
        result = result_of(rec)
        out["success"] = result == COMPLETED
        out["exception_occurred"] = exc is not None
        if exc is not None:
            out["exception_type"] = exc.get("type")
            out["exception_severity"] = exc.get("severity")
            if exc.get("note") is not None:
                out["exception_note"] = exc["note"]
        out["result"] = result
    if get("t_run"):
        expiration = ((get("R") or {}).get("execution") or {}).get("expiration")
        out["expiration"] = float(expiration or 0.0)
    if get("annotations"):
        out["annotations"] = rec["annotations"]
    if type(get("waitstatus")) is int:
        out["waitstatus"] = rec["waitstatus"]
    deps = get("dependencies")
    if deps or system.get("dependencies"):
        # job-list keeps the list once a dependency was added, empty when all are resolved
        out["dependencies"] = list(deps or ())
    return out


def record_from_attrs(obj) -> dict:
    """The record whose job_attrs() is obj, a job as job-list answers it
    (what `flux job list` prints, one per line, and `flux jobs --from-stdin`
    reads): the fields a listing computes from the jobspec (queue, duration,
    cwd...), R (expiration) and the exception go back where a record keeps
    them; the result is kept as stated, since an object need not carry what
    it was derived from (a job may complete on a signal). ValueError when obj
    is no job object."""
    if not isinstance(obj, dict):
        raise ValueError("job object is not a JSON object")
    for key, kind in (("id", int), ("state", int)):
        if type(obj.get(key)) is not kind:
            raise ValueError(f"job object has no integer {key}")
    rec = {key: value for key, value in obj.items()
           if key not in ("cwd", "queue", "project", "bank", "duration", "expiration", "success", "result")
           and not key.startswith("exception_")}
    rec.setdefault("userid", USERID_UNKNOWN)
    rec.setdefault("urgency", 16)
    rec.setdefault("t_submit", 0.0)
    system = {key: obj[key] for key in ("cwd", "queue", "project", "bank", "duration") if key in obj}
    rec["jobspec"] = {"attributes": {"system": system}}
    if obj.get("expiration"):
        rec["R"] = {"execution": {"expiration": obj["expiration"]}}
    if obj.get("exception_occurred"):
        rec["exception"] = {"type": obj.get("exception_type", ""), "severity": obj.get("exception_severity", 0),
                            "note": obj.get("exception_note", "")}
    rec["finished"] = type(obj.get("waitstatus")) is int
    if isinstance(rec.get("ranks"), str):
        rec["ranks"] = rec["ranks"].strip("[]")  # the listing brackets a set again
    if obj["state"] == INACTIVE:
        rec["result"] = obj.get("result") if type(obj.get("result")) is int else None
    return rec


# -- job-list.list / list-id as requests (flux.job.job_list) -------------------

USERID_UNKNOWN = 0xFFFFFFFF  # FLUX_USERID_UNKNOWN: every user
_TIMES = ("t_submit", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive")
_RESULT_BY_NAME = {name.lower(): bit for name, bit in (("COMPLETED", COMPLETED), ("FAILED", FAILED),
                                                       ("CANCELED", CANCELED), ("TIMEOUT", TIMEOUT))}


def bracketed_ranks(ranks) -> str:
    """job-list encodes a job's ranks as an idset in brackets when it has more
    than one (`[0-1]`, `[0,3]`), a single rank bare."""
    ranks = str(ranks)
    return f"[{ranks}]" if ("," in ranks or "-" in ranks) and not ranks.startswith("[") else ranks


def select_attrs(job: dict, attrs) -> dict:
    """job_attrs() of a request naming attrs: those, and the id always."""
    if attrs is None or "all" in attrs:
        return job
    return {key: value for key, value in job.items() if key == "id" or key in attrs}


def check_attrs(attrs) -> None:
    """job-list's refusal of an attribute it does not know (EINVAL)."""
    for attr in attrs:
        if attr != "all" and attr != "id" and attr not in ATTRS:
            raise FluxLiteError(f"{attr} is not a valid attribute", errno=EINVAL)


def _constraint_error(text):
    return FluxLiteError(text, errno=EPROTO)


def _values(op, args):
    if not isinstance(args, list):
        raise _constraint_error(f"{op} operator value must be an array")
    return args


def _state_mask(op, args, names):
    mask = 0
    for value in _values(op, args):
        if isinstance(value, int) and not isinstance(value, bool):
            mask |= value
        elif isinstance(value, str) and value.lower() in names:
            mask |= names[value.lower()]
        else:
            raise _constraint_error(f"{op} value invalid")
    return mask


def _time_test(op, args):
    tests = []
    for value in _values(op, args):
        if not isinstance(value, str):
            raise _constraint_error(f"{op} value must be a string")
        cmp = next((c for c in (">=", "<=", ">", "<") if value.startswith(c)), ">=")
        text = value[len(cmp):] if value.startswith(cmp) else value
        try:
            when = float(text)
        except ValueError:
            raise _constraint_error(f"invalid {op} value '{value}'") from None
        tests.append((cmp, when))
    compare = {">=": float.__ge__, "<=": float.__le__, ">": float.__gt__, "<": float.__lt__}

    def test(rec):
        t = float(rec.get(op) or 0.0)
        # an unset time matches nothing (the job has not got there)
        return bool(t) and all(compare[c](t, when) for c, when in tests)
    return test


def constraint_test(constraint) -> Callable[[dict], bool]:
    """A predicate on listing records for an RFC 31 constraint with
    job-list's operators (RFC 43): and, or, not, userid, name, queue,
    states, results, hostlist, ranks, t_submit... An unknown operator or a
    bad value is EPROTO, as job-list answers."""
    if not isinstance(constraint, dict):
        raise _constraint_error("constraint must be an object")
    tests = []
    for op, args in constraint.items():
        if op in ("and", "or"):
            subs = [constraint_test(c) for c in _values(op, args)]
            tests.append((lambda rec, s=subs: all(t(rec) for t in s)) if op == "and"
                         else (lambda rec, s=subs: any(t(rec) for t in s)))
        elif op == "not":
            subs = [constraint_test(c) for c in _values(op, args)]
            tests.append(lambda rec, s=subs: not all(t(rec) for t in s))
        elif op == "userid":
            ids = set(_values(op, args))
            if not all(isinstance(u, int) for u in ids):
                raise _constraint_error("userid value must be an integer")
            tests.append(lambda rec, ids=ids: USERID_UNKNOWN in ids or rec["userid"] in ids)
        elif op == "name":
            names = set(_values(op, args))
            tests.append(lambda rec, names=names: rec.get("name") in names)
        elif op == "queue":
            queues = set(_values(op, args))
            tests.append(lambda rec, queues=queues: _queue(rec) in queues)
        elif op == "states":
            mask = _state_mask(op, args, FILTER_STATES | {"new": NEW})
            tests.append(lambda rec, mask=mask: bool(rec["state"] & mask))
        elif op == "results":
            mask = _state_mask(op, args, _RESULT_BY_NAME)
            tests.append(lambda rec, mask=mask: bool((result_of(rec) or 0) & mask))
        elif op == "hostlist":
            if not all(isinstance(v, str) for v in _values(op, args)):
                raise _constraint_error("host value must be a string")
            try:
                hosts = set().union(*(Hostlist(h) for h in _values(op, args)))
            except (TypeError, ValueError, FluxLiteError):
                raise _constraint_error("invalid hostlist value") from None
            tests.append(lambda rec, hosts=hosts: bool(hosts & set(Hostlist(rec.get("nodelist") or ""))))
        elif op == "ranks":
            if not all(isinstance(v, str) for v in _values(op, args)):
                raise _constraint_error("ranks value must be a string")
            try:
                # kept as ranges: 0-999999999 is a valid idset, not a billion ids
                ranks = IDset().union(*(IDset.parse(str(r)) for r in _values(op, args)))
            except (ValueError, FluxLiteError):
                raise _constraint_error("invalid ranks value") from None
            tests.append(lambda rec, ranks=ranks: bool(ranks & IDset.parse(
                str(rec.get("ranks") or "").strip("[]"))))
        elif op in _TIMES:
            tests.append(_time_test(op, args))
        else:
            raise _constraint_error(f"unknown constraint operator: {op}")
    return lambda rec: all(t(rec) for t in tests)


def _fast_filters(constraint):
    """(userid, state mask) that the top level of an "and" constraint pins
    down, for the index query; the whole constraint is still tested."""
    userid, states = None, ACTIVE | INACTIVE
    terms = [constraint]
    if isinstance(constraint, dict) and list(constraint) == ["and"] and isinstance(constraint["and"], list):
        terms = constraint["and"]
    for term in terms:
        if not isinstance(term, dict) or len(term) != 1:
            continue
        (op, args), = term.items()
        if op == "userid" and isinstance(args, list) and len(args) == 1 and isinstance(args[0], int) \
                and args[0] != USERID_UNKNOWN:
            userid = args[0]
        elif op == "states" and isinstance(args, list):
            states &= _state_mask(op, args, FILTER_STATES | {"new": NEW})
    return userid, states


def list_jobs(broker, attrs=("all",), max_entries=DEFAULT_MAX, since=0.0, constraint=None) -> list[dict]:
    """job-list.list: the jobs matching constraint in job-list's order
    (pending, running, then inactive jobs that ended after since), at most
    max_entries (0: every one), each with attrs (job_attrs)."""
    check_attrs(attrs)
    if not isinstance(max_entries, int) or max_entries < 0:
        raise FluxLiteError("max_entries must be >= 0", errno=EPROTO)
    test = constraint_test(constraint) if constraint is not None else None
    userid, states = _fast_filters(constraint) if constraint is not None else (None, ACTIVE | INACTIVE)
    out = []
    if not states:
        return out
    for rec in iter_rows(broker, userid=userid, states=states, since=since):
        if test is not None and not test(rec):
            continue
        out.append(select_attrs(job_attrs(rec), attrs))
        if max_entries and len(out) >= max_entries:
            break
    return out


def list_id(broker, jobid: int, attrs=("all",)) -> dict:
    """job-list.list-id: one job (ENOENT when there is no such job)."""
    require_service(broker, "job-list.list-id")
    check_attrs(attrs)
    broker.flush()
    rec = index.listed_record(broker.kvs.conn, jobid)
    if rec is None:
        raise FluxLiteError(f"JobID {f58(jobid)} unknown", errno=ENOENT)
    return select_attrs(job_attrs(rec), attrs)


def include_test(targets: str) -> Callable[[dict], bool]:
    """flux jobs -i TARGETS: the jobs that ran on those ranks (an idset) or
    hosts (a hostlist), as job-list's ranks or hostlist constraint."""
    try:
        return constraint_test({"ranks": [str(IDset.parse(targets))]})
    except (ValueError, FluxLiteError):
        pass
    try:
        return constraint_test({"hostlist": [str(Hostlist(targets))]})
    except (ValueError, FluxLiteError):
        raise FluxLiteError(f"-i/--include: invalid targets: {targets}") from None


def module_stats(broker) -> dict:
    """job-list's `flux module stats`: its jobs by list (pending: not yet
    running; running: RUN and CLEANUP), and idsync's waits, the jobs that
    `flux job list-ids` callers are waiting on (flux_lite.watchers)."""
    require_service(broker, "job-list.stats-get")
    conn = broker.kvs.conn
    counts = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    waits = {w["jobid"] for w in watchers.live(broker.instance.state_dir)
             if w.get("service") == "job-list" and isinstance(w.get("jobid"), int)}
    return {"jobs": {"pending": sum(n for s, n in counts.items() if s & PENDING),
                     "running": sum(n for s, n in counts.items() if s & RUNNING),
                     "inactive": counts.get(INACTIVE, 0)},
            "idsync": {"lookups": 0, "waits": len(waits)}, "stats_watchers": 0}


# -- job-state-pause: job-list's test hook ------------------------------------------

# Flux's job-list may be told to stop taking in job state changes (flux-core's
# tests do it to see `flux job list-ids` wait for ids it has not synced yet).
# flux-lite's job-list reads the job index, so a pause hides the jobs
# submitted after it until the unpause. Like the watches, it is runtime state
# (a module's memory in Flux), a file of the state directory, not instance state.
PAUSE_FILE = "job-list.paused"


def _pause_path(broker) -> Path:
    return Path(broker.instance.state_dir) / PAUSE_FILE


def pause_state_updates(broker) -> None:
    """job-list.job-state-pause (the owner's): later jobs go unseen."""
    access.require_owner(broker.instance.identity, None)
    newest = broker.kvs.conn.execute("SELECT MAX(id) FROM jobs").fetchone()[0] or 0
    try:
        _pause_path(broker).write_text(f"{newest}\n")
    except OSError as exc:
        raise FluxLiteError(f"job-state-pause: {exc.strerror}") from None


def unpause_state_updates(broker) -> None:
    """job-list.job-state-unpause (the owner's): every job is seen again."""
    access.require_owner(broker.instance.identity, None)
    try:
        _pause_path(broker).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise FluxLiteError(f"job-state-unpause: {exc.strerror}") from None


def synced(broker, jobid: int) -> bool:
    """Has job-list taken the job in? (Not while paused since before its submission.)"""
    try:
        newest = int(_pause_path(broker).read_text())
    except (OSError, ValueError):
        return True
    return jobid <= newest
