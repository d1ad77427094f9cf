"""job.validate: the checks a jobspec passes at submit, and at update by guests.

Flux runs these as job-manager plugins (.limit-duration, .validate-duration);
the messages are theirs.
"""

import math
from errno import EINVAL

from flux_lite import config as configmod
from flux_lite.config import queue_of
from flux_lite.errors import FluxLiteError, JobspecError
from flux_lite.formats import fsd, jj
from flux_lite.formats.constraint import hostnames
from flux_lite.formats.fsd import format_c
from flux_lite.formats.jobspec import duration as jobspec_duration
from flux_lite.formats.jobspec_validate import validate


def check_hosts(broker, constraint) -> None:
    """job-ingest's check: every host a constraint names must exist."""
    try:
        names = hostnames(constraint)
    except ValueError as exc:
        raise FluxLiteError(f"invalid constraint: {exc}", errno=EINVAL) from None
    if not names:
        return
    rset = broker.resources.rset
    known = {rset.hostname(r) for r in rset.ranks}
    for name in names:
        if name not in known:
            raise FluxLiteError(f"host constraint contains invalid hosts: host '{name}' not found", errno=EINVAL)


def policy_duration_limit(cfg):
    value = configmod.get_path(cfg, "policy.limits.duration")
    if value is None:
        return None
    limit = configmod._fsd(value, "policy.limits.duration")
    return limit if limit > 0 and limit != float("inf") else None


def instance_expiration(broker):
    R = broker.resources.instance_R
    return R["execution"].get("expiration", 0.0) or 0.0


def validate_jobspec(broker, jobspec, seen=False):
    """seen: this very jobspec (same JSON text) passed before in this command,
    so its self-contained checks are skipped; those that depend on the
    instance (constraints, limits, its remaining lifetime) run again."""
    if not seen:
        try:
            validate(jobspec, shape=jj.job_shape(jobspec))  # (the listing and the scheduler read it again)
        except JobspecError as exc:
            raise FluxLiteError(str(exc), errno=EINVAL) from None
    constraint = (jobspec.get("attributes") or {}).get("system", {}).get("constraints")
    if constraint:
        check_hosts(broker, constraint)
    if not seen:
        _check_run_duration(jobspec)
    duration = jobspec_duration(jobspec)
    loaded = broker.jobtap.loaded  # (each check is a builtin plugin: removed, it checks nothing)
    queue = None
    if broker.config.get("queues") or broker.config.get("policy"):
        queue = queue_of(jobspec)
        # Flux's .limit-job-size runs before .limit-duration
        if loaded(".limit-job-size"):
            broker.queues.check_job_size(queue, jj.get_counts(jobspec))
    if not loaded(".limit-duration"):
        limit = None
    elif broker.config.get("queues"):
        limit = broker.queues.duration_limit(queue)
    else:
        limit = policy_duration_limit(broker.config)
    if limit is not None and (duration == 0 or duration > limit):
        requested = "unlimited" if duration == 0 else format_c(duration)
        where = f" for queue {queue}" if queue is not None else ""
        raise FluxLiteError(
            f"requested duration ({requested}) exceeds policy limit of {format_c(limit)}{where}", errno=EINVAL
        )
    expiration = instance_expiration(broker) if loaded(".validate-duration") else 0.0
    if expiration > 0 and duration > 0:
        remaining = expiration - broker.now
        if duration > remaining:
            raise FluxLiteError(
                f"job duration ({format_c(duration)}) exceeds remaining instance lifetime "
                f"({format_c(max(remaining, 0.0))})",
                errno=EINVAL,
            )


def _check_run_duration(jobspec):
    """exec.test.run_duration must say how long the job runs: a string that
    does not parse (or nan, or a negative time) would silently mean "until
    canceled", so it is refused at the door."""
    system = (jobspec.get("attributes") or {}).get("system") or {}
    test = ((system.get("exec") if isinstance(system, dict) else None) or {})
    test = test.get("test") if isinstance(test, dict) else None
    if not isinstance(test, dict) or not isinstance(test.get("run_duration"), str):
        return  # absent, or a type Flux's exec fails the job for
    value = test["run_duration"]
    try:
        seconds = fsd.parse_config(value)
    except ValueError:
        seconds = None
    if seconds is None or math.isnan(seconds) or seconds < 0:
        raise FluxLiteError(f"exec.test.run_duration: invalid Flux standard duration '{value}'", errno=EINVAL)
