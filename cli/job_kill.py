"""flux-lite job kill / killall: send a signal to running jobs (as flux job kill, killall)."""

import signal
import sys

import click

from flux_lite.cli.common import session
from flux_lite.cli.job_list import int_option, parse_states, parse_userid
from flux_lite.cli.params import JOBID_TEXT, c_jobid
from flux_lite.cli.words import prog
from flux_lite.errors import FluxLiteError
from flux_lite.job_manager import bulk
from flux_lite.job_manager import exec as exec_
from flux_lite.job_manager.job import ACTIVE, INACTIVE


def signum_of(text: str) -> int | None:
    """A signal as flux job kill reads one: a number above 0, or a name with or
    without SIG (the job manager judges a number too high)."""
    if text.isdigit():
        return int(text) or None
    name = text.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    sig = getattr(signal.Signals, name, None) if name in signal.Signals.__members__ else None
    return int(sig) if sig is not None else None


@click.command("kill")
@click.option("-s", "--signal", "sig", default="SIGTERM", metavar="SIG", help="Send signal SIG (default SIGTERM).")
@click.argument("jobids", nargs=-1, required=True, type=JOBID_TEXT)
def job_kill(sig, jobids):
    """Send a signal to running jobs (their job shells pass it on to the tasks)."""
    ids = [(text, c_jobid(text)) for text in jobids]
    signum = signum_of(sig)
    if signum is None:
        raise FluxLiteError(f"kill: Invalid signal {sig}")
    failed = False
    with session() as broker:
        for text, jobid in ids:
            try:
                exec_.request_kill(broker, jobid, signum)
            except FluxLiteError as exc:
                # (Flux's words name each job as it was typed)
                click.echo(f"{prog('job')}: kill {text}: {exc}", err=True)
                failed = True
    if failed:
        sys.exit(1)


@click.command("killall")
@click.option("-s", "--signal", "sig", default="SIGTERM", metavar="SIG", help="Send signal SIG (default SIGTERM).")
@click.option("-u", "--user", metavar="USER", help="Set target user or 'all' (instance owner only).")
@click.option("-f", "--force", is_flag=True, help="Confirm the command.")
def job_killall(sig, user, force):
    """Send a signal to all running jobs of a user (dry run without -f)."""
    signum = signum_of(sig)
    if signum is None:
        raise FluxLiteError(f"killall: Invalid signal {sig}")
    with session() as broker:
        try:
            count, errors = exec_.kill_all(broker, user, signum, dry_run=not force)
        except FluxLiteError as exc:
            raise FluxLiteError(f"killall: {exc}") from None
    say = prog("job")
    if count and not force:
        click.echo(f"{say}: Command matched {count} jobs (-f to confirm)", err=True)
    elif count:
        click.echo(f"{say}: {signal.strsignal(signum)} {count} jobs ({errors} errors)", err=True)
    else:
        click.echo(f"{say}: Command matched 0 jobs", err=True)


@click.command("raiseall", context_settings={"allow_interspersed_args": False})
@click.option("-s", "--severity", metavar="N", default=None,
              help="Set exception severity [0-7] (0 is fatal, default=7)")
@click.option("-u", "--user", metavar="USER", help="Set target user or 'all' (instance owner only)")
@click.option("-S", "--states", multiple=True, metavar="STATES", help="Set target job states (default=ACTIVE)")
@click.option("-f", "--force", is_flag=True, help="Confirm the command")
@click.argument("etype", required=False, metavar="TYPE")
@click.argument("message", nargs=-1)
def job_raiseall(severity, user, states, force, etype, message):
    """Raise an exception of TYPE on every active job of a user (dry run without -f)."""
    if etype is None:
        click.echo(f"Usage: {prog('job', sub='raiseall')} OPTIONS type [message ...]", err=True)
        sys.exit(1)
    level = int_option("raiseall", "severity", severity) if severity is not None else 7
    mask = ACTIVE
    if states:
        mask = parse_states(states)
        if mask & INACTIVE:
            raise FluxLiteError("Exceptions cannot be raised on inactive jobs")
    note = " ".join(message) if message else None
    with session() as broker:
        userid = broker.instance.identity.userid if user is None else parse_userid(user)
        try:
            count, errors = bulk.raise_all(broker, userid=userid, states=mask, dry_run=not force, note=note,
                                           etype=etype, severity=level)
        except FluxLiteError as exc:
            raise FluxLiteError(f"raiseall: {exc}") from None
    say = prog("job")
    if count and not force:
        click.echo(f"{say}: Command matched {count} jobs (-f to confirm)", err=True)
    elif count:
        click.echo(f"{say}: Raised exception on {count} jobs ({errors} errors)", err=True)
    else:
        click.echo(f"{say}: Command matched 0 jobs", err=True)
