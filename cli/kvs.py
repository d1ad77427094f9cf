"""flux-lite kvs: inspect the instance's key-value store."""

import json

import click
from flux_lite.cli.common import instance
from flux_lite.cli.output import color_option, emit, use_color
from flux_lite.cli.params import FSD

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog as ev
from flux_lite.formats.eventlog import jansson_loads
from flux_lite.instance import WaitStalled, WaitTimeout


@click.group()
def kvs():
    """Get, put and list KVS keys (Flux's names: job.<dothex>.eventlog, resource.R, ...)."""


def namespace_option(f):
    return click.option("-N", "--namespace", metavar="NAME",
                        help="Specify KVS namespace to use (a job's guest namespace: job-ID).")(f)


@kvs.command()
@namespace_option
@click.option("-W", "--waitcreate", is_flag=True, help="Wait for a missing KEY to be created.")
@click.option("-w", "--watch", is_flag=True, help="Print the value again each time it changes.")
@click.option("-u", "--uniq", is_flag=True, help="With -w: only changed values (all are).")
@click.option("-A", "--append", is_flag=True, help="With -w: print only what was appended.")
@click.option("-f", "--full", is_flag=True, help="With -w: accepted (every change is seen).")
@click.option("-c", "--count", metavar="COUNT", help="With -w: stop after COUNT values.")
@click.option("-r", "--raw", is_flag=True, help="Print each value's bytes as stored, without a newline.")
@click.argument("keys", nargs=-1, required=True)
def get(namespace, waitcreate, watch, uniq, append, full, count, raw, keys):
    """Print the value of each KEY (eventlogs as their text); -w: and each
    value it takes after, under a virtual clock until nothing is left to
    happen or COUNT values were printed."""
    inst = instance()
    limit = _count(count)
    paths = [(admin.namespace_key(inst, namespace, typed)[0], typed) for typed in keys]
    if not watch:
        for key, typed in paths:
            value = _lookup(inst, key, typed)
            if value is None and waitcreate:
                value = _wait(inst, lambda b, key=key, typed=typed: _lookup(inst, key, typed), typed, "value",
                              _watches(namespace))
            if value is None:
                raise FluxLiteError(f"{typed}: No such file or directory")
            click.echo(_value_text(value), nl=not raw)
        return
    # Flux watches every key at once and counts the values printed for all of them
    seen: dict = {}
    printed = [0]

    def check(broker):
        for key, typed in paths:
            value = _lookup(inst, key, typed)
            if value is None:
                if key in seen or not waitcreate:
                    return f"{typed}: No such file or directory"
                continue
            text = _value_text(value)
            before = seen.get(key)
            if before == text:
                continue  # (a rewrite of the same value is not seen: no commit history here)
            seen[key] = text
            if append and before is not None and text.startswith(before):
                text = text[len(before):]
            click.echo(text, nl=not raw)
            printed[0] += 1
            if limit > 0 and printed[0] >= limit:
                return True
        return None

    outcome = _wait(inst, check, " ".join(keys), "value", _watches(namespace, len(keys)))
    if isinstance(outcome, str):
        raise FluxLiteError(outcome)


def _count(count):
    """-c COUNT as liboptparse reads it (0: no limit)."""
    if count is None:
        return 0
    try:
        return int(count)
    except ValueError:
        click.echo("get: Option 'count' requires an integer argument", err=True)
        raise SystemExit(1) from None


def _lookup(inst, key, typed):
    """(kind, text) at key, None if missing; a directory is an error."""
    raw = admin.kvs_get_raw(inst, key)
    if raw is None and inst.kvs.isdir(key):
        raise FluxLiteError(f"{typed}: Is a directory")
    return raw


def _value_text(raw):
    """What flux-kvs get prints of a value (before its newline): strings as
    they were put, JSON and eventlogs as their text."""
    kind, text = raw
    if kind == "json" and text.startswith('"'):
        return json.loads(text)
    return text


@kvs.command()
@click.option("-r", "--raw", is_flag=True, help="Store VALUE as it is (KEY=- reads it from standard input).")
@click.option("-A", "--append", is_flag=True, help="Append value(s) to key instead of overwriting.")
@click.argument("pairs", nargs=-1, required=True, metavar="KEY=VALUE...")
def put(raw, append, pairs):
    """Store VALUE (JSON if it parses, else a string) at KEY. Instance owner only."""
    # parsed as the put goes: a bad pair rolls back the pairs before it
    if raw or append:
        admin.kvs_put(instance(), (_raw_key_value(pair) for pair in pairs), raw=True, append=append)
        return
    admin.kvs_put(instance(), (_key_value(pair) for pair in pairs))


def _raw_key_value(pair):
    import sys

    key, eq, value = pair.partition("=")
    if not eq:
        raise FluxLiteError("put: you must specify a value as key=value")
    if value == "-":
        value = sys.stdin.read()  # (-r KEY=-: the whole of standard input)
    return key, value


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


