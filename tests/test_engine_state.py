"""The job manager's running state, kept as things change (not rescanned),
agrees with what a scan of its jobs would say, through a busy command."""

import random

from flux_lite import workload
from flux_lite.instance import Instance
from flux_lite.job_manager.job import ACTIVE, CLEANUP, DEPEND, INACTIVE, PRIORITY, RUN, SCHED


def _scan_agrees(broker):
    index = broker.jm.index
    jobs = list(index._cache.values())  # (a new instance: every active job is loaded)
    for mask in (DEPEND, PRIORITY, SCHED, RUN, CLEANUP, SCHED | RUN, ACTIVE):
        assert index.any_active(mask) == any(j.state & mask for j in jobs), mask
    alloc = broker.jm.alloc
    pending = [j for j in jobs if j.alloc_pending]
    count, low = alloc._lowest_pending()
    assert count == len(pending)
    assert low is (max(pending, key=lambda j: (-j.priority, j.id)) if pending else None)
    assert all(j.state != INACTIVE for j in jobs)


def test_counts_follow_submits_urgency_cancels_and_ends(tmp_path):
    """sched-simple in limited mode (queue-depth 8) on 2 nodes of 2 cores:
    jobs queue, wait with requests outstanding, change urgency (which
    preempts an outstanding request), are canceled and end, in one command."""
    rng = random.Random(7)
    inst = Instance.create(tmp_path / "s", size=2, cores=2, clock="virtual")
    try:
        with inst.session() as broker:
            jm = broker.jm
            ids = []
            for num in range(1, 41):
                tj = workload.TraceJob(num=num, submit=0.0, run=rng.choice([10, 60, 300]),
                                       procs=rng.choice([1, 2, 3]), req_time=600, user=-1, wait=-1)
                ids.append(jm.submit(workload.jobspec_for(tj)))
                broker.run()
                _scan_agrees(broker)
            preempted = 0
            for _step in range(60):
                live = [j for j in ids if jm.lookup(j) is not None]
                if not live:
                    break
                jobid = rng.choice(live)
                what = rng.random()
                if what < 0.4:
                    if jm.lookup(jobid).state & (RUN | CLEANUP):
                        continue
                    before = set(jm.alloc._pending_ids)
                    jm.set_urgency(jobid, rng.choice([0, 1, 16, 31]))
                    broker.run()
                    preempted += bool(before - set(jm.alloc._pending_ids) - {jobid})
                elif what < 0.6:
                    jm.request_raise(jobid, 0, "cancel")
                    broker.run()
                else:
                    broker.advance_to(broker.now + rng.choice([5, 30, 120]))
                _scan_agrees(broker)
            assert preempted  # an urgency raise took an outstanding request's place
    finally:
        inst.close()


def test_urgency_raised_in_the_command_that_queued_the_job(tmp_path):
    """A job already in the alloc queue whose urgency is raised moves up at
    once (not only in the next command): in limited mode it takes the place
    of the lowest-priority outstanding request."""
    inst = Instance.create(tmp_path / "s", size=1, cores=1, clock="virtual")
    try:
        with inst.session() as broker:
            jm = broker.jm
            ids = []
            for num in range(1, 13):  # one runs, 8 wait with a request outstanding, 3 queued
                tj = workload.TraceJob(num=num, submit=0.0, run=60, procs=1, req_time=600, user=-1, wait=-1)
                ids.append(jm.submit(workload.jobspec_for(tj)))
            broker.run()
            assert [jm.lookup(j).alloc_pending for j in ids[1:]] == [True] * 8 + [False] * 3
            jm.set_urgency(ids[-1], 31)
            broker.run()
            assert [jm.lookup(j).alloc_pending for j in ids[1:]] == [True] * 7 + [False] * 3 + [True]
    finally:
        inst.close()


def test_replay_leaves_no_cyclic_garbage_per_job(tmp_path, monkeypatch):
    """A replay runs with the garbage collector off: nothing it does per job
    may form a reference cycle (a recursive closure in a jobspec walk did,
    ten objects per job kept until the end)."""
    import contextlib
    import gc
    import types

    from flux_lite import instance

    monkeypatch.setattr(instance, "gc_paused", contextlib.nullcontext)

    def garbage(n, path):
        """The functions and closure cells in reference cycles after a
        replay of n jobs (what a recursive closure leaves behind; the
        instance's own cycles hold only data besides)."""
        rng = random.Random(5)
        jobs = [workload.TraceJob(num=num, submit=num * 7.0, run=rng.choice([10, 60, 300]),
                                  procs=rng.choice([1, 2, 3, 5]), req_time=600, user=-1, wait=-1)
                for num in range(1, n + 1)]
        gc.collect()
        gc.disable()
        try:
            workload.replay_trace(path, jobs, 4, 4, policy="fcfs")
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            return sum(1 for o in gc.garbage if isinstance(o, (types.FunctionType, types.CellType)))
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()

    small, big = garbage(20, tmp_path / "a"), garbage(80, tmp_path / "b")
    assert big - small < 10, (small, big)  # 60 more jobs, not one closure each


def test_replay_writes_its_kvs_as_it_goes(tmp_path, monkeypatch):
    """The replay's KVS writes (eventlogs, J, jobspec, R) go into its one
    transaction every FLUSH_EVERY steps, not all at its end: its memory
    does not grow with the trace. The stored state is the same."""
    from flux_lite.kvs import KVS

    sizes = []
    real = KVS.flush

    def flush(self):
        sizes.append(len(self._puts) + len(self._appends))
        real(self)

    monkeypatch.setattr(KVS, "flush", flush)
    monkeypatch.setattr(workload, "FLUSH_EVERY", 8)
    rng = random.Random(9)
    jobs = [workload.TraceJob(num=num, submit=num * 11.0, run=rng.choice([10, 60, 300]),
                              procs=rng.choice([1, 2, 3, 5]), req_time=600, user=-1, wait=-1)
            for num in range(1, 121)]
    got = workload.replay_trace(tmp_path / "s", jobs, 4, 4, policy="fcfs")
    assert got["jobs"] == 120 and got["results"] == {"COMPLETED": 120}
    written = [n for n in sizes if n]
    assert len(written) >= 10 and max(written) < 120 * 3, sizes  # (J, jobspec, R and an eventlog per job)
