"""Flux's own words: program names, usage errors and option spellings.

Invoked as `flux` (the program name), flux-lite speaks as Flux does: each
command has Flux's program name (`flux-update`, `flux-job`), Flux's Python
commands report usage errors in argparse's form (exit 2) and its C commands in
liboptparse's (exit 1). Invoked as `flux-lite`, the same messages carry
flux-lite's names (`flux-lite update`).

Option spellings follow Flux too: its Python commands take no abbreviations
(FluxArgumentParser sets allow_abbrev=False) but accept a few hidden aliases
(`--state` for `--states`, `--dry` for `--dry-run`); its C commands parse with
getopt_long, which takes any unique prefix of a long option.
"""

import click

from flux_lite import bindings

# Flux's commands written in C (liboptparse): errors are `flux-CMD: MESSAGE`,
# without argparse's `ERROR:` level, and bad usage exits 1.
C_COMMANDS = frozenset({"job", "kvs", "module", "config", "dmesg", "start", "broker", "env", "dump", "restore", "R",
                        "getattr", "lsattr", "uptime", "overlay", "logger"})

# Flux's C command groups that print their own usage and list their common
# subcommands (Flux's order and words) when the subcommand is missing or
# unknown: flux-job and flux-kvs. Only those flux-lite has are listed.
C_GROUP_COMMANDS = {
    "job": (
        ("urgency", "Set job urgency (0-31, HOLD, EXPEDITE, DEFAULT)"),
        ("raise", "Raise exception on one or more jobs"),
        ("raiseall", "Raise an exception on multiple jobs."),
        ("kill", "Send signal to one or more running jobs"),
        ("killall", "Send signal to multiple running jobs"),
        ("attach", "Interactively attach to job"),
        ("status", "Wait for job(s) to complete and exit with largest exit code"),
        ("submit", "Run job"),
        ("id", "Convert jobid(s) to another form"),
        ("eventlog", "Display eventlog for a job"),
        ("wait-event", "Wait for an event "),
        ("info", "Display info for a job"),
        ("stats", "Get current job stats"),
        ("namespace", "Convert job ids to job guest kvs namespace names"),
        ("wait", "Wait for job(s) to complete."),
        ("memo", "Post an RFC 21 memo to a job"),
        ("taskmap", "Utility function for working with job task maps"),
        ("timeleft", "Find remaining runtime for job or enclosing instance"),
        ("hostpids", "Print host:pid pairs for tasks in JOBID"),
        ("last", "List my most recently submitted job id(s)"),
        ("purge", "Purge the oldest inactive jobs"),
    ),
    "kvs": (
        ("namespace", "Perform KVS namespace operations"),
        ("get", "Get value stored under key"),
        ("put", "Store value under key"),
        ("dir", "Display all keys under directory"),
        ("ls", "List directory"),
        ("unlink", "Remove key"),
        ("link", "Create a new name for target"),
        ("readlink", "Retrieve the key a link refers to"),
        ("mkdir", "Create a directory"),
        ("copy", "Copy source key to destination key"),
        ("move", "Move source key to destination key"),
        ("version", "Display current KVS version"),
        ("wait", "Block until the KVS reaches version"),
        ("getroot", "Get KVS root treeobj"),
        ("sync", "sync content and checkpoint to disk"),
        ("eventlog", "Manipulate a KVS eventlog"),
    ),
}

# Subcommands Flux registers hidden (OPTPARSE_SUBCMD_HIDDEN): not in that list.
C_GROUP_HIDDEN = {"job": frozenset({"list", "list-inactive", "list-ids"})}

# Hidden aliases FluxArgumentParser commands accept (alias -> option).
HIDDEN_ALIASES = {"--state": "--states", "--dry": "--dry-run", "--require": "--requires",
                  "--broker-opt": "--broker-opts"}

# argparse usage lines Flux prints that are not derived from the options
# (flux-cancel sets its own usage string).
USAGE_OVERRIDES = {"cancel": "flux cancel [OPTIONS] [JOBID...]"}

# Flux commands whose program name is not flux-CMD: flux-ion-resource.py is
# run as a script, so argparse names it after the file
PROGNAMES = {"ion-resource": "flux-ion-resource.py"}

# dest of a Python command group's subcommand argument, as in Flux's parsers
SUBCOMMAND_DEST = "subcommand"


def root_context(ctx=None):
    ctx = ctx or click.get_current_context(silent=True)
    return ctx.find_root() if ctx is not None else None


def is_flux(ctx=None):
    """True when invoked under Flux's program name (`flux`)."""
    root = root_context(ctx)
    return root is not None and root.info_name == "flux"


