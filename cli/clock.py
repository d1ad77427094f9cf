"""flux-lite clock: show the instance time, or advance a virtual clock."""

import click
from flux_lite.cli.common import instance, session
from flux_lite.cli.params import FSD
from flux_lite.cli.output import progress


def _show(t):
    import datetime

    iso = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{t:.6f} {iso}"


@click.group(invoke_without_command=True)
@click.pass_context
def clock(ctx):
    """Print the current instance time (seconds since the epoch, then ISO 8601)."""
    if ctx.invoked_subcommand is None:
        with session(ctx) as broker:
            now = broker.now
            mode = broker.instance.meta["clock"]
        click.echo(f"{_show(now)} {mode}")


@clock.command()
@click.argument("duration", type=FSD)
@click.option("-q", "--quiet", is_flag=True, help="Do not print the new time.")
def advance(duration, quiet):
    """Advance a virtual clock by DURATION (FSD), running everything that falls due."""
    import math

    if math.isinf(duration):
        raise click.BadParameter("cannot advance by an infinite duration", param_hint="DURATION")

    # the bar tracks simulated seconds; shown only on a terminal
    with progress(max(int(duration), 1) if duration >= 3600 else 0, "advancing clock") as step:
        done = [0]

        def report(elapsed, total):
            step(int(elapsed) - done[0])
            done[0] = int(elapsed)

        now = instance().advance_clock(duration, progress=report)
    if not quiet:
        click.echo(_show(now))


@clock.command()
def next():  # noqa: A001 - the subcommand is called "next"
    """Print the time of the next timed event, or nothing when none is due."""
    with session() as broker:
        t = broker.next_event_time()
    if t is not None:
        click.echo(_show(t))
