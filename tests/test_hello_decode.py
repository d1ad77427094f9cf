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
