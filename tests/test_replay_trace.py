"""flux-lite replay: SWF traces through the real job manager and schedulers.

The outcomes are checked against a small independent simulator written here:
one-core nodes taken lowest rank first, FCFS with head-of-line blocking, and
EASY backfilling (the head job reserves the first nodes expected free at the
shadow time; a later job may start now if it ends by then or stays off the
reserved nodes). Expected ends use the time limit, real ends the run time.
"""

import heapq
import json
import os
import statistics
from pathlib import Path

import pytest

from flux_lite import workload

DATA = Path(__file__).parent / "data"
KTH = str(DATA / "kth-sp2-first400.swf")


def reference(jobs, nnodes, policy):
    """Start time of each job (submit, procs, run, limit), in simulated seconds."""
    start = [None] * len(jobs)
    holder = [None] * nnodes
    expected = [None] * nnodes
    running, queue = [], []

    def free():
        return [r for r in range(nnodes) if holder[r] is None]

    def begin(k, now, nodes):
        start[k] = now
        for r in nodes:
            holder[r], expected[r] = k, now + jobs[k][3]
        heapq.heappush(running, (now + min(jobs[k][2], jobs[k][3]), k, tuple(nodes)))

    def schedule(now):
        while queue and jobs[queue[0]][1] <= len(free()):
            k = queue.pop(0)
            begin(k, now, free()[: jobs[k][1]])
        if policy == "fcfs" or not queue:
            return
        need = jobs[queue[0]][1]
        shadow, reserved = None, set()
        for t in sorted({expected[r] for r in range(nnodes) if holder[r] is not None}):
            avail = [r for r in range(nnodes) if holder[r] is None or expected[r] <= t]
            if len(avail) >= need:
                shadow, reserved = t, set(avail[:need])
                break
        for k in list(queue[1:]):
            procs, limit = jobs[k][1], jobs[k][3]
            allowed = free()
            if shadow is not None and now + limit > shadow:
                allowed = [r for r in allowed if r not in reserved]
            if procs <= len(allowed):
                queue.remove(k)
                begin(k, now, allowed[:procs])

    i = 0
    while i < len(jobs) or running:
        now = min(jobs[i][0] if i < len(jobs) else float("inf"), running[0][0] if running else float("inf"))
        while running and running[0][0] <= now:
            for r in heapq.heappop(running)[2]:
                holder[r] = expected[r] = None
        while i < len(jobs) and jobs[i][0] <= now:
            queue.append(i)
            i += 1
        schedule(now)
    return start


def expected_summary(trace_jobs, nnodes, policy):
    t0 = trace_jobs[0].submit
    jobs = [(j.submit - t0, j.procs, j.run if j.run > 0 else 0.001, j.limit) for j in trace_jobs]
    start = reference(jobs, nnodes, policy)
    ends = [s + min(run, limit) for s, (_, _, run, limit) in zip(start, jobs)]
    makespan = max(ends)
    busy = sum((e - s) * j[1] for s, e, j in zip(start, ends, jobs))
    return {
        "wait_mean": round(statistics.fmean(s - j[0] for s, j in zip(start, jobs)), 3),
        "utilization": round(busy / (nnodes * makespan), 4),
        "makespan": round(makespan, 3),
    }


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_replay_matches_reference_simulator(tmp_path, policy):
    trace = workload.read_trace(KTH)
    nodes, cores, jobs = workload.fit(trace, None, None)
    assert (nodes, cores, len(jobs)) == (100, 1, 400)
    got = workload.replay_trace(tmp_path / "state", jobs, nodes, cores, policy=policy)
    want = expected_summary(jobs, nodes, policy)
    assert got["jobs"] == got["started"] == 400
    assert got["wait_mean"] == pytest.approx(want["wait_mean"], abs=1e-3)
    assert got["utilization"] == pytest.approx(want["utilization"], abs=1e-4)
    assert got["makespan"] == pytest.approx(want["makespan"], abs=1e-2)


def test_easy_backfills_where_fcfs_waits(tmp_path):
    trace = workload.read_trace(KTH)
    nodes, cores, jobs = workload.fit(trace, None, None)
    fcfs = workload.replay_trace(tmp_path / "a", jobs, nodes, cores, policy="fcfs")
    easy = workload.replay_trace(tmp_path / "b", jobs, nodes, cores, policy="easy")
    assert easy["wait_mean"] < fcfs["wait_mean"]


