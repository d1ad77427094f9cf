#!/usr/bin/env python3
"""Startup cost: `flux-lite job id 42` against `python -c "import click, sqlite3"`.

Both are run alternately in the same run (same machine load), N times each,
after a warm-up; the ratio of the medians is the figure. `job id` needs no
instance, so this is the price of the interpreter, click and flux-lite's
command dispatch. Target: ratio <= 1.5.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RATIO_TARGET = 1.5


def main():
    p = bl.parser(__doc__.splitlines()[0], runs=(31, 9))
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    runs = args.runs
    exe = bl.flux_lite_exe()
    fl_argv = [exe, "job", "id", "42"]
    py_argv = bl.python_baseline_argv()
    bare_argv = [sys.executable, "-c", "pass"]
    fl_s, py_s, bare_s = bl.Samples(), bl.Samples(), bl.Samples()
    with bl.temp_dir() as state:
        env = bl.base_env(state)  # no instance there: `job id` must not need one
        for _ in range(2):  # warm-up: page cache, .pyc files
            bl.run(fl_argv, env=env)
            bl.run(py_argv, env=env)
        for i in range(runs):
            order = [("fl", fl_argv), ("py", py_argv), ("bare", bare_argv)]
            if i % 2:
                order.reverse()
            for key, argv in order:
                wall, proc = bl.run(argv, env=env)
                if key == "fl":
                    if proc.stdout.strip() != "42":
                        raise SystemExit(f"flux-lite job id 42 printed {proc.stdout!r}")
                    fl_s.add(wall, proc)
                elif key == "py":
                    py_s.add(wall, proc)
                else:
                    bare_s.add(wall, proc)
        figures = {
            "runs": runs,
            "flux_lite_job_id_s": fl_s.summary(),
            "python_import_click_sqlite3_s": py_s.summary(),
            "python_bare_s": bare_s.summary(),
        }
        ratio = fl_s.median / py_s.median
        figures["ratio_median"] = round(ratio, 3)
        figures["ratio_cpu_median"] = round(bl.median(fl_s.cpus) / bl.median(py_s.cpus), 3)
        # what flux-lite adds on top of click+sqlite3, and what it imports
        figures["overhead_over_baseline_s"] = round(fl_s.median - py_s.median, 4)
        names, top, _wall = bl.imported_modules(["job", "id", "42"], state)
        figures["modules_imported"] = len(names)
        figures["top_imports_us"] = [{"module": n, "cumulative_us": us} for us, n in top[:8]]
        figures["heavy_imports"] = {pkg: bool(bl.has_package(names, pkg))
                                    for pkg in ("rich", "yaml", "intervaltree", "json", "sqlite3")}
        if bl.PYC_MODE == "prefix" and os.environ.get("PYTHONDONTWRITEBYTECODE"):
            # for information: what this environment pays without a bytecode cache
            asis = dict(os.environ, FLUX_LITE_STATE_DIR=state)
            figures["flux_lite_job_id_no_pyc_cache_s"] = bl.summary(
                [bl.run(fl_argv, env=asis)[0] for _ in range(max(3, runs // 3))])
        extra = {}
        if args.profile:
            extra["profile"] = bl.profile_command(["job", "id", "42"], state, args.top)
    targets = [bl.target("job id / import click,sqlite3 (median ratio)", ratio, RATIO_TARGET, unit="x")]
    bl.emit(bl.report("startup", args, figures, targets, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
