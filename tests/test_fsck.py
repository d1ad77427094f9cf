"""flux-lite fsck: what it checks, and what --repair and --rebuild fix."""

import sqlite3

import pytest

from flux_lite.formats.jobid import decode, kvs_key
from flux_lite.kvs import decode_value
from flux_lite.stored import row_text


def sql(flux, query, *args):
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    conn.create_function("flux_lite_unpack", 1, row_text)  # (a record's text, packed or not)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def raw(flux, key):
    """A KVS value's text (unpacked: an inactive job's values are packed)."""
    kind, value = sql(flux, "SELECT kind, value FROM kvs WHERE key = ?", key)[0]
    return decode_value(key, kind, value)[1]


@pytest.fixture(autouse=True, params=["one process", "two processes"])
def processes(request, monkeypatch):
    """Every check also with the history split between two processes
    (fsck forks a second one for a large history: here for any)."""
    from flux_lite import fsck

    if request.param == "two processes":
        monkeypatch.setattr(fsck, "PARALLEL_MIN_JOBS", 1)
    return request.param


@pytest.fixture
def busy(flux):
    ids = [flux.submit("-t", "1h", "sleep", "inf"), flux.submit("-N2", "-t", "1h", "sleep", "inf"),
           flux.submit("-t", "5s", "sleep", "inf"), flux.submit("sleep", "inf")]
    flux.advance("10s")
    flux("cancel", ids[3])
    flux("resource", "drain", "3", "maintenance")
    flux.advance("1m")
    return flux, ids


def test_healthy_instance_is_ok(busy):
    flux, ids = busy
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.out("fsck", "--rebuild") == "fsck: ok (derived tables rebuilt)\n"
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.out("sched", "check") == "sched check: ok\n"


def test_damaged_eventlog_reported_then_moved_aside(busy):
    flux, ids = busy
    key = kvs_key(decode(ids[0]))
    good = raw(flux, key + ".eventlog")
    sql(flux, "UPDATE kvs SET value = ? WHERE key = ?", good.replace('"submit"', '"sub\x00mit"', 1),
        key + ".eventlog")
    result = flux.fails("fsck")
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"job {ids[0]}: damaged KVS key {key}.eventlog: ")
    assert lines[-1] == "fsck: 1 problem"
    result = flux("fsck", "--repair")
    assert result.stdout.splitlines()[-1] == "fsck: 1 problem, 1 repaired"
    assert "[repaired: moved to lost+found.]" in result.stdout
    assert flux.out("fsck") == "fsck: ok\n"
    # nothing deleted: the keys are under lost+found
    assert sql(flux, "SELECT value FROM kvs WHERE key = ?", "lost+found." + key + ".eventlog")[0][0].startswith(
        good[:10])
    assert ids[0] not in flux.out("jobs", "-a")
    # its id is never reused, and its core went back to the scheduler
    new = flux.submit("-t", "1h", "sleep", "inf")
    assert decode(new) > max(decode(j) for j in ids)
    assert flux.out("sched", "check") == "sched check: ok\n"


@pytest.mark.parametrize("damage", ["order", "alloc-first", "clean-twice"])
def test_rfc21_order_is_checked(busy, damage):
    flux, ids = busy
    key = kvs_key(decode(ids[2])) + ".eventlog"  # timed out: alloc .. clean
    lines = raw(flux, key).splitlines(keepends=True)
    if damage == "order":
        text = "".join([lines[1], lines[0]] + lines[2:])
    elif damage == "alloc-first":
        text = "".join([lines[0]] + [ln for ln in lines if '"alloc"' in ln] + lines[1:])
    else:
        text = "".join(lines + [lines[-1]])
    sql(flux, "UPDATE kvs SET kind = 'eventlog', value = ? WHERE key = ?", text, key)
    result = flux.fails("fsck")
    assert f"damaged KVS key {key}" in result.stdout


def test_damaged_index_row_and_missing_row_are_rebuilt(busy):
    flux, ids = busy
    sql(flux, "UPDATE jobs SET data = '{garbage' WHERE id = ?", decode(ids[1]))
    sql(flux, "DELETE FROM jobs WHERE id = ?", decode(ids[2]))
    sql(flux, "UPDATE jobs SET state = 8, data = replace(flux_lite_unpack(data), '\"state\":64', '\"state\":8') "
        "WHERE id = ?",
        decode(ids[3]))
    out = flux.fails("fsck").stdout
    assert f"job {ids[1]}: damaged row in the jobs index: " in out
    assert f"job index: {ids[2]} is missing" in out
    assert f"job index: {ids[3]}: state differ from its eventlog" in out
    out = flux("fsck", "--repair").stdout
    assert out.splitlines()[-1] == "fsck: 3 problems, 3 repaired", out
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.state(ids[3]) == "INACTIVE"


