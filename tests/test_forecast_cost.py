"""sched-simple's start-time forecast costs what it reaches.

The forecast simulates the pool forward through the running jobs' end
times. It releases a running job by its parts (never building its R nor
freeing it through the pool's bookkeeping), and reads from the scheduler's
store only the allocations it releases; the estimates are those of the
simulation on a whole copy of the pool (the reference below).
"""

import heapq
import random

import pytest

from flux_lite.sched import pool as poolmod
from flux_lite.sched import simple as simplemod
from flux_lite.sched import store as storemod
from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources


def _reference_estimates(self, pool):
    """The forecast as it was: a whole copy of the pool, running jobs freed."""
    out = {}
    queue = self.sorted_queue()
    if not queue:
        return out
    now = self.b.now
    sim = pool.copy()
    ends = [(end, jobid) for jobid, end in sim.job_end_times() if end and end > 0]
    heapq.heapify(ends)
    t = floor = now
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
                while ends and ends[0][0] <= t:
                    heapq.heappop(ends)
                if not ends:
                    unknown = True
                    break
                t = ends[0][0]
                while ends and ends[0][0] <= t:
                    _end, jobid = heapq.heappop(ends)
                    sim.free(jobid, None, final=True)
                continue
            estimate = max(t, floor, now)
            floor = estimate
            if pj.duration > 0:
                heapq.heappush(ends, (t + pj.duration, pj.jobid))
            else:
                unknown = True
            break
        out[pj] = estimate
    return out


def _workload(flux, seed):
    rng = random.Random(seed)
    for _ in range(10):
        flux("submit", "--quiet", "-n", rng.choice(["1", "1", "2", "3"]), "-t", f"{rng.randint(1, 30)}m",
             "sleep", "inf")
    for _ in range(6):
        args = rng.choice([["-N1"], ["-n1"], ["-n4"], ["-N2"], ["-n2", "-t", "5m"], ["-N1", "-t", "10m"]])
        flux("submit", "--quiet", *args, "sleep", "inf")
    flux.advance(f"{rng.randint(0, 600)}s")
    flux("submit", "--quiet", "-N1", "-t", "1m", "sleep", "inf")
    return flux.out("jobs", "-a", "-o", "{id} {state} {sched.t_estimate} {annotations}")


@pytest.mark.parametrize("seed", range(4))
def test_forecast_is_the_whole_copy_simulation(flux_factory, monkeypatch, seed):
    fast = _workload(flux_factory("--test-size=4", "--test-cores=2", name="fast"), seed)
    monkeypatch.setattr(simplemod.SimpleScheduler, "estimates", _reference_estimates)
    reference = _workload(flux_factory("--test-size=4", "--test-cores=2", name="ref"), seed)
    assert fast == reference
    assert "SCHED" in fast


def test_forecast_reads_only_the_allocations_it_releases(flux_factory, monkeypatch):
    """16 one-core nodes, 16 running jobs ending a minute apart: a blocked
    whole-node job needs only the first of them to end."""
    flux = flux_factory("--test-size=16", "--test-cores=1")
    for i in range(16):
        flux("submit", "--quiet", "-n1", "-t", f"{i + 1}m", "sleep", "inf")
    decoded, freed = [], []
    row = storemod.StoredJobs._row
    free = poolmod.Pool.free

    def counted_row(self, jobid, *a):
        decoded.append(jobid)
        return row(self, jobid, *a)

    def counted_free(self, jobid, *a, **kw):
        freed.append(jobid)
        return free(self, jobid, *a, **kw)

    monkeypatch.setattr(storemod.StoredJobs, "_row", counted_row)
    monkeypatch.setattr(poolmod.Pool, "free", counted_free)
    jobid = flux.submit("-N1", "sleep", "inf")
    assert flux.out("jobs", "-no", "{sched.t_estimate!D}", jobid).strip() != ""
    assert len(decoded) == 1, decoded
    assert freed == []
