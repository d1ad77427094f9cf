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
