"""flux-lite module: Flux's spellings for the scheduler module and job-manager stats."""

import contextlib
import errno
import json
import os

import click

from flux_lite.cli.common import session
from flux_lite.cli._complete import (
    complete_debug_modules, complete_loaded_modules, complete_module_args, complete_sched_modules,
)
from flux_lite.errors import FluxLiteError



@click.group()
def module():
    """Load, remove, reload and list modules; stats and debug flags."""


def _check(name):
    from flux_lite.sched import registry

    names = registry.module_names()
    if name not in names:
        raise FluxLiteError(f"{name}: only the scheduler modules ({', '.join(names)}) can be managed")


@module.command("load")
@click.argument("name", shell_complete=complete_sched_modules)
@click.argument("args", nargs=-1, shell_complete=complete_module_args)
def load(name, args):
    """Load scheduler module NAME with Flux's ARGS (queue-depth=N, mode=..., test-hello-nopartial)."""
    from flux_lite import admin

    _check(name)
    with session() as broker:
        with _flux_words("load", name, errno.EINVAL):
            admin.module_load(broker, name, args)


@module.command("remove")
@click.option("-f", "--force", is_flag=True, help="Do not fail if the module is not loaded.")
@click.argument("name", shell_complete=complete_sched_modules)
def remove(force, name):
    """Remove scheduler module NAME (its state is discarded)."""
    from flux_lite import admin

    _check(name)
    with session() as broker:
        with _flux_words("remove", name, errno.ENOENT):
            admin.module_remove(broker, name, force=force)


@module.command("reload")
@click.option("-f", "--force", is_flag=True, help="Load even if the module was not loaded.")
@click.argument("name", shell_complete=complete_sched_modules)
@click.argument("args", nargs=-1, shell_complete=complete_module_args)
def reload(force, name, args):
    """Remove and load scheduler module NAME again (hello replays the allocations)."""
    from flux_lite import admin
    from flux_lite.cli.output import progress_report

    _check(name)
    with session() as broker, progress_report("hello") as report:
        # as in Flux, a failed load still removes the old module
        failure = admin.module_reload(broker, name, args, progress=report)
    if failure is not None:
        with _flux_words("load", name, errno.EINVAL):
            raise failure


@module.command("list")
def list_():
    """List loaded modules."""
    from flux_lite.sched import loader

    with session() as broker:
        name = loader.loaded_name(broker)
        args = broker.kvs.get(loader.MODULE_KEY, {}).get("args", {}) if name else {}
    rows = [("job-manager", "loaded", ""), ("resource", "loaded", "")]
    if name:
        rows.append((name, "loaded", " ".join(f"{k}={v}" for k, v in sorted(args.items()))))
    click.echo(f"{'Module':<16} {'State':<8} Arguments")
    for row in rows:
        click.echo(f"{row[0]:<16} {row[1]:<8} {row[2]}".rstrip())


@module.command("stats")
@click.argument("name", shell_complete=complete_loaded_modules)
def stats(name):
    """Print a module's stats as JSON (job-manager: housekeeping running/config)."""
    from flux_lite import protocol
    from flux_lite.sched import loader

    with session() as broker:
        if name == "job-manager":
            out = broker.rpc(protocol.JM_STATS, {})
        elif name == loader.loaded_name(broker):
            out = broker.rpc(protocol.SCHED_STATS, {})
        else:
            raise FluxLiteError(f"{name}: module is not loaded")
    click.echo(json.dumps(out))


@module.command("debug")
@click.option("-c", "--clear", "clear_all", is_flag=True, help="Clear all debug flags.")
@click.option("-s", "--set", "set_", type=int, default=None, metavar="MASK", help="Set debug flags to MASK.")
@click.option("-S", "--setbit", type=int, default=None, metavar="MASK", help="Set the bits of MASK.")
@click.option("-C", "--clearbit", type=int, default=None, metavar="MASK", help="Clear the bits of MASK.")
@click.argument("name", shell_complete=complete_debug_modules)
def debug(clear_all, set_, setbit, clearbit, name):
    """Set, clear or print a module's debug flags (as flux module debug).

    sched-simple: 1 deny every alloc, 4 refuse sched.expiration;
    job-exec: 1 make expiration updates fail (non-fatal exec exception).
    """
    from flux_lite import admin

    with session() as broker:
        flags = admin.module_debug(broker, name, clear_all, set_, setbit, clearbit)
    click.echo(f"0x{flags:x}")


@contextlib.contextmanager
def _flux_words(verb, name, errnum):
    """As `flux`, a module that fails to load or remove says only
    `load NAME: strerror`, as flux module does (Flux logs the reason);
    as flux-lite the reason is the message."""
    try:
        yield
    except FluxLiteError as exc:
        from flux_lite.cli.words import is_flux

        if not is_flux():
            raise
        raise FluxLiteError(f"{verb} {name}: {os.strerror(exc.errno or errnum)}") from None
