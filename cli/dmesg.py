"""flux-lite dmesg: print (or clear) the instance log."""

import click

from flux_lite.cli.common import open_instance


def format_line(t, name, level, msg):
    import datetime

    from flux_lite.formats.outputformat import escape_controls

    iso = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{iso} {name}.{level}[0]: {escape_controls(msg)}"


@click.command()
@click.option("-C", "--clear", is_flag=True, help="Clear the log after printing nothing.")
@click.option("-c", "--read-clear", is_flag=True, help="Print the log, then clear it.")
@click.option("-n", "--new", is_flag=True, help="(accepted for Flux compatibility; the log is never followed)")
def dmesg(clear, read_clear, new):
    """Print the instance log: protocol, scheduler and housekeeping lines, as flux dmesg does."""
    inst = open_instance()
    try:
        with inst.kvs.transaction():
            if not clear:
                rows = inst.kvs.conn.execute("SELECT t, name, level, msg FROM dmesg ORDER BY seq").fetchall()
                out = [format_line(*row) for row in rows]
                if out:
                    click.echo("\n".join(out))
            if clear or read_clear:
                inst.kvs.conn.execute("DELETE FROM dmesg")
    finally:
        inst.close()
