"""A scheduler policy is one file (plus its man-page paragraph): the registry,
and everything that must follow it without being edited.

The scratch policy `lifo` (module sched-lifo, newest first) is written by
these tests into a temporary directory appended to the package's
``__path__``, so the checkout is never touched; with it present and no other
file changed, the configuration, `module`, `sched reload`, `replay` and
completion all offer and run it, and the man-page check names what is
missing. Shipped modules are checked against the man pages: the POLICIES
subsection of flux-lite-sched(1) has one paragraph per policy naming its
module, and flux-lite-module(1) describes every module argument.
"""

import importlib
import json
import pathlib
import re
import sys

import pytest
from click.testing import CliRunner

import flux_lite.cli.module
import flux_lite.cli.replay
import flux_lite.cli.sched  # noqa: F401 - imported before the scratch file appears, as in a running process
import flux_lite.sched
from flux_lite.cli.main import cli
from flux_lite.sched import registry

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
LIB = ROOT / "flux_lite"
TRACE = ROOT / "tests" / "data" / "kth-sp2-first400.swf"

# The file a contributor would add as flux_lite/sched/lifo.py, shaped as the
# example of CONTRIBUTING.md's "Adding a scheduler policy".
LIFO = '''\
from flux_lite.sched.base import COMMON_ARGS, ModuleArg, Scheduler
from flux_lite.sched.pool import InfeasibleRequest, InsufficientResources
from flux_lite.sched.registry import register


@register
class LifoScheduler(Scheduler):
    """Newest job first, with head-of-line blocking."""

    name = "sched-lifo"
    policies = ("lifo",)
    description = "newest first (policy lifo)"
    module_args = COMMON_ARGS + (
        ModuleArg("fairness", lambda v: {"fairness": v}, "a knob", values=("on", "off")),
    )
    queue_depth = 8
    policy = "lifo"

    def schedule(self):
        for pj in sorted(self.queue.values(), key=lambda pj: (-pj.priority, -pj.jobid)):
            try:
                rset = self.try_alloc(pj)
            except InsufficientResources:
                break
            except InfeasibleRequest as exc:
                self.deny(pj, str(exc))
                continue
            self.success(pj, rset)
'''


def _add_scratch_policy(monkeypatch, directory):
    directory.mkdir()
    (directory / "lifo.py").write_text(LIFO, encoding="utf-8")
    monkeypatch.setattr(flux_lite.sched, "__path__", [*flux_lite.sched.__path__, str(directory)])
    importlib.invalidate_caches()


@pytest.fixture
def lifo(monkeypatch, tmp_path):
    """flux_lite/sched/lifo.py, as far as Python can tell (the checkout is left alone),
    appearing after the registry has listed the package once."""
    registry.modules()
    _add_scratch_policy(monkeypatch, tmp_path / "policies")
    yield
    # a later test's lifo.py must be imported afresh
    sys.modules.pop("flux_lite.sched.lifo", None)


# -- the registry ----------------------------------------------------------------------------


def test_registry_derives_policies_and_modules():
    modules = registry.modules()
    names = registry.module_names()
    assert names == tuple(modules) and names[0] == registry.DEFAULT_MODULE == "sched-simple"
    assert registry.policies() == tuple(p for cls in modules.values() for p in cls.policies)
    assert registry.default_policy() == "fcfs"
    assert {"fcfs", "easy", "hybrid", "conservative"} <= set(registry.policies())
    assert len(set(registry.policies())) == len(registry.policies())  # no policy in two modules
    for name, cls in modules.items():
        assert registry.module_class(name) is cls
        for policy in cls.policies:
            assert registry.policy_module(policy) is cls
    assert registry.policy_module("hybrid").name == "sched-backfill"
    keys = [a.key for a in registry.module_args("sched-simple")]
    assert keys == ["queue-depth", "mode", "log-level", "pool-class", "test-hello-nopartial"]


@pytest.mark.parametrize("name", ["sched-nonesuch", "sched-base", "sched-pool", "sched-loader", "sched-registry",
                                  "sched-__init__", "sched-../simple", "simple", "sched-"])