def command_path(ctx):
    """Command names below the root: ['housekeeping', 'list']."""
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return names[::-1]


def top_command(ctx=None):
    ctx = ctx or click.get_current_context(silent=True)
    path = command_path(ctx) if ctx is not None else []
    return path[0] if path else None


def prog(cmd=None, ctx=None, sub=None):
    """Program name of command CMD: `flux-update` as Flux, else `flux-lite update`."""
    cmd = cmd or top_command(ctx)
    if is_flux(ctx):
        name = PROGNAMES.get(cmd, f"flux-{cmd}") if cmd else "flux"
    else:
        name = f"flux-lite {cmd}" if cmd else "flux-lite"
    return f"{name} {sub}" if sub else name


def is_c_command(cmd):
    return cmd in C_COMMANDS


def error_line(message, cmd=None, ctx=None):
    """The line an error of command CMD prints on stderr."""
    cmd = cmd or top_command(ctx)
    if is_flux(ctx) and is_c_command(cmd):
        return f"{prog(cmd, ctx)}: {message}"
    return f"{prog(cmd, ctx)}: ERROR: {message}"


def log_line(level, message, cmd=None, ctx=None):
    """`flux-jobs: WARNING: ...`, `flux-update: INFO: ...` (Python's logging format)."""
    return f"{prog(cmd, ctx)}: {level}: {message}"


def echo_error(message, cmd=None, ctx=None):
    click.echo(error_line(message, cmd, ctx), err=True)


def warning(message, cmd=None, ctx=None):
    click.echo(log_line("WARNING", message, cmd, ctx), err=True)


def info(message, cmd=None, ctx=None):
    click.echo(log_line("INFO", message, cmd, ctx), err=True)


# -- option spellings ------------------------------------------------------------------


def adopt(cmd, c_style=None, name=None):
    """Make CMD (and its subcommands) parse options as its Flux counterpart does."""
    if getattr(cmd, "_flux_words", False):
        return cmd
    if c_style is None:
        c_style = is_c_command(name or cmd.name)
    original = cmd.parse_args

    def parse_args(ctx, args):
        try:
            return original(ctx, respell(cmd, list(args), c_style, ctx))
        except click.UsageError as exc:
            # click's parser raises some errors without the context they
            # belong to; the report needs it
            if exc.ctx is None:
                exc.ctx, exc.cmd = ctx, cmd
            raise

    cmd.parse_args = parse_args
    cmd._flux_words = True
    cmd._c_style = c_style  # a lazy group adopts its subcommands when they are loaded
    if c_style:
        # liboptparse is POSIXLY_CORRECT: options end at the first operand
        # (so `flux job urgency ID -1` gives -1 as the urgency)
        cmd.allow_interspersed_args = False
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            adopt(sub, c_style)
    return cmd


def _takes_value(param):
    return not (param.is_flag or param.count)


def _optional_value(param):
    """An option whose value may be left out (--color[=WHEN])."""
    return getattr(param, "_flag_needs_value", False)


def _option_tables(cmd, ctx):
    longs, shorts = {}, {}
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        for opt in param.opts + param.secondary_opts:
            if opt.startswith("--"):
                longs[opt] = param
            elif opt.startswith("-"):
                shorts[opt] = param
    return longs, shorts


def respell(cmd, args, c_style, ctx):
    """Rewrite long options as click will recognise them.

    C commands: a unique prefix of a long option is that option (getopt_long).
    Python commands: Flux's hidden aliases. Rewriting stops where options end
    (`--`, or the first operand of a command whose operands end its options).
    """
    longs, shorts = _option_tables(cmd, ctx)
    stop_at_operand = isinstance(cmd, click.Group) or not ctx.allow_interspersed_args
    out = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg.partition("=")
            if name not in longs:
                name = _resolve_long(cmd, ctx, name, longs, c_style)
            out.append(name + eq + value)
            param = longs.get(name)
            if param is not None and c_style and _optional_value(param) and not eq:
                out[-1] = f"{name}={param.flag_value}"  # liboptparse: a value only as --opt=VALUE
            elif param is not None and _takes_value(param) and not eq and i + 1 < len(args):
                i += 1
                out.append(args[i])
        elif arg.startswith("-") and len(arg) > 1:
            out.append(arg)
            # a cluster of short options; the first that takes a value ends it
            for j in range(1, len(arg)):
                param = shorts.get("-" + arg[j])
                if param is None:
                    break
                if c_style and _optional_value(param):
                    if j == len(arg) - 1:
                        out[-1] = f"{arg}{param.flag_value}"  # and only attached: -LWHEN
                    break
                if _takes_value(param):
                    if j == len(arg) - 1 and i + 1 < len(args):
                        i += 1
                        out.append(args[i])
                    break
        else:
            if stop_at_operand:
                out.extend(args[i:])
                break
            out.append(arg)
        i += 1
    return out


