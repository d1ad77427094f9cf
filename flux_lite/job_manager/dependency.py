"""Job dependencies (RFC 26): the after* schemes, singleton and begin-time.

Flux implements these as job-manager plugins (dependency-after,
dependency-singleton, begin-time). Here they are one module that the job
manager calls at four points: when a job is submitted (before its `validate`
event), when a job starts, when a job becomes inactive, and when a begin-time
timer fires.

Who waits on what lives in derived tables, so that the dependents of a job
that finishes are found by an index lookup, never by loading every job:

- ``depends``: one row per outstanding dependency of a job in DEPEND (the
  dependent, its description, the prerequisite job or singleton key);
- ``job_names``: the active jobs that have an explicit name, by
  ``userid:name`` (what a singleton counts).

Both are rebuilt from the eventlogs and jobspecs alone (``rebuild``).
"""

from __future__ import annotations

import re
from errno import EINVAL
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats import submitopts, when
from flux_lite.formats.jobid import JobIDError, decode, f58, kvs_key
from flux_lite.job_manager.job import COMPLETED, DEPEND, NEW
from flux_lite.limits import MAX_TIME
from flux_lite.stored import DEPENDS

# scheme -> the type word Flux's descriptions use
AFTER_TYPES = {
    "after": "after-start",
    "afterstart": "after-start",
    "afterany": "after-finish",
    "afterok": "after-success",
    "afternotok": "after-failure",
    "afterexcept": "after-except",
}

# FLUX_JOBID_ANY: jobtap's "current job", never a valid prerequisite
ANY_JOBID = 2**64 - 1

DEPRECATED_AFTER = "dependency scheme 'after' is deprecated, use 'afterstart'"

# the same tables are listed in flux_lite/schema.py (created with the others)
TABLE_NAMES = ("depends", "job_names")

_FLOAT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse_timestamp(text: Any) -> float | None:
    """A begin-time value as Flux's plugin reads it (strtod, whole string,
    finite and not negative); None when invalid."""
    if not isinstance(text, str) or not _FLOAT.fullmatch(text):
        return None
    value = float(text)
    if value < 0 or value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def begin_time_description(ts: float) -> str:
    return "begin-time=%.3f" % ts


def description_of(entry: dict) -> str | None:
    """The description a jobspec dependency entry is known by in events
    (None for entries that never produce one)."""
    scheme, value = entry.get("scheme"), entry.get("value")
    if scheme in AFTER_TYPES:
        return f"{AFTER_TYPES[scheme]}={value}"
    if scheme == "singleton":
        return "singleton"
    if scheme == "begin-time":
        ts = parse_timestamp(value)
        return None if ts is None else begin_time_description(ts)
    return None


