"""Every command and option, fed malformed values: no traceback, no hang, and
a command that fails leaves the state exactly as it was.

Each value-taking option of each command gets malformed values (rotating
through the list below so that every value meets many options), and each
command gets malformed positional arguments. Every invocation is bounded in
wall time, so CI stays fast and a hang is a failure, not a stuck build.
"""

import signal
import sqlite3
import time

import click
import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli

MALFORMED = [
    "", "-1", "nan", "1e308", "18446744073709551616", "x" * 300, "\x1b]0;title\x07", "[", "{{}",
    "0-999999999", "%n%s", "\udcff", "node[0-99999999]", "-", "1e-400", "0x", "∞",
]
POSITIONAL = [["\udcff\x00"], ["18446744073709551615", "1e308"], ["[", "{"], ["x" * 1000]]
# options that wait by design, or leave the state dir
SKIP = {("dmesg", "-f"), ("start", "--restore")}
LIMIT = 10.0  # seconds of wall time for one invocation


def command_paths(group=cli, prefix=()):
    ctx = group.make_context("flux-lite", [], resilient_parsing=True)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from command_paths(cmd, prefix + (name,))


def cases():
    out = []
    k = 0
    for path, cmd in command_paths():
        if path == ("python",):
            continue  # its arguments are the interpreter's (tests/test_flux_python.py)
        if not isinstance(cmd, click.Group):
            for args in POSITIONAL[k % 2::2]:
                out.append((path, tuple(args)))
            k += 1
        for opt in cmd.params:
            if not isinstance(opt, click.Option) or opt.is_flag or opt.hidden:
                continue
            name = opt.opts[0]
            if (path[0], name) in SKIP:
                continue
            for _ in range(2):
                out.append((path, (f"{name}={MALFORMED[k % len(MALFORMED)]}" if name.startswith("--")
                                   else name, MALFORMED[k % len(MALFORMED)])[:1 if name.startswith("--") else 2]
                            + (("true",) if path[0] in ("submit", "run") else ())))
                k += 1
    return out


CASES = cases()


def snapshot(state):
    conn = sqlite3.connect(str(state / "kvs.sqlite"))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY 1').fetchall() for t in tables}
    finally:
        conn.close()


def _job_failed(path, result, before, after):
    """`run` (and `submit --wait/--wait-event`) exits with its job's status: a
    job that was submitted and then failed (an unsatisfiable --requires, as in
    Flux) or whose event cannot arrive under the virtual clock is one new job,
    and the output names it (submit prints its id first)."""
    if path[0] not in ("run", "submit") or len(after["jobs"]) != len(before["jobs"]) + 1:
        return False
    from flux_lite.formats.jobid import f58

    new = {row[0] for row in after["jobs"]} - {row[0] for row in before["jobs"]}
    return len(new) == 1 and f58(new.pop()) in (result.stderr if path[0] == "run" else result.stdout)


class Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise Hang()


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "state"
    runner = CliRunner()
    assert runner.invoke(cli, ["--state-dir", str(path), "start", "--test-size=2", "--clock=virtual"]).exit_code == 0
    for args in (["-t", "1h", "sleep", "inf"], ["-t", "5m", "--setattr=exec.test.run_duration=1m", "true"]):
        assert runner.invoke(cli, ["--state-dir", str(path), "submit", *args]).exit_code == 0
    return path


def test_cases_cover_every_command_and_option():
    commands = {p for p, _ in CASES}
    assert len(commands) >= 60 and len(CASES) >= 200


@pytest.mark.parametrize("chunk", range(8))
def test_malformed_values_never_crash_hang_or_change_state(state, chunk, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a job's --output files would go
    runner = CliRunner()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for path, args in CASES[chunk::8]:
            where = f"flux-lite {' '.join(path + args)!r}"
            before = snapshot(state)
            t0 = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, LIMIT)
            try:
                result = runner.invoke(cli, ["--state-dir", str(state), *path, *args], input="")
            except Hang:
                pytest.fail(f"{where}: no answer in {LIMIT} s")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            assert time.monotonic() - t0 < LIMIT, where
            assert "Traceback" not in result.output, where
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                where, repr(result.exception))
            # start COMMAND and run exit with the command's or the job's status
            if path[0] not in ("start", "run"):
                assert result.exit_code in (0, 1, 2), (where, result.exit_code, result.output)
            if result.exit_code:
                # (usage text may come first, as Flux's commands print it)
                errors = [ln for ln in result.stderr.splitlines() if "error" in ln.lower()
                          and not ln.startswith(("usage:", " "))]  # (an --error option in the usage)
                assert len(errors) <= 1, (where, result.stderr)
                after = snapshot(state)
                if _job_failed(path, result, before, after):
                    continue  # run submitted its job, which failed: the exit code is the job's
                assert after == before, f"{where} failed but changed the state"
    finally:
        signal.signal(signal.SIGALRM, old)
