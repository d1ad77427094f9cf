"""Workload studies: per-job rows, the replay's SWF, time series and policy
comparisons, each checked against an independent computation on the shipped
400-job KTH SP2 trace (the summary recomputed from the rows, the SWF re-read
by the replay's own reader, the series recounted from the rows)."""

import csv
import json
import statistics
from pathlib import Path

import pytest

from flux_lite import study, workload, workload_results

DATA = Path(__file__).parent / "data"
KTH = str(DATA / "kth-sp2-first400.swf")
NUMERIC = ("submit", "start", "end", "wait", "run", "requested_time", "bounded_slowdown")


def read_rows(path):
    """The per-job rows of a CSV or JSON lines file, numbers as floats."""
    text = Path(path).read_text()
    if str(path).endswith(".jsonl"):
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        rows = list(csv.DictReader(text.splitlines()))
        for r in rows:
            for k in NUMERIC:
                r[k] = float(r[k]) if r[k] != "" else None
            for k in ("trace_id", "requested_cores", "cores", "nodes"):
                r[k] = int(r[k])
            r["queue"] = r["queue"] or None
    return rows


def summary_of_rows(rows, total_cores):
    """The summary's figures, computed here from the rows alone."""
    started = [r for r in rows if r["start"] is not None]
    waits = sorted(r["wait"] for r in started)
    makespan = max(r["end"] for r in started) - min(r["submit"] for r in rows)
    busy = sum((r["end"] - r["start"]) * r["cores"] for r in started)

    def pct(p):
        return waits[min(len(waits) - 1, int(round(p / 100 * (len(waits) - 1))))]

    per_user = {}
    for r in started:
        per_user.setdefault(r["user"], []).append(r["wait"])
    results = {}
    for r in rows:
        results[r["result"]] = results.get(r["result"], 0) + 1
    return {
        "jobs": len(rows), "started": len(started), "makespan": makespan,
        "utilization": busy / (total_cores * makespan),
        "wait_mean": statistics.fmean(waits), "wait_p50": pct(50), "wait_p90": pct(90), "wait_p95": pct(95),
        "wait_p99": pct(99), "wait_max": waits[-1],
        "bounded_slowdown_mean": statistics.fmean(max(1.0, (r["wait"] + r["run"]) / max(r["run"], 10.0))
                                                  for r in started),
        "user_wait_mean_max": max(statistics.fmean(w) for w in per_user.values()),
        "results": dict(sorted(results.items())),
    }


def assert_summary(got, want):
    assert got["results"] == want.pop("results")
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-3), key


@pytest.mark.parametrize("policy,ext", [("fcfs", "csv"), ("easy", "jsonl"), ("conservative", "csv")])
def test_jobs_out_rows_give_the_summary(flux, tmp_path, policy, ext):
    out = tmp_path / f"jobs.{ext}"
    summary = json.loads(flux.out("replay", f"--policy={policy}", "--json", f"--jobs-out={out}", KTH))
    rows = read_rows(out)
    assert len(rows) == 400 and sorted(r["trace_id"] for r in rows) == list(range(1, 401))
    assert_summary(summary, summary_of_rows(rows, 100))
    trace = {j.num: j for j in workload.read_trace(KTH).jobs}
    for r in rows:
        job = trace[r["trace_id"]]
        # the trace's own time axis: the trace submit time, its user, its request
        assert (r["submit"], r["user"], r["requested_cores"], r["requested_time"]) == \
               (job.submit, f"user{job.user}", job.procs, job.limit)
        assert r["wait"] == r["start"] - r["submit"] and r["run"] == r["end"] - r["start"]
        assert r["run"] == (job.run if r["result"] == "COMPLETED" else job.limit)
        assert r["cores"] == r["nodes"] == job.procs  # one-core nodes
        assert r["jobid"].startswith("f") and r["queue"] is None


def test_csv_and_jsonl_rows_agree(flux, tmp_path):
    flux("replay", "--limit=120", f"--jobs-out={tmp_path / 'a.csv'}", KTH)
    flux("replay", "--limit=120", f"--jobs-out={tmp_path / 'a.jsonl'}", KTH)
    assert read_rows(tmp_path / "a.csv") == read_rows(tmp_path / "a.jsonl")
    head = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert head == ",".join(workload_results.JOB_FIELDS)


