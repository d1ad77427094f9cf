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


def add_purged(kvs, count: int, by_queue: dict | None = None) -> None:
    """count more jobs purged (by_queue: how many of them named each queue)."""
    stats = kvs.get(STATS_KEY) or {}
    stats["inactive_purged"] = stats.get("inactive_purged", 0) + count
    if by_queue:
        queues = stats.setdefault("queues", {})
        for name, n in by_queue.items():
            queues[name] = queues.get(name, 0) + n
    kvs.put(STATS_KEY, stats)


def job_stats(broker, queues: bool = False) -> dict:
    """The job-stats document: counts by state and by result, purged jobs;
    with queues, job-list's per-queue entries too (they read every job)."""
    broker.flush()  # this command's own changes must be visible
    doc = _document(index.counts_by_state_result(broker.kvs.conn), purged_count(broker.kvs))
    if queues:
        by_queue: dict = {}
        for name, state, result, count in index.counts_by_queue_state_result(broker.kvs.conn):
            by_queue.setdefault(name, []).append((state, result, count))
        purged = (broker.kvs.get(STATS_KEY) or {}).get("queues") or {}
        for name in purged:
            by_queue.setdefault(name, [])
        doc["queues"] = [{"name": name, **{k: v for k, v in _document(by_queue[name], purged.get(name, 0)).items()
                                           if k != "queues"}}
                         for name in sorted(by_queue)]
    return doc


def queue_stats(doc: dict, names: list[str]) -> dict:
    """The per-queue entries of names summed (flux.job.JobStats(queue=...));
    ValueError for a queue without stats, in its words."""
    entries = {q["name"]: q for q in doc["queues"]}
    total = _document((), 0)
    del total["queues"]
    for name in names:
        entry = entries.get(name)
        if entry is None:
            raise ValueError(f"no stats available for queue {name}")
        for key, value in entry["job_states"].items():
            total["job_states"][key] += value
        for key in ("successful", "failed", "canceled", "timeout", "inactive_purged"):
            total[key] += entry[key]
    return total


def _document(counts, purged: int) -> dict:
    states = {NEW: 0, DEPEND: 0, PRIORITY: 0, SCHED: 0, RUN: 0, CLEANUP: 0, INACTIVE: 0}
    results = {COMPLETED: 0, FAILED: 0, CANCELED: 0, TIMEOUT: 0}
    for state, result, count in counts:
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
        "inactive_purged": purged,
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
