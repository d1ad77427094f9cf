"""flux-lite kvs: inspect the instance's key-value store."""

import json

import click

from flux_lite.cli.common import open_instance
from flux_lite.errors import FluxLiteError


@click.group()
def kvs():
    """Get, put and list KVS keys (Flux's names: job.<dothex>.eventlog, resource.R, ...)."""


@kvs.command()
@click.argument("keys", nargs=-1, required=True)
def get(keys):
    """Print the value of each KEY (eventlogs as their text)."""
    inst = open_instance()
    try:
        for key in keys:
            raw = inst.kvs.get_raw(key)
            if raw is None:
                if inst.kvs.isdir(key):
                    raise FluxLiteError(f"{key}: Is a directory")
                raise FluxLiteError(f"{key}: No such file or directory")
            kind, text = raw
            if kind == "json" and text.startswith('"'):
                import json as _json

                text = _json.loads(text)  # strings print as they were put
            click.echo(text, nl=not text.endswith("\n"))
    finally:
        inst.close()


@kvs.command()
@click.argument("pairs", nargs=-1, required=True, metavar="KEY=VALUE...")
def put(pairs):
    """Store VALUE (JSON if it parses, else a string) at KEY. Instance owner only."""
    inst = open_instance()
    try:
        if not inst.identity.is_owner:
            raise FluxLiteError("Operation not permitted: kvs put is for the instance owner")
        with inst.kvs.transaction():
            for pair in pairs:
                key, eq, value = pair.partition("=")
                if not eq or not key:
                    raise click.UsageError(f"expected KEY=VALUE, got '{pair}'")
                try:
                    obj = json.loads(value)
                except ValueError:
                    obj = value
                except RecursionError:
                    raise FluxLiteError(f"{key}: value nested too deeply") from None
                from flux_lite.stored import check_put

                check_put(key, obj)
                inst.kvs.put(key, obj)
    finally:
        inst.close()


@kvs.command()
@click.option("-R", "--recursive", is_flag=True, help="List directories recursively.")
@click.option("-1", "--one", "one_per_line", is_flag=True, help="(accepted; output is one name per line)")
@click.argument("directory", default=".")
def ls(recursive, one_per_line, directory):
    """List the keys of DIRECTORY (directories end in '.')."""
    inst = open_instance()
    try:
        if directory != "." and not inst.kvs.isdir(directory):
            if inst.kvs.exists(directory):
                click.echo(directory)
                return
            raise FluxLiteError(f"{directory}: No such file or directory")
        if not recursive:
            for name in inst.kvs.ls(directory):
                click.echo(name)
            return
        _ls_recursive(inst.kvs, directory, first=True)
    finally:
        inst.close()


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

    inst = open_instance()
    try:
        raw = inst.kvs.get_raw(key)
        if raw is None:
            raise FluxLiteError(f"{key}: No such file or directory")
        if raw[0] != "eventlog":
            raise FluxLiteError(f"{key}: not an eventlog")
        for entry in inst.kvs.get_eventlog(key):
            click.echo(ev.format_json(entry) if unformatted else ev.format_text(entry))
    finally:
        inst.close()
