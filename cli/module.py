"""flux-lite module: Flux's spellings for the scheduler module and job-manager stats."""

import contextlib
import errno
import json
import os

import click
from flux_lite.cli._complete import (
    complete_debug_modules,
    complete_loaded_modules,
    complete_module_args,
    complete_sched_modules,
)
from flux_lite.cli.params import C_INT
from flux_lite.cli.common import session
from flux_lite.cli.output import progress_report
from flux_lite.cli.words import is_flux

from flux_lite import admin, job_info, job_list, protocol
from flux_lite.errors import FluxLiteError
from flux_lite.sched import hosted, loader, registry


@click.group()
def module():
    """Load, remove, reload and list modules; stats and debug flags."""


# flux-lite's own modules that load and remove (beside the scheduler's)
BUILTIN = ("resource", "job-exec", "job-ingest", "job-list")


def _check(name, broker=None):
    """name is a scheduler module, a module file, or (given the broker) the
    name of the module file that is loaded."""
    if hosted.is_module_file(name) or (broker is not None and loader.loaded_path(broker)
                                        and loader.loaded_name(broker) == name):
        return
    names = registry.module_names()
    if name not in names and name not in registry.companion_names():
        names = names + registry.companion_names()
        raise FluxLiteError(f"{name}: only the scheduler modules ({', '.join(names)}) can be managed")


@module.command("load")
@click.argument("name", shell_complete=complete_sched_modules)
@click.argument("args", nargs=-1, shell_complete=complete_module_args)
def load(name, args):
    """Load scheduler module NAME with Flux's ARGS (queue-depth=N, mode=..., test-hello-nopartial)."""
    if name in BUILTIN:
        return _builtin("load", name, args)
    _check(name)
    with session() as broker:
        with _flux_words("load", name, errno.EINVAL):
            # a module file that fails to load leaves its traceback in the log (committed)
            failure = admin.module_load(broker, name, args)
    if failure is not None:
        with _flux_words("load", name, errno.EINVAL):
            raise failure


@module.command("remove")
@click.option("-f", "--force", is_flag=True, help="Do not fail if the module is not loaded.")
@click.argument("name", shell_complete=complete_sched_modules)
def remove(force, name):
    """Remove scheduler module NAME (its state is discarded)."""
    if name in BUILTIN:
        return _builtin("remove", name, (), force)
    with session() as broker:
        _check(name, broker)
        with _flux_words("remove", name, errno.ENOENT):
            admin.module_remove(broker, name, force=force)


# flux module unload: remove's hidden alias
module.add_command(click.Command("unload", callback=remove.callback, params=remove.params, hidden=True,
                                 help="Same as remove."), "unload")


@module.command("reload")
@click.option("-f", "--force", is_flag=True, help="Load even if the module was not loaded.")
@click.argument("name", shell_complete=complete_sched_modules)
@click.argument("args", nargs=-1, shell_complete=complete_module_args)
def reload(force, name, args):
    """Remove and load scheduler module NAME again (hello replays the allocations)."""
    if name in BUILTIN:
        return _builtin("reload", name, args, force)
    with session() as broker, progress_report("hello") as report:
        _check(name, broker)
        # as in Flux, a failed load still removes the old module
        failure = admin.module_reload(broker, name, args, progress=report)
    if failure is not None:
        with _flux_words("load", name, errno.EINVAL):
            raise failure


@module.command("list")
@click.option("-l", "--long", "long_", is_flag=True, help="Include the path of each module's source.")
def list_(long_):
    """List loaded modules (Flux's columns: Module, Idle, S, Sendq, Recvq, Service)."""
    with session() as broker:
        name = loader.loaded_name(broker)
        path = loader.loaded_path(broker)
        exec_loaded = broker.exec.loaded
        ingest_loaded = broker.jm.submission.ingest_module["loaded"]
        companions = [n for n in registry.companion_names() if loader.companion_loaded(broker, n)]
        joblist_loaded = job_list.module_loaded(broker)
    rows = _modules(name, exec_loaded, ingest_loaded, path, companions, joblist_loaded)
    if long_:
        click.echo(f"{'Module':<25.25} {'Idle':>4}  S Sendq Recvq {'Service':<8} Path")
    else:
        click.echo(f"{'Module':<25} {'Idle':>4}  S Sendq Recvq Service")
    for module_name, services, path in rows:
        # flux-lite's modules do their work within each command: never idle, never queued
        head = f"{module_name:<25.25} {'0':>4}  R {0:5d} {0:5d}"
        if long_:
            shown = ",".join(services)
            if len(shown) > 8:
                shown = shown[:7] + "+"
            click.echo(f"{head} {shown:<8} {path}")
        else:
            click.echo(f"{head} {','.join(services)}")


def _modules(sched_name, exec_loaded=True, ingest_loaded=True, sched_path=None, companions=(), joblist_loaded=True):
    """(name, services besides its own, source path) of each module flux-lite runs
    (sched_path: the file of a scheduler loaded from one)."""
    import importlib.util

    def path(module):
        spec = importlib.util.find_spec(module)
        return spec.origin if spec is not None and spec.origin else ""

    rows = [("job-manager", [], path("flux_lite.job_manager")),
            ("resource", [], path("flux_lite.resources"))]
    if exec_loaded:
        rows.append(("job-exec", [], path("flux_lite.job_manager.exec")))
    if ingest_loaded:
        rows.append(("job-ingest", [], path("flux_lite.job_manager.submit")))
    if joblist_loaded:
        rows.append(("job-list", [], path("flux_lite.job_list")))
    if sched_path:
        rows.append((sched_name, ["feasibility", "sched"], sched_path))
    elif sched_name:
        cls = registry.module_class(sched_name)
        rows.append((sched_name, list(getattr(cls, "services", ("feasibility", "sched"))), path(cls.__module__)))
    for companion in companions:
        cls = registry.companion_class(companion)
        rows.append((companion, list(cls.services), path(cls.__module__)))
    return sorted(rows)


