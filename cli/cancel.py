"""flux-lite cancel: cancel jobs (raise a fatal `cancel` exception)."""

import click
from flux_lite.cli.common import session
from flux_lite.cli.params import JOBID
from flux_lite.cli.words import echo_error, prog

from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.job_manager import bulk


@click.command()
@click.option("--all", "all_", is_flag=True, help="Cancel all your active jobs (or -u/-S selections).")
@click.option("-u", "--user", metavar="USER",
              help="Jobs of USER or 'all' (implies --all; other users: instance owner only).")
@click.option("-S", "--states", metavar="STATES", multiple=True,
              help="States to cancel (implies --all; default pending,running).")
@click.option("-n", "--dry-run", is_flag=True, help="Only report how many jobs would be canceled.")
@click.option("-m", "--message", metavar="NOTE", help="Exception note.")
@click.option("-q", "--quiet", is_flag=True, help="Say nothing when no job matches.")
@click.argument("jobids", nargs=-1, type=JOBID, metavar="JOBID...")
def cancel(all_, user, states, dry_run, message, quiet, jobids):
    """Cancel JOBIDS, or with --all every matching job."""
    if user or states:
        all_ = True
    if all_ and jobids:
        raise FluxLiteError("Do not specify a list of jobids with --all,--user,--states options")
    if not all_ and not jobids:
        raise FluxLiteError("No target jobs were provided")
    if not all_ and dry_run:
        count = len(jobids)
        click.echo(f"flux-lite cancel: Would cancel {count} job{'s' if count != 1 else ''}", err=True)
        return
    if all_:
        with session() as broker:
            count, errors = bulk.raise_all(broker, user=user, states=states, dry_run=dry_run,
                                           note=message)
        jobs = f"{count} job{'s' if count != 1 else ''}"
        if count == 0:
            if not quiet:  # -q only hides this one, as flux-cancel's does
                click.echo(f"{prog()}: Matched 0 jobs", err=True)
        elif dry_run:
            click.echo(f"{prog()}: Would cancel {jobs}", err=True)
        else:
            click.echo(f"{prog()}: Canceled {jobs} ({errors} error{'s' if errors != 1 else ''})",
                       err=True)
        return
    failed = False
    with session() as broker:
        for jobid in jobids:
            try:
                broker.jm.request_raise(jobid, 0, "cancel", message or "")
                broker.run()
            except FluxLiteError as exc:
                echo_error(f"{f58(jobid)}: {exc}")
                failed = True
    if failed:
        raise SystemExit(1)
