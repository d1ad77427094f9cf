"""Python scheduler modules (flux.scheduler) hosted by flux-lite's broker:
`module load PATH.py`, each override point and response type, reload with
partial release, a module's errors, and flux-core's own modules (taken from a
flux-core source tree: FLUX_CORE_SRC or /work/flux-core-src; skipped without)."""

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TINY = HERE / "flux_modules" / "sched-tiny.py"
TRACE = HERE / "data" / "kth-sp2-first400.swf"


def flux_core_module(name):
    root = Path(os.environ.get("FLUX_CORE_SRC", "/work/flux-core-src"))
    path = root / "src" / "modules" / f"{name}.py"
    if not path.exists():
        pytest.skip(f"no flux-core source tree with {name}.py (set FLUX_CORE_SRC)")
    return path


@pytest.fixture
def fx(flux):
    flux("module", "remove", "sched-simple")
    return flux


def write_module(tmp_path, body, name="sched-test"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def ann(flux, jobid):
    return json.loads(flux.out("jobs", "-no", "{annotations}", jobid) or "{}")


def test_load_list_stats_remove(fx):
    fx("module", "load", TINY)
    rows = fx.out("module", "list", "-l").splitlines()
    assert [r.split()[0] for r in rows[1:]] == ["job-exec", "job-ingest", "job-list", "job-manager", "resource",
                                                "sched-tiny"]
    assert rows[-1].endswith(f"feasibi+ {TINY}")
    job = fx.submit("-n2", "-t", "10s", "sleep", "5")
    assert fx.state(job) == "RUN"
    assert ann(fx, job) == {"sched": {"resource_summary": "rank0/core[0-1]"}}
    stats = json.loads(fx.out("module", "stats", "sched-tiny"))
    assert stats["pending_jobs"] == 0
    assert "sched-tiny.info[0]: ready: queue-depth=8 log-level=info pool-class=Rv1Pool Rv1 rank[0-3]/core[0-1]" \
        in [line.split(" ", 1)[1] for line in fx.out("dmesg").splitlines()]
    fx("module", "remove", "sched-tiny")
    assert "sched-tiny" not in fx.out("module", "list")


def test_fifo_order_and_each_response_type(fx):
    fx("module", "load", TINY)
    huge = fx.submit("-n9", "true")
    assert fx.out("jobs", "-no", "{state} {result}", huge).split() == ["INACTIVE", "FAILED"]  # DENY
    assert "alloc" in [e["context"].get("type") for e in fx.events(huge) if e["name"] == "exception"]
    big = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "50")
    assert ann(fx, big) == {"sched": {"resource_summary": "rank[0-3]/core[0-1]"}}
    waiting = fx.submit("-n1", "-t", "10s", "true")
    assert ann(fx, waiting) == {"sched": {"reason_pending": "insufficient resources"}}  # ANNOTATE
    fx("cancel", waiting)  # CANCEL
    assert fx.out("jobs", "-no", "{result}", waiting).strip() == "CANCELED"
    fx.advance("60s")
    assert fx.out("jobs", "-no", "{result}", big).strip() == "COMPLETED"  # SUCCESS
    # success() clears what annotate() set
    later = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "50")
    nxt = fx.submit("-n1", "-t", "10s", "true")
    assert ann(fx, nxt) == {"sched": {"reason_pending": "insufficient resources"}}
    fx.advance("60s")
    assert fx.state(later) == "INACTIVE" and ann(fx, nxt) == {"sched": {"resource_summary": "rank0/core0"}}


