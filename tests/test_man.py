"""Man pages: every command, subcommand and option is documented; every page renders cleanly.

The click tree is walked from flux_lite.cli.main.cli (loading each command
lazily through get_command), so a new command or option fails these tests
until its page says something about it. Conventions checked here:

- a top-level command NAME has man/flux-lite-NAME.1; the root has flux-lite.1;
- a subcommand of a group is documented in its top-level group's page, in a
  ``.SS`` subsection whose heading is the subcommand's path below the group
  (``.SS list``, ``.SS "eventlog get"``), and its options appear there;
- every long and short flag of every visible option appears (the help
  option, shared by all commands, once per page);
- flux-lite-config(5) names every configuration key config.py accepts.
"""

import ast
import fnmatch
import os
import pathlib
import re
import shutil
import subprocess
import sys

import click
import pytest

from flux_lite.cli.main import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAN = ROOT / "man"
PAGES = sorted(MAN.glob("*.[1-9]"))

# roff escapes -> the text they stand for (enough for searching the source)
_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\\(aq"), "'"),
    (re.compile(r"\\\(dq"), '"'),
    (re.compile(r"\\\(em"), "--"),
    (re.compile(r"\\\(bu"), "*"),
    (re.compile(r"\\\[u0192\]"), "\u0192"),
    (re.compile(r"\\\(hy"), "-"),
    (re.compile(r"\\-"), "-"),
    (re.compile(r"\\[&|^~]"), ""),
    (re.compile(r"\\ "), " "),
    (re.compile(r"\\e"), "\\\\"),
]


def roff_text(line):
    for pattern, repl in _ESCAPES:
        line = pattern.sub(repl, line)
    return line


