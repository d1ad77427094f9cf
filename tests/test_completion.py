"""Shell completion: the committed scripts, and the candidates flux-lite offers at TAB.

Candidates are asked for the way the scripts ask: the completion entry point
with _FLUX_LITE_COMPLETE=bash_complete (or zsh_complete) and COMP_WORDS /
COMP_CWORD in the environment, through CliRunner; one test drives the
committed bash script itself in a real bash.
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from flux_lite.cli import _complete as complete
from flux_lite.cli.main import COMMANDS, cli
from flux_lite.sched import registry

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPLETIONS = ROOT / "completions"


def load_generator():
    spec = importlib.util.spec_from_file_location("completions_generate", COMPLETIONS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_completion(words, state_dir=None, shell="bash", env=None):
    """Candidates for the command line `words` (the last one is being completed).

    Returns [(value, help)]; help is None for bash, which does not show it.
    """
    full_env = {
        "_FLUX_LITE_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": " ".join(words),
        "COMP_CWORD": str(len(words) - 1),
        "FLUX_F58_FORCE_ASCII": "1",
    }
    if state_dir is not None:
        full_env["FLUX_LITE_STATE_DIR"] = str(state_dir)
    if env:
        full_env.update(env)
    lines = raw_completion(full_env)

    if shell == "bash":
        out = []
        for line in lines:
            kind, _sep, value = line.partition(",")
            if kind == "plain":
                out.append((value, None))
        return out
    # zsh: type, value, help triples
    out = []
    for i in range(0, len(lines) - 2, 3):
        if lines[i] == "plain":
            out.append((lines[i + 1], None if lines[i + 2] == "_" else lines[i + 2]))
    return out


def raw_completion(env):
    """The answer's lines, as main() gives it (flux-lite's completion classes registered)."""
    complete.register_completion_classes()
    result = CliRunner().invoke(cli, [], env=env, prog_name="flux-lite", catch_exceptions=False)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result.stdout.splitlines()


def types(words, shell="bash", **env):
    """(type, value) of each candidate: plain, file or dir."""
    lines = raw_completion({"_FLUX_LITE_COMPLETE": f"{shell}_complete", "COMP_WORDS": " ".join(words),
                            "COMP_CWORD": str(len(words) - 1), "FLUX_F58_FORCE_ASCII": "1", **env})
    if shell == "bash":
        return [tuple(line.split(",", 1)) for line in lines]
    return [(lines[i], lines[i + 1]) for i in range(0, len(lines) - 2, 3)]


def values(*args, **kwargs):
    return [value for value, _help in run_completion(*args, **kwargs)]


# -- the committed scripts --------------------------------------------------------------------


def test_committed_scripts_are_current():
    gen = load_generator()
    stale = gen.stale()
    assert not stale, f"stale completion scripts {stale}: run `python completions/generate.py`"


def test_generator_check_mode(tmp_path):
    gen = load_generator()
    assert gen.main(["--check"]) == 0
    assert gen.main(["--check", "--dir", str(tmp_path)]) == 1  # nothing there yet
    assert gen.main(["--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(gen.FILES.values())
    assert gen.main(["--check", "--dir", str(tmp_path)]) == 0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_scripts_are_clicks_own(shell):
    """The committed file is what `_FLUX_LITE_COMPLETE=<shell>_source flux-lite` prints."""
    gen = load_generator()
    committed = (COMPLETIONS / gen.FILES[shell]).read_text(encoding="utf-8")
    assert "_FLUX_LITE_COMPLETE" in committed and "flux-lite" in committed
    complete.register_completion_classes()  # as main() does
    result = CliRunner().invoke(cli, [], env={"_FLUX_LITE_COMPLETE": f"{shell}_source"}, prog_name="flux-lite")
    assert result.exit_code == 0
    if shell == "fish" and "string split \n" in result.stdout:
        pytest.skip("this click release prints a broken fish script (pallets/click#3502)")
    # click releases differ in the trailing newline of CliRunner's echo
    assert result.stdout.rstrip("\n") == committed.rstrip("\n")


# -- commands, options, choices --------------------------------------------------------------


def test_commands_are_offered():
    assert values(["flux-lite", ""]) == sorted(COMMANDS)
    assert values(["flux-lite", "up"]) == ["update", "uptime"]


def test_options_are_offered():
    offered = values(["flux-lite", "update", "--"])
    for flag in ("--dry-run", "--verbose", "--wait", "--help"):
        assert flag in offered


def test_policy_names_are_offered():
    assert values(["flux-lite", "sched", "reload", "--policy", ""]) == list(registry.policies())
    assert values(["flux-lite", "sched", "reload", "--policy", "h"]) == [p for p in registry.policies()
                                                                         if p.startswith("h")]
    helps = dict(run_completion(["flux-lite", "sched", "reload", "--policy", ""], shell="zsh"))
    assert helps == {p: registry.policy_module(p).description for p in registry.policies()}


def test_replay_options_and_policies_are_offered():
    offered = values(["flux-lite", "replay", "--"])
    for flag in ("--policy", "--nodes", "--cores-per-node", "--limit", "--json", "--keep", "--help", "--jobs-out",
                 "--swf-out", "--series-out", "--series-step", "--users", "--config", "--queue-map", "--parallel",
                 "--plot"):
        assert flag in offered
    assert values(["flux-lite", "replay", "--policy", ""]) == list(registry.policies())
    # several policies, comma-separated: the last one is completed
    assert values(["flux-lite", "replay", "--policy", "fcfs,e"]) == ["fcfs,easy"]
    assert values(["flux-lite", "sweep", "--policy", "easy,"]) == [f"easy,{p}" for p in registry.policies()]
    assert values(["flux-lite", "replay", "--users", ""]) == ["synthetic", "local"]
    offered = values(["flux-lite", "sweep", "--"])
    for flag in ("--policy", "--set", "--config", "--out-dir", "--on-flux", "--flux", "--parallel", "--json"):
        assert flag in offered


# -- job ids -----------------------------------------------------------------------------------


@pytest.fixture
def jobs(flux):
    """An inactive, a running and a pending job (in that order of submission)."""
    done = flux.submit("-N1", "--setattr=exec.test.run_duration=1s", "true")
    flux.advance("2s")
    running = flux.submit("-N4", "-t", "1h", "--setattr=exec.test.run_duration=30m", "sleep")
    pending = flux.submit("-N4", "-t", "1h", "true")
    assert flux.state(running) == "RUN" and flux.state(pending) == "SCHED"
    return {"done": done, "running": running, "pending": pending}


def test_update_offers_active_jobs_only(flux, jobs):
    # flux update changes only active jobs
    offered = values(["flux-lite", "update", ""], flux.state_dir)
    assert offered == [jobs["pending"], jobs["running"]]
    assert values(["flux-lite", "update", jobs["done"]], flux.state_dir) == []
    # other commands offer the inactive ones too
    assert values(["flux-lite", "job", "eventlog", ""], flux.state_dir) == [
        jobs["pending"], jobs["running"], jobs["done"]]


def test_job_ids_carry_state_and_name(flux, jobs):
    offered = dict(run_completion(["flux-lite", "cancel", ""], flux.state_dir, shell="zsh"))
    assert offered[jobs["running"]] == "RUN sleep"
    assert offered[jobs["pending"]] == "SCHED true"
    assert offered[jobs["done"]].startswith("COMPLETED")


def test_job_ids_filtered_by_prefix_and_encoding(flux, jobs):
    from flux_lite.formats.jobid import decode

    running = jobs["running"]
    assert values(["flux-lite", "job", "eventlog", running], flux.state_dir) == [running]
    assert set(values(["flux-lite", "job", "eventlog", "f"], flux.state_dir)) == set(jobs.values())
    dec = str(decode(running))
    assert values(["flux-lite", "job", "eventlog", dec], flux.state_dir) == [dec]
    assert values(["flux-lite", "job", "eventlog", "nomatch"], flux.state_dir) == []


def test_state_dir_option_is_used(flux, jobs, tmp_path):
    offered = values(["flux-lite", "--state-dir", flux.state_dir, "update", ""],
                     env={"FLUX_LITE_STATE_DIR": str(tmp_path / "elsewhere")})
    assert jobs["running"] in offered


def test_guest_is_offered_only_own_jobs(flux, jobs):
    guest = {"FLUX_HANDLE_USERID": str(os.getuid() + 4242)}
    mine = flux("submit", "-t", "1h", "true", env=guest).stdout.strip()
    assert values(["flux-lite", "update", ""], flux.state_dir, env=guest) == [mine]


def test_completion_never_fails(tmp_path):
    assert values(["flux-lite", "update", ""], tmp_path / "no-instance") == []
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "kvs.sqlite").write_text("not a database")
    assert values(["flux-lite", "update", ""], broken) == []
    assert values(["flux-lite", "housekeeping", "kill", "-t", ""], broken) == []
    assert values(["flux-lite", "housekeeping", "kill", "-j", ""], broken) == ["all"]


def test_completion_does_not_change_the_instance(flux, jobs):
    before = flux.out("kvs", "get", "instance.clock")
    run_completion(["flux-lite", "update", ""], flux.state_dir)
    assert flux.out("kvs", "get", "instance.clock") == before


# -- update KEY=VALUE ------------------------------------------------------------------------------


def test_update_offers_special_keys(flux, jobs):
    jobid = jobs["running"]
    assert values(["flux-lite", "update", jobid, ""], flux.state_dir) == ["duration=", "name=", "queue="]
    assert values(["flux-lite", "update", jobid, "dur"], flux.state_dir) == ["duration="]
    # keys already given are not offered again (bash splits words at '=')
    assert values(["flux-lite", "update", jobid, "duration", "=", "1h", ""], flux.state_dir) == ["name=", "queue="]
    assert values(["flux-lite", "update", jobid, "name=x", ""], flux.state_dir) == ["duration=", "queue="]


def test_update_offers_duration_values(flux, jobs):
    jobid = jobs["running"]
    # bash: "duration=" arrives as the words "duration" and "="
    assert values(["flux-lite", "update", jobid, "duration", "=", ""], flux.state_dir) == ["inf"]
    assert values(["flux-lite", "update", jobid, "name", "=", ""], flux.state_dir) == []
    # zsh keeps the word whole
    assert values(["flux-lite", "update", jobid, "duration="], flux.state_dir, shell="zsh") == ["duration=inf"]
    assert values(["flux-lite", "update", jobid, "duration=+1"], flux.state_dir, shell="zsh") == []


# -- housekeeping targets ----------------------------------------------------------------------------


HK_CONFIG = """
job-manager:
  housekeeping:
    duration: 1s
    rank-durations: {"2": inf}
