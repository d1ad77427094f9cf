"""flux_lite.api: flux-lite's own Python API (what Flux has no call for)."""

import json
import pathlib

import pytest

from flux_lite import api
from flux_lite.errors import FluxLiteError
from flux_lite.instance import VIRTUAL_START

DATA = pathlib.Path(__file__).resolve().parent / "data"


def test_start_creates_a_virtual_clock_instance_the_cli_reaches(tmp_path, monkeypatch):
    from tests.conftest import Flux

    inst = api.start(tmp_path / "state", size=3, cores=2, config={"queues": {"batch": {}}})
    try:
        assert api.now(inst) == VIRTUAL_START
        assert api.advance(inst, 90) == VIRTUAL_START + 90
        assert api.now(inst) == VIRTUAL_START + 90
    finally:
        inst.close()
    flux = Flux(tmp_path / "state")
    assert flux.out("resource", "list", "-no", "{nnodes} {ncores}").split("\n")[0] == "3 6"
    assert flux.out("queue", "list", "-no", "{queue}") == "batch\n"
    assert flux.now() == VIRTUAL_START + 90


def test_start_takes_a_config_file_and_refuses_an_existing_instance(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sched]\npolicy = "easy"\n')
    api.start(tmp_path / "s", config=cfg).close()
    with pytest.raises(FluxLiteError, match="already exists"):
        api.start(tmp_path / "s")
    with api.open(tmp_path / "s") as inst:
        assert inst.config["sched"]["policy"] == "easy"


def test_advance_refuses_a_real_clock(tmp_path):
    inst = api.start(tmp_path / "s", clock="real")
    try:
        with pytest.raises(FluxLiteError, match="the clock is real"):
            api.advance(inst, 1)
    finally:
        inst.close()


def test_replay_gives_the_summary_the_command_prints(tmp_path):
    from click.testing import CliRunner

    from flux_lite.cli.main import cli

    summary = api.replay(DATA / "kth-sp2-first400.swf", policy="easy", limit=50)
    out = CliRunner().invoke(cli, ["replay", "--json", "--policy=easy", "--limit=50",
                                   str(DATA / "kth-sp2-first400.swf")]).stdout
    expected = json.loads(out)
    del expected["trace"]
    assert summary == expected
    assert summary["jobs"] == 50 and summary["policy"] == "easy"
    api.replay(DATA / "kth-sp2-first400.swf", limit=5, keep=tmp_path / "kept")
    assert (tmp_path / "kept").is_dir()
    with pytest.raises(FluxLiteError, match="already exists"):
        api.replay(DATA / "kth-sp2-first400.swf", limit=5, keep=tmp_path / "kept")


def test_bad_trace_is_a_flux_lite_error(tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    with pytest.raises(FluxLiteError):
        api.replay(bad)


def test_the_readme_example_runs(tmp_path, capsys, monkeypatch):
    readme = (DATA.parent.parent / "README.md").read_text()
    block = readme.split("## Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(DATA.parent.parent)
    exec(compile(block.replace("/tmp/rehearsal", str(tmp_path / "r")), "README", "exec"), {})
    utilization, wait = capsys.readouterr().out.split()
    assert 0 < float(utilization) <= 1 and float(wait) >= 0
    assert (tmp_path / "r").is_dir() and (tmp_path / "r.tgz").is_file()
    with api.open(tmp_path / "r-copy") as copy:
        assert api.now(copy) == VIRTUAL_START + 3600


def test_dump_and_restore_round_trip_as_the_commands_do(tmp_path):
    from tests.conftest import Flux

    flux = Flux(tmp_path / "a")
    flux("start", "--test-size=2", "--clock=virtual")
    done = flux.submit("-n1", "-S", "exec.test.run_duration=1s", "true")
    running = flux.submit("-N1", "-S", "exec.test.run_duration=1h", "sleep", "3600")
    flux.advance("10s")
    seen = []
    with api.open(tmp_path / "a") as inst:
        n = api.dump(inst, tmp_path / "a.tgz", progress=lambda keys, blobs: seen.append(keys))
    assert n > 0 and (tmp_path / "a.tgz").exists()
    # the command's own archive of the same state has the same keys
    flux("dump", "-q", str(tmp_path / "cmd.tgz"))
    import tarfile

    def names(path):
        with tarfile.open(path) as tar:
            return sorted(tar.getnames())

    assert names(tmp_path / "a.tgz") == names(tmp_path / "cmd.tgz")

    restored = []
    inst = api.restore(tmp_path / "a.tgz", tmp_path / "b", progress=lambda k, b: restored.append(k))
    inst.close()
    copy = Flux(tmp_path / "b")
    assert copy.state(done) == "INACTIVE" and copy.state(running) == "RUN"
    assert copy.out("job", "eventlog", done) == flux.out("job", "eventlog", done)
    assert copy.now() == flux.now()
    with pytest.raises(FluxLiteError, match="already exists"):
        api.restore(tmp_path / "a.tgz", tmp_path / "b")
    api.restore(tmp_path / "a.tgz", tmp_path / "b", force=True).close()


def test_dump_refuses_an_output_it_cannot_write_before_reading(tmp_path):
    inst = api.start(tmp_path / "s")
    try:
        with pytest.raises(FluxLiteError, match="No such format 'x.rar'"):
            api.dump(inst, "x.rar")
        with pytest.raises(FluxLiteError, match="Failed to open"):
            api.dump(inst, tmp_path / "nodir" / "x.tgz")
    finally:
        inst.close()
