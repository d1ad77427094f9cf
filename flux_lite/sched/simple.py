"""sched-simple: priority FIFO with head-of-line blocking (Flux's sched-fifo).

The head of the queue is allocated if it fits; if it does not, nothing behind
it starts. Infeasible requests are denied at once. After each pass, queued
jobs get ``sched.t_estimate`` forecasts by simulating the pool forward
through the running jobs' end times.
"""

from flux_lite.sched.base import Scheduler


class SimpleScheduler(Scheduler):
    name = "sched-simple"
    queue_depth = 8
    policy = "fcfs"

    def schedule(self):
        from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources

        for pj in self.sorted_queue():
            try:
                rset = self.try_alloc(pj)
            except InsufficientResources:
                break
            except InfeasibleRequest as exc:
                self.deny(pj, str(exc) or "unsatisfiable request")
                continue
            self.success(pj, rset, {"sched": {"resource_summary": rset.summary()}})

    def forecast(self):
        """t_estimate for every queued job, FIFO order, never earlier than the one ahead."""
        from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources

        queue = self.sorted_queue()
        if not queue:
            return
        now = self.b.now
        sim = self.pool.copy()
        ends = sorted((end, jobid) for jobid, (_r, end) in sim.allocations().items() if end and end > 0)
        t = now
        floor = now
        unknown = False
        for pj in queue:
            if unknown:
                self.annotate(pj, {"t_estimate": None})
                continue
            estimate = None
            while True:
                try:
                    sim.alloc(pj.jobid, pj.request, t, expiration_default=0.0)
                except InfeasibleRequest:
                    break
                except InsufficientResources:
                    # advance to the next end time and free what ended
                    while ends and ends[0][0] <= t:
                        ends.pop(0)
                    if not ends:
                        unknown = True
                        break
                    t = ends[0][0]
                    while ends and ends[0][0] <= t:
                        _end, jobid = ends.pop(0)
                        sim.free(jobid, None, final=True)
                    continue
                estimate = max(t, floor, now)
                floor = estimate
                if pj.duration > 0:
                    end = t + pj.duration
                    ends.append((end, pj.jobid))
                    ends.sort()
                else:
                    unknown = True  # it never ends in the simulation
                break
            self.annotate(pj, {"t_estimate": estimate})