def swf(tmp_path, lines, header="; MaxNodes: 4\n; MaxProcs: 8\n"):
    path = tmp_path / "t.swf"
    path.write_text(header + "".join(line + "\n" for line in lines))
    return str(path)


def job_line(num, submit, run, procs, req):
    return f"{num} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 -1 -1 -1 -1"


def test_cli_json_summary(flux, tmp_path):
    path = swf(tmp_path, [job_line(1, 0, 100, 8, 200), job_line(2, 10, 50, 2, 100), job_line(3, 20, 500, 2, 60)])
    out = json.loads(flux.out("replay", "--json", path))
    # 4 nodes x 2 cores from the header; job 2 waits for job 1 (90 s), job 3 times out at 60 s
    assert (out["nodes"], out["cores_per_node"], out["policy"]) == (4, 2, "fcfs")
    assert out["results"] == {"COMPLETED": 2, "TIMEOUT": 1}
    assert out["wait_max"] == 90.0
    assert out["makespan"] == 160.0
    assert out["wait_mean"] == pytest.approx((0 + 90 + 80) / 3, abs=1e-3)


def test_cli_text_and_options(flux, tmp_path):
    path = swf(tmp_path, [job_line(i, i * 10, 30, 1, 60) for i in range(1, 6)], header="")
    out = flux.out("replay", "--nodes=2", "--cores-per-node=1", "--limit=3", "--policy=easy", path)
    assert out.splitlines()[1] == "instance:         2 nodes x 1 cores, policy easy, virtual clock"
    assert out.splitlines()[2] == "jobs:             3 replayed (skipped: none)"
    assert "results:          COMPLETED 3" in out


def test_cli_keep_leaves_an_instance(flux, tmp_path):
    path = swf(tmp_path, [job_line(1, 0, 30, 1, 60)])
    keep = tmp_path / "kept"
    flux("replay", f"--keep={keep}", path)
    # the job is the trace's user's (user number 1), not the owner's
    listing = flux.out("--state-dir", str(keep), "jobs", "-a", "-A", "-no", "{name} {result} {userid}")
    assert listing.strip() == "swf1 COMPLETED 1"
    assert flux.out("--state-dir", str(keep), "jobs", "-a", "-n").strip() == ""
    r = flux.fails("replay", f"--keep={keep}", path)
    assert "already exists" in r.stderr


