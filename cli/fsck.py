"""flux-lite fsck: check the state directory; --repair fixes what can be rebuilt."""

import click
from flux_lite.cli.common import state_dir

from flux_lite import fsck as fsckmod


@click.command()
@click.option("--repair", is_flag=True,
              help="Rebuild derived tables and damaged scheduler state; move damaged jobs to lost+found.")
@click.option("--rebuild", is_flag=True, help="Rebuild the job index and timers from the eventlogs.")
@click.option("-q", "--quiet", is_flag=True, help="Only the exit status.")
@click.pass_context
def fsck(ctx, repair, rebuild, quiet):
    """Check SQLite integrity, instance keys, every eventlog, jobspec and R, the derived
    tables and the scheduler's view. Exit 1 while problems remain."""
    report = fsckmod.run(state_dir(ctx), repair=repair, rebuild=rebuild)
    if not quiet:
        for text, _fixed in report.problems:
            click.echo(text)
    left = report.unrepaired
    if not quiet:
        fixed = len(report.problems) - len(left)
        if not report.problems:
            click.echo("fsck: ok" + (" (derived tables rebuilt)" if rebuild else ""))
        else:
            click.echo(f"fsck: {len(report.problems)} problem{'s' if len(report.problems) != 1 else ''}"
                       + (f", {fixed} repaired" if repair or rebuild else ""))
    if left:
        raise SystemExit(1)
