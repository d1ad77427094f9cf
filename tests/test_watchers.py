"""The watches in progress (flux_lite.watchers) and the module stats that
count them: job-info's watchers, kvs-watch's namespaces, job-list's waits."""

import json
import os
import subprocess
import sys
import time

from flux_lite import watchers


def test_announced_watches_are_live_while_the_block_runs(tmp_path):
    assert watchers.live(tmp_path) == []
    w = [{"service": "job-info", "jobid": 7, "guest": False}]
    with watchers.announced(tmp_path, w):
        assert watchers.live(tmp_path) == w
        with watchers.announced(tmp_path, [{"service": "kvs-watch", "namespace": "primary"}] * 2):
            assert len(watchers.live(tmp_path)) == 3
        assert watchers.live(tmp_path) == w
    assert watchers.live(tmp_path) == []
    assert os.listdir(tmp_path / "watch") == []


def test_a_dead_waiters_watches_are_not_counted_and_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / "watch").mkdir()
    (tmp_path / "watch" / f"{dead}-0.json").write_text(json.dumps([{"service": "job-list", "jobid": 1}]))
    (tmp_path / "watch" / f"{os.getpid()}-99.json").write_text("not json")  # being written: skipped
    assert watchers.live(tmp_path) == []
    assert sorted(os.listdir(tmp_path / "watch")) == [f"{os.getpid()}-99.json"]


def test_an_unwritable_state_dir_leaves_the_watch_unannounced(tmp_path):
    (tmp_path / "watch").write_text("a file, not a directory")
    with watchers.announced(tmp_path, [{"service": "job-list", "jobid": 1}]):
        assert watchers.live(tmp_path) == []


def test_module_stats_count_the_commands_waiting_under_a_real_clock(flux_factory, tmp_path):
    flux = flux_factory("--test-size=2", "--clock=real")
    env = {**os.environ, "FLUX_LITE_STATE_DIR": flux.state_dir}
    jobid = flux.submit("sleep", "inf")

    def stats(name):
        return json.loads(flux.out("module", "stats", name))

    assert stats("job-info")["watchers"] == 0
    assert stats("kvs-watch") == {"watchers": 0, "namespace-count": 0, "namespaces": {}}
    cmds = [["job", "wait-event", "-p", "exec", jobid, "done"],  # a guest watch of a started job
            ["job", "wait-event", jobid, "nosuchevent"],
            ["kvs", "get", "--waitcreate", "later"],
            ["job", "list-ids", "--wait-state=inactive", jobid]]
    procs = [subprocess.Popen([sys.executable, "-m", "flux_lite", *c], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for c in cmds]
    try:
        deadline = time.monotonic() + 60
        while stats("job-info")["watchers"] < 2 or stats("job-list")["idsync"]["waits"] < 1 \
                or stats("kvs-watch")["watchers"] < 3:
            assert time.monotonic() < deadline, "the waiters never announced their watches"
            time.sleep(0.05)
        assert stats("job-info") == {"lookups": 0, "watchers": 2, "guest_watchers": 1, "update_lookups": 0,
                                     "update_watchers": 0}
        from flux_lite.formats.jobid import decode
        ns = f"job-{decode(jobid)}"
        kw = stats("kvs-watch")
        assert (kw["watchers"], kw["namespace-count"]) == (3, 2)
        assert kw["namespaces"][ns]["watchers"] == 1 and kw["namespaces"]["primary"]["watchers"] == 2
        assert kw["namespaces"]["primary"]["rootref"] == "(null)"
        assert stats("job-list") == {"jobs": {"pending": 0, "running": 1, "inactive": 0},
                                     "idsync": {"lookups": 0, "waits": 1}, "stats_watchers": 0}
        assert flux.out("module", "stats", "--parse", "idsync.waits", "job-list") == "1\n"
        flux("kvs", "put", "later=1")
        flux("cancel", jobid)
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 1, 0, 0]
    assert outs[0][0].split()[1] == "done"
    assert outs[2][0] == "1\n"
    assert json.loads(outs[3][0])["state"] == 64
    assert stats("job-info")["watchers"] == 0
    assert stats("job-list")["idsync"]["waits"] == 0
    assert stats("job-list")["jobs"]["inactive"] == 1
