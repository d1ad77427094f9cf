"""flux-lite housekeeping: list and kill housekeeping tasks."""

import click
from flux_lite.cli import listing
from flux_lite.cli._complete import complete_housekeeping_jobids, complete_targets
from flux_lite.cli.common import read_session, session
from flux_lite.cli.listing import listing_options
from flux_lite.cli.output import emit

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import decode
from flux_lite.job_manager import housekeeping as hk
from flux_lite.listing import housekeeping as hk_listing


@click.group()
def housekeeping():
    """Housekeeping (the epilog that holds a job's nodes after it ends)."""


@housekeeping.command("list")
@click.option("-i", "--include", metavar="HOSTS|RANKS", shell_complete=complete_targets,
              help="Limit output to housekeeping jobs on HOSTS|RANKS.")
@listing_options(json_help="Print the job manager's housekeeping stats as JSON.",
                 formats="flux_lite.listing.housekeeping:HOUSEKEEPING")
def hk_list(include, no_header, fmt, as_json):
    """List jobs whose nodes are still in housekeeping."""
    fmt = listing.format_string(hk_listing.HOUSEKEEPING, fmt)
    with read_session() as broker:
        if as_json:
            listing.emit_json(hk.stats(broker))
            return
        ranks = hk_listing.include_ranks(broker, include) if include else None
        # rows that print alike are merged, so the format must be known first
        lines = listing.render(hk_listing.HOUSEKEEPING, fmt, hk_listing.rows(broker, ranks), no_header=no_header,
                               merge=lambda rows, fields: hk_listing.merge(broker, rows, fields))
    emit(lines)


@housekeeping.command("kill")
@click.option("-s", "--signal", "signum", type=int, default=15, show_default=True,
              help="Signal number to send to housekeeping tasks.")
@click.option("-t", "--targets", metavar="RANKS|HOSTS", shell_complete=complete_targets,
              help="Only target specific ranks or hostnames.")
@click.option("-j", "--jobid", metavar="JOBID", shell_complete=complete_housekeeping_jobids,
              help='Target housekeeping tasks of this job, or "all".')
@click.option("--all", "all_", is_flag=True, help="Kill all active housekeeping tasks.")
def hk_kill(signum, targets, jobid, all_):
    """Signal housekeeping tasks; killed ranks finish (failed) and are released."""
    if not targets and not jobid and not all_:
        raise FluxLiteError("specify at least one of --targets, --jobid, or --all")
    if all_ and jobid:
        raise FluxLiteError("do not specify --jobid with --all")
    job = None
    if jobid and jobid != "all":
        try:
            job = decode(jobid)
        except ValueError:
            raise FluxLiteError(f"invalid jobid: {jobid}") from None
    with session() as broker:
        admin.housekeeping_kill(broker, signum, jobid=job, targets=targets)
