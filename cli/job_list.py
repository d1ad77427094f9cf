"""flux-lite job list / list-inactive / list-ids: job-list's records, one
JSON object a line (as flux job prints them for scripts; flux-jobs is the
listing for people)."""

import contextlib
import errno
import sys

import click
from flux_lite.cli.params import c_jobid
from flux_lite.cli.common import instance, read_session
from flux_lite.cli.words import prog

from flux_lite import job_list
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_manager.job import ACTIVE, INACTIVE, PENDING, RUNNING


def dumps(value) -> str:
    """JSON as jansson's json_dumps(value, 0) writes it: `, ` and `: `
    between items, reals as %.17g."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{eventlog.dumps(k)}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return eventlog.dumps(value)


def _not_a_terminal():
    # what flux job says to a person typing these commands
    if sys.stdout.isatty():
        click.echo("This is not the command you are looking for. Try flux-jobs(1).", err=True)
        sys.exit(1)


def _usage(sub, usage):
    click.echo(f"Usage: {prog('job', sub=sub)} {usage}", err=True)
    sys.exit(1)


def int_option(sub, name, text):
    """optparse_get_int: an int (strtol, whole string) or the usage message."""
    try:
        value = int(text, 10) if text.strip() == text and text else None
    except ValueError:
        value = None
    if value is None or not -(1 << 31) <= value < 1 << 31:
        click.echo(f"{sub}: Option '{name}' requires an integer argument", err=True)
        sys.exit(1)
    return value


def _float_option(sub, name, text):
    try:
        return float(text)
    except ValueError:
        click.echo(f"{sub}: Option '{name}' requires a floating point argument", err=True)
        sys.exit(1)


def parse_states(words, optname="states"):
    """flux-job's --states (a comma list, or several): the state mask."""
    mask = 0
    for word in (w for item in words for w in item.split(",") if w):
        state = job_list.parse_state(word)
        if state is None and word.lower() in ("pending", "running", "active"):
            state = {"pending": PENDING, "running": RUNNING, "active": ACTIVE}[word.lower()]
        if state is None:
            raise FluxLiteError(f"error parsing --{optname}: {word} is unknown")
        mask |= state
    if mask == 0:
        raise FluxLiteError("no states specified")
    return mask


def parse_userid(text):
    """flux-job's --user: a name, a uid or "all" (None)."""
    if text == "all":
        return None
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        pass
    if not text[:1].isdigit() or not text.isdigit() or int(text) >= 1 << 32:
        raise FluxLiteError(f"unknown user {text}")
    return int(text)


@contextlib.contextmanager
def _request(topic):
    """flux-job's words for a request that found no service: `flux TOPIC: error`."""
    try:
        yield
    except FluxLiteError as exc:
        if exc.errno != errno.ENOSYS:
            raise
        raise FluxLiteError(f"flux {topic}: {exc}", errno=exc.errno) from None


def _emit(records, max_entries):
    if max_entries < 0:
        raise FluxLiteError("flux job-list.list: invalid payload: max_entries < 0 not allowed")
    lines = [dumps(job_list.job_attrs(rec)) for rec in records]
    if lines:
        click.echo("\n".join(lines))


@click.command("list")
@click.option("-c", "--count", metavar="N", help="Limit output to N jobs")
@click.option("-s", "--states", multiple=True, metavar="STATES", help="List jobs in specific states")
@click.option("-u", "--user", metavar="USER", help='Limit output to specific user. Specify "all" for all users.')
@click.option("-a", "--all-user", "all_user", is_flag=True, help="List my jobs, regardless of state")
@click.option("-A", "--all", "all_", is_flag=True, help="List jobs for all users, regardless of state")
@click.argument("extra", nargs=-1)
def job_list_cmd(count, states, user, all_user, all_, extra):
    """List jobs as job-list's JSON records, one a line (pending, then running, then inactive)."""
    _not_a_terminal()
    if extra:
        _usage("list", "[OPTIONS]")
    max_entries = int_option("list", "count", count) if count is not None else 0
    if all_user or all_:
        mask = ACTIVE | INACTIVE
    elif states:
        mask = parse_states(states)
    else:
        mask = PENDING | RUNNING
    with read_session() as broker:
        if all_:
            userid = None
        elif user is not None:
            userid = parse_userid(user)
        else:
            userid = broker.instance.identity.userid
        if max_entries < 0:
            _emit((), max_entries)
        with _request("job-list.list"):
            records = job_list.query(broker, userid=userid, states=mask, max_entries=max_entries)
    _emit(records, max_entries)