@pytest.mark.parametrize("damage", [None, "garbage", "[1,2]", '[null, "x"]', 42])
def test_damaged_listing_column_lists_from_the_record_and_is_repaired(busy, damage):
    """The listing column is what `jobs` reads of each job; damaged or
    missing, the job is listed from its whole record (the same line), fsck
    finds it and --repair writes it again."""
    flux, ids = busy
    argv = ("jobs", "-a", "-o", "long")
    before = flux.out(*argv)
    before_json = flux.out(*argv[:2], "--json")
    for jobid in ids[1:3]:
        sql(flux, "UPDATE jobs SET listing = ? WHERE id = ?", damage, decode(jobid))
    assert flux.out(*argv) == before
    assert flux.out(*argv[:2], "--json") == before_json
    assert flux.out("jobs", "-o", "long", ids[1]) == "\n".join(before.splitlines()[:1] + [
        line for line in before.splitlines() if line.split()[0] == ids[1]]) + "\n"
    out = flux.fails("fsck").stdout
    for jobid in ids[1:3]:
        assert f"job index: {jobid}: listing column differs from its record" in out
    assert f"job index: {ids[0]}: listing" not in out
    flux("fsck", "--repair")
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.out(*argv) == before


@pytest.mark.parametrize("key", ["sched.state", "job-manager.sched", "checkpoint.job-manager", "sched.module"])
def test_damaged_rebuildable_state_is_repaired(busy, key):
    flux, ids = busy
    sql(flux, "UPDATE kvs SET value = '[1,' WHERE key = ?", key)
    assert flux("submit", "true", check=False).exit_code == 1
    assert f"damaged KVS key {key}" in flux.fails("fsck").stdout
    flux("fsck", "--repair")
    assert flux.out("fsck") == "fsck: ok\n"
    new = flux.submit("-t", "1h", "true")
    assert decode(new) > max(decode(j) for j in ids)
    assert flux.out("sched", "check") == "sched check: ok\n"
    assert flux.state(ids[0]) == "RUN"


@pytest.mark.parametrize("key", ["instance.meta", "instance.clock", "resource.R", "config"])
def test_damaged_primary_keys_are_reported_not_repaired(busy, key):
    flux, ids = busy
    good = raw(flux, key)
    sql(flux, "UPDATE kvs SET value = '[]' WHERE key = ?", key)
    out = flux.fails("fsck", "--repair").stdout
    assert f"damaged KVS key {key}" in out and "not repairable" in out
    assert raw(flux, key) == "[]"  # untouched
    sql(flux, "UPDATE kvs SET value = ? WHERE key = ?", good, key)
    assert flux.out("fsck") == "fsck: ok\n"


def test_sqlite_corruption_is_reported(busy):
    flux, ids = busy
    path = flux.state_dir + "/kvs.sqlite"
    size = 4096
    with open(path, "r+b") as f:
        f.seek(size + 8)  # page 2: the cell pointers of a b-tree page
        f.write(b"\x7f" * 200)
    result = flux("fsck", check=False)
    assert result.exit_code == 1
    assert "sqlite" in result.output or "state database" in result.output
    assert "Traceback" not in result.output


def test_guest_may_check_but_not_repair(busy):
    flux, ids = busy
    guest = {"FLUX_HANDLE_USERID": "1234"}
    assert flux.out("fsck", env=guest) == "fsck: ok\n"
    result = flux.fails("fsck", "--repair", env=guest)
    assert "for the instance owner" in result.stderr


def test_scheduler_view_is_checked_and_resynced(busy):
    flux, ids = busy
    # the scheduler's allocations are rows of their own (flux_lite.sched.store)
    sql(flux, "DELETE FROM sched_alloc WHERE id = ?", decode(ids[0]))
    out = flux.fails("fsck").stdout
    assert f"scheduler: {ids[0]}: holds" in out and "does not track it" in out
    assert "[repaired: rebuilt]" in flux.out("fsck", "--repair")
    assert flux.out("fsck") == "fsck: ok\n"


def test_every_ordinary_history_is_ok(flux):
    """fsck knows every eventlog the job manager writes: an exec that fails
    before start (release without start), timeouts, holds, cancels, updates,
    notes, dependencies, a waited-for job, a reloaded scheduler."""
    failed = flux.submit("-t", "1h", "-S", "exec.test.run_duration=5", "true")
    timed_out = flux.submit("-t", "10s", "sleep", "inf")
    first = flux.submit("-S", "exec.test.run_duration=3s", "true")
    flux.submit(f"--dependency=afterok:{first}", "true")
    held = flux.submit("--urgency=hold", "true")
    pending = flux.submit("-N2", "-t", "1h", "sleep", "inf")
    busy = flux.submit("-t", "1h", "-S", "exec.test.run_duration=1m", "true")
    flux("job", "urgency", held, "hold")
    flux("update", busy, "duration=2h")
    flux("job", "raise", "--severity=3", "--type=note", busy, "hello")
    flux("cancel", held, pending)
    flux.advance("30s")
    flux("resource", "drain", "1", "test")
    flux("sched", "reload")
    flux.advance("2h")
    waited = flux.submit("--flags=waitable", "-S", "exec.test.run_duration=1s", "true")
    flux("job", "wait", waited)
    assert flux.out("jobs", "-no", "{status}", failed, timed_out) == "FAILED\nTIMEOUT\n"
    assert flux.eventlog(failed)[-4:] == ["exception", "release", "free", "clean"]
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.out("fsck", "--rebuild") == "fsck: ok (derived tables rebuilt)\n"


