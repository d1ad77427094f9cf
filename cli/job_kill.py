"""flux-lite job kill / killall: send a signal to running jobs (as flux job kill, killall)."""

import signal
import sys

import click

from flux_lite.cli.common import session
from flux_lite.cli.params import JOBID
from flux_lite.cli.words import prog
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.job_manager import exec as exec_


def signum_of(text: str) -> int | None:
    """A signal as flux job kill reads one: a number, or a name with or without SIG."""
    if text.isdigit():
        return int(text)
    name = text.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    sig = getattr(signal.Signals, name, None) if name in signal.Signals.__members__ else None
    return int(sig) if sig is not None else None


@click.command("kill")
@click.option("-s", "--signal", "sig", default="SIGTERM", metavar="SIG", help="Send signal SIG (default SIGTERM).")
@click.argument("jobids", nargs=-1, required=True, type=JOBID)
def job_kill(sig, jobids):
    """Send a signal to running jobs (their job shells pass it on to the tasks)."""
    signum = signum_of(sig)
    if signum is None:
        raise FluxLiteError(f"kill: Invalid signal {sig}")
    failed = False
    with session() as broker:
        for jobid in jobids:
            try:
                exec_.request_kill(broker, jobid, signum)
            except FluxLiteError as exc:
                click.echo(f"{prog('job')}: kill {f58(jobid)}: {exc}", err=True)
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
