"""flux-lite kvs: inspect the instance's key-value store."""

import json

import click
from flux_lite.cli.common import instance

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog as ev
from flux_lite.formats.eventlog import jansson_loads


@click.group()
def kvs():
    """Get, put and list KVS keys (Flux's names: job.<dothex>.eventlog, resource.R, ...)."""


@kvs.command()
@click.argument("keys", nargs=-1, required=True)
def get(keys):
    """Print the value of each KEY (eventlogs as their text)."""
    inst = instance()
    store = inst.kvs
    for key in keys:
        raw = admin.kvs_get_raw(inst, key)
        if raw is None:
            if store.isdir(key):
                raise FluxLiteError(f"{key}: Is a directory")
            raise FluxLiteError(f"{key}: No such file or directory")
        kind, text = raw
        if kind == "json" and text.startswith('"'):
            text = json.loads(text)  # strings print as they were put
        click.echo(text, nl=not text.endswith("\n"))


@kvs.command()
@click.argument("pairs", nargs=-1, required=True, metavar="KEY=VALUE...")
def put(pairs):
    """Store VALUE (JSON if it parses, else a string) at KEY. Instance owner only."""
    # parsed as the put goes: a bad pair rolls back the pairs before it
    admin.kvs_put(instance(), (_key_value(pair) for pair in pairs))


def _key_value(pair):
    key, eq, value = pair.partition("=")
    if not eq or not key:
        raise click.UsageError(f"expected KEY=VALUE, got '{pair}'")

    try:
        return key, jansson_loads(value)  # NaN or 1e400 would not be JSON: stored as strings
    except (ValueError, UnicodeError):
        return key, value
    except RecursionError:
        raise FluxLiteError(f"{key}: value nested too deeply") from None


@kvs.command()
@click.option("-R", "--recursive", is_flag=True, help="List directories recursively.")
@click.option("-d", "--directory", "as_directory", is_flag=True,
              help="List a directory itself instead of its contents.")
@click.option("-w", "--width", type=click.IntRange(min=0), default=None, metavar="COLS",
              help="Set the output width to COLS (0: no limit).")
@click.option("-1", "--one", "one_per_line", is_flag=True, help="Force one entry per line.")
@click.option("-F", "--classify", is_flag=True, help="Append '.' to directory names.")
@click.argument("keys", nargs=-1, metavar="[KEY...]")
def ls(recursive, as_directory, width, one_per_line, classify, keys):
    """List KEYs (default the root): directories' names in columns that fit the width."""
    store = instance().kvs
    win = _window_width(width, one_per_line)
    dirs, singles, failed = [], [], False
    for key in keys or (".",):
        # a trailing dot asks for a directory (flux kvs ls prints them so)
        name, require_dir = key, False
        while len(name) > 1 and name.endswith("."):
            name, require_dir = name[:-1], True
        if name == "." or store.isdir(name):
            if as_directory:
                singles.append(name + ("." if classify else ""))
            else:
                dirs.append(name)
        elif store.exists(name):
            if require_dir:
                failed = _ls_error(f"{name}: Not a directory")
                continue
            singles.append(name)
        else:
            failed = _ls_error(f"{name}: No such file or directory")
    singles.sort()
    dirs.sort()
    label = vspace = False
    if singles:
        _echo_columns(singles, win)
        label = vspace = True
    if recursive or len(dirs) > 1:
        label = True
    for name in dirs:
        _ls_dir(store, name, win, classify, recursive, label, vspace)
        vspace = True
    if failed:
        raise SystemExit(1)


def _window_width(width, one_per_line):
    """flux kvs ls's width: -1 (one per line), -w COLS, the terminal's, else
    $COLUMNS, else 80; 0 is no limit."""
    import os
    import sys

    if one_per_line:
        return 1
    if width is not None:
        return width
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = -1
    return columns if columns >= 0 else 80


def _ls_error(message):
    # as ls(1) and flux kvs ls: one line per key it cannot list, naming the key
    click.echo(message, err=True)
    return True


def _echo_columns(names, win, col_width=None):
    """Names in columns of the longest name plus 4, as many as fit in win."""
    if col_width is None:
        col_width = max(len(n) for n in names) + 4
    line, col = "", 0
    for name in names:
        if win != 0 and col + col_width > win and col > 0:
            click.echo(line)
            line, col = "", 0
        line = line.ljust(col) + name
        col += col_width
    if col > 0:
        click.echo(line)


def _ls_dir(store, key, win, classify, recursive, label, vspace):
    entries = store.ls(key)
    names = [e[:-1] if e.endswith(".") else e for e in entries]
    if label:
        click.echo(("\n" if vspace else "") + f"{key}:")
    if names:
        shown = entries if classify else names
        _echo_columns(shown, win, col_width=max(len(n) for n in names) + 4)
    if recursive:
        for entry, name in zip(entries, names):
            if entry.endswith("."):
                child = name if key == "." else f"{key}.{name}"
                _ls_dir(store, child, win, classify, recursive, label, True)


@kvs.group()
def eventlog():
    """Eventlog keys."""


@eventlog.command("get")
@click.option("-u", "--unformatted", is_flag=True, help="Print the raw RFC 18 lines.")
@click.argument("key")
def eventlog_get(unformatted, key):
    """Print the eventlog at KEY."""
    raw = admin.kvs_get_raw(instance(), key)
    if raw is None:
        raise FluxLiteError(f"{key}: No such file or directory")
    if raw[0] == "eventlog":
        entries = instance().kvs.get_eventlog(key)
    else:
        # Flux decodes whatever the key holds: only a string put as RFC 18 lines would decode
        try:
            entries = ev.decode(json.loads(raw[1]))
        except (ValueError, RecursionError):
            raise FluxLiteError("cannot decode improperly formatted eventlog") from None
    for entry in entries:
        click.echo(ev.display_json(entry) if unformatted else ev.format_text(entry))
