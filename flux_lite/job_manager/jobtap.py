"""The job manager's jobtap plugins (flux-core job-manager/jobtap.c).

Which plugins are loaded, in load order, with the configuration each was
loaded with, persists under ``job-manager.jobtap`` (absent: the builtins
only, as a job manager starts). The builtins are parts of flux-lite's job
manager that stop when removed (their checks are asked ``loaded(name)``).
Of the plugins Flux ships, three are emulated here, as their C sources
behave:

``alloc-bypass.so``
    an instance owner's job with ``attributes.system.alloc-bypass.R`` gets
    that R at once, the scheduler never told (nor told of its free);
``alloc-check.so``
    a job allocated resources that a job allocated since it was loaded
    still holds gets a fatal ``alloc-check`` exception;
``perilog.so``
    ``[job-manager.prolog]`` / ``[job-manager.epilog]`` commands, simulated
    as housekeeping's are (:func:`emulate.housekeeping_run`): the job is held
    between prolog-start and prolog-finish (before it starts) and between
    epilog-start and epilog-finish (before its resources are freed).

Any other plugin file is one flux-lite cannot run: loading it is an error.
"""

import fnmatch
import json
import math
import os
import sys
from errno import EEXIST, EINVAL, ENOENT, ENOSYS, EPERM
from typing import Any

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import jansson_type, rlite_entries
from flux_lite.job_manager import emulate
from flux_lite.job_manager.job import PRIORITY as PRIORITY_STATE

KEY = "job-manager.jobtap"
# the builtins in the order a job manager loads them (.update-queue is the
# queue module's, registered after the others)
BUILTINS = (".priority-default", ".limit-job-size", ".limit-duration", ".dependency-after",
            ".dependency-singleton", ".begin-time", ".validate-duration", ".update-duration",
            ".history", ".post-event", ".update-queue")
ALLOC_BYPASS, ALLOC_CHECK, PERILOG = "alloc-bypass.so", "alloc-check.so", "perilog.so"
SHIPPED = (ALLOC_BYPASS, ALLOC_CHECK, PERILOG)
# where Flux's installed plugins would be found (query's "path" of a plugin loaded by name)
PLUGIN_DIR = os.path.join(sys.prefix, "lib", "flux", "job-manager", "plugins")
PROLOG, EPILOG = "prolog", "epilog"
_GLOB = set("*?[")


def _default_state() -> dict:
    return {"plugins": [{"name": name} for name in BUILTINS]}


def _checked_state(raw: Any) -> dict:
    """The stored state, or the default when it is not one (a damaged value
    is not trusted: the job manager starts with its builtins)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("plugins"), list) \
            or not all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in raw["plugins"]):
        return _default_state()
    return raw


def _fnmatch_period(pattern: str, name: str) -> bool:
    """fnmatch(3) with FNM_PERIOD: a leading period is matched only by a period."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


