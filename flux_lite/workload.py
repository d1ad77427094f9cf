"""Workload traces in the Standard Workload Format (Parallel Workloads Archive).

An SWF file is header comments (``; Key: value``) and one line of 18
whitespace-separated numbers per job. flux-lite replays a trace by submitting
each job at its submit time on a virtual clock; this module reads traces and
summarises the outcome (``replay_trace``).

The replay runs the real job manager and scheduler in one command (one
transaction): jobs are submitted as the virtual clock reaches their submit
times, and the clock then runs on until every job is inactive.
"""

from __future__ import annotations

import copy
import gzip
import io
import math
import os
import statistics
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from math import isfinite

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError
from flux_lite.formats import jobspec as jobspecmod
from flux_lite import instance as instance_mod
from flux_lite.instance import Instance
from flux_lite.job_manager import index
from flux_lite.listing.jobs import make_info
from flux_lite.formats.rset import Rset
from flux_lite.sched import fluxion_qmanager, registry
from flux_lite.schedstate import MODULE_KEY
from flux_lite.workload_results import Collected, Results, user_name

# SWF status field: 1 completed, 0 failed, 5 cancelled (others are partial records)
SWF_FIELDS = 18
# a trace file larger than this is refused before any line is read
MAX_TRACE_BYTES = 512 * 1024 * 1024
# the replay writes the rows of finished jobs and the KVS writes buffered so far
# (and reports progress) every so many submits or timer steps
FLUSH_EVERY = 512
# bounded slowdown counts runs shorter than this as this long (Feitelson's tau)
SLOWDOWN_TAU = 10.0


class TraceError(FluxLiteError):
    pass


@dataclass(slots=True)  # (a trace of 250,000 jobs is held whole: no __dict__ each)
class TraceJob:
    num: int
    submit: float
    run: float
    procs: int
    req_time: float
    user: int
    wait: float
    # SWF fields 13, 15 and 16 (-1: unknown), kept for --queue-map and --swf-out
    group: int = -1
    queue: int = -1
    partition: int = -1

    @property
    def limit(self) -> float:
        """Time limit to submit with: the request, else the run time itself."""
        return self.req_time if self.req_time > 0 else max(self.run, 1.0)


@dataclass
class Trace:
    header: dict[str, str]
    jobs: list[TraceJob]
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def max_nodes(self) -> int:
        return _header_int(self.header, "MaxNodes")

    @property
    def max_procs(self) -> int:
        return _header_int(self.header, "MaxProcs")


def _header_int(header: dict[str, str], key: str) -> int:
    try:
        return max(0, int(header.get(key, "0").split()[0]))
    except (ValueError, IndexError):
        return 0


def _open_text(path: str):
    if path == "-":
        import sys

        raw = sys.stdin.buffer.read(MAX_TRACE_BYTES + 1)
        if len(raw) > MAX_TRACE_BYTES:
            raise TraceError("-: trace larger than 512 MiB")
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        return io.StringIO(data.decode("utf-8", errors="replace"))
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as f:
            magic = f.read(2)
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror}") from None
    if size > MAX_TRACE_BYTES:
        raise TraceError(f"{path}: trace larger than 512 MiB")
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


MAX_TRACE_LINE = 4096  # an SWF line is 18 numbers; /dev/zero is one endless line


def _bounded_lines(f, path: str):
    """f's lines, refusing an endless line or more than MAX_TRACE_BYTES in
    all (a device, or a gzip that inflates without end)."""
    total = 0
    while True:
        line = f.readline(MAX_TRACE_LINE + 1)
        if not line:
            return
        total += len(line)
        if len(line) > MAX_TRACE_LINE:
            raise TraceError(f"{path}: a line longer than {MAX_TRACE_LINE} characters: not an SWF trace")
        if total > MAX_TRACE_BYTES:
            raise TraceError(f"{path}: trace larger than 512 MiB")
        yield line


