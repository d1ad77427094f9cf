"""flux-lite sched: reload the scheduler (hello replay), check it, show its plan."""

import click
from flux_lite.cli._complete import PolicyChoice
from flux_lite.cli.common import session
from flux_lite.cli.output import progress_report

from flux_lite import admin, protocol
from flux_lite import check as checkmod
from flux_lite.sched import loader


@click.group()
def sched():
    """Scheduler commands: reload with a policy, check against the eventlogs."""


@sched.command()
@click.option("--policy", type=PolicyChoice(), help="Scheduling policy (default: keep the current one).")
@click.option("--queue-depth", metavar="N|unlimited", help="Outstanding alloc requests (limited mode) or unlimited.")
@click.option("--reservation-depth", type=click.IntRange(min=1), help="Reservations per pass (hybrid).")
@click.option("--no-partial-ok", is_flag=True, help="Hello without partial-ok (partly released housekeeping "
                                                    "allocations are terminated).")
def reload(policy, queue_depth, reservation_depth, no_partial_ok):
    """Reload the scheduler: discard its state, hello, ready, then alloc requests."""
    with session() as broker, progress_report("hello") as report:
        admin.sched_reload(broker, policy=policy, queue_depth=queue_depth, reservation_depth=reservation_depth,
                           partial_ok=not no_partial_ok, progress=report)


@sched.command()
@click.option("-q", "--quiet", is_flag=True, help="Only the exit status.")
def check(quiet):
    """Compare the scheduler's allocations with a fresh replay of the eventlogs."""
    with session() as broker:
        problems = checkmod.check(broker)
    if problems:
        if not quiet:
            click.echo("\n".join(problems))
        raise SystemExit(1)
    if not quiet:
        click.echo("sched check: ok")


@sched.command()
def status():
    """Show the loaded scheduler, its policy and its queue and allocations."""
    import json

    with session() as broker:
        name = loader.loaded_name(broker)
        if name is None:
            click.echo("no scheduler loaded")
            return
        stats = broker.rpc(protocol.SCHED_STATS, {})
    click.echo(json.dumps(dict(module=name, **stats)))