def test_override_points_are_called(fx, tmp_path):
    mod = write_module(tmp_path, """
        import heapq
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def hello(self, jobid, priority, userid, t_submit, R):
                self.log.info(f"hello {R.dumps()}")
                super().hello(jobid, priority, userid, t_submit, R)
            def alloc(self, request, jobid, priority, userid, t_submit, jobspec):
                self.log.info(f"alloc priority={priority}")
                super().alloc(request, jobid, priority, userid, t_submit, jobspec)
            def free(self, jobid, R, final=False):
                self.log.info(f"free final={final}")
                super().free(jobid, R, final)
            def cancel(self, jobid):
                self.log.info("cancel")
                super().cancel(jobid)
            def expiration(self, msg, jobid, expiration):
                self.log.info(f"expiration {expiration - self.handle.reactor_now():.0f}")
                super().expiration(msg, jobid, expiration)
            def resource_update(self):
                self.log.info("resource_update")
            def forecast(self):
                for job in sorted(self._queue):
                    job.request.annotate({"sched": {"jobs_ahead": 0}})
                    yield
            def schedule(self):
                while self._queue and self._queue[0].priority > 0:
                    job = heapq.heappop(self._queue)
                    alloc = self.resources.alloc(job.jobid, job.resource_request)
                    alloc.set_starttime(self.handle.reactor_now())
                    alloc.set_expiration(self.handle.reactor_now() + job.resource_request.duration)
                    job.request.success(alloc)
                    yield

        def mod_main(h, *args):
            S(h, *args).run()
        """)
    fx("module", "load", mod)
    job = fx.submit("-n1", "-t", "100s", "sleep", "50")
    fx("update", job, "duration=200s")
    fx("module", "reload", "sched-test")  # hello: the running job
    held = fx.submit("--urgency=0", "true")
    fx("resource", "drain", "3")
    fx("cancel", job)
    lines = [line.split(": ", 1)[1] for line in fx.dmesg() if line.startswith("sched-test.info")]
    assert "alloc priority=16" in lines and "expiration 200" in lines
    assert "resource_update" in lines and "free final=True" in lines
    assert lines.count("hello rank0/core0") == 1  # the reload's (each command's own reload is quiet)
    assert fx.state(held) == "SCHED"


def test_debug_bits(fx):
    fx("module", "load", flux_core_module("sched-simple"))
    fx("module", "debug", "--setbit", "1", "sched-simple")
    job = fx.submit("true")
    assert fx.out("jobs", "-no", "{result}", job).strip() == "FAILED"
    assert [e["context"]["note"] for e in fx.events(job) if e["name"] == "exception"] == ["DEBUG_FAIL_ALLOC"]
    fx("module", "debug", "--clear", "sched-simple")
    assert fx.state(fx.submit("true")) == "INACTIVE"


def test_reload_with_running_and_housekeeping_partial_release(fx):
    """hello re-registers a running job, and a housekeeping allocation minus
    the ranks it released already (the free idset); the final free covers
    the rest."""
    hk = {"command": ["hk.sh"], "release-after": "0", "rank-durations": {"3": "10s"}}
    fx("config", "load", input=json.dumps({"job-manager": {"housekeeping": hk}}))
    fx("module", "load", TINY)
    done = fx.submit("-N4", "-n8", "--setattr=exec.test.run_duration=1s", "true")
    fx.advance("1s")
    run = fx.submit("-N1", "-n2", "-t", "100s", "sleep", "50")
    assert fx.out("housekeeping", "list", "-no", "{id.f58} {allocated.ranks}").split() == [done, "3"]
    fx("dmesg", "-C")
    fx("module", "reload", "sched-tiny")
    log = fx.dmesg()
    assert "job-manager.debug[0]: scheduler: hello +partial-ok" in log
    assert f"sched-tiny.info[0]: hello: {run}: rank0/core[0-1]" in log
    assert f"sched-tiny.info[0]: hello: {done}: rank3/core[0-1]" in log
    # ranks 1-2 are free; rank 3 once housekeeping ends (t=11), rank 0 once the job does (t=51)
    three = fx.submit("-N3", "-n6", "-t", "10s", "true")
    assert fx.state(three) == "SCHED"
    fx.advance("10s")
    assert fx.state(three) == "INACTIVE" and done not in fx.out("housekeeping", "list")
    four = fx.submit("-N4", "-n8", "-t", "10s", "true")
    fx.advance("20s")
    assert fx.state(four) == "SCHED"  # rank 0 is still the running job's
    fx.advance("20s")
    assert fx.state(run) == "INACTIVE" and fx.state(four) == "INACTIVE"
    assert fx("sched", "check").stdout == "sched check: ok\n"


