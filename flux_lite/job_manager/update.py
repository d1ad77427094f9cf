"""Job updates (`flux update`): client-side key handling and job-manager.update.

The client turns KEY=VALUE arguments into an ordered dict of dotted jobspec
paths (relative durations are computed here, from the current jobspec). The
job manager then checks the request in Flux's order and words, validates the
updated jobspec unless the instance owner bypasses it, asks the scheduler
(``sched.expiration``) when a running job's duration changes, and posts
``set-flags`` / ``jobspec-update`` / ``resource-update`` together.
"""

import json
import math
from errno import EINVAL, ENOENT, EPROTO

from flux_lite import access
from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.fsd import format_fsd
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.formats.jobspec import apply_updates
from flux_lite.job_manager.job import RUNNING
from flux_lite.job_manager.validate import validate_jobspec
from flux_lite.limits import MAX_TIME

DURATION = "attributes.system.duration"
QUEUE = "attributes.system.queue"
CONSTRAINTS = "attributes.system.constraints"
ALIASES = {"name": "attributes.system.job.name"}


# -- client side ---------------------------------------------------------------


def normalize_key(key):
    key = ALIASES.get(key, key)
    if not key.startswith(("attributes.", "resources.", "tasks.")):
        key = "attributes.system." + key
    return key


def _parse_fsd(text):
    try:
        return fsd.parse(text)
    except ValueError:
        raise FluxLiteError("invalid Flux standard duration") from None


def duration_value(value, jobid, current_duration):
    """Absolute FSD, or +FSD/-FSD relative to the current jobspec duration."""
    if value.startswith(("+", "-")):
        current = current_duration()
        if current == 0:
            raise FluxLiteError(f"duration for {f58(jobid)} is unlimited, can't update by {value}")
        arg = _parse_fsd(value[1:])
        if value[0] == "-":
            result = current - arg
            if result <= 0:
                raise FluxLiteError(
                    f"current duration for {f58(jobid)} ({format_fsd(current)}) cannot be reduced by {value[1:]}"
                )
        else:
            result = current + arg
    else:
        result = _parse_fsd(value)
    if math.isinf(result):
        result = 0.0
    return float(result)


def parse_updates(broker, jobid, pairs):
    """KEY=VALUE arguments -> ordered {dotted key: value} (last one of a key wins)."""
    updates = {}
    cache = {}

    def current_duration():
        if "d" not in cache:
            job = broker.jm.load_any(jobid)
            if job is None:
                raise FluxLiteError("unknown job id", errno=ENOENT)
            access.require_job_access(broker.instance.identity, job.userid)
            cache["d"] = float(job.duration or 0)
        return cache["d"]

    for pair in pairs:
        key, _eq, value = pair.partition("=")
        key = normalize_key(key)
        if key == DURATION:
            updates[key] = duration_value(value, jobid, current_duration)
        else:
            try:
                updates[key] = json.loads(value)
            except ValueError:
                updates[key] = value
    return updates


# -- job-manager side ------------------------------------------------------------


def owner_allow_any(broker):
    """.update-duration's owner-allow-any (as the plugin was last loaded with, else configured)."""
    return broker.jobtap.owner_allow_any(broker.config)


# the builtin plugin that handles an update of each key: removed, the key cannot be updated
_PLUGINS = {DURATION: ".update-duration", QUEUE: ".update-queue"}


def _valid_key(key):
    return any(key == top or key.startswith(top + ".") for top in ("attributes", "resources", "tasks"))


