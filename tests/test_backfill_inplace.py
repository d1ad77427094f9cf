"""sched-backfill keeps its planner from pass to pass and brings it up to
date in place (planner.KeptPlanner, Planner.sync), with reservations whose
resources are chosen only when needed (Planner.materialize) and jobs passed
over by core counts. Each pass must plan exactly what a planner built
afresh for it without those shortcuts plans: same starts, same allocated
resources, same reservations with the same resources.
Checked here on random sequences of passes (arrivals, ends on time and
early, time steps), for every policy.
"""

import math
import random

import pytest
from test_backfill import _make_sched, _random_request


def _plan_facts(plan, materialize):
    facts = {
        "starts": dict(plan.starts),
        "allocated": {j: rset.dumps() for j, rset in plan.allocated.items()},
        "reservations": list(plan.reservations),
    }
    if materialize:
        facts["reserved"] = {j: sorted(plan.reserved_resources(j)) for j, _s, _e in plan.reservations}
    return facts


def _one_core_slots(rng, nodes):
    """A trace replay's jobs (KTH SP2: one-core nodes, n one-core slots)."""
    from flux_lite.sched.request import ResourceRequest

    return ResourceRequest(nslots=rng.randint(1, nodes), duration=rng.choice([60.0, 300.0, 900.0, 3600.0]))


@pytest.mark.parametrize("policy", ["easy", "hybrid", "conservative"])
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("kind", ["mixed", "trace"])
def test_kept_planner_plans_what_a_new_one_plans(policy, seed, kind):
    from flux_lite.sched.backfill import _Pass
    from flux_lite.sched.planner import KeptPlanner
    from flux_lite.sched.base import PendingJob

    rng = random.Random(seed * 7919 + len(policy) + len(kind))
    gpus = rng.choice([0, 0, 2]) if kind == "mixed" else 0
    cores = rng.choice([1, 2, 4]) if kind == "mixed" else 1
    nodes = rng.randint(2, 8) if kind == "mixed" else rng.randint(4, 24)
    sched = _make_sched(policy, nodes=nodes, cores=cores, gpus=gpus,
                        expiration=rng.choice([0.0, 0.0, 1000.0 + 30000.0]))
    if policy == "hybrid":
        sched.reservation_depth = 2
    if rng.random() < 0.2:
        sched.pool.set_down([rng.choice(list(sched.pool.ranks))])
    pool = sched.pool
    kept = KeptPlanner(pool)
    queue = {}
    jobid = 1 << 30
    kinds = set()
    for step in range(40 if kind == "mixed" else 80):
        now = sched.b.now
        # jobs end: on time, early, or (now and then) some time after their end
        for jid, end in pool.job_end_times():
            r = rng.random()
            if (end and end <= now and r < 0.9) or r < 0.15:
                pool.free(jid)
                kept.touched.add(jid)
        for _ in range(rng.choice([0, 0, 1, 1, 2, 5])):
            jobid += 1
            request = _random_request(rng, cores, gpus, finite=rng.random() < 0.7) if kind == "mixed" \
                else _one_core_slots(rng, nodes)
            queue[jobid] = PendingJob(jobid, rng.choice([16, 16, 16, 20]), 0, now, request)
        ordered = sorted(queue.values(), key=PendingJob.sort_key)
        fresh = _Pass(sched, pool.copy(), commit=False, shortcuts=False).place_all(ordered)
        live = _Pass(sched, pool, commit=False, kept=kept).place_all(ordered)
        materialize = rng.random() < 0.5
        assert _plan_facts(live.plan(), materialize) == _plan_facts(fresh.plan(), materialize), step
        if live.planner is not None:
            kinds.add("lazy" if live.planner.lazy is not None else "chosen")
        for jid in live.allocated:
            del queue[jid]
        # time moves on: to the next end, just before or after it, or by a step
        ends = sorted(e for _j, e in pool.job_end_times() if e and e > now)
        choices = [now, now + rng.choice([1.0, 60.0, 500.0])]
        if ends:
            choices += [ends[0], math.nextafter(ends[0], math.inf), ends[-1] + 1.0]
        sched.b.now = rng.choice(choices)
    assert kinds  # (the planner was used)