def test_swf_out_reread_by_the_replays_reader(flux, tmp_path):
    swf, rows = tmp_path / "out.swf", tmp_path / "jobs.csv"
    flux("replay", "--policy=easy", f"--swf-out={swf}", f"--jobs-out={rows}", KTH)
    again, orig = workload.read_trace(str(swf)), workload.read_trace(KTH)
    by_id = {r["trace_id"]: r for r in read_rows(rows)}
    assert [j.num for j in again.jobs] == [j.num for j in orig.jobs]  # submit order, as the trace's
    assert (again.max_nodes, again.max_procs, again.skipped) == (100, 100, {"no_procs": 0, "no_runtime": 0})
    for new, old in zip(again.jobs, orig.jobs):
        r = by_id[old.num]
        assert (new.submit, new.procs, new.req_time, new.user, new.group, new.queue, new.partition) == \
               (old.submit, old.procs, old.req_time, old.user, old.group, old.queue, old.partition)
        assert (new.wait, new.run) == (r["wait"], r["run"])
    lines = [ln.split() for ln in swf.read_text().splitlines() if not ln.startswith(";")]
    status = {"COMPLETED": "1", "TIMEOUT": "0"}
    assert [ln[10] for ln in lines] == [status[by_id[int(ln[0])]["result"]] for ln in lines]
    assert "; Computer: flux-lite replay, policy easy, 100 nodes x 1 cores" in swf.read_text()


def test_spilled_outputs_are_the_ones_held_in_memory(tmp_path, monkeypatch):
    """The SWF and series sorted through temporary files (runs of 7 records)
    are those sorted in memory."""
    outs = {}
    for chunk in (7, 10**6):
        monkeypatch.setattr(workload_results.Spill, "CHUNK", chunk)
        d = tmp_path / str(chunk)
        d.mkdir()
        study.replay_point(KTH, "easy", limit=150, swf_out=str(d / "t.swf"), series_out=str(d / "s.csv"))
        outs[chunk] = ((d / "t.swf").read_text(), (d / "s.csv").read_text())
    assert outs[7] == outs[10**6]


def counts_at(rows, t):
    """(running, busy cores, pending, pending cores) just after time t, from the rows."""
    run = [r for r in rows if r["start"] <= t < r["end"]]
    pend = [r for r in rows if r["submit"] <= t < r["start"]]
    return len(run), sum(r["cores"] for r in run), len(pend), sum(r["requested_cores"] for r in pend)


@pytest.mark.parametrize("step", [None, "1h"])
def test_series_out_recounted_from_the_rows(flux, tmp_path, step):
    rows_path, series_path = tmp_path / "jobs.csv", tmp_path / "series.csv"
    opts = [f"--series-step={step}"] if step else []
    flux("replay", "--policy=fcfs", "--limit=200", f"--jobs-out={rows_path}", f"--series-out={series_path}",
         *opts, KTH)
    rows = read_rows(rows_path)
    series = list(csv.DictReader(series_path.read_text().splitlines()))
    assert list(series[0]) == list(workload_results.SERIES_FIELDS)
    times = [float(s["time"]) for s in series]
    if step is None:  # one row per time something changed, in order
        changes = sorted({r[k] for r in rows for k in ("submit", "start", "end")})
        assert times == changes
    else:
        assert times == [i * 3600.0 for i in range(len(times))]
        assert times[-1] >= max(r["end"] for r in rows) > times[-2]
    for s in series:
        t = float(s["time"])
        want = counts_at(rows, t)
        got = (int(s["running"]), int(s["busy_cores"]), int(s["pending"]), int(s["pending_cores"]))
        assert got == want, t
        assert float(s["utilization"]) == pytest.approx(want[1] / 100)


def test_per_job_rows_are_written_as_jobs_finish(tmp_path, monkeypatch):
    """The rows reach the file during the replay, and only the active jobs
    are held: a trace of a million jobs does not hold a million rows."""
    import random

    monkeypatch.setattr(workload, "FLUSH_EVERY", 64)
    rng = random.Random(7)
    jobs = [workload.TraceJob(num=i, submit=i * 20.0, run=rng.choice([30, 60, 300]), procs=rng.choice([1, 2, 4]),
                              req_time=600, user=rng.choice([1, 2, 3]), wait=-1) for i in range(1, 3001)]
    path = tmp_path / "jobs.jsonl"
    results = workload_results.Results(jobs_out=str(path))
    seen = []

    def progress(done, total):
        seen.append((done, path.stat().st_size, len(results._active)))

    try:
        workload.replay_trace(tmp_path / "s", jobs, 4, 4, policy="easy", progress=progress, results=results)
    finally:
        results.close()
    assert len(read_rows(path)) == 3000
    sizes = [size for done, size, _ in seen if done < 2000]
    assert sizes[-1] > 100_000  # most rows were on disk long before the end
    assert max(active for _, _, active in seen) < 200


