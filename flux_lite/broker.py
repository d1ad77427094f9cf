"""The broker of one command: it hosts the modules and carries their messages.

Flux's broker routes RFC 27 messages between the job manager and the
scheduler module; here they are dicts passed through an in-process queue, so
the two components stay separate and talk only through the protocol. Timed
entries (job run ends, expirations, housekeeping) are rows in the ``timers``
table; ``advance_to`` fires them in time order, letting every consequence of
one entry settle before the next.
"""

import collections
import heapq
import importlib
import json
import math

from flux_lite import protocol
from flux_lite.limits import MAX_TIME
from flux_lite.protocol import Cred
from flux_lite.schedstate import MODULE_KEY
from flux_lite.stored import TIMERS, DamagedError

# messages held for deferred modules (module.debug {"defer": true}): {name: [[topic, payload], ...]}
DEFERRED_KEY = "broker.deferred"

_LOUD = ("emerg", "alert", "crit", "err", "warning")
_ALL_LOADED = (math.inf, 0)  # the timers cursor once every row is in memory
TIMER_MODULES = ("exec", "housekeeping", "depend", "sched", "jobtap")  # what _fire dispatches to
# finished jobs a catch-up holds in memory before writing them out (flush_batch)
FLUSH_BATCH = 512


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _check_next(row):
    """The (t, seq) of the next stored timer, checked (a damaged t would be compared with times)."""
    if row is not None and not (_number(row[0]) and isinstance(row[1], int)):
        raise DamagedError(TIMERS, f"row {row[1]!r}: the time is not a number")
    return row


def _check_timer_row(seq, t, kind, jobid, arg):
    """A stored timer row as the broker can fire it; its argument decoded.
    A damaged row (a bit flip, a stray tool) is DamagedError, not a traceback."""
    try:
        if not isinstance(seq, int) or not _number(t):
            raise ValueError("the time is not a number")
        if not isinstance(kind, str) or kind.partition(".")[0] not in TIMER_MODULES:
            raise ValueError(f"unknown timer kind {kind!r}")
        if jobid is not None and not isinstance(jobid, int):
            raise ValueError("the job id is not an integer")
        return None if arg is None else json.loads(arg)
    except (ValueError, TypeError, RecursionError) as exc:
        raise DamagedError(TIMERS, f"row {seq!r}: {exc}") from None


def _module(slot: str, path: str, name: str, doc: str | None = None) -> property:
    """A broker module, imported and created on first use (most commands
    touch few of them) and kept in the attribute `slot`."""

    def get(broker):
        module = getattr(broker, slot)
        if module is None:
            module = getattr(importlib.import_module(path), name)(broker)
            setattr(broker, slot, module)
        return module

    return property(get, doc=doc or f"The {name} module (loaded on first use).")


