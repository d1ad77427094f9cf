#!/usr/bin/env python3
"""Job-control commands on a big history: job last, jobs --stats-only, job
stats, job purge (count), pgrep, against `flux-lite clock` (no job work).

N jobs (default 10000, quick 2000) run to completion on 64 nodes; then each
command runs alternately with the baseline. A command that reads an index
(job last, the stats) should cost about what the baseline costs, whatever N:
the figure is the difference of the medians. Target: each within 50 ms of the
baseline. Purging half of them with --force is timed once (it is work
proportional to what it removes: KVS directories and index rows).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

EXTRA_TARGET = 0.050
COMMANDS = {
    "job_last": ["job", "last"],
    "job_last_oldest": ["job", "last", "[-1:]"],
    "jobs_stats_only": ["jobs", "--stats-only"],
    "job_stats": ["job", "stats"],
    "job_purge_count": ["job", "purge", "--num-limit=100"],
    "pgrep_first": ["pgrep", "-a", "-c", "1", "true"],
}


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("-n", "--jobs", type=int, default=None, help="Jobs in the history (default 10000, quick 2000).")
    p.add_argument("-r", "--runs", type=int, default=None, help="Runs of each command (default 9, quick 5).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    njobs = args.jobs or (2000 if args.quick else 10000)
    runs = args.runs or (5 if args.quick else 9)
    figures, targets = {"jobs": njobs}, []
    with bl.temp_dir() as state:
        bl.start_instance(state, size=64)
        bl.fl(["submit", "--quiet", f"--cc=1-{njobs}", "-S", "exec.test.run_duration=1s", "true"], state)
        bl.fl(["clock", "advance", "1d"], state)
        base = bl.Samples()
        samples = {name: bl.Samples() for name in COMMANDS}
        for i in range(runs):
            order = [("clock", ["clock"])] + list(COMMANDS.items())
            if i % 2:
                order.reverse()
            for name, argv in order:
                wall, proc = bl.fl(argv, state, check=False)
                (base if name == "clock" else samples[name]).add(wall, proc)
        figures["baseline_clock_s"] = base.summary()
        for name, s in samples.items():
            extra = s.median - base.median
            figures[name] = {**s.summary(), "extra_over_baseline_s": round(extra, 6)}
            targets.append(bl.target(f"{name} extra over baseline", extra, EXTRA_TARGET))
        wall, _ = bl.fl(["job", "purge", "--force", f"--num-limit={njobs // 2}"], state)
        figures["purge_half_s"] = round(wall, 6)
        figures["purge_half_per_job_ms"] = round((wall - base.median) * 1000 / (njobs // 2), 4)
    bl.emit(bl.report("jobctl", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
