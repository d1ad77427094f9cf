"""`flux-lite fsck`: check the state directory, and repair what can be rebuilt.

Checked, in order: SQLite's own integrity check; every instance key against
its stored shape (flux_lite.stored); every job's eventlog (RFC 18 syntax,
RFC 21 event order), jobspec and R; the derived tables (job index) against a
fresh replay of the eventlogs; the job id high-water mark; and the scheduler's
allocations against the eventlogs (as `sched check` does).

Repair never deletes: a damaged job's keys are moved under ``lost+found.``,
the derived tables are rebuilt from the eventlogs, and a damaged scheduler or
job-manager state is rebuilt by reloading the scheduler (hello).
"""

import re
import sqlite3

from flux_lite import access, log, stored
from flux_lite import check as checkmod
from flux_lite import instance as instance_mod
from flux_lite.broker import _check_timer_row
from flux_lite.errors import FluxLiteError
from flux_lite.forked import available as forked_available
from flux_lite.forked import forked
from flux_lite.formats.jobid import f58, jobid_of_key, kvs_key
from flux_lite.instance import DB_NAME, Instance, NoInstanceError, check_private, resolve_state_dir
from flux_lite.job_manager import dependency, index, replay
from flux_lite.kvs import KVS
from flux_lite.rebuild import job_dirs, rebuild
from flux_lite.sched import loader
from flux_lite.schedstate import MODULE_KEY
from flux_lite.schema import DERIVED_VERSION

LOST = "lost+found"
# derived index fields a replay must reproduce
_COMPARED = ("userid", "state", "t_submit", "t_run", "t_inactive", "has_resources", "urgency")
# keys rebuilt by a scheduler reload (or recomputed) when damaged
_REBUILDABLE = ("sched.state", "job-manager.sched", "checkpoint.job-manager", "job-manager.quarantine",
                "sched.module", "job-manager.queue")  # (queues: back to their defaults)


class Report:
    def __init__(self):
        self.problems = []  # (text, repaired)
        self.damaged_jobs = {}  # jobid -> reason
        self.damaged_keys = {}  # key -> reason
        self.index_differs = False
        self.index_present = True
        self.index_problems: list[tuple[int, str]] = []  # found while the jobs are read
        self.max_jobid = 0  # the highest job id with an eventlog (good or damaged)

    def add(self, text):
        self.problems.append([text, False])

    @property
    def unrepaired(self):
        return [t for t, fixed in self.problems if not fixed]


def _integrity(kvs, report):
    """SQLite's own check: quick_check of the whole file (every page and
    record; the KVS, keyed by its primary key, has no other index), then the
    full integrity_check of each table that has indexes (that they match it).
    The full check of the whole file would spend most of an fsck of a large
    history on the KVS for nothing more."""
    conn = kvs.conn
    rows = [r[0] for r in conn.execute("PRAGMA quick_check(20)")]
    if rows == ["ok"]:
        if sqlite3.sqlite_version_info < (3, 33, 0):  # integrity_check(TABLE) is newer
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
        else:
            indexed = [r[0] for r in conn.execute(
                "SELECT DISTINCT tbl_name FROM sqlite_master WHERE type = 'index' AND tbl_name != 'kvs' "
                "ORDER BY tbl_name")]
            for table in indexed:
                rows = [r[0] for r in conn.execute(f'PRAGMA integrity_check("{table}")')]
                if rows != ["ok"]:
                    break
    if rows != ["ok"]:
        for row in rows:
            report.add(f"sqlite: {row}")
        return False
    return True


def _instance_keys(kvs, report):
    for key in stored.CHECKS:
        try:
            value = kvs.get(key)
            if key == "resource.R" and value is not None:
                stored.check_R(value, deep=True)
        except stored.DamagedError as exc:
            report.damaged_keys[key] = exc.reason
            report.add(exc.plain)
        except ValueError as exc:
            report.damaged_keys[key] = str(exc)
            report.add(f"damaged KVS key {key}: {exc}")
    for key in ("instance.meta", "instance.clock", "resource.R", "config"):
        if key not in report.damaged_keys and kvs.get_raw(key) is None:
            report.damaged_keys[key] = "missing"
            report.add(f"KVS key {key} is missing")
    try:
        kvs.get_eventlog("resource.eventlog")
    except stored.DamagedError as exc:
        report.damaged_keys["resource.eventlog"] = exc.reason
        report.add(exc.plain)


