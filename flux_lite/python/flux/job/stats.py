"""flux.job.stats: job counts by state and result (job-list.job-stats)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from flux.rpc import RPC


class JobStats:
    """Job counts: depend, priority, sched, run, cleanup, inactive, total;
    successful, failed (every unsuccessful job: failed, canceled and timed
    out), timeout, canceled, inactive_purged; pending, running, active.
    Each is -1 until the first update."""

    states = ("depend", "priority", "sched", "run", "cleanup", "inactive", "total")
    stats = ("successful", "failed", "timeout", "canceled", "inactive_purged")
    derived_stats = ("pending", "running", "active")

    def __init__(self, handle: Any, queue: str | list[str] | None = None) -> None:
        self.handle = handle
        self.queues: list[str] = []
        if queue is not None:
            self.queues.extend([queue] if isinstance(queue, str) else queue)
        self.callback: Callable[..., Any] | None = None
        self.cb_kwargs: dict[str, Any] = {}
        for attr in itertools.chain(self.states, self.stats, self.derived_stats):
            setattr(self, attr, -1)

    def _counts(self, resp: dict) -> dict[str, int]:
        if not self.queues:
            return {**resp["job_states"], **{s: resp[s] for s in self.stats}}
        by_name = {q["name"]: q for q in resp.get("queues", [])}
        counts = dict.fromkeys(itertools.chain(self.states, self.stats), 0)
        for name in self.queues:
            if name not in by_name:
                raise ValueError(f"no stats available for queue {name}")
            q = by_name[name]
            for key in self.states:
                counts[key] += q["job_states"][key]
            for key in self.stats:
                counts[key] += q[key]
        return counts

    def _update_cb(self, rpc: RPC) -> None:
        counts = self._counts(rpc.get())
        for key, value in counts.items():
            setattr(self, key, value)
        self.pending = counts["depend"] + counts["priority"] + counts["sched"]
        self.running = counts["run"] + counts["cleanup"]
        self.active = counts["total"] - counts["inactive"]
        self.failed = counts["failed"] + counts["timeout"] + counts["canceled"]
        if self.callback:
            self.callback(self, **self.cb_kwargs)

    def _query(self) -> RPC:
        return RPC(self.handle, "job-list.job-stats", {})

    def update(self, callback: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        """Update when the handle's reactor runs, then call callback(self, **kwargs)."""
        self.callback = callback
        self.cb_kwargs = kwargs
        self._query().then(self._update_cb)

    def update_sync(self) -> JobStats:
        self._update_cb(self._query())
        return self