@pytest.mark.parametrize("suffix,reason", [("jobspec", "jobspec needs resources and tasks lists"),
                                           ("R", "R version must be 1"), ("J", "value must be a JSON object")])
def test_damaged_jobspec_and_R_are_reported_then_moved_aside(busy, suffix, reason):
    flux, ids = busy
    key = kvs_key(decode(ids[0]))
    sql(flux, "UPDATE kvs SET value = ? WHERE key = ?", '{"x": 1}' if suffix != "J" else "[1]", f"{key}.{suffix}")
    out = flux.fails("fsck").stdout
    assert out == f"job {ids[0]}: damaged KVS key {key}.{suffix}: {reason}\nfsck: 1 problem\n"
    assert flux("fsck", "--repair").stdout.splitlines()[-1] == "fsck: 1 problem, 1 repaired"
    assert flux.out("fsck") == "fsck: ok\n"
    assert ids[0] not in flux.out("jobs", "-a")


@pytest.mark.parametrize("table,column,value,named", [
    ("timers", "t", "garbage", "damaged row in the timers table: row "),
    ("timers", "kind", "bogus.x", "damaged row in the timers table: row "),
    ("timers", "arg", "{", "damaged row in the timers table: row "),
    ("sched_queue", "priority", "x", "damaged KVS key sched.state: the scheduler cannot load it: queue: "),
    ("sched_queue", "annotations", "5", "damaged KVS key sched.state: the scheduler cannot load it: queue: "),
    ("depends", "jobid", "x", "damaged row in the dependency table: depends: "),
])
def test_damaged_derived_rows_are_one_line_then_rebuilt(busy, table, column, value, named):
    """Rows of the derived tables, damaged as a bit flip or a stray tool
    would: a command says which table (these were tracebacks), fsck finds
    it, --repair rebuilds it from the eventlogs."""
    flux, ids = busy
    flux.submit(f"--dependency=afterok:{ids[0]}", "true")  # a row in depends
    flux.submit("-N4", "-t", "1h", "true")  # pending (node 3 is drained): a row in sched_queue
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    try:
        assert conn.execute(f"UPDATE {table} SET {column} = ?", (value,)).rowcount > 0
    finally:
        conn.close()
    assert named in flux.fails("fsck").stdout
    for cmd in (["submit", "true"], ["clock", "advance", "10m"], ["jobs", "-a"], ["sched", "check"]):
        r = flux(*cmd, check=False)
        assert r.exit_code in (0, 1), (cmd, r.output)
        if r.exit_code:
            assert r.stderr.count("\n") == 1 and named in r.stderr, (cmd, r.stderr)
    assert "[repaired: rebuilt]" in flux.out("fsck", "--repair")
    assert flux.out("fsck") == "fsck: ok\n"
    assert flux.state(ids[0]) == "RUN"
    flux.submit("true")


def test_damaged_log_row_is_named_and_cleared_by_dmesg_C(busy):
    flux, ids = busy
    sql(flux, "UPDATE dmesg SET t = 'x' WHERE seq = 1")
    r = flux.fails("dmesg")
    assert r.stderr == ("flux-lite dmesg: ERROR: damaged row in the log: entry 1: 'x' 'broker' 'info' "
                        "(clear the log with 'flux-lite dmesg -C')\n")
    assert "damaged row in the log: entry 1" in flux.fails("fsck").stdout
    assert flux("submit", "true").exit_code == 0  # the rest works
    flux("dmesg", "-C")
    assert flux.out("fsck") == "fsck: ok\n"


def test_damaged_queue_state_is_named_and_reset(flux_factory):
    """job-manager.queue (each queue's enable/start state) was read unchecked:
    garbage over it was a traceback in sched check, and kvs put took it."""
    flux = flux_factory("--test-size=2", config="queues:\n  batch: {}\n  debug: {}\n")
    flux("queue", "start", "--all")
    flux("queue", "stop", "debug")
    r = flux.fails("kvs", "put", "job-manager.queue=x")
    assert "refusing to overwrite an instance key (use 'flux-lite queue enable/disable/start/stop')" in r.stderr
    sql(flux, "UPDATE kvs SET value = '\"x\"' WHERE key = 'job-manager.queue'")
    for cmd in (["submit", "-q", "batch", "true"], ["queue", "status"], ["queue", "start", "debug"]):
        r = flux.fails(*cmd)
        assert r.stderr.endswith("damaged KVS key job-manager.queue: value must be a JSON object "
                                 "(see 'flux-lite fsck')\n") and r.stderr.count("\n") == 1, (cmd, r.stderr)
    out = flux("fsck", "--repair").stdout
    assert out.splitlines()[-1] == "fsck: 1 problem, 1 repaired"
    # the queues are back to their defaults (configured queues start stopped, as in Flux)
    assert flux.out("queue", "status", "batch") == "batch: Job submission is enabled\nbatch: Scheduling is stopped\n"
    assert flux.out("fsck") == "fsck: ok\n"
