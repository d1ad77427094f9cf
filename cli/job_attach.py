"""flux-lite job attach, and what `run` prints once its job ended: the
job's output (emulated commands), its exceptions and its fate, as flux job
attach prints them; the exit code is the job's."""

import click

from flux_lite.cli.common import instance
from flux_lite.cli.interrupt import DETACHED, attach_signals
from flux_lite.cli.params import JOBID
from flux_lite.cli.words import prog
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_manager import attach, waiters


def attach_job(inst, jobid, label_io=False, attach_cmd=False):
    """Wait for the job to end (the virtual clock advances), print what flux
    job attach prints, and return its exit code."""
    job_prog = prog("job")
    with attach_signals(job_prog, [jobid]) as intr:
        try:
            job = inst.wait(lambda b: intr.check(b) or waiters.inactive(b, jobid))
        except (WaitTimeout, WaitStalled):
            raise FluxLiteError(
                f"{f58(jobid)}: the job cannot end under the virtual clock "
                "(it has no run duration, time limit or anything else left to happen)"
            ) from None
    if job is DETACHED:
        return 1  # the job runs on: flux job attach's exit code after detaching
    if isinstance(job, str):
        if attach_cmd:
            raise FluxLiteError(f"Failed to attach to {f58(jobid)}: No such job")
        raise FluxLiteError(job)
    with inst.session() as broker:
        entries = attach.watched(broker, jobid)
        output = attach.job_output(broker, jobid)
    lines, exit_code = attach.attach_report(entries, f58(jobid), output, label_io)
    emit(lines, job_prog)
    return exit_code


def emit(lines, log_prog, out=None, err=None):
    """Print report lines: output to its stream as it is, the rest to stderr
    (out, err: files instead of the terminal, as submit's --log)."""
    to_err = {"err": True} if err is None else {"file": err}
    for kind, text in lines:
        if kind == attach.STDOUT:
            click.echo(text, nl=False, file=out)
        elif kind == attach.STDERR:
            click.echo(text, nl=False, **to_err)
        elif kind == attach.LOG:
            click.echo(f"{log_prog}: {text}", **to_err)
        else:
            click.echo(text, **to_err)


@click.command("attach")
@click.option("-l", "--label-io", is_flag=True, help="Label output by rank.")
@click.argument("jobid", type=JOBID)
def job_attach(label_io, jobid):
    """Wait for a job to end; print its output, exceptions and fate; exit with its exit code."""
    raise SystemExit(attach_job(instance(), jobid, label_io=label_io, attach_cmd=True))
