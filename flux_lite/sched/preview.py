"""Describing how estimated starts move (`update --dry-run` on a running job)."""

import datetime

from flux_lite.formats.jobid import f58


def _iso(t):
    if t is None:
        return "unknown"
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe_moves(before, after):
    """Lines `<f58>: t_estimate OLD -> NEW (+Ns)` for jobs whose estimate changes.

    before/after map PendingJob (or job id) -> estimated start or None.
    """
    lines = []
    for key in sorted(before, key=lambda k: getattr(k, "sort_key", lambda: (0, k))()):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        jobid = getattr(key, "jobid", key)
        if old is not None and new is not None:
            delta = f" ({new - old:+.0f}s)"
        else:
            delta = ""
        lines.append(f"{f58(jobid)}: t_estimate {_iso(old)} -> {_iso(new)}{delta}")
    return lines