def test_other_names_are_no_module(name):
    """The package's other files are no scheduler module, whatever they are
    called: a module is a file that registers a class, so no list of them is kept."""
    assert registry.module_class(name) is None
    assert name not in registry.module_names()
    assert registry.module_args(name) == ()


def test_existing_policies_are_each_one_registered_file():
    """Every scheduler module registers itself in its own file, named after it."""
    for name, cls in registry.modules().items():
        stem = name[len("sched-"):].replace("-", "_")
        assert cls.__module__ == f"flux_lite.sched.{stem}"
        assert "@register" in (LIB / "sched" / f"{stem}.py").read_text(encoding="utf-8")
        assert cls.policies and cls.description


def test_register_refuses_a_class_outside_its_file():
    """Loading by name imports only sched/NAME.py: a class registered from
    anywhere else could be listed but never loaded, so it is refused."""
    from flux_lite.sched.simple import SimpleScheduler

    class Elsewhere(SimpleScheduler):
        name = "sched-elsewhere"
        policies = ("elsewhere",)

    with pytest.raises(TypeError, match="sched-elsewhere"):
        registry.register(Elsewhere)
    assert registry.module_class("sched-elsewhere") is None and "elsewhere" not in registry.policies()


def test_a_scratch_file_comes_and_goes_with_the_path(monkeypatch, tmp_path):
    before = registry.module_names()
    with monkeypatch.context() as patch:
        _add_scratch_policy(patch, tmp_path / "policies")
        assert registry.module_names() == (*before, "sched-lifo")
        assert registry.policies()[-1] == "lifo"
        assert registry.module_class("sched-lifo").__module__ == "flux_lite.sched.lifo"
    sys.modules.pop("flux_lite.sched.lifo", None)
    assert registry.module_names() == before
    assert registry.module_class("sched-lifo") is None and "lifo" not in registry.policies()


def test_listing_imports_only_files_that_could_register(monkeypatch, tmp_path):
    """A file of the package that does not name the registry cannot register
    a class: listing the modules leaves it alone (pool, store, ...), with no list of them kept."""
    extra = tmp_path / "extra"
    _add_scratch_policy(monkeypatch, extra)
    (extra / "helper.py").write_text('raise AssertionError("helper.py was imported")\n', encoding="utf-8")
    (extra / "notes.py").write_text('"""Mentions the registry but registers nothing."""\n', encoding="utf-8")
    try:
        assert registry.module_names()[-1] == "sched-lifo"
        assert "flux_lite.sched.helper" not in sys.modules and "flux_lite.sched.notes" in sys.modules
        assert registry.module_class("sched-notes") is None and "sched-notes" not in registry.module_names()
    finally:
        for name in ("lifo", "notes"):
            sys.modules.pop(f"flux_lite.sched.{name}", None)


# -- the scratch policy, end to end ----------------------------------------------------------


def _runs(flux, jobid):
    """(state, start time or None) of a job."""
    starts = [e["timestamp"] for e in flux.events(jobid) if e["name"] == "alloc"]
    return flux.state(jobid), (starts[0] if starts else None)


def test_lifo_selected_by_configuration(flux_factory, lifo):
    flux = flux_factory("--test-size=1", "--test-cores=2", config="sched:\n  policy: lifo\n")
    assert [line.split()[0] for line in flux.out("module", "list").splitlines()[1:]] == [
        "job-exec", "job-ingest", "job-list", "job-manager", "resource", "sched-lifo"]
    t0 = flux.now()
    jobs = [flux.submit("-n2", "--setattr=exec.test.run_duration=10s", "true") for _ in range(3)]
    flux.advance("10s")
    assert [_runs(flux, j) for j in jobs] == [("INACTIVE", t0), ("SCHED", None), ("RUN", t0 + 10)]
    flux.advance("10s")
    assert [_runs(flux, j) for j in jobs] == [("INACTIVE", t0), ("RUN", t0 + 20), ("INACTIVE", t0 + 10)]
    assert flux.eventlog(jobs[1]) == ["submit", "validate", "depend", "priority", "alloc", "start"]
    stats = json.loads(flux.out("module", "stats", "sched-lifo"))
    assert (stats["policy"], stats["queue-depth"]) == ("lifo", 8)


