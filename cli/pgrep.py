"""flux-lite pgrep / pkill: find (or cancel) jobs by name pattern or id range."""

import sys

import click
from flux_lite.cli import listing, words
from flux_lite.cli.common import instance, read_session, session
from flux_lite.cli.params import complete_queues
from flux_lite.cli.listing import listing_options

from flux_lite import job_list, users
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.job_manager import waiters
from flux_lite.listing import jobs as jobs_listing
from flux_lite.listing import pgrep as pgrep_listing
from flux_lite.listing.pgrep import PGREP


def _selection_options(f):
    options = [
        click.option("-A", "all_users", is_flag=True, help="Target all users."),
        click.option("-u", "--user", metavar="USER",
                     help="Limit to jobs of USER (name or uid; 'all' for all users)."),
        click.option("-f", "--filter", "filter_", metavar="STATE|RESULT", multiple=True,
                     help="Jobs with these states or results (default pending,running)."),
        click.option("-q", "--queue", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
                     help="Limit to jobs in these queues."),
        click.option("-c", "--count", type=int, default=99999, metavar="N",
                     help="Limit output to the first N matches."),
        click.option("--max-entries", type=int, default=1000, metavar="N",
                     help="Search only the first N jobs (default 1000)."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _select(broker, cmd, expressions, all_states, all_users, user, filter_, queue, count, max_entries):
    states, results = job_list.PENDING | job_list.RUNNING, 0
    if filter_:
        states, results = job_list.parse_filter(",".join(filter_))
    if all_states:
        states |= job_list.PENDING | job_list.RUNNING | job_list.INACTIVE
    userid = broker.instance.identity.userid
    if all_users:
        userid = None
    elif user is not None:
        userid = users.userid(user)
    queues = {q for item in queue for q in item.split(",") if q} or None
    try:
        return pgrep_listing.select(broker, expressions, userid=userid, states=states, results=results,
                            queues=queues, max_entries=max_entries, count=count)
    except pgrep_listing.ExpressionError as exc:
        words.echo_error(str(exc), cmd)
        sys.exit(2)


@click.command()
@click.option("-a", "all_states", is_flag=True, help="Target jobs in all states.")
@_selection_options
@listing_options(format_help="Output format, or a named format (default, full, long, deps; 'help' lists them).")
@click.argument("expression", nargs=-1, required=True)
def pgrep(all_states, all_users, user, filter_, queue, count, max_entries, no_header, fmt, expression):
    """List jobs whose name matches a pattern, or whose id is in a range A..B.

    Exits 1 when no job matches, 2 on a bad expression.
    """
    fmt = listing.format_string(PGREP, fmt)
    listing.render(PGREP, fmt, [])  # a bad format fails before any job is read
    with read_session() as broker:
        records = _select(broker, "pgrep", expression, all_states, all_users, user, filter_, queue,
                          count, max_entries)
        now = broker.now
    if not records:
        sys.exit(1)
    if fmt == PGREP.default:
        no_header = True  # a bare id list, as flux-pgrep prints by default
    rows = [jobs_listing.make_info(rec, now, users.username) for rec in records]
    listing.emit(PGREP, fmt, rows, no_header=no_header)


@click.command()
@_selection_options
@click.option("--wait", is_flag=True, help="Wait for the jobs to finish after canceling them.")
@click.argument("expression", nargs=-1, required=True)
def pkill(all_users, user, filter_, queue, count, max_entries, wait, expression):
    """Cancel jobs whose name matches a pattern, or whose id is in a range A..B.

    Prints how many were canceled; exits 1 when no job matches or a cancel
    failed, 2 on a bad expression.
    """
    errors = []
    canceled = []
    with session() as broker:
        records = _select(broker, "pkill", expression, False, all_users, user, filter_, queue,
                          count, max_entries)
        if not records:
            sys.exit(1)
        for rec in records:
            try:
                broker.jm.request_raise(rec["id"], 0, "cancel", "")
                broker.run()
                canceled.append(rec["id"])
            except FluxLiteError as exc:
                errors.append(f"{f58(rec['id'])}: cancel: {exc}")
    if wait and canceled:
        inst = instance()
        for jobid in canceled:
            try:
                inst.wait(lambda b, j=jobid: waiters.inactive(b, j))
            except FluxLiteError:
                pass  # canceled jobs always end; nothing else to wait for
    for message in errors:
        words.echo_error(message, "pkill")
    n = len(canceled)
    words.info(f"Canceled {n} job{'s' if n != 1 else ''}", "pkill")
    sys.exit(1 if errors else 0)