class Jobtap:
    def __init__(self, broker):
        self.b = broker
        self.state = _checked_state(broker.kvs.get(KEY))
        self._dirty = False
        self._names: set[str] | None = None
        # does a loaded plugin follow jobs' events? (asked at every post)
        self.watches_events = self._watching()

    def save(self) -> None:
        if self._dirty:
            self.b.kvs.put(KEY, self.state)
            self._dirty = False

    def _changed(self) -> None:
        self._dirty = True
        self._names = None
        self.watches_events = self._watching()

    # -- what is loaded -----------------------------------------------------------

    def names(self) -> list[str]:
        """The loaded plugins' names, in load order (a builtin loaded twice is there twice)."""
        return [p["name"] for p in self.state["plugins"]]

    def loaded(self, name: str) -> bool:
        names = self._names
        if names is None:
            names = self._names = set(self.names())
        return name in names

    def _plugin(self, name: str) -> dict | None:
        for p in self.state["plugins"]:
            if p["name"] == name:
                return p
        return None

    def query(self, name: str) -> str:
        """job-manager.jobtap-query: the plugin's JSON text, as Flux answers it."""
        p = self._plugin(name)
        if p is None:
            raise FluxLiteError(f"{name}: plugin not found")
        out: dict[str, Any] = {"name": name, "path": p.get("path") or "builtin"}
        if name == PERILOG:
            out["conf"] = {kind: self._perilog_desc(kind) for kind in (PROLOG, EPILOG)}
            out["procs"] = {f58(int(jobid)): self._proc_json(proc)
                            for jobid, proc in sorted(self._procs().items(), key=lambda kv: int(kv[0]))}
        return json.dumps(out, separators=(",", ":"))

    # -- load and remove ------------------------------------------------------------

    def remove(self, arg: str) -> int:
        """Remove the plugins named arg (a glob: those it matches; "all":
        every one but the builtins); how many were removed."""
        is_all = arg == "all"
        is_glob = bool(_GLOB & set(arg))
        keep, gone = [], []
        for p in self.state["plugins"]:
            name = p["name"]
            if (is_all and not name.startswith(".")) or (is_glob and _fnmatch_period(arg, name)) \
                    or name == arg:
                gone.append(p)
            else:
                keep.append(p)
        if not gone and not is_all:
            raise FluxLiteError("Failed to find plugin to remove", errno=ENOENT)
        if gone:
            self.state["plugins"] = keep
            for p in gone:
                self._finalize(p)
            self._changed()
        return len(gone)

    def load(self, path: str, conf: Any = None, remove: str | None = None) -> None:
        """Load plugin path (a builtin's name, a shipped plugin's name or a
        path ending in it), after removing `remove` when given."""
        if remove is not None:
            self.remove(remove)
        if conf is not None and not isinstance(conf, dict):
            raise FluxLiteError("jobptap: plugin conf must be a JSON object", errno=EINVAL)
        entry: dict[str, Any] = {}
        if path.startswith(".") and "/" not in path:
            if path not in BUILTINS:
                raise FluxLiteError(f"{path}: No such plugin found", errno=ENOENT)
            name = path
            if name == ".update-duration" and conf and type(conf.get("owner-allow-any")) is int:
                # (the plugin's setting is a static of the job manager: a
                # later load without it keeps it)
                self.state["owner-allow-any"] = conf["owner-allow-any"]
        else:
            name = os.path.basename(path)
            if "/" in path:
                if not os.path.exists(path):
                    raise FluxLiteError(f"{path}: No such plugin found", errno=ENOENT)
                full = path
            else:
                full = os.path.join(PLUGIN_DIR, name)
            if name not in SHIPPED:
                if "/" not in path:
                    raise FluxLiteError(f"{path}: No such plugin found", errno=ENOENT)
                raise FluxLiteError(f"{path}: flux-lite cannot load this jobtap plugin (it emulates "
                                    f"{', '.join(SHIPPED)} and the builtins only)", errno=EPERM)
            if self.loaded(name):
                raise FluxLiteError(f"{name} already loaded", errno=EEXIST)
            entry["path"] = full
            if name == ALLOC_CHECK:
                entry["allocated"] = {}  # job id -> what its alloc event gave it
            elif name == PERILOG:
                for kind in (PROLOG, EPILOG):
                    self._perilog_desc(kind)  # (a bad configuration fails the load)
                log_ignore(self.b.config)
        entry["name"] = name
        if conf:
            entry["conf"] = conf
        self.state["plugins"].append(entry)
        self._changed()
        # as Flux, every job is reprioritized once a plugin loads (a job
        # left in PRIORITY without .priority-default gets its priority)
        jm = self.b.jm
        for job in jm.index.active_in(PRIORITY_STATE):
            jm.requeue_action(job)

    def configure(self, cfg: dict) -> None:
        """[[job-manager.plugins]] as the job manager starts: each entry's
        remove, then its load (a later config load changes nothing, as in Flux)."""
        plugins = configmod.get_path(cfg, "job-manager.plugins") or []
        for i, entry in enumerate(plugins):
            remove, load = entry.get("remove"), entry.get("load")
            if remove is not None:
                try:
                    self.remove(remove)
                except FluxLiteError as exc:
                    raise FluxLiteError(f"[job-manager.plugins][{i}]: remove {remove}: {exc}",
                                        errno=exc.errno) from None
            if load is not None:
                try:
                    self.load(load, entry.get("conf"))
                except FluxLiteError as exc:
                    raise FluxLiteError(f"[job-manager.plugins][{i}]: load: {exc}", errno=exc.errno) from None

    def _finalize(self, p: dict) -> None:
        if p["name"] == PERILOG and not self.loaded_after_removal(PERILOG):
            # its processes go with it: the jobs they held go on
            procs = self.state.pop("perilog", None) or {}
            for jobid in procs:
                self.b.cancel_timers(int(jobid), "jobtap.")
                job = self.b.jm.lookup(int(jobid))
                if job is not None:
                    self.b.jm.requeue_action(job)

    def loaded_after_removal(self, name: str) -> bool:
        return any(p["name"] == name for p in self.state["plugins"])

    # -- builtins ----------------------------------------------------------------------

    def require_service(self, plugin: str, topic: str) -> None:
        """A service a builtin offers: gone with it, as an unknown method."""
        if not self.loaded(plugin):
            raise FluxLiteError(f"Unknown service method '{topic}'", errno=ENOSYS)

    def owner_allow_any(self, cfg: dict) -> bool:
        """.update-duration's owner-allow-any: as last loaded with, else as configured."""
        value = self.state.get("owner-allow-any")
        if type(value) is int:
            return bool(value)
        return bool(configmod.get_path(cfg, "job-manager.update-duration.owner-allow-any", True))

    # -- event hooks (Events.post) ---------------------------------------------------

    def _watching(self) -> bool:
        return self.loaded(ALLOC_CHECK) or self.loaded(PERILOG)

    def on_event(self, job: Any, name: str, context: dict | None) -> None:
        for p in list(self.state["plugins"]):
            pname = p["name"]
            if pname == ALLOC_CHECK:
                self._alloc_check(p, job, name, context)
            elif pname == PERILOG:
                self._perilog_event(job, name, context)

    # -- alloc-bypass.so ---------------------------------------------------------------

    def bypass_validate(self, jobspec: Any, userid: int) -> Any:
        """job.validate: the R an alloc-bypass job asks for (None: not one)."""
        if not self.loaded(ALLOC_BYPASS):
            return None
        system = (jobspec.get("attributes") or {}).get("system") or {}
        bypass = system.get("alloc-bypass") if isinstance(system, dict) else None
        if bypass is None:
            return None
        if not isinstance(bypass, dict):
            raise FluxLiteError("invalid system.alloc-bypass.R: Expected object, got "
                                f"{type(bypass).__name__}", errno=EINVAL)
        R = bypass.get("R")
        if R is None:
            return None
        if userid != self.b.instance.owner:
            raise FluxLiteError("Guest user cannot use alloc bypass", errno=EINVAL)
        try:
            entries = rlite_entries(R)
            if not entries:
                raise ValueError("R has no resources")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise FluxLiteError(f"alloc-bypass: invalid R: {exc}", errno=EINVAL) from None
        return R

    def bypass_alloc(self, job: Any) -> bool:
        """job.state.sched of an alloc-bypass job: it gets its own R."""
        if not self.loaded(ALLOC_BYPASS):
            return False
        R = ((job.jobspec or {}).get("attributes") or {}).get("system", {}).get("alloc-bypass", {}).get("R")
        if R is None:
            return False
        job.R = R
        self.state.setdefault("bypass", []).append(job.id)
        self._dirty = True
        self.b.jm.post(job, "alloc", {"bypass": True})
        return True

    def bypass_freed(self, job: Any) -> None:
        held = self.state.get("bypass") or []
        if job.id in held:
            held.remove(job.id)
            self._dirty = True

    def bypass_holders(self) -> set[int]:
        """The alloc-bypass jobs holding their R: the scheduler's hello never hears of them."""
        return set(self.state.get("bypass") or ())

    # -- alloc-check.so ---------------------------------------------------------------

    def _alloc_check(self, p: dict, job: Any, name: str, context: dict | None) -> None:
        # (it knows the R of the jobs allocated while it is loaded: a job
        # allocated before has nothing to account for)
        allocated = p.setdefault("allocated", {})
        key = str(job.id)
        if name == "alloc":
            mine = _resource_units(job.R)
            held = set()
            for other, units in allocated.items():
                if other != key:
                    held.update(tuple(u) for u in units)
            allocated[key] = sorted(mine)
            self._dirty = True
            if mine & held:
                self.b.jm.raise_exception(job, "alloc-check", 0, "resources already allocated",
                                          userid=self.b.instance.owner)
        elif name == "free" or (name == "exception" and (context or {}).get("severity") == 0
                                and (context or {}).get("type") == "scheduler-restart"):
            mine = allocated.pop(key, None)
            if mine is not None:
                # (Flux's diff takes the job's resources out whoever holds them)
                drop = {tuple(u) for u in mine}
                for other in list(allocated):
                    allocated[other] = [u for u in allocated[other] if tuple(u) not in drop]
                self._dirty = True

    # -- perilog.so ------------------------------------------------------------------

    def _perilog_desc(self, kind: str, cfg: dict | None = None) -> dict:
        """[job-manager.prolog|epilog] as perilog.so reads it (query's conf);
        {} when absent. A bad table is refused in perilog's words."""
        return perilog_desc(self.b.config if cfg is None else cfg, kind)

    def check_config(self, cfg: dict) -> None:
        """A config about to be loaded, as the loaded plugins' conf.update
        checks it (perilog.so: its tables)."""
        if self.loaded(PERILOG):
            for kind in (PROLOG, EPILOG):
                perilog_desc(cfg, kind)
            log_ignore(cfg)

    def _procs(self) -> dict:
        return self.state.get("perilog") or {}

    def _proc_json(self, proc: dict) -> dict:
        remaining = proc.get("start", self.b.now) + (proc.get("timeout") or 0) - self.b.now
        # (the time left is the timeout's, as Flux's timer says)
        return {"name": proc["kind"], "state": "running", "total": proc["total"],
                "active": proc["total"], "active_ranks": proc["ranks"],
                "remaining_time": int(round(remaining)) if proc.get("timeout") else -1}

    def holds(self, job: Any) -> bool:
        """A prolog or epilog of the job's is running: it neither starts nor frees."""
        procs = self.state.get("perilog")
        return bool(procs) and str(job.id) in procs

    def _perilog_event(self, job: Any, name: str, context: dict | None) -> None:
        if name == "alloc":
            self._perilog_start(job, PROLOG)
        elif name == "finish":
            self._perilog_start(job, EPILOG)
        elif name == "exception" and (context or {}).get("severity") == 0:
            proc = self._procs().get(str(job.id))
            if proc is not None and proc.get("cancel"):
                # canceled: the command is killed (SIGTERM), which is no failure of its own
                self.b.cancel_timers(job.id, "jobtap.")
                self._perilog_finish(job.id, canceled=True)

    def _perilog_start(self, job: Any, kind: str, after_start: Any = None) -> bool:
        """Start job's prolog or epilog (False: none is configured);
        after_start() runs once its start event is posted."""
        try:
            desc = self._perilog_desc(kind)
            ignore = log_ignore(self.b.config)
        except FluxLiteError:
            desc, ignore = {}, []
        if not desc or not job.R:
            return False
        b = self.b
        per_rank = desc["per_rank"]
        ranks = sorted({r for ids, _c, _g in rlite_entries(job.R) for r in ids}) if per_rank else [0]
        env = {"FLUX_JOB_ID": f58(job.id), "FLUX_JOB_USERID": str(job.userid)}
        runs = {}
        for rank in ranks:
            host = b.resources.hostlist_of(IDset([rank]))
            run = emulate.housekeeping_run(desc["command"], rank, host, b.instance.owner, env)
            runs[rank] = (run.duration, run.rc) if run is not None else (0.0, 0)
            for _offset, stream, data in (run.output if run is not None else []):
                # each line of output in the instance log, as perilog.so logs it
                for line in data.splitlines():
                    if not any(p.search(line) for p in ignore):
                        b.log("job-manager", "err" if stream == "stderr" else "info",
                              f"{f58(job.id)}: {kind}: {host} (rank {rank}): {stream}: {line}")
        timeout = desc["timeout"]
        if timeout and any(d > timeout for d, _rc in runs.values()):
            # killed at the timeout: the ranks still running failed
            failed = [r for r, (d, _rc) in runs.items() if d > timeout]
            end, status, timedout = b.now + timeout, 15, True
        else:
            failed = [r for r, (_d, rc) in runs.items() if rc != 0]
            rc = max((rc for _d, rc in runs.values()), default=0)
            end, status, timedout = b.now + max(d for d, _rc in runs.values()), (rc & 0xFF) << 8, False
        proc = {"kind": kind, "ranks": str(IDset(ranks)), "total": len(ranks), "end": end,
                "start": b.now, "cancel": desc["cancel_on_exception"], "status": status,
                "failed": str(IDset(failed)) if per_rank else None, "timeout": timeout}
        if timedout:
            proc["timedout"] = True
        self.state.setdefault("perilog", {})[str(job.id)] = proc
        self._dirty = True
        b.jm.post(job, f"{kind}-start", {"description": f"job-manager.{kind}"})
        if after_start is not None:
            after_start()
        if proc["end"] <= b.now:
            self._perilog_finish(job.id)
        else:
            b.add_timer(proc["end"], "jobtap.perilog", job.id)
        return True

    def timer(self, what: str, jobid: int, arg: Any) -> None:
        if what == "perilog":
            self._perilog_finish(jobid)

    def _perilog_finish(self, jobid: int, canceled: bool = False) -> None:
        procs = self.state.get("perilog") or {}
        proc = procs.pop(str(jobid), None)
        if proc is None:
            return
        self._dirty = True
        b = self.b
        job = b.jm.lookup(jobid)
        if job is None:
            return
        kind = proc["kind"]
        status = 15 if canceled else proc["status"]
        failed = status != 0 or proc.get("timedout")
        if failed and not canceled:
            ranks = proc.get("failed")
            hosts = b.resources.hostlist_of(IDset.parse(ranks)) if ranks else "unknown"
            if proc.get("timedout"):
                note = f"{kind} timed out on {hosts} (rank {ranks if ranks else '(null)'})"
            else:
                code = (status >> 8) & 0xFF
                if code > 128:
                    note = f"{kind} killed by signal {code - 128} on {hosts} (rank {ranks or '(null)'})"
                else:
                    note = f"{kind} exited with code={code} on {hosts} (rank {ranks or '(null)'})"
            if ranks:
                # per-rank: the nodes that failed it are drained (before the finish event)
                what = "timed out" if proc.get("timedout") else "failed"
                b.resources.drain(IDset.parse(ranks), f"{kind} {what} for job {f58(jobid)}", mode="update")
            # a failed prolog fails the job; a failed epilog only marks it
            b.jm.raise_exception(job, kind, 0 if kind == PROLOG else 2, note, userid=b.instance.owner)
        finish = {"description": f"job-manager.{kind}", "status": status}
        if kind == PROLOG and failed:
            # an epilog still runs, to undo what the prolog did: its start
            # is posted before prolog-finish, so the job is not freed between
            if self._perilog_start(job, EPILOG, lambda: b.jm.post(job, "prolog-finish", finish)):
                return
        b.jm.post(job, f"{kind}-finish", finish)


