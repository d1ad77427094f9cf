#!/usr/bin/env python3
"""How one command's cost grows with the queue: 0, 1k, 10k, 50k pending and 10k running.

Instances (virtual clock), all built first:

* ``pending-N``: 4 nodes x 4 cores, held busy by one ``-N4`` job that runs
  for 30 days, then N one-core jobs submitted with ``--cc`` (they stay
  pending); N in 0, 1000, 10000, 50000 (quick: 0, 1000, 10000);
* ``running-10k``: 4096 nodes x 32 cores, 10,000 one-core jobs running;
* ``empty-4096``: 4096 nodes x 32 cores, nothing submitted (the running
  instance's own empty baseline, reported beside the ratio to pending-0).

Then ``--reps`` rounds; each round runs every command on every instance in
turn (the load of a shared machine falls on all of them alike). Before each
round a job is submitted (untimed) on each instance for the single-job
commands to aim at; cancel comes last. Per instance and command: median wall
time, the child's median CPU time, its peak RSS (wait4), and the ratios to
the empty instance of wall and of CPU time:
``submit``, ``jobs``, ``job eventlog ID``, ``update ID duration=+1m``,
``cancel ID``, ``sched reload``, ``resource list``.

``jobs`` lists at most 1000 jobs; how listing cost grows with what is
listed is measured apart, with ``jobs -c 10000`` on the largest pending
instance: (its time - empty ``jobs``) per 10,000 listed.

Targets (a command costs what it touches): every command within 1.5x of its
empty-instance CPU time at the largest pending size and at 10k running
(`jobs` excepted: it prints up to 1000 jobs), peak RSS under 100 MB, and
``jobs`` listing <= 0.3 s CPU per 10,000 listed. The wall ratios are
reported with them; on a loaded machine the CPU ratios are the ones to read.

--policy P: every instance runs sched-backfill with policy P (easy, hybrid,
conservative) instead of the default sched-simple (limited=8): the backfill
scheduler queues every pending job itself, so this measures its kept pass
(a command continues the last pass instead of replanning the queue).

--profile: each command once more under cProfile on the largest pending
instance and on the running one (top functions by tottime).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RATIO_TARGET = 1.5
RSS_TARGET_MB = 100
LIST_TARGET_PER_10K = 0.3
LIST_COUNT = 10000


POLICY = None  # --policy


def start(state, size, cores):
    bl.start_instance(state, size=size, cores=cores)
    if POLICY:
        bl.fl(["sched", "reload", f"--policy={POLICY}"], state)


def build_pending(state, n):
    start(state, 4, 4)
    bl.fl(["submit", "-N4", "--exclusive", "-S", "exec.test.run_duration=30d", "true"], state)
    if n:
        bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-n1", "sleep", "inf"], state)


def build_running(state, n):
    start(state, 4096, 32)
    if n:
        bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-n1", "-S", "exec.test.run_duration=30d", "true"], state)


COMMANDS = {
    "submit": lambda jid: ["submit", "-n1", "sleep", "inf"],
    "jobs": lambda jid: ["jobs"],
    "job eventlog": lambda jid: ["job", "eventlog", jid],
    "update duration": lambda jid: ["update", jid, "duration=+1m"],
    "cancel": lambda jid: ["cancel", jid],
    "sched reload": lambda jid: ["sched", "reload"],
    "resource list": lambda jid: ["resource", "list"],
}


def measure(states, reps):
    """Round-robin: each round runs every command on every instance."""
    exe = bl.flux_lite_exe()
    samples = {label: {name: ([], [], []) for name in COMMANDS} for label in states}
    for rnd in range(reps):
        bl.log(f"round {rnd + 1}/{reps}")
        for label, state in states.items():
            env = bl.base_env(state)
            _, proc = bl.fl(["submit", "-n1", "-t", "1h", "sleep", "inf"], state)
            jid = proc.stdout.strip()
            for name, argv_of in COMMANDS.items():
                wall, cpu, mb, rc, _, err = bl.run_rss([exe, *argv_of(jid)], env)
                if rc != 0:
                    raise bl.CommandFailed(f"{label} {name}: exit {rc}: {err.strip()[-500:]}")
                for lst, v in zip(samples[label][name], (wall, cpu, mb)):
                    lst.append(v)
    return {label: {name: {"median_s": round(bl.median(w), 4), "cpu_median_s": round(bl.median(c), 4),
                           "peak_rss_mb": round(max(m), 1)} for name, (w, c, m) in cmds.items()}
            for label, cmds in samples.items()}


def listing_rate(state, empty_state, reps):
    """`jobs -c 10000` against the empty instance's `jobs`, alternately."""
    exe = bl.flux_lite_exe()
    big, base = ([], [], []), ([], [], [])
    listed = 0
    runs = ((big, state, [exe, "jobs", "-c", str(LIST_COUNT)]), (base, empty_state, [exe, "jobs"]))
    for _ in range(reps):
        for bucket, st, argv in runs:
            wall, cpu, mb, rc, out, err = bl.run_rss(argv, bl.base_env(st))
            if rc != 0:
                raise bl.CommandFailed(f"jobs: exit {rc}: {err.strip()[-500:]}")
            if bucket is big:
                listed = len(out.splitlines()) - 1  # the header
            for lst, v in zip(bucket, (wall, cpu, mb)):
                lst.append(v)
    per = max(listed, 1) / 10000
    return {"listed": listed, "median_s": round(bl.median(big[0]), 4), "cpu_median_s": round(bl.median(big[1]), 4),
            "peak_rss_mb": round(max(big[2]), 1), "empty_jobs_cpu_median_s": round(bl.median(base[1]), 4),
            "wall_per_10k_s": round((bl.median(big[0]) - bl.median(base[0])) / per, 4),
            "cpu_per_10k_s": round((bl.median(big[1]) - bl.median(base[1])) / per, 4)}


