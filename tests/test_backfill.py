"""sched-backfill: EASY, hybrid and conservative backfilling, estimates in the plan.

CLI tests rewrite flux-core's t2307-sched-backfill for flux-lite and add
conservative/hybrid policies and running-job duration updates; the planner
tests check the plan's invariants on random workloads directly, without a
broker.
"""

import json
import random

import pytest

from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset

HOUR = 3600.0


def t_estimate(flux, jobid):
    text = flux.out("jobs", "-no", "{annotations.sched.t_estimate}", jobid).strip()
    return float(text) if text else None


def sched_ann(flux, jobid):
    text = flux.out("jobs", "-a", "-no", "{annotations}", jobid).strip()
    return (json.loads(text) if text else {}).get("sched", {})


def check_clean(flux):
    assert flux("sched", "check").exit_code == 0


@pytest.fixture
def flux2(flux_factory):
    """2 ranks x 2 cores (t2307's rank[0-1]/core[0-1]), sched-backfill easy."""
    flux = flux_factory("--test-size=2", "--test-cores=2")
    flux("sched", "reload", "--policy=easy")
    return flux


def easy_setup(flux):
    """A 2-core 3600 s job running, a blocked 4-core head: (running, head)."""
    running = flux.submit("-n1", "-c2", "-t", "3600s", "sleep", "inf")
    assert flux.state(running) == "RUN"
    head = flux.submit("-n4", "-t", "1h", "sleep", "inf")
    assert flux.state(head) == "SCHED"
    return running, head


# -- loading ------------------------------------------------------------------------


def test_sched_reload_policy_switches_module(flux):
    flux("sched", "reload", "--policy=easy")
    out = flux.out("module", "list")
    assert "sched-backfill" in out and "sched-simple" not in out
    stats = json.loads(flux.out("module", "stats", "sched-backfill"))
    assert stats["policy"] == "easy"
    assert stats["reservation-depth"] == 1
    assert stats["queue-depth"] == "unlimited"
    flux("sched", "reload", "--policy=conservative")
    stats = json.loads(flux.out("module", "stats", "sched-backfill"))
    assert stats["policy"] == "conservative" and stats["reservation-depth"] == "unlimited"
    flux("sched", "reload", "--policy=hybrid", "--reservation-depth=3")
    stats = json.loads(flux.out("module", "stats", "sched-backfill"))
    assert stats["policy"] == "hybrid" and stats["reservation-depth"] == 3
    flux("sched", "reload", "--policy=fcfs")
    assert "sched-simple" in flux.out("module", "list")


def test_module_reload_sched_backfill(flux):
    flux("module", "reload", "sched-backfill")
    stats = json.loads(flux.out("module", "stats", "sched-backfill"))
    assert stats["policy"] == "easy"
    flux("module", "reload", "sched-backfill", "policy=hybrid")
    stats = json.loads(flux.out("module", "stats", "sched-backfill"))
    assert stats["policy"] == "hybrid" and stats["reservation-depth"] == 64
    assert "policy=easy reservation-depth=1" in "\n".join(flux.dmesg())
    flux.fails("module", "reload", "sched-backfill", "policy=bogus")


