#!/usr/bin/env python3
"""Scheduler reload on a big busy instance, with partly released housekeeping.

4096 nodes x 32 cores; housekeeping configured with ``release-after: "0"``
(each rank is released as it finishes) and ``rank-durations`` making the
odd ranks 1-1999 straggle forever (``inf``). 1000 ``-N2`` jobs with a 1 s run
duration land on rank pairs (2i, 2i+1); once they end, each leaves a
housekeeping allocation with one rank released and one straggling. Then
10,000 one-core jobs with a 30-day run duration start. On copies of that
instance (set-up time reported separately):

* `flux-lite sched reload` (hello replays 10,000 jobs + 1000 partial
  allocations with partial-ok) - target <= 0.5 s wall for the whole command;
* `flux-lite sched reload --no-partial-ok` (the 1000 are terminated);
* `flux-lite sched check`;
* for information, `sched reload --policy=easy` when sched-backfill loads.
"""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RELOAD_TARGET = 0.5
NODES, CORES = 4096, 32


def setup(state, n_hk, n_running):
    stragglers = ",".join(str(r) for r in range(1, 2 * n_hk, 2))
    config = {"job-manager": {"housekeeping": {"release-after": "0", "rank-durations": {stragglers: "inf"}}}}
    times = {}
    t0 = time.perf_counter()
    times["start_s"] = bl.start_instance(state, size=NODES, cores=CORES, config=config)
    times["submit_N2_s"] = bl.fl(["submit", f"--cc=1-{n_hk}", "--quiet", "-N2", "-S", "exec.test.run_duration=1s",
                                  "true"], state)[0]
    times["advance_s"] = bl.fl(["clock", "advance", "2s"], state)[0]
    times["submit_running_s"] = bl.fl(["submit", f"--cc=1-{n_running}", "--quiet", "-n1", "-S",
                                       "exec.test.run_duration=30d", "true"], state)[0]
    times["total_s"] = round(time.perf_counter() - t0, 3)
    return {k: round(v, 3) for k, v in times.items()}


def census(state):
    """Running jobs, housekeeping allocations and how many are partly released."""
    _, running = bl.fl(["jobs", "-A", "-f", "running", "-n", "-c", "0", "-o", "{id}"], state)
    _, hk = bl.fl(["housekeeping", "list", "-n", "-o", "{id} {nnodes} {pending.nnodes}"], state, check=False)
    rows = [ln.split() for ln in hk.stdout.splitlines() if ln.strip()]
    partial = sum(1 for r in rows if len(r) == 3 and r[1] == "1" and r[2] == "1")
    return {"running_jobs": len(running.stdout.split()), "housekeeping_allocs": len(rows),
            "partly_released": partial}


def timed_on_copies(golden, root, args_list, reps, label):
    walls = bl.Samples()
    last = None
    for i in range(reps):
        work = os.path.join(root, f"{label}{i}")
        bl.copy_state(golden, work)
        walls.add(*bl.fl(args_list, work))
        if i == reps - 1:
            last = work
        else:
            shutil.rmtree(work, ignore_errors=True)
    return walls, last


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=None, help="Repetitions per command (default 7, quick 3).")
    p.add_argument("--running", type=int, default=10000, help="Running one-core jobs (default 10000).")
    p.add_argument("--housekeeping", type=int, default=1000, help="Partly released -N2 allocations (default 1000).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    reps = args.reps or (3 if args.quick else 7)
    figures = {"instance": f"{NODES} nodes x {CORES} cores, virtual clock", "reps": reps}
    targets = []
    extra = {}
    official = args.running == 10000 and args.housekeeping == 1000
    note = None if official else "not the official size (10000 running, 1000 housekeeping)"
    with bl.temp_dir() as root:
        golden = os.path.join(root, "golden")
        bl.log("setup")
        figures["setup"] = setup(golden, args.housekeeping, args.running)
        figures["before"] = census(golden)
        figures["kvs_sqlite_mb"] = round(os.path.getsize(os.path.join(golden, "kvs.sqlite")) / 2**20, 1)

        bl.log("sched reload")
        walls, last = timed_on_copies(golden, root, ["sched", "reload"], reps, "reload")
        figures["sched_reload_s"] = walls.summary()
        figures["after_reload"] = census(last)
        _, chk = bl.fl(["sched", "check"], last, check=False)
        figures["check_after_reload"] = chk.stdout.strip().splitlines()[:3] + ([f"exit {chk.returncode}"]
                                                                               if chk.returncode else [])
        shutil.rmtree(last, ignore_errors=True)

        bl.log("sched reload --no-partial-ok")
        walls_np, last = timed_on_copies(golden, root, ["sched", "reload", "--no-partial-ok"], reps, "nopartial")
        figures["sched_reload_no_partial_ok_s"] = walls_np.summary()
        figures["after_reload_no_partial_ok"] = census(last)
        shutil.rmtree(last, ignore_errors=True)

        bl.log("sched check")
        work = os.path.join(root, "check")
        bl.copy_state(golden, work)
        walls_chk = bl.Samples()
        for _ in range(reps):
            proc = walls_chk.add(*bl.fl(["sched", "check"], work, check=False))
        figures["sched_check_s"] = walls_chk.summary()
        figures["sched_check_output"] = proc.stdout.strip().splitlines()[:3] + (
            [f"exit {proc.returncode}"] if proc.returncode else [])
        shutil.rmtree(work, ignore_errors=True)

        bl.log("sched reload --policy=easy (information)")
        work = os.path.join(root, "easy")
        bl.copy_state(golden, work)
        wall, proc = bl.fl(["sched", "reload", "--policy=easy"], work, check=False)
        if proc.returncode == 0:
            figures["sched_reload_policy_easy_s"] = round(wall, 4)
        else:
            figures["sched_reload_policy_easy_s"] = None
            figures["sched_reload_policy_easy_error"] = proc.stderr.strip()[-300:]
        shutil.rmtree(work, ignore_errors=True)

        if args.profile:
            extra["profile"] = {}
            for label, cmd in (("reload", ["sched", "reload"]), ("check", ["sched", "check"])):
                work = os.path.join(root, "prof")
                bl.copy_state(golden, work)
                extra["profile"][label] = bl.profile_command(cmd, work, args.top)
                shutil.rmtree(work, ignore_errors=True)

    med = walls.median
    targets.append(bl.target("sched reload (median wall, whole command)", med, RELOAD_TARGET, note=note))
    before = figures["before"]
    targets.append(bl.target("set-up: running jobs", before["running_jobs"], args.running, op="==", unit="jobs"))
    targets.append(bl.target("set-up: partly released housekeeping allocations", before["partly_released"],
                             args.housekeeping, op="==", unit="allocs"))
    bl.emit(bl.report("reload", args, figures, targets, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