def _resolve_long(cmd, ctx, name, longs, c_style):
    if not c_style:
        alias = HIDDEN_ALIASES.get(name)
        return alias if alias in longs else name
    matches = sorted(opt for opt in longs if opt.startswith(name))
    params = {id(longs[opt]) for opt in matches}
    if len(params) == 1:
        # the option's own long spelling, whichever prefix of it was typed
        return next(opt for opt in longs[matches[0]].opts if opt.startswith("--")) \
            if any(o.startswith("--") for o in longs[matches[0]].opts) else matches[0]
    return name


# -- usage errors ----------------------------------------------------------------------


def _argparse_prog(ctx):
    """argparse's prog of the parser for ctx: `flux-housekeeping list`."""
    path = command_path(ctx)
    if not path:
        return prog(None, ctx)
    return prog(path[0], ctx, " ".join(path[1:]) or None)


def _option_usage(param):
    opt = param.opts[0]
    if not _takes_value(param):
        return f"[{opt}]"
    metavar = param.metavar or param.name.upper()
    if _optional_value(param):
        return f"[{opt} [{metavar}]]"  # an optional value: argparse's nargs="?"
    return f"[{opt} {metavar}]"


def _argument_metavar(param):
    metavar = param.metavar or param.name.upper()
    return metavar[:-3] if metavar.endswith("...") else metavar


def _argument_usage(param):
    metavar = _argument_metavar(param)
    if param.nargs == -1:
        return f"{metavar} [{metavar} ...]" if param.required else f"[{metavar} ...]"
    if not param.required:
        return f"[{metavar}]"
    return metavar


def _usage_parts(ctx):
    cmd = ctx.command
    optionals, positionals = ["[-h]"], []
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option):
            if param.hidden or "--help" in param.opts or "--version" in param.opts:
                continue
            optionals.append(_option_usage(param))
        elif isinstance(param, click.Argument):
            positionals.append(_argument_usage(param))
    if isinstance(cmd, click.Group):
        # two parts, as argparse wraps them
        positionals += ["{" + ",".join(cmd.commands) + "}", "..."]
    return optionals, positionals


def argparse_usage(ctx, width=None):
    """`usage: PROG [-h] ...`, wrapped as argparse wraps a long usage."""
    import os
    import shutil

    prog_name = _argparse_prog(ctx)
    override = USAGE_OVERRIDES.get(top_command(ctx)) if len(command_path(ctx)) == 1 else None
    if override:
        return f"usage: {override}"
    optionals, positionals = _usage_parts(ctx)
    if width is None:
        try:
            width = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            width = shutil.get_terminal_size().columns
    text_width = max(width - 2, 11)
    prefix = "usage: "
    line = " ".join([prog_name] + optionals + positionals)
    if len(prefix) + len(line) <= text_width:
        return prefix + line
    # too long: optionals, then positionals from a new line, each group
    # filled to the width and indented under the first option
    if len(prefix) + len(prog_name) <= 0.75 * text_width:
        indent = " " * (len(prefix) + len(prog_name) + 1)
        if optionals:
            lines = _fill([prog_name] + optionals, indent, text_width, len(prefix))
            lines += _fill(positionals, indent, text_width)
        else:
            lines = _fill([prog_name] + positionals, indent, text_width, len(prefix))
    else:
        indent = " " * len(prefix)
        lines = _fill(optionals + positionals, indent, text_width)
        if len(lines) > 1:
            lines = _fill(optionals, indent, text_width) + _fill(positionals, indent, text_width)
        lines = [prog_name] + lines
    return prefix + "\n".join(lines)


def _fill(parts, indent, text_width, first_len=None):
    """Parts joined by spaces into lines of at most text_width; the first line
    starts after a prefix of first_len (unindented) when given."""
    lines, line = [], []
    used = (first_len if first_len is not None else len(indent)) - 1
    for part in parts:
        if line and used + 1 + len(part) > text_width:
            lines.append(indent + " ".join(line))
            line, used = [], len(indent) - 1
        line.append(part)
        used += len(part) + 1
    if line:
        lines.append(indent + " ".join(line))
    if first_len is not None and lines:
        lines[0] = lines[0][len(indent):]
    return lines


_CLICK_VALUE_ERRORS = (
    ("is not a valid integer", "invalid int value: {!r}"),
    ("is not a valid float", "invalid float value: {!r}"),
)


