"""The job manager: posts events, runs state actions, pumps alloc requests.

Jobs change only by events appended to their eventlogs (``post``); each post
queues the job for its state action (Flux's ``event_job_action``), which may
post more events or send RFC 27 messages to the scheduler. The active jobs are
loaded from the ``jobs`` index on first use and written back by ``save``.
"""

import collections
import heapq
import json
from errno import EINVAL, ENOENT, EPROTO

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog
from flux_lite.formats.jobid import fluid, fluid_timestamp, kvs_key
from flux_lite.job_manager.job import (
    CLEANUP, DEPEND, FLAG_DEBUG, FLAG_NOVALIDATE, INACTIVE, PENDING, PRIORITY, PRIORITY_MAX, PRIORITY_MIN, RUN, RUNNING,
    SCHED, URGENCY_EXPEDITE, URGENCY_HOLD, Job,
)

# attributes kept in the jobs index, besides the job's own slots
RECORD_SLOTS = (
    "userid", "urgency", "priority", "t_submit", "state", "flags", "jobspec", "R",
    "has_resources", "alloc_pending", "annotations", "end_event", "exception",
    "t_depend", "t_run", "t_cleanup", "t_inactive", "waitstatus", "started",
    "finished", "released", "freed", "immutable", "set_flags", "nevents", "dependencies",
)


def job_to_record(job):
    rec = {slot: getattr(job, slot) for slot in RECORD_SLOTS}
    rec["id"] = job.id
    return rec


def job_from_record(rec):
    job = Job(rec["id"])
    for slot in RECORD_SLOTS:
        setattr(job, slot, rec.get(slot, getattr(job, slot, None)))
    return job


_LISTING_CACHE = {}


def listing_fields(job):
    """Values `jobs` shows that are costly to derive at listing time.

    Cached per job while its jobspec and R objects stay the same (updates
    replace them, so identity is a safe key).
    """
    hit = _LISTING_CACHE.get(job.id)
    if hit is not None and hit[0] is job.jobspec and hit[1] is job.R:
        return hit[2]
    out = _listing_fields(job)
    if len(_LISTING_CACHE) > 100000:
        _LISTING_CACHE.clear()
    _LISTING_CACHE[job.id] = (job.jobspec, job.R, out)  # holding them keeps identity meaningful
    return out


def _listing_fields(job):
    from flux_lite.formats import jobspec as jobspecmod

    out = {}
    js = job.jobspec or {}
    try:
        out["name"] = jobspecmod.name(js)
    except Exception:
        out["name"] = ""
    try:
        out["ntasks"] = jobspecmod.ntasks(js)
    except Exception:
        out["ntasks"] = 1
    if job.R:
        from flux_lite.formats.rset import Rset

        rs = Rset.from_dict(job.R)
        out["nnodes"] = rs.nnodes
        out["ranks"] = str(rs.ranks)
        out["nodelist"] = str(rs.nodelist)
        out["ncores"] = rs.ncores
    else:
        try:
            out["nnodes"] = jobspecmod.nnodes_requested(js) or ""
        except Exception:
            out["nnodes"] = ""
        out["ranks"] = ""
        out["nodelist"] = ""
    return out


def write_row(conn, job):
    """The job's row in the jobs index. has_resources and R are columns of
    their own so that hello can read them without parsing whole records."""
    rec = job_to_record(job)
    rec.update(listing_fields(job))
    R = json.dumps(job.R, separators=(",", ":")) if job.has_resources and job.R else None
    conn.execute(
        "INSERT OR REPLACE INTO jobs(id, userid, state, priority, t_submit, t_run, t_inactive, "
        "has_resources, R, result, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (job.id, job.userid, job.state, job.priority, job.t_submit, job.t_run, job.t_inactive,
         1 if job.has_resources else 0, R, job.result, json.dumps(rec, separators=(",", ":"))),
    )


