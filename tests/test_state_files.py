"""The state directory and its files: modes, ownership, odd names."""

import os
import stat

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli


def invoke(state, *args, env=None):
    full = {"FLUX_F58_FORCE_ASCII": "1"}
    full.update(env or {})
    return CliRunner().invoke(cli, ["--state-dir", str(state), *map(str, args)], env=full)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022, 0o077, 0o277])
def test_state_dir_private_whatever_the_umask(tmp_path, umask):
    state = tmp_path / "new" / "state"
    old = os.umask(umask)
    try:
        result = invoke(state, "start", "--clock=virtual")
        assert result.exit_code == 0, result.output
        assert mode(state) == 0o700
        assert mode(state / "kvs.sqlite") == 0o600
        # the WAL and shared-memory files exist while a command runs
        from flux_lite.instance import Instance

        inst = Instance.open(state)
        try:
            with inst.session():
                for name in ("kvs.sqlite-wal", "kvs.sqlite-shm"):
                    assert mode(state / name) == 0o600, name
        finally:
            inst.close()
        assert invoke(state, "submit", "true").exit_code == 0
        assert mode(state / "jobid-hwm") == 0o600
    finally:
        os.umask(old)
    assert sorted(p.name for p in state.iterdir()) == ["jobid-hwm", "kvs.sqlite", "kvs.sqlite-holder"]
    assert mode(state / "kvs.sqlite-holder") & 0o077 == 0


@pytest.mark.parametrize("bits", [0o020, 0o002, 0o022])
def test_state_dir_writable_by_others_is_refused(tmp_path, bits):
    state = tmp_path / "state"
    assert invoke(state, "start", "--clock=virtual").exit_code == 0
    os.chmod(state, 0o700 | bits)
    result = invoke(state, "jobs", "-a")
    assert result.exit_code == 1
    assert result.stderr == (f"flux-lite jobs: ERROR: refusing to use {state}: other users can write it "
                             f"(chmod go-w {state})\n")
    os.chmod(state, 0o700)
    os.chmod(state / "kvs.sqlite", 0o666)
    assert invoke(state, "jobs", "-a").exit_code == 1
    os.chmod(state / "kvs.sqlite", 0o600)
    assert invoke(state, "jobs", "-a").exit_code == 0


def test_start_in_existing_shared_dir_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    result = invoke(shared, "start")
    assert result.exit_code == 1
    assert "other users can write it" in result.stderr
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize("name", ["a?b", "a#b", "a%20b", "a%3fb", "?mode=ro", "#", "%"])
def test_state_dir_names_open_exactly_that_path(tmp_path, name):
    state = tmp_path / name
    decoy = tmp_path / "a"  # what a URI parser would make of "a?b" or "a#b"
    assert invoke(decoy, "start", "--clock=virtual", "--test-size=3").exit_code == 0
    assert invoke(state, "start", "--clock=virtual", "--test-size=1").exit_code == 0
    assert invoke(state, "submit", "true").exit_code == 0
    import json

    R = json.loads(invoke(state, "kvs", "get", "resource.R").stdout)
    assert R["execution"]["R_lite"][0]["rank"] == "0"
    assert invoke(state, "jobs", "-a", "-no", "{state}").stdout.split() == ["RUN"]
    assert invoke(decoy, "jobs", "-a").stdout.count("\n") <= 1


@pytest.mark.parametrize("kind", ["file", "readonly-parent", "proc"])
def test_uncreatable_state_dir_is_one_line(tmp_path, kind):
    if kind == "file":
        state = tmp_path / "file"
        state.write_text("x")
    elif kind == "readonly-parent":
        if os.geteuid() == 0:
            pytest.skip("root writes anywhere")
        parent = tmp_path / "ro"
        parent.mkdir()
        os.chmod(parent, 0o500)
        state = parent / "state"
    else:
        state = "/proc/flux-lite-state"
    result = invoke(state, "start")
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("flux-lite start: ERROR: "), result.stderr
    result = invoke(state, "jobs")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
