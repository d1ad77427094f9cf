#!/usr/bin/env python3
"""One backfill scheduling pass over 10,000 pending jobs, in process.

Measured on the scheduler itself, not through a command: an instance holds
N pending one-core jobs (time limits 1-120 min, seeded) that no scheduler
has seen yet (they were submitted while the scheduler module was unloaded).
The scheduler is then loaded in process (`loader.module_load`: hello, ready,
N alloc requests) and its `run_pass()` is timed; the first pass is the one
that sees all N jobs. Every measurement runs in a transaction that is rolled
back, so the same instance serves every policy and repetition.

Two machines, 32 cores per node:

* busy: all nodes but 1/64 run one exclusive job each (time limits 10-120
  min): the pass starts what fits (2048 one-core jobs on 4096 nodes), then
  reserves and tries to backfill the rest - where the policies differ;
* idle: nothing runs; the pass allocates all N jobs.

Targets (4096 nodes, 10,000 jobs, both machines): `easy` <= 1 s;
`conservative` with reservation depth 1000 <= 3 s. flux-lite's conservative
policy has unlimited depth (its `reservation-depth` only applies to hybrid),
so depth 1000 is measured as `hybrid` with reservation-depth=1000; the
unlimited conservative pass is reported too. `fcfs` (sched-simple, unlimited
queue depth) is a baseline. Growth: N = 1k, 5k, 10k on 4096 nodes and 10k on
1024 nodes (busy machine). Skipped if flux_lite/sched/backfill.py is absent.

Queues case (same targets): the 4096 nodes carry property `debug` (first
half) or `batch` (second half), queues `debug` and `batch` require them, the
jobs alternate between the two queues, and every tenth one also asks for
`host:node[0-1023]` or `host:node[2048-3071]` - so every allocation is
filtered by an RFC 31 constraint.
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

CORES = 32
EASY_TARGET = 1.0
CONS_TARGET = 3.0
CONS_DEPTH = 1000

CONFIGS = {
    # label: (module, args)
    "fcfs": ("sched-simple", {"queue-depth": "unlimited"}),
    "easy": ("sched-backfill", {"policy": "easy"}),
    "conservative-depth1000": ("sched-backfill", {"policy": "conservative", "reservation-depth": CONS_DEPTH}),
    "hybrid-depth1000": ("sched-backfill", {"policy": "hybrid", "reservation-depth": CONS_DEPTH}),
    "conservative": ("sched-backfill", {"policy": "conservative"}),
}


class Rollback(Exception):
    pass


def backfill_available():
    import importlib.util

    try:
        return importlib.util.find_spec("flux_lite.sched.backfill") is not None
    except ImportError:
        return False


def queue_config(nodes):
    half = nodes // 2
    return {
        "resource": {"config": [
            {"hosts": f"node[0-{nodes - 1}]", "cores": CORES},
            {"hosts": f"node[0-{half - 1}]", "properties": ["debug"]},
            {"hosts": f"node[{half}-{nodes - 1}]", "properties": ["batch"]},
        ]},
        "queues": {"debug": {"requires": ["debug"]}, "batch": {"requires": ["batch"]}},
    }


def _queue_args(queues, i, nodes):
    """queue= and constraints= for job i of the queues case."""
    if not queues:
        return {}
    queue = ("debug", "batch")[i % 2]
    out = {"queue": queue}
    if i % 10 in (0, 1):
        base = 0 if queue == "debug" else nodes // 2
        out["constraints"] = {"hostlist": [f"node[{base}-{base + nodes // 4 - 1}]"]}
    return out


def setup(state, nodes, njobs, busy, seed, queues=False):
    """Instance with njobs pending one-core jobs the scheduler has not seen."""
    from flux_lite.formats import jobspec as jobspecmod
    from flux_lite.instance import Instance
    from flux_lite.sched import loader

    if queues:
        bl.start_instance(state, config=queue_config(nodes))
    else:
        bl.start_instance(state, size=nodes, cores=CORES)
    rng = random.Random(seed)
    inst = Instance.open(state)
    nfill = nodes - max(1, nodes // 64) if busy else 0
    try:
        with inst.session() as broker:
            if queues:
                broker.queues.start(None, True, True)  # named queues begin stopped
            for i in range(nfill):
                limit = rng.randint(10, 120) * 60.0
                js = jobspecmod.build(["fill"], nnodes=1, duration=limit,
                                      setattrs=[("exec.test.run_duration", f"{limit - 1:.0f}s")],
                                      queue=("debug", "batch")[i % 2] if queues else None)
                broker.jm.submit(js)
                broker.run()
            loader.module_remove(broker)
            specs = {}
            for i in range(njobs):
                limit = rng.randint(1, 120) * 60
                qargs = _queue_args(queues, i, nodes)
                key = (limit, qargs.get("queue"), "constraints" in qargs)
                js = specs.get(key)
                if js is None:
                    js = specs[key] = jobspecmod.build(["pending"], ntasks=1, duration=float(limit),
                                                       setattrs=[("exec.test.run_duration", f"{limit // 2}s")],
                                                       **qargs)
                broker.jm.submit(js)
                broker.run()
    finally:
        inst.close()
    return nfill


def measure(state, label, profile_top=0):
    """Load the scheduler in process, time its passes, roll everything back."""
    from flux_lite.instance import Instance
    from flux_lite.sched import loader

    name, args = CONFIGS[label]
    cls = loader.scheduler_class(name)
    passes = []
    original = cls.run_pass

    def timed_pass(self):
        queued = len(self.queue)
        allocated_before = len(self.pool.allocations())
        t0 = time.perf_counter()
        with bl.profiled(prof, profile_top, enabled=bool(profile_top) and not passes):
            original(self)
        passes.append({"s": time.perf_counter() - t0, "queued": queued,
                       "allocated": len(self.pool.allocations()) - allocated_before})

    out = {}
    prof = {}
    cls.run_pass = timed_pass
    inst = Instance.open(state)
    try:
        try:
            with inst.session() as broker:
                t0 = time.perf_counter()
                sched = loader.module_load(broker, name, dict(args))
                t1 = time.perf_counter()
                broker.settle()  # the per-command forecast (annotations)
                t2 = time.perf_counter()
                first = passes[0] if passes else None
                out["first_pass_s"] = round(first["s"], 4) if first else None
                out["first_pass_queued"] = first["queued"] if first else None
                out["first_pass_allocated"] = first["allocated"] if first else None
                out["passes_at_load"] = len(passes)
                out["load_total_s"] = round(t1 - t0, 4)
                out["settle_forecast_s"] = round(t2 - t1, 4)
                stats = sched.stats()
                out["effective_reservation_depth"] = stats.get("reservation-depth")
                out["reserved_jobs"] = stats.get("reserved_jobs")
                out["pending_after"] = stats.get("pending_jobs")
                # a second pass with nothing changed (the scheduler replans its queue)
                t3 = time.perf_counter()
                sched.run_pass()
                out["repeat_pass_s"] = round(time.perf_counter() - t3, 4)
                raise Rollback
        except Rollback:
            pass
    finally:
        cls.run_pass = original
        inst.close()
    if prof:
        out["profile"] = prof
    return out


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=None, help="Repetitions per measurement (default 3, quick 1).")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--policies", default=",".join(CONFIGS), help=f"Comma list of {', '.join(CONFIGS)}.")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    if not backfill_available():
        doc = bl.report("backfill_pass", args, {}, [], skipped={"all": "flux_lite/sched/backfill.py is absent"},
                        t_start=t_start)
        bl.emit(doc)
        return
    reps = args.reps or (1 if args.quick else 3)
    labels = [x for x in args.policies.split(",") if x]
    # (nodes, jobs, busy, queues)
    cases = [(4096, 10000, True, False), (4096, 10000, False, False), (4096, 10000, True, True)]
    if not args.quick:
        cases += [(4096, 1000, True, False), (4096, 5000, True, False), (1024, 10000, True, False)]
    figures = {"cores_per_node": CORES, "reps": reps, "cases": []}
    extra = {}
    results = {}
    with bl.temp_dir() as root:
        for nodes, njobs, busy, queues in cases:
            machine = ("busy" if busy else "idle") + ("-queues" if queues else "")
            bl.log(f"setup {nodes} nodes, {njobs} jobs, {machine}")
            state = os.path.join(root, f"n{nodes}-j{njobs}-{machine}")
            t0 = time.perf_counter()
            nfill = setup(state, nodes, njobs, busy, args.seed, queues=queues)
            case = {"nodes": nodes, "jobs": njobs, "machine": machine, "running_fill_jobs": nfill,
                    "setup_s": round(time.perf_counter() - t0, 2), "policies": {}}
            for label in labels:
                bl.log(f"  {label}")
                runs = [measure(state, label) for _ in range(reps)]
                best = dict(runs[0])
                for key in ("first_pass_s", "load_total_s", "settle_forecast_s", "repeat_pass_s"):
                    vals = [r[key] for r in runs if r.get(key) is not None]
                    best[key] = round(bl.median(vals), 4) if vals else None
                case["policies"][label] = best
                results[(nodes, njobs, machine, label)] = best["first_pass_s"]
                if args.profile and nodes == 4096 and njobs == 10000 and label != "conservative-depth1000":
                    extra.setdefault("profile_first_pass", {})[f"{label}/{machine}"] = \
                        measure(state, label, args.top).get("profile")
            figures["cases"].append(case)
    targets = []
    for machine in ("busy", "idle", "busy-queues"):
        targets.append(bl.target(f"easy: first pass, 10000 pending, 4096 nodes, {machine}",
                                 results.get((4096, 10000, machine, "easy")), EASY_TARGET))
        targets.append(bl.target(f"hybrid depth {CONS_DEPTH} (= conservative depth {CONS_DEPTH}): first pass, "
                                 f"10000 pending, 4096 nodes, {machine}",
                                 results.get((4096, 10000, machine, "hybrid-depth1000")), CONS_TARGET))
    growth = {}
    for label in labels:
        growth[label] = {
            "jobs_4096_nodes_busy": {str(n): results.get((4096, n, "busy", label)) for n in (1000, 5000, 10000)
                                     if (4096, n, "busy", label) in results},
            "nodes_10000_jobs_busy": {str(n): results.get((n, 10000, "busy", label)) for n in (1024, 4096)
                                      if (n, 10000, "busy", label) in results},
        }
    figures["growth_first_pass_s"] = growth
    bl.emit(bl.report("backfill_pass", args, figures, targets, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
