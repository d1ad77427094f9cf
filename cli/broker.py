"""flux-lite getattr / lsattr / uptime / overlay / logger / jobtap:
what the instance's brokers say of themselves, in Flux's words."""

import json
import sys
import time
from errno import ENOENT

import click
from flux_lite.cli.common import read_session, session
from flux_lite.cli.output import color_option, use_color

from flux_lite import brokerinfo, users
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset


@click.command("getattr")
@click.argument("name")
def getattr_(name):
    """Print the value of broker attribute NAME."""
    with read_session() as broker:
        attrs = brokerinfo.attributes(broker)
    if name not in attrs:
        raise FluxLiteError(f"{name}: No such file or directory")
    click.echo(attrs[name])


@click.command()
@click.option("-v", "--values", is_flag=True, help="List values with attributes")
def lsattr(values):
    """List broker attributes (sorted); -v with their values."""
    with read_session() as broker:
        attrs = brokerinfo.attributes(broker)
    for name, value in attrs.items():
        click.echo(f"{name:<40}{value}" if values else name)


@click.command()
def uptime():
    """Show how long this Flux instance has been running."""
    with read_session() as broker:
        info = brokerinfo.uptime(broker)
    now = time.strftime("%H:%M:%S", time.localtime(info["now"]))
    extra = f",  {info['drained']} drained" if info["drained"] else ""
    click.echo(f" {now} run {fsd.format_c(info['runtime'], 2)},  owner {users.username(info['owner'])},  "
               f"depth 0,  size {info['size']}{extra}")
    flags = [w for w, on in (("submit disabled", info["submit_disabled"]),
                             ("scheduler stopped", info["sched_stopped"])) if on]
    if flags:
        click.echo("  " + ",  ".join(flags))


@click.group()
def overlay():
    """Show the tree-based overlay network (every broker is up)."""


@overlay.command("status")
@click.option("-t", "--timeout", metavar="FSD", help="Set RPC timeout (0=disable)")
@click.option("-r", "--rank", metavar="NODEID", default=None, help="Check health of subtree rooted at NODEID")
@click.option("-v", "--verbose", count=True, help="Increase reporting detail")
@click.option("--summary", is_flag=True, help="Show only the root subtree status")
@click.option("--down", is_flag=True, help="Show only the partial/degraded subtrees.")
@click.option("--no-pretty", is_flag=True, help="Do not indent entries and use line drawing characters")
@click.option("--no-ghost", is_flag=True, help="Do not fill in presumed state of nodes that are inaccessible")
@color_option("-L")
@click.option("-H", "--highlight", metavar="TARGET", help="Highlight one or more targets and their ancestors.")
@click.option("-w", "--wait", metavar="STATE", help="Wait until subtree enters STATE before reporting")
def overlay_status(timeout, rank, verbose, summary, down, no_pretty, no_ghost, color, highlight, wait):
    """Show each broker's overlay subtree status: full (all are up)."""
    color = use_color(color, c_style=True)
    if wait is not None and wait not in ("full", "partial", "degraded", "offline", "lost"):
        raise FluxLiteError(f"invalid --wait state {wait}")
    with read_session() as broker:
        hosts = brokerinfo.hostnames(broker)
        size = len(hosts)
        marked = _highlight(broker, highlight, size) if highlight else set()
    root = 0
    if rank is not None:
        if not rank.isdigit() or int(rank) >= size:
            raise FluxLiteError(f"{rank}: No route to host" if rank.isdigit() else f"invalid rank {rank}")
        root = int(rank)
    if wait is not None and wait != "full":
        raise FluxLiteError(f"overlay status is full: it cannot become {wait} (every broker is up)")
    if summary:
        click.echo("full")
        return
    if down:
        return  # nothing is partial or degraded
    children = brokerinfo.tbon_children(size)
    subtree = {}

    def ranks_under(r):
        if r not in subtree:
            subtree[r] = {r}.union(*(ranks_under(c) for c in children[r]))
        return subtree[r]

    def name(r):
        text = f"{r} {hosts[r]}"
        if marked & ranks_under(r):
            return f"\x1b[01;34m{text}\x1b[0m" if color else f"<<{text}>>"
        return text

    def walk(r, prefix, connector):
        click.echo(f"{prefix}{connector if not no_pretty else ''}{name(r)}: full")
        kids = children[r]
        for i, child in enumerate(kids):
            last = i == len(kids) - 1
            below = prefix + ("" if connector == "" else ("   " if connector == "└─ " else "│  "))
            walk(child, below if not no_pretty else "", "└─ " if last else "├─ ")

    walk(root, "", "")