class JobManager:
    def __init__(self, broker):
        self.b = broker
        self.kvs = broker.kvs
        self._jobs = None
        self._actions = collections.deque()
        self._queue = []  # heap of (-priority, id) for SCHED jobs awaiting an alloc send
        self._canceling = set()  # limited-mode preemption cancels in flight
        self._pending_ids = set()  # jobs with a sched.alloc outstanding
        self._dirty = set()
        self._removed_jobs = {}  # jobs that went INACTIVE in this command
        st = self.kvs.get("job-manager.sched")
        self.sched_state = st if st is not None else {"online": False, "mode": None, "limit": 0}
        self._sched_dirty = False
        self._checkpoint = self.kvs.get("checkpoint.job-manager") or {"version": 1, "max_jobid": 0}
        self._checkpoint_dirty = False

    # -- loading and saving ---------------------------------------------------

    @property
    def jobs(self):
        """Active jobs by id (loaded on first use)."""
        if self._jobs is None:
            self._jobs = {}
            from flux_lite.stored import good_rows

            # a damaged row leaves its job out (quarantined), not every other job
            for rec in good_rows(self.kvs.conn.execute("SELECT id, data FROM jobs WHERE state < ?", (INACTIVE,))):
                job = job_from_record(rec)
                self._jobs[job.id] = job
            for job in self._jobs.values():
                if job.alloc_pending:
                    self._pending_ids.add(job.id)
                elif job.state == SCHED and job.priority:
                    self._enqueue(job)
        return self._jobs

    def lookup(self, jobid):
        """An active job, or None."""
        return self.jobs.get(jobid)

    def require_active(self, jobid, unknown="unknown job id", inactive_errno=ENOENT):
        """The active job, or Flux's refusal: inactive, or unknown (each
        job-manager service words and numbers these its own way)."""
        job = self.lookup(jobid)
        if job is None:
            if self.load_any(jobid) is not None:
                raise FluxLiteError("job is inactive", errno=inactive_errno)
            raise FluxLiteError(unknown, errno=ENOENT)
        return job

    def load_any(self, jobid):
        """Any job (active or inactive) from the index, or None."""
        job = self.jobs.get(jobid)
        if job is None:
            job = self._removed_jobs.get(jobid)
        if job is not None:
            return job
        row = self.kvs.conn.execute("SELECT data FROM jobs WHERE id = ?", (jobid,)).fetchone()
        if row is None:
            return None
        from flux_lite.stored import decode_row

        return job_from_record(decode_row(jobid, row[0]))

    def save(self):
        conn = self.kvs.conn
        for jobid in self._dirty:
            job = self._jobs.get(jobid) if self._jobs is not None else None
            if job is None:
                job = self._removed_jobs.get(jobid)
            if job is None:
                continue
            write_row(conn, job)
        self._dirty.clear()
        if self._sched_dirty:
            self.kvs.put("job-manager.sched", self.sched_state)
            self._sched_dirty = False
        if self._checkpoint_dirty:
            self.kvs.put("checkpoint.job-manager", self._checkpoint)
            self._checkpoint_dirty = False
            # outside the database too: a lost WAL must not roll job ids back
            self.kvs.after_commit(self.b.instance.hwm_writer(self._checkpoint["max_jobid"]))

    def raise_jobid_floor(self, jobid):
        """Never issue an id at or below jobid again (ids seen before a state rollback)."""
        if jobid > self._checkpoint.get("max_jobid", 0):
            self._checkpoint["max_jobid"] = jobid
            self._checkpoint_dirty = True


    # -- events -----------------------------------------------------------------

    def post(self, job, name, context=None):
        """Append an event to the job's eventlog and apply it."""
        ts = self.b.now
        line = eventlog.encode_entry(ts, name, context)
        self.kvs.append(kvs_key(job.id, "eventlog"), line)
        entry = {"timestamp": ts, "name": name}
        if context:
            entry["context"] = context
        old_state = job.state
        was_pending = job.alloc_pending
        job.apply(entry)
        if was_pending and not job.alloc_pending:
            self._pending_ids.discard(job.id)
        if old_state == SCHED and job.state == PRIORITY and was_pending:
            # back to PRIORITY: the outstanding request is canceled, and the
            # job is re-sent with its new jobspec/priority once SCHED again
            self.b.send("sched.cancel", {"id": job.id})
        self._dirty.add(job.id)
        self._actions.append(job.id)
        if job.state == INACTIVE:
            self._deactivate(job)
            self.b.deps.job_inactive(job)
        elif name == "start":
            self.b.deps.job_started(job)

    def requeue_action(self, job):
        """Run the job's state action again (restart: a job found mid-way)."""
        self._actions.append(job.id)

    def _set_pending(self, job, flag):
        job.alloc_pending = flag
        if flag:
            self._pending_ids.add(job.id)
        else:
            self._pending_ids.discard(job.id)

    def _pending_jobs(self):
        jobs = self.jobs
        return [jobs[i] for i in self._pending_ids if i in jobs]

    def _deactivate(self, job):
        if self._jobs is not None:
            self._jobs.pop(job.id, None)
        self._removed_jobs[job.id] = job
        self.b.cancel_timers(job.id, "exec.")

    def has_work(self):
        if self._actions:
            return True
        return self._pump_ready()

    def work(self):
        while self._actions:
            jobid = self._actions.popleft()
            job = self.jobs.get(jobid)
            if job is not None:
                self._action(job)
        if self._pump_ready():
            self._pump()

    def _action(self, job):
        state = job.state
        if state == DEPEND:
            if not job.dependencies:
                self.post(job, "depend")
        elif state == PRIORITY:
            self.post(job, "priority", {"priority": self.compute_priority(job)})
        elif state == SCHED:
            if job.priority and not job.alloc_pending and not job.queued:
                self._enqueue(job)
        elif state == RUN:
            if not job.started:
                self.b.exec.start(job)
        elif state == CLEANUP:
            self._cleanup_action(job)

    def _cleanup_action(self, job):
        if job.alloc_pending:
            # finalized at once: the scheduler's CANCEL answer is ignored, and
            # the annotations of the request are cleared (as alloc.c does)
            self.b.send("sched.cancel", {"id": job.id})
            self._set_pending(job, False)
            job.annotations = {}
            self._dirty.add(job.id)
        job.queued = False
        if job.started and not job.finished and not job.released:
            # (a job the exec system already released, as one it could not
            # recover at restart, has nothing left to kill)
            self.b.exec.kill(job)
            return
        if job.has_resources and not job.freed and (job.released or not job.started):
            self.b.housekeeping.hand_off(job)
            self.post(job, "free")
            return
        if not job.has_resources:
            self.post(job, "clean")

    # -- priority ---------------------------------------------------------------

    @staticmethod
    def compute_priority(job):
        if job.urgency == URGENCY_HOLD:
            return PRIORITY_MIN
        if job.urgency == URGENCY_EXPEDITE:
            return PRIORITY_MAX
        return job.urgency

    # -- alloc queue and pump -----------------------------------------------------

    def _enqueue(self, job):
        if not self.b.queues.job_started(job):
            job.queued = False  # a stopped queue keeps its jobs in SCHED
            return
        job.queued = True
        heapq.heappush(self._queue, (-job.priority, job.id))

    def _queue_head(self):
        """The valid head of the alloc queue (stale heap entries are dropped)."""
        jobs = self.jobs
        while self._queue:
            negprio, jobid = self._queue[0]
            job = jobs.get(jobid)
            if (job is None or not job.queued or job.state != SCHED or job.alloc_pending
                    or not job.priority or -negprio != job.priority):
                heapq.heappop(self._queue)
                if job is not None and job.queued and job.state == SCHED and job.priority \
                        and not job.alloc_pending and -negprio != job.priority:
                    heapq.heappush(self._queue, (-job.priority, job.id))
                continue
            return job
        return None

    def outstanding(self):
        return len(self._pending_jobs())

    def _pump_ready(self):
        if not self.sched_state.get("online"):
            return False
        if self._jobs is None and not self._queue:
            # nothing can be queued unless the jobs were loaded
            return False
        head = self._queue_head()
        if head is None:
            return False
        if self.sched_state.get("mode") == "limited":
            pending = self._pending_jobs()
            if len(pending) >= self.sched_state["limit"]:
                # preempt the lowest-priority outstanding request for a better head
                low = max(pending, key=lambda j: (-j.priority, j.id))
                return low.priority < head.priority and low.id not in self._canceling
        return True

    def _pump(self):
        limited = self.sched_state.get("mode") == "limited"
        limit = self.sched_state.get("limit", 0)
        count = self.outstanding()
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
                        self.b.send("sched.cancel", {"id": low.id})
                return
            heapq.heappop(self._queue)
            head.queued = False
            self.send_alloc(head)
            count += 1

    def send_alloc(self, job):
        self._set_pending(job, True)
        self._dirty.add(job.id)
        if job.flags & FLAG_DEBUG:
            self.post(job, "debug.alloc-request")
        self.b.send(
            "sched.alloc",
            {
                "id": job.id,
                "priority": job.priority,
                "userid": job.userid,
                "t_submit": job.t_submit,
                "jobspec": job.jobspec,
            },
        )

    # -- RFC 27 responses -------------------------------------------------------------

    def alloc_response(self, msg):
        jobid = msg["id"]
        rtype = msg["type"]
        job = self.jobs.get(jobid)
        if rtype == 0:  # SUCCESS
            R = dict(msg["R"])
            R.pop("scheduling", None)
            if job is None or job.state != SCHED or not job.alloc_pending:
                # no longer waiting (e.g. canceled meanwhile): give it back
                self.send_free(jobid, R, final=True)
                return
            self._set_pending(job, False)
            self._canceling.discard(jobid)
            job.R = R
            if msg.get("annotations"):
                merge_annotations(job.annotations, msg["annotations"])
            self.post(job, "alloc", {"annotations": job.annotations} if job.annotations else None)
        elif rtype == 1:  # ANNOTATE
            if job is not None and job.alloc_pending:
                merge_annotations(job.annotations, msg.get("annotations") or {})
                self._dirty.add(jobid)
        elif rtype == 2:  # DENY
            if job is None or not job.alloc_pending:
                return
            self._set_pending(job, False)
            job.annotations = {}
            self.raise_exception(job, "alloc", 0, msg.get("note", ""), userid=self.b.instance.owner)
        elif rtype == 3:  # CANCEL
            self._canceling.discard(jobid)
            if job is None or not job.alloc_pending:
                return
            self._set_pending(job, False)
            job.annotations.pop("sched", None)
            self._dirty.add(jobid)
            if job.state == SCHED and job.priority:
                self._enqueue(job)

    def send_free(self, jobid, R, final):
        """sched.free, silently dropped while no scheduler is online (RFC 27)."""
        if not self.sched_state.get("online"):
            return
        R = dict(R)
        R.pop("scheduling", None)
        self.b.send("sched.free", {"id": jobid, "R": R, "final": final})

    # -- scheduler interface lifecycle ------------------------------------------------

    def _any_active(self, state_mask):
        """Is any active job in these states? (without loading them all)"""
        if self._jobs is not None:
            return any(j.state & state_mask for j in self._jobs.values())
        row = self.kvs.conn.execute(
            "SELECT 1 FROM jobs WHERE state < ? AND (state & ?) != 0 LIMIT 1", (INACTIVE, state_mask)
        ).fetchone()
        return row is not None

    def sched_teardown(self):
        """The scheduler went away: outstanding requests go back to the queue."""
        self.sched_state = {"online": False, "mode": None, "limit": 0}
        self._sched_dirty = True
        self._canceling.clear()
        if not self._any_active(PENDING):
            return  # only pending jobs can have requests or sched annotations
        for job in self.jobs.values():
            if job.alloc_pending:
                self._set_pending(job, False)
                job.annotations.pop("sched", None)
                self._dirty.add(job.id)
                if job.state == SCHED and job.priority:
                    self._enqueue(job)
            elif job.annotations.get("sched") and job.state == SCHED:
                job.annotations.pop("sched", None)
                self._dirty.add(job.id)

    def hello(self, partial_ok):
        """Job-manager side of hello: one record per job holding resources."""
        self.b.log("job-manager", "debug", "scheduler: hello" + (" +partial-ok" if partial_ok else ""))
        if self._jobs is not None:
            self.save()  # the index must show this command's changes
        records = []
        # read from the index's own columns: no need to load every job
        for jobid, priority, userid, t_submit, R in self.kvs.conn.execute(
            "SELECT id, priority, userid, t_submit, R FROM jobs "
            "WHERE state < ? AND has_resources = 1 ORDER BY id", (INACTIVE,)
        ):
            # flux-lite hands the scheduler the job's current R (resource-update
            # events applied); Flux's scheduler re-reads the original from the KVS
            if jobid not in self.jobs:
                continue  # quarantined: its row is damaged
            try:
                R = json.loads(R) if R else None
                if R is not None:
                    from flux_lite.stored import check_R

                    check_R(R)
            except (ValueError, RecursionError):
                from flux_lite.instance import notice

                notice(f"job {jobid}: damaged R in the jobs index: left out of hello "
                       "(rebuild it with 'flux-lite fsck --repair')")
                continue
            records.append({"id": jobid, "priority": priority, "userid": userid, "t_submit": t_submit,
                            "R": R})
        records.extend(self.b.housekeeping.hello_records(partial_ok))
        return records

    def ready(self, mode, limit=None):
        if mode == "limited":
            if not isinstance(limit, int) or limit <= 0:
                raise FluxLiteError("invalid ready limit", errno=EPROTO)
        elif mode != "unlimited":
            raise FluxLiteError("invalid ready mode", errno=EPROTO)
        self.sched_state = {"online": True, "mode": mode, "limit": limit or 0}
        self._sched_dirty = True
        self.b.log("job-manager", "debug", f"scheduler: ready {mode}")
        if not self._any_active(PENDING | CLEANUP):
            return 0  # nothing to send or re-send: no need to load every job
        # re-run cleanup actions so that interrupted frees are re-sent
        for job in self.jobs.values():
            if job.state == CLEANUP:
                self._actions.append(job.id)
        return sum(1 for j in self.jobs.values() if j.state == SCHED and j.priority and not j.alloc_pending)

    def stats(self):
        """The job manager's `module stats` object."""
        from flux_lite.job_manager import housekeeping

        return {"journal": {}, "active_jobs": len(self.jobs), "max_jobid": self._checkpoint.get("max_jobid", 0),
                "housekeeping": housekeeping.stats(self.b)}

    # -- exceptions, urgency ------------------------------------------------------------

    def raise_exception(self, job, etype, severity, note="", userid=None, wait_status=None):
        ctx = {"type": etype, "severity": severity, "note": note or ""}
        if userid is not None:
            ctx["userid"] = userid
        if wait_status is not None:
            ctx["wait_status"] = wait_status
        self.post(job, "exception", ctx)

    def request_raise(self, jobid, severity, etype, note=None):
        """job-manager.raise, with Flux's checks and messages."""
        ident = self.b.instance.identity
        if not isinstance(severity, int) or not 0 <= severity <= 7:
            raise FluxLiteError("invalid exception severity", errno=EPROTO)
        if not etype or any(c.isspace() for c in etype) or "=" in etype:
            raise FluxLiteError("invalid exception type", errno=EPROTO)
        job = self.require_active(jobid)
        access.check_raise(ident, job.userid)
        self.raise_exception(job, etype, severity, note or "", userid=ident.userid)

    def set_urgency(self, jobid, urgency):
        ident = self.b.instance.identity
        if not 0 <= urgency <= 31:
            raise FluxLiteError("urgency value is out of range", errno=EINVAL)
        job = self.require_active(jobid, unknown="unknown job", inactive_errno=EINVAL)
        access.check_set_urgency(ident, job.userid, urgency)
        if job.has_resources or job.state & RUNNING:
            raise FluxLiteError("urgency cannot be changed once resources are allocated", errno=EINVAL)
        old = job.urgency
        self.post(job, "urgency", {"userid": ident.userid, "urgency": urgency})
        return old

    # -- submission ----------------------------------------------------------------------

    def next_jobid(self):
        meta = self.b.instance.meta
        ts = int((self.b.now - meta["fluid_epoch"]) * 1000)
        last = self._checkpoint.get("max_jobid", 0)
        last_ts, last_seq = fluid_timestamp(last), last & 0x3FF
        if last and ts <= last_ts:
            ts, seq = last_ts, last_seq + 1
            if seq > 1023:  # Flux's generator spins to the next millisecond
                ts, seq = ts + 1, 0
        else:
            seq = 0
        jobid = fluid(ts, 0, seq)
        self._checkpoint["max_jobid"] = jobid
        self._checkpoint_dirty = True
        return jobid

    def submit(self, jobspec, urgency=16, flags=0, original=None):
        """Validate and ingest one job; returns its id."""
        from flux_lite.job_manager import validate

        ident = self.b.instance.identity
        if not isinstance(urgency, int) or not 0 <= urgency <= 31:
            raise FluxLiteError("urgency range is [0:31]", errno=EINVAL)
        novalidate = bool(flags & FLAG_NOVALIDATE)
        access.check_submit(ident, urgency, novalidate)
        jobspec = dict(jobspec)
        attrs = jobspec.get("attributes", {})
        system = attrs.get("system", {}) if isinstance(attrs, dict) else {}
        if not isinstance(system, dict):
            system = {}
        if "environment" in system:
            jobspec = json.loads(json.dumps(jobspec))
            del jobspec["attributes"]["system"]["environment"]
        jobspec = self.b.queues.frobnicate(jobspec)  # job-ingest: default queue, constraints
        if not novalidate:  # the instance owner may skip ingest validation
            validate.validate_jobspec(self.b, jobspec)
        self.b.queues.submit_check(jobspec)
        # dependencies are checked before the job exists: a rejection leaves no trace
        dep_steps = self.b.deps.check(jobspec, ident.userid) if system.get("dependencies") else None
        jobid = self.next_jobid()
        job = Job(jobid, jobspec)
        self.jobs[jobid] = job
        key = kvs_key(jobid)
        text = json.dumps(jobspec)
        self.kvs.put_text(key + ".J", json.dumps(original) if original is not None else text)
        self.kvs.put_text(key + ".jobspec", text)
        if flags & 4:  # waitable: `job wait` may reap it once
            from flux_lite.job_manager import wait

            wait.add(self.kvs, jobid)
        self.post(job, "submit", {"userid": ident.userid, "urgency": urgency, "flags": flags, "version": 1})
        if dep_steps:
            self.b.deps.apply(job, dep_steps)
        if "job" in system:
            self.b.deps.job_new(job)
        self.post(job, "validate")
        if dep_steps:
            self.b.deps.validated(job, dep_steps)
        return jobid


def merge_annotations(dst, src):
    """RFC 27 annotation merge: recursive, null deletes a key."""
    for key, value in src.items():
        if value is None:
            dst.pop(key, None)
        elif isinstance(value, dict):
            sub = dst.get(key)
            if not isinstance(sub, dict):
                sub = {}
            merge_annotations(sub, value)
            if sub:
                dst[key] = sub
            else:
                dst.pop(key, None)
        else:
            dst[key] = value