def read_trace(path: str, limit: int | None = None) -> Trace:
    """Read an SWF trace (plain or gzip, ``-`` for stdin).

    Jobs without a processor count or run time cannot be replayed and are
    counted in ``skipped`` by reason; the submit order of the file is kept.
    """
    header: dict[str, str] = {}
    jobs: list[TraceJob] = []
    skipped = {"no_procs": 0, "no_runtime": 0}
    # run times, requests and waits repeat across a trace: one float object
    # per value (24 bytes a field a job, 18 MB of a 250,000-job trace);
    # zero, whose sign a dict would not tell apart, is left alone
    shared: dict[float, float] = {}
    share = shared.setdefault
    try:
        with _open_text(path) as f:
            for lineno, line in enumerate(_bounded_lines(f, path), 1):
                fields = line.split()  # (no fields: a blank line; split and strip agree on whitespace)
                if not fields:
                    continue
                if fields[0][0] == ";":
                    key, sep, value = line.strip()[1:].partition(":")
                    if sep and key.strip() and key.strip() not in header:
                        header[key.strip()] = value.strip()
                    continue
                if limit is not None and len(jobs) >= limit:
                    break
                if len(fields) != SWF_FIELDS:
                    raise TraceError(f"{path}:{lineno}: expected {SWF_FIELDS} fields, got {len(fields)}")
                try:
                    nums = list(map(float, fields))
                except ValueError:
                    raise TraceError(f"{path}:{lineno}: fields must be numbers") from None
                if not all(map(isfinite, nums)):
                    raise TraceError(f"{path}:{lineno}: fields must be finite numbers")
                procs = int(nums[7]) if nums[7] > 0 else int(nums[4])
                if procs <= 0:
                    skipped["no_procs"] += 1
                    continue
                if nums[3] < 0:
                    skipped["no_runtime"] += 1
                    continue
                # (num, submit, run, procs, req_time, user, wait)
                run, req, wait = nums[3], nums[8], nums[2]
                jobs.append(TraceJob(int(nums[0]), max(nums[1], 0.0), share(run, run) if run else run, procs,
                                     share(req, req) if req else req, int(nums[11]),
                                     share(wait, wait) if wait else wait, int(nums[12]), int(nums[14]),
                                     int(nums[15])))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError(f"{path}: {exc}") from None
    if not jobs:
        raise TraceError(f"{path}: no replayable jobs in trace")
    jobs.sort(key=lambda j: j.submit)  # stable: file order within one second
    return Trace(header, jobs, skipped)


