"""Inactive jobs' values are stored packed; every reader reads them as before.

An inactive job's eventlog, jobspec, J and R (KVS kinds zeventlog/zjson) and
its record in the jobs index (a BLOB) are packed with stored.pack; readers go
through the KVS's accessors (get_raw, get, get_eventlog, rows) and the
index's record readers. A state directory written before values were packed
still opens and reads the same.
"""

import os
import sqlite3

import pytest

from flux_lite import kvs as kvsmod
from flux_lite import stored
from flux_lite.job_manager import index as indexmod

COMMANDS = (
    ("jobs", "-a", "-o", "{id} {state} {result} {t_submit} {t_run} {t_inactive} {nodelist} {name}"),
    ("jobs", "--stats-only"),
    ("job", "last", "[:]"),
)


def _history(flux, n=12):
    flux("submit", f"--cc=1-{n}", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
    flux("submit", "--quiet", "-n1", "-t", "5s", "sleep", "inf")  # ends in a timeout exception
    flux.advance("1m")
    return flux.out("jobs", "-a", "-no", "{id}").split()


def _reads(flux, ids):
    out = [flux(*cmd, check=False).stdout for cmd in COMMANDS]
    for jobid in ids[:3] + ids[-2:]:
        out.append(flux.out("job", "eventlog", jobid))
        out.append(flux.out("job", "info", jobid, "jobspec"))
        out.append(flux.out("job", "info", jobid, "R"))
        out.append(flux.out("job", "info", jobid, "J"))
    return out


def _kinds(state_dir):
    conn = sqlite3.connect(os.path.join(state_dir, "kvs.sqlite"))
    try:
        kinds = {kind for (key, kind) in conn.execute("SELECT key, kind FROM kvs WHERE key LIKE 'job.%'")
                 if key.count(".") == 5}  # (not the guest namespace's eventlogs)
        records = {type(data) for (data,) in conn.execute("SELECT data FROM jobs WHERE state = 64")}
        return kinds, records
    finally:
        conn.close()


def _unpacked(monkeypatch):
    """Values stored as before packing existed."""
    monkeypatch.setattr(kvsmod.KVS, "pack", lambda self, keys: None)
    monkeypatch.setattr(indexmod, "pack_row", lambda text: text)


def test_inactive_values_are_packed_and_read_the_same(flux_factory, monkeypatch):
    packed = flux_factory("--test-size=4", "--test-cores=2", name="packed")
    ids = _history(packed)
    kinds, records = _kinds(packed.state_dir)
    assert kinds == {"zeventlog", "zjson"}
    assert records == {bytes}
    _unpacked(monkeypatch)
    plain = flux_factory("--test-size=4", "--test-cores=2", name="plain")
    assert _history(plain) == ids
    kinds, records = _kinds(plain.state_dir)
    assert kinds == {"eventlog", "json"}
    assert records == {str}
    monkeypatch.undo()
    assert _reads(packed, ids) == _reads(plain, ids)


def test_a_state_dir_from_before_packing_still_works(flux_factory, monkeypatch):
    """Plain values (written as before) and packed ones side by side: every
    reader, purge and fsck work, and new jobs are packed."""
    _unpacked(monkeypatch)
    old = flux_factory("--test-size=4", "--test-cores=2", name="old")
    ids = _history(old)
    monkeypatch.undo()
    before = _reads(old, ids)
    ids2 = _history(old, 4)  # (new jobs, packed, beside the old ones)
    assert set(ids) < set(ids2)
    assert _reads(old, ids) != before  # (the history grew) ...
    assert _reads(old, ids)[3:] == before[3:]  # ... and each old job reads the same
    assert _kinds(old.state_dir)[0] == {"eventlog", "json", "zeventlog", "zjson"}
    assert "no problems" in old.out("fsck") or old("fsck").exit_code == 0
    old("job", "purge", "--force", "--num-limit=3")
    assert len(old.out("jobs", "-a", "-no", "{id}").split()) == 3


def test_an_append_to_a_packed_eventlog(tmp_path):
    kvs = kvsmod.KVS(tmp_path / "kvs.sqlite", create=True)
    key = "job.0000.0004.b200.0000.eventlog"
    with kvs.transaction():
        kvs.append(key, '{"timestamp":1.0,"name":"submit"}\n')
        kvs.put("job.0000.0004.b200.0000.J", {"version": 1})
    with kvs.transaction():
        kvs.pack([key, "job.0000.0004.b200.0000.R", "job.0000.0004.b200.0000.J"])
    assert kvs.conn.execute("SELECT kind FROM kvs WHERE key = ?", (key,)).fetchone()[0] == "zeventlog"
    with kvs.transaction():
        kvs.append(key, '{"timestamp":2.0,"name":"clean"}\n')
    assert [e["name"] for e in kvs.get_eventlog(key)] == ["submit", "clean"]
    assert kvs.get("job.0000.0004.b200.0000.J") == {"version": 1}
    assert [row[:2] for row in kvs.rows("job")] == [("job.0000.0004.b200.0000.J", "json"), (key, "eventlog")]
    kvs.close()


def test_a_damaged_packed_value_is_named(tmp_path):
    kvs = kvsmod.KVS(tmp_path / "kvs.sqlite", create=True)
    key = "job.0000.0004.b200.0000.R"
    with kvs.transaction():
        kvs.conn.execute("INSERT INTO kvs VALUES (?, 'zjson', ?)", (key, b"\x00garbage"))
    with pytest.raises(stored.DamagedError) as exc:
        kvs.get(key)
    assert key in str(exc.value)
    kvs.close()


def test_history_takes_less_than_1_5_kb_a_job(flux_factory):
    """The file's growth per inactive job (its rows, indexes and pages)."""
    flux = flux_factory("--test-size=4", "--test-cores=8")
    path = os.path.join(flux.state_dir, "kvs.sqlite")
    sizes = []
    for _ in range(2):
        flux("submit", "--cc=1-400", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
        flux.advance("1h")
        sizes.append(os.path.getsize(path))
    assert (sizes[1] - sizes[0]) / 400 <= 1500, sizes
