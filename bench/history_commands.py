#!/usr/bin/env python3
"""Commands on a big history: an instance with N inactive jobs (default
100,000; --jobs 1000000) plus the scaling benchmark's running shape (10,000
one-core jobs running on 4096 x 32), against the same running shape without
history and against an empty 4096 x 32 instance.

The states are built once into --cache DIR (kept; reused when present: a
million jobs take minutes to run through) by `submit --cc` bursts of 100,000
one-core jobs of 1 s and `clock advance`, each step timed, with its peak
RSS. Then, round-robin over the instances on fresh copies, every command of
COMMANDS is timed (median wall and CPU, peak RSS of the child, from wait4).

Targets: each command within 1.5x (CPU) of the same shape without history,
peak RSS < 100 MB; the build's catch-up and bursts < 250 MB; the state
<= 1.5 KB per inactive job.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RATIO_TARGET = 1.5
RSS_TARGET_MB = 100
BUILD_RSS_TARGET_MB = 250
BYTES_PER_JOB_TARGET = 1500
BURST = 100000

COMMANDS = {
    "jobs -a -c 100": lambda jid: ["jobs", "-a", "-c", "100"],
    "jobs --stats-only": lambda jid: ["jobs", "--stats-only"],
    "job last": lambda jid: ["job", "last"],
    "job purge --num-limit": lambda jid: ["job", "purge", "--num-limit=100"],
    "queue list": lambda jid: ["queue", "list"],
    "resource list": lambda jid: ["resource", "list"],
    "submit -N1": lambda jid: ["submit", "-N1", "sleep", "inf"],
    "update duration": lambda jid: ["update", jid, "duration=+1m"],
    "job eventlog": lambda jid: ["job", "eventlog", jid],
    "sched reload": lambda jid: ["sched", "reload"],
}


def build(state, njobs, running, steps):
    """4096 x 32; njobs inactive jobs (1 s each, in bursts), then `running`
    one-core jobs of 30 days."""
    bl.start_instance(state, 4096, 32)
    exe = bl.flux_lite_exe()
    env = bl.base_env(state)
    done = 0
    if njobs:
        # the history runs on 64 nodes (2048 cores: a burst's jobs queue, as
        # on a busy machine, rather than all starting within the submit)
        bl.fl(["resource", "drain", "64-4095", "building the history"], state)
    while done < njobs:
        n = min(BURST, njobs - done)
        for name, argv in ((f"submit --cc=1-{n}", ["submit", f"--cc=1-{n}", "--quiet", "-n1", "-S",
                                                    "exec.test.run_duration=1s", "true"]),
                           ("clock advance 1h", ["clock", "advance", "1h"])):
            wall, cpu, mb, rc, _, err = bl.run_rss([exe, *argv], env)
            if rc != 0:
                raise bl.CommandFailed(f"{name}: exit {rc}: {err.strip()[-500:]}")
            steps.append({"step": name, "after_jobs": done + n, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                          "peak_rss_mb": round(mb, 1)})
            bl.log(f"{state}: {steps[-1]}")
        done += n
    if njobs:
        bl.fl(["resource", "undrain", "64-4095"], state)
    if running:
        bl.fl(["submit", f"--cc=1-{running}", "--quiet", "-n1", "-S", "exec.test.run_duration=30d", "true"], state)


def state_bytes(state):
    return sum(os.path.getsize(os.path.join(state, f)) for f in os.listdir(state)
               if f.startswith("kvs.sqlite") and not f.endswith("-holder"))


def measure(states, reps, scratch):
    exe = bl.flux_lite_exe()
    samples = {label: {name: ([], [], []) for name in COMMANDS} for label in states}
    for rnd in range(reps):
        bl.log(f"round {rnd + 1}/{reps}")
        for label, src in states.items():
            state = os.path.join(scratch, label)
            bl.copy_state(src, state)
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


def main():
    p = bl.parser(__doc__.splitlines()[0], runs=(5, 3), runs_flag="-r", runs_what="each command per instance")
    p.add_argument("-n", "--jobs", type=int, default=None, help="Inactive jobs (default 100000, quick 20000).")
    p.add_argument("--running", type=int, default=10000, help="Running jobs beside the history.")
    p.add_argument("--cache", default=None, help="Keep the built states here (reused when present).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    njobs = args.jobs or (20000 if args.quick else 100000)
    cache = args.cache or tempfile.mkdtemp(prefix="flux-lite-history-")
    os.makedirs(cache, exist_ok=True)
    labels = {f"history-{njobs}": (njobs, args.running), f"running-{args.running}": (0, args.running),
              "empty-4096": (0, 0)}
    figures, targets, steps = {"jobs": njobs, "running": args.running}, [], []
    states = {}
    for label, (n, running) in labels.items():
        state = os.path.join(cache, label)
        if not os.path.exists(os.path.join(state, "kvs.sqlite")):
            t0 = time.perf_counter()
            build(state, n, running, steps)
            figures[f"build_{label}_s"] = round(time.perf_counter() - t0, 1)
        states[label] = state
    hist = f"history-{njobs}"
    size = state_bytes(states[hist]) - state_bytes(states[f"running-{args.running}"])
    figures["state_bytes_per_inactive_job"] = round(size / njobs)
    targets.append(bl.target("state per inactive job", figures["state_bytes_per_inactive_job"],
                             BYTES_PER_JOB_TARGET, unit="B"))
    if steps:
        figures["build_steps"] = steps
        worst = max(s["peak_rss_mb"] for s in steps)
        targets.append(bl.target("build steps peak RSS", worst, BUILD_RSS_TARGET_MB, unit="MB",
                                 note="submit --cc=1-100000 and the clock advance through its completions"))
    with bl.temp_dir() as scratch:
        cmds = measure(states, args.runs, scratch)
    base = cmds[f"running-{args.running}"]
    for name, fig in cmds[hist].items():
        fig["cpu_ratio_to_no_history"] = round(fig["cpu_median_s"] / base[name]["cpu_median_s"], 2)
        fig["cpu_ratio_to_empty_4096"] = round(fig["cpu_median_s"] / cmds["empty-4096"][name]["cpu_median_s"], 2)
        targets.append(bl.target(f"{name}: history / no history (CPU)", fig["cpu_ratio_to_no_history"],
                                 RATIO_TARGET, unit="x"))
        targets.append(bl.target(f"{name}: peak RSS", fig["peak_rss_mb"], RSS_TARGET_MB, unit="MB"))
    for name, fig in base.items():
        fig["cpu_ratio_to_empty_4096"] = round(fig["cpu_median_s"] / cmds["empty-4096"][name]["cpu_median_s"], 2)
    figures["instances"] = cmds
    figures["cache"] = cache
    bl.emit(bl.report("history_commands", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
