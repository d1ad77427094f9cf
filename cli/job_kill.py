"""flux-lite job kill: send a signal to running jobs (as flux job kill)."""

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
