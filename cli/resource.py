"""flux-lite resource: list, status, drain and undrain."""

import os

import click

from flux_lite.cli.common import session
from flux_lite.errors import FluxLiteError


@click.group()
def resource():
    """Resource commands (as flux resource)."""


@resource.command("list")
@click.option("-s", "--states", default="free,allocated,down", metavar="STATES",
              help="Comma-separated states: free, allocated, down, up, all.")
@click.option("-n", "--no-header", is_flag=True, help="Suppress the header line.")
@click.option("-o", "--format", "fmt", default="default", metavar="FORMAT",
              help="Output format or named format ('help' lists them).")
@click.option("--from-sched", is_flag=True,
              help="Ask the scheduler instead of the job manager (as FLUX_RESOURCE_LIST_RPC=sched.resource-status).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def resource_list(states, no_header, fmt, from_sched, as_json):
    """Show free, allocated and down resources."""
    import json

    from flux_lite import resources
    from flux_lite.formats import outputformat

    if fmt == "help":
        click.echo(outputformat.list_formats_help(resources.RESOURCE_LIST_FORMATS, "flux-resource list"))
        return
    fmt = resources.RESOURCE_LIST_FORMATS[fmt][1] if fmt in resources.RESOURCE_LIST_FORMATS else fmt
    source = "sched" if from_sched or os.environ.get("FLUX_RESOURCE_LIST_RPC") == "sched.resource-status" \
        else "job-manager"
    with session() as broker:
        rows = resources.resource_list(broker, [s for s in states.split(",") if s], source=source)
    if as_json:
        click.echo(json.dumps({"resources": rows}))
        return
    try:
        lines = outputformat.render(fmt, resources.RESOURCE_LIST_HEADINGS, rows, no_header=no_header)
    except ValueError as exc:
        raise FluxLiteError(f"Error in user format: {exc}") from None
    if lines:
        click.echo("\n".join(lines))


@resource.command("status")
@click.option("-s", "--states", default=None, metavar="STATES", help="Only these states (avail, drained, ...).")
@click.option("-n", "--no-header", is_flag=True, help="Suppress the header line.")
@click.option("-o", "--format", "fmt", default="{state:>12}{up:>2} {nnodes:>6} {nodelist}", metavar="FORMAT",
              help="Output format.")
def resource_status(states, no_header, fmt):
    """Show node states (avail, drained, draining, housekeeping)."""
    from flux_lite import resources
    from flux_lite.formats import outputformat

    headings = {"state": "STATE", "up": "UP", "nnodes": "NNODES", "nodelist": "NODELIST", "ranks": "RANKS",
                "reason": "REASON"}
    with session() as broker:
        rows = resources.status_rows(broker, states.split(",") if states else None)
    lines = outputformat.render(fmt, headings, rows, no_header=no_header)
    if lines:
        click.echo("\n".join(lines))


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
