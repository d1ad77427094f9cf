"""The import contract: one direction of dependency (CONTRIBUTING.md, "The layers").

Every import statement of flux_lite/ and cli/ is read, at module level and
inside functions, and checked against the layer map that CONTRIBUTING.md
holds: no import up the map, none between the job manager and the scheduler,
no cycle, and imports inside functions only at the declared lazy points.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# layers that never import each other: the job manager and the scheduler (they
# meet through RFC 27), and the CLI and the `flux` package (two clients)
SIDES = {frozenset(("3a", "3b")): "across RFC 27", frozenset(("7a", "7b")): "between the CLI and the flux package"}

# (importer, imported prefix): the lazy points CONTRIBUTING.md declares
LAZY_POINTS = (
    ("flux_lite.cli.main", "flux_lite.cli."),  # the command table
    ("flux_lite.cli.launch", "flux_lite.cli.main"),  # ... loaded by the entry point unless `python` is asked
    ("flux_lite.broker", "flux_lite.job_manager."),  # the module table: the job manager's parts
    ("flux_lite.broker", "flux_lite.sched."),  # ... and the scheduler
    ("flux_lite.cli.", "flux_lite.cli._complete"),  # shell completion, only when the shell asks;
    ("flux_lite.cli._complete", "flux_lite."),  # its callbacks are named by every command's options
    ("flux_lite.instance", "flux_lite.rebuild"),  # the rebuild of derived tables, only when one is missing
    ("flux.", "flux_lite."),  # the `flux` package reaches the instance at a handle's first request
)


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    in_function: bool
    type_only: bool


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "cli":  # installed as flux_lite.cli
        parts = ["flux_lite", "cli", *parts[1:]]
    if parts[:2] == ["flux_lite", "python"]:  # the `flux` package, imported as flux.*
        parts = parts[2:]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for top in ("flux_lite", "cli"):
        for path in sorted((root / top).rglob("*.py")):
            out[module_name(path)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lives in (a name imported from a
    package may be a module of it, or a name its __init__ defines)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            pkg = name.split(".")
            if not is_package:
                pkg = pkg[:-1]
            pkg = pkg[:len(pkg) - (node.level - 1)]
            base = ".".join(pkg) + (f".{base}" if base else "")
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]

    def visit(node: ast.AST, in_function: bool, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in targets(child):
                    resolved = _resolve(target, modules)
                    if resolved is not None and resolved != name:
                        found.append(Import(name, resolved, child.lineno, in_function, type_only))
            guarded = type_only or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                  guarded)

    visit(tree, False, False)
    return found


def layer_map(text: str | None = None) -> list[tuple[str, str, list[str]]]:
    """[(layer, name, module names or 'pkg.*' prefixes)], bottom to top, from CONTRIBUTING.md."""
    if text is None:
        text = (ROOT / "CONTRIBUTING.md").read_text()
    block = re.search(r"<!-- layer-map[^>]*-->\s*```\n(.*?)```", text, re.S)
    assert block, "CONTRIBUTING.md has no layer-map block"
    layers = []
    for line in block.group(1).splitlines():
        match = re.fullmatch(r"(\d[ab]?) ([\w-]+): (.+)", line.strip())
        assert match, f"bad layer-map line: {line!r}"
        layers.append((match.group(1), match.group(2), match.group(3).split()))
    return layers


def assign(modules, layers) -> dict[str, str]:
    """module -> layer: a module named exactly wins over a package prefix, a
    longer prefix over a shorter one; "pkg.*" holds pkg itself too."""
    exact, prefixes = {}, []
    for layer, _name, names in layers:
        for entry in names:
            if entry.endswith(".*"):
                prefixes.append((entry[:-1], layer))
            else:
                assert entry not in exact, f"{entry} is in two layers"
                exact[entry] = layer
    prefixes.sort(key=lambda p: -len(p[0]))
    out = {}
    for mod in modules:
        if mod in exact:
            out[mod] = exact[mod]
        else:
            out[mod] = next((layer for prefix, layer in prefixes if (mod + ".").startswith(prefix)), None)
    return out


def rank(layer: str) -> int:
    return int(layer[0])


def violations(modules: dict[str, Path], layers) -> list[str]:
    where = assign(modules, layers)
    problems = [f"{mod}: in no layer of CONTRIBUTING.md's map" for mod, layer in where.items() if layer is None]
    graph: dict[str, set[str]] = {mod: set() for mod in modules}
    for mod, path in modules.items():
        for imp in imports_of(mod, path, modules):
            src, dst = where[imp.importer], where[imp.target]
            if src is None or dst is None:
                continue
            at = f"{imp.importer} (line {imp.line}) imports {imp.target}"
            if frozenset((src, dst)) in SIDES:
                problems.append(f"{at}: {SIDES[frozenset((src, dst))]} (layer {src} -> {dst})")
            elif rank(dst) > rank(src) and not imp.type_only:
                problems.append(f"{at}: up the map (layer {src} -> {dst})")
            if imp.in_function and not imp.type_only and not any(
                    imp.importer.startswith(who) and imp.target.startswith(what) for who, what in LAZY_POINTS):
                problems.append(f"{at} inside a function: not a declared lazy point")
            if not imp.type_only:
                graph[imp.importer].add(imp.target)
    problems.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph))
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_cycle_in(sorted(component), graph))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    members = set(component)
    path = [component[0]]
    seen = {component[0]}
    while True:
        nxt = sorted(w for w in graph[path[-1]] if w in members)
        back = [w for w in nxt if w in seen]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        path.append(nxt[0])
        seen.add(nxt[0])


# -- the project ---------------------------------------------------------------------


def test_the_project_keeps_the_contract():
    problems = violations(project_modules(), layer_map())
    assert problems == [], "\n".join(problems)


def test_every_layer_of_the_map_holds_a_module():
    modules = project_modules()
    where = assign(modules, layer_map())
    for layer, name, _names in layer_map():
        assert layer in where.values(), f"layer {layer} ({name}) holds no module"


# -- the checker itself: each rule fails when broken -------------------------------------

MAP = """<!-- layer-map -->
```
1 values: pkg.low
3a left: pkg.left
3b right: pkg.right
4 top: pkg.top pkg.cli.*
```
"""


def scratch(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    out = {}
    for mod, text in files.items():
        path = tmp_path / (mod.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out[mod] = path
    return out


def check(tmp_path, files):
    modules = scratch(tmp_path, files)
    return violations(modules, layer_map(MAP))


@pytest.mark.parametrize("files, expected", [
    ({"pkg.low": "import pkg.top\n", "pkg.top": ""}, "pkg.low (line 1) imports pkg.top: up the map (layer 1 -> 4)"),
    ({"pkg.left": "from pkg import right\n", "pkg.right": ""},
     "pkg.left (line 1) imports pkg.right: across RFC 27 (layer 3a -> 3b)"),
    ({"pkg.left": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.right\n", "pkg.right": ""},
     "pkg.left (line 3) imports pkg.right: across RFC 27 (layer 3a -> 3b)"),
    ({"pkg.top": "def f():\n    import pkg.low\n", "pkg.low": ""},
     "pkg.top (line 2) imports pkg.low inside a function: not a declared lazy point"),
    ({"pkg.low": "from pkg.elsewhere import x\n", "pkg.elsewhere": ""},
     "pkg.elsewhere: in no layer of CONTRIBUTING.md's map"),
])
def test_each_rule_is_enforced(tmp_path, files, expected):
    assert expected in check(tmp_path, files)


def test_cycles_inside_a_layer_are_found(tmp_path):
    problems = check(tmp_path, {"pkg.cli.a": "import pkg.cli.b\n", "pkg.cli.b": "def f():\n    import pkg.cli.a\n"})
    assert "import cycle: pkg.cli.a -> pkg.cli.b -> pkg.cli.a" in problems


def test_type_only_imports_may_name_a_higher_layer(tmp_path):
    files = {"pkg.low": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.top import T\n",
             "pkg.top": "import pkg.low\n"}
    assert check(tmp_path, files) == []


def test_the_plugin_point_is_registered_from_above():
    """CONTRIBUTING's one plugin point: layer 3b (sched.hosted) runs what the
    flux package registered with register_host. Only the flux package
    registers, and nothing below layer 7 reaches the flux package by name
    (importlib) instead of importing it."""
    modules = project_modules()
    callers = sorted(name for name, path in modules.items()
                     if "register_host(" in path.read_text() and name != "flux_lite.sched.hosted")
    assert callers == ["flux.brokermod"]
    layers = assign(modules, layer_map())
    for name, path in modules.items():
        if rank(layers[name]) < 7:
            text = path.read_text()
            assert not re.search(r"""import_module\(\s*f?["'](_?flux)[."']""", text), name
