"""First come, first served: the smallest scheduler module."""

import heapq

from flux.resource import InfeasibleRequest, InsufficientResources
from flux.scheduler import Scheduler


class TinyScheduler(Scheduler):
    queue_depth = 8

    def schedule(self):
        while self._queue:
            job = self._queue[0]
            try:
                alloc = self.resources.alloc(job.jobid, job.resource_request)
            except InsufficientResources:
                job.request.annotate({"sched": {"reason_pending": "insufficient resources"}})
                break
            except InfeasibleRequest as exc:
                job.request.deny(str(exc))
            else:
                self.log.info(f"alloc {job.jobid}: {alloc.dumps()}")
                job.request.success(alloc, {"sched": {"resource_summary": alloc.dumps()}})
            heapq.heappop(self._queue)
            yield


def mod_main(h, *args):
    TinyScheduler(h, *args).run()