def profiles(state, top):
    _, proc = bl.fl(["submit", "-n1", "-t", "1h", "sleep", "inf"], state)
    jid = proc.stdout.strip()
    return [bl.profile_command(argv_of(jid), state, top) for argv_of in COMMANDS.values()]


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=None, help="Rounds (default 5, quick 3).")
    p.add_argument("--sizes", default=None, help="Comma list of pending counts (default 0,1000,10000,50000).")
    p.add_argument("--running", type=int, default=10000, help="Running jobs of the last instance (0: skip it).")
    p.add_argument("--policy", choices=("easy", "hybrid", "conservative"), default=None,
                   help="Run sched-backfill with this policy (default: sched-simple).")
    args = bl.parse_args(p)
    global POLICY
    POLICY = args.policy
    t_start = time.perf_counter()
    reps = args.reps or (3 if args.quick else 5)
    sizes = [int(x) for x in (args.sizes or ("0,1000,10000" if args.quick else "0,1000,10000,50000")).split(",")]
    if 0 not in sizes:
        sizes.insert(0, 0)
    figures = {"reps": reps, "scheduler": f"sched-backfill policy={POLICY}" if POLICY else "sched-simple",
               "instances": {}}
    targets = []
    extra = None
    largest = f"pending-{max(sizes)}"
    running = f"running-{args.running}"
    with bl.temp_dir() as root:
        scenarios = [(f"pending-{n}", build_pending, n) for n in sizes]
        if args.running:
            scenarios += [(running, build_running, args.running), ("empty-4096", build_running, 0)]
        states = {}
        for label, build, n in scenarios:
            state = states[label] = os.path.join(root, label)
            bl.log(f"building {label}")
            t0 = time.perf_counter()
            build(state, n)
            figures["instances"][label] = {"setup_s": round(time.perf_counter() - t0, 2)}
        for label, cmds in measure(states, reps).items():
            figures["instances"][label]["commands"] = cmds
        bl.log("listing rate")
        figures["jobs_listing"] = listing_rate(states[largest], states["pending-0"], reps)
        if args.profile:
            bl.log("profiles")
            extra = {"profile": {label: profiles(states[label], args.top)
                                 for label in (largest, running) if label in states}}
    base = figures["instances"]["pending-0"]["commands"]
    for label, inst in figures["instances"].items():
        own = figures["instances"]["empty-4096"]["commands"] if label == running else None
        for name, fig in inst["commands"].items():
            fig["ratio_to_empty"] = round(fig["median_s"] / base[name]["median_s"], 2)
            fig["cpu_ratio_to_empty"] = round(fig["cpu_median_s"] / base[name]["cpu_median_s"], 2)
            if own is not None:
                fig["cpu_ratio_to_empty_4096"] = round(fig["cpu_median_s"] / own[name]["cpu_median_s"], 2)
        if label in (largest, running) and label != "pending-0":
            for name, fig in inst["commands"].items():
                if name != "jobs":
                    targets.append(bl.target(f"{label} {name} CPU ratio", fig["cpu_ratio_to_empty"], RATIO_TARGET,
                                             unit="x", note=f"wall ratio {fig['ratio_to_empty']}"))
                targets.append(bl.target(f"{label} {name} peak RSS", fig["peak_rss_mb"], RSS_TARGET_MB, unit="MB"))
    listing = figures["jobs_listing"]
    targets.append(bl.target(f"jobs -c {LIST_COUNT} at {largest}: CPU per 10k listed", listing["cpu_per_10k_s"],
                             LIST_TARGET_PER_10K,
                             note=f"{listing['listed']} listed; wall {listing['wall_per_10k_s']} s per 10k"))
    bl.emit(bl.report("scaling", args, figures, targets, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
