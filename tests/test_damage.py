"""Damaged stored data: every read is checked, a damaged key is one
line naming the key (and job), and one damaged job does not take the rest down.

Damage is written straight into SQLite, as a bit flip or a stray tool would.
"""

import sqlite3

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.formats.jobid import decode, kvs_key


def sql(state, query, *args):
    conn = sqlite3.connect(str(state / "kvs.sqlite"), isolation_level=None)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def put_raw(state, key, text, kind=None):
    if kind is None:
        sql(state, "UPDATE kvs SET value = ? WHERE key = ?", text, key)
    else:
        sql(state, "UPDATE kvs SET value = ?, kind = ? WHERE key = ?", text, kind, key)


def raw(state, key):
    return sql(state, "SELECT value FROM kvs WHERE key = ?", key)[0][0]


def invoke(state, *args):
    return CliRunner().invoke(cli, ["--state-dir", str(state), *map(str, args)],
                              env={"FLUX_F58_FORCE_ASCII": "1"})


def assert_clean(result, where):
    assert "Traceback" not in result.output, where
    assert result.exception is None or isinstance(result.exception, SystemExit), (where, repr(result.exception))
    assert result.exit_code in (0, 1, 2), (where, result.exit_code, result.output)
    if result.exit_code:
        assert result.stderr.count("ERROR") + result.stderr.count("error:") <= 1, (where, result.stderr)


@pytest.fixture
def busy(tmp_path):
    state = tmp_path / "state"
    assert invoke(state, "start", "--clock=virtual", "--test-size=2", "--test-cores=2").exit_code == 0
    ids = []
    for args in (["-t", "1h", "sleep", "inf"], ["-N2", "-t", "1h", "sleep", "inf"], ["sleep", "inf"]):
        ids.append(invoke(state, "submit", *args).stdout.strip())
    invoke(state, "clock", "advance", "1s")
    return state, ids


COMMANDS = [
    ["jobs", "-a", "-o", "{id} {name} {expiration!D} {nodelist} {runtime!H}"],
    ["submit", "sleep", "inf"], ["resource", "status"], ["sched", "check"],
    ["clock", "advance", "1m"], ["housekeeping", "list"], ["module", "list"], ["config", "get"],
]
JOB_COMMANDS = [
    ["job", "info", "{id}", "R"], ["job", "info", "{id}", "jobspec"], ["job", "eventlog", "{id}"],
    ["job", "timeleft", "{id}"], ["cancel", "{id}"], ["kvs", "eventlog", "get", "{key}.eventlog"],
    ["update", "{id}", "duration=2h"],
]

INSTANCE_KEYS = ["instance.meta", "instance.clock", "config", "resource.R", "sched.module", "sched.state",
                 "job-manager.sched", "checkpoint.job-manager"]
GARBAGE = ["{\"trunc", "[]", "null", "{}", "{\"now\": 1e999}"]


def flip(text, i):
    b = bytearray(text.encode())
    b[i % len(b)] ^= 0x04
    return b.decode("utf-8", "replace")


