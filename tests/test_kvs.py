"""The SQLite KVS under concurrency and crashes.

Parallel writers serialise on the store's write lock and lose nothing; a
process killed with SIGKILL in the middle of a transaction leaves the store
readable with all or none of that transaction.
"""

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from flux_lite.formats import eventlog
from flux_lite.kvs import KVS, KVSError

NPROC = 8


def python(code, *args, **kw):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def flux_lite(state, *args):
    env = dict(os.environ, FLUX_LITE_STATE_DIR=str(state), FLUX_F58_FORCE_ASCII="1")
    return subprocess.Popen([sys.executable, "-m", "flux_lite", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs, timeout=60):
    outs = []
    for p in procs:
        out, errout = p.communicate(timeout=timeout)
        assert p.returncode == 0, errout
        outs.append(out)
    return outs


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "kvs.sqlite"
    kvs = KVS(path, create=True)
    kvs.close()
    return path


def integrity(path):
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


# ------------------------------------------------------------------ library


def test_transaction_is_atomic_and_rolls_back(store):
    kvs = KVS(store)
    try:
        with kvs.transaction():
            kvs.put("a.b", {"x": 1})
            kvs.append("a.log", eventlog.encode_entry(1.0, "one"))
        with pytest.raises(RuntimeError):
            with kvs.transaction():
                kvs.put("a.b", {"x": 2})
                kvs.append("a.log", eventlog.encode_entry(2.0, "two"))
                raise RuntimeError("abort")
        assert kvs.get("a.b") == {"x": 1}
        assert [e["name"] for e in eventlog.decode(kvs.get("a.log"))] == ["one"]
        assert kvs.ls() == ["a."] and kvs.ls("a") == ["b", "log"]
        with pytest.raises(KVSError):
            with kvs.transaction():
                kvs.append("a.b", eventlog.encode_entry(3.0, "x"))  # not an eventlog
        assert kvs.get("a.b") == {"x": 1}
    finally:
        kvs.close()


def test_appends_of_many_keys_land_together_and_a_non_eventlog_is_named(store):
    """Buffered appends to many eventlogs (new and existing) are written by
    one flush; one to a key holding a value fails the transaction naming
    that key, the first such in append order, and nothing of it lands."""
    kvs = KVS(store)
    try:
        with kvs.transaction():
            kvs.put("v.x", 1)
            kvs.put("v.y", 2)
            for i in range(5):
                kvs.append(f"e.{i}", eventlog.encode_entry(1.0, "one"))
        with kvs.transaction():
            for i in range(8):
                kvs.append(f"e.{i}", eventlog.encode_entry(2.0, "two"))
            kvs.append("e.0", eventlog.encode_entry(3.0, "three"))
        names = [[e["name"] for e in eventlog.decode(kvs.get(f"e.{i}"))] for i in range(8)]
        assert names == [["one", "two", "three"]] + [["one", "two"]] * 4 + [["two"]] * 3
        for bad in (["e.1", "v.y", "e.9", "v.x"], ["v.x"], ["e.2", "e.10", "v.y"]):
            with pytest.raises(KVSError, match="^" + bad[[k.startswith("v.") for k in bad].index(True)]
                               .replace(".", r"\.") + ": not an eventlog$"):
                with kvs.transaction():
                    for key in bad:
                        kvs.append(key, eventlog.encode_entry(4.0, "four"))
        assert kvs.get("v.x") == 1 and kvs.get("v.y") == 2 and kvs.get("e.9") is None and kvs.get("e.10") is None
        assert [[e["name"] for e in eventlog.decode(kvs.get(f"e.{i}"))] for i in range(8)] == names
    finally:
        kvs.close()


# -------------------------------------------------------------- concurrency

APPENDER = """
    import os, sys, time
    from flux_lite.kvs import KVS
    from flux_lite.formats.eventlog import encode_entry
    path, writer, n, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    kvs = KVS(path)
    open(go + ".ready%d" % writer, "w").close()  # started: the test waits for every writer
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(n):
        with kvs.transaction():
            kvs.append("test.eventlog", encode_entry(1.0 + i, "w%d" % writer, {"i": i}))
            kvs.put("test.last%d" % writer, i)
        # outside the lock a moment, as a real command is: without it one writer can
        # take every turn while the others back off in SQLite's busy handler
        time.sleep(0.002)
    kvs.close()
"""


def test_parallel_appenders_lose_nothing(store, tmp_path):
    n = 100
    go = tmp_path / "go"
    procs = [python(APPENDER, store, w, n, go) for w in range(NPROC)]
    # release the writers together only once all have started, so they really contend
    # (a fixed delay lost that race on a loaded machine)
    deadline = time.monotonic() + 60
    while not all(os.path.exists(f"{go}.ready{w}") for w in range(NPROC)):
        assert time.monotonic() < deadline, "writers did not start"
        time.sleep(0.01)
    go.touch()
    finish(procs)
    assert integrity(store) == "ok"
    kvs = KVS(store)
    try:
        entries = eventlog.decode(kvs.get("test.eventlog"))
        assert len(entries) == NPROC * n
        for w in range(NPROC):
            mine = [e["context"]["i"] for e in entries if e["name"] == f"w{w}"]
            assert mine == list(range(n))  # nothing lost, nothing doubled, in order
            assert kvs.get(f"test.last{w}") == n - 1
        # the writers really interleaved
        names = [e["name"] for e in entries]
        assert sum(1 for a, b in zip(names, names[1:]) if a != b) > NPROC
    finally:
        kvs.close()


def test_parallel_cli_commands(flux):
    """Concurrent flux-lite processes: submits, and raises appending to one eventlog."""
    target = flux.submit("-N1", "sleep", "inf")
    half = NPROC // 2
    procs = [flux_lite(flux.state_dir, "submit", "-N1", "-t", "1m",
                       f"--setattr=exec.test.run_duration={i + 1}s", "true") for i in range(half)]
    procs += [flux_lite(flux.state_dir, "job", "raise", "-s", "1", "-t", f"t{i}", target, f"note {i}")
              for i in range(half)]
    outs = finish(procs)
    ids = [out.strip() for out in outs[:half]]
    assert len(set(ids)) == half
    assert sorted(flux.out("jobs", "-a", "-no", "{id.f58}").split()) == sorted(ids + [target])
    for jobid in ids:
        assert flux.eventlog(jobid)[:4] == ["submit", "validate", "depend", "priority"]
    excs = [e["context"] for e in flux.events(target) if e["name"] == "exception"]
    assert sorted(c["type"] for c in excs) == sorted(f"t{i}" for i in range(half))
    assert all(c["note"] == f"note {c['type'][1:]}" and c["severity"] == 1 for c in excs)
    assert flux.eventlog(target)[:6] == ["submit", "validate", "depend", "priority", "alloc", "start"]
    assert flux.state(target) == "RUN"
    flux.advance("1m")
    assert flux.out("jobs", "-a", "-no", "{result}", *ids).split() == ["COMPLETED"] * half
    flux("sched", "check")


# -------------------------------------------------------------------- crash

HALF_DONE = """
    import sys, time
    from flux_lite.kvs import KVS
    kvs = KVS(sys.argv[1])
    with kvs.transaction():
        kvs.put("test.a", 1)
        kvs.append("test.eventlog", '{"timestamp":2.0,"name":"uncommitted"}\\n')
        kvs.put("test.b", 2)
        kvs.flush()
        print("ready", flush=True)
        time.sleep(60)
"""


def test_sigkill_mid_transaction_leaves_none_of_it(store):
    kvs = KVS(store)
    with kvs.transaction():
        kvs.append("test.eventlog", eventlog.encode_entry(1.0, "committed"))
    kvs.close()
    child = python(HALF_DONE, store)
    try:
        assert child.stdout.readline() == "ready\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert integrity(store) == "ok"
    kvs = KVS(store)
    try:
        assert kvs.get("test.a") is None and kvs.get("test.b") is None
        assert [e["name"] for e in eventlog.decode(kvs.get("test.eventlog"))] == ["committed"]
        # the write lock died with the process
        with kvs.transaction():
            kvs.put("test.c", 3)
        assert kvs.get("test.c") == 3
    finally:
        kvs.close()


LOOPER = """
    import sys
    from flux_lite.kvs import KVS
    kvs = KVS(sys.argv[1])
    i = 0
    while True:
        i += 1
        with kvs.transaction():
            kvs.put("test.x", i)
            kvs.append("test.eventlog", '{"timestamp":%d.0,"name":"n%d"}\\n' % (i, i))
            kvs.put("test.y", i)
        if i == 20:
            print("running", flush=True)
"""


@pytest.mark.parametrize("seed", range(4))
def test_sigkill_at_a_random_point_is_all_or_nothing(store, seed):
    child = python(LOOPER, store)
    try:
        assert child.stdout.readline() == "running\n"
        time.sleep(random.Random(seed).uniform(0.01, 0.15))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert integrity(store) == "ok"
    kvs = KVS(store)
    try:
        x, y = kvs.get("test.x"), kvs.get("test.y")
        names = [e["name"] for e in eventlog.decode(kvs.get("test.eventlog"))]
        assert x == y >= 20
        assert names == [f"n{i}" for i in range(1, x + 1)]
    finally:
        kvs.close()


KILLED_SUBMIT = """
    import json, sys, time
    from flux_lite.instance import Instance
    inst = Instance.open(sys.argv[1])
    with inst.session() as broker:
        jobid = broker.jm.submit(json.loads(sys.argv[2]))
        broker.run()
        broker.save()
        inst.kvs.flush()
        print(jobid, flush=True)
        time.sleep(60)
"""


def test_sigkill_mid_command_leaves_the_instance_usable(flux):
    before = flux.submit("-N1", "sleep", "inf")
    js = flux.out("submit", "--dry-run", "-N1", "true").strip()
    listing = flux.out("jobs", "-a")
    child = python(KILLED_SUBMIT, flux.state_dir, js)
    try:
        lost = int(child.stdout.readline())
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # none of the killed command is visible: no job, no eventlog, no id used
    assert flux.out("jobs", "-a") == listing
    flux.fails("job", "eventlog", str(lost))
    assert not [k for k in flux.out("kvs", "ls", "-R", "job").split() if k.rstrip(":").endswith(
        flux.out("job", "id", "--to=dothex", str(lost)).strip())]
    after = flux.submit("-N1", "true")
    assert int(flux.out("job", "id", after)) == lost  # the id was never consumed
    assert flux.state(before) == "RUN"
    flux("sched", "check")