def _param_hint(param):
    if isinstance(param, click.Argument):
        metavar = param.metavar or param.name.upper()
        return metavar
    return "/".join(param.opts + param.secondary_opts)


def _bad_value_message(exc):
    import re

    param = exc.param
    message = exc.message
    match = re.match(r"^'(.*)' is not one of (.*)\.$", message, re.S)
    if match and isinstance(param.type, click.Choice):
        choices = ", ".join(repr(c) for c in param.type.choices)
        return f"invalid choice: {match.group(1)!r} (choose from {choices})"
    for needle, form in _CLICK_VALUE_ERRORS:
        match = re.match(r"^'(.*)' " + needle, message, re.S)
        if match:
            return form.format(match.group(1))
    return message


def argparse_message(exc):
    """argparse's wording of a click usage error: the text after `error: `."""
    ctx = exc.ctx
    dest = SUBCOMMAND_DEST
    if ctx is not None and isinstance(ctx.command, click.Group) and getattr(ctx.command, "argparse_no_dest", False):
        # subparsers without a dest: argparse names them by their choices
        dest = "{" + ",".join(ctx.command.commands) + "}"
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        return f"the following arguments are required: {dest}"
    if isinstance(exc, click.exceptions.NoSuchCommand):
        choices = ", ".join(repr(name) for name in ctx.command.commands)
        return f"argument {dest}: invalid choice: {exc.command_name!r} (choose from {choices})"
    if isinstance(exc, click.exceptions.NoSuchOption):
        return f"unrecognized arguments: {exc.option_name}"
    if isinstance(exc, click.exceptions.MissingParameter) and exc.param is not None:
        missing = [_argument_metavar(exc.param) if isinstance(exc.param, click.Argument)
                   else _param_hint(exc.param)]
        if isinstance(exc.param, click.Argument) and ctx is not None:
            params = [p for p in ctx.command.get_params(ctx) if isinstance(p, click.Argument)]
            if exc.param in params:
                later = params[params.index(exc.param) + 1:]
                missing += [_argument_metavar(p) for p in later if p.required]
        return f"the following arguments are required: {', '.join(missing)}"
    if isinstance(exc, click.BadParameter) and exc.param is not None:
        return f"argument {_param_hint(exc.param)}: {_bad_value_message(exc)}"
    if isinstance(exc, click.exceptions.BadOptionUsage):
        param = _find_option(ctx, exc.option_name)
        if param is not None and "requires an argument" in exc.message:
            return f"argument {_param_hint(param)}: expected one argument"
    if exc.message.startswith("Got unexpected extra argument"):
        return "unrecognized arguments: " + exc.message.partition("(")[2].rstrip(")")
    return exc.message


def _find_option(ctx, name):
    if ctx is None:
        return None
    for param in ctx.command.get_params(ctx):
        if isinstance(param, click.Option) and name in param.opts + param.secondary_opts:
            return param
    return None


def _report_context(exc):
    """argparse reports unrecognized arguments at the top-level parser."""
    ctx = exc.ctx
    unrecognized = isinstance(exc, click.exceptions.NoSuchOption) or \
        exc.message.startswith("Got unexpected extra argument")
    if unrecognized and ctx is not None:
        while ctx.parent is not None and ctx.parent.parent is not None:
            ctx = ctx.parent
    return ctx


def c_fullname(ctx):
    """liboptparse's full program name of ctx's command: `flux-job eventlog`."""
    path = command_path(ctx) if ctx is not None else []
    return prog(path[0] if path else None, ctx, " ".join(path[1:]) or None)


def c_group_usage(cmd, ctx):
    """What flux-job and flux-kvs print for a missing or unknown subcommand:
    their usage, then their common subcommands (flux-lite's own last)."""
    name = prog(cmd, ctx)
    group = ctx.command
    have = [n for n in group.list_commands(ctx)]
    flux_docs = dict(C_GROUP_COMMANDS[cmd])
    rows = [(n, doc) for n, doc in C_GROUP_COMMANDS[cmd] if n in have]
    table = getattr(group, "table", {})  # a lazy group's short help, without importing
    hidden = C_GROUP_HIDDEN.get(cmd, frozenset())
    for n in have:
        if n in hidden:
            continue
        if n in table and n not in flux_docs:
            rows.append((n, table[n][2]))
        elif n not in flux_docs:
            sub = group.get_command(ctx, n)
            if sub is not None and not sub.hidden:
                rows.append((n, sub.get_short_help_str(limit=60)))
    return ([f"Usage: {name} [OPTIONS] COMMAND ARGS", "  -h, --help             Display this message.", "",
             f"Common commands from {name}:"] + [f"   {n:<15} {doc}" for n, doc in rows])


