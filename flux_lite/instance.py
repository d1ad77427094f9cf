"""An instance: the state directory, its config and clock, and the catch-up loop.

There is no daemon. Each command opens the instance, starts one SQLite write
transaction, brings the instance up to "now" by processing every due timed
entry in time order (job run ends, expirations, housekeeping), applies its own
change, and commits. Everything a command does lands together or not at all.
"""

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from flux_lite import config as configmod
from flux_lite.errors import ConfigError, FluxLiteError, NoInstanceError
from flux_lite.kvs import KVS

DB_NAME = "kvs.sqlite"
# A fixed default start for the virtual clock (2026-01-01T00:00:00Z), so the
# same command sequence always yields the same job ids and eventlogs.
VIRTUAL_START = 1767225600.0
# The FLUID epoch is set slightly before the instance starts, as in Flux the
# first job is submitted a little after the broker's epoch (ids like ƒYpmarK).
FLUID_EPOCH_OFFSET = 1.0

MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z: the last time the tools can print

ROLE_OWNER = 1
ROLE_USER = 2

TABLES = """
CREATE TABLE IF NOT EXISTS jobs (
    id         INTEGER PRIMARY KEY,
    userid     INTEGER NOT NULL,
    state      INTEGER NOT NULL,
    priority   INTEGER,
    t_submit   REAL,
    t_run      REAL,
    t_inactive REAL,
    has_resources INTEGER NOT NULL DEFAULT 0,
    R          TEXT,
    result     INTEGER,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_inactive ON jobs(state, t_inactive, id);
CREATE INDEX IF NOT EXISTS jobs_user ON jobs(userid, id);
CREATE INDEX IF NOT EXISTS jobs_result ON jobs(state, result);
CREATE TABLE IF NOT EXISTS waitable (
    id    INTEGER PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS timers (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    t     REAL NOT NULL,
    kind  TEXT NOT NULL,
    jobid INTEGER,
    arg   TEXT
);
CREATE INDEX IF NOT EXISTS timers_t ON timers(t, seq);
CREATE INDEX IF NOT EXISTS timers_job ON timers(jobid);
CREATE TABLE IF NOT EXISTS dmesg (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    t     REAL NOT NULL,
    name  TEXT NOT NULL,
    level TEXT NOT NULL,
    msg   TEXT NOT NULL
);
"""

