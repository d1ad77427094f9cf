"""fsck streams: the jobs are read and replayed a batch at a time, and
only the active ones are kept (for the dependency tables); a damaged job
is found wherever the batches cut. (Small sizes: the structure is what is
checked; bench/history.py measures a million jobs.)"""

import gc

import pytest
from test_dump_stream import CountingConn

NJOBS = 200


@pytest.fixture
def many(flux):
    """100 jobs that ran, then 100 held (active)."""
    flux("submit", "--cc=1-100", "-S", "exec.test.run_duration=1s", "true")
    flux.advance("1h")
    flux("submit", "--cc=1-100", "-n1", "--urgency=hold", "true")
    return flux


class FakeKVS:
    def __init__(self, conn):
        self.conn = conn

    def flush(self):
        pass


def test_job_dirs_reads_a_batch_at_a_time(many):
    from flux_lite import rebuild
    from flux_lite.kvs import KVS

    kvs = KVS(f"{many.state_dir}/kvs.sqlite", readonly=True)
    try:
        counting = CountingConn(kvs.conn)
        it = rebuild.job_dirs(FakeKVS(counting), batch=40)
        first = next(it)
        assert counting.rows <= 40
        ids = [first[0]] + [jobid for jobid, _ in it]
        assert len(ids) == NJOBS and ids == sorted(ids)
        total = kvs.conn.execute("SELECT count(*) FROM kvs WHERE key > 'job.' AND key < 'job/'").fetchone()[0]
        assert total <= counting.rows <= total + 4 * (total // 40 + 1)  # (each batch's cut job is read again)
    finally:
        kvs.close()


def test_fsck_keeps_only_active_jobs(many, monkeypatch):
    """While fsck checks the history, the inactive jobs it has replayed are
    let go: what is alive at the end is the active ones."""
    from flux_lite import fsck, rebuild
    from flux_lite.job_manager.job import Job

    monkeypatch.setattr(rebuild, "BATCH", 40)
    alive = []
    real = fsck._jobs

    def jobs(kvs, report):
        active = real(kvs, report)
        gc.collect()
        alive.append(sum(1 for o in gc.get_objects() if isinstance(o, Job)))
        return active

    monkeypatch.setattr(fsck, "_jobs", jobs)
    report = fsck.run(many.state_dir)
    assert report.problems == []
    assert alive and alive[0] <= NJOBS // 2 + 5, alive


def test_fsck_finds_damage_across_batches(many, monkeypatch):
    """A damaged eventlog and a missing index row, in the middle of the
    history with small batches: reported as with one batch."""
    from flux_lite import fsck, rebuild
    from flux_lite.formats.jobid import f58, kvs_key
    from flux_lite.kvs import KVS

    ids = [int(line) for line in many.out("jobs", "-a", "-no", "{id.dec}").split()]
    ids.sort()
    damaged, unindexed = ids[57], ids[130]
    kvs = KVS(f"{many.state_dir}/kvs.sqlite")
    with kvs.transaction():
        # (a plain eventlog with a line of junk: an inactive job's is stored packed)
        kvs.conn.execute("UPDATE kvs SET kind = 'eventlog', value = ? WHERE key = ?",
                         ('{"timestamp":1.0,"name":"submit","context":{"userid":0}}\njunk\n',
                          kvs_key(damaged, "eventlog")))
        kvs.conn.execute("DELETE FROM jobs WHERE id = ?", (unindexed,))
    kvs.close()
    whole = [text for text, _ in fsck.run(many.state_dir).problems]
    monkeypatch.setattr(rebuild, "BATCH", 13)
    batched = [text for text, _ in fsck.run(many.state_dir).problems]
    assert batched == whole
    assert any(str(damaged) in t or f58(damaged) in t for t in batched)
    assert f"job index: {f58(unindexed)} is missing" in batched