"""


def test_housekeeping_targets_and_jobs(flux_factory):
    flux = flux_factory("--test-size=4", config=HK_CONFIG)
    jobid = flux.submit("-N4", "--setattr=exec.test.run_duration=1s", "true")
    flux.advance("5s")
    offered = values(["flux-lite", "housekeeping", "kill", "-t", ""], flux.state_dir)
    assert offered[0] == "node2"  # still in housekeeping, so first
    assert sorted(offered) == sorted(["node0", "node1", "node2", "node3", "0", "1", "2", "3"])
    assert values(["flux-lite", "housekeeping", "list", "-i", "node3"], flux.state_dir) == ["node3"]
    helps = dict(run_completion(["flux-lite", "housekeeping", "kill", "--targets", "node"],
                                flux.state_dir, shell="zsh"))
    assert "housekeeping" in helps["node2"] and "housekeeping" not in helps["node0"]
    assert values(["flux-lite", "housekeeping", "kill", "-j", ""], flux.state_dir) == [jobid, "all"]


# -- modules --------------------------------------------------------------------------------------------


def test_module_names(flux):
    assert values(["flux-lite", "module", "load", ""], flux.state_dir) == ["job-exec", "job-ingest", "resource",
                                                                          *registry.all_module_names()]
    assert values(["flux-lite", "module", "reload", "sched-b"], flux.state_dir) == [
        name for name in registry.module_names() if name.startswith("sched-b")]
    assert values(["flux-lite", "module", "stats", ""], flux.state_dir) == ["job-manager", "resource",
                                                                            "sched-simple"]
    assert values(["flux-lite", "module", "stats", ""], "/nonexistent") == ["job-manager", "resource"]
    assert values(["flux-lite", "module", "debug", ""], flux.state_dir) == ["sched-simple", "job-exec"]
    assert values(["flux-lite", "module", "debug", "-S", "4", "j"], flux.state_dir) == ["job-exec"]


def test_module_arguments(flux):
    args = values(["flux-lite", "module", "reload", "sched-simple", ""], flux.state_dir)
    assert "test-hello-nopartial" in args and "queue-depth=" in args and "policy=" not in args
    args = values(["flux-lite", "module", "load", "sched-backfill", ""], flux.state_dir)
    assert "policy=" in args and "reservation-depth=" in args
    assert values(["flux-lite", "module", "load", "sched-backfill", "policy=h"], flux.state_dir,
                  shell="zsh") == ["policy=hybrid"]


# -- the bash script in bash ----------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_script_completes_job_ids(flux, jobs, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "flux-lite"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m flux_lite "$@"\n')
    wrapper.chmod(0o755)
    script = (
        f'source "{COMPLETIONS / "flux-lite.bash"}"\n'
        'compopt() { printf "compopt"; printf " %s" "$@"; printf "\\n"; }\n'  # what the script asks of readline
        'COMP_WORDS=(flux-lite update ""); COMP_CWORD=2\n'
        "_flux_lite_completion flux-lite\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        f'COMP_WORDS=(flux-lite update {jobs["running"]} dur); COMP_CWORD=3; COMPREPLY=()\n'
        "_flux_lite_completion flux-lite\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        f'COMP_WORDS=(flux-lite update {jobs["running"]} duration = ""); COMP_CWORD=5; COMPREPLY=()\n'
        "_flux_lite_completion flux-lite\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        'COMP_WORDS=(flux-lite --state-dir = ""); COMP_CWORD=3; COMPREPLY=()\n'
        "_flux_lite_completion flux-lite\n"
        'complete -p flux-lite\n'
    )
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
               FLUX_LITE_STATE_DIR=flux.state_dir, FLUX_F58_FORCE_ASCII="1")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:-1] == [jobs["pending"], jobs["running"],
                          # duration= goes on without a space; its value then does get one
                          "compopt -o nospace", "duration=", "inf",
                          # --state-dir=: the shell completes directory names
                          "compopt -o dirnames"]
    assert "_flux_lite_completion" in lines[-1]


# -- click 8.4.0/8.4.1 fish ----------------------------------------------------------------------------


def test_fix_fish_completion(monkeypatch):
    from click import shell_completion as sc

    monkeypatch.setattr(sc, "_available_shells", dict(sc._available_shells))
    broken = sc.FishComplete.format_completion(None, sc.CompletionItem("v", help="h")).count("\n") > 0
    assert complete.fix_fish_completion() is broken
    fish = sc.get_completion_class("fish")
    line = fish(cli, {}, "flux-lite", "_FLUX_LITE_COMPLETE").format_completion(
        sc.CompletionItem("fABC", help="RUN a\tb"))
    assert "\n" not in line and line.startswith("plain,fABC")
    source = fish(cli, {}, "flux-lite", "_FLUX_LITE_COMPLETE").source()
    assert source + "\n" == (COMPLETIONS / "flux-lite.fish").read_text(encoding="utf-8")


def test_job_control_commands_offer_job_ids(flux, jobs):
    for words in (["job", "wait"], ["job", "purge"], ["job", "status"], ["job", "purge", jobs["done"]]):
        offered = values(["flux-lite", *words, ""], flux.state_dir)
        assert set(offered) == set(jobs.values()), words
    options = values(["flux-lite", "job", "purge", "--"], flux.state_dir)
    assert {"--age-limit", "--num-limit", "--force", "--batch"} <= set(options)
    assert {"--stats", "--stats-only", "--since"} <= set(values(["flux-lite", "jobs", "--s"], flux.state_dir))
    assert "--name" in values(["flux-lite", "jobs", "--n"], flux.state_dir)
    assert "pgrep" in values(["flux-lite", "pg"], flux.state_dir)


# -- queue names ----------------------------------------------------------------------------------


QUEUES = "queues:\n  debug: {}\n  batch: {}\n  expedite: {parent: batch}\n"


def _queue_params():
    """(command words, option) for every option or argument of the command
    tree that takes a queue name (its metavar or its name says so)."""
    import click

    def walk(cmd, words):
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not getattr(sub, "hidden", False):
                    yield from walk(sub, words + [name])
            return
        for param in cmd.params:
            if param.name in ("queue", "queues") or "QUEUE" in (param.metavar or ""):
                yield words, param

    return list(walk(cli, ["flux-lite"]))


def test_every_queue_parameter_offers_queue_names(flux):
    flux("config", "load", input=QUEUES)
    found = _queue_params()
    commands = {" ".join(words[1:]) for words, _param in found}
    # where Flux takes a queue name
    assert {"submit", "run", "jobs", "queue list", "queue status", "queue enable", "queue disable",
            "queue start", "queue stop", "resource list", "pgrep", "pkill"} <= commands
    for words, param in found:
        if param.param_type_name == "option":
            line = words + [param.opts[-1], ""]
        else:
            line = words + [""]
        offered = values(line, flux.state_dir)
        assert offered == ["debug", "batch", "expedite"], (line, offered)
    # a comma-separated list completes its last item
    assert values(["flux-lite", "jobs", "-q", "debug,b"], flux.state_dir) == ["debug,batch"]
    # and `update JOB queue=`, as bash splits it at '='
    jobid = flux.submit("-q", "debug", "--urgency=hold", "true")
    assert values(["flux-lite", "update", jobid, "queue", "=", ""], flux.state_dir) == ["debug", "batch", "expedite"]


# -- paths, KEY=, --opt=VALUE, and the values of options ------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_paths_are_completed_by_the_shell(shell):
    assert types(["flux-lite", "start", "-c", ""], shell) == [("file", "")]
    assert types(["flux-lite", "start", "--config", "conf."], shell) == [("file", "conf.")]
    assert types(["flux-lite", "config", "load", ""], shell) == [("file", "")]
    assert types(["flux-lite", "--state-dir", ""], shell) == [("dir", "")]
    assert types(["flux-lite", "--state-dir", "/tm"], shell) == [("dir", "/tm")]


def test_fish_hands_paths_to_fish():
    lines = raw_completion({"_FLUX_LITE_COMPLETE": "fish_complete", "COMP_WORDS": "flux-lite start -c ",
                            "COMP_CWORD": ""})
    assert lines == ["file,"]
    source = (COMPLETIONS / "flux-lite.fish").read_text(encoding="utf-8")
    assert "__fish_complete_path" in source and "__fish_complete_directories" in source


def test_state_dir_equals_form_is_honoured(flux, jobs, tmp_path):
    elsewhere = {"FLUX_LITE_STATE_DIR": str(tmp_path / "elsewhere")}
    # bash splits the word at '='; zsh keeps it whole
    words = ["flux-lite", "--state-dir", "=", flux.state_dir, "update", ""]
    assert values(words, env=elsewhere) == [jobs["pending"], jobs["running"]]
    assert values(["flux-lite", f"--state-dir={flux.state_dir}", "update", ""], shell="zsh", env=elsewhere) == [
        jobs["pending"], jobs["running"]]
    # the value of --state-dir= itself: a directory
    assert types(["flux-lite", "--state-dir", "=", ""]) == [("dir", "")]
    assert types(["flux-lite", "--state-dir", "=", "/tm"]) == [("dir", "/tm")]


def test_key_equals_goes_on_without_a_space():
    bash = (COMPLETIONS / "flux-lite.bash").read_text(encoding="utf-8")
    assert "[[ $value == *= ]] && compopt -o nospace" in bash
    zsh = (COMPLETIONS / "_flux-lite").read_text(encoding="utf-8")
    assert '"$key" == *= ]]' in zsh and "compadd -U -S '' -V unsorted -a completions_eq" in zsh
    assert "_describe -V unsorted completions_eq_with_descriptions -U -S ''" in zsh


def test_jobs_format_and_filter_values(flux):
    assert values(["flux-lite", "jobs", "-o", ""]) == ["default", "cute", "long", "deps", "endreason", "help"]
    assert values(["flux-lite", "jobs", "--format", "d"]) == ["default", "deps"]
    assert values(["flux-lite", "jobs", "-f", "r"]) == ["run", "running"]
    # a comma list: the next item, not one given already
    assert values(["flux-lite", "jobs", "-f", "pending,"])[:3] == ["pending,depend", "pending,priority",
                                                                  "pending,sched"]
    assert "pending,pending" not in values(["flux-lite", "jobs", "-f", "pending,"])
    assert values(["flux-lite", "jobs", "-f", "running,comp"]) == ["running,completed"]
    assert values(["flux-lite", "resource", "status", "-o", ""]) == ["default", "long", "help"]
    assert values(["flux-lite", "resource", "drain", "-o", ""]) == ["long", "default", "help"]
    assert values(["flux-lite", "resource", "list", "-o", "r"]) == ["rlist"]
    assert values(["flux-lite", "housekeeping", "list", "-o", ""]) == ["default", "pending", "help"]
    assert values(["flux-lite", "queue", "list", "-o", "p"]) == ["policy"]


def test_job_urgency_and_drain_targets(flux, jobs):
    assert values(["flux-lite", "job", "urgency", jobs["pending"], ""], flux.state_dir) == [
        "hold", "default", "expedite"]
    assert values(["flux-lite", "job", "urgency", jobs["pending"], "e"], flux.state_dir) == ["expedite"]
    assert values(["flux-lite", "job", "urgency", ""], flux.state_dir)[0] == jobs["pending"]
    assert values(["flux-lite", "resource", "drain", ""], flux.state_dir) == [
        "node0", "node1", "node2", "node3", "0", "1", "2", "3"]
    assert values(["flux-lite", "resource", "drain", "node"], flux.state_dir, shell="zsh")[:1] == ["node0"]
