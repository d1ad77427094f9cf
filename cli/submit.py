"""flux-lite submit / run: build a jobspec from the command line and submit it."""

import json
import sys

import click

from flux_lite.cli.common import open_instance
from flux_lite.errors import FluxLiteError, UsageError

URGENCY_NAMES = {"hold": 0, "default": 16, "expedite": 31}


def parse_urgency(text):
    if isinstance(text, int):
        return text
    if text in URGENCY_NAMES:
        return URGENCY_NAMES[text]
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"invalid urgency '{text}': expected 0-31, hold, default or expedite") from None


def parse_time_limit(text):
    """-t: minutes when no unit is given (as flux submit), else an FSD."""
    from flux_lite.formats.fsd import parse

    if text is None:
        return None
    try:
        value = float(text)
        if value < 0 or value != value:
            raise ValueError
        return value * 60.0
    except ValueError:
        pass
    try:
        return parse(text)
    except ValueError:
        raise UsageError(f"invalid time limit '{text}': expected minutes or an FSD") from None


def complete_queue_option(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_queues

    return complete_queues(ctx, incomplete)


def job_options(f):
    options = [
        click.option("-n", "--ntasks", type=click.IntRange(min=1), default=None, help="Number of tasks."),
        click.option("-N", "--nodes", type=click.IntRange(min=1), default=None, help="Number of nodes."),
        click.option("-c", "--cores-per-task", type=click.IntRange(min=1), default=1, help="Cores per task."),
        click.option("-g", "--gpus-per-task", type=click.IntRange(min=0), default=0, help="GPUs per task."),
        click.option("-x", "--exclusive", is_flag=True, default=None, help="Allocate whole nodes."),
        click.option("-t", "--time-limit", metavar="MIN|FSD", help="Time limit (minutes, or an FSD)."),
        click.option("-q", "--queue", metavar="NAME", shell_complete=complete_queue_option,
                     help="Submit to queue NAME."),
        click.option("--urgency", default="default", metavar="N", help="0-31, hold, default or expedite."),
        click.option("-S", "--setattr", "setattrs", multiple=True, metavar="KEY=VAL",
                     help="Set a jobspec attribute (system. prefix implied)."),
        click.option("--job-name", metavar="NAME", help="Job name."),
        click.option("--flags", default="", metavar="FLAGS", help="debug, waitable, novalidate."),
        click.option("--dry-run", is_flag=True, help="Print the jobspec instead of submitting it."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def build_jobspec(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit,
                  setattrs, job_name, queue=None):
    import os

    from flux_lite.formats import jobspec as jobspecmod

    attrs = []
    for item in setattrs:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--setattr: expected KEY=VAL, got '{item}'")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        attrs.append((key, parsed))
    duration = parse_time_limit(time_limit)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    return jobspecmod.build(
        list(command),
        ntasks=ntasks or 1 if ntasks or not nodes else None,
        nnodes=nodes,
        cores_per_task=cores_per_task,
        gpus_per_task=gpus_per_task,
        duration=duration,
        name=job_name,
        cwd=cwd,
        setattrs=attrs,
        exclusive=exclusive,
        queue=queue,
    )


def parse_flags(flags):
    bits = {"debug": 2, "waitable": 4, "novalidate": 8}
    value = 0
    for flag in filter(None, flags.split(",")):
        if flag not in bits:
            raise UsageError(f"unknown flag '{flag}'")
        value |= bits[flag]
    return value


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@click.option("--cc", metavar="IDSET", help="Submit one copy of the job per id in IDSET ({cc} is replaced).")
@click.option("--quiet", is_flag=True, help="Do not print job ids.")
@click.option("--wait-event", metavar="NAME", help="Wait for event NAME on each job before exiting.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def submit(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit, queue, urgency,
           setattrs, job_name, flags, dry_run, cc, quiet, wait_event):
    """Submit a job to run COMMAND; print its id (f58)."""
    from flux_lite.formats.jobid import f58
    from flux_lite.formats.idset import IDset

    urgency_value = parse_urgency(urgency)
    flagbits = parse_flags(flags)
    copies = [None]
    if cc is not None:
        try:
            copies = list(IDset.parse(cc))
        except ValueError as exc:
            raise UsageError(f"--cc: {exc}") from None
    specs = []
    templated = any("{cc}" in arg for arg in command)
    for ccid in copies:
        if specs and not templated:
            specs.append(specs[0])  # identical copies: build (and validate) once
            continue
        cmd = [arg.replace("{cc}", str(ccid)) for arg in command] if ccid is not None else list(command)
        specs.append(build_jobspec(cmd, ntasks, nodes, cores_per_task, gpus_per_task, exclusive,
                                   time_limit, setattrs, job_name, queue))
    if dry_run:
        for js in specs:
            click.echo(json.dumps(js))
        return
    from flux_lite.cli.output import progress

    inst = open_instance()
    try:
        with inst.session() as broker:
            ids = []
            with progress(len(specs), "submitting") as advance:
                for js in specs:
                    ids.append(broker.jm.submit(js, urgency=urgency_value, flags=flagbits))
                    broker.run()
                    advance(1)
        if not quiet:
            click.echo("\n".join(f58(i) for i in ids))
        if wait_event:
            _wait_all(inst, ids, wait_event)
    finally:
        inst.close()


def _wait_all(inst, ids, name):
    from flux_lite.instance import WaitStalled, WaitTimeout
    from flux_lite.job_manager import waiters

    for jobid in ids:
        try:
            found = inst.wait(lambda b, j=jobid: waiters.event_matcher(b, j, name))
        except (WaitTimeout, WaitStalled):
            raise FluxLiteError(f"wait-event: event '{name}' cannot arrive under the virtual clock") from None
        if isinstance(found, str):
            raise FluxLiteError(found)


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit, queue, urgency,
        setattrs, job_name, flags, dry_run):
    """Submit a job and wait for it to end; exit with the job's exit code.

    Under a virtual clock the wait advances the clock; under a real clock it
    waits in wall time.
    """
    from flux_lite.formats.jobid import f58
    from flux_lite.instance import WaitStalled, WaitTimeout
    from flux_lite.job_manager import waiters

    js = build_jobspec(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit,
                       setattrs, job_name, queue)
    if dry_run:
        click.echo(json.dumps(js))
        return
    inst = open_instance()
    try:
        with inst.session() as broker:
            jobid = broker.jm.submit(js, urgency=parse_urgency(urgency), flags=parse_flags(flags))
        try:
            job = inst.wait(lambda b: waiters.inactive(b, jobid))
        except (WaitTimeout, WaitStalled):
            raise FluxLiteError(
                f"{f58(jobid)}: the job cannot end under the virtual clock "
                "(it has no run duration, time limit or anything else left to happen)"
            ) from None
    finally:
        inst.close()
    if isinstance(job, str):
        raise FluxLiteError(job)
    exc = job.exception
    if exc is not None and exc["severity"] == 0:
        note = f" {exc['note']}" if exc["note"] else ""
        click.echo(f"flux-lite run: {f58(jobid)}: job.exception type={exc['type']} severity=0{note}", err=True)
    rc = job.returncode
    if rc is None:
        sys.exit(1)
    if rc < 0:
        sys.exit(1 if rc == -128 else 128 - rc)
    sys.exit(rc)
