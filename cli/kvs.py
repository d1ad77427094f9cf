"""flux-lite kvs: inspect the instance's key-value store."""

import json

import click

from flux_lite.cli.common import instance
from flux_lite.errors import FluxLiteError


@click.group()
def kvs():
    """Get, put and list KVS keys (Flux's names: job.<dothex>.eventlog, resource.R, ...)."""


@kvs.command()
@click.argument("keys", nargs=-1, required=True)
def get(keys):
    """Print the value of each KEY (eventlogs as their text)."""
    from flux_lite import admin

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
    from flux_lite import admin

    # parsed as the put goes: a bad pair rolls back the pairs before it
    admin.kvs_put(instance(), (_key_value(pair) for pair in pairs))


def _key_value(pair):
    key, eq, value = pair.partition("=")
    if not eq or not key:
        raise click.UsageError(f"expected KEY=VALUE, got '{pair}'")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
    except RecursionError:
        raise FluxLiteError(f"{key}: value nested too deeply") from None


@kvs.command()
@click.option("-R", "--recursive", is_flag=True, help="List directories recursively.")
@click.option("-1", "--one", "one_per_line", is_flag=True, help="(accepted; output is one name per line)")
@click.argument("directory", default=".")
def ls(recursive, one_per_line, directory):
    """List the keys of DIRECTORY (directories end in '.')."""
    store = instance().kvs
    if directory != "." and not store.isdir(directory):
        if store.exists(directory):
            click.echo(directory)
            return
        raise FluxLiteError(f"{directory}: No such file or directory")
    if not recursive:
        for name in store.ls(directory):
            click.echo(name)
        return
    _ls_recursive(store, directory, first=True)


def _ls_recursive(store, directory, first):
    names = store.ls(directory)
    if not first:
        click.echo()
    if directory != "." or not first:
        click.echo(f"{directory}:")
    for name in names:
        click.echo(name)
    for name in names:
        if name.endswith("."):
            child = name[:-1] if directory == "." else f"{directory}.{name[:-1]}"
            _ls_recursive(store, child, first=False)


@kvs.group()
def eventlog():
    """Eventlog keys."""


@eventlog.command("get")
@click.option("-u", "--unformatted", is_flag=True, help="Print the raw RFC 18 lines.")
@click.argument("key")
def eventlog_get(unformatted, key):
    """Print the eventlog at KEY."""
    from flux_lite.formats import eventlog as ev

    from flux_lite import admin

    raw = admin.kvs_get_raw(instance(), key)
    if raw is None:
        raise FluxLiteError(f"{key}: No such file or directory")
    if raw[0] != "eventlog":
        raise FluxLiteError(f"{key}: not an eventlog")
    for entry in instance().kvs.get_eventlog(key):
        click.echo(ev.format_json(entry) if unformatted else ev.format_text(entry))
