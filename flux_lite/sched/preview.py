"""Describing how estimated starts move (`update --dry-run` on a running job)."""

import datetime

from flux_lite.formats.jobid import f58


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_delta(delta):
    if delta == int(delta):
        return f"{int(delta):+d}s"
    return f"{delta:+.3f}s"


def describe_moves(queue, before, after, now):
    """Lines `<f58>: t_estimate OLD -> NEW (+Ns)` for queued jobs whose estimate moves.

    queue: PendingJobs in priority order; before/after: jobid -> start or None.
    Estimates that stay in the past on both sides (starting now) are not moves.
    """
    lines = []
    for pj in queue:
        old, new = before.get(pj.jobid), after.get(pj.jobid)
        if old == new or not ((old is not None and old > now) or (new is not None and new > now)):
            continue
        left = "unknown" if old is None else iso(old)
        right = "unknown" if new is None else iso(new)
        line = f"{f58(pj.jobid)}: t_estimate {left} -> {right}"
        if old is not None and new is not None:
            line += f" ({fmt_delta(new - old)})"
        lines.append(line)
    return lines