def test_module_errors(fx, tmp_path):
    bad = write_module(tmp_path, "def mod_main(h, *args:\n    pass\n", name="sched-syntax")
    r = fx.fails("module", "load", bad)
    assert r.stderr.count("\n") == 1 and "SyntaxError" in r.stderr
    assert "Traceback" not in r.stderr and "sched-syntax" not in fx.out("module", "list")
    nomain = write_module(tmp_path, "import flux.brokermod\n", name="sched-nomain")
    r = fx.fails("module", "load", nomain)
    assert "no mod_main() or BrokerModule subclass found" in r.stderr
    boom = write_module(tmp_path, """
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def schedule(self):
                raise RuntimeError("oops")
                yield

        def mod_main(h, *args):
            S(h, *args).run()
        """, name="sched-boom")
    fx("module", "load", boom)
    r = fx("submit", "true")
    job = r.stdout.strip()
    assert "sched-boom: schedule raised: RuntimeError: oops" in r.stderr
    log = fx.dmesg()
    assert "sched-boom.err[0]: Traceback (most recent call last):" in log
    assert any(line.endswith('raise RuntimeError("oops")') for line in log)
    assert fx.state(job) == "SCHED"  # waits for the next scheduler
    assert "sched-boom" not in fx.out("module", "list")
    fx("module", "load", TINY)
    assert fx.state(job) == "INACTIVE"


def test_handler_exception_and_module_without_flux(fx, tmp_path, monkeypatch):
    from flux_lite.sched import hosted

    # as in a command's own process, where nothing imported flux.brokermod before the file
    monkeypatch.setattr(hosted, "_HOSTS", [])
    noflux = write_module(tmp_path, "def mod_main(h, *args):\n    pass\n", name="sched-noflux")
    r = fx.fails("module", "load", noflux)
    monkeypatch.undo()
    assert r.stderr == ("flux-lite module: ERROR: sched-noflux: the module does not use the flux package: a Python "
                        "module is written against flux.brokermod (import flux.scheduler or flux.brokermod)\n")
    boom = write_module(tmp_path, """
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def alloc(self, request, jobid, priority, userid, t_submit, jobspec):
                return {}["x"]

        def mod_main(h, *args):
            S(h, *args).run()
        """, name="sched-allocboom")
    fx("module", "load", boom)
    r = fx("submit", "true")
    assert r.stderr == ("flux-lite submit: warning: sched-allocboom: sched.alloc raised: KeyError: 'x' "
                        "(sched-allocboom.py:6); module exited (see flux dmesg)\n")
    log = fx.dmesg()
    tb = log[log.index("sched-allocboom.err[0]: Traceback (most recent call last):"):]
    assert not any("brokermod.py" in line for line in tb)
    assert 'sched-allocboom.err[0]:     return {}["x"]' in tb
    assert fx.state(r.stdout.strip()) == "SCHED"


def test_bad_R_and_double_response(fx, tmp_path):
    mod = write_module(tmp_path, """
        import heapq
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def schedule(self):
                while self._queue:
                    job = heapq.heappop(self._queue)
                    alloc = self.resources.alloc(job.jobid, job.resource_request)
                    if job.priority in (17, 18):  # a rank the instance lacks; a core another job holds
                        job.request.success({"version": 1, "execution": {"R_lite": [
                            {"rank": "9" if job.priority == 17 else "0", "children": {"core": "0"}}]}})
                    else:
                        job.request.success(alloc)
                        job.request.success(alloc)
                    yield

        def mod_main(h, *args):
            S(h, *args).run()
        """)
    fx("module", "load", mod)
    job = fx.submit("-n1", "true")
    assert fx.state(job) == "INACTIVE"
    assert any("dropped: the request was answered already" in line for line in fx.dmesg())
    badjob = fx.submit("--urgency=17", "true")
    assert fx.out("jobs", "-no", "{result}", badjob).strip() == "FAILED"
    note = [e for e in fx.events(badjob) if e["name"] == "exception"][0]["context"]["note"]
    assert note == "scheduler module sched-test: R holds resources the instance does not have (rank9/core0)"
    running = fx.submit("-n1", "sleep", "100")
    assert fx.state(running) == "RUN"
    clash = fx.submit("--urgency=18", "true")
    note = [e for e in fx.events(clash) if e["name"] == "exception"][0]["context"]["note"]
    assert note == "scheduler module sched-test: R holds resources allocated to other jobs (rank0/core0)"
    assert fx("sched", "check").stdout == "sched check: ok\n"


