"""flux-lite jobs: list jobs in Flux's formats."""

import json
import sys
import time

import click
from flux_lite.cli import listing
from flux_lite.cli._complete import complete_jobs_filter
from flux_lite.cli.common import read_session
from flux_lite.cli.params import JOBID, JOBID_TEXT, complete_queues
from flux_lite.cli.listing import listing_options
from flux_lite.cli import output
from flux_lite.cli.output import RESULT_COLORS, color_option, emit, staged_progress, use_color
from flux_lite.cli.words import warning

from flux_lite import job_list, users
from flux_lite.config import with_virtual
from flux_lite.errors import FluxLiteError, NoInstanceError
from flux_lite.job_manager import stats as statsmod
from flux_lite.listing import jobs as jobs_listing


@click.command()
@click.option("-a", "show_all_states", is_flag=True, help="List jobs in all states, including inactive.")
@click.option("-A", "all_users", is_flag=True, help="List jobs of all users.")
@click.option("-u", "--user", metavar="USER", help="List jobs of USER (name, uid, or all).")
@click.option("-f", "--filter", "filter_", metavar="STATES", shell_complete=complete_jobs_filter,
              help="States/results to list (e.g. pending,running).")
@click.option("-c", "--count", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Limit output to N jobs (0 = unlimited).")
@listing_options(json_help="Print one JSON document instead of a table.",
                 formats="flux_lite.listing.jobs:JOBS")
@click.option("--since", metavar="WHEN",
              help="Include jobs that became inactive since WHEN (implies -a without -f).")
@click.option("--name", "job_name", metavar="JOB-NAME", help="Limit output to jobs named JOB-NAME.")
@click.option("-q", "--queue", "queues", multiple=True, metavar="QUEUE,...", shell_complete=complete_queues,
              help="Limit output to jobs in QUEUE(s) (a queue's virtual queues included).")
@click.option("-i", "--include", metavar="HOSTS|RANKS",
              help="Limit output to jobs that ran on these ranks or hosts (all users' unless -u is given).")
@click.option("--stats", is_flag=True, help="Print job statistics before the header.")
@click.option("--stats-only", is_flag=True,
              help="Print job statistics only; exit 1 if no job is active.")
@color_option()
@click.option("--sort", metavar="KEY,...", default="",
              help="Sort by these fields (a leading - reverses one); overrides a format's sort:.")
@click.option("-w", "--width", type=int, default=-1, is_flag=False, flag_value=0, metavar="N",
              help="Truncate lines at N columns (N omitted or 0: the terminal's width, on a terminal).")
@click.option("--from-stdin", is_flag=True, hidden=True,
              help="List the job-list objects read from stdin, one per line (filters ignored).")
@click.argument("jobids", nargs=-1, type=JOBID_TEXT)
def jobs(show_all_states, all_users, no_header, user, filter_, count, fmt, as_json, since, job_name,
         queues, include, stats, stats_only, color, sort, width, from_stdin, jobids):
    """List pending and running jobs of the current user (-a adds inactive jobs)."""
    if as_json and (stats or stats_only):
        raise FluxLiteError("--json incompatible with --stats or --stats-only")

    color = use_color(color)
    typed = [(JOBID.convert(text, _param("jobids"), click.get_current_context()), text) for text in jobids]
    jobids = [jobid for jobid, _ in typed]

    if jobids and (show_all_states or all_users or user or filter_ or since or job_name or queues):
        warning("Filtering options ignored with jobid list")
    if show_all_states and filter_:
        warning("Both -a and --filter specified, ignoring -a")
    if stats_only:
        with read_session() as broker:
            line, active = _stats_line(broker, queues)
        click.echo(line)
        raise SystemExit(0 if active else 1)
    if since is not None and not filter_:
        show_all_states = True  # --since implies -a unless a filter is given
    fmt = listing.format_string(jobs_listing.JOBS, fmt)
    states, results = job_list.PENDING | job_list.RUNNING, 0
    if show_all_states:
        states |= job_list.INACTIVE
    if filter_:
        states, results = job_list.parse_filter(filter_)

    # a large listing shows a bar on a terminal (stderr) while it reads,
    # builds and renders; everything is printed once the bar is gone
    width = listing.terminal_width(width)
    if from_stdin:
        _list_stdin(fmt, no_header, as_json, sort, width, color)
        return
    with staged_progress("listing jobs", 3, minimum=output.JOBS_PROGRESS_MIN) as stage:
        with read_session() as broker:
            ident = broker.instance.identity
            userid = ident.userid
            if all_users or (include and not user):
                userid = None  # (-i looks at every user's jobs unless -u names one)
            elif user:
                userid = users.userid(user)
            since_t = job_list.parse_since(since, broker.now) if since is not None else 0.0
            records = job_list.query(broker, userid=userid, states=states, results=results,
                                     ids=list(jobids) or None, max_entries=count, name=job_name,
                                     since=since_t, queues=_queue_filter(broker, queues), missing_ok=True,
                                     include=job_list.include_test(include) if include else None,
                                     progress=stage(0) if stage else None)
            now = broker.now
            stats_line = _stats_line(broker, queues)[0] if stats else None
        items = _infos(records, now, users.username, stage(1) if stage else None)
        lines = None
        if not as_json and not (jobids and not records):
            lines = listing.render(jobs_listing.JOBS, fmt, items, no_header=no_header,
                                   progress=stage(2) if stage else None, sort=sort, width=width)
    missing = set(getattr(records, "missing", ()))
    for jobid, text in typed:
        if jobid in missing:
            # job-list's error for each unknown id, the id as it was typed
            click.echo(f"JobID {text} unknown", err=True)
    if jobids and not records:
        raise SystemExit(1)
    if stats_line is not None:
        click.echo(stats_line)
    if getattr(records, "truncated", False) is True and not no_header and not as_json:
        click.echo(f"warning: output truncated at {count} jobs.", err=True)
        click.echo("Use --count to increase returned results or use filters to alter results.", err=True)
    if as_json:
        # one job asked for by id: that job's object, as flux-jobs prints it
        if len(jobids) == 1 and items:
            listing.emit_json(jobs_listing.to_json(items[0]))
            return
        # json.dumps({"jobs": docs}) a job at a time: each row's fields are
        # computed, encoded and dropped in turn
        texts = []
        encode = json.JSONEncoder(check_circular=False).encode  # json.dumps, less its cycle check
        for i, info in enumerate(items):
            texts.append(encode(jobs_listing.to_json(info)))
            items[i] = None
        click.echo('{"jobs": [' + ", ".join(texts) + "]}")
        return
    _emit_colored(lines, items, color, no_header)


def _emit_colored(lines, items, color, no_header):
    colors = None
    if color and lines and len(lines) == len(items) + (0 if no_header else 1):
        # flux-jobs colors each inactive job's line by its result; not the header
        colors = [""] * (len(lines) - len(items)) + [RESULT_COLORS.get(i["result"], "") for i in items]
    emit(lines, colors)


def _list_stdin(fmt, no_header, as_json, sort, width, color):
    """--from-stdin, flux-jobs' testing input: Flux's job objects listed as
    read, filters ignored. Times are against the instance's clock, the wall
    clock when there is no instance (flux-jobs needs no broker for this)."""
    records = _stdin_records()
    try:
        with read_session() as broker:
            now = broker.now
    except NoInstanceError:
        now = time.time()
    items = _infos(records, now, users.username, None)
    if as_json:
        click.echo(json.dumps({"jobs": [jobs_listing.to_json(info) for info in items]}))
        return
    lines = listing.render(jobs_listing.JOBS, fmt, items, no_header=no_header, sort=sort, width=width)
    _emit_colored(lines, items, color, no_header)


def _stdin_records():
    records = []
    for lineno, line in enumerate(sys.stdin, 1):
        try:
            records.append(job_list.record_from_attrs(json.loads(line)))
        except ValueError as err:
            raise FluxLiteError(f"JSON input error: line {lineno}: {err}") from None
    return records


def _infos(records, now, username, progress):
    items = []
    for done, rec in enumerate(records, 1):
        # fields computed as the format reads them: a listing computes what it prints
        items.append(jobs_listing.JobInfo(rec, now, username))
        if progress is not None and done % 500 == 0:
            progress(done, len(records))
    if progress is not None:
        progress(len(records), len(records))
    return items


def _queue_filter(broker, queues):
    names = [n for item in queues for n in item.split(",") if n]
    if not names:
        return None

    return with_virtual(broker.config, names)


def _stats_line(broker, queues=()):
    """The --stats line: of the whole instance, or of the --queue queues
    summed (flux.job.JobStats' words for a queue without stats)."""
    names = [n for item in queues for n in item.split(",") if n]
    doc = statsmod.job_stats(broker, queues=bool(names))
    if names:
        try:
            doc = statsmod.queue_stats(doc, names)
        except ValueError as exc:
            raise FluxLiteError(f"error retrieving job stats: {exc}") from None
    return statsmod.summary(doc)


def _param(name):
    ctx = click.get_current_context()
    return next(p for p in ctx.command.params if p.name == name)