@pytest.mark.parametrize("content,message", [
    ("1 2 3\n", "t.swf:1: expected 18 fields, got 3"),
    ("1 0 -1 x 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "t.swf:1: fields must be numbers"),
    ("; only a header\n", "no replayable jobs in trace"),
    ("1 0 -1 nan 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", "fields must be finite numbers"),
])
def test_cli_bad_traces(flux, tmp_path, content, message):
    path = tmp_path / "t.swf"
    path.write_text(content)
    r = flux.fails("replay", "--nodes=1", str(path))
    assert message in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_cli_missing_and_oversized(flux, tmp_path):
    r = flux.fails("replay", str(tmp_path / "nope.swf"))
    assert r.stderr == f"flux-lite replay: ERROR: {tmp_path / 'nope.swf'}: No such file or directory\n"
    path = swf(tmp_path, [job_line(1, 0, 30, 64, 60)])
    r = flux.fails("replay", path)
    assert "no job of the trace fits the instance" in r.stderr


def test_gzip_trace(tmp_path):
    import gzip

    path = tmp_path / "t.swf.gz"
    with gzip.open(path, "wt") as f:
        f.write("; MaxNodes: 2\n" + job_line(1, 5, 10, 1, 20) + "\n")
    trace = workload.read_trace(str(path))
    assert trace.max_nodes == 2 and trace.jobs[0].procs == 1 and trace.jobs[0].submit == 5


# -- the replay is what a script of commands would do ---------------------------------------


def per_command(state, jobs, nodes, cores, policy):
    """The trace as a script of commands replays it: per job, a clock advance
    to its submit time and a submit, each its own command (transaction, job
    manager, scheduler loaded from its stored state); then clock advances
    until every job is inactive."""
    from flux_lite.instance import Instance
    from flux_lite.job_manager import index

    inst = Instance.create(state, config={"sched": {"policy": policy}}, size=nodes, cores=cores,
                           clock="virtual")
    try:
        start, t0 = inst.clock_now(), jobs[0].submit
        for job in jobs:
            delta = start + job.submit - t0 - inst.clock_now()
            if delta > 0:
                inst.advance_clock(delta)
            with inst.session() as broker:
                broker.jm.submit(workload.jobspec_for(job), userid=workload.userid_for(job, inst.owner))
        while index.active_count(inst.kvs.conn):
            inst.advance_clock(7 * 86400.0)
    finally:
        inst.close()


def job_keys(state):
    """Every job's KVS keys (eventlog, jobspec, R, J) and its index row's
    times and result. Eventlog entries are compared decoded: a command
    annotates the pending jobs once, as it ends, so between commands a
    reserved job carries sched.selection_type before its alloc event merges
    resource_summary in, while within one replay it does not, and the two
    keys of that annotation come out in the other order."""
    import sqlite3

    from flux_lite.kvs import decode_value

    conn = sqlite3.connect(str(Path(state) / "kvs.sqlite"))
    try:
        values = ((key, decode_value(key, kind, value)[1]) for key, kind, value
                  in conn.execute("SELECT key, kind, value FROM kvs WHERE key LIKE 'job.%' ORDER BY key"))
        kvs = [(key, [json.loads(line) for line in value.splitlines()] if key.endswith(".eventlog") else value)
               for key, value in values]
        rows = conn.execute("SELECT id, state, t_submit, t_run, t_inactive, result, R FROM jobs ORDER BY id")
        return kvs, rows.fetchall()
    finally:
        conn.close()


def random_trace(seed, n):
    """n jobs on 4 nodes of 4 cores: sizes 1-16, run times short and long,
    some running past their limit, arrivals in bursts and gaps."""
    import random

    rng = random.Random(seed)
    t, jobs = 0.0, []
    for num in range(1, n + 1):
        t += rng.choice([0, 0, 1, 5, 30, 120, 600])
        procs = rng.choice([1, 1, 2, 3, 4, 6, 8, 12, 16])
        limit = rng.choice([60, 300, 900, 3600])
        run = rng.choice([limit * 0.2, limit * 0.5, limit * 0.9, limit * 1.5, 0])
        jobs.append(workload.TraceJob(num=num, submit=t, run=run, procs=procs, req_time=limit,
                                      user=rng.choice([1, 2, -1]), wait=-1))
    return jobs


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_replay_is_what_commands_would_do(tmp_path, policy):
    """One replay command leaves the same eventlogs, jobspecs, R and results
    as a command per submit and per clock advance: the replay's shortcuts
    (one transaction, resumed scheduling passes) change no decision."""
    for seed in (1, 2):
        jobs = random_trace(seed, 60)
        a, b = tmp_path / f"replay{seed}", tmp_path / f"commands{seed}"
        got = workload.replay_trace(a, jobs, 4, 4, policy=policy)
        per_command(b, jobs, 4, 4, policy)
        assert got["jobs"] == 60 and got["wait_max"] > 0  # the instance was busy
        assert job_keys(a) == job_keys(b)


# the whole KTH SP2 trace of the Parallel Workloads Archive (KTH-SP2-1996-2.swf.gz),
# if FLUX_LITE_FULL_TRACE names it: about 30 s
FULL_KTH = os.environ.get("FLUX_LITE_FULL_TRACE", "")


@pytest.mark.skipif(not os.path.isfile(FULL_KTH), reason="FLUX_LITE_FULL_TRACE names no KTH SP2 trace")
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_full_kth_trace_matches_reference_simulator(tmp_path, policy):
    """All 28,489 jobs of the KTH SP2 trace, against the simulator above."""
    trace = workload.read_trace(FULL_KTH)
    nodes, cores, jobs = workload.fit(trace, None, None)
    assert (nodes, cores, len(jobs)) == (100, 1, 28489)
    got = workload.replay_trace(tmp_path / "state", jobs, nodes, cores, policy=policy)
    want = expected_summary(jobs, nodes, policy)
    assert got["jobs"] == got["started"] == 28489
    assert got["wait_mean"] == pytest.approx(want["wait_mean"], abs=1e-3)
    assert got["utilization"] == pytest.approx(want["utilization"], abs=1e-4)
    assert got["makespan"] == pytest.approx(want["makespan"], abs=1e-2)


def test_cli_progress_on_a_tty_only(flux, tmp_path, monkeypatch):
    """A bar of finished jobs on stderr when it is a terminal; nothing extra when piped."""
    import flux_lite.cli.output as output

    path = swf(tmp_path, [job_line(i, i * 10, 30, 1, 60) for i in range(1, 13)])
    monkeypatch.setattr(workload, "FLUSH_EVERY", 4)
    monkeypatch.setattr(output, "PROGRESS_MIN", 5)
    piped = flux("replay", "--json", path)
    assert piped.stderr == ""
    monkeypatch.setattr(output, "is_tty", lambda stream=None: True)
    shown = flux("replay", "--json", path)
    assert "replaying" in shown.stderr and "12/12" in shown.stderr
    assert json.loads(shown.stdout) == json.loads(piped.stdout)


def test_submitting_for_another_user_is_the_owners(tmp_path, monkeypatch):
    """The replay submits as the trace's users; only the owner may do that."""
    from flux_lite.errors import FluxLiteError
    from flux_lite.formats.jobid import kvs_key
    from flux_lite.instance import Instance

    jobs = random_trace(3, 2)
    inst = Instance.create(tmp_path / "s", size=4, cores=4, clock="virtual")
    try:
        with inst.session() as broker:
            jobid = broker.jm.submit(workload.jobspec_for(jobs[0]), userid=77)
        assert inst.kvs.get_eventlog(kvs_key(jobid, "eventlog"))[0]["context"]["userid"] == 77
        monkeypatch.setenv("FLUX_HANDLE_USERID", "1234")
        guest = Instance.open(tmp_path / "s")
        try:
            with pytest.raises(FluxLiteError, match="only the instance owner can submit on behalf"):
                with guest.session() as broker:
                    broker.jm.submit(workload.jobspec_for(jobs[1]), userid=77)
            with guest.session() as broker:  # as oneself, as ever
                broker.jm.submit(workload.jobspec_for(jobs[1]), userid=1234)
        finally:
            guest.close()
    finally:
        inst.close()



def test_submission_text_is_what_json_writes_of_the_built_jobspec():
    """The replay's jobspec (built in place) and its text (from a template) are
    jobspec.build's and json.dumps's, for ordinary and odd trace values; the
    odd ones the template cannot take are built and left to be encoded."""
    import random

    from flux_lite.formats import jobspec as jobspecmod

    rng = random.Random(5)
    jobs = [workload.TraceJob(num=rng.choice([1, 9, 10, 28489, 10**12]), submit=0.0,
                              run=rng.choice([0, 0.5, 1, 59.999, 1e7, 123456789.0, 3e-5]),
                              procs=rng.choice([1, 2, 100, 10**6]),
                              req_time=rng.choice([0, 1, 0.25, 3600, 1e9, 86400.5]), user=-1, wait=-1)
            for _ in range(300)]
    jobs.append(workload.TraceJob(num=1, submit=0.0, run=5, procs=0, req_time=60, user=-1, wait=-1))
    texts = 0
    for job in jobs:
        run = f"{job.run:g}s" if job.run > 0 else "1ms"
        want = jobspecmod.build(["swf", str(job.num)], ntasks=job.procs, duration=float(job.limit),
                                name=f"swf{job.num}", setattrs=[("exec.test.run_duration", run)], check=False)
        js, text = workload.submission_for(job)
        assert js == want and workload.jobspec_for(job) == want
        if text is not None:
            texts += 1
            assert text == json.dumps(want)
    assert texts == 300  # (procs 0 is built: the template does not take it)


@pytest.mark.parametrize("default_queue", [False, True])
def test_given_jobspec_text_is_stored_only_for_the_jobspec_as_given(tmp_path, default_queue):
    """The text a replay hands to submit is what is stored, unless ingest
    changed the jobspec (a default queue): then the changed one is encoded."""
    from flux_lite.formats.jobid import kvs_key
    from flux_lite.instance import Instance

    config = {"queues": {"batch": {}}, "policy": {"jobspec": {"defaults": {"system": {"queue": "batch"}}}}} \
        if default_queue else {}
    job = random_trace(4, 1)[0]
    js, text = workload.submission_for(job)
    inst = Instance.create(tmp_path / "s", config=config, size=4, cores=4, clock="virtual")
    try:
        with inst.session() as broker:
            jobid = broker.jm.submit(js, text=text)
        stored = inst.kvs.get_raw(kvs_key(jobid, "jobspec"))[1]
    finally:
        inst.close()
    want = dict(js, attributes={"system": dict(js["attributes"]["system"], queue="batch")}) if default_queue else js
    assert stored == json.dumps(want)
    assert (stored == text) is not default_queue


def test_replay_keeps_no_statement_journal_file(tmp_path, monkeypatch):
    """The index rows a replay writes as jobs finish go in by an upsert: an
    INSERT OR REPLACE made SQLite keep statement journals, which spilled to a
    temporary file (``etilqs_*``) and took four of every five page writes."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    from flux_lite.job_manager import index

    seen = []

    flush = index.JobIndex.flush_inactive

    def watching(self):
        n = flush(self)
        for fd in os.listdir("/proc/self/fd"):
            try:
                seen.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return n
    monkeypatch.setattr(index.JobIndex, "flush_inactive", watching)
    jobs = random_trace(5, 3000)
    workload.replay_trace(tmp_path / "state", jobs, 4, 4, policy="easy")
    assert seen and not [p for p in seen if "etilqs" in p], seen


@pytest.mark.parametrize("sabotage", [False, True])
def test_outcomes_collected_as_rows_are_written_are_the_indexs(tmp_path, monkeypatch, sabotage):
    """The replay summarises the outcomes collected as the finished jobs'
    rows are written: they are what the index's rows give, job for job and
    in its order (completed, timed out, zero-length runs). Should a job's
    row not have been collected, the summary reads the index instead."""
    from flux_lite.job_manager.index import JobIndex

    taken = []
    real = workload._outcomes

    def outcomes(inst, collected=None):
        taken.append(collected is not None)
        got = list(real(inst, collected))
        assert got == list(real(inst))
        return got

    monkeypatch.setattr(workload, "_outcomes", outcomes)
    if sabotage:
        flush = JobIndex.flush_inactive

        def lossy(self):
            count = flush(self)
            if self.outcomes:
                self.outcomes.pop(0)
            return count

        monkeypatch.setattr(JobIndex, "flush_inactive", lossy)
    results = {}
    for seed, policy in ((3, "fcfs"), (4, "easy")):
        got = workload.replay_trace(tmp_path / f"s{seed}", random_trace(seed, 80), 4, 4, policy=policy)
        assert got["jobs"] == 80
        for name, count in got["results"].items():
            results[name] = results.get(name, 0) + count
    assert results["COMPLETED"] and results["TIMEOUT"]
    assert taken == [not sabotage] * 2


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_replay_holds_a_batch_of_log_lines_and_scheduler_ids(tmp_path, monkeypatch, policy):
    """A replay writes the log lines (sched-backfill logs every job it
    starts and frees) with each batch of finished jobs, and the scheduler's
    row maps forget a job queued, allocated and freed within the command:
    what is held stays near a batch, and the log, the scheduler's tables
    and the summary are what one write at the end gives."""
    from flux_lite import broker as brokermod
    from flux_lite.instance import Instance
    from flux_lite.sched import store as storemod

    def run(name, batch):
        monkeypatch.setattr(workload, "FLUSH_EVERY", batch)
        monkeypatch.setattr(brokermod, "FLUSH_BATCH", batch)
        seen = {"log": 0, "ids": 0}
        orig_set = storemod.LazyRows.__setitem__

        def setitem(self, jobid, rec):
            orig_set(self, jobid, rec)
            # (the ids remembered besides the records held)
            seen["ids"] = max(seen["ids"], len(self.dirty - self._d.keys()) + len(self._gone))

        monkeypatch.setattr(storemod.LazyRows, "__setitem__", setitem)
        orig_log = Instance.log

        def log(self, *args, **kw):
            orig_log(self, *args, **kw)
            seen["log"] = max(seen["log"], len(self._log))

        monkeypatch.setattr(Instance, "log", log)
        summary = workload.replay_trace(tmp_path / name, random_trace(5, 200), 4, 4, policy=policy)
        monkeypatch.undo()
        inst = Instance.open(str(tmp_path / name))
        try:
            conn = inst.kvs.conn
            tables = [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                      for t in ("sched_alloc", "sched_queue", "sched_rank")]
            return summary, inst.read_log(), tables, seen
        finally:
            inst.close()

    small, small_log, small_tables, held = run("small", 8)
    whole, whole_log, whole_tables, _ = run("whole", 10**9)
    assert small == whole and small_log == whole_log and small_tables == whole_tables
    assert small["jobs"] == 200
    if policy == "easy":  # (its debug lines: a start and a free per job at least)
        assert sum(row[3].startswith("free: ") for row in small_log) == 200
    # lines of a batch of jobs, those of the jobs ending at one instant
    # and of a scheduling pass; no id of a job gone from the scheduler
    assert held["log"] <= 200, held
    assert held["ids"] == 0, held