def c_usage_error(exc):
    """liboptparse's report of bad usage (C commands): lines and exit code 1."""
    ctx = exc.ctx
    path = command_path(ctx) if ctx is not None else []
    cmd = path[0] if path else None
    fullname = c_fullname(ctx)
    no_args = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2
    if len(path) == 1 and cmd in C_GROUP_COMMANDS and isinstance(exc, (click.exceptions.NoSuchCommand, no_args)):
        return c_group_usage(cmd, ctx)
    if isinstance(exc, click.exceptions.NoSuchOption):
        return [f"{fullname}: unrecognized option '{exc.option_name}'",
                f"Try `{fullname} --help' for more information."]
    if isinstance(exc, click.exceptions.NoSuchCommand):
        return [f"{prog(cmd, ctx)}: Unknown subcommand: {exc.command_name}"]
    if isinstance(exc, click.BadParameter) and exc.param is not None and \
            not isinstance(exc, click.exceptions.MissingParameter):
        if getattr(exc.param.type, "c_jobid_error", False):
            import re

            match = re.search(r"'(.*)'", exc.message)
            value = match.group(1) if match else ""
            return [f"{prog(cmd, ctx)}: error parsing jobid: \"{value}\""]
        return [f"{prog(cmd, ctx)}: {_param_hint(exc.param)}: {_bad_value_message(exc)}"]
    if isinstance(exc, click.exceptions.BadOptionUsage) and "requires an argument" in exc.message:
        return [f"{fullname}: '{exc.option_name}' missing argument"]
    if ctx is not None:
        usage = ctx.command.collect_usage_pieces(ctx)
        return [f"Usage: {fullname} {' '.join(usage)}".rstrip()]
    return [f"{prog(cmd, ctx)}: {exc.message}"]


def usage_error(exc):
    """(stderr lines, exit code) of a click usage error, as Flux reports it."""
    ctx = exc.ctx
    path = command_path(ctx) if ctx is not None else []
    if not path:
        if isinstance(exc, click.exceptions.NoSuchCommand):
            name = "flux" if is_flux(ctx) else "flux-lite"
            return [f"{name}: `{exc.command_name}' is not a {name} command.  See '{name} --help'"], 1
        return None
    if is_c_command(path[0]):
        return c_usage_error(exc), 1
    report = _report_context(exc)
    return [argparse_usage(report), f"{_argparse_prog(report)}: error: {argparse_message(exc)}"], 2


# -- the `flux` program ----------------------------------------------------------------

# A shell script, so that `flux python` execs the interpreter at once (Flux's is
# a C program); anything else runs flux-lite under Flux's name. (-c puts the
# working directory first on sys.path, which a script's own directory would
# not be: it is taken off again.)
SHIM = """#!/bin/sh
# flux-lite speaking as Flux: written by flux-lite for scripts that call `flux`
if [ "$1" = python ] && [ "$2" != --get-path ] && [ "$2" != --list-versions ]; then
    shift
    PYTHONPATH="{bindings}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" "$@"
fi
exec "{python}" -c 'import sys; del sys.path[0]; sys.argv[0] = "flux"; from flux_lite.cli.launch import main; \
sys.exit(main(prog_name="flux"))' "$@"
"""


def flux_bin_dir(state_dir):
    """STATE/bin, holding a `flux` executable that is flux-lite under Flux's name.

    Written (again) when missing or when it names another Python, so an
    instance created by one installation still works from another."""
    import os
    import sys
    from pathlib import Path

    bindir = Path(state_dir) / "bin"
    path = bindir / "flux"
    text = SHIM.format(python=sys.executable, bindings=bindings.PATH)
    try:
        current = path.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        bindir.mkdir(parents=True, exist_ok=True)
        tmp = bindir / f".flux.{os.getpid()}"
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return bindir


def flux_environment(state_dir, environ=None):
    """The variables that make `flux` reach the instance in state_dir."""
    import os

    environ = os.environ if environ is None else environ
    bindir = str(flux_bin_dir(state_dir))
    path = environ.get("PATH", "")
    parts = [p for p in path.split(os.pathsep) if p and p != bindir]
    # the `flux` Python package of flux-lite, as Flux's `flux env` puts its bindings on PYTHONPATH
    return {"FLUX_LITE_STATE_DIR": str(state_dir), "PATH": os.pathsep.join([bindir] + parts),
            "PYTHONPATH": bindings.pythonpath(environ)}
