"""An instance: the state directory, its config and clock, and the catch-up loop.

There is no daemon. Each command opens the instance, starts one SQLite write
transaction, brings the instance up to "now" by processing every due timed
entry in time order (job run ends, expirations, housekeeping), applies its own
change, and commits. Everything a command does lands together or not at all.
"""

import contextlib
import errno
import gc
import json
import os
import stat
import time
from contextlib import contextmanager
from pathlib import Path

from flux_lite import access, log, users, watchers
from flux_lite import config as configmod
from flux_lite.access import Identity
from flux_lite.broker import Broker
from flux_lite.errors import ConfigError, FluxLiteError, NoInstanceError
from flux_lite.formats import eventlog
from flux_lite.formats.jobid import encode
from flux_lite.formats.rset import Rset, rlite_nodes
from flux_lite.job_manager import index as jobindex
from flux_lite.kvs import KVS, SideFile
from flux_lite.limits import MAX_TIME
from flux_lite.notices import READ_ONLY_NOTICE, notice
from flux_lite.resources import build_instance_R, configured_R, hardware_R

# the registry installs the checks of sched.policy and sched.module, which
# config and stored values get wherever an instance reads them
from flux_lite.sched import registry  # noqa: F401
from flux_lite.schema import DERIVED_NAMES, DERIVED_VERSION, TABLES

DB_NAME = "kvs.sqlite"
# The highest job id ever issued, kept outside the database: deleting
# kvs.sqlite-wal rolls the database back, and this file is how that is noticed.
HWM_NAME = "jobid-hwm"
# A fixed default start for the virtual clock (2026-01-01T00:00:00Z), so the
# same command sequence always yields the same job ids and eventlogs.
VIRTUAL_START = 1767225600.0
# The FLUID epoch is set slightly before the instance starts, as in Flux the
# first job is submitted a little after the broker's epoch (ids like ƒYpmarK).
FLUID_EPOCH_OFFSET = 1.0

def wall_time() -> float:
    """The real clock's source (one place, so tests can move it)."""
    return time.time()


def wall_sleep(seconds: float) -> None:
    """Wait in wall time between polls of a real-clock wait."""
    time.sleep(seconds)


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector for one command.

    A command builds tens of thousands of small objects (job records, idsets,
    messages) and keeps most of them until it ends; the collector's repeated
    scans of them cost up to half of a large scheduling pass. Our objects
    form almost no cycles, and a command is short, so nothing piles up.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _collect_step_garbage():
    """Between the steps of a polling wait: when the collector is off for
    the whole process (the console script), collect what the last step
    left (its broker and modules point at each other), or polls pile up."""
    if not gc.isenabled():
        gc.collect(1)


