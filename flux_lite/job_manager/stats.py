"""Job statistics, as job-list's ``job-stats`` answers them (`flux job stats`,
`flux jobs --stats`).

Counts come from the jobs index in one grouped query over its (state, result)
index; the number of purged jobs, which no eventlog remembers, is kept under
``job-manager.stats`` by the purge module.
"""

from flux_lite.job_manager import index
from flux_lite.job_manager.job import (
    CANCELED,
    CLEANUP,
    COMPLETED,
    DEPEND,
    FAILED,
    INACTIVE,
    NEW,
    PRIORITY,
    RUN,
    SCHED,
    TIMEOUT,
)

STATS_KEY = "job-manager.stats"


def purged_count(kvs) -> int:
    return (kvs.get(STATS_KEY) or {}).get("inactive_purged", 0)


def add_purged(kvs, count: int) -> None:
    stats = kvs.get(STATS_KEY) or {}
    stats["inactive_purged"] = stats.get("inactive_purged", 0) + count
    kvs.put(STATS_KEY, stats)


def job_stats(broker) -> dict:
    """The job-stats document: counts by state and by result, purged jobs."""
    broker.flush()  # this command's own changes must be visible
    states = {NEW: 0, DEPEND: 0, PRIORITY: 0, SCHED: 0, RUN: 0, CLEANUP: 0, INACTIVE: 0}
    results = {COMPLETED: 0, FAILED: 0, CANCELED: 0, TIMEOUT: 0}

    for state, result, count in index.counts_by_state_result(broker.kvs.conn):
        states[state] = states.get(state, 0) + count
        if state == INACTIVE and result in results:
            results[result] += count
    total = sum(states.values())
    return {
        "job_states": {
            "depend": states[DEPEND] + states[NEW],
            "priority": states[PRIORITY],
            "sched": states[SCHED],
            "run": states[RUN],
            "cleanup": states[CLEANUP],
            "inactive": states[INACTIVE],
            "total": total,
        },
        "successful": results[COMPLETED],
        "failed": results[FAILED],
        "canceled": results[CANCELED],
        "timeout": results[TIMEOUT],
        "inactive_purged": purged_count(broker.kvs),
        "queues": [],
    }


def summary(stats: dict):
    """(line, active) as `flux jobs --stats` prints them: failed counts every
    unsuccessful job (failed, canceled, timeout)."""
    js = stats["job_states"]
    running = js["run"] + js["cleanup"]
    pending = js["depend"] + js["priority"] + js["sched"]
    failed = stats["failed"] + stats["canceled"] + stats["timeout"]
    line = (f"{running} running, {stats['successful']} completed, {failed} failed, "
            f"{pending} pending, {stats['inactive_purged']} inactive purged")
    return line, js["total"] - js["inactive"] > 0
