"""Submission (flux-core job-manager/submit.c and job-ingest): FLUIDs and new jobs.

Job ids are FLUIDs generated from the instance clock; the highest one issued
is checkpointed (``checkpoint.job-manager``) and, outside the database, kept
by the instance so that ids never repeat even after a state rollback.
"""

import json
from errno import EEXIST, EINVAL, ENOENT, ENOSYS, EOVERFLOW, EPROTO

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog, jsontext, signed
from flux_lite.formats.jobid import fluid, fluid_timestamp, kvs_key
from flux_lite.job_manager import validate, wait
from flux_lite.job_manager.job import FLAG_DEBUG, FLAG_NOVALIDATE, FLAG_WAITABLE, Job

CHECKPOINT_KEY = "checkpoint.job-manager"
# job-ingest's module state while it is not the default (loaded, no arguments):
# {"loaded": bool, "args": [...]}
INGEST_KEY = "job-ingest.module"
# the arguments Flux's job-ingest takes (prefixes end in '='); only
# disable-validator changes what flux-lite does
INGEST_ARGS = ("validator-args=", "validator-plugins=", "disable-validator", "batch-count=", "buffer-size=",
               "max-fluid-generator-id=", "allow-root-jobs")
_SUBMIT_TEXT = eventlog.int_context_format("userid", "urgency", "flags", "version")
# distinct jobspecs remembered per command (a trace replay submits thousands)
SHARED_SPECS = 256
# submissions between writes of the KVS buffers (Submit.submit)
FLUSH_BATCH = 512