def _highlight(broker, target, size):
    """-H TARGET: ranks (an idset) or host names (a hostlist)."""
    try:
        ids = IDset.parse(target)
    except ValueError:
        return _host_ranks(broker, target)
    # (checked on the range, not the ids: 0-999999999 is a valid idset)
    if len(ids) and ids.last() >= size:
        raise FluxLiteError(f"{target}: invalid target")
    return set(ids)


def _host_ranks(broker, target):
    hosts = brokerinfo.hostnames(broker)
    try:
        names = list(Hostlist(target))
    except ValueError:
        raise FluxLiteError(f"{target}: invalid target") from None
    missing = [h for h in names if h not in hosts]
    if missing:
        raise FluxLiteError(f"{missing[0]}: invalid target")
    return {hosts.index(h) for h in names}


SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")


@click.command(context_settings={"allow_interspersed_args": False})
@click.option("-s", "--severity", default="notice", metavar="LEVEL", help="Severity (default notice).")
@click.option("-n", "--appname", default="logger", metavar="NAME", help="Application name (default logger).")
@click.argument("message", nargs=-1)
def logger(severity, appname, message):
    """Log MESSAGE (or standard input) to the instance log (flux dmesg)."""
    if severity not in SEVERITIES:
        raise FluxLiteError("invalid severity: Use emerg|alert|crit|err|warning|notice|info|debug")
    text = " ".join(message) if message else sys.stdin.read()
    with session() as broker:
        broker.log(appname, severity, text)


@click.group()
def jobtap():
    """Manage the job manager's jobtap plugins."""


@jobtap.command("list")
@click.option("-a", "--all", "all_", is_flag=True, help="Do not ignore job-manager builtin plugins")
def jobtap_list(all_):
    """List loaded jobtap plugins (-a: the builtins too)."""
    with read_session() as broker:
        names = broker.jobtap.names()
    for name in names:
        if all_ or not name.startswith("."):
            click.echo(name)


def _treedict(pairs):
    """KEY=VAL arguments as Flux's TreedictAction reads them: dotted keys
    nest, values are JSON when they parse as JSON, else strings."""
    tree = {}
    for arg in pairs:
        key, eq, text = arg.partition("=")
        if not eq:
            raise FluxLiteError(f"Missing required value for key {arg}")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        node = tree
        path = key.split(".")
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    return tree


def _not_found(plugin):
    """Flux's jobtap command says only this of an ENOENT answer."""
    return FluxLiteError(f"{plugin} not found")


@jobtap.command("load", context_settings={"allow_interspersed_args": False})
@click.option("-r", "--remove", metavar="NAME",
              help='Remove plugin NAME before loading new plugin. NAME may optionally be a shell glob pattern '
                   'which removes all matching plugins. ("all" is a synonym for "*")')
@click.argument("plugin")
@click.argument("conf", nargs=-1)
def jobtap_load(remove, plugin, conf):
    """Load jobtap plugin PLUGIN (a builtin, alloc-bypass.so, alloc-check.so
    or perilog.so) with KEY=VAL configuration."""
    tree = _treedict(conf)
    try:
        with session() as broker:
            broker.jobtap.load(plugin, tree or None, remove)
    except FluxLiteError as exc:
        if exc.errno == ENOENT:
            raise _not_found(plugin) from None
        raise


@jobtap.command("remove")
@click.argument("plugin", metavar="plugin")
def jobtap_remove(plugin):
    """Remove jobtap plugin PLUGIN, those a glob matches, or all (every
    plugin but the builtins)."""
    try:
        with session() as broker:
            broker.jobtap.remove(plugin)
    except FluxLiteError as exc:
        if exc.errno == ENOENT:
            raise _not_found(plugin) from None
        raise


@jobtap.command("query")
@click.argument("plugin")
def jobtap_query(plugin):
    """Print what jobtap plugin PLUGIN says of itself (JSON)."""
    with read_session() as broker:
        text = broker.jobtap.query(plugin)
    click.echo(text)
