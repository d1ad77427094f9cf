#!/usr/bin/env python3
"""flux-core's Python scheduler modules replayed by flux-lite, job by job against its own policies.

The modules (src/modules/sched-simple.py, sched-fifo.py, sched-backfill.py)
come from a flux-core source tree given at run time (--src or FLUX_CORE_SRC;
nothing of it is copied here) and are loaded unchanged, as `flux-lite replay
--scheduler=FILE` loads them. Each replays the trace (default the shipped
tests/data/kth-sp2-first400.swf) on a virtual clock, as does flux-lite's
native policy it is compared with (fcfs for sched-simple and sched-fifo,
easy for sched-backfill); every job's start time and result are compared.

Prints one JSON document (per module: jobs, identical, differing, the
largest start difference, mean wait of each side, seconds of each replay);
--table prints the markdown table bench/README.md records.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from flux_lite import workload  # noqa: E402
from flux_lite.instance import Instance  # noqa: E402
from flux_lite.job_manager import index  # noqa: E402

PAIRS = (("sched-simple", "fcfs"), ("sched-fifo", "fcfs"), ("sched-backfill", "easy"))


def replay(jobs, n, c, tmp, policy=None, module=None, module_args=()):
    """(per-job (t_run, result) in id order, summary, seconds)."""
    state = tempfile.mkdtemp(dir=tmp)
    os.rmdir(state)
    t0 = time.perf_counter()
    summary = workload.replay_trace(state, jobs, n, c, policy=policy or "fcfs", module=module,
                                    module_args=list(module_args))
    seconds = time.perf_counter() - t0
    inst = Instance.open(state)
    try:
        rows = [(t_run, result) for _sub, t_run, _end, _nc, result in index.outcome_rows(inst.kvs.conn)]
    finally:
        inst.close()
    return rows, summary, seconds


def compare(mine, ref):
    same = sum(1 for a, b in zip(mine, ref) if a == b)
    deltas = [abs((a[0] or 0) - (b[0] or 0)) for a, b in zip(mine, ref)]
    return {"jobs": len(ref), "identical": same, "differing": len(ref) - same,
            "max_start_diff_s": max(deltas) if deltas else 0.0}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", default=os.environ.get("FLUX_CORE_SRC", "/work/flux-core-src"),
                   help="flux-core source tree (default FLUX_CORE_SRC, else /work/flux-core-src).")
    p.add_argument("--trace", default=os.path.join(os.path.dirname(HERE), "tests", "data", "kth-sp2-first400.swf"))
    p.add_argument("--limit", type=int, default=None, help="Replay only the first N jobs.")
    p.add_argument("--module-args", default="", help="Arguments for every module (e.g. queue-depth=unlimited).")
    p.add_argument("--table", action="store_true", help="Print the markdown table instead of JSON.")
    args = p.parse_args()
    tr = workload.read_trace(args.trace, limit=args.limit)
    n, c, jobs = workload.fit(tr, None, None)
    out = {"trace": os.path.basename(args.trace), "jobs": len(jobs), "module_args": args.module_args,
           "modules": {}}
    with tempfile.TemporaryDirectory(prefix="flux-lite-sched-modules-") as tmp:
        refs = {}
        for module, policy in PAIRS:
            path = os.path.join(args.src, "src", "modules", f"{module}.py")
            if not os.path.exists(path):
                out["modules"][module] = {"skipped": f"{path}: not found"}
                continue
            if policy not in refs:
                refs[policy] = replay(jobs, n, c, tmp, policy=policy)
            ref_rows, ref_sum, ref_s = refs[policy]
            rows, summ, secs = replay(jobs, n, c, tmp, module=path, module_args=args.module_args.split())
            fig = compare(rows, ref_rows)
            fig.update({"against": policy, "wait_mean_s": summ["wait_mean"], "native_wait_mean_s": ref_sum["wait_mean"],
                        "seconds": round(secs, 2), "native_seconds": round(ref_s, 2)})
            out["modules"][module] = fig
    if args.table:
        print("| module | against | jobs | identical | differing | max start diff | wait mean (module / native) |"
              " replay s (module / native) |")
        print("|---|---|---:|---:|---:|---:|---|---|")
        for module, fig in out["modules"].items():
            if "skipped" in fig:
                print(f"| {module} | | | | | | {fig['skipped']} | |")
                continue
            print(f"| {module}.py | {fig['against']} | {fig['jobs']} | {fig['identical']} | {fig['differing']} | "
                  f"{fig['max_start_diff_s']:.0f} s | {fig['wait_mean_s']:.0f} s / {fig['native_wait_mean_s']:.0f} s | "
                  f"{fig['seconds']} / {fig['native_seconds']} |")
    else:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