@kvs.command("dir")
@click.option("-R", "--recursive", is_flag=True, help="Recursively display keys under subdirectories.")
@click.option("-d", "--directory", "as_directory", is_flag=True, help="List directory entries and not values.")
@click.option("-w", "--width", type=click.IntRange(min=0), default=None, metavar="COLS",
              help="Set output width to COLS (0: no limit).")
@namespace_option
@click.argument("keys", nargs=-1, metavar="[KEY]")
def dir_(recursive, as_directory, width, namespace, keys):
    """Print each key under directory KEY (default the root) with its value:
    `key = value`, cut to the width (with ...) at the first newline."""
    inst = instance()
    if len(keys) > 1:
        raise FluxLiteError("dir: specify zero or one directory")
    typed = keys[0] if keys else "."
    key = admin.namespace_key(inst, namespace, typed)[0] if namespace else typed
    store = inst.kvs
    if key not in (".", "") and not store.isdir(key):
        raise FluxLiteError(f"{typed}: {'Not a directory' if store.exists(key) else 'No such file or directory'}")
    win = _window_width(width, False)
    prefix = "" if key in (".", "") else key + "."
    shown = "" if typed in (".", "") else typed.rstrip(".") + "."
    _dump_dir(inst, store, key, prefix, shown, win, recursive, as_directory)


def _dump_dir(inst, store, key, prefix, shown, win, recursive, as_directory):
    for entry in store.ls(key):
        name = entry.rstrip(".")
        if entry.endswith("."):
            if recursive:
                _dump_dir(inst, store, prefix + name, prefix + name + ".", shown + name + ".", win, recursive,
                          as_directory)
            else:
                click.echo(f"{shown}{name}.")
        elif as_directory:
            click.echo(f"{shown}{name}")
        else:
            raw = admin.kvs_get_raw(inst, prefix + name)
            text = raw[1] if raw is not None else ""
            if raw is not None and raw[0] == "json" and text.startswith('"'):
                text = json.loads(text)
            click.echo(_kv_line(f"{shown}{name}", text, win))


def _kv_line(key, value, win):
    """flux kvs dir's `key = value`, cut to the width (less 3 for ...) and at
    the first newline (... when something follows it)."""
    line = f"{key} = {value}"
    if win != 0 and win <= 3:
        win = 0
    overflow = False
    if win:
        if len(line) > win - 3:
            line, overflow = line[:win - 3], True
        cut = line.find("\n")
        if cut >= 0:
            overflow = overflow or cut + 1 < len(line)
            line = line[:cut]
    return line + ("..." if overflow else "")


@kvs.command()
@click.option("-R", "--recursive", is_flag=True, help="Remove directory contents recursively.")
@click.option("-f", "--force", is_flag=True, help="Ignore nonexistent keys.")
@namespace_option
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
def unlink(recursive, force, namespace, keys):
    """Remove KEYs (a directory only with -R). Instance owner only, except in
    a job's own guest namespace."""
    admin.kvs_unlink(instance(), keys, recursive=recursive, force=force, namespace=namespace)


@kvs.group()
def eventlog():
    """Eventlog keys."""


@eventlog.command("append")
@click.option("-t", "--timestamp", metavar="SECONDS", help="Specify timestamp in seconds since epoch.")
@namespace_option
@click.argument("key")
@click.argument("name")
@click.argument("context", nargs=-1)
def eventlog_append(timestamp, namespace, key, name, context):
    """Append event NAME (with CONTEXT, a JSON object) to the eventlog at KEY."""
    inst = instance()
    ts = None
    if timestamp is not None:
        try:
            ts = float(timestamp)
        except ValueError:
            click.echo("append: Option 'timestamp' requires a floating point argument", err=True)
            raise SystemExit(1) from None
        if ts == 0:
            ts = None  # (0: now, as Flux's default)
    ctx = None
    if context:
        try:
            ctx = jansson_loads(" ".join(context))
        except (ValueError, UnicodeError, RecursionError):
            ctx = None
        if not isinstance(ctx, dict):
            raise FluxLiteError("eventlog_entry_create: Invalid argument")
    try:
        admin.kvs_eventlog_append(inst, key, name, ctx, ts, namespace=namespace)
    except ev.EventlogError:
        raise FluxLiteError("eventlog_entry_create: Invalid argument") from None


def _formatter(unformatted, human, color):
    color_on = use_color(color, c_style=True)
    if unformatted and (human or color == "always"):
        raise FluxLiteError("Do not specify --unformatted with --human or --color=always")
    return ev.EventlogFormatter(format="json" if unformatted else "text",
                                timestamp_format="human" if human else "raw", color=color_on)


