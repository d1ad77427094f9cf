"""flux-lite jobs: list jobs in Flux's formats."""

import json

import click

from flux_lite.cli.common import JOBID, session, username
from flux_lite.errors import FluxLiteError


def _uid_of(user):
    import pwd

    if user == "all":
        return None
    try:
        return int(user)
    except ValueError:
        pass
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        raise FluxLiteError(f"Invalid user {user} specified") from None


@click.command()
@click.option("-a", "show_all_states", is_flag=True, help="List jobs in all states, including inactive.")
@click.option("-A", "all_users", is_flag=True, help="List jobs of all users.")
@click.option("-n", "--no-header", is_flag=True, help="Suppress the header line.")
@click.option("-u", "--user", metavar="USER", help="List jobs of USER (name, uid, or all).")
@click.option("-f", "--filter", "filter_", metavar="STATES", help="States/results to list (e.g. pending,running).")
@click.option("-c", "--count", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Limit output to N jobs (0 = unlimited).")
@click.option("-o", "--format", "fmt", metavar="FORMAT", default="default",
              help="Output format, or a named format (use 'help' to list them).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of a table.")
@click.argument("jobids", nargs=-1, type=JOBID)
def jobs(show_all_states, all_users, no_header, user, filter_, count, fmt, as_json, jobids):
    """List pending and running jobs of the current user (-a adds inactive jobs)."""
    from flux_lite import job_list
    from flux_lite.formats import outputformat

    if fmt == "help":
        click.echo(outputformat.list_formats_help(job_list.FORMATS, "flux-jobs"))
        return
    fmt = job_list.FORMATS[fmt][1] if fmt in job_list.FORMATS else fmt
    states, results = job_list.PENDING | job_list.RUNNING, 0
    if show_all_states:
        states |= job_list.INACTIVE
    if filter_:
        states, results = job_list.parse_filter(filter_)
    with session() as broker:
        ident = broker.instance.identity
        userid = ident.userid
        if all_users:
            userid = None
        elif user:
            userid = _uid_of(user)
        records = job_list.query(broker, userid=userid, states=states, results=results,
                                 ids=list(jobids) or None, max_entries=count)
        now = broker.now
    items = [job_list.make_info(rec, now, username) for rec in records]
    if getattr(records, "truncated", False) is True and not no_header and not as_json:
        click.echo(f"warning: output truncated at {count} jobs.", err=True)
        click.echo("Use --count to increase returned results or use filters to alter results.", err=True)
    if as_json:
        docs = [_jsonable(i) for i in items]
        # one job asked for by id: that job's object, as flux-jobs prints it
        click.echo(json.dumps(docs[0] if len(jobids) == 1 and docs else {"jobs": docs}))
        return
    try:
        lines = outputformat.render(fmt, job_list.HEADINGS, items, no_header=no_header,
                                    heading_fallback=job_list.heading_fallback)
    except ValueError as exc:
        raise FluxLiteError(f"Error in user format: {exc}") from None
    from flux_lite.cli.output import emit

    emit(lines, colorize=_colorizer(lines, no_header) if fmt == job_list.DEFAULT_FORMAT else None)


def _colorizer(lines, no_header):
    from flux_lite.cli.output import STATE_STYLES

    header = None if no_header or not lines else lines[0]
    col = header.find(" ST ") + 1 if header and " ST " in header else -1

    def colorize(line):
        if line is header:
            return [(0, len(line), "bold")]
        if col <= 0:
            return []
        token = line[col:col + 2].strip()
        style = STATE_STYLES.get(token)
        return [(col, col + 2, style)] if style else []

    return colorize


def _jsonable(info):
    out = {}
    for key, value in info.items():
        if key == "id":
            out["id"] = int(value)
        elif isinstance(value, dict):
            out[key] = _jsonable(value)
        else:
            out[key] = value
    return out
