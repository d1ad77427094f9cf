"""Every command, fed garbage, answers with one line and an exit code — never a traceback."""

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli

# Flux's own exit codes beyond 0/1/2: flux ion-resource's ENOENT, EBUSY, ENODEV
EXTRA_EXITS = {"ion-resource": (3, 16, 19)}

GARBAGE = [
    ["--bogus-option"],
    ["foo["],
    ["-1"],
    ["\u0192\u0192\u0192"],
    ["job.0000"],
    ["18446744073709551616"],
    ["duration=+"],
    ["x=y", "=", "=="],
    ["[1-0]"],
    ["inf"],
    ["", ""],
    ["-t", "NaNs", "true"],
    ["0x", "--", "-"],
]


def command_paths(group=cli, prefix=()):
    ctx = group.make_context("flux-lite", [], resilient_parsing=True)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        path = prefix + (name,)
        yield path
        if hasattr(cmd, "list_commands"):
            yield from command_paths(cmd, path)


# (`python` hands its arguments to the interpreter: tests/test_flux_python.py)
PATHS = [p for p in command_paths() if p not in (("start",), ("python",))]


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    path = tmp_path_factory.mktemp("garbage") / "state"
    runner = CliRunner()
    result = runner.invoke(cli, ["--state-dir", str(path), "start", "--test-size=2", "--clock=virtual"])
    assert result.exit_code == 0, result.output
    # something to poke at
    runner.invoke(cli, ["--state-dir", str(path), "submit", "-N1", "-t", "1m", "true"])
    return path


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_garbage_arguments_never_crash(state, path):
    runner = CliRunner()
    for args in GARBAGE:
        result = runner.invoke(cli, ["--state-dir", str(state), *path, *args], input="garbage\n\x00\n")
        where = f"flux-lite {' '.join(path + tuple(args))}"
        assert "Traceback" not in result.output, where
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            where, repr(result.exception))
        # (run exits with its job's code: 127 for a command this machine lacks, as Flux's)
        assert result.exit_code in ((0, 1, 2, 127) if path in (("run",), ("broker",)) else (0, 1, 2)
                                    + EXTRA_EXITS.get(path[0], ())), (
            where, result.exit_code, result.output)
        if result.exit_code:
            errors = [line for line in result.stderr.splitlines() if "rror:" in line]  # (usage names --error)
            assert len(errors) <= 1, (where, result.stderr)


def test_no_instance_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["--state-dir", str(tmp_path / "none"), "jobs"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "flux-lite start" in result.stderr