def _job_name(jobspec: dict) -> str | None:
    try:
        name = jobspec["attributes"]["system"]["job"]["name"]
    except (KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def _entries(jobspec: dict) -> list:
    try:
        deps = jobspec["attributes"]["system"].get("dependencies")
    except (KeyError, TypeError, AttributeError):
        return []
    return deps if isinstance(deps, list) else []


def tracked(job) -> bool:
    """Does the job have rows in the dependency tables while active?"""
    return bool(job.dependencies) or _job_name(job.jobspec or {}) is not None


_SCHEME_PLUGINS = {"singleton": ".dependency-singleton", "begin-time": ".begin-time"}


class Dependencies:
    """The job manager's dependency plugins, over the derived tables."""

    def __init__(self, broker):
        self.b = broker
        self.conn = broker.kvs.conn
        self._any_rows = None  # does `depends` have rows? (asked once per command)
        self._any_names = None  # and `job_names`?
        # `job_names` rows of jobs submitted by this command, written by save()
        # (a trace replay's jobs mostly end within the command: no row at all)
        self._names_new = {}
        # jobs found running at a restart from a Flux archive: Flux's restarted
        # dependency plugin never saw them start (see restore.py)
        self.starts_unseen = set()

    @property
    def jm(self):
        return self.b.jm

    # -- submission ----------------------------------------------------------

    def check(self, jobspec: dict, userid: int) -> list:
        """Check a new job's dependencies; returns the steps to apply once the
        job exists, or raises Flux's rejection (the job is then not created).

        Steps: ("exception", note), ("add", desc, row), ("remove", desc).
        """
        steps = []
        loaded = self.b.jobtap.loaded
        for entry in _entries(jobspec):
            scheme = entry.get("scheme")
            value = entry.get("value")
            # each scheme is a builtin plugin's: removed, it is unknown
            plugin = (".dependency-after" if scheme in AFTER_TYPES
                      else _SCHEME_PLUGINS.get(scheme) if isinstance(scheme, str) else None)
            if plugin is not None and not loaded(plugin):
                raise FluxLiteError(f'dependency scheme "{scheme}" not supported', errno=EINVAL)
            if scheme in AFTER_TYPES:
                typ = AFTER_TYPES[scheme]
                if scheme == "after":
                    steps.append(("exception", DEPRECATED_AFTER))
                try:
                    target_id = decode(value)
                except JobIDError:
                    target_id = None
                if target_id is None or target_id == ANY_JOBID:
                    raise FluxLiteError(f'dependency: {scheme}: "{value}" is not a valid jobid',
                                        errno=EINVAL) from None
                # ids past SQLite's signed 64 bits cannot be in the index
                target = self.jm.load_any(target_id) if target_id < 2**63 else None
                if target is None:
                    raise FluxLiteError(f"dependency: {scheme}: id {value}: job not found", errno=EINVAL)
                if target.userid != userid:
                    raise FluxLiteError(f"{scheme}: Permission denied for job {value}", errno=EINVAL)
                desc = f"{typ}={value}"
                if not target.active:
                    self._check_inactive(typ, target, value)
                    steps.append(("add", desc, None))
                    steps.append(("remove", desc))
                elif typ == "after-start" and target.started:
                    steps.append(("add", desc, None))
                    steps.append(("remove", desc))
                else:
                    steps.append(("add", desc, {"scheme": typ, "target": target_id}))
            elif scheme == "singleton":
                name = _job_name(jobspec)
                if name is None:
                    raise FluxLiteError("singleton jobs require a job name", errno=EINVAL)
                key = f"{userid}:{name}"
                if self._active_named(key) > 0:
                    steps.append(("add", "singleton", {"scheme": "singleton", "key": key}))
            elif scheme == "begin-time":
                ts = parse_timestamp(value)
                if ts is None:
                    raise FluxLiteError(f"Invalid begin-time={value}", errno=EINVAL)
                steps.append(("add", begin_time_description(ts), {"scheme": "begin-time", "t": ts}))
            else:
                raise FluxLiteError(f'dependency scheme "{scheme}" not supported', errno=EINVAL)
        return steps

    @staticmethod
    def _check_inactive(typ, target, value):
        """A prerequisite that is already inactive: satisfied now, or never."""
        if typ != "after-finish" and not target.t_run:
            raise FluxLiteError(f"dependency: after: {value} never started", errno=EINVAL)
        if typ == "after-start" and not target.started:
            raise FluxLiteError(f"dependency: after: {value} never started", errno=EINVAL)
        result = target.result
        if typ == "after-success" and result != COMPLETED:
            raise FluxLiteError(f"dependency: afterok: job {value} failed or was canceled", errno=EINVAL)
        if typ == "after-failure" and result == COMPLETED:
            raise FluxLiteError(f"dependency: afternotok: job {value} succeeded", errno=EINVAL)
        if typ == "after-except" and not _ended_by_exception(target):
            raise FluxLiteError(f"dependency: afterexcept: job {value}: no exception", errno=EINVAL)

    def apply(self, job, steps: list) -> None:
        """Post the events of check()'s steps on the new job (still in NEW)."""
        owner = self.b.instance.owner
        for step in steps:
            kind = step[0]
            if kind == "exception":
                self.jm.raise_exception(job, "dependency", 3, step[1], userid=owner)
            elif kind == "add":
                _, desc, row = step
                if desc in job.dependencies:
                    continue  # Flux posts a description once
                self.jm.post(job, "dependency-add", {"description": desc})
                if row is not None:
                    self._insert(job.id, desc, row)
            elif kind == "remove":
                self._remove(job, step[1])

    def job_new(self, job) -> None:
        """An accepted job: count it under its name (for singletons)."""
        name = _job_name(job.jobspec or {})
        if name is not None:
            self._names_new[job.id] = f"{job.userid}:{name}"
            self._any_names = True

    def save(self) -> None:
        """Write the names counted by this command (see job_new)."""
        if self._names_new:
            self.conn.executemany("INSERT OR REPLACE INTO job_names(jobid, key) VALUES (?, ?)",
                                  list(self._names_new.items()))
            self._names_new = {}

    def validated(self, job, steps: list) -> None:
        """After `validate`: begin-times already past are satisfied at once
        (Flux's timer fires on the next loop); the others get a timer."""
        for step in steps:
            if step[0] != "add" or step[2] is None or step[2]["scheme"] != "begin-time":
                continue
            desc, ts = step[1], step[2]["t"]
            if desc not in job.dependencies:
                continue
            if ts <= self.b.now:
                self._remove(job, desc)
            else:
                self._arm(job.id, ts, desc)

    def _arm(self, jobid, ts, desc):
        """The begin-time timer; none past the last time the clock can reach
        (such a job waits until it is canceled, and a virtual clock is never
        moved there)."""
        if ts <= MAX_TIME:
            self.b.add_timer(ts, "depend.begin-time", jobid, desc)

    # -- releasing -------------------------------------------------------------

    def _insert(self, jobid, desc, row):
        self.conn.execute(
            "INSERT OR REPLACE INTO depends(jobid, description, scheme, target, key, t) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (jobid, desc, row["scheme"], row.get("target"), row.get("key"), row.get("t")),
        )
        self._any_rows = True

    def _remove(self, job, desc):
        """dependency-remove; the job leaves DEPEND when none remain."""
        if desc not in job.dependencies or job.state not in (NEW, DEPEND):
            return  # Flux refuses dependency events once a job has left DEPEND
        self.jm.post(job, "dependency-remove", {"description": desc})
        self.conn.execute("DELETE FROM depends WHERE jobid = ? AND description = ?", (job.id, desc))

    def _has_names(self):
        if self._any_names is None:
            self._any_names = self.conn.execute("SELECT 1 FROM job_names LIMIT 1").fetchone() is not None
        return self._any_names

    def _has_rows(self):
        if self._any_rows is None:
            self._any_rows = self.conn.execute("SELECT 1 FROM depends LIMIT 1").fetchone() is not None
        return self._any_rows

    def _dependents(self, target_id, scheme=None):
        sql = "SELECT jobid, description, scheme FROM depends WHERE target = ?"
        args = [target_id]
        if scheme is not None:
            sql += " AND scheme = ?"
            args.append(scheme)
        return self.conn.execute(sql + " ORDER BY seq", args).fetchall()

    def job_started(self, job) -> None:
        """The `start` event: after-start dependents are released."""
        if not self._has_rows():
            return
        for jobid, desc, _scheme in self._dependents(job.id, "after-start"):
            dep = self.jm.lookup(jobid)
            if dep is not None:
                self._remove(dep, desc)

    def job_inactive(self, job) -> None:
        """A job became inactive: release (or fail) its dependents, forget its
        own outstanding dependencies, and let the next singleton go."""
        if job.dependencies:
            # it left DEPEND only by an exception: its waits are void
            self.conn.execute("DELETE FROM depends WHERE jobid = ?", (job.id,))
            self.b.cancel_timers(job.id, "depend.")
        if self._has_rows():
            self._release_dependents(job)
        # the key the job was counted under at submission (an update may
        # have renamed it since)
        key = self._names_new.pop(job.id, None)
        if key is not None:
            self._singleton_inactive(job, key, stored=False)
        elif self._has_names():
            row = self.conn.execute("SELECT key FROM job_names WHERE jobid = ?", (job.id,)).fetchone()
            if row is not None:
                self._singleton_inactive(job, row[0])

    def _release_dependents(self, job):
        rows = self._dependents(job.id)
        if not rows:
            return
        if not job.t_run or job.id in self.starts_unseen:
            # never allocated: only afterany is satisfied by that
            release = {"after-finish"}
            note = "job never started"
        else:
            if job.result != COMPLETED:
                release = {"after-finish", "after-failure"}
                if _ended_by_exception(job):
                    release.add("after-except")
            else:
                release = {"after-finish", "after-success"}
            note = "can never be satisfied"
        failed = []
        for jobid, desc, scheme in rows:
            dep = self.jm.lookup(jobid)
            if dep is None:
                continue
            if scheme in release:
                self._remove(dep, desc)
            else:
                failed.append((dep, desc))
        owner = self.b.instance.owner
        for dep, desc in failed:
            if dep.active:
                self.jm.raise_exception(dep, "dependency", 0, f"dependency {desc} {note}", userid=owner)
        self.conn.execute("DELETE FROM depends WHERE target = ?", (job.id,))

    def _active_named(self, key):
        self.save()
        return self.conn.execute("SELECT COUNT(*) FROM job_names WHERE key = ?", (key,)).fetchone()[0]

    def _singleton_inactive(self, job, key, stored=True):
        if stored:
            self.conn.execute("DELETE FROM job_names WHERE jobid = ?", (job.id,))
        if not self._has_rows():
            return
        waiting = [r[0] for r in self.conn.execute(
            "SELECT jobid FROM depends WHERE key = ? AND scheme = 'singleton' ORDER BY seq", (key,))]
        # when every active job of this user and name waits as a singleton,
        # the first of them goes
        if waiting and self._active_named(key) == len(waiting):
            dep = self.jm.lookup(waiting[0])
            if dep is not None:
                self._remove(dep, "singleton")

    def timer(self, what: str, jobid: int, arg: Any) -> None:
        if what == "begin-time":
            job = self.jm.lookup(jobid)
            if job is not None:
                self._remove(job, arg)

    # -- rebuilding from the eventlogs ------------------------------------------------

    def rebuild(self, jobs) -> None:
        """Recreate the rows and timers of replayed active jobs (the tables
        were just recreated empty)."""
        self._names_new = {}
        for job in sorted(jobs, key=lambda j: j.id):
            if not job.active:
                continue
            js = job.jobspec or {}
            # counted under the name it was submitted with
            name = _job_name(self.b.kvs.get(kvs_key(job.id, "jobspec")) or js)
            if name is not None:
                self.conn.execute("INSERT INTO job_names(jobid, key) VALUES (?, ?)",
                                  (job.id, f"{job.userid}:{name}"))
            if not job.dependencies:
                continue
            for entry in _entries(js):
                desc = description_of(entry)
                if desc is None or desc not in job.dependencies:
                    continue
                scheme = entry.get("scheme")
                if scheme in AFTER_TYPES:
                    try:
                        target = decode(entry.get("value"))
                    except JobIDError:
                        continue
                    self._insert(job.id, desc, {"scheme": AFTER_TYPES[scheme], "target": target})
                elif scheme == "singleton":
                    self._insert(job.id, desc, {"scheme": "singleton", "key": f"{job.userid}:{name}"})
                elif scheme == "begin-time":
                    ts = parse_timestamp(entry.get("value"))
                    self._insert(job.id, desc, {"scheme": "begin-time", "t": ts})
                    self._arm(job.id, ts, desc)


def check_tables(kvs, jobs: dict) -> list[str]:
    """How the dependency tables differ from the replayed jobs (fsck): one
    line per job whose rows are wrong."""
    present = {r[0] for r in kvs.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not set(TABLE_NAMES) <= present:
        return ["job index: dependency tables missing (any command rebuilds them)"]

    have, names = {}, {}
    problems = []
    for table, sql, rows in (("depends", "SELECT jobid, description FROM depends", have),
                             ("job_names", "SELECT jobid, key FROM job_names", names)):
        for jobid, text in kvs.conn.execute(sql):
            if not isinstance(jobid, int) or not isinstance(text, str):
                problems.append(f"damaged row in the {DEPENDS}: {table}: {jobid!r} {text!r}")
            elif rows is have:
                have.setdefault(jobid, set()).add(text)
            else:
                names[jobid] = text
    for jobid in sorted(set(have) | {j.id for j in jobs.values() if j.active and j.dependencies}):
        job = jobs.get(jobid)
        want = set(job.dependencies) if job is not None and job.active else set()
        if have.get(jobid, set()) != want:
            problems.append(f"job index: {f58(jobid)}: outstanding dependencies differ from its eventlog")
    for job in jobs.values():
        if not job.active:
            continue
        name = _job_name(kvs.get(kvs_key(job.id, "jobspec")) or {})
        want = None if name is None else f"{job.userid}:{name}"
        if names.pop(job.id, None) != want:
            problems.append(f"job index: {f58(job.id)}: its name count differs from its jobspec")
    for jobid in sorted(names):
        problems.append(f"job index: {f58(jobid)}: counted by name but not active")
    return problems


def _ended_by_exception(job) -> bool:
    end = job.end_event
    return end is not None and "severity" in end


# -- client side: URIs and times (flux submit's parsing) ------------------------------


def parse_uri(uri: str) -> dict:
    """An RFC 26 dependency URI, SCHEME:VALUE[?key=val[&key=val...]], as the
    jobspec entry flux submit makes of it."""
    try:
        return submitopts.uri_entry(uri, "dependency")
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None


def parse_datetime(text: str, now: float) -> float:
    """--begin-time: a point in time as Flux's parse_datetime reads it (see
    flux_lite.formats.when), on the instance clock; Flux's errors."""
    try:
        return when.parse(text, now)
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None


def begin_time_uri(text: str, now: float) -> str:
    """The dependency URI --begin-time=TEXT stands for."""
    ts = round(parse_datetime(text, now), 6)
    return f"begin-time:{ts!r}"