class Broker:
    def __init__(self, instance, now):
        self.instance = instance
        self.kvs = instance.kvs
        self.now = now
        self.step_target = now  # where the command's step catches up to (Instance._step)
        self.messages = collections.deque()
        # the modules' slots: each is created on first use (see _module)
        self._jm = self._exec = self._hk = self._resources = self._deps = self._queues = None
        self._sched = self._jobtap = None
        self._sched_loaded = None  # None = not looked up yet
        # modules beside the scheduler that hold state of their own (Fluxion's
        # resource and feasibility modules: sched/fluxion_resource.py), by name
        self.companions = {}
        self._module_file_checked = False  # see run(): a module file attaches before any work
        self._timers = None
        self._deferred_msgs = None  # module name -> held messages (see defer), read when first needed
        self._deferred_dirty = False
        # a read-only command's broker (Instance.read_session): the instance
        # is settled, so there is no module work to run and nothing to save
        self.reading = False

    # -- modules (loaded on first use: most commands touch few of them) -------

    @property
    def config(self):
        return self.instance.config

    jm = _module("_jm", "flux_lite.job_manager.manager", "JobManager")
    exec = _module("_exec", "flux_lite.job_manager.exec", "Exec")
    housekeeping = _module("_hk", "flux_lite.job_manager.housekeeping", "Housekeeping")
    deps = _module("_deps", "flux_lite.job_manager.dependency", "Dependencies")
    jobtap = _module("_jobtap", "flux_lite.job_manager.jobtap", "Jobtap",
                     "The job manager's jobtap plugins: which are loaded, and the emulated ones' state.")
    resources = _module("_resources", "flux_lite.resources", "Resources")
    queues = _module("_queues", "flux_lite.job_manager.queues", "Queues",
                     "The job manager's queues (RFC 33): config, enable/start state.")

    @property
    def sched(self):
        """The loaded scheduler module, or None when none is loaded."""
        if self._sched_loaded is None:
            from flux_lite.sched import loader

            self._sched = loader.load_persisted(self)
            self._sched_loaded = True
        return self._sched

    def companion(self, name):
        """The loaded companion module `name` (sched.registry), or None."""
        module = self.companions.get(name)
        if module is None:
            from flux_lite.sched import registry

            cls = registry.companion_class(name)
            if cls is not None:
                module = importlib.import_module(cls.__module__).get(self)
        return module

    def scheduler_in_memory(self):
        """Has this command loaded the scheduler module? (If not, its
        persisted state is current.)"""
        return bool(self._sched_loaded) and self._sched is not None

    # -- logging ------------------------------------------------------------

    # while set, only warnings and errors are logged (a module file's quiet reattachment: sched.hosted)
    log_quiet = False

    def log(self, name, level, msg):
        if self.log_quiet and level not in _LOUD:
            return
        self.instance.log(name, level, msg, t=self.now)

    # -- messages and requests (RFC 27: see flux_lite.protocol) ---------------

    def _service(self, topic):
        """The module serving topic's service, or None (not loaded)."""
        service = topic.split(".", 1)[0]
        if service == "feasibility":
            # Fluxion's feasibility module when loaded, else the scheduler
            return self.companion("sched-fluxion-feasibility") or self.sched
        if service == "sched":
            return self.sched
        if service.startswith("sched-fluxion-"):
            module = self.companion(service)
            if module is None and self.sched is not None and self.sched.name == service:
                module = self.sched
            return module
        if service == "job-manager":
            return self.jm
        return None

    def send(self, topic, payload):
        """Queue a message; it is delivered by run()."""
        self.messages.append((topic, payload))

    def next_message_is(self, topic) -> bool:
        """Whether the next message waiting for delivery has this topic."""
        return bool(self.messages) and self.messages[0][0] == topic

    def rpc(self, topic, payload, cred=None):
        """A request, answered at once: the response payload, or the
        handler's FluxLiteError (errno and message). cred: the requester's
        credentials (default: the instance, as for a module's request)."""
        module = self._service(topic)
        if module is None:
            raise protocol.error(protocol.ENOSYS, f"{topic}: service is not loaded")
        if cred is None:
            cred = self.module_cred
        return module.handle(topic, payload, cred)

    @property
    def module_cred(self):
        """The credentials of the instance's own modules: the owner's."""
        return Cred(self.instance.owner, True)

    def run(self):
        """Deliver messages and run module work until everything is quiet."""
        if not self._module_file_checked and not self.reading:
            self._attach_module_file()
        jm_idle = False  # the job manager's work just ended with nothing left, and nothing happened since
        while True:
            if self.messages:
                topic, payload = self.messages.popleft()
                self._deliver(topic, payload)
                jm_idle = False
                continue
            if self.reading:
                break
            if not jm_idle and self._jm is not None and self._jm.has_work():
                jm_idle = self._jm.work()
                continue
            sched = self._sched if self._sched_loaded else None
            if sched is not None and sched.needs_pass:
                sched.run_pass()
                jm_idle = False
                continue
            break

    def _attach_module_file(self):
        """A scheduler module file lives for one command (sched.hosted): it is
        loaded afresh when the command starts, before the job manager works,
        so that this command's messages all reach the same instance."""
        self._module_file_checked = True
        if self._sched_loaded is None:
            try:
                rec = self.kvs.get(MODULE_KEY)
            except DamagedError:
                return  # said when the scheduler is looked up (fsck repairs it)
            if rec is not None and rec.get("path"):
                self.sched.attach()

    def _deliver(self, topic, payload):
        module = self._service(topic)
        if module is None:
            if topic.startswith("sched."):
                # the scheduler is unloaded: Flux's broker answers ENOSYS;
                # the job manager never sends in that state, so this is a drop
                return
            raise RuntimeError(f"no handler for {topic}")
        if module is self._sched and self._deferred():
            held = self._deferred_msgs.get(module.name)
            if held is not None:
                held.append([topic, payload])
                self._deferred_dirty = True
                return
        module.handle(topic, payload, None)

    # -- deferred delivery (module.debug {"defer": true}, as Flux's broker) ----

    def _deferred(self):
        """Module name -> the messages held for it (kept in DEFERRED_KEY)."""
        if self._deferred_msgs is None:
            raw = self.kvs.get(DEFERRED_KEY)
            if raw is None:
                raw = {}
            elif not (isinstance(raw, dict) and all(
                    isinstance(held, list) and all(isinstance(m, list) and len(m) == 2 and isinstance(m[0], str)
                                                   and isinstance(m[1], dict) for m in held)
                    for held in raw.values())):
                raise DamagedError(DEFERRED_KEY, "not a table of held messages by module")
            self._deferred_msgs = raw
        return self._deferred_msgs

    def awaits_another_command(self):
        """Can only another command move things on: a module deferred (its
        messages held), or a job waiting for `flux job-exec-override`?
        (A wait under the virtual clock then polls instead of stalling.)"""
        try:
            if self._deferred():
                return True
        except DamagedError:
            pass
        return self.exec.awaits_override()

    def defer(self, name, flag):
        """Hold the messages for module `name` (flag), or deliver those held,
        in their order, before anything queued since (Flux's
        module_set_defer). The held messages are kept with the state, so the
        module gets none of them until a later command releases it."""
        held = self._deferred()
        if flag and name not in held:
            held[name] = []
            self._deferred_dirty = True
        elif not flag and name in held:
            self.messages.extendleft(reversed([(topic, payload) for topic, payload in held.pop(name)]))
            self._deferred_dirty = True

    def _drop_deferred(self, name):
        """A module removed loses what was held for it (Flux destroys its
        list); a damaged record goes too, so that a reload repairs it."""
        try:
            held = self._deferred()
        except DamagedError:
            self._deferred_msgs, self._deferred_dirty = {}, True
            return
        if held.pop(name, None) is not None:
            self._deferred_dirty = True

    # -- timers -------------------------------------------------------------
    # The queue is the ``timers`` table, indexed by (t, seq) and by job. A
    # command reads only what it reaches: the earliest rows, in chunks, as
    # time advances (the heap holds every row with t <= _loaded_to, plus
    # this command's new timers; _loaded_to is a (t, seq) cursor), and a
    # job's rows when its timers are canceled. Changes are written back by save(), row by row: the rows of
    # fired or canceled timers are deleted, new ones inserted.

    def _timer_init(self):
        if self._timers is None:
            self._timers = []  # heap of [t, seq, kind, jobid, arg, alive, stored]
            self._timers_by_job = {}
            self._timer_seq = None  # the highest seq in use (read when first needed)
            self._timer_drop = []  # seqs of stored rows to delete
            self._timer_reset = False  # rebuilt: every row is rewritten
            self._loaded_to = (-math.inf, 0)
            self._loaded_seqs = set()
            self._loaded_jobs = set()
            self._timer_chunk = 64
            self._db_next = _check_next(
                self.kvs.conn.execute("SELECT t, seq FROM timers ORDER BY t, seq LIMIT 1").fetchone())
            if self._db_next is None:
                self._loaded_to = _ALL_LOADED
        return self._timers

    def _timerq(self):
        return self._timer_init()

    def _track(self, entry):
        jobid = entry[3]
        if jobid is not None:
            self._timers_by_job.setdefault(jobid, []).append(entry)

    def _load_row(self, seq, t, kind, jobid, arg):
        if seq in self._loaded_seqs:
            return
        arg = _check_timer_row(seq, t, kind, jobid, arg)
        self._loaded_seqs.add(seq)
        entry = [t, seq, kind, jobid, arg, True, True]
        heapq.heappush(self._timers, entry)
        self._track(entry)

    def _load_chunk(self):
        """Read the next rows in (t, seq) order."""
        conn = self.kvs.conn
        t, seq = self._loaded_to
        rows = conn.execute("SELECT seq, t, kind, jobid, arg FROM timers WHERE (t, seq) > (?, ?) "
                            "ORDER BY t, seq LIMIT ?", (t, seq, self._timer_chunk)).fetchall()
        for row in rows:
            self._load_row(*row)
        if len(rows) < self._timer_chunk:
            self._loaded_to = _ALL_LOADED
            self._db_next = None
            return
        self._timer_chunk = min(self._timer_chunk * 4, 4096)  # a long catch-up reads more at once
        self._loaded_to = (rows[-1][1], rows[-1][0])
        self._db_next = _check_next(conn.execute(
            "SELECT t, seq FROM timers WHERE (t, seq) > (?, ?) ORDER BY t, seq LIMIT 1", self._loaded_to).fetchone())
        if self._db_next is None:
            self._loaded_to = _ALL_LOADED

    def _load_job_timers(self, jobid):
        """Every row of jobid's timers in memory (to cancel some)."""
        if jobid in self._loaded_jobs or self._loaded_to is _ALL_LOADED:
            return
        self._loaded_jobs.add(jobid)
        t, seq = self._loaded_to
        for row in self.kvs.conn.execute("SELECT seq, t, kind, jobid, arg FROM timers "
                                         "WHERE jobid = ? AND (t, seq) > (?, ?)", (jobid, t, seq)):
            self._load_row(*row)

    def add_timer(self, t, kind, jobid=None, arg=None):
        if not t < MAX_TIME:
            return  # at the end of 9999 (where longer times are clamped), or nan: never
        queue = self._timer_init()
        if self._timer_seq is None:
            row = self.kvs.conn.execute("SELECT max(seq) FROM timers").fetchone()
            self._timer_seq = (row[0] or 0) if not self._timer_reset else 0
        self._timer_seq += 1
        entry = [t, self._timer_seq, kind, jobid, arg, True, False]
        heapq.heappush(queue, entry)
        self._track(entry)

    def _kill(self, entry):
        entry[5] = False
        if entry[6]:
            self._timer_drop.append(entry[1])

    def cancel_timers(self, jobid, kind=None, match=None):
        """Drop a job's timers: all, one kind ('exec.expire'), or a module's
        ('exec.'); `match(arg)` narrows further (e.g. one housekeeping rank)."""
        self._timer_init()
        self._load_job_timers(jobid)
        entries = self._timers_by_job.get(jobid)
        if not entries:
            return
        keep = []
        for entry in entries:
            k = entry[2]
            hit = (kind is None or k == kind or (kind.endswith(".") and k.startswith(kind))) and (
                match is None or match(entry[4]))
            if hit:
                if entry[5]:
                    self._kill(entry)
            else:
                keep.append(entry)
        if keep:
            self._timers_by_job[jobid] = keep
        else:
            del self._timers_by_job[jobid]

    def reset_timers(self):
        """Forget every timer (derived-table rebuild)."""
        self._timer_init()
        self._timers.clear()
        self._timers_by_job = {}
        self._timer_seq = 0
        self._timer_drop = []
        self._timer_reset = True
        self._loaded_to = _ALL_LOADED
        self._db_next = None

    def _peek_timer(self):
        queue = self._timer_init()
        while True:
            while queue and not queue[0][5]:
                heapq.heappop(queue)
            nxt = self._db_next
            if nxt is not None and (not queue or (nxt[0], nxt[1]) <= (queue[0][0], queue[0][1])):
                self._load_chunk()
                continue
            return queue[0] if queue else None

    def next_event_time(self):
        entry = self._peek_timer()
        return None if entry is None else entry[0]

    def advance_to(self, t, progress=None):
        """Fire every timer due at or before t, in time order; then now = t.

        progress(done_seconds, total_seconds) is called now and then, for
        callers that show a progress bar.
        """
        self.run()
        start = self.now
        fired = 0
        while True:
            entry = self._peek_timer()
            if entry is None or entry[0] > t:
                break
            due = entry[0]
            if due > self.now:
                self.now = due
            # everything due at this instant fires before the modules run, so
            # 48 jobs ending together cost one scheduling pass, not 48
            while entry is not None and entry[0] == due:
                heapq.heappop(self._timers)
                self._kill(entry)
                _due, _seq, kind, jobid, arg, _alive, _stored = entry
                if jobid is not None:
                    lst = self._timers_by_job.get(jobid)
                    if lst is not None:
                        lst[:] = [e for e in lst if e is not entry]
                        if not lst:
                            del self._timers_by_job[jobid]
                self._fire(kind, jobid, arg)
                fired += 1
                entry = self._peek_timer()
            self.run()
            self.flush_batch(FLUSH_BATCH)
            if progress is not None and fired >= 256:
                fired = 0
                progress(self.now - start, t - start)
        if t > self.now:
            self.now = t
        self.run()

    def _save_timers(self):
        if self._timers is None:
            return
        conn = self.kvs.conn
        if self._timer_reset:
            conn.execute("DELETE FROM timers")
            self._timer_reset = False
        elif self._timer_drop:
            conn.executemany("DELETE FROM timers WHERE seq = ?", [(seq,) for seq in self._timer_drop])
        self._timer_drop = []
        new = [e for e in self._timers if e[5] and not e[6]]
        if new:
            conn.executemany(
                "INSERT INTO timers(seq, t, kind, jobid, arg) VALUES (?, ?, ?, ?, ?)",
                [(e[1], e[0], e[2], e[3], None if e[4] is None else json.dumps(e[4])) for e in new],
            )
            for e in new:
                e[6] = True

    def _fire(self, kind, jobid, arg):
        module, _, what = kind.partition(".")
        if module == "exec":
            self.exec.timer(what, jobid, arg)
        elif module == "housekeeping":
            self.housekeeping.timer(what, jobid, arg)
        elif module == "depend":
            self.deps.timer(what, jobid, arg)
        elif module == "sched":
            if self.sched is not None:
                self.sched.timer(what, jobid, arg)
        elif module == "jobtap":
            self.jobtap.timer(what, jobid, arg)
        else:  # (stored rows are checked as they load: _check_timer_row)
            raise RuntimeError(f"unknown timer kind {kind}")

    # -- scheduler load/unload ------------------------------------------------

    def load_scheduler_from_config(self):
        from flux_lite.sched import loader

        loader.load_from_config(self)

    def insmod_scheduler(self, sched, progress=None):
        """Host a new scheduler module; it then starts itself (hello, ready)."""
        self._sched = sched
        self._sched_loaded = True
        sched.start(progress=progress)
        self.run()

    def drop_scheduler(self):
        """Forget the scheduler object without telling anyone: its persisted
        state is being discarded (fsck --repair reloads it afresh)."""
        self._sched = None
        self._sched_loaded = True

    def scheduler_exited(self, sched):
        """A module's reactor failed (see sched.hosted): it is gone, and the
        job manager hears so, as after a removal."""
        if self._sched is sched:
            self._sched = None
            self._sched_loaded = True
            self.rpc(protocol.JM_DISCONNECT, {})

    def rmmod_scheduler(self):
        """Unload the scheduler: queued messages reach it first; then the job
        manager hears that it went away, as Flux's disconnect tells it."""
        self.run()
        # a scheduler this command has not loaded is loaded only for its
        # unload hook: its persisted state is about to be discarded (at a
        # reload of 10,000 running jobs, loading it was a tenth of the cost)
        if self._sched_loaded is not None or self._persisted_sched_unloads():
            unload = getattr(self.sched, "unload", None)
            if unload is not None:  # what it leaves in other modules (Fluxion's reservations)
                unload()
        rec = self.kvs.get(MODULE_KEY)
        if isinstance(rec, dict) and isinstance(rec.get("name"), str):
            self._drop_deferred(rec["name"])
        self._sched = None
        self._sched_loaded = True
        self.rpc(protocol.JM_DISCONNECT, {})

    def _persisted_sched_unloads(self):
        from flux_lite.sched import loader

        return loader.persisted_unloads(self)

    # -- persistence ---------------------------------------------------------

    def settle(self):
        """Run until quiet, including the scheduler's deferred forecast."""
        self.run()
        sched = self._sched if self._sched_loaded else None
        if sched is not None and sched.needs_forecast:
            sched.needs_forecast = False
            sched.forecast()
            self.run()

    def flush(self):
        """Settle and write module state (the job index) without ending the command."""
        if self.reading:
            return
        self.settle()
        if self._jm is not None:
            self._jm.save()

    def flush_batch(self, batch: int = 0) -> int:
        """Write what finished jobs left in memory into the command's
        transaction, once at least `batch` of them have gone inactive: their
        rows (JobIndex.flush_inactive) and the buffered eventlog appends and
        puts. A command that runs many jobs through (a catch-up, a replay)
        then holds about `batch` finished jobs at a time, not every one it
        touched. Returns how many jobs were forgotten."""
        jm = self._jm
        if jm is None or jm.index.finished_held() < batch:
            return 0
        count = jm.index.flush_inactive()
        self.kvs.flush()
        # the log lines so far too: a scheduler logging each job at debug
        # level (sched-backfill) would otherwise hold a few hundred bytes a job
        self.instance.flush_log()
        return count

    def save(self):
        self.settle()
        if self._jm is not None:
            self._jm.save()
        if self._deps is not None:
            self._deps.save()
        self._auto_purge()
        if self._sched_loaded and self._sched is not None:
            self._sched.save()
        for module in self.companions.values():
            module.save()
        if self._hk is not None:
            self._hk.save()
        if self._deferred_dirty:
            if self._deferred_msgs:
                self.kvs.put(DEFERRED_KEY, self._deferred_msgs)
            else:
                self.kvs.delete(DEFERRED_KEY)
            self._deferred_dirty = False
        if self._jobtap is not None:
            self._jobtap.save()
        self._save_timers()
        self.instance.set_clock(self.now)
        self.instance.flush_log()

    def _auto_purge(self):
        """job-manager.inactive-{age,num}-limit: purge as Flux's job manager does."""
        jm_cfg = self.config.get("job-manager") or {}
        if "inactive-age-limit" in jm_cfg or "inactive-num-limit" in jm_cfg:
            from flux_lite.job_manager import purge

            purge.auto(self)