@pytest.mark.parametrize("key", INSTANCE_KEYS)
def test_damaged_instance_key_is_one_line_naming_it(busy, key):
    state, ids = busy
    good = raw(state, key)
    variants = GARBAGE + [flip(good, i) for i in (7, len(good) // 2)]
    for text in variants:
        put_raw(state, key, text)
        for cmd in COMMANDS:
            result = invoke(state, *cmd)
            where = (key, text, cmd)
            assert_clean(result, where)
            if result.exit_code == 1 and "damaged" in result.stderr:
                assert key in result.stderr, where
        put_raw(state, key, good)
    # once repaired, everything works again
    assert invoke(state, "jobs", "-a").exit_code == 0


def test_garbage_over_instance_meta_names_the_key(busy):
    state, ids = busy
    put_raw(state, "instance.meta", "[]")
    result = invoke(state, "jobs", "-a")
    assert result.exit_code == 1
    assert result.stderr.startswith("flux-lite jobs: ERROR: damaged KVS key instance.meta: ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("suffix", ["eventlog", "R", "jobspec", "J"])
def test_damaged_job_key_is_one_line_naming_key_and_job(busy, suffix):
    state, ids = busy
    for jobid in ids[:2]:
        key = kvs_key(decode(jobid))
        good = raw(state, f"{key}.{suffix}")
        variants = GARBAGE + [flip(good, i) for i in (5, len(good) // 2)]
        if suffix == "eventlog":
            lines = good.splitlines(keepends=True)
            variants += [good[:-3], "".join(reversed(lines)), lines[0] + "garbage\n" + "".join(lines[1:])]
        for text in variants:
            put_raw(state, f"{key}.{suffix}", text)
            for cmd in COMMANDS + JOB_COMMANDS:
                cmd = [c.replace("{id}", jobid).replace("{key}", key) for c in cmd]
                result = invoke(state, *cmd)
                assert_clean(result, (suffix, text, cmd))
                if result.exit_code == 1 and "damaged" in result.stderr:
                    assert f"{key}.{suffix}" in result.stderr and jobid in result.stderr, result.stderr
            put_raw(state, f"{key}.{suffix}", good)


def test_damaged_eventlog_is_named_by_readers(busy):
    state, ids = busy
    key = kvs_key(decode(ids[0]))
    good = raw(state, f"{key}.eventlog")
    put_raw(state, f"{key}.eventlog", good[:40] + "\x00garbage\n" + good[40:])
    for cmd in (["job", "eventlog", ids[0]], ["kvs", "eventlog", "get", f"{key}.eventlog"],
                ["job", "wait-event", ids[0], "clean"]):
        result = invoke(state, *cmd)
        assert result.exit_code == 1, (cmd, result.output)
        assert result.stderr.count("\n") == 1
        assert f"job {ids[0]}: damaged KVS key {key}.eventlog: line 1" in result.stderr, result.stderr


@pytest.mark.parametrize("damage", ["garbage", "order", "json"])
def test_one_damaged_job_is_quarantined_after_a_rebuild(busy, damage):
    state, ids = busy
    bad = ids[0]  # running
    key = kvs_key(decode(bad))
    good = raw(state, f"{key}.eventlog")
    lines = good.splitlines(keepends=True)
    if damage == "garbage":
        put_raw(state, f"{key}.eventlog", lines[0] + "{not json\n" + "".join(lines[1:]))
    elif damage == "order":
        put_raw(state, f"{key}.eventlog", "".join(lines[1:]) + lines[0])
    else:
        put_raw(state, f"{key}.eventlog", '{"a": 1}', kind="json")
    sql(state, "DROP TABLE jobs")  # the index is rebuilt from the eventlogs
    result = invoke(state, "jobs", "-a", "-no", "{id} {state}")
    assert result.exit_code == 0, result.output
    assert bad not in result.stdout
    assert sorted(result.stdout.split()[::2]) == sorted(ids[1:])
    assert result.stderr.count("\n") == 1
    assert f"job {bad}: damaged KVS key {key}.eventlog" in result.stderr
    assert "quarantined" in result.stderr
    # the rest keeps working: the quarantined job's core went back to the
    # scheduler, and the two-node job waiting for it runs
    assert invoke(state, "jobs", "-no", "{state}", ids[1]).stdout == "RUN\n"
    new = invoke(state, "submit", "sleep", "inf").stdout.strip()
    assert invoke(state, "jobs", "-no", "{state}", new).stdout == "SCHED\n"
    # reported when found, not on every command
    assert invoke(state, "jobs", "-a").stderr == ""
    assert "quarantined" in invoke(state, "dmesg").stdout
    assert invoke(state, "sched", "check").exit_code == 0


# -- kvs put of instance keys --------------------------------------------------------------

@pytest.mark.parametrize("key", ["instance.meta", "instance.clock", "config", "sched.state", "sched.module",
                                 "checkpoint.job-manager", "job-manager.sched", "resource.drain-state"])
def test_kvs_put_of_managed_keys_is_refused(busy, key):
    state, ids = busy
    before = raw(state, key) if key != "resource.drain-state" else None
    result = invoke(state, "kvs", "put", f"{key}=garbage")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"flux-lite kvs: ERROR: {key}: refusing to overwrite an instance key (")
    if before is not None:
        assert raw(state, key) == before
    assert invoke(state, "submit", "sleep", "inf").exit_code == 0


def test_a_damaged_resource_eventlog_counts_only_at_the_next_module_load(busy):
    # as in Flux: the owner may write resource.eventlog; the loaded module
    # keeps its drain state, and loading it again checks what was written
    state, ids = busy
    assert invoke(state, "resource", "drain", "1", "fan").exit_code == 0
    assert invoke(state, "kvs", "put", "resource.eventlog=garbage").exit_code == 0
    assert invoke(state, "submit", "sleep", "inf").exit_code == 0
    assert invoke(state, "resource", "drain", "-no", "{ranks} {reason}").stdout == "1 fan\n"
    result = invoke(state, "module", "load", "resource")
    assert result.exit_code == 1 and "damaged KVS key resource.eventlog" in result.stderr
    assert invoke(state, "resource", "drain", "-no", "{ranks} {reason}").stdout == "1 fan\n"


def test_kvs_put_of_job_keys_is_refused(busy):
    state, ids = busy
    key = kvs_key(decode(ids[0]))
    for suffix in ("eventlog", "R", "jobspec", "J", "guest.exec.eventlog"):
        result = invoke(state, "kvs", "put", f"{key}.{suffix}=garbage")
        assert result.exit_code == 1, suffix
        assert "job data is written by the job manager" in result.stderr


@pytest.mark.parametrize("value", ["garbage", "{}", '{"version": 1}', '{"version": 1, "execution": {"R_lite": []}}',
                                   '{"version":1,"execution":{"R_lite":[{"rank":"0-x","children":{"core":"0"}}]}}'])
def test_kvs_put_resource_R_garbage_is_refused_then_submit_works(busy, value):
    state, ids = busy
    before = raw(state, "resource.R")
    result = invoke(state, "kvs", "put", f"resource.R={value}")
    assert result.exit_code in (1, 2) and "resource.R: not a valid R" in result.stderr, result.output
    assert raw(state, "resource.R") == before
    assert invoke(state, "submit", "sleep", "inf").exit_code == 0


def test_kvs_put_other_keys_still_allowed(busy):
    state, ids = busy
    assert invoke(state, "kvs", "put", "test.a=1", 'test.b={"x": [1, 2]}').exit_code == 0
    assert invoke(state, "kvs", "get", "test.b").stdout == '{"x":[1,2]}\n'


@pytest.mark.parametrize("args", [
    ["kvs", "put", "test.deep=" + "[" * 100000 + "]" * 100000],
    ["kvs", "put", "test.big=" + "9" * 100000],
    ["kvs", "put", "test.\udcff=1"], ["kvs", "get", "test.\udcff"], ["kvs", "ls", "test.\udcff"],
    ["kvs", "put", "test.x=\udcff"], ["kvs", "put", "test.\x1b[2J=1"],
])
def test_kvs_hostile_input_is_one_line(busy, args):
    state, ids = busy
    result = invoke(state, *args)
    assert_clean(result, args)


# -- the derived and log tables ---------------------------------------------------------------

def _table_columns(state):
    tables = [r[0] for r in sql(state, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT IN ('kvs', 'sqlite_sequence') ORDER BY name")]
    return [(t, r[1]) for t in tables for r in sql(state, f'PRAGMA table_info("{t}")')]


ROW_GARBAGE = ["garbage", "{", 1e308, -1, "null", 2 ** 62]
ROW_COMMANDS = [["jobs", "-a"], ["submit", "sleep", "inf"], ["clock", "advance", "1h"], ["sched", "check"], ["dmesg"],
                ["fsck"]]


def test_every_column_of_every_table_damaged_is_never_a_traceback(busy):
    """Each column of each SQL table (the job index, timers, dependencies,
    the scheduler's tables, the log) overwritten with garbage: the commands
    answer in one line or work, never a traceback. (Timers, the log, the
    dependency and the scheduler's queue rows were tracebacks.)"""
    import shutil

    state, ids = busy
    invoke(state, "submit", f"--dependency=afterok:{ids[0]}", "sleep", "inf")
    invoke(state, "submit", "-N2", "-t", "1h", "sleep", "inf")  # pending: a scheduler queue row
    pristine = state.parent / "pristine"
    shutil.copytree(state, pristine)
    columns = _table_columns(state)
    assert len(columns) >= 30
    for i, (table, column) in enumerate(columns):
        shutil.rmtree(state)
        shutil.copytree(pristine, state)
        try:
            sql(state, f'UPDATE "{table}" SET "{column}" = ?', ROW_GARBAGE[i % len(ROW_GARBAGE)])
        except sqlite3.Error:
            continue  # a constraint refuses it: SQLite's own check
        for cmd in ROW_COMMANDS:
            assert_clean(invoke(state, *cmd), (table, column, cmd))