def page_lines(path):
    """Source lines with escapes resolved and comments dropped."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        out.append(roff_text(line))
    return out


def page_text(path):
    return "\n".join(page_lines(path))


def sections(path, macro):
    """{heading: text} for each .SH or .SS block (text up to the next .SH/.SS)."""
    blocks = {}
    heading = None
    for line in page_lines(path):
        m = re.match(r"\.(SH|SS)\s+(.*)", line)
        if m:
            heading = m.group(2).strip().strip('"') if m.group(1) == macro else None
            if heading is not None:
                blocks.setdefault(heading, [])
            continue
        if heading is not None:
            blocks[heading].append(line)
    return {h: "\n".join(lines) for h, lines in blocks.items()}


def mentions(text, flag):
    """flag appears as a word of its own (not inside --no-header or run-time)."""
    return re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text) is not None


# -- the click tree ----------------------------------------------------------------


def walk(command=cli, path=()):
    """Yield (path, command) for the root and every command below it."""
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "flux-lite")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path + (name,))}: listed but cannot be loaded"
            if not getattr(sub, "hidden", False):
                yield from walk(sub, path + (name,))


COMMANDS = list(walk())
HELP_FLAGS = set(cli.context_settings.get("help_option_names", ["--help"]))


def page_for(path):
    return MAN / ("flux-lite.1" if not path else f"flux-lite-{path[0]}.1")


def cmd_id(item):
    return " ".join(item[0]) or "flux-lite"


def documented_flags(command):
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        for flag in list(param.opts) + list(param.secondary_opts):
            if flag not in HELP_FLAGS:
                yield flag


def subcommand_block(path):
    """Text of the .SS blocks documenting path (below its top-level group)."""
    sub = " ".join(path[1:])
    found = [text for heading, text in sections(page_for(path), "SS").items()
             if heading == sub or heading.startswith(sub + " ")]
    return "\n".join(found) if found else None


# -- rendering ----------------------------------------------------------------------


def test_there_are_pages():
    assert (MAN / "flux-lite.1").exists()
    assert (MAN / "flux-lite-config.5").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_renders_without_warnings(page):
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed (apt-get install groff-base)")
    proc = subprocess.run([groff, "-man", "-ww", "-z", str(page)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_job_ids_print_as_f_with_hook():
    """Job ids are written \\[u0192] (ƒ); groff's \\(Fo is a guillemet («)."""
    uses = [page.name for page in PAGES if "\\[u0192]" in page.read_text(encoding="utf-8")]
    assert "flux-lite.1" in uses
    assert not [page.name for page in PAGES if "\\(Fo" in page.read_text(encoding="utf-8")]
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed (apt-get install groff-base)")
    text = subprocess.run([groff, "-man", "-Tutf8", str(MAN / "flux-lite-queue.1")], capture_output=True,
                          env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"}).stdout.decode()
    assert "update \u01922kMHuNF queue=debug" in text.replace("\u2010", "-") and "\u00ab" not in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_has_flux_sections(page):
    name, section = page.stem, page.suffix[1:]
    text = page_text(page)
    th = re.search(r"^\.TH\s+(\S+)\s+(\S+)", text, re.M)
    assert th is not None, "no .TH line"
    assert th.group(1).lower() == name.lower() and th.group(2) == section  # (flux-lite-R)
    heads = list(sections(page, "SH"))
    # the shape of Flux's own pages, in this order (other sections may come between)
    if section == "1":
        required = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"]
    else:
        required = ["NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "SEE ALSO"]
    for head in required:
        assert head in heads, f"{page.name}: no {head} section"
    assert [h for h in heads if h in required] == required, heads
    names = sections(page, "SH")["NAME"].strip()
    assert re.match(re.escape(name) + r"\b.* - \S", names), names


def test_see_also_references_exist():
    for page in PAGES:
        for name, sec in re.findall(r"(flux-lite(?:-[\w-]+)?)\s*\((\d)\)", page_text(page)):
            assert (MAN / f"{name}.{sec}").exists(), f"{page.name} refers to missing {name}({sec})"


# -- commands and options --------------------------------------------------------------------


@pytest.mark.parametrize("item", [c for c in COMMANDS if len(c[0]) <= 1], ids=cmd_id)
def test_command_has_a_page(item):
    path, _command = item
    assert page_for(path).exists(), f"{cmd_id(item)}: no man page {page_for(path).name}"


def test_root_page_lists_every_command():
    text = page_text(MAN / "flux-lite.1")
    for path, _command in COMMANDS:
        if len(path) == 1:
            assert re.search(rf"flux-lite-{re.escape(path[0])}\s*\(1\)", text), path[0]


@pytest.mark.parametrize("item", [c for c in COMMANDS if len(c[0]) > 1], ids=cmd_id)
def test_subcommand_documented_in_group_page(item):
    path, _command = item
    block = subcommand_block(path)
    assert block is not None, (
        f"{cmd_id(item)}: {page_for(path).name} has no '.SS {' '.join(path[1:])}' subsection"
    )


@pytest.mark.parametrize("item", COMMANDS, ids=cmd_id)
def test_every_option_is_documented(item):
    path, command = item
    page = page_for(path)
    if not page.exists():
        pytest.skip("no page (reported by test_command_has_a_page)")
    text = page_text(page)
    if len(path) > 1:
        text = subcommand_block(path)
        if text is None:
            pytest.skip("no subsection (reported by test_subcommand_documented_in_group_page)")
    missing = [flag for flag in documented_flags(command) if not mentions(text, flag)]
    where = page.name if len(path) <= 1 else f"{page.name} (.SS {' '.join(path[1:])})"
    assert not missing, f"{cmd_id(item)}: {where} does not mention {', '.join(missing)}"


@pytest.mark.parametrize("item", [c for c in COMMANDS if len(c[0]) <= 1], ids=cmd_id)
def test_help_option_is_documented(item):
    path, command = item
    page = page_for(path)
    if not page.exists():
        pytest.skip("no page")
    text = page_text(page)
    # (a command passing every argument on, as `python` does, has no help option of its own)
    for flag in set(command.context_settings.get("help_option_names", HELP_FLAGS)):
        assert mentions(text, flag), f"{page.name} does not mention {flag}"


# -- configuration keys ------------------------------------------------------------------------


def config_keys():
    """Every key flux_lite/config.py accepts, as dotted names, read from its source.

    The accepted keys are the tuples given to ``_unknown(obj, KEYS, PREFIX)``,
    ``_checked(obj, PREFIX, KEYS)`` and ``_section(parent, NAME, KEYS)``,
    plus HOUSEKEEPING_KEYS (``job-manager.housekeeping``). A prefix that is
    not a plain string (``resource.config[i]``) yields the bare key names.
    """
    import flux_lite.config as configmod

    tree = ast.parse(pathlib.Path(configmod.__file__).read_text(encoding="utf-8"))
    keys = set()
    for node in ast.walk(tree):
        func = getattr(node, "func", None) if isinstance(node, ast.Call) else None
        name = getattr(func, "id", None)
        if name == "_unknown":  # _unknown(obj, KEYS, PREFIX)
            allowed, prefix = node.args[1], node.args[2]
        elif name == "_checked":  # _checked(value, PREFIX, KEYS)
            allowed, prefix = node.args[2], node.args[1]
        elif name == "_section":  # _section(parent, NAME, KEYS[, PARENT_PREFIX]): PREFIX = PARENT_PREFIX + NAME
            allowed, table = node.args[2], node.args[1]
            parent = node.args[3].value if len(node.args) > 3 else ""
            prefix = ast.Constant(parent + table.value) if isinstance(table, ast.Constant) else table
        else:
            continue
        names = [elt.value for elt in allowed.elts] if isinstance(allowed, ast.Tuple) else []
        if isinstance(prefix, ast.Constant) and prefix.value == "config":
            continue  # the top-level tables, named by their keys below
        if isinstance(prefix, ast.Constant):
            keys.update(f"{prefix.value}.{name}" for name in names)
        else:
            keys.update(names)
    keys.update(f"job-manager.housekeeping.{name}" for name in configmod.HOUSEKEEPING_KEYS)
    return sorted(keys)


def test_config_keys_found():
    keys = config_keys()
    for key in ("sched.partial-ok", "instance.expiration", "job-manager.housekeeping.release-after",
                "job-manager.update-duration.owner-allow-any", "clock.start", "hosts"):
        assert key in keys


@pytest.mark.parametrize("key", config_keys())
def test_config5_documents_every_key(key):
    text = page_text(MAN / "flux-lite-config.5")
    assert mentions(text, key), f"flux-lite-config(5) does not document {key}"


# -- installation ------------------------------------------------------------------------------


def _pyproject():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    tomli = pytest.importorskip("tomli")
    return tomli.loads(text)


def test_pyproject_installs_every_man_page():
    data_files = _pyproject()["tool"]["setuptools"]["data-files"]
    for page in PAGES:
        target = f"share/man/man{page.suffix[1:]}"
        patterns = data_files.get(target, [])
        rel = page.relative_to(ROOT).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), f"{rel} is not installed to {target}"
    assert "man/*.1" in data_files.get("share/man/man1", [])
    assert "man/*.5" in data_files.get("share/man/man5", [])