def test_comparison_equals_the_single_policy_runs(flux, tmp_path):
    policies = ["fcfs", "easy", "conservative"]
    both = json.loads(flux.out("replay", "--policy=" + ",".join(policies), "-j", "2", "--json", "--limit=250",
                               f"--jobs-out={tmp_path / 'all.csv'}", KTH))
    assert list(both) == sorted(policies)
    for p in policies:
        one = json.loads(flux.out("replay", f"--policy={p}", "--json", "--limit=250",
                                  f"--jobs-out={tmp_path / p}.csv", KTH))
        assert both[p] == one
        assert (tmp_path / f"all.{p}.csv").read_text() == (tmp_path / f"{p}.csv").read_text()
    text = flux.out("replay", "--policy=fcfs,easy", "--limit=250", KTH).splitlines()
    assert text[0] == "trace:     kth-sp2-first400.swf (skipped: none)"
    assert text[3].split() == ["fcfs", "easy"]
    wait = next(line.split() for line in text if line.startswith("wait mean"))
    assert wait[2:] == [f"{both['fcfs']['wait_mean']:.0f}s", f"{both['easy']['wait_mean']:.0f}s"]


@pytest.mark.parametrize("args,code,message", [
    (["--policy=fcfs,nope"], 2, "invalid choice: 'nope'"),
    (["--policy=easy,easy"], 2, "names a policy twice"),
    (["--policy=fcfs,easy", "--keep=/tmp/x"], 2, "--keep keeps one instance"),
    (["--jobs-out=/nonexistent/dir/jobs.csv"], 1, "/nonexistent/dir/jobs.csv: No such file or directory"),
    (["--queue-map=a=b"], 1, "--queue-map: 'a' is not a number"),
    (["--plot=out.txt"], 1, "--plot: out.txt: the name must end in .svg, .png, .pdf"),
    (["--series-out=/tmp/never.csv", "--series-step=0"], 1, "--series-step must be a positive, finite duration"),
    (["--series-out=/tmp/never.csv", "--series-step=inf"], 1, "--series-step must be a positive, finite duration"),
    (["--series-step=1h"], 2, "--series-step samples the series of --series-out"),
])
def test_bad_study_options_are_one_line(flux, args, code, message):
    r = flux.fails("replay", *args, KTH, code=code)
    assert message in r.stderr and "Traceback" not in r.stderr
    assert code == 2 or r.stderr.count("\n") == 1


def test_nodes_alone_keeps_the_headers_cores_per_node(flux, tmp_path):
    """--nodes without --cores-per-node: MaxProcs / MaxNodes of the header
    (KTH SP2: 100 / 100 = 1), not MaxProcs / --nodes."""
    out = json.loads(flux.out("replay", "--nodes=50", "--limit=20", "--json", KTH))
    assert (out["nodes"], out["cores_per_node"]) == (50, 1)
    header = "; MaxNodes: 4\n; MaxProcs: 16\n"
    path = tmp_path / "t.swf"
    path.write_text(header + "1 0 -1 30 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n")
    out = json.loads(flux.out("replay", "--nodes=2", "--json", path))
    assert (out["nodes"], out["cores_per_node"]) == (2, 4)
    path.write_text("1 0 -1 30 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n")  # no header: one core a node
    out = json.loads(flux.out("replay", "--nodes=3", "--json", path))
    assert (out["nodes"], out["cores_per_node"]) == (3, 1)


@pytest.mark.parametrize("users", ["synthetic", "local"])
def test_trace_users_named(flux, tmp_path, users):
    """Trace user N is userN in the rows and in the kept instance, whatever
    local user has uid N, unless --users=local."""
    import pwd

    keep, rows = tmp_path / "kept", tmp_path / "jobs.csv"
    flux("replay", f"--users={users}", f"--keep={keep}", f"--jobs-out={rows}", "--limit=12", KTH)
    listing = flux.out("--state-dir", keep, "jobs", "-a", "-A", "-c", "0", "-no", "{name} {username} {userid}")
    got = {line.split()[0]: line.split()[1:] for line in listing.splitlines()}
    trace = workload.read_trace(KTH, limit=12).jobs

    def name(uid):
        if users == "synthetic":
            return f"user{uid}"
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)

    assert got == {f"swf{j.num}": [name(j.user), str(j.user)] for j in trace}
    assert {r["trace_id"]: r["user"] for r in read_rows(rows)} == {j.num: name(j.user) for j in trace}
    if users == "synthetic":  # -u takes the names too
        mine = flux.out("--state-dir", keep, "jobs", "-a", "-u", "user9", "-no", "{name}").split()
        assert mine == [f"swf{j.num}" for j in trace if j.user == 9][::-1]


QUEUES = """
[queues.debug]
policy.limits.duration = "2m"
[queues.batch]
[policy.jobspec.defaults.system]
queue = "batch"
[sched]
policy = "easy"
queue-depth = 4
"""


