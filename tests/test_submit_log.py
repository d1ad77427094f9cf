"""submit and bulksubmit --log / --log-stderr (where each job's id and
messages go, {cc} naming a file per copy), --progress off a terminal, and
`module debug` masks read as Flux's C tools read them (0x2, 010)."""

import os

import pytest

from click.testing import CliRunner

from flux_lite.cli.main import cli
from flux_lite.cli.params import strtoul


def as_flux(flux, *args):
    env = {"FLUX_LITE_STATE_DIR": flux.state_dir, "FLUX_F58_FORCE_ASCII": "1"}
    r = CliRunner().invoke(cli, list(args), env=env, prog_name="flux", catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_log_with_cc_writes_one_file_per_copy(flux, here):
    # t2206-job-manager-annotate submits so
    result = flux("submit", "--log=job{cc}.id", "--cc=1-3", "--flags=debug", "-n1", "hostname")
    assert result.stdout == ""
    ids = [read(here / f"job{i}.id") for i in (1, 2, 3)]
    assert all(text.endswith("\n") and text.count("\n") == 1 for text in ids)
    assert [text.strip() for text in ids] == flux.out("jobs", "-a", "-no", "{id}").split()[::-1]


def test_log_without_cc_in_the_name_holds_every_id(flux, here):
    assert flux("submit", "--log=all.ids", "--cc=1-3", "true").stdout == ""
    assert len(read(here / "all.ids").split()) == 3
    # without --cc, {cc} is no replacement: the name is as given
    flux("submit", "--log=one{cc}.id", "true")
    assert len(read(here / "one{cc}.id").split()) == 1


def test_errors_go_to_log_stderr_or_log(flux, here):
    result = flux("submit", "--log=out", "--log-stderr=err", "-q", "nosuch", "true", check=False)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    assert read(here / "out") == ""
    assert read(here / "err") == "flux-lite submit: ERROR: 'nosuch' is not a valid queue\n"


def test_as_flux_each_copy_says_its_error(flux, here):
    # as Flux 0.88: `flux submit --log=FILE -q nosuch --cc=1-2 true`
    code, out, err = as_flux(flux, "submit", "--log=both", "-q", "nosuch", "--cc=1-2", "true")
    assert (code, out, err) == (1, "", "")
    assert read(here / "both") == ("cc=1: [Errno 22] 'nosuch' is not a valid queue\n"
                                   "cc=2: [Errno 22] 'nosuch' is not a valid queue\n")
    code, out, err = as_flux(flux, "submit", "-q", "nosuch", "--cc=1-2", "true")
    assert (code, out) == (1, "")
    assert err == "cc=1: [Errno 22] 'nosuch' is not a valid queue\ncc=2: [Errno 22] 'nosuch' is not a valid queue\n"


def test_wait_verbose_reports_go_to_the_log(flux, here):
    # as Flux 0.88's job watcher: -v the end, -vv every event, timed from the submission
    result = flux("submit", "--log=w.log", "--wait", "-vv", "false", check=False)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    jobid, *lines = read(here / "w.log").splitlines()
    assert lines == [f"{jobid}: 0.000s: {line}" for line in (
        'submit {"flags":0,"urgency":16,"userid":0,"version":1}', "validate ", "depend ",
        'priority {"priority":16}', 'alloc {"annotations":{"sched":{"resource_summary":"rank0/core0"}}}',
        "start ", 'finish {"status":256}', "failed: status=256", 'release {"final":true,"ranks":"all"}',
        "free ", "clean ")]
    result = flux("submit", "--cc=1-2", "--wait", "-v", "-S", "exec.test.run_duration=2s", "true")
    ids = result.stdout.split()
    assert result.stderr == "".join(f"{jobid}: 2.000s: complete: status=0\n" for jobid in ids)


def test_bulksubmit_log_names_take_the_inputs(flux, here):
    assert flux("bulksubmit", "--log=out.{}", "echo", "{}", ":::", "a", "b").stdout == ""
    assert sorted(name for name in os.listdir(here) if name.startswith("out")) == ["out.a", "out.b"]
    assert read(here / "out.a") != read(here / "out.b")


def test_progress_off_a_terminal_is_ignored_with_flux_warning(flux):
    result = flux("submit", "--progress", "--jps", "--cc=1-2", "true")
    assert len(result.stdout.split()) == 2
    assert result.stderr == "flux-lite submit: WARNING: stdout is not a tty. Ignoring --progress option\n"


@pytest.mark.parametrize("text,value", [("2", 2), ("0x2", 2), ("0X1f", 31), ("010", 8), ("0", 0), ("zz", 0),
                                        ("5x", 5), (" 7", 7), ("08", 0), ("0x", 0), ("-1", 2**64 - 1)])
def test_masks_are_read_as_strtoul_base_0(text, value):
    assert strtoul(text) == value


def test_module_debug_takes_hex_masks(flux):
    # t2206: flux module debug --setbit 0x2 sched-simple
    assert flux.out("module", "debug", "--setbit", "0x2", "sched-simple") == "0x2\n"
    assert flux.out("module", "debug", "--set", "010", "sched-simple") == "0x8\n"
    assert flux.out("module", "debug", "--clear", "sched-simple") == "0x0\n"
