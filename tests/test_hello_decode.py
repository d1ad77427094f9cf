"""What hello reads of each running job: the R column of the jobs index,
decoded and checked (a damaged R leaves its job out, with a notice), and the
checks' fast paths agree with the checking ones."""

import json
import math
import sqlite3

import pytest

from flux_lite.formats.jobid import decode
from flux_lite.job_manager.index import _json_value
from flux_lite.stored import check_R

GOOD = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0-1"}}],
                                    "starttime": 0.0, "expiration": 60.0, "nodelist": ["node0"]}}


def _with(path, value):
    R = json.loads(json.dumps(GOOD))
    where = R
    for key in path[:-1]:
        where = where[key]
    if value is KeyError:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return R


VARIANTS = [
    (("version",), 1.0), (("version",), True), (("version",), 2), (("version",), KeyError),
    (("execution",), []), (("execution", "R_lite"), []), (("execution", "R_lite"), {}),
    (("execution", "R_lite", 0), "0"), (("execution", "R_lite", 0, "rank"), 0),
    (("execution", "R_lite", 0, "children"), None),
    (("execution", "starttime"), None), (("execution", "starttime"), True), (("execution", "starttime"), -1.0),
    (("execution", "starttime"), math.nan), (("execution", "expiration"), math.inf),
    (("execution", "expiration"), 4e11), (("execution", "expiration"), 5), (("execution", "expiration"), KeyError),
    (("execution", "nodelist"), None), (("execution", "nodelist"), "node0"), (("execution", "nodelist"), [0]),
    (("execution", "nodelist"), KeyError), (("execution", "nodelist"), []),
]


def _slow_check(R):
    """check_R without its fast path (what it answered before it had one)."""
    import flux_lite.stored as stored

    real = stored._R_plain
    stored._R_plain = lambda v: False
    try:
        check_R(R)
        return None
    except ValueError as exc:
        return str(exc)
    finally:
        stored._R_plain = real


@pytest.mark.parametrize("path,value", VARIANTS)
def test_check_R_fast_path_answers_as_the_full_check(path, value):
    R = _with(path, value)
    try:
        check_R(R)
        got = None
    except ValueError as exc:
        got = str(exc)
    assert got == _slow_check(R)


@pytest.mark.parametrize("text", ['{"a": [1, 2.5, null, true]}', ' {"a":1} ', "[]", "NaN", '"x"',
                                  b'{"a":1}'])
def test_json_value_is_json_loads(text):
    assert json.dumps(_json_value(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1} x', '{"a":1}{}', "{", "", "x", b"\xff"])
def test_json_value_refuses_what_json_loads_refuses(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _json_value(text)


@pytest.mark.parametrize("damage", ["garbage", '{"version":1} x', "[]", "7",
                                    '{"version":1,"execution":{"R_lite":[{"rank":"1","children":{"core":"0"}}],'
                                    '"nodelist":null}}'])
def test_a_damaged_R_column_leaves_its_job_out_of_hello(flux, damage):
    jobs = [flux.submit("-n1", "-S", "exec.test.run_duration=1h", "true") for _ in range(3)]
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    try:
        conn.execute("UPDATE jobs SET R = ? WHERE id = ?", (damage, decode(jobs[1])))
    finally:
        conn.close()
    result = flux("sched", "reload")
    assert result.stderr == (f"flux-lite sched: warning: job {jobs[1]}: damaged R in the jobs index: left out of hello "
                             "(rebuild it with 'flux-lite fsck --repair')\n")
    log = flux.out("dmesg")
    assert f"hello: {jobs[0]}: rank0/core0" in log and f"hello: {jobs[2]}: rank2/core0" in log
    assert f"hello: {jobs[1]}" not in log


# -- R as text: what flux-lite's schedulers ask hello for ---------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from flux_lite.formats.rset import compact_R, one_entry_text  # noqa: E402
from flux_lite.job_manager.index import JobIndex  # noqa: E402


def _compact(R):
    return json.dumps(R, separators=(",", ":"))


def _fields(R):
    entry = R["execution"]["R_lite"][0]
    return (entry["rank"], entry["children"]["core"], entry["children"].get("gpu", ""),
            float(R["execution"]["expiration"]))


def test_one_entry_text_reads_the_usual_R():
    assert one_entry_text(_compact(GOOD)) == ("0", "0-1", "", 60.0)
    R = {"version": 1, "execution": {"R_lite": [{"rank": "0-2", "children": {"core": "3,5-7", "gpu": "0-1"}}],
                                     "starttime": 1767225600.0, "expiration": 1e10, "nslots": 4,
                                     "nodelist": ["node[0-1]", "big"]}}
    assert one_entry_text(_compact(R)) == ("0-2", "3,5-7", "0-1", 1e10)


@pytest.mark.parametrize("path,value", VARIANTS)
def test_one_entry_text_reads_only_what_check_R_passes(path, value):
    text = _compact(_with(path, value))
    fields = one_entry_text(text)
    if fields is not None:
        R = json.loads(text)
        check_R(R)
        assert fields == _fields(R)


@pytest.mark.parametrize("text", [
    _compact(GOOD).replace('"version":1', '"version":1.0'),
    _compact(GOOD).replace('"node0"', '"no\\"de0"'),
    _compact(GOOD).replace('"node0"', '"node\\u00e9"'),
    _compact(GOOD).replace("60.0", "1e999"),
    _compact(GOOD).replace("60.0", "-1"),
    _compact(GOOD) + " ",
    _compact(GOOD).replace('"R_lite":[{', '"R_lite":[{"rank":"1","children":{"core":"0"}},{'),
    json.dumps(GOOD),
])
def test_one_entry_text_leaves_other_texts_to_the_decoder(text):
    assert one_entry_text(text) is None


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 160), st.integers(0, 8), st.text(alphabet='0123456789,-.:"{}[]e+ \\x', max_size=6))
def test_one_entry_text_is_sound_on_damaged_texts(at, cut, insert):
    good = _compact(_with(("execution", "R_lite", 0, "children"), {"core": "0-1", "gpu": "1"}))
    text = good[:at] + insert + good[at + cut:]
    fields = one_entry_text(text)
    if fields is not None:
        R = json.loads(text)  # (valid JSON, and an R check_R passes)
        check_R(R)
        assert fields == _fields(R)


