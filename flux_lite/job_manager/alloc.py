"""The job manager's scheduler interface (flux-core job-manager/alloc.c).

The job manager's half of RFC 27 (:mod:`flux_lite.protocol`): the queue of
SCHED jobs awaiting a ``sched.alloc``, the pump that sends them (at most
``limit`` outstanding in limited mode, preempting the lowest-priority request
with ``sched.cancel`` for a better head), the handlers of the alloc
responses, ``sched.free``, and the hello / ready / disconnect handshake the
scheduler drives. The interface state (online, mode, limit) persists under
``job-manager.sched``.
"""

import heapq

from flux_lite import protocol as rfc27
from flux_lite.job_manager.job import CLEANUP, FLAG_DEBUG, PRIORITY, SCHED, merge_annotations

STATE_KEY = "job-manager.sched"


class SchedInterface:
    def __init__(self, jm):
        self.jm = jm
        self.b = jm.b
        self.kvs = jm.b.kvs
        self.queue = []  # heap of (-priority, id) for SCHED jobs awaiting an alloc send
        self._canceling = set()  # limited-mode preemption cancels in flight
        self._pending_ids = set()  # jobs with a sched.alloc outstanding
        self._stored_pending_read = False  # _pending_ids holds the index's too
        # (count, lowest-priority job) of the outstanding requests, kept until
        # the outstanding set or one of its jobs changes (the pump asks often)
        self._low = None
        # until every job is loaded, the queue's candidates come from the
        # index, (id, priority) best first, merged into the heap as needed
        self._candidates = None
        self._next_candidate = None  # the next (id, priority) from the index, not yet in the heap
        st = self.kvs.get(STATE_KEY)
        self.state = st if st is not None else {"online": False, "mode": None, "limit": 0}
        self._state_dirty = False

    def adopt(self, jobs):
        """The active jobs were just loaded: rebuild the queue and the outstanding set."""
        for job in jobs.values():
            if job.alloc_pending:
                self._pending_ids.add(job.id)
            elif job.state == SCHED and job.priority:
                self.enqueue(job)

    def save(self):
        if self._state_dirty:
            self.kvs.put(STATE_KEY, self.state)
            self._state_dirty = False

    def _set_state(self, online, mode, limit):
        self.state = {"online": online, "mode": mode, "limit": limit}
        self._state_dirty = True

    # -- outstanding requests ---------------------------------------------------

    def _set_pending(self, job, flag):
        job.alloc_pending = flag
        self._low = None
        if flag:
            self._pending_ids.add(job.id)
        else:
            self._pending_ids.discard(job.id)

    def _pending_jobs(self):
        index = self.jm.index
        if index.loaded:
            jobs = index.jobs
            return [jobs[i] for i in self._pending_ids if i in jobs]
        if not self._stored_pending_read:
            # the stored requests are read once: from then on every change
            # goes through _set_pending/after_event, and the pump asks often
            self._pending_ids |= index.outstanding_ids()
            self._stored_pending_read = True
        out = []
        for jobid in list(self._pending_ids):
            job = index.get(jobid)
            if job is not None and job.alloc_pending:
                out.append(job)
            else:
                self._pending_ids.discard(jobid)
                self._low = None
        return out

    def _lowest_pending(self):
        """(how many requests are outstanding, the lowest-priority one or None)."""
        low = self._low
        if low is None:
            pending = self._pending_jobs()
            worst = max(pending, key=lambda j: (-j.priority, j.id)) if pending else None
            low = self._low = (len(pending), worst)
        return low

    def outstanding(self):
        return len(self._pending_jobs())

    def after_event(self, job, old_state):
        """An event was posted to a job with a request outstanding."""
        self._low = None  # (its priority, or whether it is still outstanding, may have changed)
        if not job.alloc_pending:
            self._pending_ids.discard(job.id)
        if old_state == SCHED and job.state == PRIORITY:
            # back to PRIORITY: the outstanding request is canceled, and the
            # job is re-sent with its new jobspec/priority once SCHED again
            self.b.send(rfc27.SCHED_CANCEL, rfc27.cancel_request(job.id))

    def withdraw(self, job):
        """CLEANUP with a request outstanding: finalized at once; the
        scheduler's CANCEL answer is ignored, and the annotations of the
        request are cleared (as alloc.c does)."""
        self.b.send(rfc27.SCHED_CANCEL, rfc27.cancel_request(job.id))
        self._set_pending(job, False)
        job.annotations = {}
        self.jm.index.changed(job.id)

    # -- the queue and the pump ---------------------------------------------------

    def enqueue(self, job):
        if not self.b.queues.job_started(job):
            job.queued = False  # a stopped queue keeps its jobs in SCHED
            return
        job.queued = True
        job.queued_priority = job.priority
        heapq.heappush(self.queue, (-job.priority, job.id))

    def reposition(self, job):
        """A queued job's priority may have changed: it gets an entry at its
        new place (the old one is dropped as stale when it comes up)."""
        if job.queued_priority != job.priority:
            job.queued_priority = job.priority
            heapq.heappush(self.queue, (-job.priority, job.id))

    def cancel_outstanding(self, job):
        """Withdraw a job's outstanding request (its queue stopped): the
        CANCEL answer brings it back, and a stopped queue keeps it."""
        if job.id not in self._canceling:
            self._canceling.add(job.id)
            self.b.send(rfc27.SCHED_CANCEL, rfc27.cancel_request(job.id))

    def _merge_candidates(self):
        """Move index candidates into the heap while one could be its head."""
        if self._next_candidate is None and self._candidates is not None:
            return  # (the index has no more)
        index = self.jm.index
        if index.loaded:
            self._candidates = None  # adopt() queued every job
            return
        if self._candidates is None:
            self._candidates = index.alloc_candidates(SCHED)
            self._next_candidate = next(self._candidates, None)
        queue = self.queue
        while self._next_candidate is not None:
            jobid, priority = self._next_candidate
            if queue and queue[0] <= (-priority, jobid):
                return
            self._next_candidate = next(self._candidates, None)
            job = index.get(jobid)
            if job is not None and job.state == SCHED and job.priority and not job.alloc_pending \
                    and not job.queued:
                self.enqueue(job)

    def _queue_head(self):
        """The valid head of the alloc queue (stale heap entries are dropped)."""
        get = self.jm.index.get
        queue = self.queue
        while True:
            self._merge_candidates()
            if not queue:
                return None
            negprio, jobid = queue[0]
            job = get(jobid)
            if (job is None or not job.queued or job.state != SCHED or job.alloc_pending
                    or not job.priority or -negprio != job.priority):
                heapq.heappop(queue)
                if job is not None and job.queued and job.state == SCHED and job.priority \
                        and not job.alloc_pending and -negprio != job.priority \
                        and job.queued_priority != job.priority:
                    job.queued_priority = job.priority
                    heapq.heappush(queue, (-job.priority, job.id))
                continue
            return job

    def pump_ready(self):
        state = self.state
        if not state.get("online"):
            return False
        index = self.jm.index
        if not index.loaded and not self.queue and not index.any_active(SCHED):
            return False  # no job could be waiting for an alloc request
        head = self._queue_head()
        if head is None:
            return False
        if state.get("mode") == rfc27.LIMITED:
            if (index.loaded or self._stored_pending_read) and len(self._pending_ids) < state["limit"]:
                return True  # (the ids hold every outstanding request, and maybe some answered)
            count, low = self._lowest_pending()
            if count >= state["limit"]:
                # preempt the lowest-priority outstanding request for a better head
                return low.priority < head.priority and low.id not in self._canceling
        return True

    def pump(self):
        limited = self.state.get("mode") == rfc27.LIMITED
        limit = self.state.get("limit", 0)
        count = self.outstanding() if limited else 0  # unlimited: the count never matters
        while True:
            head = self._queue_head()
            if head is None:
                return
            if limited and count >= limit:
                pending = [j for j in self._pending_jobs() if j.id not in self._canceling]
                if pending:
                    low = max(pending, key=lambda j: (-j.priority, j.id))
                    if low.priority < head.priority:
                        self._canceling.add(low.id)
                        self.b.send(rfc27.SCHED_CANCEL, rfc27.cancel_request(low.id))
                return
            heapq.heappop(self.queue)
            head.queued = False
            self.send_alloc(head)
            count += 1

    def send_alloc(self, job):
        self._set_pending(job, True)
        self.jm.index.changed(job.id)
        if job.flags & FLAG_DEBUG:
            self.jm.post(job, "debug.alloc-request")
        self.b.send(rfc27.SCHED_ALLOC, rfc27.alloc_request(job.id, job.priority, job.userid, job.t_submit, job.jobspec))

    def send_free(self, jobid, R, final):
        """sched.free, silently dropped while no scheduler is online (RFC 27)."""
        if not self.state.get("online"):
            return
        self.b.send(rfc27.SCHED_FREE, rfc27.free_request(jobid, R, final))

    # -- job-manager.alloc-response -------------------------------------------------

    def alloc_response(self, msg, cred=None):
        jobid = msg["id"]
        rtype = msg["type"]
        job = self.jm.index.get(jobid)
        if rtype == rfc27.SUCCESS:
            R = msg["R"]
            if "scheduling" in R:
                R = dict(R)
                del R["scheduling"]
            if job is None or job.state != SCHED or not job.alloc_pending:
                # no longer waiting (e.g. canceled meanwhile): give it back
                self.send_free(jobid, R, final=True)
                return
            self._set_pending(job, False)
            self._canceling.discard(jobid)
            job.R = R
            if msg.get("annotations"):
                merge_annotations(job.annotations, msg["annotations"])
            self.jm.post(job, "alloc", {"annotations": job.annotations} if job.annotations else None)
        elif rtype == rfc27.ANNOTATE:
            if job is not None and job.alloc_pending:
                merge_annotations(job.annotations, msg.get("annotations") or {})
                self.jm.index.changed(jobid)
        elif rtype == rfc27.DENY:
            if job is None or not job.alloc_pending:
                return
            self._set_pending(job, False)
            job.annotations = {}
            self.jm.raise_exception(job, "alloc", 0, msg.get("note", ""), userid=self.b.instance.owner)
        elif rtype == rfc27.CANCEL:
            self._canceling.discard(jobid)
            if job is None or not job.alloc_pending:
                return
            self._set_pending(job, False)
            job.annotations.pop("sched", None)
            self.jm.index.changed(jobid)
            if job.state == SCHED and job.priority:
                self.enqueue(job)
        else:
            raise rfc27.error(rfc27.EPROTO, f"unknown alloc response type {rtype}")

    # -- the handshake ------------------------------------------------------------------

    def hello(self, msg, cred=None):
        """job-manager.sched-hello: one record per job holding resources,
        then housekeeping's (with the ranks already freed, if partial-ok)."""
        partial_ok = bool(msg.get("partial-ok"))
        self.b.log("job-manager", "debug", "scheduler: hello" + (" +partial-ok" if partial_ok else ""))
        index = self.jm.index
        index.save()  # the index must show this command's changes
        # flux-lite hands the scheduler the job's current R (resource-update
        # events applied); Flux's scheduler re-reads the original from the KVS
        as_text = bool(msg.get(rfc27.HELLO_R_TEXT))
        bypass = self.b.jobtap.bypass_holders()  # (alloc-bypass jobs: R the scheduler never gave)
        records = [rfc27.hello_record(jobid, priority, userid, t_submit, R)
                   for jobid, priority, userid, t_submit, R in index.holding_resources(as_text)
                   if jobid not in bypass]
        records.extend(self.b.housekeeping.hello_records(partial_ok))
        return records

    def ready(self, msg, cred=None):
        """job-manager.sched-ready: alloc requests may flow. Its count (the
        jobs queued for an alloc request) and the CLEANUP jobs whose frees
        are re-sent come from the index: no pending job is read."""
        mode, limit = rfc27.check_ready(msg)
        self._set_state(True, mode, limit)
        self.b.log("job-manager", "debug", f"scheduler: ready {mode}")
        index = self.jm.index
        index.save()  # the index must show this command's changes
        # re-run cleanup actions so that interrupted frees are re-sent
        for job in index.active_in(CLEANUP):
            self.jm.event.actions.append(job.id)
        return {"count": index.queue_length(SCHED)}

    def disconnect(self, msg=None, cred=None):
        """The scheduler went away: outstanding requests go back to the
        queue, their sched annotations cleared (as alloc.c's teardown does:
        only the jobs with a request outstanding are touched)."""
        self._set_state(False, None, 0)
        self._canceling.clear()
        index = self.jm.index
        for job in self._pending_jobs():
            self._set_pending(job, False)
            job.annotations.pop("sched", None)
            index.changed(job.id)
            if job.state == SCHED and job.priority:
                self.enqueue(job)
        return {}
