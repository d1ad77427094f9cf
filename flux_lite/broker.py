"""The broker of one command: it hosts the modules and carries their messages.

Flux's broker routes RFC 27 messages between the job manager and the
scheduler module; here they are dicts passed through an in-process queue, so
the two components stay separate and talk only through the protocol. Timed
entries (job run ends, expirations, housekeeping) are rows in the ``timers``
table; ``advance_to`` fires them in time order, letting every consequence of
one entry settle before the next.
"""

import collections
import json



class Broker:
    def __init__(self, instance, now):
        self.instance = instance
        self.kvs = instance.kvs
        self.now = now
        self.step_target = now  # where the command's step catches up to (Instance._step)
        self.messages = collections.deque()
        self._jm = None
        self._sched = None
        self._sched_loaded = None  # None = not looked up yet
        self._exec = None
        self._hk = None
        self._resources = None
        self._deps = None
        self._timers = None
        self._queues = None
        # a read-only command's broker (Instance.read_session): the instance
        # is settled, so there is no module work to run and nothing to save
        self.reading = False

    # -- modules (loaded on first use: most commands touch few of them) -------

    @property
    def config(self):
        return self.instance.config

    @property
    def jm(self):
        if self._jm is None:
            from flux_lite.job_manager.manager import JobManager

            self._jm = JobManager(self)
        return self._jm

    @property
    def exec(self):
        if self._exec is None:
            from flux_lite.job_manager.exec import Exec

            self._exec = Exec(self)
        return self._exec

    @property
    def housekeeping(self):
        if self._hk is None:
            from flux_lite.job_manager.housekeeping import Housekeeping

            self._hk = Housekeeping(self)
        return self._hk

    @property
    def deps(self):
        if self._deps is None:
            from flux_lite.job_manager.dependency import Dependencies

            self._deps = Dependencies(self)
        return self._deps

    @property
    def resources(self):
        if self._resources is None:
            from flux_lite.resources import Resources

            self._resources = Resources(self)
        return self._resources

    @property
    def queues(self):
        """The job manager's queues (RFC 33): config, enable/start state."""
        if self._queues is None:
            from flux_lite.queues import Queues

            self._queues = Queues(self)
        return self._queues

    @property
    def sched(self):
        """The loaded scheduler module, or None when none is loaded."""
        if self._sched_loaded is None:
            from flux_lite.sched import loader

            self._sched = loader.load_persisted(self)
            self._sched_loaded = True
        return self._sched

    # -- logging ------------------------------------------------------------

    def log(self, name, level, msg):
        self.instance.log(name, level, msg, t=self.now)

    # -- messages and requests (RFC 27: see flux_lite.protocol) ---------------

    def _service(self, topic):
        """The module serving topic's service, or None (not loaded)."""
        service = topic.split(".", 1)[0]
        if service in ("sched", "feasibility"):  # the scheduler serves both
            return self.sched
        if service == "job-manager":
            return self.jm
        return None

    def send(self, topic, payload):
        """Queue a message; it is delivered by run()."""
        self.messages.append((topic, payload))

    def rpc(self, topic, payload, cred=None):
        """A request, answered at once: the response payload, or the
        handler's FluxLiteError (errno and message). cred: the requester's
        credentials (default: the instance, as for a module's request)."""
        module = self._service(topic)
        if module is None:
            from flux_lite import protocol

            raise protocol.error(protocol.ENOSYS, f"{topic}: service is not loaded")
        if cred is None:
            cred = self.module_cred
        return module.handle(topic, payload, cred)

    @property
    def module_cred(self):
        """The credentials of the instance's own modules: the owner's."""
        from flux_lite.protocol import Cred

        return Cred(self.instance.owner, True)

    def run(self):
        """Deliver messages and run module work until everything is quiet."""
        while True:
            if self.messages:
                topic, payload = self.messages.popleft()
                self._deliver(topic, payload)
                continue
            if self.reading:
                break
            if self._jm is not None and self._jm.has_work():
                self._jm.work()
                continue
            sched = self._sched if self._sched_loaded else None
            if sched is not None and sched.needs_pass:
                sched.run_pass()
                continue
            break

    def _deliver(self, topic, payload):
        module = self._service(topic)
        if module is None:
            if topic.startswith("sched."):
                # the scheduler is unloaded: Flux's broker answers ENOSYS;
                # the job manager never sends in that state, so this is a drop
                return
            raise RuntimeError(f"no handler for {topic}")
        module.handle(topic, payload, None)

    # -- timers -------------------------------------------------------------
    # The queue is the ``timers`` table, loaded into a heap on first use and
    # written back by save(): a catch-up fires thousands of timers, and one
    # SQL round trip per add/fire/cancel would dominate it.

    def _timerq(self):
        if self._timers is None:
            import heapq

            self._timers = []
            self._timers_by_job = {}
            self._timer_seq = 0
            for seq, t, kind, jobid, arg in self.kvs.conn.execute(
                "SELECT seq, t, kind, jobid, arg FROM timers"
            ):
                self._push_timer(t, seq, kind, jobid, None if arg is None else json.loads(arg))
            heapq.heapify(self._timers)
            self._timers_dirty = False
        return self._timers

    def _push_timer(self, t, seq, kind, jobid, arg):
        entry = [t, seq, kind, jobid, arg, True]
        self._timers.append(entry)
        self._timer_seq = max(self._timer_seq, seq)
        if jobid is not None:
            self._timers_by_job.setdefault(jobid, []).append(entry)
        return entry

    def add_timer(self, t, kind, jobid=None, arg=None):
        import heapq

        from flux_lite.instance import MAX_TIME

        if not t < MAX_TIME:
            return  # at the end of 9999 (where longer times are clamped), or nan: never
        queue = self._timerq()
        self._timer_seq += 1
        entry = [t, self._timer_seq, kind, jobid, arg, True]
        heapq.heappush(queue, entry)
        if jobid is not None:
            self._timers_by_job.setdefault(jobid, []).append(entry)
        self._timers_dirty = True

    def cancel_timers(self, jobid, kind=None, match=None):
        """Drop a job's timers: all, one kind ('exec.expire'), or a module's
        ('exec.'); `match(arg)` narrows further (e.g. one housekeeping rank)."""
        self._timerq()
        entries = self._timers_by_job.get(jobid)
        if not entries:
            return
        keep = []
        for entry in entries:
            k = entry[2]
            hit = (kind is None or k == kind or (kind.endswith(".") and k.startswith(kind))) and (
                match is None or match(entry[4]))
            if hit:
                entry[5] = False
                self._timers_dirty = True
            else:
                keep.append(entry)
        if keep:
            self._timers_by_job[jobid] = keep
        else:
            del self._timers_by_job[jobid]

    def reset_timers(self):
        """Forget every timer (derived-table rebuild)."""
        self._timers = []
        self._timers_by_job = {}
        self._timer_seq = 0
        self._timers_dirty = True

    def _peek_timer(self):
        import heapq

        queue = self._timerq()
        while queue and not queue[0][5]:
            heapq.heappop(queue)
        return queue[0] if queue else None

    def next_event_time(self):
        entry = self._peek_timer()
        return None if entry is None else entry[0]

    def advance_to(self, t, progress=None):
        """Fire every timer due at or before t, in time order; then now = t.

        progress(done_seconds, total_seconds) is called now and then, for
        callers that show a progress bar.
        """
        import heapq

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
                entry[5] = False
                _due, _seq, kind, jobid, arg, _alive = entry
                if jobid is not None:
                    lst = self._timers_by_job.get(jobid)
                    if lst is not None:
                        lst[:] = [e for e in lst if e is not entry]
                        if not lst:
                            del self._timers_by_job[jobid]
                self._timers_dirty = True
                self._fire(kind, jobid, arg)
                fired += 1
                entry = self._peek_timer()
            self.run()
            if progress is not None and fired >= 256:
                fired = 0
                progress(self.now - start, t - start)
        if t > self.now:
            self.now = t
        self.run()

    def _save_timers(self):
        if self._timers is None or not self._timers_dirty:
            return
        conn = self.kvs.conn
        conn.execute("DELETE FROM timers")
        conn.executemany(
            "INSERT INTO timers(seq, t, kind, jobid, arg) VALUES (?, ?, ?, ?, ?)",
            [(e[1], e[0], e[2], e[3], None if e[4] is None else json.dumps(e[4]))
             for e in self._timers if e[5]],
        )
        self._timers_dirty = False

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
        else:
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

    def rmmod_scheduler(self):
        """Unload the scheduler: queued messages reach it first; then the job
        manager hears that it went away, as Flux's disconnect tells it."""
        from flux_lite import protocol

        self.run()
        self._sched = None
        self._sched_loaded = True
        self.rpc(protocol.JM_DISCONNECT, {})

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

    def save(self):
        self.settle()
        if self._jm is not None:
            self._jm.save()
        self._auto_purge()
        if self._sched_loaded and self._sched is not None:
            self._sched.save()
        if self._hk is not None:
            self._hk.save()
        self._save_timers()
        self.instance.set_clock(self.now)
        self.instance.flush_log()

    def _auto_purge(self):
        """job-manager.inactive-{age,num}-limit: purge as Flux's job manager does."""
        jm_cfg = self.config.get("job-manager") or {}
        if "inactive-age-limit" in jm_cfg or "inactive-num-limit" in jm_cfg:
            from flux_lite.job_manager import purge

            purge.auto(self)
