#!/usr/bin/env python3
"""Virtual clock throughput: 10,000 jobs run to completion by one `clock advance`.

64 nodes x 4 cores; 10,000 one-core jobs whose run durations are drawn
uniformly from 1-60 s (seeded), submitted in random order through the
library (setup, not timed); then one `flux-lite clock advance 1d` runs them
all. Only that command is timed (median over fresh copies of the set-up
instance). Target: <= 10 s. Every job must end INACTIVE/COMPLETED.
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

TARGET = 10.0
NODES, CORES = 64, 4


def setup(state, njobs, seed):
    """Instance and jobs; returns the durations drawn."""
    from flux_lite.formats import jobspec as jobspecmod
    from flux_lite.instance import Instance

    bl.start_instance(state, size=NODES, cores=CORES)
    rng = random.Random(seed)
    durations = [rng.randint(1, 60) for _ in range(njobs)]
    specs = {d: jobspecmod.build(["true"], ntasks=1, setattrs=[("exec.test.run_duration", f"{d}s")])
             for d in set(durations)}
    inst = Instance.open(state)
    try:
        with inst.session() as broker:
            for d in durations:
                broker.jm.submit(specs[d])
                broker.run()
    finally:
        inst.close()
    return durations


def verify(state, njobs):
    _, proc = bl.fl(["jobs", "-a", "-A", "-n", "-c", "0", "-o", "{state} {result}"], state)
    lines = proc.stdout.splitlines()
    counts = {}
    for ln in lines:
        counts[ln] = counts.get(ln, 0) + 1
    return counts


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10000, help="Number of jobs (default 10000).")
    p.add_argument("--seed", type=int, default=1, help="Random seed (default 1).")
    p.add_argument("--reps", type=int, default=None, help="Timed repetitions (default 3, quick 1).")
    p.add_argument("--advance", default="1d", help="The clock advance (FSD, default 1d).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    reps = args.reps or (1 if args.quick else 3)
    njobs = args.jobs
    figures = {"instance": f"{NODES} nodes x {CORES} cores, virtual clock", "jobs": njobs, "seed": args.seed,
               "advance": args.advance}
    walls = bl.Samples()
    extra = {}
    with bl.temp_dir() as root:
        golden = os.path.join(root, "golden")
        t0 = time.perf_counter()
        durations = setup(golden, njobs, args.seed)
        figures["setup_s"] = round(time.perf_counter() - t0, 3)
        figures["sum_run_core_s"] = sum(durations)
        figures["ideal_makespan_s"] = round(sum(durations) / (NODES * CORES), 1)
        for i in range(reps):
            work = os.path.join(root, f"run{i}")
            bl.copy_state(golden, work)
            walls.add(*bl.fl(["clock", "advance", args.advance], work))
            if i == 0:
                counts = verify(work, njobs)
                figures["final_states"] = counts
                _, nxt = bl.fl(["clock", "next"], work)
                figures["timers_left"] = nxt.stdout.strip() or None
                # the simulated end: the last job's t_inactive
                _, last = bl.fl(["jobs", "-a", "-A", "-n", "-c", "1", "-o", "{t_inactive}"], work)
                _, first = bl.fl(["kvs", "get", "instance.meta"], work)
                try:
                    import json

                    start = json.loads(first.stdout)["start"]
                    figures["simulated_makespan_s"] = round(float(last.stdout.strip()) - start, 3)
                except (ValueError, KeyError):
                    figures["simulated_makespan_s"] = None
            shutil_rm(work)
        if args.profile:
            work = os.path.join(root, "prof")
            bl.copy_state(golden, work)
            extra["profile"] = bl.profile_command(["clock", "advance", args.advance], work, args.top)
    med = walls.median
    figures["clock_advance_s"] = walls.summary()
    figures["jobs_per_s"] = round(njobs / med, 1)
    completed = figures["final_states"].get("INACTIVE COMPLETED", 0)
    targets = [
        bl.target(f"clock advance running {njobs} jobs (median wall)", med, TARGET,
                  note=None if njobs == 10000 else "not the official size (10000 jobs)"),
        bl.target("jobs INACTIVE/COMPLETED", completed, njobs, op="==", unit="jobs"),
    ]
    bl.emit(bl.report("vclock", args, figures, targets, extra=extra, t_start=t_start))


def shutil_rm(path):
    import shutil

    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
