"""flux-lite resource: list, status, drain and undrain."""

import os

import click

from flux_lite.cli.common import read_session, session
from flux_lite.cli.listing import listing_options


def _complete_queue(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_queues

    return complete_queues(ctx, incomplete)


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
@click.option("-q", "--queue", metavar="QUEUE", shell_complete=_complete_queue,
              help="Only the resources of QUEUE.")
@listing_options(json_help="Print JSON instead of a table.")
def resource_list(states, from_sched, queue, no_header, fmt, as_json):
    """Show free, allocated and down resources."""
    from flux_lite.cli import listing
    from flux_lite.listing import resources as res_listing

    fmt = listing.format_string(res_listing.RESOURCE_LIST, fmt)
    source = "sched" if from_sched or os.environ.get("FLUX_RESOURCE_LIST_RPC") == "sched.resource-status" \
        else "job-manager"
    with read_session() as broker:
        rows = res_listing.list_rows(broker, [s for s in states.split(",") if s], source=source,
                                     fields=_fields(res_listing.RESOURCE_LIST, fmt), queue=queue)
    if as_json:
        listing.emit_json({"resources": rows})
        return
    listing.emit(res_listing.RESOURCE_LIST, fmt, rows, no_header=no_header)


@resource.command("status")
@click.option("-s", "--states", default=None, metavar="STATES", help="Only these states (avail, drained, ...).")
@listing_options()
def resource_status(states, no_header, fmt):
    """Show node states (avail, drained, draining, housekeeping)."""
    from flux_lite.cli import listing
    from flux_lite.listing import resources as res_listing

    fmt = listing.format_string(res_listing.RESOURCE_STATUS, fmt)
    with read_session() as broker:
        rows = res_listing.status_rows(broker, states.split(",") if states else None)
    listing.emit(res_listing.RESOURCE_STATUS, fmt, rows, no_header=no_header)


@resource.command("drain")
@click.option("-f", "--force", is_flag=True, help="Overwrite the reason of already drained targets.")
@click.argument("targets", required=False)
@click.argument("reason", nargs=-1)
def drain(force, targets, reason):
    """Drain TARGETS (ranks or hosts) with an optional REASON; without TARGETS list drained nodes."""
    from flux_lite import admin

    with session() as broker:
        if targets is None:
            rows = admin.drained(broker)
        else:
            admin.drain(broker, targets, " ".join(reason), force=force)
            return
    _list_drained(rows)


def _list_drained(rows):
    import datetime

    lines = ["TIMESTAMP            STATE    RANK     REASON                         NODELIST"]
    for timestamp, state, rank, reason, nodelist in rows:
        ts = datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%dT%H:%M:%S")
        lines.append(f"{ts:<20} {state:<8} {rank:<8} {reason:<30} {nodelist}")
    click.echo("\n".join(lines))


@resource.command("undrain")
@click.argument("targets")
def undrain(targets):
    """Return drained TARGETS to service."""
    from flux_lite import admin

    with session() as broker:
        admin.undrain(broker, targets)