def test_policy_from_config(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=2", config="sched:\n  policy: conservative\n")
    stats = json.loads(flux.out("sched", "status"))
    assert stats["module"] == "sched-backfill" and stats["policy"] == "conservative"


# -- t2307, rewritten ---------------------------------------------------------------


def test_easy_backfill(flux2):
    """EASY: a job that fits before the reservation backfills; the head keeps its start."""
    flux = flux2
    running, head = easy_setup(flux)
    start = flux.now()
    assert t_estimate(flux, head) == start + HOUR
    assert sched_ann(flux, head)["selection_type"] == "reserved"
    # no duration: it would never end, so it would delay the head
    forever = flux.submit("-n1", "sleep", "inf")
    assert flux.state(forever) == "SCHED"
    assert sched_ann(flux, forever) == {"reason_pending": "insufficient resources"}
    # 60 s ends long before the head's reserved start
    short = flux.submit("-n1", "-t", "60s", "sleep", "inf")
    assert flux.state(short) == "RUN"
    ann = sched_ann(flux, short)
    assert ann["backfill"] == head
    assert ann["selection_type"] == "backfill"
    assert ann["resource_summary"] == "rank1/core0"
    assert "t_estimate" not in ann and "reason_pending" not in ann
    assert flux.state(head) == "SCHED"
    # 4000 s would still be running at the head's start
    long = flux.submit("-n1", "-t", "4000s", "sleep", "inf")
    assert flux.state(long) == "SCHED"
    assert flux.state(head) == "SCHED"
    assert "backfill: " + short in "\n".join(flux.dmesg())
    check_clean(flux)
    # everything ends when it should
    flux.advance("60s")
    assert flux.state(short) == "INACTIVE"
    flux.advance("3540s")
    assert flux.state(running) == "INACTIVE"
    assert flux.state(head) == "RUN"
    assert float(flux.out("jobs", "-no", "{t_run}", head)) == start + HOUR
    assert sched_ann(flux, head)["selection_type"] == "reserved"
    assert "t_estimate" not in sched_ann(flux, head)
    check_clean(flux)
    flux.advance("1h")
    assert flux.state(head) == "INACTIVE"
    assert flux.state(forever) == "RUN" and flux.state(long) == "RUN"
    check_clean(flux)


def test_backfill_node_based(flux_factory):
    """A short 1-node job backfills onto the free node."""
    flux = flux_factory("--test-size=2", "--test-cores=2")
    flux("sched", "reload", "--policy=easy")
    running = flux.submit("-N1", "-t", "1h", "sleep", "inf")
    assert flux.out("jobs", "-no", "{annotations.sched.resource_summary}", running).strip() == "rank0/core[0-1]"
    head = flux.submit("-N2", "-t", "1h", "sleep", "inf")
    assert flux.state(head) == "SCHED"
    forever = flux.submit("-N1", "sleep", "inf")
    assert flux.state(forever) == "SCHED"
    short = flux.submit("-N1", "-t", "10m", "sleep", "inf")
    assert flux.state(short) == "RUN"
    assert sched_ann(flux, short)["resource_summary"] == "rank1/core[0-1]"
    assert sched_ann(flux, short)["backfill"] == head
    assert flux.state(head) == "SCHED"
    check_clean(flux)


def test_stale_estimate_clears(flux2):
    """A higher-urgency job becomes head; the old head's estimate goes."""
    flux = flux2
    _running, head = easy_setup(flux)
    assert t_estimate(flux, head) is not None
    urgent = flux.submit("--urgency=20", "-n3", "-t", "1h", "sleep", "inf")
    assert flux.state(urgent) == "SCHED"
    assert t_estimate(flux, urgent) == flux.now() + HOUR
    assert t_estimate(flux, head) is None
    assert sched_ann(flux, head) == {"reason_pending": "insufficient resources"}
    # without a time limit the new head still gets a reservation
    flux("job", "urgency", urgent, "hold")
    assert t_estimate(flux, head) == flux.now() + HOUR
    nolimit = flux.submit("--urgency=25", "-n4", "sleep", "inf")
    assert t_estimate(flux, nolimit) == flux.now() + HOUR
    assert t_estimate(flux, head) is None
    check_clean(flux)


def test_hello_reload_keeps_allocations(flux2):
    """Four allocated jobs survive `module reload sched-backfill`."""
    flux = flux2
    jobs = [flux.submit("-n1", "sleep", "inf") for _ in range(4)]
    assert [flux.state(j) for j in jobs] == ["RUN"] * 4
    flux("module", "reload", "sched-backfill")
    assert flux.out("resource", "list", "-s", "free", "-no", "{nnodes}").strip() in ("", "0")
    check_clean(flux)
    waiting = flux.submit("-n1", "sleep", "inf")
    assert flux.state(waiting) == "SCHED"


def test_infeasible_denied(flux2):
    flux = flux2
    easy_setup(flux)
    big = flux.submit("-n100", "sleep", "inf")
    assert flux.state(big) == "INACTIVE"
    assert "unsatisfiable" in flux.out("job", "eventlog", big)


def test_zero_duration_backfills_on_unreserved_resources(flux_factory):
    """A job without duration may start now on resources no reservation needs."""
    flux = flux_factory("--test-size=3", "--test-cores=2")
    flux("sched", "reload", "--policy=easy")
    ones = [flux.submit("-n1", "-t", "1h", "sleep", "inf") for _ in range(3)]
    assert [sched_ann(flux, j)["resource_summary"] for j in ones] == ["rank0/core0", "rank1/core0", "rank2/core0"]
    head = flux.submit("-n1", "-c2", "-t", "1h", "sleep", "inf")
    assert t_estimate(flux, head) == flux.now() + HOUR
    a = flux.submit("-n1", "sleep", "inf")
    b = flux.submit("-n1", "sleep", "inf")
    c = flux.submit("-n1", "sleep", "inf")
    assert [flux.state(j) for j in (a, b, c)] == ["RUN", "RUN", "SCHED"]
    # the head is reserved on rank0 (worst fit at its start): rank0/core1 is kept for it
    assert sched_ann(flux, a)["resource_summary"] == "rank1/core1"
    assert sched_ann(flux, b)["resource_summary"] == "rank2/core1"
    check_clean(flux)
    flux.advance("1h")
    assert flux.state(head) == "RUN"
    assert sched_ann(flux, head)["resource_summary"] == "rank0/core[0-1]"


# -- conservative and hybrid ----------------------------------------------------------


def test_conservative_estimates_every_blocked_job(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=2", config="sched:\n  policy: conservative\n")
    now = flux.now()
    running = flux.submit("-n1", "-c2", "-t", "1h", "sleep", "inf")  # rank0 until +1h
    other = flux.submit("-n1", "-c2", "-t", "2h", "sleep", "inf")  # rank1 until +2h
    j1 = flux.submit("-n2", "-c2", "-t", "1h", "sleep", "inf")  # both nodes: +2h .. +3h
    j2 = flux.submit("-n1", "-c2", "-t", "30m", "sleep", "inf")  # the hole on rank0: +1h .. +1h30
    j3 = flux.submit("-n1", "-c2", "-t", "90m", "sleep", "inf")  # too long for the hole: after j1
    j4 = flux.submit("-n1", "-t", "1h", "sleep", "inf")  # +1h30 .. +2h is too short: after j1
    assert flux.state(running) == "RUN" and flux.state(other) == "RUN"
    est = {j: t_estimate(flux, j) for j in (j1, j2, j3, j4)}
    assert est[j1] == now + 2 * HOUR
    assert est[j2] == now + HOUR
    assert est[j3] == now + 3 * HOUR  # rank0
    assert est[j4] == now + 3 * HOUR  # rank1/core0
    for j in (j1, j2, j3, j4):
        assert sched_ann(flux, j)["selection_type"] == "reserved"
    # never ending, it cannot start before every reservation it would overlap
    late = flux.submit("-n1", "sleep", "inf")
    assert flux.state(late) == "SCHED"
    assert t_estimate(flux, late) == now + 3 * HOUR  # rank1/core1
    check_clean(flux)
    # every reserved job starts exactly at its estimate
    flux.advance("5h")
    for j in (j1, j2, j3, j4, late):
        assert float(flux.out("jobs", "-a", "-no", "{t_run}", j)) == est.get(j, now + 3 * HOUR)
    check_clean(flux)


def test_hybrid_reservation_depth(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=2")
    flux("sched", "reload", "--policy=hybrid", "--reservation-depth=2")
    flux.submit("-n4", "-t", "1h", "sleep", "inf")
    blocked = [flux.submit("-n4", "-t", "1h", "sleep", "inf") for _ in range(3)]
    now = flux.now()
    assert t_estimate(flux, blocked[0]) == now + HOUR
    assert t_estimate(flux, blocked[1]) == now + 2 * HOUR
    assert t_estimate(flux, blocked[2]) is None
    assert sched_ann(flux, blocked[2]) == {"reason_pending": "insufficient resources"}
    flux.advance("1h")
    assert flux.state(blocked[0]) == "RUN"
    assert t_estimate(flux, blocked[2]) == now + 3 * HOUR


def test_conservative_random_workload_starts_no_later_than_estimated(flux_factory):
    """Jobs run exactly their time limit, nothing else arrives: no reserved job
    may start later than first estimated, and the checker stays clean."""
    flux = flux_factory("--test-size=3", "--test-cores=4", config="sched:\n  policy: conservative\n")
    rng = random.Random(7)
    jobs = []
    for _ in range(14):
        ntasks = rng.choice([1, 1, 2, 3, 4, 6, 8])
        minutes = rng.choice([10, 20, 30, 45, 60, 90])
        jobs.append(flux.submit(f"-n{ntasks}", "-t", f"{minutes}m", "sleep", "inf"))
    first = {j: t_estimate(flux, j) for j in jobs if flux.state(j) == "SCHED"}
    assert first and all(v is not None for v in first.values())
    check_clean(flux)
    for _ in range(12):
        flux.advance("15m")
        check_clean(flux)
    for j, est in first.items():
        t_run = float(flux.out("jobs", "-a", "-no", "{t_run}", j))
        assert t_run <= est, (j, t_run, est)
    assert all(flux.state(j) == "INACTIVE" for j in jobs)


def test_submit_burst_matches_full_replan(flux_factory):
    """`submit --cc` places each arrival by resuming the pass; a reload (full
    replan) finds the same plan."""
    flux = flux_factory("--test-size=4", "--test-cores=4", config="sched:\n  policy: conservative\n")
    flux("submit", "--quiet", "--cc", "1-6", "-n3", "-t", "40m", "sleep", "inf")
    flux("submit", "--quiet", "--cc", "1-6", "-N2", "-t", "25m", "sleep", "inf")
    flux("submit", "--quiet", "--cc", "1-10", "-n1", "-t", "10m", "sleep", "inf")
    fmt = "{id.f58} {state} {annotations.sched.t_estimate} {annotations.sched.resource_summary}"
    before = flux.out("jobs", "-a", "-no", fmt)
    assert "SCHED" in before and "RUN" in before
    flux("sched", "reload")
    assert flux.out("jobs", "-a", "-no", fmt) == before
    check_clean(flux)


# -- running-job duration updates -------------------------------------------------------


def test_update_duration_moves_estimate(flux2):
    flux = flux2
    running, head = easy_setup(flux)
    est = t_estimate(flux, head)
    flux("update", running, "duration=+1h")
    assert t_estimate(flux, head) == est + HOUR
    check_clean(flux)
    flux("update", running, "duration=-90m")
    assert t_estimate(flux, head) == est - 30 * 60
    check_clean(flux)
    # the running job really ends at its new end, and the head starts then
    flux.advance("30m")
    assert flux.state(running) == "INACTIVE"
    assert flux.state(head) == "RUN"
    assert float(flux.out("jobs", "-no", "{t_run}", head)) == est - 30 * 60
    check_clean(flux)


def test_updated_end_survives_reload(flux2):
    """Hello re-registers the running job with its updated end; the plan follows."""
    flux = flux2
    running, head = easy_setup(flux)
    est = t_estimate(flux, head)
    flux("update", running, "duration=+1h")
    flux("module", "reload", "sched-backfill")
    assert t_estimate(flux, head) == est + HOUR
    flux("sched", "reload", "--policy=conservative")
    assert t_estimate(flux, head) == est + HOUR
    check_clean(flux)


def test_update_extension_blocks_backfill(flux2):
    """A job that fitted before the old end no longer backfills once the end moves."""
    flux = flux2
    running, head = easy_setup(flux)
    flux("update", running, "duration=+1h")
    job = flux.submit("-n1", "-t", "90m", "sleep", "inf")  # ends before the new reserved start
    assert flux.state(job) == "RUN"
    job2 = flux.submit("-n1", "-t", "150m", "sleep", "inf")  # would end after it
    assert flux.state(job2) == "SCHED"
    check_clean(flux)


def test_update_dry_run_previews_and_changes_nothing(flux2):
    flux = flux2
    running, head = easy_setup(flux)
    est = t_estimate(flux, head)
    before = flux.out("job", "eventlog", running)
    result = flux("update", "--dry-run", running, "duration=+1h")
    assert json.loads(result.stdout) == {"attributes.system.duration": 7200.0}
    assert result.stderr.splitlines() == [
        f"{head}: t_estimate 2026-01-01T01:00:00Z -> 2026-01-01T02:00:00Z (+3600s)"]
    result = flux("update", "--dry-run", running, "duration=30m")
    assert result.stderr.splitlines() == [
        f"{head}: t_estimate 2026-01-01T01:00:00Z -> 2026-01-01T00:30:00Z (-1800s)"]
    # a change that moves nothing reserved prints no preview
    short = flux.submit("-n1", "-t", "60s", "sleep", "inf")  # backfilled, not reserved
    assert flux("update", "--dry-run", short, "duration=+1m").stderr == ""
    assert flux.out("job", "eventlog", running) == before
    assert t_estimate(flux, head) == est
    assert flux.out("jobs", "-no", "{expiration}", running).strip() == str(est)
    flux.advance("1h")
    assert flux.state(running) == "INACTIVE" and flux.state(head) == "RUN"


def test_update_dry_run_reports_every_moved_reservation(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=2", config="sched:\n  policy: conservative\n")
    running = flux.submit("-n4", "-t", "1h", "sleep", "inf")
    a = flux.submit("-n4", "-t", "1h", "sleep", "inf")
    b = flux.submit("-n4", "-t", "1h", "sleep", "inf")
    lines = flux("update", "--dry-run", running, "duration=+10m").stderr.splitlines()
    assert lines == [
        f"{a}: t_estimate 2026-01-01T01:00:00Z -> 2026-01-01T01:10:00Z (+600s)",
        f"{b}: t_estimate 2026-01-01T02:00:00Z -> 2026-01-01T02:10:00Z (+600s)",
    ]
    assert t_estimate(flux, a) == flux.now() + HOUR


# -- the planner on random workloads (no broker) ------------------------------------------


class _Resources:
    def __init__(self, rset, expiration):
        self.rset = rset
        self.instance_R = {"execution": {"expiration": expiration}}

    def down_ranks(self):
        from flux_lite.formats.idset import IDset

        return IDset()


class _Broker:
    def __init__(self, rset, now, expiration=0.0):
        self.now = now
        self.resources = _Resources(rset, expiration)

    def log(self, *args):
        pass


def _make_sched(policy, nodes, cores, gpus=0, now=1000.0, expiration=0.0):
    from flux_lite.sched.backfill import BackfillScheduler

    rset = Rset.from_config(f"n[0-{nodes - 1}]", cores, gpus)
    return BackfillScheduler(_Broker(rset, now, expiration), {"policy": policy})


def _random_request(rng, cores, gpus, finite=False):
    from flux_lite.sched.request import ResourceRequest

    kind = rng.random()
    duration = rng.choice([60.0, 300.0, 900.0, 3600.0, 7200.0])
    if not finite and rng.random() < 0.15:
        duration = 0.0
    if kind < 0.6:
        return ResourceRequest(nslots=rng.randint(1, 6), slot_size=rng.choice([1, 1, 2]),
                               gpu_per_slot=rng.choice([0, 0, 1]) if gpus else 0, duration=duration)
    if kind < 0.85:
        n = rng.randint(1, 3)
        return ResourceRequest(nnodes=n, nslots=n, slot_size=rng.randint(1, cores), duration=duration)
    n = rng.randint(1, 3)
    return ResourceRequest(nnodes=n, nslots=n, slot_size=1, exclusive=True, duration=duration)


def _resources(rset):
    out = set()
    for rank, _host, cores, gpus in rset.nodes():
        out.update((rank, "core", c) for c in cores)
        out.update((rank, "gpu", g) for g in gpus)
    return out


def _check_plan(sched, plan, pool_before, queue, depth, finite):
    """Reservations never collide with each other, with running jobs (old or
    started in the pass) or with anything that outlives their start."""
    import math

    now = plan.now
    held = []  # (resources, release time)
    for _jobid, (rset, end) in pool_before.allocations().items():
        held.append((_resources(rset), math.inf if not end else max(end, now)))
    for _jobid, rset in plan.allocated.items():
        end = rset.expiration
        held.append((_resources(rset), math.inf if not end else end))
    res = [(iv.data, iv.begin, iv.end, plan.reserved_resources(iv.data)) for iv in plan.tree]
    queue_pos = {pj.jobid: k for k, pj in enumerate(queue)}
    assert len(res) <= depth
    for jobid, s, _e, rr in res:
        assert s > now and rr
        for r, release in held:
            if r & rr:
                assert release <= s, (f58(jobid), s, release)
    for k, (j1, s1, e1, r1) in enumerate(res):
        for j2, s2, e2, r2 in res[k + 1:]:
            if s1 < e2 and s2 < e1:
                assert not (r1 & r2), (f58(j1), f58(j2))
    if not finite:
        return
    # when everything ends, every feasible job fits somewhere in time
    waiting = []
    for pj in queue:
        try:
            pool_before.check_feasibility(pj.request)
        except Exception:
            assert pj.jobid not in plan.starts
            continue
        if pj.jobid not in plan.allocated:
            waiting.append(pj.jobid)
    if waiting and depth >= 1:
        # the first job that did not start is always reserved
        assert res and min(res, key=lambda r: queue_pos[r[0]])[0] == waiting[0]
    if depth == math.inf:
        assert all(jobid in plan.starts for jobid in waiting)
    else:
        assert len(res) == min(depth, len(waiting))


def _check_earliest(sched, plan, pool_before, queue, depth):
    """Brute force: with the plan's own choices for the jobs ahead, each job's
    start is the earliest time it fits (rebuilding a pool per candidate time)."""
    import math

    from flux_lite.sched.pool import InsufficientResources, Pool

    now = plan.now
    inst = sched.instance_expiration
    pos = pool_before.topology.index
    held = []  # ({index: (cm, gm)}, release)

    def masks_of(rset):
        return {pos[rank]: (cores.as_mask(), gpus.as_mask()) for rank, _h, cores, gpus in rset.nodes()}

    def release(end):
        return math.inf if not end else (end if end > now else math.nextafter(now, math.inf))

    for _jobid, (rset, end) in pool_before.allocations().items():
        held.append((masks_of(rset), release(end)))
    reservations = []  # (masks, s, e)
    nreserved = 0
    for pj in queue:
        try:
            pool_before.check_feasibility(pj.request)
        except Exception:
            continue
        d = pj.request.duration
        times = sorted({now} | {r for _m, r in held if now < r < math.inf}
                       | {e for _m, _s, e in reservations if e < math.inf})
        if nreserved >= depth:
            times = [now]
        found = None
        for t in times:
            if t != now and inst > now and t >= inst:
                break
            ew = t + d if d > 0 else (inst if inst > t else math.inf)
            pool = Pool(pool_before.rset)
            pool.set_down(pool_before.down_ranks())
            want = {}
            for m, r in held:
                if r > t:
                    for i, (cm, gm) in m.items():
                        c, g = want.get(i, (0, 0))
                        want[i] = (c | cm, g | gm)
            for m, s0, e0 in reservations:
                if s0 < ew and e0 > t:
                    for i, (cm, gm) in m.items():
                        c, g = want.get(i, (0, 0))
                        want[i] = (c | cm, g | gm)
            for i, (cm, gm) in want.items():
                pool.apply(((i, cm, gm),), True)
            try:
                pool.alloc(pj.jobid, pj.request, t)
            except InsufficientResources:
                continue
            found = t
            break
        assert plan.starts.get(pj.jobid) == found, (f58(pj.jobid), plan.starts.get(pj.jobid), found)
        if found is None:
            continue
        if found == now:
            rset = plan.allocated[pj.jobid]
            held.append((masks_of(rset), release(rset.expiration)))
        else:
            nreserved += 1
            m = {}
            for i, cm, gm in plan._parts[pj.jobid]:
                m[i] = (cm, gm)
            ew = found + d if d > 0 else (inst if inst > found else math.inf)
            reservations.append((m, found, ew))


@pytest.mark.parametrize("policy", ["easy", "hybrid", "conservative"])
@pytest.mark.parametrize("seed", range(40))
def test_plan_invariants_random(policy, seed):
    import math

    from flux_lite.sched.base import PendingJob
    from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources

    rng = random.Random(seed * 31 + len(policy))
    finite = seed % 2 == 0  # everything ends: completeness can be checked too
    gpus = rng.choice([0, 2])
    cores = rng.choice([2, 4])
    sched = _make_sched(policy, nodes=rng.randint(2, 6), cores=cores, gpus=gpus,
                        expiration=0.0 if finite else rng.choice([0.0, 1000.0 + 20000.0]))
    if policy == "hybrid":
        sched.reservation_depth = 3
    if not finite and rng.random() < 0.3:
        sched.pool.set_down([rng.choice(list(sched.pool.ranks))])
    now = sched.b.now
    # fill part of the pool with running jobs
    jobid = 1 << 30
    for _ in range(rng.randint(0, 12)):
        jobid += 1
        req = _random_request(rng, cores, gpus, finite)
        try:
            sched.pool.alloc(jobid, req, now - rng.choice([0, 100]), expiration_default=0.0)
        except (InsufficientResources, InfeasibleRequest):
            continue
        if rng.random() < 0.2:
            sched.pool.update_expiration(jobid, now - 5)  # past its end, still held
    queue = []
    for _ in range(rng.randint(1, 25)):
        jobid += 1
        queue.append(PendingJob(jobid, rng.choice([16, 16, 20]), 0, now, _random_request(rng, cores, gpus, finite)))
    queue.sort(key=PendingJob.sort_key)
    before = sched.pool.copy()
    pool = sched.pool.copy()
    plan = sched.replan(pool, queue, commit=False)
    depth = {"easy": 1, "hybrid": 3, "conservative": math.inf}[policy]
    _check_plan(sched, plan, before, queue, depth, finite)
    _check_earliest(sched, plan, before, queue, depth)
    # the allocations really were made in the pool, without double booking
    seen = {}
    for jid, (rset, _end) in pool.allocations().items():
        for item in _resources(rset):
            assert item not in seen, (f58(jid), f58(seen[item]))
            seen[item] = jid
    # replanning the same state is deterministic
    plan2 = sched.replan(sched.pool.copy(), queue, commit=False)
    assert plan2.starts == plan.starts
    # a pass resumed with later arrivals places them as a full replan would
    from flux_lite.sched.backfill import _Pass

    cut = rng.randint(0, len(queue))
    resumed = _Pass(sched, sched.pool.copy(), commit=False).place_all(queue[:cut]).place_all(queue[cut:])
    assert resumed.plan().starts == plan.starts
    # ... and, when resumable, the same as a new pass after the first one's
    # allocations (a later command), for arrivals at the same time (a burst)
    # or later (a trace replay submits one job per second)
    pool = sched.pool.copy()
    first = _Pass(sched, pool, commit=False).place_all(queue[:cut])
    ends = sorted(e for _j, e in pool.job_end_times() if e)
    later = now + rng.choice([0.0, 1.0, 30.0, 400.0, 5000.0])
    if ends and ends[0] > now and later > now:
        later = min(later, rng.choice([ends[0], math.nextafter(ends[0], -math.inf)]))
    left = [pj for pj in queue[:cut] if first.starts.get(pj.jobid) != now]
    full_pool = pool.copy()
    sched.b.now = later
    try:
        if not first.resumable(later):
            return  # (something ended by then, or a reservation would move): the scheduler replans
        first.rebase(later)
        first.place_all(queue[cut:])
        full = _Pass(sched, full_pool, commit=False).place_all(left + queue[cut:])
    finally:
        sched.b.now = now
    ids = {pj.jobid for pj in left + queue[cut:]}
    assert {j: t for j, t in first.starts.items() if j in ids} == full.starts
    assert {j: rset.dumps() for j, rset in first.allocated.items() if j in ids} == \
        {j: rset.dumps() for j, rset in full.allocated.items()}


def test_duration_zero_runs_until_instance_expiration():
    from flux_lite.sched.base import PendingJob
    from flux_lite.sched.request import ResourceRequest

    sched = _make_sched("conservative", nodes=1, cores=2, now=1000.0, expiration=5000.0)
    sched.pool.alloc(1, ResourceRequest(nslots=2, duration=500.0), 1000.0)
    queue = [PendingJob(2, 16, 0, 0, ResourceRequest(nslots=2)),
             PendingJob(3, 16, 0, 0, ResourceRequest(nslots=1, duration=100.0))]
    plan = sched.replan(sched.pool.copy(), queue, commit=False)
    assert plan.starts == {2: 1500.0}  # job 3 fits nowhere before the instance ends
    assert [(iv.begin, iv.end) for iv in plan.tree] == [(1500.0, 5000.0)]


def test_preview_changes_nothing():
    from flux_lite.sched.base import PendingJob
    from flux_lite.sched.request import ResourceRequest

    sched = _make_sched("easy", nodes=1, cores=2)
    sched.pool.alloc(1, ResourceRequest(nslots=2, duration=500.0), 1000.0)
    sched.queue[2] = PendingJob(2, 16, 0, 0, ResourceRequest(nslots=1, duration=10.0))
    dump = sched.pool.dump_allocs()
    lines = sched.preview_expiration(1, 2100.0)
    assert lines == [f"{f58(2)}: t_estimate 1970-01-01T00:25:00Z -> 1970-01-01T00:35:00Z (+600s)"]
    assert sched.pool.dump_allocs() == dump and list(sched.queue) == [2]
    assert sched.preview_expiration(1, 1500.0) == []
    assert sched.preview_expiration(99, 1.0) == []

