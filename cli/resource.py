"""flux-lite resource: list, info, status, drain and undrain."""

import errno
import os

import click
from flux_lite.cli import listing
from flux_lite.cli._complete import complete_targets
from flux_lite.cli.common import read_session, session
from flux_lite.cli.params import complete_queues
from flux_lite.cli.listing import format_option, listing_options
from flux_lite.cli.output import color_option, use_color
from flux_lite.cli.words import echo_error, info

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.formats.outputformat import without_fields
from flux_lite.kvs import KVSError
from flux_lite.listing import resources as res_listing
from flux_lite.listing.resources import COLOR_FIELDS


def _fields(listing, fmt):
    try:
        return listing.fields(fmt)
    except ValueError:
        return ()  # reported when the rows are rendered


@click.group()
def resource():
    """Resource commands (as flux resource)."""


@resource.command("list")
@click.option("-s", "--states", default="free,allocated,down", metavar="STATES",
              help="Comma-separated states: free, allocated, down, up, all.")
@click.option("--from-sched", is_flag=True,
              help="Ask the scheduler instead of the job manager (as FLUX_RESOURCE_LIST_RPC=sched.resource-status).")
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
@listing_options(json_help="Print JSON instead of a table.", formats="flux_lite.listing.resources:RESOURCE_LIST")
def resource_list(states, from_sched, queues, no_header, fmt, as_json):
    """Show free, allocated and down resources."""
    _list(states, from_sched, queues, no_header, fmt, as_json)


@resource.command("info")
@click.option("-s", "--states", default="all", metavar="STATE,...",
              help="Show output only for resources in given states (default all).")
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
def resource_info(states, queues):
    """Summarise resources on one line: N Nodes, N Cores, N GPUs."""
    _list(states, False, queues, True, "{nnodes} Nodes, {ncores} Cores, {ngpus} GPUs", False)


def _list(states, from_sched, queues, no_header, fmt, as_json):
    fmt = listing.format_string(res_listing.RESOURCE_LIST, fmt)
    source = "sched" if from_sched or os.environ.get("FLUX_RESOURCE_LIST_RPC") == "sched.resource-status" \
        else "job-manager"
    with read_session() as broker:
        rows = res_listing.list_rows(broker, [s for s in states.split(",") if s], source=source,
                                     fields=_fields(res_listing.RESOURCE_LIST, fmt),
                                     queues=[q for item in queues for q in item.split(",") if q])
    if as_json:
        listing.emit_json({"resources": rows})
        return
    listing.emit(res_listing.RESOURCE_LIST, fmt, rows, no_header=no_header)


def _status_options(f):
    for option in reversed([
        click.option("-i", "--include", metavar="TARGETS",
                     help="Include only these targets (an idset or hostlist) in the output."),
        click.option("-n", "--no-header", is_flag=True, help="Suppress the header line."),
        color_option("-L"),
    ]):
        f = option(f)
    return f


@resource.command("status")
@format_option("flux_lite.listing.resources:RESOURCE_STATUS",
               help="Output format, or a named format ('help' lists them).")
@click.option("-s", "--states", default=None, metavar="STATE,...",
              help="Only these states: all, online, avail, offline, exclude, drain, draining, drained, "
                   "torpid, allocated, housekeeping ('help' lists them).")
@_status_options
@click.option("--skip-empty", is_flag=True, help="Skip empty lines of output even with --states.")
def resource_status(fmt, states, include, no_header, color, skip_empty):
    """Show node states (avail, exclude, draining, drained, allocated, housekeeping)."""
    if states == "help":
        info(f"valid states: {','.join(res_listing.STATUS_STATES)}")
        return
    try:
        res_listing.status_states(states)
    except res_listing.InvalidState as exc:
        _invalid_state(exc)
    fmt = _colored(listing.format_string(res_listing.RESOURCE_STATUS, fmt), color)
    with read_session() as broker:
        rows = res_listing.status_lines(broker, fmt, states, skip_empty=skip_empty, include=include)
    listing.emit(res_listing.RESOURCE_STATUS, fmt, rows, no_header=no_header)


def _colored(fmt, color):
    """fmt as -L/--color[=WHEN] leaves it: without color, less its color fields."""
    return fmt if use_color(color) else without_fields(fmt, COLOR_FIELDS)


def _invalid_state(exc):
    echo_error(str(exc))
    info(f"valid states: {','.join(res_listing.STATUS_STATES)}")
    raise SystemExit(1)


@resource.command("drain")
@click.option("-f", "--force", count=True,
              help="Overwrite an existing drain reason; twice to also update the drain time.")
@click.option("-u", "--update", is_flag=True,
              help="Do not fail for targets already drained, and keep their reason.")
@format_option("flux_lite.listing.resources:RESOURCE_DRAIN",
               help="Output format or a named format (only used when listing drained nodes).")
@_status_options
@click.argument("targets", required=False, shell_complete=complete_targets)
@click.argument("reason", nargs=-1)
def drain(force, update, fmt, include, no_header, color, targets, reason):
    """Drain TARGETS (ranks or hosts) with an optional REASON; without TARGETS list drained nodes."""
    if targets is None:
        fmt = _colored(listing.format_string(res_listing.RESOURCE_DRAIN, fmt), color)
        with read_session() as broker:
            rows = res_listing.status_lines(broker, fmt, "drain", skip_empty=True, include=include)
        listing.emit(res_listing.RESOURCE_DRAIN, fmt, rows, no_header=no_header)
        return
    if force and update:
        echo_error("Only one of --force and --update may be specified")
        raise SystemExit(1)
    mode = "update" if update else {0: None, 1: "overwrite"}.get(force, "force-overwrite")

    try:
        with session() as broker:
            admin.drain(broker, targets, " ".join(reason) if reason else None, mode=mode)
    except FluxLiteError as exc:
        if exc.errno == errno.EPERM or isinstance(exc, KVSError):
            raise  # an owner-only refusal, or the state dir's answer: what every command gives
        # flux resource drain logs the request's OSError as it prints
        echo_error(f"[Errno {exc.errno or errno.EINVAL}] {exc}")
        if exc.errno == errno.EEXIST:
            info("Use --force to overwrite existing drain reason")
        raise SystemExit(1) from None


@resource.command("undrain")
@click.argument("targets")
def undrain(targets):
    """Return drained TARGETS to service."""
    with session() as broker:
        admin.undrain(broker, targets)