def fit(trace: Trace, nodes: int | None, cores_per_node: int | None) -> tuple[int, int, list[TraceJob]]:
    """The instance shape (options first, then the trace header) and the jobs that fit it."""
    header_nodes = trace.max_nodes or trace.max_procs
    max_nodes = nodes or header_nodes
    if not max_nodes:
        raise TraceError("the trace header gives no MaxNodes or MaxProcs: use --nodes")
    # the header's shape, whatever --nodes says: MaxProcs / MaxNodes, else 1
    cores = cores_per_node or max(1, trace.max_procs // header_nodes if header_nodes else 1)
    total = max_nodes * cores
    jobs = [j for j in trace.jobs if j.procs <= total]
    too_big = len(trace.jobs) - len(jobs)
    if too_big:
        trace.skipped["too_big"] = too_big
    if not jobs:
        raise TraceError("no job of the trace fits the instance")
    return max_nodes, cores, jobs


@dataclass(slots=True)
class Outcome:
    """What happened to one replayed job, in simulated seconds."""
    t_submit: float
    t_run: float | None  # None: never started
    t_end: float | None
    ncores: int
    result: str


def summarize(outcomes: Iterable[Outcome], total_cores: int) -> dict:
    """Makespan, utilisation, waits and bounded slowdown of a replay (one
    pass over the outcomes: a replay's are made as they are read)."""
    wait_list = array("d")  # (8 bytes a job; the means are fsums, so the same in any order)
    slowdowns = array("d")
    busy = 0.0
    results: dict[str, int] = {}
    njobs = 0
    t_first = t_last = None
    for o in outcomes:
        njobs += 1
        # (the first of equal values kept, as min and max do)
        if t_first is None or o.t_submit < t_first:
            t_first = o.t_submit
        if o.t_end is not None and (t_last is None or o.t_end > t_last):
            t_last = o.t_end
        results[o.result] = results.get(o.result, 0) + 1
        if o.t_run is None:
            continue
        run = max((o.t_end if o.t_end is not None else o.t_run) - o.t_run, 0.0)
        wait = o.t_run - o.t_submit
        wait_list.append(wait)
        slowdowns.append(max(1.0, (wait + run) / max(run, SLOWDOWN_TAU)))
        busy += run * o.ncores
    if t_first is None:
        raise ValueError("summarize: no outcomes")
    if t_last is None:
        t_last = t_first
    makespan = t_last - t_first
    waits = sorted(wait_list)
    del wait_list

    def pct(p: float) -> float:
        if not waits:
            return 0.0
        return waits[min(len(waits) - 1, int(round(p / 100 * (len(waits) - 1))))]

    return {
        "jobs": njobs,
        "started": len(waits),
        "makespan": round(makespan, 3),
        "utilization": round(busy / (total_cores * makespan), 4) if makespan > 0 else 0.0,
        "wait_mean": round(statistics.fmean(waits), 3) if waits else 0.0,
        "wait_p50": pct(50),
        "wait_p90": pct(90),
        "wait_p95": pct(95),
        "wait_p99": pct(99),
        "wait_max": waits[-1] if waits else 0.0,
        "bounded_slowdown_mean": round(statistics.fmean(slowdowns), 3) if slowdowns else 0.0,
        "results": dict(sorted(results.items())),
    }


def jobspec_for(job: TraceJob) -> dict:
    """One core per trace processor, the request as the limit, the run time simulated."""
    return submission_for(job)[0]


# json.dumps of jobspec_for's jobspec, as a template (tests/test_workload.py
# checks it against jobspec.build and json.dumps)
_SPEC_TEXT = ('{"resources": [{"type": "slot", "count": %d, "with": [{"type": "core", "count": 1}], '
              '"label": "task"}], "tasks": [{"command": ["swf", "%d"], "slot": "task", "count": {"per_slot": 1}}], '
              '"attributes": {"system": {"duration": %r, "job": {"name": "swf%d"}, '
              '"exec": {"test": {"run_duration": "%s"}}}}, "version": 1}')


def submission_for(job: TraceJob) -> tuple[dict, str | None]:
    """jobspec_for's jobspec and, for an ordinary trace job, its ``json.dumps``
    text (written from a template: encoding it costs as much as the rest of
    a submission's bookkeeping); None where it must be encoded."""
    # exec.test.run_duration=0s would mean "run until canceled": a 0 s job runs 1 ms
    run = f"{job.run:g}s" if job.run > 0 else "1ms"
    num, procs, limit = job.num, job.procs, float(job.limit)
    if type(num) is int and type(procs) is int and procs >= 1 and 0.0 <= limit < math.inf:
        js = {"resources": [{"type": "slot", "count": procs, "with": [{"type": "core", "count": 1}],
                             "label": "task"}],
              "tasks": [{"command": ["swf", str(num)], "slot": "task", "count": {"per_slot": 1}}],
              "attributes": {"system": {"duration": limit, "job": {"name": f"swf{num}"},
                                        "exec": {"test": {"run_duration": run}}}},
              "version": 1}
        return js, _SPEC_TEXT % (procs, num, limit, num, run)

    return jobspecmod.build(["swf", str(num)], ntasks=procs, duration=limit, name=f"swf{num}",
                            setattrs=[("exec.test.run_duration", run)], check=False), None


def userid_for(job: TraceJob, owner: int) -> int:
    """The job's user: the trace's user number, the instance owner where the trace has none."""
    return job.user if 0 <= job.user < 2**31 else owner


FLUXION = "fluxion"  # replay --scheduler=fluxion: Fluxion's modules (sched.policy = "fluxion")
FLUXION_QUEUE_POLICIES = fluxion_qmanager.QUEUE_POLICIES


def fluxion_config(config: dict | None, queue_policy: str | None = None, match_policy: str | None = None) -> dict:
    """A configuration that schedules with Fluxion's modules: queue_policy in
    [sched-fluxion-qmanager], match_policy in [sched-fluxion-resource]."""
    cfg = copy.deepcopy(config or {})
    cfg.setdefault("sched", {})["policy"] = FLUXION
    if queue_policy is not None:
        cfg.setdefault("sched-fluxion-qmanager", {})["queue-policy"] = queue_policy
    if match_policy is not None:
        cfg.setdefault("sched-fluxion-resource", {})["match-policy"] = match_policy
    return cfg


def fluxion_label(cfg: dict) -> str:
    """How a replay under Fluxion names its policy: fluxion-QUEUE-POLICY/MATCH-POLICY."""
    qp = configmod.get_path(cfg, "sched-fluxion-qmanager.queue-policy", "fcfs")
    mp = configmod.get_path(cfg, "sched-fluxion-resource.match-policy")
    mp = configmod.get_path(cfg, "sched-fluxion-resource.policy", "first") if mp is None else mp
    return f"fluxion-{qp}/{mp}"


def replay_trace(state_dir, jobs: list[TraceJob], nodes: int, cores: int, policy: str | None = "fcfs",
                 progress=None, *, config: dict | None = None, results: Results | None = None,
                 queue_map: dict | None = None, header: dict | None = None, module: str | None = None,
                 module_args: list[str] | None = None) -> dict:
    """Replay jobs on a new virtual-clock instance at state_dir; returns the summary.

    progress(done, total) is called every few hundred jobs, done counting
    the jobs that have finished. config: the instance's configuration
    (policy, when given, replaces its sched.policy). results: where the
    finished jobs go as they finish (workload_results.Results, whose names
    say how the instance names the trace's users). queue_map: trace
    queue numbers to queue names (parse_queue_map). A job the instance
    refuses (a queue's limits) is counted as "rejected" in the summary.
    module: a scheduler module file (PATH.py, given module_args) to
    schedule with instead of the policy; it lives for the whole replay.
    """
    cfg = copy.deepcopy(config or {})
    if module is not None:
        module = os.path.abspath(module)
        sched = cfg.setdefault("sched", {})
        sched.pop("policy", None)
        sched.update({"module": module, "module-args": list(module_args or [])})
        policy = os.path.basename(module)
    else:
        if policy is not None:
            cfg.setdefault("sched", {})["policy"] = policy
        policy = (cfg.get("sched") or {}).get("policy") or registry.default_policy()
        if policy == FLUXION:
            policy = fluxion_label(cfg)
    results = results if results is not None else Results()
    prepare = None
    if results.names == "synthetic":
        # the instance names the trace's users userN (the names its listings show)
        given = {str(j.user): user_name(j.user, "synthetic") for j in jobs if 0 <= j.user < 2**31}

        def prepare(inst, ctx):
            inst.meta = dict(inst.meta, usernames=given)
            inst.kvs.put("instance.meta", inst.meta)
    inst = Instance.create(state_dir, config=cfg, size=nodes, cores=cores, clock="virtual", prepare=prepare)
    # the collector stays off until the summary is made: the replay's
    # objects form no cycles, and scanning them would cost seconds
    with instance_mod.gc_paused():
        try:
            rset = Rset.from_dict(inst.kvs.get("resource.R"))  # (the configuration's resources, if it has any)
            nodes, total = rset.nnodes, rset.ncores
            cores = total // nodes if nodes else cores
            results.begin(inst.clock_now(), jobs[0].submit, nodes, cores, header or {}, policy,
                          configmod.get_path(cfg, "policy.jobspec.defaults.system.queue"))
            summary = _run(inst, jobs, progress, total, results, queue_map or {})
            if module is not None and inst.kvs.get(MODULE_KEY) is None:
                raise FluxLiteError(f"{policy}: the scheduler module exited during the replay (its traceback is "
                                    "in the instance's log: replay with --keep=DIR, then flux-lite dmesg)")
        finally:
            inst.close()
    summary["policy"] = policy
    summary["nodes"] = nodes
    summary["cores_per_node"] = cores
    return summary


def parse_queue_map(text: str) -> dict[tuple[str, int], str]:
    """--queue-map: ``N=NAME`` (trace queue N) or ``partition:N=NAME``, comma-separated."""
    out: dict[tuple[str, int], str] = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        key, sep, name = item.partition("=")
        field_, _, num = key.rpartition(":")
        field_ = field_ or "queue"
        if not sep or not name or field_ not in ("queue", "partition"):
            raise FluxLiteError(f"--queue-map: expected [queue:|partition:]N=NAME, got {item!r}")
        try:
            out[(field_, int(num))] = name
        except ValueError:
            raise FluxLiteError(f"--queue-map: {num!r} is not a number") from None
    return out


def queue_for(job: TraceJob, queue_map: dict[tuple[str, int], str]) -> str | None:
    return queue_map.get(("queue", job.queue)) or queue_map.get(("partition", job.partition))


def _run(inst, jobs, progress, total_cores, results, queue_map):
    total, done = len(jobs), 0

    def flush():
        # the finished jobs' rows are written as they finish (see flush_inactive)
        nonlocal done
        done += broker.jm.index.flush_inactive()
        # into the command's transaction now, not all at its end: a replay's
        # memory stays bounded (eventlogs of jobs still active are appended to)
        broker.kvs.flush()
        broker.instance.flush_log()  # (sched-backfill logs every job it starts and frees)
        if progress is not None:
            progress(done, total)

    owner = inst.owner
    rejected = 0
    first_refusal = ""
    with inst.session() as broker:
        # the rows' outcomes, collected as they are written (read back from
        # the index only if some job was not written that way)
        collected = broker.jm.index.outcomes = Collected(results, lambda: broker.now)
        if broker.queues.config.named:
            broker.queues.start(None, True, True)  # named queues begin stopped: as `queue start --all`
        start = broker.now
        t0 = jobs[0].submit
        for i, job in enumerate(jobs, 1):
            t = start + job.submit - t0
            if t > broker.now:
                broker.advance_to(t)
            jobspec, text = submission_for(job)
            queue = queue_for(job, queue_map) if queue_map else None
            if queue is not None:
                jobspec["attributes"]["system"]["queue"] = queue
                text = None
            try:
                jobid = broker.jm.submit(jobspec, userid=userid_for(job, owner), text=text)
            except FluxLiteError as exc:
                rejected += 1  # (refused before the job exists: nothing to undo)
                first_refusal = first_refusal or str(exc)
                total -= 1
                continue
            results.submitted(jobid, i, job, queue, broker.now)
            if i % FLUSH_EVERY == 0:
                flush()
        broker.run()
        steps = 0
        while True:
            nxt = broker.next_event_time()
            if nxt is None:
                break
            broker.advance_to(nxt)
            steps += 1
            if steps % FLUSH_EVERY == 0:
                flush()
        flush()
    if not total:
        raise TraceError(f"the instance refused every job of the trace (the first: {first_refusal})")
    if len(collected) != total:
        collected = None
    summary = summarize(_outcomes(inst, collected), total_cores)
    results.finish((start, start + summary["makespan"]))
    summary["user_wait_mean_max"] = results.user_wait_mean_max()
    if rejected:
        summary["rejected"] = rejected
    return summary


def _outcomes(inst, collected: Collected | None = None) -> Iterator[Outcome]:
    """The outcome of every job of the index (read from it), or of every
    job collected as its row was written, in id order as the index has
    them; made as they are read (a replay of 250,000 jobs never holds
    them all)."""
    rows = collected.rows() if collected is not None else index.outcome_rows(inst.kvs.conn)
    for t_submit, t_run, t_end, ncores, result in rows:
        yield Outcome(t_submit=t_submit, t_run=t_run or None, t_end=t_end or None, ncores=ncores or 0,
                      result=result)


def outcomes(records) -> list[Outcome]:
    """The outcome of each job record of the index (the replay's, or a benchmark's)."""
    out = []
    for rec in records:
        info = make_info(rec, rec.get("t_inactive") or 0.0, str)
        out.append(Outcome(t_submit=rec["t_submit"], t_run=rec.get("t_run") or None,
                           t_end=rec.get("t_cleanup") or None, ncores=rec.get("ncores") or 0,
                           result=info["result"] or info["state"]))
    return out


def replay_file(path: str, policy: str | None, nodes: int | None = None, cores_per_node: int | None = None,
                limit: int | None = None, keep: str | None = None, progress=None, *, config: dict | None = None,
                results: Results | None = None, queue_map: dict | None = None, module: str | None = None,
                module_args: list[str] | None = None) -> tuple[dict, Trace]:
    """Read, fit and replay the trace at path (`flux-lite replay`): (summary, trace).

    The instance is created at keep (a new directory, kept) or in a
    temporary directory removed afterwards. The other arguments are
    replay_trace's."""
    import shutil
    import tempfile

    tr = read_trace(path, limit=limit)
    n, c, jobs = fit(tr, nodes, cores_per_node)
    kw = dict(policy=policy, progress=progress, config=config, results=results, queue_map=queue_map,
              header=tr.header, module=module, module_args=module_args)
    if keep is not None:
        if os.path.exists(keep):
            raise FluxLiteError(f"{keep}: already exists (--keep needs a new directory)")
        summary = replay_trace(keep, jobs, n, c, **kw)
    else:
        tmp = tempfile.mkdtemp(prefix="flux-lite-replay-")
        try:
            summary = replay_trace(os.path.join(tmp, "state"), jobs, n, c, **kw)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if "rejected" in summary:
        tr.skipped["rejected"] = summary.pop("rejected")
    return summary, tr