def test_config_and_queue_map(flux, tmp_path):
    """--config: the configuration's queues (started, as `queue start --all`),
    limits, default queue and policy; --queue-map sends trace queue numbers to
    them; a job over its queue's limit is refused and counted."""
    (tmp_path / "q.toml").write_text(QUEUES)
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 4\n; MaxProcs: 8\n"
                    "1 0 -1 30 2 -1 -1 2 60 -1 1 1 1 -1 0 -1 -1 -1\n"
                    "2 5 -1 100 4 -1 -1 4 300 -1 1 2 1 -1 0 -1 -1 -1\n"   # debug allows 2m: refused
                    "3 6 -1 100 8 -1 -1 8 300 -1 1 2 1 -1 1 -1 -1 -1\n"
                    "4 7 -1 10 1 -1 -1 1 30 -1 1 3 1 -1 -1 -1 -1 -1\n")   # no entry: the default queue
    rows, keep = tmp_path / "jobs.csv", tmp_path / "kept"
    out = json.loads(flux.out("replay", f"--config={tmp_path / 'q.toml'}", "--queue-map=0=debug,1=batch",
                              f"--jobs-out={rows}", f"--keep={keep}", "--json", path))
    assert out["policy"] == "easy" and out["skipped"]["rejected"] == 1
    assert out["results"] == {"COMPLETED": 3}
    got = [(r["trace_id"], r["queue"], r["start"]) for r in read_rows(rows)]
    # in the order they finished; easy backfills job 4 before job 3's reservation
    assert got == [(4, "batch", 7.0), (1, "debug", 0.0), (3, "batch", 30.0)]
    assert flux.out("--state-dir", keep, "config", "get", "sched.queue-depth").strip() == "4"
    # --policy overrides the configuration's
    assert json.loads(flux.out("replay", f"--config={tmp_path / 'q.toml'}", "--policy=fcfs", "--json",
                               path))["policy"] == "fcfs"


def test_config_errors_are_one_line(flux, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[sched]\npolcy = 'easy'\n")
    r = flux.fails("replay", f"--config={bad}", KTH)
    assert r.stderr.count("\n") == 1 and "polcy" in r.stderr
    r = flux.fails("replay", "--config=/nonexistent.toml", KTH)
    assert r.stderr.count("\n") == 1 and "/nonexistent.toml" in r.stderr


@pytest.mark.parametrize("ext,magic", [("svg", b"<?xml"), ("png", b"\x89PNG")])
def test_plot_file_is_drawn(flux, tmp_path, ext, magic):
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    out = tmp_path / f"study.{ext}"
    flux("replay", "--policy=fcfs,easy", "--limit=150", f"--plot={out}", KTH)
    data = out.read_bytes()
    assert data.startswith(magic) and len(data) > 10_000
    if ext == "svg":
        assert b"<svg" in data


def test_plot_without_matplotlib_is_one_line_and_replays_nothing(flux, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    rows = tmp_path / "jobs.csv"
    r = flux.fails("replay", f"--plot={tmp_path / 'p.svg'}", f"--jobs-out={rows}", KTH)
    assert r.stderr == "flux-lite replay: ERROR: --plot needs matplotlib: pip install 'flux-lite[plot]'\n"
    assert not rows.exists() and not (tmp_path / "p.svg").exists()


def test_readme_replay_section_runs_verbatim(tmp_path):
    """The README's replay examples, run as printed from a checkout's root
    (the shipped trace at tests/data/)."""
    import shutil
    import subprocess

    from test_readme_script import ONE_BLOCK, flux_lite_env, readme_block

    if shutil.which("sh") is None:
        pytest.skip("needs a POSIX shell")
    exe, env = flux_lite_env(tmp_path)
    (tmp_path / "tests" / "data").mkdir(parents=True)
    shutil.copy(KTH, tmp_path / "tests" / "data")
    script = readme_block("Replaying a workload", ONE_BLOCK)
    assert script.count("flux-lite ") == 7 and "tests/data/kth-sp2-first400.swf" in script
    r = subprocess.run(["sh", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "policy easy, virtual clock" in out and '"wait_mean":' in out
    assert any(line.split() == ["fcfs", "easy", "conservative"] for line in out.splitlines())
    assert any(line.split()[:3] == ["TRACE", "POLICY", "sched.queue-depth"] for line in out.splitlines())
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 401
    assert len(workload.read_trace(str(tmp_path / "easy.swf")).jobs) == 400
    assert (tmp_path / "series.csv").read_text().startswith("time,running,")
    assert out.rstrip().splitlines()[-6].split()[:2] == ["JOBID", "USER"]


def test_every_job_refused_is_one_line(flux, tmp_path):
    cfg = tmp_path / "q.toml"
    cfg.write_text('[queues.tiny]\npolicy.limits.duration = "1s"\n')
    r = flux.fails("replay", f"--config={cfg}", "--queue-map=-1=tiny", "--limit=5", KTH)
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith("flux-lite replay: ERROR: the instance refused every job of the trace (the first: ")
