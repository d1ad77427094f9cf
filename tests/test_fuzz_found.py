"""What the hypothesis fuzz (tests/test_fuzz_hypothesis.py) found, pinned
down one by one: each failed before its fix."""

import time


def test_replay_refuses_an_endless_line(flux, tmp_path):
    # /dev/zero is one line without end: read it whole and the command never ends
    r = flux.fails("replay", "/dev/zero")
    assert r.stderr == ("flux-lite replay: ERROR: /dev/zero: a line longer than 4096 characters: "
                        "not an SWF trace\n")


def test_deeply_nested_yaml_jobspec_is_refused_at_once(flux, tmp_path):
    # 200 KB of brackets: PyYAML took 1.7 s of CPU (9 s on a loaded machine) to find out
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000 + "]" * 100000)
    t0 = time.process_time()
    r = flux.fails("job", "submit", path)
    assert time.process_time() - t0 < 0.5
    assert r.stderr == "flux-lite job: ERROR: jobspec: nesting too deep\n"


def test_deeply_nested_yaml_config_is_refused_at_once(flux, tmp_path):
    # (a guard: the config path already stopped at once, on a RecursionError)
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "{b: " * 50000 + "1" + "}" * 50000 + "\n")
    t0 = time.process_time()
    r = flux.fails("config", "load", path)
    assert time.process_time() - t0 < 0.5
    assert r.stderr.endswith("nested too deeply\n") and r.stderr.count("\n") == 1


def test_brackets_in_quoted_yaml_strings_are_not_nesting(flux, tmp_path):
    from flux_lite.formats.bounds import flow_depth_exceeds

    assert not flow_depth_exceeds("a: '" + "[" * 5000 + "'\nb: \"" + "{\\\"" * 3000 + "\"\n")
    assert flow_depth_exceeds("[" * 1001) and not flow_depth_exceeds("[" * 1000 + "]" * 1000)


def test_restore_refuses_dev_zero_at_once(tmp_path):
    # read whole, /dev/zero never ends (or ends in MemoryError)
    from conftest import Flux

    flux = Flux(tmp_path / "state")
    r = flux.fails("start", "--restore", "/dev/zero")
    assert r.stderr == "flux-lite start: ERROR: Unrecognized archive format\n"
    assert not (tmp_path / "state").exists()


def test_restore_stops_a_decompression_bomb(tmp_path, monkeypatch):
    import gzip

    from conftest import Flux
    from flux_lite import archive

    # a tar of 64 MiB of zeros (128 entries) in 64 KiB of gzip (1000 to 1),
    # against a floor lowered to 1 MiB
    monkeypatch.setattr(archive, "MIN_BUDGET", 1 << 20)
    bomb = tmp_path / "bomb.tar.gz"
    zeros = bytes(512 << 10)
    bomb.write_bytes(gzip.compress(archive.encode(
        (archive.Entry(f"junk/{i}", data=zeros) for i in range(128)), "tar"), 9))
    assert bomb.stat().st_size < 100 << 10
    flux = Flux(tmp_path / "state")
    t0 = time.process_time()
    r = flux.fails("start", "--restore", bomb)
    assert time.process_time() - t0 < 2
    budget = 400 * bomb.stat().st_size
    assert r.stderr == (f"flux-lite start: ERROR: archive larger than {budget / (1 << 20):.0f} MiB once decompressed "
                        "(over 400 times its compressed size, as a decompression bomb is): "
                        "if it is genuine, allow more with --max-size=SIZE\n")
    import io
    import tarfile

    big = tmp_path / "big.tar"
    with tarfile.open(big, "w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("resource/R")
        info.size = 2 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    r = flux.fails("start", "--restore", big)
    assert r.stderr == "flux-lite start: ERROR: archive entry larger than 1 MiB: allow more with --max-size=SIZE\n"