def default_state_dir():
    env = os.environ.get("FLUX_LITE_STATE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(xdg) / "flux-lite"


# the broker socket of an instance a `flux-lite start COMMAND` runs (named as
# Flux names rank 0's: local-0 in its rundir)
SOCKET_NAME = "local-0"


def socket_path(state_dir) -> Path:
    return Path(state_dir) / SOCKET_NAME


def served_socket(state_dir) -> Path | None:
    """The broker socket of the instance in state_dir, while one is served."""
    path = socket_path(state_dir)
    try:
        return path if stat.S_ISSOCK(path.stat().st_mode) else None
    except OSError:
        return None


def state_dir_of_uri(path: str) -> str:
    """The state directory a `local://` path names: the path itself, or the
    directory holding it when it is the broker socket of an instance there."""
    p = Path(path)
    try:
        is_socket = stat.S_ISSOCK(p.stat().st_mode)
    except (OSError, ValueError):
        return path
    if is_socket and (p.parent / DB_NAME).exists():
        return str(p.parent)
    return path


def resolve_state_dir(option=None):
    return Path(option) if option else default_state_dir()


class Instance:
    """An opened state directory."""

    def __init__(self, state_dir, kvs):
        self.state_dir = Path(state_dir)
        self.kvs = kvs
        self.meta = kvs.get("instance.meta")
        if self.meta is None:
            raise NoInstanceError(f"{self.state_dir}: not a flux-lite instance")
        users.give_names(self.meta.get("usernames") if isinstance(self.meta, dict) else None)
        self._config = None
        self._identity = None
        self._hwm_file = None  # the job id high-water mark, opened by the first submit
        self._log = []
        # set (a threading.Event) to end this instance's waits: a stream the
        # broker socket serves, canceled or disconnected (WaitCanceled)
        self.cancel = None

    # -- creation and opening ----------------------------------------------

    @classmethod
    def exists(cls, state_dir) -> bool:
        """Whether state_dir holds an instance; a directory this user may not
        look into (another user's, 0700) is one line, not a PermissionError."""
        try:
            return (Path(state_dir) / DB_NAME).exists()
        except OSError as exc:
            raise FluxLiteError(f"{state_dir}: cannot open the state directory: {exc.strerror}") from None

    @classmethod
    def open(cls, state_dir=None):
        state_dir = resolve_state_dir(state_dir)
        path = state_dir / DB_NAME
        if not cls.exists(state_dir):
            raise NoInstanceError(
                f"no flux-lite instance at {state_dir} (create one with 'flux-lite start', "
                "or select one with --state-dir or FLUX_LITE_STATE_DIR)"
            )
        check_private(state_dir, path)
        if writable(state_dir, path):
            return cls(state_dir, KVS(path))
        inst = cls(state_dir, KVS(path, readonly=True))
        notice(READ_ONLY_NOTICE.format(state_dir))
        return inst

    @staticmethod
    def settings(config, R, clock, start, **resources):
        """What a new instance is made of: (validated config, R, clock mode,
        clock start), R built from the config or the resources (size,
        hosts, cores, gpus) unless given, start from the config unless given."""
        cfg = configmod.validate(dict(config or {}))
        if R is None:
            R = build_instance_R(cfg, **resources)
        mode = clock or configmod.get_path(cfg, "clock.mode") or "real"
        if mode not in ("real", "virtual"):
            raise ConfigError(f"clock: expected 'real' or 'virtual', got {mode!r}")
        if mode == "virtual":
            if start is None:
                start = float(configmod.get_path(cfg, "clock.start", VIRTUAL_START))
        else:
            start = wall_time()
        return cfg, R, mode, start

    @classmethod
    def create(cls, state_dir, config=None, size=1, hosts=None, cores=4, gpus=0, clock=None, force=False,
               R=None, start=None, prepare=None, populate=None, load_scheduler=True):
        """Write a new instance: config, resource.R, clock, then load the scheduler.

        The database is built under a temporary name and published with one
        link(2), which fails if an instance appeared meanwhile: of racing
        starts exactly one wins, and a loser removes only its own files.
        """
        state_dir = Path(state_dir)
        hardware = None if R is not None else hardware_R(configmod.validate(dict(config or {})), size=size,
                                                           hosts=hosts, cores=cores, gpus=gpus)
        cfg, R, mode, start = cls.settings(config, R, clock, start, size=size, hosts=hosts, cores=cores,
                                           gpus=gpus)
        path = state_dir / DB_NAME
        made_dir = make_private_dir(state_dir)
        published = False
        tmp = None
        try:
            if cls.exists(state_dir) and not force:
                raise FluxLiteError(f"an instance already exists at {state_dir} (use --force to replace it)")
            tmp = state_dir / f".{DB_NAME}.new-{os.getpid()}-{os.urandom(4).hex()}"
            try:
                fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except OSError as exc:
                raise FluxLiteError(f"{state_dir}: cannot create the instance: {exc.strerror}") from None
            os.fchmod(fd, 0o600)  # whatever the umask; SQLite gives -wal and -shm the same mode
            os.close(fd)
            kvs = KVS(tmp, create=True)
            try:
                if populate is not None:
                    populate(state_dir, kvs)  # a restore writes the whole state itself
                else:
                    cls._populate(state_dir, kvs, cfg, R, mode, start, prepare, load_scheduler, hardware=hardware)
                kvs.publish()
            finally:
                kvs.close()
            if force:
                try:
                    for suffix in ("-wal", "-shm"):
                        _unlink(str(path) + suffix)
                    os.replace(tmp, path)
                except OSError as exc:
                    raise FluxLiteError(f"{state_dir}: cannot create the instance: {exc.strerror}") from None
            else:
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise FluxLiteError(
                        f"an instance already exists at {state_dir} (use --force to replace it)") from None
                except OSError as exc:
                    raise FluxLiteError(f"{state_dir}: cannot create the instance: {exc.strerror}") from None
            published = True
        finally:
            if tmp is not None:
                for suffix in ("", "-wal", "-shm", "-journal", "-holder"):
                    _discard(str(tmp) + suffix)
            if made_dir and not published:
                try:
                    state_dir.rmdir()
                except OSError:
                    pass
        return cls.open(state_dir)

    @classmethod
    def _populate(cls, state_dir, kvs, cfg, R, mode, start, prepare=None, load_scheduler=True, hardware=None):
        with kvs.transaction():
            for stmt in TABLES.split(";"):
                if stmt.strip():
                    kvs.conn.execute(stmt)
            kvs.conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")
            expiration = 0.0
            exp = configmod.get_path(cfg, "instance.expiration")
            if exp is not None:
                expiration = start + configmod._fsd(exp, "instance.expiration")
            if hardware is None:
                R["execution"]["starttime"] = start
                R["execution"]["expiration"] = expiration
            else:
                # R read from resource.path is kept as the file has it, as Flux keeps it
                R["execution"].setdefault("starttime", 0.0)
                R["execution"]["expiration"] = expiration or R["execution"].get("expiration", 0.0)
            own = hardware or R
            meta = {
                "version": 1,
                "owner": os.getuid(),
                "clock": mode,
                "start": start,
                "fluid_epoch": start - FLUID_EPOCH_OFFSET,
                "uuid": os.urandom(16).hex(),
                # the nodes' own resources (their hwloc topology in Flux): what
                # the resource module verifies resource.R against when it loads
                "hardware": {"version": 1, "execution": {k: own["execution"][k] for k in ("R_lite", "nodelist")
                                                         if k in own["execution"]}},
            }
            kvs.put("instance.meta", meta)
            kvs.put("instance.clock", {"now": start})
            kvs.put("config", cfg)
            kvs.put_text("resource.R", json.dumps(R))
            # the resource module defines the instance's resources first thing
            # (Flux's rc1 writes a fake R to the KVS, which the resource module reads)
            method = "kvs" if "fake-resources" in cfg else "configuration" if configured_R(cfg) else \
                "dynamic-discovery"
            kvs.append("resource.eventlog", eventlog.encode_entry(start, "resource-define", {"method": method}))
            inst = cls(state_dir, kvs)
            inst.log("broker", "info", f"instance created: {len(rlite_nodes(R))} nodes, clock {mode}", t=start)
            ctx = inst.context(now=start)
            ctx.resources.replay()  # the resource module's drain state, as it starts
            if hardware is not None and not configmod.get_path(cfg, "resource.noverify", False):
                # each broker's resource module checks its node against R as it starts
                for rank in Rset.from_dict(hardware).ranks:
                    ctx.resources.verify_self(rank)
            if configmod.get_path(cfg, "job-manager.housekeeping") is not None:
                ctx.housekeeping.config_loaded()
            if configmod.get_path(cfg, "job-manager.plugins"):
                ctx.jobtap.configure(cfg)
            if prepare is not None:
                # a restore fills in the archive's jobs before the scheduler says hello
                prepare(inst, ctx)
            if load_scheduler:
                ctx.load_scheduler_from_config()
            ctx.run()
            ctx.save()
            inst.flush_log()
        return inst

    def close(self):
        self.kvs.close()
        if self._hwm_file is not None:
            self._hwm_file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- properties ---------------------------------------------------------

    @property
    def owner(self):
        return self.meta["owner"]

    @property
    def identity(self):
        if self._identity is None:
            self._identity = Identity(self.owner)
        return self._identity

    @identity.setter
    def identity(self, value):
        """Who the next requests are from (the broker socket serves many requesters)."""
        self._identity = value

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

    @property
    def readonly(self):
        return self.kvs.readonly

    def clock_now(self):
        """The instance's current time: stored for a virtual clock, wall time otherwise."""
        stored = self.stored_now()
        if self.virtual or self.readonly:
            return stored
        # never let time run backwards across commands
        return max(wall_time(), stored)

    def stored_now(self):
        """The time the instance was last brought up to (by the last command)."""
        return self.kvs.get("instance.clock")["now"]

    def set_clock(self, now):
        if self.readonly and now == self.clock_now():
            return  # a read-only command that changed nothing
        self.kvs.put("instance.clock", {"now": now})

    # -- the log ----------------------------------------------------------------

    def log(self, name, level, msg, t=None):
        """Add a line to the instance log (written with the command's commit)."""
        if t is None:
            t = self.kvs.get("instance.clock")["now"]
        self._log.append((t, name, level, msg))

    def read_log(self, read=True, clear=False):
        """The instance log as (t, name, level, msg) rows, oldest first
        (flux dmesg); clear empties it afterwards, in the same transaction."""
        with self.kvs.transaction():
            rows = [row[1:] for row in log.read(self.kvs)] if read else []
            if clear:
                self.kvs.conn.execute("DELETE FROM dmesg")
        return rows

    def flush_log(self):
        if self._log:
            rows, self._log = self._log, []
            log.write(self.kvs.conn, rows)

    # -- sessions -----------------------------------------------------------------

    def context(self, now):
        return Broker(self, now)

    @contextmanager
    def _step(self):
        """The sequence every command runs, written once: the collector paused,
        one write transaction, a broker at the instance's "now" over derived
        tables known to be current, and the broker's state saved at the end.
        Anything raised rolls the whole step back, the log lines included.

        The broker starts where the last command left the instance, not at
        "now": under a real clock, whatever fell due since (a job's end, an
        expiration) is then stamped when it was due when the step catches up
        with advance_to(step_target), however late this command runs."""
        try:
            with gc_paused(), self.kvs.transaction():
                ctx = self.context(self.stored_now())
                ctx.step_target = self.clock_now()
                self._check_derived(ctx)
                if not self.readonly:
                    self._check_rollback(ctx)
                yield ctx
                ctx.save()
        except BaseException:
            self._log = []  # rolled back with everything else
            raise

    @contextmanager
    def session(self, catch_up=True):
        """One command: a write transaction, brought up to now, saved at the end."""
        with self._step() as ctx:
            if self.readonly:
                pass  # read-only: the last committed state
            elif catch_up:
                ctx.advance_to(ctx.step_target)
            else:
                ctx.now = ctx.step_target
            yield ctx
            if self.readonly:
                ctx.run()
            else:
                # what the command made due at once (a job whose command ends
                # as it starts) happens in this command: it leaves the instance settled
                ctx.advance_to(ctx.now)

    @contextmanager
    def read_session(self):
        """A command that only reads: the committed state, without the write lock.

        Every command leaves the instance settled, so when no timer has come
        due since (always, under a virtual clock) there is nothing to catch
        up: the command reads what it prints, through a broker that loads
        nothing it is not asked for, and no job manager or scheduler state
        is read or saved. Otherwise it runs as a full session, so that what
        it shows includes what has happened by now.
        """
        with gc_paused(), self.kvs.read_transaction():
            now = self.clock_now()
            if self._settled(now):
                ctx = self.context(now)
                ctx.reading = True
                yield ctx
                return
        with self.session() as ctx:
            yield ctx

    def _settled(self, now):
        """Current derived tables, no job id rollback to report, no timer due."""
        conn = self.kvs.conn
        if conn.execute("PRAGMA user_version").fetchone()[0] != DERIVED_VERSION:
            return False
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        if not DERIVED_NAMES <= present:
            return False
        if self.read_hwm() > self._known_max_jobid():
            return False
        return conn.execute("SELECT 1 FROM timers WHERE t <= ? LIMIT 1", (now,)).fetchone() is None

    # -- the job id high-water mark ------------------------------------------------

    def _tag(self):
        return self.meta.get("uuid") or f"start:{self.meta.get('start')!r}"

    def hwm_writer(self, jobid):
        """A hook that records jobid as the highest issued (run after commit)."""
        def write():
            if self._hwm_file is None:
                self._hwm_file = SideFile(str(self.state_dir / HWM_NAME))
            self._hwm_file.write(f"{self._tag()} {jobid}\n".encode())
        return write

    def read_hwm(self):
        """The recorded highest job id of this instance, or 0."""
        try:
            with open(self.state_dir / HWM_NAME, "rb") as f:
                tag, _, value = f.read(200).decode("ascii", "replace").strip().partition(" ")
            return int(value) if tag == self._tag() else 0
        except (OSError, ValueError):
            return 0

    def _known_max_jobid(self):
        """The highest job id the database knows it issued."""
        ckpt = self.kvs.get("checkpoint.job-manager")
        known = ckpt.get("max_jobid", 0) if isinstance(ckpt, dict) else 0
        return known if isinstance(known, int) else 0

    def _check_rollback(self, ctx):
        """Report a database that lost committed transactions (a deleted WAL),
        and keep new job ids above every id already handed out."""
        hwm = self.read_hwm()
        if not hwm or self._known_max_jobid() >= hwm:
            return

        msg = (f"state rolled back: jobs up to {encode(hwm, 'f58')} were acknowledged but are missing "
               f"(was {DB_NAME}-wal deleted?); new job ids continue above them")
        notice(msg)
        self.log("job-manager", "err", msg, t=ctx.now)
        ctx.jm.raise_jobid_floor(hwm)

    def _check_derived(self, ctx):
        """Rebuild the derived tables from the eventlogs when they are missing
        or were written by another version of their layout."""
        conn = self.kvs.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        if version == DERIVED_VERSION and DERIVED_NAMES <= present:
            if jobindex.COUNTS not in present and not self.readonly:
                jobindex.ensure_counts(conn)  # (a state dir from before the inactive counts: once)
            if jobindex.HOLDING_INDEX not in present and not self.readonly:
                jobindex.ensure_holding_index(conn)  # (and from before hello's index)
            return
        if self.readonly:
            raise FluxLiteError("the job index must be rebuilt, and the state directory is read-only")
        # a declared lazy point: the rebuild brings both sides and the scheduler
        # loader, which a command that finds its tables in place never needs
        from flux_lite.rebuild import rebuild

        rebuild(ctx)
        self.kvs.conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")

    def wait(self, check, timeout=None, poll=0.02, watches=None):
        """Wait until check(broker) returns something other than None.

        Under a virtual clock waiting *is* letting simulated time pass: the
        clock advances from one timed event to the next until check succeeds,
        the timeout (in simulated seconds) runs out, or nothing is left that
        could happen. Under a real clock it polls in wall time, and while it
        does, the watches (a list, or a function giving one when the wait
        starts polling: see flux_lite.watchers) are announced for `flux
        module stats`.
        """
        with contextlib.ExitStack() as stack:
            return self._wait(check, timeout, poll, watches, stack)

    def _wait(self, check, timeout, poll, watches, stack):
        deadline = None
        announced = False
        while True:
            outcome = None
            start = None
            try:
                with self._step() as ctx:
                    ctx.advance_to(ctx.step_target)
                    now = start = ctx.now
                    limit = self.clock_limit
                    if deadline is None and timeout is not None and now + timeout <= limit:
                        # (a timeout reaching past the clock's limit is no
                        # timeout: the clock cannot be moved there)
                        deadline = now + timeout
                    result = check(ctx)
                    held = False
                    while result is None and self.virtual:
                        nxt = ctx.next_event_time()
                        if nxt is None or nxt > limit or (deadline is not None and nxt > deadline):
                            # the time waited has passed, even though nothing came
                            if deadline is not None:
                                ctx.advance_to(deadline)
                                outcome = WaitTimeout("timeout")
                            elif ctx.awaits_another_command():
                                # a deferred module, a job in exec override
                                # mode: another command may move them, so the
                                # wait polls
                                held = True
                            else:
                                outcome = WaitStalled("nothing left to happen under the virtual clock")
                            break
                        ctx.advance_to(nxt)
                        result = check(ctx)
                    if self.virtual and deadline is None and ctx.now > start and (
                            isinstance(outcome, WaitStalled) or isinstance(result, str) or held):
                        # what was waited for never came: the simulated time it
                        # took to find out is rolled back, not imposed on every job
                        raise _Undo(outcome, result)
            except _Undo as undo:
                outcome, result = undo.args
            if outcome is not None:
                raise outcome
            if result is not None:
                return result
            if deadline is not None and wall_time() >= deadline:
                raise WaitTimeout("timeout")
            if watches is not None and not announced:
                # only a wait that has to poll is seen by others
                announced = True
                listed = watches() if callable(watches) else watches
                stack.enter_context(watchers.announced(self.state_dir, listed))
            ctx = None  # the poll's broker is garbage from here
            _collect_step_garbage()
            if self.cancel is None:
                wall_sleep(poll)
            elif self.cancel.wait(poll):
                raise WaitCanceled("No data available")

    @property
    def clock_limit(self) -> float:
        """The last time a virtual clock may reach: a job ID (FLUID) starts
        with the milliseconds since the instance's epoch, and must fit
        SQLite's signed 64-bit integers (39 bits of milliseconds: 17.4
        years); nothing is printable past the year 9999."""
        return min(MAX_TIME, self.meta["fluid_epoch"] + ((1 << 39) - 1) / 1000)

    def advance_clock(self, seconds, progress=None):
        """Move a virtual clock forward, processing everything that falls due."""
        access.require_owner(self.identity, "clock advance")
        if not self.virtual:
            raise FluxLiteError("the clock is real: only a virtual clock can be advanced")
        limit = self.clock_limit
        if not 0 <= seconds or self.clock_now() + seconds > limit:
            if limit == MAX_TIME:
                raise FluxLiteError("cannot advance the clock past the year 9999")
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(limit))
            raise FluxLiteError(f"cannot advance the clock past {when}: job IDs run out there "
                                "(17.4 years after the instance started)")
        with self._step() as ctx:
            ctx.advance_to(ctx.now + seconds, progress=progress)
        return ctx.now




