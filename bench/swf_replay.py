#!/usr/bin/env python3
"""Replay a slice of a real workload (Parallel Workloads Archive SWF) per policy.

The first N jobs (default 2000) of a trace in /work/shared/data/swf/ are
submitted at their submit times on an instance shaped by the trace header
(MaxNodes nodes x MaxProcs/MaxNodes cores), through the library API: the
virtual clock is advanced to each submit time (`Instance.advance_clock`), the
jobs submitted then go in one session (`broker.jm.submit`), and at the end the
clock is advanced until every job is inactive. Each job asks for its
requested procs (one core per task) with its requested time as time limit
(or its run time when the trace has none) and runs its recorded run time
(`exec.test.run_duration`). Jobs that ran past their request time out, as
they would under Flux.

The trace is read, fitted to the instance and turned into jobspecs by
flux_lite.workload (as `flux-lite replay` does); the figures are its
`summarize`. Reported per policy (fcfs; easy and conservative when
`flux-lite sched reload --policy=...` accepts them): wall time, jobs/s (jobs
replayed per wall second), makespan, waits (mean, percentiles, max) and
bounded slowdown in simulated seconds, utilization, and the results. No
targets: these are figures to compare policies and commits.
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SWF_DIR = "/work/shared/data/swf"
DEFAULT_TRACE = "KTH-SP2-1996-2.swf.gz"
POLICIES = ("fcfs", "easy", "conservative")


def jobspec_for(job, estimate):
    """flux_lite.workload's jobspec; `--estimate=runtime` limits a job to its run time."""
    import dataclasses

    from flux_lite import workload

    if estimate != "request":
        job = dataclasses.replace(job, req_time=0.0)  # the limit is then the run time
    return workload.jobspec_for(job)


def replay(state, jobs, estimate, driver):
    """Submit at trace times, then run to completion; returns timing dict."""
    from flux_lite.instance import Instance
    from flux_lite.job_manager import index

    t0_trace = jobs[0].submit
    batches = []
    for job in jobs:
        if batches and batches[-1][0] == job.submit:
            batches[-1][1].append(job)
        else:
            batches.append((job.submit, [job]))
    specs = [(t - t0_trace, [jobspec_for(j, estimate) for j in batch]) for t, batch in batches]
    inst = Instance.open(state)
    try:
        start = inst.clock_now()
        t_begin = time.perf_counter()
        if driver == "transactions":
            for offset, batch in specs:
                delta = start + offset - inst.clock_now()
                if delta > 0:
                    inst.advance_clock(delta)
                with inst.session() as broker:
                    for js in batch:
                        broker.jm.submit(js)
                        broker.run()
        else:  # one session for the whole replay
            with inst.session() as broker:
                for offset, batch in specs:
                    broker.advance_to(start + offset)
                    for js in batch:
                        broker.jm.submit(js)
                        broker.run()
        t_submitted = time.perf_counter()
        rounds = 0
        while True:
            active = index.active_count(inst.kvs.conn)
            if not active or rounds > 200:
                break
            inst.advance_clock(30 * 86400.0)
            rounds += 1
        t_end = time.perf_counter()
        rows = list(index.all_records(inst.kvs.conn))
    finally:
        inst.close()
    return {
        "wall_s": round(t_end - t_begin, 3),
        "submit_phase_s": round(t_submitted - t_begin, 3),
        "drain_phase_s": round(t_end - t_submitted, 3),
        "transactions": len(specs) * 2 + rounds if driver == "transactions" else 1 + rounds,
        "active_left": active,
        "start": start,
    }, rows


def metrics(rows, total_cores):
    """workload.summarize's figures (waits, slowdown, utilisation) of the replayed jobs."""
    from flux_lite import workload

    return workload.summarize(workload.outcomes(rows), total_cores)


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--trace", default=DEFAULT_TRACE, help=f"SWF file (name in {SWF_DIR} or a path).")
    p.add_argument("--jobs", type=int, default=None, help="Jobs to replay (default 2000, quick 300).")
    p.add_argument("--skip", type=int, default=0, help="Skip this many replayable jobs first.")
    p.add_argument("--policies", default=",".join(POLICIES), help="Comma list (default fcfs,easy,conservative).")
    p.add_argument("--estimate", choices=("request", "runtime"), default="request",
                   help="Time limit: the requested time (default; run time when the trace has none) or the "
                        "run time itself.")
    p.add_argument("--driver", choices=("transactions", "session"), default="transactions",
                   help="transactions (default): one advance_clock and one session per submit time, as a "
                        "script of commands would; session: the whole replay in one transaction.")
    p.add_argument("--queue-depth", default=None, help="Passed to sched reload (default: the module's).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    njobs = args.jobs or (300 if args.quick else 2000)
    path = args.trace if os.path.sep in args.trace else os.path.join(SWF_DIR, args.trace)
    from flux_lite import workload

    trace = workload.read_trace(path, limit=args.skip + njobs)
    raw = trace.jobs[args.skip:]
    max_nodes, cores, jobs = workload.fit(workload.Trace(trace.header, raw, trace.skipped), None, None)
    header = trace.header
    recorded_waits = [j.wait for j in jobs if j.wait >= 0]
    figures = {
        "trace": os.path.basename(path),
        "header": {k: header.get(k) for k in ("Computer", "Installation", "MaxNodes", "MaxProcs", "Note")},
        "instance": f"{max_nodes} nodes x {cores} cores, virtual clock",
        "jobs_read": len(raw),
        "jobs_replayed": len(jobs),
        "dropped": trace.skipped,
        "estimate": args.estimate,
        "driver": args.driver,
        "trace_span_s": jobs[-1].submit - jobs[0].submit if jobs else 0,
        "trace_recorded_mean_wait_s": round(statistics.fmean(recorded_waits), 1) if recorded_waits else None,
        "policies": {},
    }
    skipped = {}
    extra = {}
    for policy in [x for x in args.policies.split(",") if x]:
        bl.log(f"policy {policy}")
        with bl.temp_dir() as state:
            bl.start_instance(state, size=max_nodes, cores=cores)
            reload_args = ["sched", "reload", f"--policy={policy}"]
            if args.queue_depth:
                reload_args.append(f"--queue-depth={args.queue_depth}")
            _, proc = bl.fl(reload_args, state, check=False)
            if proc.returncode != 0:
                skipped[policy] = f"flux-lite {' '.join(reload_args)}: exit {proc.returncode}: " \
                                  f"{proc.stderr.strip()[-300:]}"
                continue
            prof = {}
            with bl.profiled(prof, args.top, enabled=args.profile):
                timing, rows = replay(state, jobs, args.estimate, args.driver)
            total_cores = max_nodes * cores
            out = dict(timing)
            out.pop("start")
            out["jobs_per_s"] = round(len(jobs) / timing["wall_s"], 1) if timing["wall_s"] else None
            _, status = bl.fl(["sched", "status"], state, check=False)
            try:
                out["sched_status_after"] = json.loads(status.stdout)
            except ValueError:
                out["sched_status_after"] = status.stdout.strip() or status.stderr.strip() or None
            out.update(metrics(rows, total_cores))
            figures["policies"][policy] = out
            if prof:
                extra.setdefault("profile", {})[policy] = prof
    targets = []
    bl.emit(bl.report("swf_replay", args, figures, targets, skipped=skipped or None, extra=extra, t_start=t_start))


if __name__ == "__main__":
    main()
