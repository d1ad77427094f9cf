#!/usr/bin/env python3
"""`flux-lite replay` of a whole trace, per policy: wall time against the 10 s target.

The full KTH SP2 trace (28,489 jobs; quick: its first 5,000) under fcfs and
easy, each as one `flux-lite replay --json` command; the summary it prints
(makespan, utilisation, waits) is reported with the time.

`--synthetic N` replays instead a trace of N jobs drawn from the trace's
distributions (seeded: each job's size, run time, request and user from a
job of the trace, each gap between submissions from a gap of the trace),
written to a temporary SWF file; its targets are 120 s and 250 MB peak RSS
per policy (the child's, from wait4).
"""

import gzip
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SWF_DIR = "/work/shared/data/swf"
TARGET_S = 10.0
SYNTHETIC_TARGET_S = 120.0
SYNTHETIC_RSS_MB = 250


def synthetic_trace(src, njobs, path, seed=1):
    """An SWF trace of njobs jobs drawn from src's distributions (see above)."""
    header, jobs = [], []
    with gzip.open(src, "rt") if src.endswith(".gz") else open(src) as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            if fields[0].startswith(";"):
                header.append(line)
            elif len(fields) == 18 and float(fields[3]) >= 0 and (int(fields[7]) > 0 or int(fields[4]) > 0):
                jobs.append(fields)
    submits = sorted(float(j[1]) for j in jobs)
    gaps = [b - a for a, b in zip(submits, submits[1:])]
    rng = random.Random(seed)
    t = 0.0
    with open(path, "w") as out:
        out.writelines(header)
        for num in range(1, njobs + 1):
            j = list(rng.choice(jobs))
            j[0], j[1], j[2] = str(num), str(int(t)), "-1"
            out.write(" ".join(j) + "\n")
            t += rng.choice(gaps)


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--trace", default="KTH-SP2-1996-2.swf.gz", help=f"SWF file (name in {SWF_DIR} or a path).")
    p.add_argument("--policies", default="fcfs,easy", help="Comma list (default fcfs,easy).")
    p.add_argument("--limit", type=int, default=None, help="Jobs to replay (default all; quick 5000).")
    p.add_argument("--synthetic", type=int, default=None, metavar="N",
                   help="Replay N jobs drawn from the trace's distributions instead (e.g. 250000).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    path = args.trace if os.path.sep in args.trace else os.path.join(SWF_DIR, args.trace)
    limit = args.limit or (5000 if args.quick and not args.synthetic else None)
    figures = {"trace": os.path.basename(path), "limit": limit, "policies": {}}
    targets = []
    with bl.temp_dir() as scratch:
        if args.synthetic:
            figures["synthetic_jobs"] = args.synthetic
            path = os.path.join(scratch, f"synthetic-{args.synthetic}.swf")
            synthetic_trace(os.path.join(SWF_DIR, args.trace) if os.path.sep not in args.trace else args.trace,
                            args.synthetic, path)
        for policy in [x for x in args.policies.split(",") if x]:
            argv = ["replay", "--json", f"--policy={policy}", path] + ([f"--limit={limit}"] if limit else [])
            bl.log(f"replay {policy}")
            with bl.temp_dir() as state:
                wall, cpu, mb, rc, out, err = bl.run_rss([bl.flux_lite_exe(), *argv], bl.base_env(state))
            if rc != 0:
                raise bl.CommandFailed(f"replay {policy}: exit {rc}: {err.strip()[-500:]}")
            summary = json.loads(out)
            figures["policies"][policy] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                                           "peak_rss_mb": round(mb, 1),
                                           "jobs_per_s": round(summary["jobs"] / wall, 1), "summary": summary}
            if args.synthetic:
                targets.append(bl.target(f"replay {args.synthetic} synthetic jobs {policy}", wall,
                                         SYNTHETIC_TARGET_S))
                targets.append(bl.target(f"replay {args.synthetic} synthetic jobs {policy} peak RSS", mb,
                                         SYNTHETIC_RSS_MB, unit="MB"))
            elif limit is None:
                targets.append(bl.target(f"replay {figures['trace']} {policy}", wall, TARGET_S))
    bl.emit(bl.report("replay_trace", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
