"""What every listing command shares: -n/--no-header, -o/--format (named
formats, `-o help`), --json, and "Error in user format" for a bad format.

The listings themselves (rows, formats, headings) are in flux_lite.listing;
this module only parses the options and prints.
"""

import json

import click
from flux_lite.cli.output import emit as emit_lines

from flux_lite.errors import FluxLiteError
from flux_lite.formats.outputformat import SortKeyError


def listing_options(json_help=None, format_help="Output format, or a named format ('help' lists them).",
                    formats=None):
    """Add -n/--no-header and -o/--format (the parameters no_header and fmt),
    and --json (as_json) when json_help is given. formats, "module:NAME" of
    the Listing, lets -o complete its named formats."""
    options = [
        click.option("-n", "--no-header", is_flag=True, help="Suppress the header line."),
        format_option(formats, help=format_help),
    ]
    if json_help:
        options.append(click.option("--json", "as_json", is_flag=True, help=json_help))

    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def format_option(formats, help):
    """-o/--format FORMAT (the parameter fmt); formats: see listing_options."""
    complete = None
    if formats is not None:
        def complete(ctx, param, incomplete):
            import importlib

            from flux_lite.cli._complete import complete_formats

            module, _, name = formats.partition(":")
            return complete_formats(getattr(importlib.import_module(module), name), incomplete)
    return click.option("-o", "--format", "fmt", default="default", metavar="FORMAT", help=help,
                        shell_complete=complete)


def format_string(listing, fmt):
    """-o: a named format or a format string. `-o help` lists the named
    formats and ends the command (before any instance is opened)."""
    import os

    try:
        listing = listing.configured(os.environ)  # the user's named formats
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None
    if fmt == "help":
        click.echo(listing.help(), nl=False)  # it ends with its last format's line
        click.get_current_context().exit(0)
    if "{" not in fmt and fmt.startswith("get-config="):
        # the named format as a config table, as Flux's UtilConfig prints it
        name = fmt.split("=", 1)[1]
        entry = listing.formats.get(name)
        if entry is None:
            raise FluxLiteError(f"--format: No such format {name}")
        table = f"{listing.subtable}.formats" if listing.subtable else "formats"
        click.echo(f"[{table}.{name}]\ndescription = \"{entry[0]}\"\nformat = \"{entry[1]}\"")
        click.get_current_context().exit(0)
    try:
        return listing.format_string(fmt, os.environ)
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None


def render(listing, fmt, rows, no_header=False, merge=None, progress=None, sort=None, width=-1):
    """The listing's lines; a bad format is one error line, as in Flux."""
    try:
        return listing.lines(fmt, rows, no_header=no_header, merge=merge, progress=progress, sort=sort,
                             width=width)
    except SortKeyError as exc:
        raise FluxLiteError(str(exc)) from None
    except ValueError as exc:
        if not listing.user_format_errors:
            raise FluxLiteError(str(exc)) from None
        raise FluxLiteError(f"Error in user format: {exc}") from None


def terminal_width(width):
    """-w N: N; -w alone (0): the terminal's width when stdout is one, else
    no limit (-1), as Flux's formatters take it."""
    if width == 0:
        import shutil
        import sys

        return shutil.get_terminal_size().columns if sys.stdout.isatty() else -1
    return width


def emit(listing, fmt, rows, no_header=False):
    """Render and print."""
    emit_lines(render(listing, fmt, rows, no_header=no_header))


def emit_json(doc):
    click.echo(json.dumps(doc))
