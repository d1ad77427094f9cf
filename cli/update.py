"""flux-lite update: change a pending or running job's jobspec (duration, ...)."""

import json

import click
from flux_lite.cli._complete import complete_active_jobids, complete_update_pairs
from flux_lite.cli.common import session
from flux_lite.cli.params import JOBID
from flux_lite.cli.words import info

from flux_lite.job_manager import update as upd


@click.command()
@click.option("-n", "--dry-run", "--dry", "dry_run", is_flag=True,
              help="Print the updates as JSON and change nothing.")
@click.option("-v", "--verbose", is_flag=True, help="Report each applied update on stderr.")
@click.option("--wait", is_flag=True, help="Wait until the jobspec-update event is in the eventlog.")
@click.argument("jobid", type=JOBID, shell_complete=complete_active_jobids)
@click.argument("updates", nargs=-1, required=True, metavar="KEY=VALUE...",
                shell_complete=complete_update_pairs)
def update(dry_run, verbose, wait, jobid, updates):
    """Update JOBID's jobspec: duration=FSD|+FSD|-FSD, name=..., queue=..., other keys.

    Keys not starting with attributes., resources. or tasks. get
    attributes.system. in front. All updates apply together or not at all.
    """
    with session() as broker:
        values = upd.parse_updates(broker, jobid, updates)
        if dry_run:
            click.echo(json.dumps(values))
            # stdout stays the JSON Flux prints; the plan preview is for people
            for line in upd.dry_run_report(broker, jobid, values):
                click.echo(line, err=True)
            return
        upd.update_job(broker, jobid, values)
        if wait:
            upd.check_posted(broker, jobid, values)
    if verbose:
        for key, value in values.items():
            info(f"updated {key} to {value}")
