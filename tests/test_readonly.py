"""A read-only state directory: reading commands work on the last
committed state and say so once; writing commands fail with one line.

Tests usually run as root, whom permissions do not stop, so the writability
probe is replaced; SQLite's read-only mode is real either way.
"""

import os
import stat

import pytest

import flux_lite.instance as instance_mod

READERS = [
    ["jobs", "-a"], ["jobs", "-a", "-no", "{id} {state}"], ["job", "eventlog", "{id}"], ["job", "info", "{id}", "R"],
    ["resource", "list"], ["resource", "status"], ["housekeeping", "list"], ["dmesg"], ["sched", "check"],
    ["kvs", "get", "resource.R"], ["kvs", "ls"], ["config", "get"], ["clock"], ["fsck"],
]
WRITERS = [["submit", "true"], ["cancel", "{id}"], ["clock", "advance", "1m"], ["dmesg", "-C"],
           ["resource", "drain", "0"], ["kvs", "put", "a=1"]]


@pytest.fixture
def frozen(flux, monkeypatch):
    running = flux.submit("-t", "1h", "sleep", "inf")
    done = flux.submit("-t", "1s", "true")
    flux.advance("10s")
    before = open(flux.state_dir + "/kvs.sqlite", "rb").read()
    assert not os.path.exists(flux.state_dir + "/kvs.sqlite-wal")
    monkeypatch.setattr(instance_mod, "writable", lambda *a: False)
    return flux, running, done, before


def test_readers_work_and_say_so_once(frozen):
    flux, running, done, before = frozen
    for cmd in READERS:
        cmd = [c.replace("{id}", running) for c in cmd]
        result = flux(*cmd)
        assert result.exit_code == 0, (cmd, result.output)
        lines = result.stderr.splitlines()
        if cmd[0] != "fsck":
            assert lines == [f"flux-lite {cmd[0]}: warning: {flux.state_dir} is read-only: showing the last "
                             "committed state (nothing is saved)"], (cmd, result.stderr)
    assert flux.out("jobs", "-a", "-no", "{id} {state}").split() == [running, "RUN", done, "INACTIVE"]
    assert open(flux.state_dir + "/kvs.sqlite", "rb").read() == before


def test_readers_show_the_last_committed_state(frozen):
    flux, running, done, before = frozen
    # an hour passes in the virtual clock only when a command commits it
    assert flux.now() == 1767225610.0
    assert flux.state(running) == "RUN"


def test_writers_fail_with_one_line_and_change_nothing(frozen):
    flux, running, done, before = frozen
    for cmd in WRITERS:
        cmd = [c.replace("{id}", running) for c in cmd]
        result = flux(*cmd, check=False)
        assert result.exit_code == 1, (cmd, result.output)
        # one line: the error says it is read-only (no warning before it)
        assert result.stderr.count("\n") == 1 and "ERROR" in result.stderr, (cmd, result.stderr)
        assert "read-only" in result.stderr, (cmd, result.stderr)
    assert open(flux.state_dir + "/kvs.sqlite", "rb").read() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_real_read_only_directory(flux):
    jobid = flux.submit("true")
    os.chmod(flux.state_dir, stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = flux("jobs", "-a")
        assert jobid in result.stdout and "read-only" in result.stderr
        assert flux("submit", "true", check=False).exit_code == 1
    finally:
        os.chmod(flux.state_dir, 0o700)


def test_fsck_checks_but_does_not_repair_read_only(frozen):
    flux, running, done, before = frozen
    assert flux.out("fsck") == "fsck: ok\n"
    assert "read-only" in flux.fails("fsck", "--repair").stderr
