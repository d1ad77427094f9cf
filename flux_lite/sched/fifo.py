"""sched-fifo: priority FIFO with head-of-line blocking (flux-core's sched-fifo).

Jobs are taken in priority order, then submission order. The head of the
queue is allocated if it fits; if it does not, nothing behind it starts.
Infeasible requests are denied at once. Queued jobs get ``sched.t_estimate``
forecasts by simulating the pool forward through the running jobs' end times.
Flux's sched-simple is this module with the C sched-simple's debug hooks
(flux_lite/sched/simple.py).
"""

import heapq

from flux_lite import protocol as rfc27
from flux_lite.sched.base import COMMON_ARGS, Scheduler
from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources
from flux_lite.sched.preview import describe_moves
from flux_lite.sched.registry import register


@register
class FifoScheduler(Scheduler):
    name = "sched-fifo"
    policies = ("fifo",)
    description = "priority FIFO (policy fifo)"
    module_args = COMMON_ARGS
    queue_depth = 8
    python_module = True
    policy = "fifo"
    # DEBUG_FAIL_ALLOC and DEBUG_EXPIRATION_UPDATE_DENY are sched-simple's
    debug_hooks = False

    def stats(self) -> dict:
        """sched-simple's stats-get keys (Flux's Python scheduler class) first. The
        module lives as long as one command in flux-lite, so the pass counts
        are this command's; its passes never yield nor wait for a burst."""
        out = {"sched_passes": self.passes, "sched_yields": 0, "forecast_passes": self.forecasts,
               "forecast_yields": 0, "sched_delay": 0.0, "sched_duration_ewma": 0.0,
               "sched_interval_ewma": 0.0, "pending_jobs": len(self.queue)}
        # then flux-lite's own: policy, queue-depth, allocated_jobs, debug
        out.update((k, v) for k, v in super().stats().items() if k not in out)
        return out

    def cancel(self, msg: dict) -> None:
        """Flux's sched-simple schedules again as soon as a canceled request
        leaves its queue, before the job manager can send that job's request
        again (a round trip later): the jobs behind a canceled head get a pass
        without it (recorded when `update queue=` moves a blocked head). It
        reads the cancels already waiting first: stopping a queue withdraws
        all its requests at once, and the jobs behind a withdrawn head get no
        pass in between (recorded: an infeasible job behind it stays SCHED)."""
        had = msg.get("id") in self.queue
        super().cancel(msg)
        if had and self.needs_pass and not self.b.next_message_is(rfc27.SCHED_CANCEL):
            self.run_pass()

    def schedule(self):
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
        self.forecasts += 1
        for pj, estimate in self.estimates(self.pool).items():
            self.annotate(pj, self.estimate_annotation(estimate))

    def estimate_annotation(self, estimate):
        """What a queued job is annotated with, given its estimated start."""
        return {"t_estimate": estimate}

    def estimates(self, pool):
        """PendingJob -> estimated start (None when unknown), in FIFO order,
        never earlier than the job ahead, simulated on a copy of pool."""
        out = {}
        queue = self.sorted_queue()
        if not queue:
            return out
        now = self.b.now
        # the copy shows the pool's allocations but records none of them: a
        # running job is released by its parts (apply), never by building its
        # R, and a store decodes only the allocations the simulation reaches
        sim = pool.copy(jobs=False)
        running, parts_of = pool.job_ends()
        # a heap of (end, jobid): the simulation frees jobs in end order and
        # adds each estimated job's own end (a sorted list made this quadratic)
        ends = [(end, jobid) for jobid, end in running if end and end > 0]
        heapq.heapify(ends)
        t = now
        floor = now
        unknown = False
        for pj in queue:
            if unknown:
                out[pj] = None
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
                        heapq.heappop(ends)
                    if not ends:
                        unknown = True
                        break
                    t = ends[0][0]
                    while ends and ends[0][0] <= t:
                        _end, jobid = heapq.heappop(ends)
                        if jobid in sim.jobs:  # a queued job the simulation started
                            sim.free(jobid, None, final=True)
                        else:
                            sim.apply(parts_of(jobid), False)
                    continue
                estimate = max(t, floor, now)
                floor = estimate
                if pj.duration > 0:
                    heapq.heappush(ends, (t + pj.duration, pj.jobid))
                else:
                    unknown = True  # it never ends in the simulation
                break
            out[pj] = estimate
        return out

    def preview_expiration(self, jobid, expiration):
        """How a running job's new end would move the queued jobs' estimates."""
        before = {pj.jobid: t for pj, t in self.estimates(self.pool).items()}
        sim = self.pool.copy()
        sim.update_expiration(jobid, expiration)
        after = {pj.jobid: t for pj, t in self.estimates(sim).items()}
        return describe_moves(self.sorted_queue(), before, after, self.b.now)