def _eventlog_entries(inst, key, typed):
    """The entries at key, None if there is no such key; a value that does
    not decode is flux-kvs's error."""
    raw = admin.kvs_get_raw(inst, key)
    if raw is None:
        return None
    if raw[0] == "eventlog":
        return inst.kvs.get_eventlog(key)
    # Flux decodes whatever the key holds: only a string put as RFC 18 lines would decode
    try:
        return ev.decode(json.loads(raw[1]))
    except (ValueError, RecursionError, TypeError):
        raise FluxLiteError("cannot decode improperly formatted eventlog") from None


@eventlog.command("get")
@click.option("-W", "--waitcreate", is_flag=True, help="Wait for creation to occur on watch.")
@click.option("-w", "--watch", is_flag=True, help="Monitor eventlog.")
@click.option("-c", "--count", metavar="COUNT", help="Display at most COUNT events.")
@click.option("-u", "--unformatted", is_flag=True, help="Print the raw RFC 18 lines.")
@click.option("-H", "--human", is_flag=True, help="Display human-readable output.")
@color_option("-L")
@namespace_option
@click.argument("key")
def eventlog_get(waitcreate, watch, count, unformatted, human, color, namespace, key):
    """Print the eventlog at KEY (-w: and the events that follow, under a
    virtual clock until nothing is left to happen or COUNT were printed)."""
    inst = instance()
    fmt = _formatter(unformatted, human, color)
    limit = _count(count)
    path = admin.namespace_key(inst, namespace, key)[0]
    if not watch:
        entries = _eventlog_entries(inst, path, key)
        if entries is None and waitcreate:
            entries = _wait(inst, lambda b: _eventlog_entries(inst, path, key), key, "eventlog",
                            _watches(namespace))
        if entries is None:
            raise FluxLiteError("flux_kvs_lookup_get: No such file or directory")
        emit(fmt.format_entries(entries))
        return
    printed = [0]

    def check(broker):
        entries = _eventlog_entries(inst, path, key)
        if entries is None:
            if not waitcreate:
                return "flux_kvs_lookup_get: No such file or directory"
            return None
        new = entries[printed[0]:limit if limit > 0 else None]
        if new:
            emit(fmt.format_entries(new))
            printed[0] += len(new)
        return True if limit > 0 and printed[0] >= limit else None

    outcome = _wait(inst, check, key, "eventlog", _watches(namespace))
    if isinstance(outcome, str):
        raise FluxLiteError(outcome)


def _watches(namespace, keys=1):
    """What a watch of keys in namespace is to kvs-watch (its module stats)."""
    return [{"service": "kvs-watch", "namespace": namespace or "primary"}] * keys


def _wait(inst, check, key, what, watches):
    try:
        return inst.wait(check, watches=watches)
    except (WaitStalled, WaitTimeout):
        raise FluxLiteError(f"{key}: nothing left to happen under the virtual clock "
                            f"(the {what} can change no more)") from None


@eventlog.command("wait-event")
@click.option("-W", "--waitcreate", is_flag=True, help="Wait for creation to occur on eventlog.")
@click.option("-t", "--timeout", type=FSD, default=None, metavar="DURATION", help="Timeout after DURATION.")
@click.option("-u", "--unformatted", is_flag=True, help="Show event in RFC 18 form.")
@click.option("-q", "--quiet", is_flag=True, help="Do not output matched event.")
@click.option("-v", "--verbose", is_flag=True, help="Output all events before matched event.")
@click.option("-H", "--human", is_flag=True, help="Display human-readable output.")
@color_option("-L")
@namespace_option
@click.argument("key")
@click.argument("name")
def eventlog_wait_event(waitcreate, timeout, unformatted, quiet, verbose, human, color, namespace, key, name):
    """Wait for event NAME in the eventlog at KEY and print it (the virtual clock advances while waiting)."""
    inst = instance()
    fmt = _formatter(unformatted, human, color)
    path = admin.namespace_key(inst, namespace, key)[0]

    def check(broker):
        entries = _eventlog_entries(inst, path, key)
        if entries is None:
            return None if waitcreate else f"eventlog path {key} not found"
        for i, entry in enumerate(entries):
            if entry["name"] == name:
                return entries[:i + 1]
        return None

    try:
        found = inst.wait(check, timeout=timeout, watches=_watches(namespace))
    except WaitTimeout:
        raise FluxLiteError(f"wait-event timeout on event '{name}'") from None
    except WaitStalled:
        raise FluxLiteError(f"wait-event: event '{name}' cannot arrive: nothing left to happen "
                            "under the virtual clock (advance it or use --timeout)") from None
    if isinstance(found, str):
        raise FluxLiteError(found)
    if quiet:
        return
    if not unformatted:
        fmt.update_t0(found[0]["timestamp"])
    emit(fmt.format_entries(found if verbose else found[-1:]))
