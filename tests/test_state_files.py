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
    assert invoke(state, "submit", "sleep", "inf").exit_code == 0
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


# -- as a plain user -------------------------------------------------------------------------
# Tests run as root, whom permissions do not stop. These fork and drop to
# nobody (root's interpreter stays readable in the forked memory: every
# command is run once as root first, so what it imports is already loaded).

NOBODY = 65534


def as_nobody(prepare, steps):
    """Run prepare() as root, then each step (a function returning a value)
    as uid/gid nobody in a forked child; return the steps' values."""
    import json

    prepare()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = [step() for step in steps]
            os.write(w, json.dumps(out).encode())
        except BaseException as exc:
            os.write(w, json.dumps({"error": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert not isinstance(out, dict), out
    return out


def shared_tmp():
    """A directory under /tmp that nobody may enter (pytest's tmp_path is root's, 0700)."""
    import tempfile

    path = tempfile.mkdtemp(prefix="flux-lite-nobody-", dir="/tmp")
    os.chmod(path, 0o755)
    os.chown(path, NOBODY, NOBODY)
    return path


def run_as_is(state, *args):
    r = invoke(state, *args)
    exc = r.exception
    return [r.exit_code, r.stdout, r.stderr, None if exc is None or isinstance(exc, SystemExit) else repr(exc)]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody: needs root")


@needs_root
def test_other_users_private_state_dir_is_one_line(tmp_path):
    mine = tmp_path / "state"  # root's, 0700, inside root's 0700 tmp_path
    os.chmod(tmp_path, 0o755)

    listed = []

    def prepare():
        assert invoke(mine, "start", "--clock=virtual").exit_code == 0
        for cmd in (["jobs", "-a"], ["submit", "true"], ["fsck"], ["start"], ["dump", str(tmp_path / "x.tar")]):
            invoke(mine, *cmd)
        listed.append(invoke(mine, "jobs", "-a").stdout)

    cmds = [["jobs", "-a"], ["submit", "true"], ["start"], ["fsck"], ["kvs", "get", "instance.meta"]]
    out = as_nobody(prepare, [lambda c=c: run_as_is(mine, *c) for c in cmds])
    for cmd, (code, stdout, stderr, exc) in zip(cmds, out):
        assert exc is None, (cmd, exc)
        assert (code, stdout) == (1, ""), (cmd, stderr)
        verb = "create" if cmd == ["start"] else "open"
        assert stderr == f"flux-lite {cmd[0]}: ERROR: {mine}: cannot {verb} the state directory: Permission denied\n"
    assert invoke(mine, "jobs", "-a").stdout == listed[0]  # nothing was submitted


@needs_root
def test_read_only_state_dir_as_a_plain_user():
    import shutil

    root = shared_tmp()
    state = root + "/state"

    def prepare():
        warm = root + "/warm"
        invoke(warm, "start", "--clock=virtual")
        invoke(warm, "submit", "true")
        invoke(warm, "jobs", "-a")
        shutil.rmtree(warm)

    def make():
        return [invoke(state, "start", "--clock=virtual").exit_code, invoke(state, "submit", "true").stdout]

    def freeze():
        os.chmod(state, 0o500)
        return open(state + "/kvs.sqlite", "rb").read().hex()

    def unchanged():
        return open(state + "/kvs.sqlite", "rb").read().hex()

    def uncreatable():
        os.mkdir(root + "/ro", 0o500)
        return run_as_is(root + "/ro/state", "start")

    try:
        made, before, jobs, submit, after, create = as_nobody(prepare, [
            make, freeze, lambda: run_as_is(state, "jobs", "-a", "-no", "{id} {username} {state}"),
            lambda: run_as_is(state, "submit", "true"), unchanged, uncreatable])
    finally:
        os.chmod(state, 0o700)
        shutil.rmtree(root)
    assert made[0] == 0
    jobid = made[1].strip()
    assert jobs == [0, f"{jobid} nobody INACTIVE\n",
                    f"flux-lite jobs: warning: {state} is read-only: showing the last committed state "
                    "(nothing is saved)\n", None]
    assert submit == [1, "", "flux-lite submit: ERROR: the state directory is read-only: "
                      "this command cannot save its changes\n", None]
    assert after == before
    assert create == [1, "", f"flux-lite start: ERROR: {root}/ro/state: cannot create the state directory: "
                      "Permission denied\n", None]
