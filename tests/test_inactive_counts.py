"""The inactive counts: `jobs --stats-only` and purge's counts read a small
table kept with the job rows, not every inactive row; it always agrees with
the rows, and is made from them when missing (a state dir from before it)."""

import json
import os
import sqlite3

from flux_lite.job_manager import index


def _table(flux):
    conn = sqlite3.connect(os.path.join(flux.state_dir, "kvs.sqlite"))
    try:
        rows = conn.execute("SELECT result, count(*) FROM jobs WHERE state = 64 GROUP BY result").fetchall()
        try:
            kept = conn.execute(f"SELECT result, n FROM {index.COUNTS} WHERE n != 0").fetchall()
        except sqlite3.OperationalError:
            kept = None
        return {(-1 if r is None else r): n for r, n in rows}, None if kept is None else dict(kept)
    finally:
        conn.close()


def _sql(flux, query):
    conn = sqlite3.connect(os.path.join(flux.state_dir, "kvs.sqlite"), isolation_level=None)
    try:
        conn.execute(query)
    finally:
        conn.close()


def _stats(flux):
    return flux("jobs", "--stats-only", check=False).stdout, flux.out("job", "purge", "--num-limit=2")


def test_counts_follow_the_rows(flux):
    flux("submit", "--cc=1-6", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
    held = flux.submit("--urgency=0", "true")
    flux("submit", "--quiet", "-n1", "-t", "2s", "sleep", "inf")  # a timeout
    flux.advance("1m")
    flux("cancel", held)
    rows, kept = _table(flux)
    assert rows == kept == {1: 6, 4: 1, 8: 1}  # completed, canceled, timeout
    before = _stats(flux)
    flux("job", "purge", "--force", "--num-limit=3")
    rows, kept = _table(flux)
    assert sum(rows.values()) == 3 and rows == kept
    assert _stats(flux) != before
    flux("fsck", "--rebuild")
    assert _table(flux)[0] == _table(flux)[1]


def test_a_state_dir_without_counts(flux):
    flux("submit", "--cc=1-4", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
    flux.advance("1m")
    with_table = _stats(flux)
    _sql(flux, f"DROP TABLE {index.COUNTS}")
    assert _stats(flux) == with_table  # (counted from the rows)
    flux("submit", "--quiet", "-n1", "-S", "exec.test.run_duration=1s", "true")
    flux.advance("1m")
    rows, kept = _table(flux)
    assert rows == kept == {1: 5}


def test_stats_read_the_counts_not_the_rows(flux):
    """A count in the table is what `jobs --stats-only` says (so it is read)."""
    flux("submit", "--cc=1-3", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
    flux.advance("1m")
    assert flux("jobs", "--stats-only", check=False).stdout.startswith("0 running, 3 completed")
    _sql(flux, f"UPDATE {index.COUNTS} SET n = 1000 WHERE result = 1")
    assert flux("jobs", "--stats-only", check=False).stdout.startswith("0 running, 1000 completed")


QUEUES = '{"queues": {"q1": {}, "q2": {}}, "policy": {"jobspec": {"defaults": {"system": {"queue": "q1"}}}}}'


def test_stats_of_queues(flux):
    """`jobs --stats --queue=Q` sums job-list's per-queue entries, as
    flux.job.JobStats does (t2800 135-144); purged jobs count per queue."""
    flux("config", "load", input=QUEUES)
    flux("queue", "start", "--all")
    for args in (("-q", "q1", "true"), ("-q", "q1", "true"), ("-q", "q2", "sleep", "inf"), ("-q", "q2", "false")):
        flux.submit(*args)
    flux.advance("1m")

    def line(*queues):
        return flux.out("jobs", "--stats", "-a", *[f"--queue={q}" for q in queues]).splitlines()[0]

    assert line("q1") == "0 running, 2 completed, 0 failed, 0 pending, 0 inactive purged"
    assert line("q2") == "1 running, 0 completed, 1 failed, 0 pending, 0 inactive purged"
    assert line("q1,q2") == line("q1", "q2") == "1 running, 2 completed, 1 failed, 0 pending, 0 inactive purged"
    assert flux.fails("jobs", "--stats", "--queue=nosuch").stderr == \
        "flux-lite jobs: ERROR: error retrieving job stats: no stats available for queue nosuch\n"
    flux("job", "purge", "--force", "--num-limit=0")
    r = flux("jobs", "--stats-only", "--queue=q1", check=False)
    assert (r.exit_code, r.stdout) == (1, "0 running, 0 completed, 0 failed, 0 pending, 2 inactive purged\n")
    doc = json.loads(flux.out("job", "stats"))
    assert [(q["name"], q["job_states"]["run"], q["inactive_purged"]) for q in doc["queues"]] == [
        ("q1", 0, 2), ("q2", 1, 1)]
    # the instance's own line reads no queue
    assert flux.out("jobs", "--stats-only") == "1 running, 0 completed, 0 failed, 0 pending, 3 inactive purged\n"