def test_lifo_by_sched_reload_and_module_load(flux, lifo):
    """`sched reload --policy=lifo` on a running instance: the queued jobs are
    then taken newest first; `module load sched-lifo` and its arguments too."""
    t0 = flux.now()
    jobs = [flux.submit("-N4", "--setattr=exec.test.run_duration=10s", "true") for _ in range(4)]
    flux("sched", "reload", "--policy=lifo")
    assert "sched-lifo" in flux.out("module", "list")
    assert flux.state(jobs[0]) == "RUN"
    flux.advance("10s")
    flux.advance("10s")
    flux.advance("10s")
    assert [_runs(flux, j) for j in jobs] == [("INACTIVE", t0), ("RUN", t0 + 30), ("INACTIVE", t0 + 20),
                                              ("INACTIVE", t0 + 10)]
    flux("sched", "reload", "--policy=fcfs")
    assert "sched-simple" in flux.out("module", "list") and "sched-lifo" not in flux.out("module", "list")
    flux("module", "remove", "sched-simple")
    flux("module", "load", "sched-lifo", "fairness=on", "queue-depth=2")
    stats = json.loads(flux.out("module", "stats", "sched-lifo"))
    assert (stats["policy"], stats["queue-depth"]) == ("lifo", 2)
    r = flux.fails("module", "reload", "sched-lifo", "reservation-depth=3")
    assert "unknown argument" in r.stderr


def test_lifo_replays_a_trace(flux, lifo, tmp_path):
    """`replay --policy=lifo` runs the trace with sched-lifo (the kept instance says so)."""
    keep = tmp_path / "kept"
    out = json.loads(flux.out("replay", "--policy=lifo", "--limit=60", "--json", "--keep", keep, TRACE))
    fcfs = json.loads(flux.out("replay", "--policy=fcfs", "--limit=60", "--json", TRACE))
    assert out["policy"] == "lifo" and out["jobs"] == fcfs["jobs"] == 60
    assert out["results"] == fcfs["results"]
    assert out["wait_mean"] != fcfs["wait_mean"]  # another order, not fcfs under another name
    kept = flux.out("--state-dir", keep, "module", "stats", "sched-lifo")
    assert json.loads(kept)["policy"] == "lifo"


def _complete(words, state_dir=None):
    """Candidates bash gets for `words` (the last one being completed)."""
    env = {"_FLUX_LITE_COMPLETE": "bash_complete", "COMP_WORDS": " ".join(words),
           "COMP_CWORD": str(len(words) - 1)}
    if state_dir is not None:
        env["FLUX_LITE_STATE_DIR"] = str(state_dir)
    result = CliRunner().invoke(cli, [], env=env, prog_name="flux-lite")
    return [line.partition(",")[2] for line in result.stdout.splitlines() if line.startswith("plain,")]


def test_lifo_is_offered_by_completion(flux, lifo):
    assert _complete(["flux-lite", "sched", "reload", "--policy", ""]) == list(registry.policies())
    assert _complete(["flux-lite", "sched", "reload", "--policy", "l"]) == ["lifo"]
    assert _complete(["flux-lite", "replay", "--policy", "l"]) == ["lifo"]
    assert _complete(["flux-lite", "module", "load", ""], flux.state_dir)[-1] == "sched-lifo"
    assert _complete(["flux-lite", "module", "reload", "sched-l"], flux.state_dir) == ["sched-lifo"]
    assert "fairness=" in _complete(["flux-lite", "module", "load", "sched-lifo", ""], flux.state_dir)
    assert _complete(["flux-lite", "module", "load", "sched-lifo", "fairness="], flux.state_dir) == [
        "fairness=on", "fairness=off"]