# derived tables: each can be rebuilt from the eventlogs alone, and is when
# missing or when SQLite's user_version says their layout is an older one
# (jobs_user serves `job last`, jobs_result `jobs --stats`; waitable holds the
# waitable jobs not yet waited on)
DERIVED_NAMES = {"jobs", "timers", "jobs_state", "jobs_inactive", "jobs_user", "jobs_result", "waitable"}
DERIVED_VERSION = 3


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector for one command.

    A command builds tens of thousands of small objects (job records, idsets,
    messages) and keeps most of them until it ends; the collector's repeated
    scans of them cost up to half of a large scheduling pass. Our objects
    form almost no cycles, and a command is short, so nothing piles up.
    """
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def default_state_dir():
    env = os.environ.get("FLUX_LITE_STATE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(xdg) / "flux-lite"


def resolve_state_dir(option=None):
    return Path(option) if option else default_state_dir()


class Identity:
    """Who is asking: the instance owner may act as another user (as in Flux)."""

    def __init__(self, owner):
        real = os.getuid()
        self.owner = owner
        env_uid = os.environ.get("FLUX_HANDLE_USERID")
        env_role = os.environ.get("FLUX_HANDLE_ROLEMASK")
        self.userid = real
        self.rolemask = ROLE_OWNER if real == owner else ROLE_USER
        if env_uid is not None or env_role is not None:
            if real != owner:
                raise FluxLiteError("only the instance owner may set FLUX_HANDLE_USERID or FLUX_HANDLE_ROLEMASK")
            try:
                if env_uid is not None:
                    self.userid = int(env_uid, 0)
                if env_role is not None:
                    self.rolemask = int(env_role, 0)
                elif self.userid != owner:
                    self.rolemask = ROLE_USER
            except ValueError:
                raise FluxLiteError("FLUX_HANDLE_USERID and FLUX_HANDLE_ROLEMASK must be integers") from None
            if self.userid < 0:
                raise FluxLiteError("FLUX_HANDLE_USERID must not be negative")

    @property
    def is_owner(self):
        return bool(self.rolemask & ROLE_OWNER)


class Instance:
    """An opened state directory."""

    def __init__(self, state_dir, kvs):
        self.state_dir = Path(state_dir)
        self.kvs = kvs
        self.meta = kvs.get("instance.meta")
        if self.meta is None:
            raise NoInstanceError(f"{self.state_dir}: not a flux-lite instance")
        self._config = None
        self._identity = None
        self._log = []

    # -- creation and opening ----------------------------------------------

    @classmethod
    def exists(cls, state_dir):
        return (Path(state_dir) / DB_NAME).exists()

    @classmethod
    def open(cls, state_dir=None):
        state_dir = resolve_state_dir(state_dir)
        path = state_dir / DB_NAME
        if not path.exists():
            raise NoInstanceError(
                f"no flux-lite instance at {state_dir} (create one with 'flux-lite start', "
                "or select one with --state-dir or FLUX_LITE_STATE_DIR)"
            )
        return cls(state_dir, KVS(path))

    @classmethod
    def create(cls, state_dir, config=None, size=1, hosts=None, cores=4, gpus=0, clock=None, force=False):
        """Write a new instance: config, resource.R, clock, then load the scheduler."""
        from flux_lite.resources import build_instance_R

        state_dir = Path(state_dir)
        cfg = configmod.validate(dict(config or {}))
        path = state_dir / DB_NAME
        if path.exists():
            if not force:
                raise FluxLiteError(f"an instance already exists at {state_dir} (use --force to replace it)")
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(str(path) + suffix)
                except FileNotFoundError:
                    pass
        R = build_instance_R(cfg, size=size, hosts=hosts, cores=cores, gpus=gpus)
        mode = clock or configmod.get_path(cfg, "clock.mode") or "real"
        if mode not in ("real", "virtual"):
            raise ConfigError(f"clock: expected 'real' or 'virtual', got {mode!r}")
        if mode == "virtual":
            start = float(configmod.get_path(cfg, "clock.start", VIRTUAL_START))
        else:
            start = time.time()
        state_dir.mkdir(parents=True, exist_ok=True)
        kvs = KVS(path, create=True)
        try:
            return cls._populate(state_dir, kvs, cfg, R, mode, start)
        except BaseException:
            # a failed start leaves no half-created instance behind
            kvs.close()
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(str(path) + suffix)
                except FileNotFoundError:
                    pass
            raise

    @classmethod
    def _populate(cls, state_dir, kvs, cfg, R, mode, start):
        with kvs.transaction():
            for stmt in TABLES.split(";"):
                if stmt.strip():
                    kvs.conn.execute(stmt)
            kvs.conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")
            expiration = 0.0
            exp = configmod.get_path(cfg, "instance.expiration")
            if exp is not None:
                expiration = start + configmod._fsd(exp, "instance.expiration")
            R["execution"]["starttime"] = start
            R["execution"]["expiration"] = expiration
            meta = {
                "version": 1,
                "owner": os.getuid(),
                "clock": mode,
                "start": start,
                "fluid_epoch": start - FLUID_EPOCH_OFFSET,
            }
            kvs.put("instance.meta", meta)
            kvs.put("instance.clock", {"now": start})
            kvs.put("config", cfg)
            kvs.put_text("resource.R", json.dumps(R))
            inst = cls(state_dir, kvs)
            inst.log("broker", "info", f"instance created: {len(R_ranks(R))} nodes, clock {mode}", t=start)
            ctx = inst.context(now=start)
            ctx.load_scheduler_from_config()
            ctx.run()
            ctx.save()
            inst.flush_log()
        return inst

    def close(self):
        self.kvs.close()

    # -- properties ---------------------------------------------------------

    @property
    def owner(self):
        return self.meta["owner"]

    @property
    def identity(self):
        if self._identity is None:
            self._identity = Identity(self.owner)
        return self._identity

    @property
    def config(self):
        if self._config is None:
            self._config = self.kvs.get("config", {})
        return self._config

    def set_config(self, cfg):
        self._config = cfg
        self.kvs.put("config", cfg)

    @property
    def virtual(self):
        return self.meta["clock"] == "virtual"

    def clock_now(self):
        """The instance's current time: stored for a virtual clock, wall time otherwise."""
        stored = self.kvs.get("instance.clock")["now"]
        if self.virtual:
            return stored
        # never let time run backwards across commands
        return max(time.time(), stored)

    def set_clock(self, now):
        self.kvs.put("instance.clock", {"now": now})

    # -- the log ----------------------------------------------------------------

    def log(self, name, level, msg, t=None):
        """Add a line to the instance log (written with the command's commit)."""
        if t is None:
            t = self.kvs.get("instance.clock")["now"]
        self._log.append((t, name, level, msg))

    def flush_log(self):
        if self._log:
            self.kvs.conn.executemany("INSERT INTO dmesg(t, name, level, msg) VALUES (?, ?, ?, ?)", self._log)
            self._log = []

    # -- sessions -----------------------------------------------------------------

    def context(self, now):
        from flux_lite.broker import Broker

        return Broker(self, now)

    @contextmanager
    def session(self, catch_up=True):
        """One command: a write transaction, brought up to now, saved at the end."""
        try:
            with _gc_paused(), self.kvs.transaction():
                now = self.clock_now()
                ctx = self.context(now)
                self._check_derived(ctx)
                if catch_up:
                    ctx.advance_to(now)
                yield ctx
                ctx.run()
                ctx.save()
        except BaseException:
            self._log = []  # rolled back with everything else
            raise

    def _check_derived(self, ctx):
        """Rebuild the derived tables from the eventlogs when they are missing
        or were written by another version of their layout."""
        conn = self.kvs.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        if version == DERIVED_VERSION and DERIVED_NAMES <= present:
            return
        from flux_lite.job_manager import replay

        replay.rebuild(ctx)
        self.kvs.conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")

    def wait(self, check, timeout=None, poll=0.02):
        """Wait until check(broker) returns something other than None.

        Under a virtual clock waiting *is* letting simulated time pass: the
        clock advances from one timed event to the next until check succeeds,
        the timeout (in simulated seconds) runs out, or nothing is left that
        could happen. Under a real clock it polls in wall time.
        """
        deadline = None
        while True:
            outcome = None
            with _gc_paused(), self.kvs.transaction():
                now = self.clock_now()
                ctx = self.context(now)
                self._check_derived(ctx)
                ctx.advance_to(now)
                if deadline is None and timeout is not None:
                    deadline = now + timeout
                result = check(ctx)
                while result is None and self.virtual:
                    nxt = ctx.next_event_time()
                    if nxt is None or (deadline is not None and nxt > deadline):
                        # the time waited has passed, even though nothing came
                        if deadline is not None:
                            ctx.advance_to(deadline)
                            outcome = WaitTimeout("timeout")
                        else:
                            outcome = WaitStalled("nothing left to happen under the virtual clock")
                        break
                    ctx.advance_to(nxt)
                    result = check(ctx)
                ctx.save()
            if outcome is not None:
                raise outcome
            if result is not None:
                return result
            if deadline is not None and time.time() >= deadline:
                raise WaitTimeout("timeout")
            time.sleep(poll)

    def advance_clock(self, seconds, progress=None):
        """Move a virtual clock forward, processing everything that falls due."""
        if not self.virtual:
            raise FluxLiteError("the clock is real: only a virtual clock can be advanced")
        if not 0 <= seconds or self.clock_now() + seconds > MAX_TIME:
            raise FluxLiteError("cannot advance the clock past the year 9999")
        with _gc_paused(), self.kvs.transaction():
            now = self.clock_now()
            ctx = self.context(now)
            self._check_derived(ctx)
            ctx.advance_to(now + seconds, progress=progress)
            ctx.save()
            return ctx.now


class WaitTimeout(FluxLiteError):
    pass


class WaitStalled(FluxLiteError):
    pass


def R_ranks(R):
    from flux_lite.formats.idset import IDset

    ranks = []
    for ent in R["execution"]["R_lite"]:
        ranks.extend(IDset.parse(ent["rank"]))
    return ranks