@click.command("list-inactive")
@click.option("-c", "--count", metavar="N", help="Limit output to N jobs")
@click.option("-s", "--since", metavar="T",
              help="Limit output to jobs that entered the inactive state since timestamp T")
@click.argument("extra", nargs=-1)
def job_list_inactive(count, since, extra):
    """List inactive jobs (all users) as job-list's JSON records, most recently ended first."""
    _not_a_terminal()
    if extra:
        _usage("list-inactive", "[OPTIONS]")
    max_entries = int_option("list-inactive", "count", count) if count is not None else 0
    since_t = _float_option("list-inactive", "since", since) if since is not None else 0.0
    if max_entries < 0:
        _emit((), max_entries)
    if since_t < 0:
        raise FluxLiteError("flux job-list.list: invalid payload: since < 0.0 not allowed")
    with read_session() as broker:
        with _request("job-list.list"):
            records = job_list.query(broker, userid=None, states=INACTIVE, max_entries=max_entries, since=since_t)
    _emit(records, max_entries)


@click.command("list-ids")
@click.option("-W", "--wait-state", metavar="STATE", default="depend",
              help="Return only after jobid has reached specified state")
@click.argument("ids", nargs=-1)
def job_list_ids(wait_state, ids):
    """Print job-list's JSON record of each job ID once it has reached STATE
    (default depend: as soon as it exists); an inactive job is printed at once."""
    _not_a_terminal()
    if not ids:
        _usage("list-ids", "[OPTIONS] ID [ID ...]")
    state = job_list.parse_state(wait_state)
    if state is None or state & (state - 1):
        raise FluxLiteError("invalid job state specified")
    if not state & (ACTIVE | INACTIVE):
        raise FluxLiteError("flux job-list.list-id: invalid payload: invalid state specified")
    targets = []
    for text in ids:
        targets.append(c_jobid(text))
    printed = set()
    lines = []

    def check(broker):
        # each job printed once it is listed in the state (or inactive), in
        # the order they get there; an unknown job ends the command
        for jobid in targets:
            if jobid in printed or not job_list.synced(broker, jobid):
                continue  # (one job-list has not taken in yet is waited for)
            recs = job_list.query(broker, ids=[jobid], missing_ok=True)
            if not recs:
                return "flux job-list.list-d: No such file or directory"
            rec = recs[0]
            if rec["state"] == INACTIVE or _reached(rec, state):
                printed.add(jobid)
                lines.append(dumps(job_list.job_attrs(rec)))
        return True if len(printed) == len(set(targets)) else None

    with _request("job-list.list-d"), read_session() as broker:  # (sic: flux-job's word)
        job_list.require_service(broker, "job-list.list-id")
    try:
        # job-list's idsync: the ids not yet listed in the state are waited on
        outcome = instance().wait(check, watches=lambda: [{"service": "job-list", "jobid": jobid}
                                                          for jobid in targets if jobid not in printed])
    except (WaitStalled, WaitTimeout):
        outcome = "a job cannot reach the state under the virtual clock (advance it or cancel the job)"
    if lines:
        click.echo("\n".join(lines))
    if isinstance(outcome, str):
        raise FluxLiteError(outcome)


_STATE_TIMES = {2: "t_depend", 4: "t_priority", 8: "t_sched", 16: "t_run", 32: "t_cleanup", 64: "t_inactive"}


def _reached(rec, state):
    return bool(rec.get(_STATE_TIMES.get(state, ""))) or rec["state"] == state
