"""flux-lite dmesg: print (or clear) the instance log."""

import click

from flux_lite.cli.common import instance


def format_line(t, name, level, msg):
    import datetime

    iso = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{iso} {name}.{level}[0]: {msg}"


@click.command()
@click.option("-C", "--clear", is_flag=True, help="Clear the log after printing nothing.")
@click.option("-c", "--read-clear", is_flag=True, help="Print the log, then clear it.")
@click.option("-n", "--new", is_flag=True, help="(accepted for Flux compatibility; the log is never followed)")
def dmesg(clear, read_clear, new):
    """Print the instance log: protocol, scheduler and housekeeping lines, as flux dmesg does."""
    rows = instance().read_log(read=not clear, clear=clear or read_clear)
    if rows:
        click.echo("\n".join(format_line(*row) for row in rows))