def update_job(broker, jobid, updates):
    """job-manager.update {id, updates}: all applied together, or none."""
    jm = broker.jm
    ident = broker.instance.identity
    if not isinstance(updates, dict):
        raise FluxLiteError("malformed update request", errno=EPROTO)
    if not all(isinstance(k, str) and _valid_key(k) for k in updates):
        raise FluxLiteError("one or more jobspec updates are invalid", errno=EINVAL)
    job = jm.require_active(jobid, inactive_errno=EINVAL)
    access.check_update(ident, job.userid, job.immutable)
    running = bool(job.state & RUNNING)
    validated = set()
    extra = {}  # updates a plugin adds (the queue's constraints)
    for key, value in updates.items():
        plugin = _PLUGINS.get(key)
        if plugin is not None and not broker.jobtap.loaded(plugin):
            raise FluxLiteError(f"update of {key} not supported", errno=EINVAL)
        if key == DURATION:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise FluxLiteError("plugin args unpack failed", errno=EINVAL)
            if value < 0:
                raise FluxLiteError("duration must not be negative", errno=EINVAL)
            bypass = access.may_skip_validation(ident, owner_allow_any(broker))
            if running and not bypass:
                raise FluxLiteError("duration update of running job requires instance owner privileges",
                                    errno=EINVAL)
            if bypass:
                validated.add(key)
        elif key == QUEUE:
            extra[CONSTRAINTS] = broker.queues.update_check(job, value)
        else:
            raise FluxLiteError(f"update of {key} not supported", errno=EINVAL)
    if extra:
        updates = dict(updates)
        updates.update(extra)
    new_jobspec = apply_updates(job.jobspec, updates)
    if any(k not in validated for k in updates):
        validate_jobspec(broker, new_jobspec)
    if CONSTRAINTS in extra:
        _feasibility(broker, new_jobspec)
    expiration = None
    if running and DURATION in updates:
        duration = updates[DURATION]
        if not job.R or job.starttime <= 0:
            raise FluxLiteError("unable to get job starttime", errno=EINVAL)
        expiration = 0.0 if duration == 0 else min(job.starttime + duration, MAX_TIME)
        if duration != 0 and expiration <= broker.now:
            raise FluxLiteError("requested duration places job expiration in the past", errno=EINVAL)
        try:
            broker.rpc(rfc27.SCHED_EXPIRATION, rfc27.expiration_request(job.id, expiration))
        except FluxLiteError as exc:
            if exc.errno != rfc27.ENOSYS:  # no scheduler (or one without the method) is fine
                raise FluxLiteError("scheduler refused expiration update", errno=exc.errno) from None
    # posting
    if validated and access.freezes_job(ident, job.userid):
        jm.post(job, "set-flags", {"flags": ["immutable"]})
    jm.post(job, "jobspec-update", dict(updates))
    if expiration is not None:
        jm.post(job, "resource-update", {"expiration": expiration})
        broker.exec.update_expiration(job, expiration)
    return job


def _feasibility(broker, jobspec):
    """The .update-queue plugin asks the scheduler whether the job could
    ever run in its new queue; its reason is the update's error. Without a
    scheduler there is no one to ask, and the update goes through."""
    try:
        broker.rpc(rfc27.SCHED_FEASIBILITY, {"jobspec": jobspec})
    except FluxLiteError as exc:
        if exc.errno != rfc27.ENOSYS:
            raise FluxLiteError(str(exc), errno=EINVAL) from None


def check_posted(broker, jobid, updates):
    """--wait: the matching jobspec-update must be in the eventlog."""
    for entry in reversed(broker.kvs.get_eventlog(kvs_key(jobid, "eventlog")) or []):
        if entry["name"] == "jobspec-update":
            ctx = entry.get("context") or {}
            if all(ctx.get(k) == v for k, v in updates.items()):
                return entry
    raise FluxLiteError("jobspec-update event not found")


def dry_run_report(broker, jobid, updates):
    """What a running job's duration change would do to the plan (nothing changes).

    Lines like `ƒABC: t_estimate 2026-...Z -> 2026-...Z (+600s)` for each
    reserved job whose estimated start would move, from the scheduler's plan.
    """
    if DURATION not in updates:
        return []
    job = broker.jm.lookup(jobid)
    if job is None or not job.state & RUNNING or not job.R:
        return []
    duration = updates[DURATION]
    expiration = 0.0 if duration == 0 else min(job.starttime + duration, MAX_TIME)
    try:
        return broker.rpc(rfc27.SCHED_EXPIRATION_PREVIEW, rfc27.expiration_request(jobid, expiration))["moves"]
    except FluxLiteError as exc:
        if exc.errno != rfc27.ENOSYS:
            raise
        return []