def test_hello_gives_usual_Rs_as_text_and_others_decoded(flux):
    jobs = [flux.submit("-n1", "-S", "exec.test.run_duration=1h", "true"),
            flux.submit("-N2", "-n2", "-S", "exec.test.run_duration=1h", "true")]
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    try:
        # an R of another shape (two R_lite entries), as a resource update may leave one
        R = json.loads(conn.execute("SELECT R FROM jobs WHERE id = ?", (decode(jobs[1]),)).fetchone()[0])
        R["execution"]["R_lite"] = [{"rank": "1", "children": {"core": "0"}}, {"rank": "2", "children": {"core": "0"}}]
        conn.execute("UPDATE jobs SET R = ? WHERE id = ?", (compact_R(R), decode(jobs[1])))
        plain = list(JobIndex(conn).holding_resources())
        texts = list(JobIndex(conn).holding_resources(as_text=True))
    finally:
        conn.close()
    assert [row[:4] for row in texts] == [row[:4] for row in plain]
    assert isinstance(texts[0][4], str) and json.loads(texts[0][4]) == plain[0][4]
    assert texts[1][4] == plain[1][4] == R
    flux("sched", "reload")
    log = flux.out("dmesg")
    assert f"hello: {jobs[0]}: rank0/core0\n" in log and f"hello: {jobs[1]}: rank[1-2]/core0\n" in log
    assert flux.out("sched", "check") == "sched check: ok\n"


def test_a_damaged_record_keeps_its_resources_at_hello(flux):
    """The index row's record is a cache of the eventlog, which says the job
    holds its resources: hello still reports them (from the R column), so
    no other job is given them before fsck --repair writes the record again."""
    jobs = [flux.submit("-n2", "-S", "exec.test.run_duration=1h", "true") for _ in range(4)]
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    try:
        conn.execute("UPDATE jobs SET data = '{garbage' WHERE id = ?", (decode(jobs[1]),))
    finally:
        conn.close()
    flux("sched", "reload")
    assert f"hello: {jobs[1]}: rank1/core[0-1]" in flux.out("dmesg")
    waiting = flux.submit("-n2", "true")
    assert flux.out("jobs", "-no", "{state}", waiting) == "SCHED\n"
    flux("fsck", "--repair")
    assert flux.out("jobs", "-no", "{state}", jobs[1]) == "RUN\n"
    assert flux.out("sched", "check") == "sched check: ok\n"


def test_hello_index_is_made_for_a_state_dir_from_before_it(flux):
    jobs = [flux.submit("-n1", "-S", "exec.test.run_duration=1h", "true") for _ in range(2)]
    path = flux.state_dir + "/kvs.sqlite"

    def names():
        conn = sqlite3.connect(path)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        finally:
            conn.close()

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP INDEX jobs_holding")
    conn.close()
    assert sorted(flux.out("jobs", "-no", "{id}").split()) == sorted(jobs)
    flux("sched", "reload")
    assert "jobs_holding" in names()
    log = flux.out("dmesg")
    assert f"hello: {jobs[0]}: rank0/core0" in log and f"hello: {jobs[1]}: rank1/core0" in log
