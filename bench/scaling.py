#!/usr/bin/env python3
"""How one command's cost grows with the queue: 0, 1k, 10k, 50k pending and 10k running.

Instances (virtual clock), built once each:

* ``pending-N``: 4 nodes x 4 cores, held busy by one ``-N4`` job that runs
  for 30 days, then N one-core jobs submitted with ``--cc`` (they stay
  pending); N in 0, 1000, 10000, 50000 (quick: 0, 1000, 10000);
* ``running-10k``: 4096 nodes x 32 cores, 10,000 one-core jobs running.

Per instance, each command below runs ``--reps`` times (on the same
instance; before each round a job is submitted, untimed, for the
single-job commands to aim at; cancel comes last) and reports the median wall time, the child's CPU time, its peak RSS
(from wait4), and the ratio to the empty instance:
``submit``, ``jobs``, ``job eventlog ID``, ``update ID duration=+1m``,
``cancel ID``, ``sched reload``, ``resource list``.

Targets (a command costs what it touches): every command within
1.5x of its empty-instance time at 50k pending and at 10k running, and peak
RSS under 100 MB. They are reported, not asserted: today the job manager
loads every active job for most commands.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RATIO_TARGET = 1.5
RSS_TARGET_MB = 100


def run_rss(argv, env):
    """(wall, cpu, peak RSS MB, returncode, stdout) of one child, from wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, proc.returncode, out, err


def build_pending(state, n):
    bl.start_instance(state, size=4, cores=4)
    bl.fl(["submit", "-N4", "--exclusive", "-S", "exec.test.run_duration=30d", "true"], state)
    if n:
        bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-n1", "true"], state)


def build_running(state, n):
    bl.start_instance(state, size=4096, cores=32)
    bl.fl(["submit", f"--cc=1-{n}", "--quiet", "-n1", "-S", "exec.test.run_duration=30d", "true"], state)


COMMANDS = {
    "submit": lambda jid: ["submit", "-n1", "true"],
    "jobs": lambda jid: ["jobs"],
    "job eventlog": lambda jid: ["job", "eventlog", jid],
    "update duration": lambda jid: ["update", jid, "duration=+1m"],
    "cancel": lambda jid: ["cancel", jid],
    "sched reload": lambda jid: ["sched", "reload"],
    "resource list": lambda jid: ["resource", "list"],
}


def measure(state, reps):
    """Each rep aims the single-job commands at a job submitted (untimed) for it."""
    env = bl.base_env(state)
    exe = bl.flux_lite_exe()
    samples = {name: ([], [], []) for name in COMMANDS}
    for _ in range(reps):
        _, proc = bl.fl(["submit", "-n1", "-t", "1h", "true"], state)
        jid = proc.stdout.strip()
        for name, argv_of in COMMANDS.items():
            wall, cpu, mb, rc, _, err = run_rss([exe, *argv_of(jid)], env)
            if rc != 0:
                raise bl.CommandFailed(f"{name}: exit {rc}: {err.strip()[-500:]}")
            for lst, v in zip(samples[name], (wall, cpu, mb)):
                lst.append(v)
    return {name: {"median_s": round(bl.median(w), 4), "cpu_median_s": round(bl.median(c), 4),
                   "peak_rss_mb": round(max(m), 1)} for name, (w, c, m) in samples.items()}


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=None, help="Runs per command (default 5, quick 3).")
    p.add_argument("--sizes", default=None, help="Comma list of pending counts (default 0,1000,10000,50000).")
    p.add_argument("--running", type=int, default=10000, help="Running jobs of the last instance (0: skip it).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    reps = args.reps or (3 if args.quick else 5)
    sizes = [int(x) for x in (args.sizes or ("0,1000,10000" if args.quick else "0,1000,10000,50000")).split(",")]
    if 0 not in sizes:
        sizes.insert(0, 0)
    figures = {"reps": reps, "instances": {}}
    targets = []
    with bl.temp_dir() as root:
        scenarios = [(f"pending-{n}", build_pending, n) for n in sizes]
        if args.running:
            scenarios.append((f"running-{args.running}", build_running, args.running))
        for label, build, n in scenarios:
            state = os.path.join(root, label)
            bl.log(f"building {label}")
            t0 = time.perf_counter()
            build(state, n)
            setup_s = time.perf_counter() - t0
            bl.log(f"measuring {label}")
            figures["instances"][label] = {"setup_s": round(setup_s, 2), "commands": measure(state, reps)}
    base = figures["instances"]["pending-0"]["commands"]
    for label, inst in figures["instances"].items():
        for name, fig in inst["commands"].items():
            fig["ratio_to_empty"] = round(fig["median_s"] / base[name]["median_s"], 2)
        if label == "pending-0":
            continue
        if label == f"pending-{max(sizes)}" or label.startswith("running-"):
            for name, fig in inst["commands"].items():
                limit = RATIO_TARGET if name != "jobs" else None
                if limit is not None:
                    targets.append(bl.target(f"{label} {name} ratio", fig["ratio_to_empty"], limit, unit="x"))
                targets.append(bl.target(f"{label} {name} peak RSS", fig["peak_rss_mb"], RSS_TARGET_MB, unit="MB"))
    bl.emit(bl.report("scaling", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
