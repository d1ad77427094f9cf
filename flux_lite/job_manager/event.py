"""Events and state actions (flux-core job-manager/event.c).

Jobs change only by events appended to their eventlogs (``post``); each post
queues the job for its state action (Flux's ``event_job_action``), run when
the broker lets the job manager work. Actions post more events, start or kill
the simulated execution, hand resources to housekeeping, or ask the
scheduler interface (:mod:`.alloc`) to queue, cancel or free.
"""

import collections

from flux_lite.formats import eventlog
from flux_lite.formats.jobid import kvs_key
from flux_lite.job_manager.job import CLEANUP, DEPEND, INACTIVE, PRIORITY, RUN, SCHED


BYPASS = "alloc-bypass"  # the flag alloc-bypass.so sets on a job that has its own R

# the texts of the contexts the job manager posts for every job
_PRIORITY_TEXT = eventlog.int_context_format("priority")


class Events:
    def __init__(self, jm):
        self.jm = jm
        self.b = jm.b
        self.kvs = jm.b.kvs
        self.actions = collections.deque()  # job ids whose state action is due
        self._keys = {}  # job id -> its eventlog key (a job posts several events)
        self.posted = 0  # events posted this command (the journal's count, saved by the job manager)
        self._jobtap = None  # the jobtap plugins (read at the first post)

    def post(self, job, name, context=None, text=None):
        """Append an event to the job's eventlog and apply it (text: the
        context's text, as eventlog.encode_entry's context_text)."""
        b = self.b
        ts = b.now
        line = eventlog.encode_entry(ts, name, context, text)
        key = self._keys.get(job.id)
        if key is None:
            if len(self._keys) >= 4096:
                self._keys.clear()
            key = self._keys[job.id] = kvs_key(job.id, "eventlog")
        self.kvs.append(key, line)
        self.posted += 1
        old_state = job.state
        was_pending = job.alloc_pending
        job.apply_event(ts, name, context)
        if was_pending:
            self.jm.alloc.after_event(job, old_state)
        index = self.jm.index
        index.changed(job.id)
        self.actions.append(job.id)
        if job.state != old_state:
            index.state_changed(job, old_state)
        if job.state == INACTIVE:
            index.deactivate(job)
            # what an inactive job leaves in the KVS never changes: stored packed
            base = key[:-len("eventlog")]
            self.kvs.pack((key, base + "J", base + "jobspec", base + "R"))
            b.cancel_timers(job.id, "exec.")
            b.deps.job_inactive(job)
        elif name == "start":
            b.deps.job_started(job)
        jobtap = self._jobtap
        if jobtap is None:
            jobtap = self._jobtap = b.jobtap
        if jobtap.watches_events:
            jobtap.on_event(job, name, context)

    @property
    def jobtap(self):
        """The jobtap plugins (the broker's module, kept at hand)."""
        tap = self._jobtap
        if tap is None:
            tap = self._jobtap = self.b.jobtap
        return tap

    def run_actions(self):
        get = self.jm.index.get
        actions = self.actions
        while actions:
            job = get(actions.popleft())
            if job is not None:
                self._action(job)

    def _action(self, job):
        state = job.state
        if state == DEPEND:
            if not job.dependencies:
                self.post(job, "depend")
        elif state == PRIORITY:
            if not self.jobtap.loaded(".priority-default"):
                return  # no plugin gives it a priority: it waits for one (Flux's behaviour)
            priority = self.jm.urgency.compute_priority(job)
            self.post(job, "priority", {"priority": priority},
                      _PRIORITY_TEXT % priority if type(priority) is int else None)
        elif state == SCHED:
            if job.priority and not job.alloc_pending:
                if BYPASS in job.set_flags:
                    self.jobtap.bypass_alloc(job)  # (never queued for the scheduler)
                elif not job.queued:
                    self.jm.alloc.enqueue(job)
                else:  # (a new priority: its heap entry moves)
                    self.jm.alloc.reposition(job)
        elif state == RUN:
            if not job.started and not self.jobtap.holds(job):  # (a prolog holds it)
                self.b.exec.start(job)
        elif state == CLEANUP:
            self._cleanup_action(job)

    def _cleanup_action(self, job):
        if job.alloc_pending:
            self.jm.alloc.withdraw(job)
        job.queued = False
        if job.started and not job.finished and not job.released:
            # (a job the exec system already released, as one it could not
            # recover at restart, has nothing left to kill)
            self.b.exec.kill(job)
            return
        if job.has_resources and not job.freed and (job.released or not job.started):
            if self.jobtap.holds(job):
                return  # an epilog (or a prolog) runs: freed once it finishes
            if BYPASS not in job.set_flags:  # (the scheduler never gave it)
                self.b.housekeeping.hand_off(job)
            else:
                self.jobtap.bypass_freed(job)
            self.post(job, "free")
            return
        if not job.has_resources:
            self.post(job, "clean")