def test_replay_with_module_matches_native_fcfs(flux):
    simple = flux_core_module("sched-simple")
    native = json.loads(flux.out("replay", "--json", "--limit", "150", TRACE))
    hosted = json.loads(flux.out("replay", "--json", "--limit", "150", "--scheduler", simple, TRACE))
    assert hosted.pop("policy") == "sched-simple.py" and native.pop("policy") == "fcfs"
    assert hosted == native


@pytest.mark.parametrize("name", ["sched-fifo", "sched-backfill"])
def test_flux_core_modules_load_and_schedule(fx, name):
    fx("module", "load", flux_core_module(name))
    a = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "50")
    b = fx.submit("-N4", "-n8", "-t", "100s", "true")
    c = fx.submit("-n1", "-t", "10s", "true")
    assert fx.state(b) == "SCHED"
    assert fx.state(c) == "SCHED"
    t_est = ann(fx, b)["sched"]["t_estimate"]
    assert t_est == pytest.approx(fx.now() + 100, abs=1)  # the virtual clock, not the wall clock
    fx.advance("200s")
    assert {fx.state(j) for j in (a, b, c)} == {"INACTIVE"}


def test_readme_tutorial_runs_verbatim(tmp_path, monkeypatch, flux):
    readme = (HERE.parent / "README.md").read_text()
    section = readme.split("## Writing a scheduler module", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    commands = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tests" / "data" / TRACE.name).write_bytes(TRACE.read_bytes())
    (tmp_path / "sched-mine.py").write_text(code)
    assert 25 <= len(code.splitlines()) <= 40
    for line in commands.splitlines():
        args = line.split()
        assert args[0] == "flux-lite"
        out = flux.out(*args[1:])
    assert "jobs:             400 replayed" in out
    assert "results:          COMPLETED 394, TIMEOUT 6" in out
    # the same summary as the built-in fcfs (bench/sched_modules.py compares job by job)
    mine = json.loads(flux.out("replay", "--json", "--scheduler=./sched-mine.py", TRACE))
    native = json.loads(flux.out("replay", "--json", "--policy=fcfs", TRACE))
    assert mine.pop("policy") == "sched-mine.py" and native.pop("policy") == "fcfs"
    assert mine == native


def test_config_sched_module(flux_factory):
    fx = flux_factory("--test-size=2", "--test-cores=2",
                      config=f"sched:\n  module: {TINY}\n  module-args: ['queue-depth=unlimited']\n")
    assert fx.out("module", "list").splitlines()[-1].split()[0] == "sched-tiny"
    assert "sched-tiny.info[0]: ready: queue-depth=unlimited log-level=info pool-class=Rv1Pool Rv1 " \
           "rank[0-1]/core[0-1]" in fx.dmesg()
    job = fx.submit("-n1", "true")
    assert fx.state(job) == "INACTIVE"
    fx("module", "reload", "sched-tiny")  # the file again, with no arguments
    assert "sched-tiny.info[0]: ready: queue-depth=8 log-level=info pool-class=Rv1Pool Rv1 " \
           "rank[0-1]/core[0-1]" in fx.dmesg()


def test_replay_options_and_a_module_that_exits(flux, tmp_path):
    out = json.loads(flux.out("replay", "--json", "--limit", "20", "--scheduler", TINY,
                              "--module-args", "queue-depth=unlimited log-level=debug", TRACE))
    assert out["policy"] == "sched-tiny.py" and out["results"] == {"COMPLETED": 20}
    r = flux.fails("replay", "--module-args", "x", TRACE, code=2)
    assert r.stderr.endswith("flux-lite replay: error: --module-args needs --scheduler\n")
    boom = write_module(tmp_path, """
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def schedule(self):
                raise RuntimeError("oops")

        def mod_main(h, *args):
            S(h, *args).run()
        """, name="sched-boom")
    r = flux.fails("replay", "--limit", "5", "--scheduler", boom, TRACE)
    assert r.stderr.splitlines() == [
        "flux-lite replay: warning: sched-boom: schedule raised: RuntimeError: oops (sched-boom.py:6); "
        "module exited (see flux dmesg)",
        "flux-lite replay: ERROR: sched-boom.py: the scheduler module exited during the replay (its traceback "
        "is in the instance's log: replay with --keep=DIR, then flux-lite dmesg)"]


def test_handle_calls_kvs_and_job_raise(fx, tmp_path):
    mod = write_module(tmp_path, """
        import heapq

        import flux.kvs
        from flux.job import JobID, job_raise
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def schedule(self):
                while self._queue:
                    job = heapq.heappop(self._queue)
                    if job.priority == 20:
                        job_raise(self.handle, job.jobid, "policy", 0, "not today")
                        continue
                    alloc = self.resources.alloc(job.jobid, job.resource_request)
                    job.request.success(alloc)
                    txn = flux.kvs.KVSTxn(self.handle)
                    txn.put("test.last", {"id": JobID(job.jobid).f58})
                    txn.commit()
                    R = flux.kvs.get(self.handle, JobID(job.jobid).kvs + ".R")
                    self.log.info(f"R of {JobID(job.jobid).f58}: {R['execution']['R_lite']}")
                    yield

        def mod_main(h, *args):
            S(h, *args).run()
        """)
    fx("module", "load", mod)
    job = fx.submit("-n1", "true")
    assert fx.out("kvs", "get", "test.last").strip() == json.dumps({"id": job}, separators=(",", ":"))
    assert f"sched-test.info[0]: R of {job}: [{{'rank': '0', 'children': {{'core': '0'}}}}]" in fx.dmesg()
    refused = fx.submit("--urgency=20", "true")
    exc = [e["context"] for e in fx.events(refused) if e["name"] == "exception"]
    assert exc == [{"type": "policy", "severity": 0, "note": "not today", "userid": exc[0]["userid"]}]


def test_prioritize_and_cancel_override_points(fx, tmp_path):
    """sched.prioritize has no sender in flux-lite (see CONTRIBUTING, "The
    protocol"): sent here as a priority plugin would, through the broker."""
    from flux_lite import protocol
    from flux_lite.formats.jobid import decode
    from flux_lite.instance import Instance

    mod = write_module(tmp_path, """
        from flux.scheduler import Scheduler

        class S(Scheduler):
            def prioritize(self, jobs):
                self.log.info(f"prioritize {[p for _id, p in jobs]}")
                super().prioritize(jobs)
            def cancel(self, jobid):
                self.log.info("cancel")
                super().cancel(jobid)
            def schedule(self):
                if self._queue:
                    job = self._queue[0]
                    try:
                        alloc = self.resources.alloc(job.jobid, job.resource_request)
                    except Exception:
                        return
                    self._queue.remove(job)
                    job.request.success(alloc)

        def mod_main(h, *args):
            S(h, *args).run()
        """)
    fx("module", "load", mod)
    big = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "10")
    first = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "10")
    second = fx.submit("-N4", "-n8", "-t", "100s", "sleep", "10")
    third = fx.submit("-n1", "true")
    fx("cancel", third)
    inst = Instance.open(fx.state_dir)
    try:
        with inst.session() as broker:
            # (within one command: the job manager's own priorities come back with the next one)
            broker.send(protocol.SCHED_PRIORITIZE, protocol.prioritize_request([(int(decode(second)), 99)]))
            broker.advance_to(broker.now + 10)
    finally:
        inst.close()
    lines = [line.split(": ", 1)[1] for line in fx.dmesg() if line.startswith("sched-test.info")]
    assert "prioritize [99]" in lines and "cancel" in lines
    assert fx.out("jobs", "-no", "{result}", third).strip() == "CANCELED"
    assert fx.state(big) == "INACTIVE"
    assert (fx.state(second), fx.state(first)) == ("RUN", "SCHED")  # the higher priority went first


def test_pool_class_argument(fx, pyflux, monkeypatch):
    import importlib

    # (the URIs this test resolves stay out of the process's cache: test_flux_pools reads it)
    monkeypatch.setattr(importlib.import_module("flux.resource.ResourcePool"), "_POOL_CLASS_CACHE", {})
    r = fx.fails("module", "load", TINY, "pool-class=NoSuchPool")
    assert r.stderr == ("flux-lite module: ERROR: sched-tiny: ValueError: pool-class='NoSuchPool': could not load "
                        "pool class (sched-tiny.py:30)\n")
    fx("module", "load", TINY, "pool-class=flux.resource.ResourcePool:ResourcePool", "log-level=debug")
    assert any(line.startswith("sched-tiny.info[0]: ready: queue-depth=8 log-level=debug pool-class=Rv1Pool ")
               for line in fx.dmesg())
    job = fx.submit("-n2", "true")
    assert fx.state(job) == "INACTIVE"
