#!/usr/bin/env python3
"""Run every flux-lite benchmark and print one combined JSON document.

Each benchmark runs as its own process (one after the other, so they do
not compete for CPUs); options given here (--quick, --profile, --pyc) are
passed on. The combined document has, per benchmark, its JSON document (or
the error), and a summary: every target with its pass flag, and an overall
pass that is false if any target failed or a benchmark crashed.
"""

import argparse
import json
import os
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = ("startup", "submit_jobs", "vclock", "swf_replay", "replay_trace", "reload", "backfill_pass", "scaling",
              "jobctl", "dependencies", "history")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="Pass --quick to every benchmark.")
    p.add_argument("--profile", action="store_true", help="Pass --profile to every benchmark.")
    p.add_argument("--pyc", choices=("prefix", "asis"), default=None, help="Pass --pyc to every benchmark.")
    p.add_argument("--only", default=None, help=f"Comma list among {', '.join(BENCHMARKS)}.")
    p.add_argument("--skip", default="", help="Comma list of benchmarks not to run.")
    args = p.parse_args()
    names = [n for n in (args.only.split(",") if args.only else BENCHMARKS) if n and n not in args.skip.split(",")]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}")
    passthrough = []
    if args.quick:
        passthrough.append("--quick")
    if args.profile:
        passthrough.append("--profile")
    if args.pyc:
        passthrough.append(f"--pyc={args.pyc}")
    combined = {"quick": args.quick, "benchmarks": {}, "summary": []}
    overall = True
    t0 = time.perf_counter()
    for name in names:
        script = os.path.join(BENCH_DIR, f"{name}.py")
        print(f"[run_all] {name} ...", file=sys.stderr, flush=True)
        t1 = time.perf_counter()
        proc = subprocess.run([sys.executable, script, *passthrough], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        wall = round(time.perf_counter() - t1, 2)
        try:
            doc = json.loads(proc.stdout)
        except ValueError:
            doc = None
        if proc.returncode != 0 or doc is None:
            overall = False
            combined["benchmarks"][name] = {"error": f"exit {proc.returncode}", "stderr": proc.stderr[-3000:],
                                            "wall_s": wall}
            combined["summary"].append({"benchmark": name, "pass": False, "error": f"exit {proc.returncode}"})
            print(f"[run_all] {name}: FAILED (exit {proc.returncode})", file=sys.stderr, flush=True)
            continue
        combined["benchmarks"][name] = doc
        for tgt in doc.get("targets", []):
            combined["summary"].append({"benchmark": name, "target": tgt["name"], "value": tgt["value"],
                                        "op": tgt["op"], "limit": tgt["limit"], "unit": tgt["unit"],
                                        "pass": tgt["pass"]})
            if tgt["pass"] is False:
                overall = False
        if doc.get("skipped"):
            combined["summary"].append({"benchmark": name, "skipped": doc["skipped"]})
        print(f"[run_all] {name}: pass={doc.get('pass')} ({wall} s)", file=sys.stderr, flush=True)
    combined["pass"] = overall
    combined["wall_s"] = round(time.perf_counter() - t0, 2)
    json.dump(combined, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