def writable(state_dir, path):
    """Can this process change the instance? (SQLite also needs the directory,
    for the -wal and -shm files.)"""
    return os.access(state_dir, os.W_OK) and os.access(path, os.W_OK)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _discard(path):
    """Best-effort cleanup: on a read-only file system even a file that was
    never created cannot be unlinked (EROFS); the error already reported is
    the one that matters."""
    try:
        os.unlink(path)
    except OSError:
        pass


def make_private_dir(state_dir):
    """Create the state directory 0700 (whatever the umask); True if this call
    created it. An existing directory must pass check_private."""
    try:
        state_dir.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not state_dir.is_dir():
            raise FluxLiteError(f"{state_dir}: cannot create the state directory: Not a directory") from None
        check_private(state_dir)
        return False
    except OSError as exc:
        raise FluxLiteError(f"{state_dir}: cannot create the state directory: {exc.strerror}") from None
    try:
        os.chmod(state_dir, 0o700)
    except OSError as exc:
        raise FluxLiteError(f"{state_dir}: cannot create the state directory: {exc.strerror}") from None
    return True


def check_private(state_dir, *files):
    """Refuse a state directory (or database file) that another user can write:
    whoever can write it can replace the instance under its owner."""
    me = os.geteuid()
    for path in (state_dir, *files):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FluxLiteError(f"{path}: {exc.strerror}") from None
        if st.st_uid not in (me, 0) and me != 0:
            raise FluxLiteError(f"refusing to use {path}: it belongs to uid {st.st_uid}")
        if st.st_mode & 0o022:
            raise FluxLiteError(f"refusing to use {path}: other users can write it (chmod go-w {path})")


class _Undo(Exception):
    """Rolls a wait's transaction back, carrying its outcome out."""


class WaitTimeout(FluxLiteError):
    pass


class WaitStalled(FluxLiteError):
    pass


class WaitCanceled(FluxLiteError):
    """The waiter went away (Flux ends a canceled stream with ENODATA)."""

    errno = errno.ENODATA