def perilog_desc(cfg: dict, kind: str) -> dict:
    """perilog.so's reading of [job-manager.KIND] (KIND prolog or epilog):
    {} when absent, else the command and its settings as query shows them."""
    conf = configmod.get_path(cfg, f"job-manager.{kind}")
    if conf is None:
        return {}

    def refuse(msg: str) -> FluxLiteError:
        return configmod.ConfigError(f"[job-manager.{kind}]: {msg}")

    if not isinstance(conf, dict):
        raise refuse(f"Expected object, got {jansson_type(conf)}")
    kinds = {"timeout": (str,), "kill-timeout": (int, float), "per-rank": (bool,),
             "cancel-on-exception": (bool,), "exit-on-first-error": (bool,)}
    for key, types in kinds.items():
        value = conf.get(key)
        if key in conf and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
            want = {str: "string", bool: "true or false", int: "real"}[types[0]]
            raise refuse(f"Expected {want}, got {jansson_type(value)}")
    extra = [k for k in conf if k not in kinds and k != "command"]
    if extra:
        raise refuse(f"{len(extra)} object item(s) left unpacked: {', '.join(extra)}")
    command = conf.get("command")
    if command is not None and not isinstance(command, list):
        raise refuse("command must be an array")
    if command is None:
        imp = configmod.get_path(cfg, "exec.imp")
        if isinstance(imp, str):
            command = [imp, "run", kind]
    elif not command or not all(isinstance(a, str) for a in command):
        raise refuse(f"malformed {kind} command")
    timeout = conf.get("timeout", "30m" if kind == PROLOG else "0")
    try:
        seconds = fsd.parse(timeout)
    except ValueError:
        raise refuse(f"invalid {kind} timeout") from None
    if command is None:
        raise refuse("no command specified and exec.imp not defined")
    kill_timeout = conf.get("kill-timeout", -1.0)
    return {"command": list(command), "per_rank": bool(conf.get("per-rank", False)),
            "cancel_on_exception": bool(conf.get("cancel-on-exception", kind == PROLOG)),
            "timeout": 0.0 if math.isinf(seconds) else float(seconds),
            "kill-timeout": float(kill_timeout) if kill_timeout > 0 else 60.0}


def log_ignore(cfg: dict) -> list:
    """[job-manager.perilog] log-ignore: the patterns of output lines not logged."""
    import re

    patterns = configmod.get_path(cfg, "job-manager.perilog.log-ignore")
    if patterns is None:
        return []
    prefix = "[job-manager.perilog]: error parsing log-ignore: "
    if not isinstance(patterns, list):
        raise configmod.ConfigError(prefix + "not an array")
    if not all(isinstance(p, str) for p in patterns):
        raise configmod.ConfigError(prefix + "all entries must be a string value")
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern))
        except re.error:
            raise configmod.ConfigError(prefix + f"Failed to compile regex: {pattern}") from None
    return out


def _resource_units(R: Any) -> set[tuple[int, str, int]]:
    """Every (rank, "core"|"gpu", id) of R."""
    units: set[tuple[int, str, int]] = set()
    if not R:
        return units
    try:
        entries = rlite_entries(R)
    except (ValueError, TypeError, KeyError, AttributeError):
        return units
    for ranks, cores, gpus in entries:
        for rank in ranks:
            units.update((rank, "core", c) for c in cores)
            units.update((rank, "gpu", g) for g in gpus)
    return units
