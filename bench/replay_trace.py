#!/usr/bin/env python3
"""`flux-lite replay` of a whole trace, per policy: wall time against the 10 s target.

The full KTH SP2 trace (28,489 jobs; quick: its first 5,000) under fcfs and
easy, each as one `flux-lite replay --json` command; the summary it prints
(makespan, utilisation, waits) is reported with the time.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SWF_DIR = "/work/shared/data/swf"
TARGET_S = 10.0


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--trace", default="KTH-SP2-1996-2.swf.gz", help=f"SWF file (name in {SWF_DIR} or a path).")
    p.add_argument("--policies", default="fcfs,easy", help="Comma list (default fcfs,easy).")
    p.add_argument("--limit", type=int, default=None, help="Jobs to replay (default all; quick 5000).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    path = args.trace if os.path.sep in args.trace else os.path.join(SWF_DIR, args.trace)
    limit = args.limit or (5000 if args.quick else None)
    figures = {"trace": os.path.basename(path), "limit": limit, "policies": {}}
    targets = []
    for policy in [x for x in args.policies.split(",") if x]:
        argv = ["replay", "--json", f"--policy={policy}", path] + ([f"--limit={limit}"] if limit else [])
        bl.log(f"replay {policy}")
        with bl.temp_dir() as state:
            wall, proc = bl.fl(argv, state)
        summary = json.loads(proc.stdout)
        figures["policies"][policy] = {"wall_s": round(wall, 3), "cpu_s": round(proc.cpu_s, 3),
                                       "jobs_per_s": round(summary["jobs"] / wall, 1), "summary": summary}
        if limit is None:
            targets.append(bl.target(f"replay {figures['trace']} {policy}", wall, TARGET_S))
    bl.emit(bl.report("replay_trace", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
