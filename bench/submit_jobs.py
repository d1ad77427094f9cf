#!/usr/bin/env python3
"""Submit and list: the commands an interactive user types most.

* median wall of one `flux-lite submit -N1 true` and of one `flux-lite jobs`,
  measured alternately with `python -c "import click, sqlite3"` (targets:
  <= 0.10 s each and <= 2x that baseline);
* `flux-lite submit --cc=1-10000 --quiet` rate (target >= 2000 jobs/s);
* `flux-lite submit --cc=1-100000 --quiet`, once: rate and peak RSS (wait4)
  (targets >= 5000 jobs/s and < 300 MB);
* `flux-lite jobs -a` with 10,000 inactive jobs (target <= 0.3 s; it lists
  the newest 1000 by default);
* `flux-lite jobs -a -c 10000` and `jobs -a -c 10000 --json` there (all of
  them): median wall and CPU time, peak RSS (wait4) (targets: CPU <= 0.3 s,
  peak RSS < 100 MB);
* that `submit` and `jobs -n` (stdout piped) import neither rich, yaml nor
  intervaltree (python -X importtime).

Instances: 4 nodes x 4 cores (as the Flux reference timings), virtual clock.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SINGLE_TARGET = 0.10
BASELINE_FACTOR = 2.0
RATE_TARGET = 2000.0
JOBS_A_TARGET = 0.3
BURST = 10000
BIG_BURST = 100000
BIG_RATE_TARGET = 5000.0
BIG_RSS_TARGET_MB = 300.0
LIST_ALL_ARGS = {"jobs -a -c 10000": ["jobs", "-a", "-c", "10000"],
                 "jobs -a -c 10000 --json": ["jobs", "-a", "-c", "10000", "--json"]}
LIST_ALL_CPU_TARGET = 0.3
LIST_ALL_RSS_TARGET_MB = 100.0
FORBIDDEN = ("rich", "yaml", "intervaltree")


def single_commands(runs):
    """submit -N1 sleep inf / jobs / baseline, interleaved, on one instance."""
    exe = bl.flux_lite_exe()
    sub, jobs, base = bl.Samples(), bl.Samples(), bl.Samples()
    with bl.temp_dir() as state:
        bl.start_instance(state, size=4, cores=4)
        env = bl.base_env(state)
        sub_argv = [exe, "submit", "-N1", "sleep", "inf"]
        jobs_argv = [exe, "jobs"]
        base_argv = bl.python_baseline_argv()
        for argv in (sub_argv, jobs_argv, base_argv):  # warm-up
            bl.run(argv, env=env)
        for i in range(runs):
            order = [(sub, sub_argv), (jobs, jobs_argv), (base, base_argv)]
            if i % 2:
                order.reverse()
            for bucket, argv in order:
                bucket.add(*bl.run(argv, env=env))
        _, proc = bl.fl(["jobs", "-a", "-n", "-o", "{id}"], state)
        njobs = len(proc.stdout.split())
    return sub, jobs, base, njobs


def burst(n, reps, profile=False, top=10):
    """submit --cc=1-N --quiet on a fresh instance, reps times."""
    walls = bl.Samples()
    prof = None
    for _ in range(reps):
        with bl.temp_dir() as state:
            bl.start_instance(state, size=4, cores=4)
            walls.add(*bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-S", "exec.test.run_duration=1s", "true"], state))
    if profile:
        with bl.temp_dir() as state:
            bl.start_instance(state, size=4, cores=4)
            prof = bl.profile_command(["submit", f"--cc=1-{n}", "--quiet", "-S", "exec.test.run_duration=1s",
                                       "true"], state, top)
    return walls, prof


def big_burst(n):
    """submit --cc=1-N --quiet once on a fresh instance: wall, CPU, peak RSS."""
    with bl.temp_dir() as state:
        bl.start_instance(state, size=4, cores=4)
        argv = [bl.flux_lite_exe(), "submit", f"--cc=1-{n}", "--quiet", "-S", "exec.test.run_duration=1s", "true"]
        wall, cpu, mb, rc, _, err = bl.run_rss(argv, bl.base_env(state))
        if rc != 0:
            raise bl.CommandFailed(f"submit --cc=1-{n}: exit {rc}: {err.strip()[-500:]}")
    return {"jobs": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "jobs_per_s": round(n / wall, 1),
            "jobs_per_cpu_s": round(n / cpu, 1), "peak_rss_mb": round(mb, 1)}


def inactive_listing(n, runs, profile=False, top=10):
    """jobs -a with n inactive jobs (and jobs -a -c 0 for comparison)."""
    out = {}
    with bl.temp_dir() as state:
        bl.start_instance(state, size=4, cores=4)
        t0 = time.perf_counter()
        bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-S", "exec.test.run_duration=1s", "true"], state)
        # 16 cores, 1 s each: n/16 simulated seconds; advance well past it
        bl.fl(["clock", "advance", f"{n // 16 + 60}s"], state)
        out["setup_s"] = round(time.perf_counter() - t0, 3)
        _, proc = bl.fl(["jobs", "-a", "-n", "-c", "0", "-o", "{state} {result}"], state)
        lines = proc.stdout.splitlines()
        out["inactive_completed"] = sum(1 for ln in lines if ln == "INACTIVE COMPLETED")
        out["listed_total"] = len(lines)
        bl.fl(["jobs", "-a"], state)  # warm-up
        walls, walls_all, lines_a = bl.Samples(), bl.Samples(), None
        for _ in range(runs):
            proc = walls.add(*bl.fl(["jobs", "-a"], state))
            lines_a = len(proc.stdout.splitlines())
        for _ in range(max(3, runs // 3)):
            walls_all.add(*bl.fl(["jobs", "-a", "-c", "0"], state))
        out["jobs_a_s"] = walls.summary()
        out["jobs_a_lines"] = lines_a
        out["jobs_a_c0_s"] = walls_all.summary()
        out["list_all"] = list_all(state, runs)
        if profile:
            out["profile_jobs_a"] = bl.profile_command(["jobs", "-a"], state, top)
    return out


def list_all(state, runs):
    """Each LIST_ALL_ARGS command, alternately: median wall and CPU, peak RSS."""
    exe = bl.flux_lite_exe()
    samples = {name: ([], [], []) for name in LIST_ALL_ARGS}
    for _ in range(max(3, runs // 2)):
        for name, args in LIST_ALL_ARGS.items():
            wall, cpu, mb, rc, _, err = bl.run_rss([exe, *args], bl.base_env(state))
            if rc != 0:
                raise bl.CommandFailed(f"{name}: exit {rc}: {err.strip()[-500:]}")
            for lst, v in zip(samples[name], (wall, cpu, mb)):
                lst.append(v)
    return {name: {"median_s": round(bl.median(w), 4), "cpu_median_s": round(bl.median(c), 4),
                   "peak_rss_mb": round(max(m), 1)} for name, (w, c, m) in samples.items()}


def import_check():
    out = {}
    with bl.temp_dir() as state:
        bl.start_instance(state, size=4, cores=4)
        for label, args in (("submit", ["submit", "-N1", "sleep", "inf"]), ("jobs -n", ["jobs", "-n"]),
                            ("submit --cc=1-600", ["submit", "--cc=1-600", "--quiet", "sleep", "inf"])):
            names, top, _ = bl.imported_modules(args, state)
            out[label] = {
                "modules_imported": len(names),
                "forbidden_imported": {pkg: bl.has_package(names, pkg)[:5] for pkg in FORBIDDEN},
                "clean": not any(bl.has_package(names, pkg) for pkg in FORBIDDEN),
                "top_imports_us": [{"module": n, "cumulative_us": us} for us, n in top[:5]],
            }
    return out


def main():
    p = bl.parser(__doc__.splitlines()[0], runs=(21, 7), runs_what="each single command")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    runs = args.runs
    reps = 1 if args.quick else 3

    bl.log("single commands")
    sub, jobs, base, njobs = single_commands(runs)
    m_sub, m_jobs, m_base = sub.median, jobs.median, base.median
    bl.log("burst")
    walls, burst_prof = burst(BURST, reps, args.profile, args.top)
    rate = BURST / walls.median
    bl.log(f"burst of {BIG_BURST}")
    big = big_burst(BIG_BURST)
    bl.log("inactive listing")
    listing = inactive_listing(BURST, runs, args.profile, args.top)
    bl.log("imports")
    imports = import_check()

    figures = {
        "instance": "4 nodes x 4 cores, virtual clock",
        "runs": runs,
        "submit_N1_s": sub.summary(),
        "jobs_s": jobs.summary(),
        "jobs_listed_active": njobs,
        "baseline_import_click_sqlite3_s": base.summary(),
        "submit_over_baseline": round(m_sub / m_base, 3),
        "jobs_over_baseline": round(m_jobs / m_base, 3),
        "burst_jobs": BURST,
        "burst_wall_s": walls.summary(),
        "burst_jobs_per_s": round(rate, 1),
        "burst_jobs_per_cpu_s": round(BURST / bl.median(walls.cpus), 1),
        "big_burst": big,
        "inactive_listing": listing,
        "imports": imports,
    }
    jobs_a = listing["jobs_a_s"]["median"]
    targets = [
        bl.target("submit -N1 true (median wall)", m_sub, SINGLE_TARGET),
        bl.target("jobs (median wall)", m_jobs, SINGLE_TARGET),
        bl.target("submit / import click,sqlite3", m_sub / m_base, BASELINE_FACTOR, unit="x"),
        bl.target("jobs / import click,sqlite3", m_jobs / m_base, BASELINE_FACTOR, unit="x"),
        bl.target(f"submit --cc=1-{BURST} --quiet rate", rate, RATE_TARGET, op=">=", unit="jobs/s"),
        bl.target(f"submit --cc=1-{BIG_BURST} --quiet rate", big["jobs_per_s"], BIG_RATE_TARGET, op=">=",
                  unit="jobs/s", note=f"{big['jobs_per_cpu_s']} jobs per CPU second"),
        bl.target(f"submit --cc=1-{BIG_BURST} --quiet peak RSS", big["peak_rss_mb"], BIG_RSS_TARGET_MB, op="<=",
                  unit="MB"),
        bl.target(f"jobs -a with {BURST} inactive jobs (median wall)", jobs_a, JOBS_A_TARGET),
        bl.target("submit imports none of rich, yaml, intervaltree", imports["submit"]["clean"], True, op="==",
                  unit="bool"),
        bl.target("jobs -n (piped) imports none of rich, yaml, intervaltree", imports["jobs -n"]["clean"], True,
                  op="==", unit="bool"),
    ]
    for name, fig in listing["list_all"].items():
        targets.append(bl.target(f"{name} with {BURST} inactive jobs (median CPU)", fig["cpu_median_s"],
                                 LIST_ALL_CPU_TARGET, note=f"median wall {fig['median_s']} s"))
        targets.append(bl.target(f"{name} with {BURST} inactive jobs peak RSS", fig["peak_rss_mb"],
                                 LIST_ALL_RSS_TARGET_MB, unit="MB"))
    if listing["inactive_completed"] != BURST:
        targets.append(bl.target("all burst jobs INACTIVE/COMPLETED", listing["inactive_completed"], BURST,
                                 op="==", unit="jobs"))
    extra = {"profile": {"burst": burst_prof, "jobs_a": listing.pop("profile_jobs_a")}} if args.profile else None
    bl.emit(bl.report("submit_jobs", args, figures, targets, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
