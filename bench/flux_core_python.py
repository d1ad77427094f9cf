"""flux-core's own Python tests (t/python/*.py) run under flux-lite's `flux python`.

The tests come from a flux-core source tree given at run time (--src or
FLUX_CORE_SRC; nothing of it is copied here). Each test file runs as flux-core's
harness runs it, inside an instance: `flux-lite start --test-size=N
--clock=virtual flux python FILE` (--clock=real for REAL_CLOCK's), with IN_SUBFLUX=1 (so the file's own
re-run under `flux start` is skipped: it is already inside one) and the
variables flux-core's sharness setup gives (srcdir, builddir,
FLUX_SOURCE_DIR). N is the size the file asks for. Its TAP output (pycotap)
is counted: subtests passed, failed, and the plan.

Prints one JSON document (per file: passed, failed, planned, exit code,
seconds); --table prints the markdown table bench/README.md records.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

# the files issue 26 names (the API scripts use), and issue 27's resource pools
# (t0043 also needs flux.scheduler's Scheduler._make_pool); --tests picks others
DEFAULT_TESTS = (
    "t0020-hostlist", "t0021-idset", "t0022-resource-set", "t0018-jobspec", "t0016-job-validate",
    "t0027-constraint-parser", "t0024-util", "t0034-queuelist", "t0013-job-list", "t0010-job",
    "t0014-job-kvslookup", "t0017-job-utils", "t0039-rv1pool", "t0043-scheduler-pool", "t0044-tree-pool",
)

# files that assume a real clock (flux-core's harness broker runs in wall time)
# run under one: t0013 compares t_inactive with time.time() and needs its jobs
# to end at distinct instants, which a virtual clock nobody advances never gives
REAL_CLOCK = {"t0013-job-list"}

_SIZE = re.compile(r"rerun_under_flux\(\s*(?:size\s*=\s*)?(\d+)")
_FLUX_SIZE = re.compile(r"def __flux_size\(\):\s*\n\s*return (\d+)")
_TAP = re.compile(r"^(not ok|ok)\b(.*)$")
_PLAN = re.compile(r"^1\.\.(\d+)")


def flux_lite_exe() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "flux-lite")
    return here if os.access(here, os.X_OK) else "flux-lite"


def size_of(text: str) -> int:
    for pattern in (_FLUX_SIZE, _SIZE):
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return 1


def count(output: str) -> dict:
    passed = failed = skipped = 0
    planned = None
    failures = []
    for line in output.splitlines():
        plan = _PLAN.match(line)
        if plan and planned is None:
            planned = int(plan.group(1))
            continue
        tap = _TAP.match(line)
        if not tap:
            continue
        if tap.group(1) == "ok":
            passed += 1
            if "# skip" in line.lower():
                skipped += 1
        else:
            failed += 1
            failures.append(tap.group(2).strip())
    return {"passed": passed, "failed": failed, "skipped": skipped, "planned": planned, "failures": failures}


def run_one(src: str, name: str, timeout: float, exe: str) -> dict:
    path = os.path.join(src, "t", "python", f"{name}.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    size = size_of(text)
    # a file that dies before its plan still counts its subtests (as failed)
    declared = len(re.findall(r"^\s+def test\w*\(", text, re.M))
    env = dict(os.environ, IN_SUBFLUX="1", FLUX_SOURCE_DIR=src, FLUX_BUILD_DIR=src,
               srcdir=os.path.join(src, "t"), builddir=os.path.join(src, "t"))
    for var in ("FLUX_LITE_STATE_DIR", "PYTHONPATH", "FLUX_URI"):
        env.pop(var, None)
    clock = "real" if name in REAL_CLOCK else "virtual"
    argv = [exe, "start", f"--test-size={size}", f"--clock={clock}", "flux", "python", path]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, cwd=os.path.dirname(path), capture_output=True, text=True,
                              timeout=timeout)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = "timeout", None
    result = count(out)
    # a failed setUpClass plans no subtest: the file's tests count as failed
    total = max(result["planned"] or 0, declared, result["passed"] + result["failed"])
    result.update(name=name, size=size, clock=clock, rc=rc, seconds=round(time.monotonic() - t0, 2), total=total,
                  stderr_tail=err.strip().splitlines()[-3:])
    return result


def table(results: list[dict]) -> str:
    lines = ["| test | passed | of | notes |", "|---|---:|---:|---|"]
    for r in results:
        note = "" if r["rc"] == 0 else ("timed out" if r["rc"] is None else f"exit {r['rc']}")
        lines.append(f"| {r['name']} | {r['passed']} | {r['total']} | {note} |")
    passed = sum(r["passed"] for r in results)
    total = sum(r["total"] for r in results)
    lines.append(f"| **all** | **{passed}** | **{total}** | {100 * passed / max(total, 1):.0f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", default=os.environ.get("FLUX_CORE_SRC"), help="flux-core source tree (FLUX_CORE_SRC)")
    p.add_argument("--tests", help="comma-separated test names (default: the issue's list)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per test file")
    p.add_argument("--table", action="store_true", help="print the markdown table instead of JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="name the failing subtests")
    args = p.parse_args(argv)
    if not args.src or not os.path.isdir(os.path.join(args.src, "t", "python")):
        p.error("a flux-core source tree is needed (--src or FLUX_CORE_SRC)")
    names = args.tests.split(",") if args.tests else list(DEFAULT_TESTS)
    exe = flux_lite_exe()
    results = []
    for name in names:
        r = run_one(args.src, name, args.timeout, exe)
        results.append(r)
        print(f"{name}: {r['passed']}/{r['total']} ({r['seconds']} s)", file=sys.stderr)
        if args.verbose:
            for failure in r["failures"]:
                print(f"    not ok {failure}", file=sys.stderr)
            for line in r["stderr_tail"]:
                print(f"    | {line}", file=sys.stderr)
    if args.table:
        print(table(results))
    else:
        print(json.dumps({"results": results,
                          "passed": sum(r["passed"] for r in results),
                          "total": sum(r["total"] for r in results)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