class Submit:
    def __init__(self, jm):
        self.jm = jm
        self.b = jm.b
        self.kvs = jm.b.kvs
        self.checkpoint = self.kvs.get(CHECKPOINT_KEY) or {"version": 1, "max_jobid": 0}
        self._dirty = False
        self._specs = {}  # JSON text -> (jobspec, text) validated in this command
        self._count = 0  # jobs submitted this command
        self._ingest = None  # job-ingest's module state, read when first needed

    @property
    def max_jobid(self):
        return self.checkpoint.get("max_jobid", 0)

    def save(self):
        if self._dirty:
            self.kvs.put(CHECKPOINT_KEY, self.checkpoint)
            self._dirty = False
            # outside the database too: a lost WAL must not roll job ids back
            self.kvs.after_commit(self.b.instance.hwm_writer(self.checkpoint["max_jobid"]))

    def raise_jobid_floor(self, jobid):
        """Never issue an id at or below jobid again (ids seen before a state rollback)."""
        if jobid > self.max_jobid:
            self.checkpoint["max_jobid"] = jobid
            self._dirty = True

    def next_jobid(self):
        meta = self.b.instance.meta
        ts = int((self.b.now - meta["fluid_epoch"]) * 1000)
        last = self.max_jobid
        last_ts, last_seq = fluid_timestamp(last), last & 0x3FF
        if last and ts <= last_ts:
            ts, seq = last_ts, last_seq + 1
            if seq > 1023:  # Flux's generator spins to the next millisecond
                ts, seq = ts + 1, 0
        else:
            seq = 0
        if ts >> 39:
            # (the virtual clock stops short of this: Instance.clock_limit)
            raise FluxLiteError("job IDs have run out: an instance issues them for 17.4 years after it "
                                "starts (a job ID must fit SQLite's 64-bit integers)", errno=EOVERFLOW)
        jobid = fluid(ts, 0, seq)
        self.checkpoint["max_jobid"] = jobid
        self._dirty = True
        return jobid

    @property
    def ingest_module(self) -> dict:
        """job-ingest's state: {"loaded": bool, "args": [...]}."""
        if self._ingest is None:
            self._ingest = self.kvs.get(INGEST_KEY) or {"loaded": True, "args": []}
        return self._ingest

    def ingest_module_remove(self, force=False):
        """flux module remove job-ingest: submissions fail (ENOSYS) until it is loaded."""
        if not self.ingest_module["loaded"]:
            if force:
                return
            raise FluxLiteError("job-ingest: module is not loaded", errno=ENOENT)
        self._ingest = {"loaded": False, "args": []}
        self.kvs.put(INGEST_KEY, self._ingest)

    def ingest_module_load(self, args):
        """flux module load job-ingest ARGS (disable-validator: every job is
        ingested as one submitted with the novalidate flag)."""
        if self.ingest_module["loaded"]:
            raise FluxLiteError("job-ingest: module is already loaded", errno=EEXIST)
        for arg in args:
            if not any(arg == known or (known.endswith("=") and arg.startswith(known)) for known in INGEST_ARGS):
                self.b.log("job-ingest", "err", f"Invalid option: {arg}")
                raise FluxLiteError(f"job-ingest: Invalid option: {arg}", errno=EINVAL)
        self._ingest = {"loaded": True, "args": list(args)}
        if args:
            self.kvs.put(INGEST_KEY, self._ingest)
        else:
            self.kvs.delete(INGEST_KEY)

    def submit(self, jobspec, urgency=16, flags=0, original=None, userid=None, text=None):
        """Validate and ingest one job; returns its id. userid: the owner
        submits on behalf of that user (a trace replay). text: the jobspec's
        ``json.dumps`` text when the caller has it already (a trace replay
        writes it from a template); used only if ingest leaves the jobspec as it is."""
        b = self.b
        jm = self.jm
        ident = b.instance.identity
        module = self.ingest_module
        if not module["loaded"]:
            raise FluxLiteError("No service matching job-ingest.submit is registered", errno=ENOSYS)
        if not isinstance(urgency, int) or not 0 <= urgency <= 31:
            raise FluxLiteError("urgency range is [0:31]", errno=EINVAL)
        novalidate = bool(flags & FLAG_NOVALIDATE)
        access.check_submit(ident, urgency, novalidate, waitable=bool(flags & FLAG_WAITABLE))
        novalidate = novalidate or "disable-validator" in module["args"]
        if userid is None:
            userid = ident.userid
        elif userid != ident.userid:
            access.check_submit_as(ident)
        jobspec = dict(jobspec)
        attrs = jobspec.get("attributes", {})
        system = attrs.get("system", {}) if isinstance(attrs, dict) else {}
        if not isinstance(system, dict):
            system = {}
        if "environment" in system:
            # as Flux's ingest: J keeps the jobspec as submitted, environment
            # and all (the job shell's source for it); the stored jobspec drops it
            if original is None:
                original = jobspec
            jobspec = {**jobspec, "attributes": {**attrs, "system": {
                k: v for k, v in system.items() if k != "environment"}}}
            text = None
        given = jobspec
        jobspec = b.queues.frobnicate(jobspec)  # job-ingest: default queue, constraints
        if text is None or jobspec is not given:
            try:
                text = jsontext.dumps(jobspec)
            except (TypeError, ValueError, RecursionError):
                text = None  # validation says what is wrong with it
        if text is not None and "\\ud" in text:
            # a lone surrogate (argv that was not UTF-8) makes JSON that
            # jansson, and so Flux, refuses; a non-BMP character is a pair
            try:
                json.dumps(jobspec, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise FluxLiteError("jobspec is not valid UTF-8", errno=EINVAL) from None
        # copies of one jobspec (submit --cc) share one object: jobs never
        # change theirs in place (jobspec-update events replace it)
        shared = self._specs.get(text) if text is not None else None
        if shared is not None:
            jobspec, text = shared  # (one text object too: it is stored twice per job)
        if not novalidate:  # the instance owner may skip ingest validation
            validate.validate_jobspec(b, jobspec, seen=shared is not None)
        b.queues.submit_check(jobspec)
        # alloc-bypass.so's job.validate (a jobtap check: even an unvalidated job's)
        bypass = "alloc-bypass" in system and b.jobtap.bypass_validate(jobspec, userid) is not None
        # dependencies are checked before the job exists: a rejection leaves no trace
        dep_steps = b.deps.check(jobspec, userid) if system.get("dependencies") else None
        jobid = self.next_jobid()
        job = Job(jobid, jobspec)
        jm.index.add(job)
        if text is None:
            text = jsontext.dumps(jobspec)
        job.jobspec_text = (jobspec, text)
        if shared is None and not novalidate:
            if len(self._specs) >= SHARED_SPECS:
                self._specs.clear()
            self._specs[text] = (jobspec, text)
        key = kvs_key(jobid)
        self.kvs.put_text(key + ".J", jsontext.dumps(original) if original is not None else text)
        self.kvs.put_text(key + ".jobspec", text)
        if flags & FLAG_WAITABLE:  # `job wait` may reap it once

            wait.add(self.kvs, jobid)
        post = jm.event.post
        post(job, "submit", {"userid": userid, "urgency": urgency, "flags": flags, "version": 1},
             _SUBMIT_TEXT % (userid, urgency, flags, 1)
             if type(userid) is int and type(urgency) is int and type(flags) is int else None)
        if bypass:
            post(job, "set-flags", {"flags": ["alloc-bypass"]})
        if dep_steps:
            b.deps.apply(job, dep_steps)
        if "job" in system:
            b.deps.job_new(job)
        post(job, "validate")
        if dep_steps:
            b.deps.validated(job, dep_steps)
        self._count += 1
        if self._count % FLUSH_BATCH == 0:
            # a burst (submit --cc, a replay) writes its KVS values and
            # eventlogs a batch at a time into the command's transaction,
            # rather than holding every job's until the commit
            self.kvs.flush()
        return jobid


def ingest(broker, J: str, urgency: int, flags: int) -> int:
    """job-ingest.submit: J is Flux's signed jobspec (mechanism none, as an
    unsigned job's) or the jobspec's JSON text itself; returns the job id.
    J keeps the jobspec as submitted (its environment too); the job's own
    jobspec is what ingest makes of it, as for any submission."""
    if flags & ~(FLAG_DEBUG | FLAG_WAITABLE | FLAG_NOVALIDATE):
        raise FluxLiteError("invalid job flags", errno=EPROTO)
    text = signed.unwrap_J(J)
    if text is not None:
        access.check_signer(broker.instance.identity, signed.signer(J))
    else:
        text = J
    try:
        jobspec = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FluxLiteError(f"jobspec: invalid JSON: {exc}", errno=EINVAL) from None
    if not isinstance(jobspec, dict):
        raise FluxLiteError("jobspec: invalid JSON: not an object", errno=EINVAL)
    attrs = jobspec.get("attributes")
    system = attrs.get("system") if isinstance(attrs, dict) else None
    original = jobspec if isinstance(system, dict) and "environment" in system else None
    return broker.jm.submit(jobspec, urgency=urgency, flags=flags, original=original)
