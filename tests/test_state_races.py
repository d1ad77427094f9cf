"""Races and loss of the state files: racing starts, a deleted WAL."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

# each racer imports everything first, then waits for a common instant, so
# that the starts collide inside Instance.create rather than in the imports
RACER = textwrap.dedent("""
    import sys, time
    from flux_lite.cli.main import main
    t0 = float(sys.argv[1])
    while time.time() < t0:
        pass
    main(["--state-dir", sys.argv[2], "start", "--clock=virtual", "--test-size=2"])
""")


def race_starts(state, n):
    t0 = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(t0), str(state)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    return [(p.wait(60), p.stdout.read(), p.stderr.read()) for p in procs]


def run(state, *args):
    return subprocess.run([sys.executable, "-m", "flux_lite", "--state-dir", str(state), *args],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, FLUX_F58_FORCE_ASCII="1"))


@pytest.mark.parametrize("round_", range(3))
def test_racing_starts_exactly_one_wins(tmp_path, round_):
    state = tmp_path / "state"
    results = race_starts(state, 5)
    winners = [r for r in results if r[0] == 0]
    losers = [r for r in results if r[0] != 0]
    assert len(winners) == 1, results
    for rc, _out, err in losers:
        assert rc == 1, (rc, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "an instance already exists" in err, err
    # the winner's instance is whole and usable
    assert run(state, "submit", "sleep", "inf").returncode == 0
    jobs = run(state, "jobs", "-a", "-no", "{state}")
    assert jobs.returncode == 0, jobs.stderr
    assert jobs.stdout.split() == ["RUN"]
    # the losers left nothing of their own behind
    leftovers = [p.name for p in state.iterdir()
                 if p.name not in ("kvs.sqlite", "kvs.sqlite-wal", "kvs.sqlite-shm", "kvs.sqlite-holder", "jobid-hwm")]
    assert leftovers == []


# a second connection that keeps the WAL from being checkpointed, then dies
# without closing: the committed transactions live only in kvs.sqlite-wal
KEEPER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1])
    conn.execute("SELECT count(*) FROM kvs").fetchone()
    print("ready", flush=True)
    time.sleep(600)
""")


def test_deleted_wal_never_reuses_job_ids_and_is_reported(tmp_path):
    import signal

    state = tmp_path / "state"
    assert run(state, "start", "--clock=virtual", "--test-size=2").returncode == 0
    first = run(state, "submit", "-t", "1h", "true").stdout.strip()
    keeper = subprocess.Popen([sys.executable, "-c", KEEPER, str(state / "kvs.sqlite")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert keeper.stdout.readline() == "ready\n"
        lost = [run(state, "submit", "-t", "1h", "true").stdout.strip() for _ in range(2)]
        assert (state / "kvs.sqlite-wal").stat().st_size > 0
        os.unlink(state / "kvs.sqlite-wal")
    finally:
        keeper.send_signal(signal.SIGKILL)
        keeper.wait()
    listed = run(state, "jobs", "-a", "-no", "{id}")
    assert listed.stdout.split() == [first]  # SQLite lost the two jobs, as documented
    assert "rolled back" in listed.stderr and listed.stderr.count("\n") == 1, listed.stderr
    new = run(state, "submit", "-t", "1h", "true")
    assert new.returncode == 0, new.stderr
    jobid = new.stdout.strip()
    assert jobid not in lost and jobid != first
    from flux_lite.formats.jobid import decode

    assert decode(jobid) > max(decode(j) for j in lost)
    # reported once, and kept in the log
    assert run(state, "jobs", "-a").stderr == ""
    dmesg = run(state, "dmesg").stdout
    assert "rolled back" in dmesg


# -- operations feedback ---------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import os, sys, time
    sys.argv = ["flux-lite", "sched", "reload"]  # what the holder file records
    from flux_lite.kvs import KVS
    kvs = KVS(os.environ["DB"])
    with kvs.transaction():
        print("locked", flush=True)
        sys.stdin.readline()  # held until the test says (a fixed sleep races a loaded machine)
    print("released", flush=True)
""")


def test_waiting_for_the_lock_says_who_holds_it(tmp_path):
    state = tmp_path / "state"
    assert run(state, "start", "--clock=virtual").returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, DB=str(state / "kvs.sqlite")))
    try:
        assert holder.stdout.readline() == "locked\n"
        t0 = time.time()
        submit = subprocess.Popen([sys.executable, "-m", "flux_lite", "--state-dir", str(state), "submit", "true"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, FLUX_F58_FORCE_ASCII="1"))
        said = submit.stderr.readline()  # said while waiting: the lock is still held
        waited = time.time() - t0
        holder.stdin.write("go\n")
        holder.stdin.flush()
        out, rest = submit.communicate(timeout=60)
    finally:
        holder.kill()  # (done with it, or the test failed while it held the lock)
        holder.wait(30)
    assert submit.returncode == 0, rest
    assert waited > 1.0 and out.startswith("f")
    assert said + rest == (f"flux-lite submit: waiting for the instance lock held by pid {holder.pid} "
                           "(flux-lite sched reload)\n")


def test_ctrl_c_rolls_back_and_exits_130(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from flux_lite.cli.main import cli
    from flux_lite.job_manager import manager

    state = tmp_path / "state"
    runner = CliRunner()
    assert runner.invoke(cli, ["--state-dir", str(state), "start", "--clock=virtual"]).exit_code == 0
    before = (state / "kvs.sqlite").read_bytes()
    real_save = manager.JobManager.save

    def interrupted(self):
        real_save(self)  # the job is written, then the user presses Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(manager.JobManager, "save", interrupted)
    result = runner.invoke(cli, ["--state-dir", str(state), "submit", "--cc=1-50", "true"])
    assert result.exit_code == 130
    assert result.stderr == ("flux-lite submit: interrupted: nothing was changed "
                             "(the command's transaction was rolled back)\n")
    monkeypatch.undo()
    listed = runner.invoke(cli, ["--state-dir", str(state), "jobs", "-a", "-n"])
    assert listed.stdout == ""
    assert (state / "kvs.sqlite").read_bytes() == before