# a history this large is checked by two processes, each half of it
# (flux_lite.forked): fsck of a million jobs is mostly Python replaying them
PARALLEL_MIN_JOBS = 20000


def _jobs(kvs, report, parallel: bool = True):
    """Replay every job, a batch at a time, and compare each with its row of
    the derived job index as it comes (the index is read in id order beside
    the jobs). Returns {jobid: Job} of the good jobs that are active (what
    the dependency tables are checked against): the inactive history is
    never held whole.

    A large history is split in two at its middle job: a second process
    checks the upper half (with its own connection, in the same snapshot:
    this command holds the write lock, or the state dir is read-only)
    while this one checks the lower; what each finds is reported in job
    order, as one pass would."""
    present = {r[0] for r in kvs.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    has_index = index.TABLE in present
    report.index_present = has_index
    split = _split_point(kvs) if parallel and has_index and forked_available() else None
    if split is None:
        active, report.index_problems = _check_range(kvs, report, has_index)
        return active
    path, readonly = kvs.path, kvs.readonly

    def upper():
        part = Report()
        mine = KVS(path, readonly=readonly)
        with mine.read_transaction():
            active, problems = _check_range(mine, part, has_index, start=split)
        yield part.problems, part.damaged_jobs, part.max_jobid, active, problems

    with forked(upper) as results:
        active, index_problems = _check_range(kvs, report, has_index, stop=split)
        for problems, damaged, max_jobid, more_active, more_index_problems in results:
            report.problems.extend(problems)
            report.damaged_jobs.update(damaged)
            report.max_jobid = max(report.max_jobid, max_jobid)
            active.update(more_active)
            index_problems.extend(more_index_problems)
    report.index_problems = index_problems
    return active


def _split_point(kvs):
    """The id of the job in the middle of the index, when it is large enough
    to be worth a second process."""
    n = kvs.conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
    if n < PARALLEL_MIN_JOBS:
        return None
    row = kvs.conn.execute("SELECT id FROM jobs ORDER BY id LIMIT 1 OFFSET ?", (n // 2,)).fetchone()
    return row[0] if row else None


def _check_range(kvs, report, has_index, start=None, stop=None):
    """_jobs() for the jobs start <= id < stop: (the active jobs, the index
    problems found)."""
    if has_index:
        where = " AND ".join(["1", *(["id >= :start"] if start is not None else []),
                              *(["id < :stop"] if stop is not None else [])])
        rows = kvs.conn.execute(f"SELECT id, data, listing FROM jobs WHERE {where} ORDER BY id",
                                {"start": start, "stop": stop})
    else:
        rows = iter(())
    pending = next(rows, None)
    index_problems = []  # reported after every job's own, as they always were
    active = {}
    for jobid, keys in job_dirs(kvs, start=start, stop=stop):
        report.max_jobid = jobid
        while pending is not None and pending[0] < jobid:
            _index_row(pending, None, report, index_problems)
            pending = next(rows, None)
        key = kvs_key(jobid)
        job = None
        try:
            job = replay.replay_job(keys, jobid)
            if keys.get_raw(key + ".jobspec") is None:
                raise stored.DamagedError(key + ".jobspec", "missing")
            if keys.get_raw(key + ".J") != keys.get_raw(key + ".jobspec"):
                keys.get(key + ".J")  # (the same text as the jobspec, just checked, is an object)
            R = keys.get(key + ".R")
            if R is not None:
                _check_R_deep(R, (keys.get_raw(key + ".R") or ("", None))[1], key)
        except stored.DamagedError as exc:
            report.damaged_jobs[jobid] = exc.plain
            report.add(exc.plain)
            job = None
        except ValueError as exc:
            report.damaged_jobs[jobid] = str(exc)
            report.add(f"job {jobid}: {exc}")
            job = None
        if job is not None and job.active:
            active[jobid] = job
        if pending is not None and pending[0] == jobid:
            _index_row(pending, job, report, index_problems)
            pending = next(rows, None)
        elif has_index and job is not None:
            index_problems.append((jobid, "missing"))
    while pending is not None:
        _index_row(pending, None, report, index_problems)
        pending = next(rows, None)
    return active, index_problems


# R texts already parsed whole (idsets, hostlists), without their times: a
# history repeats a few thousand shapes of allocation a million times
_R_SHAPES: dict[str, None] = {}
_R_TIMES = re.compile(r'"(?:starttime|expiration)": ?[-+0-9.eE]+')


def _check_R_deep(R, text, key):
    """stored.check_R(R, deep=True) (KVS.get has made the shallow check, the
    times included), once per shape of R."""
    shape = _R_TIMES.sub("", text) if isinstance(text, str) else None
    if shape is not None and shape in _R_SHAPES:
        return
    try:
        stored.check_R(R, deep=True)
    except ValueError as exc:
        raise stored.DamagedError(key + ".R", str(exc)) from None
    if shape is not None:
        if len(_R_SHAPES) >= 100000:
            _R_SHAPES.clear()
        _R_SHAPES[shape] = None


def _index_row(row, job, report, problems):
    """One row of the derived job index against the job's replay (None: no good job)."""
    jobid, data, listing = row
    try:
        rec = stored.decode_row(jobid, data)
    except stored.DamagedError as exc:
        problems.append((jobid, exc.plain))
        return
    if listing != index.listing_text(rec):
        problems.append((jobid, f"job index: {f58(jobid)}: listing column differs from its record"))
    if job is None:
        if jobid not in report.damaged_jobs:
            problems.append((jobid, f"job index: {f58(jobid)} has no eventlog"))
        return
    want = index.job_to_record(job)
    diff = [f for f in _COMPARED if rec.get(f) != want.get(f)]
    if diff:
        problems.append((jobid, f"job index: {f58(jobid)}: {', '.join(diff)} differ from its eventlog"))


def _index(kvs, active, report):
    """The derived job index against the replay (compared as the jobs were read)."""
    if not report.index_present:
        report.index_differs = True
        report.add("job index: missing (any command rebuilds it)")
        return
    missing = []
    for jobid, text in report.index_problems:
        report.index_differs = True
        if text == "missing":
            missing.append(jobid)
        else:
            report.add(text)
    for jobid in missing:
        report.add(f"job index: {f58(jobid)} is missing")
    report.index_problems = []

    for text in dependency.check_tables(kvs, active):
        report.index_differs = True
        report.add(text)
    _timers(kvs, report)
    _log(kvs, report)


def _log(kvs, report):
    """The dmesg table readable (it is not rebuilt: `dmesg -C` clears it)."""
    try:
        log.read(kvs)
    except stored.DamagedError as exc:
        report.add(f"{exc.plain} (not repaired: clear the log with 'flux-lite dmesg -C')")


def _timers(kvs, report):
    """Every row of the timers table readable (they are rebuilt from the eventlogs)."""
    for row in kvs.conn.execute("SELECT seq, t, kind, jobid, arg FROM timers"):
        try:
            _check_timer_row(*row)
        except stored.DamagedError as exc:
            report.index_differs = True
            report.add(exc.plain)


def _hwm(inst, report):
    hwm = inst.read_hwm()
    ckpt = inst.kvs.get("checkpoint.job-manager") or {}
    if hwm and hwm > ckpt.get("max_jobid", 0):
        report.add(f"job ids up to {f58(hwm)} were issued but the database does not know them "
                   "(a rolled-back WAL?)")
        return hwm
    return 0


def _move_aside(kvs, jobid):
    """job.<id>.* -> lost+found.job.<id>.* (nothing is deleted)."""
    key = kvs_key(jobid)
    rows = kvs.conn.execute("SELECT key, kind, value FROM kvs WHERE key > ? AND key < ?",
                            (key + ".", key + "/")).fetchall()
    for k, kind, value in rows:
        kvs.conn.execute("INSERT OR REPLACE INTO kvs(key, kind, value) VALUES (?, ?, ?)",
                         (f"{LOST}.{k}", kind, value))
    kvs.conn.execute("DELETE FROM kvs WHERE key > ? AND key < ?", (key + ".", key + "/"))


def run(state_dir, repair: bool = False, rebuild: bool = False) -> Report:
    """Check (and with repair/rebuild, fix) the instance at state_dir."""
    state_dir = resolve_state_dir(state_dir)
    path = state_dir / DB_NAME
    if not Instance.exists(state_dir):
        raise NoInstanceError(f"no flux-lite instance at {state_dir}")
    check_private(state_dir, path)
    readonly = not instance_mod.writable(state_dir, path)
    if readonly and (repair or rebuild):
        raise FluxLiteError("the state directory is read-only: fsck can check it, not repair it")
    kvs = KVS(path, readonly=readonly)
    report = Report()
    try:
        with kvs.transaction():
            if not _integrity(kvs, report):
                return report  # the rest would read pages SQLite does not trust
            _instance_keys(kvs, report)
            active = _jobs(kvs, report)
            _index(kvs, active, report)
            fatal = {"instance.meta", "instance.clock", "config", "resource.R"} & set(report.damaged_keys)
            if fatal:
                for text in report.problems:
                    if any(k in text[0] for k in fatal):
                        text[0] += " (not repairable: restore it from a backup or recreate the instance)"
                return report
            inst = Instance(state_dir, kvs)
            if repair or rebuild:
                access.require_owner(inst.identity, "fsck --repair" if repair else "fsck --rebuild")
            hwm = 0 if "checkpoint.job-manager" in report.damaged_keys else _hwm(inst, report)
            if not report.damaged_keys and not report.damaged_jobs and not report.index_differs:
                _sched(inst, report)
            if not (repair or rebuild):
                return report
            if repair:
                for jobid in report.damaged_jobs:
                    _move_aside(kvs, jobid)
                _mark(report, lambda t: any(t.startswith(f"job {f}") for f in _f58s(report.damaged_jobs)),
                      f"moved to {LOST}.")
                if hwm:
                    _mark(report, lambda t: t.startswith("job ids up to"), "ids continue above it")
            ctx = inst.context(inst.clock_now())
            if repair:
                for key in _REBUILDABLE:
                    if key in report.damaged_keys:
                        kvs.delete(key)
                # ids already handed out, here or moved aside, are never reused
                floor = max([inst.read_hwm(), report.max_jobid, *report.damaged_jobs, *_lost_ids(kvs)])
                ctx.jm.raise_jobid_floor(floor)
            if repair or rebuild:
                _rebuild(ctx, reload_sched=repair and bool(set(_REBUILDABLE) & set(report.damaged_keys)))
                _mark(report, lambda t: t.startswith("job index") or any(
                    f"damaged row in the {name}" in t for name in stored.DERIVED_TABLES), "rebuilt")
                _mark(report, lambda t: t.startswith("scheduler:"), "rebuilt")
                _mark(report, lambda t: any(k in t for k in _REBUILDABLE) or t.startswith("scheduler:"),
                      "rebuilt")
            ctx.save()
    finally:
        kvs.close()
    return report


def _lost_ids(kvs):

    return [jobid_of_key(k[len(LOST) + 1:]) or 0 for k in kvs.keys_under(LOST)
            if k.endswith(".eventlog")] if kvs.isdir(LOST) else []


def _f58s(ids):
    return [f58(j) for j in ids]


def _mark(report, match, how):
    for entry in report.problems:
        if not entry[1] and match(entry[0]):
            entry[0] += f" [repaired: {how}]"
            entry[1] = True


def _sched(inst, report):
    ctx = inst.context(inst.clock_now())
    try:
        for problem in checkmod.check(ctx):
            if problem != "no scheduler is loaded":
                report.add(f"scheduler: {problem}")
    except stored.DamagedError as exc:
        if exc.key in _REBUILDABLE:  # (a damaged row of the scheduler's tables): --repair reloads it afresh
            report.damaged_keys[exc.key] = exc.reason
        report.add(exc.plain)
    except FluxLiteError as exc:
        report.add(f"scheduler: {exc.message}")


def _rebuild(ctx, reload_sched):
    """Derived tables from the eventlogs; the scheduler re-synchronised by hello."""
    kvs = ctx.kvs
    if reload_sched:
        # the persisted scheduler state may be what is damaged: start it afresh
        rec = None
        try:
            rec = kvs.get(MODULE_KEY)
        except stored.DamagedError:
            pass
        loader.discard_state(kvs)
        kvs.delete(MODULE_KEY)
        if kvs.get_raw("job-manager.sched") is None:
            kvs.put("job-manager.sched", {"online": False, "mode": None, "limit": 0})
        ctx.drop_scheduler()
        # (a module file is loaded from its file again)
        name, args = (rec.get("path") or rec["name"], rec.get("args") or {}) if rec \
            else loader.config_module(ctx.config)
        rebuild(ctx)
        loader.module_load(ctx, name, args)
    else:
        rebuild(ctx)
    ctx.instance.kvs.conn.execute(f"PRAGMA user_version = {_derived_version()}")


def _derived_version():
    return DERIVED_VERSION