# modules whose stats are the watches in progress (flux_lite.watchers)
WATCHING = {"job-info": job_info.module_stats, "kvs-watch": job_info.kvs_watch_stats,
            "job-list": job_list.module_stats}


@module.command("stats")
@click.option("-p", "--parse", "objname", metavar="OBJNAME", help="Print only the value at period-delimited OBJNAME.")
@click.argument("name", shell_complete=complete_loaded_modules)
def stats(objname, name):
    """Print a module's stats as JSON, as flux module stats does."""
    with session() as broker:
        if name == "job-manager":
            out = broker.rpc(protocol.JM_STATS, {})
        elif name in WATCHING:
            try:
                out = WATCHING[name](broker)
            except FluxLiteError as exc:
                if exc.errno != errno.ENOSYS:
                    raise
                raise FluxLiteError(f"{name}.stats-get: {exc}") from None
        elif name == loader.loaded_name(broker):
            out = broker.rpc(protocol.SCHED_STATS, {})
        elif registry.companion_class(name) is not None and loader.companion_loaded(broker, name):
            out = broker.rpc(f"{name}.stats-get", {})
        else:
            raise FluxLiteError(f"{name}: module is not loaded")
    if objname is not None:
        for part in objname.split("."):
            if not isinstance(out, dict) or part not in out:
                raise FluxLiteError(f"`{objname}' not found in response")
            out = out[part]
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        click.echo(jansson_dumps(out))
    elif isinstance(out, int):
        click.echo(str(out))
    else:
        click.echo(f"{out:f}")


def jansson_dumps(value, indent=1, level=0):
    """JSON as jansson's json_dumps(JSON_INDENT(1)) writes it: one member per
    line, reals with 17 significant digits, UTF-8 unescaped."""
    pad = " " * (indent * (level + 1))
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {jansson_dumps(v, indent, level + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [pad + jansson_dumps(v, indent, level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "]"
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        import re

        text = "%.17g" % value
        if "." not in text and "e" not in text:
            text += ".0"
        # jansson drops the exponent's plus sign and leading zeros
        return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", text)
    return json.dumps(value, ensure_ascii=False)


@module.command("debug")
@click.option("-c", "--clear", "clear_all", is_flag=True, help="Clear all debug flags.")
@click.option("-s", "--set", "set_", type=C_INT, default=None, metavar="MASK", help="Set debug flags to MASK.")
@click.option("-S", "--setbit", type=C_INT, default=None, metavar="MASK", help="Set the bits of MASK.")
@click.option("-C", "--clearbit", type=C_INT, default=None, metavar="MASK", help="Clear the bits of MASK.")
@click.argument("name", shell_complete=complete_debug_modules)
def debug(clear_all, set_, setbit, clearbit, name):
    """Set, clear or print a module's debug flags (as flux module debug).

    sched-simple: 1 deny every alloc, 4 refuse sched.expiration;
    job-exec: 1 make expiration updates fail (non-fatal exec exception).
    """
    with session() as broker:
        flags = admin.module_debug(broker, name, clear_all, set_, setbit, clearbit)
    click.echo(f"0x{flags:x}")


def _builtin(verb, name, args, force=False):
    """module load/reload/remove of flux-lite's resource, job-exec and
    job-ingest modules (see admin.resource_module_load, exec_module_load,
    ingest_module_load). As in Flux, a reload whose load fails leaves the
    module removed (the removal is kept, the load's error reported)."""
    failure = None
    with session() as broker:
        if name == "resource":
            with _flux_words(verb, name, errno.EINVAL):
                if verb in ("remove", "reload"):
                    admin.resource_module_remove(broker)
                if verb in ("load", "reload"):
                    admin.resource_module_load(broker, args)
            return
        load, remove = {"job-exec": (admin.exec_module_load, admin.exec_module_remove),
                        "job-ingest": (admin.ingest_module_load, admin.ingest_module_remove),
                        "job-list": (admin.joblist_module_load, admin.joblist_module_remove)}[name]
        if verb in ("remove", "reload"):
            with _flux_words("remove", name, errno.ENOENT):
                remove(broker, force=force or verb == "reload")
        if verb in ("load", "reload"):
            try:
                load(broker, args)
            except FluxLiteError as exc:
                failure = exc  # raised once the removal (and the log line) is committed
    if failure is not None:
        with _flux_words("load", name, errno.EINVAL):
            raise failure


@contextlib.contextmanager
def _flux_words(verb, name, errnum):
    """As `flux`, a module that fails to load or remove says only
    `load NAME: strerror`, as flux module does (Flux logs the reason);
    as flux-lite the reason is the message."""
    try:
        yield
    except FluxLiteError as exc:
        if not is_flux():
            raise
        raise FluxLiteError(f"{verb} {name}: {os.strerror(exc.errno or errnum)}") from None