def test_lifo_is_accepted_and_refused_as_others_are(flux, lifo):
    flux("config", "load", input='{"sched": {"policy": "lifo"}}')
    r = flux.fails("sched", "reload", "--policy=nonesuch", code=2)
    assert "'lifo'" in r.stderr  # the choices the error lists are the registry's
    assert "lifo" in flux.out("sched", "reload", "--help")


# -- the man pages --------------------------------------------------------------------------------


def _roff(line):
    """The words of a roff line, without macros, fonts and escapes."""
    line = re.sub(r"^\.(B|BR|RB|BI|IB|I|IR|RI)\s+", "", line)
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line).replace("\\-", "-").replace("\\&", "")
    return line.replace('"', "").strip()


def _tagged_paragraphs(page, heading):
    """{tag: paragraph text} of the .TP items of the .SS or .SH section called heading."""
    items, tag, in_section, lines = {}, None, False, iter(page.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if re.match(r"\.S[HS]\s", line):
            in_section = _roff(line[4:]).lower() == heading.lower()
            tag = None
        elif not in_section:
            continue
        elif line.startswith(".TP"):
            tag = _roff(next(lines, ""))
            items[tag] = ""
        elif line.startswith((".PP", ".P ", ".LP")):
            tag = None
        elif tag is not None:
            items[tag] += _roff(line) + " "
    return items


def man_problems():
    """What the man pages fail to say about the registered modules (empty if nothing).

    - flux-lite-sched(1), subsection Policies: exactly one .TP paragraph per
      registered policy, tagged with its name, naming its module;
    - flux-lite-module(1), subsection Module arguments: one .TP per module
      argument of every registered module, tagged with the argument (key=...);
      one that only some modules take names them.
    Other pages (flux-lite-config(5), flux-lite-replay(1), flux-lite-module(1)'s
    description) refer to the Policies subsection instead of listing policies.
    """
    problems = []
    policies = _tagged_paragraphs(MAN / "flux-lite-sched.1", "Policies")
    for policy in registry.policies():
        text = policies.pop(policy, None)
        module = registry.policy_module(policy).name
        if text is None:
            problems.append(f"flux-lite-sched(1) Policies: no paragraph for {policy}")
        elif not re.search(r"(?<![\w-])" + re.escape(module) + r"(?![\w-])", text):
            problems.append(f"flux-lite-sched(1) Policies: {policy}'s paragraph does not name {module}")
    problems += [f"flux-lite-sched(1) Policies: {tag} is no registered policy" for tag in policies]
    args = _tagged_paragraphs(MAN / "flux-lite-module.1", "Module arguments")
    keys = {}
    for tag, text in args.items():
        for key in re.findall(r"(?:^|,\s*)([a-z][\w-]*)", tag):  # key=VALUE, key=OTHER ... or a flag
            keys.setdefault(key, "")
            keys[key] += tag + " " + text
    modules = registry.modules()
    for name, cls in modules.items():
        for arg in cls.module_args:
            if arg.key not in keys:
                problems.append(f"flux-lite-module(1) Module arguments: no paragraph for {arg.key} ({name})")
                continue
            takers = [n for n, c in modules.items() if any(a.key == arg.key for a in c.module_args)]
            # "every module except NAME..." names the takers by naming the others
            _, found, rest = keys[arg.key].replace("\\-", "-").partition("every module except")
            excepted = bool(found) and all(n in rest.split(")")[0] for n in modules if n not in takers)
            if len(takers) < len(modules) and name not in keys[arg.key] and not excepted:
                problems.append(f"flux-lite-module(1) Module arguments: {arg.key} does not name {name}")
    return problems


def test_man_pages_name_every_policy_and_module_argument():
    assert man_problems() == []


def test_man_pages_miss_a_scratch_policy(lifo):
    """The check above fails for a policy added without its paragraph."""
    assert man_problems() == ["flux-lite-sched(1) Policies: no paragraph for lifo",
                              "flux-lite-module(1) Module arguments: no paragraph for fairness (sched-lifo)"]
