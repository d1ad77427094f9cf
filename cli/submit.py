"""flux-lite submit / run: build a jobspec from the command line and submit it."""

import json
import sys

import click
from flux_lite.cli.common import instance
from flux_lite.cli.params import complete_queues
from flux_lite.cli.interrupt import DETACHED, attach_signals
from flux_lite.cli.output import progress
from flux_lite.cli.words import is_flux, prog

from flux_lite.errors import FluxLiteError, NoInstanceError, UsageError
from flux_lite.formats import constraint, fsd
from flux_lite.formats import jobspec as jobspecmod
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.cli.job_attach import attach_job, emit
from flux_lite.job_manager import attach, dependency, job
from flux_lite.job_manager import exec as exec_

URGENCY_NAMES = {"hold": 0, "default": 16, "expedite": 31}

# one command is one transaction: a bound on what it may hold (about 30 s of submits)
MAX_CC = 100000


def parse_urgency(text):
    """--urgency as flux submit reads it: a name, else int() of the text."""
    if isinstance(text, int):
        return text
    if text in URGENCY_NAMES:
        return URGENCY_NAMES[text]
    try:
        return int(text)
    except ValueError:
        raise FluxLiteError(f"invalid literal for int() with base 10: {text!r}") from None


def parse_time_limit(text):
    """-t: minutes when the text is a number (as flux submit), else an FSD
    read as flux.util.parse_fsd reads it.

    Errors are Flux's: the FSD parser's, then the jobspec's range checks.
    """
    import math

    if text is None:
        return None
    try:
        value = float(text) * 60.0
    except ValueError:
        value = fsd.parse(text)  # FSDError: "invalid Flux standard duration"
    if value < 0:
        raise FluxLiteError("duration must not be negative")
    if math.isnan(value) or math.isinf(value):
        raise FluxLiteError("duration must be a normal, finite value")
    return value


def _complete_dependency(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_dependency

    return complete_dependency(ctx, param, incomplete)


def job_options(f):
    options = [
        # counts are checked after parsing, with flux submit's words (exit 1)
        click.option("-n", "--ntasks", metavar="N", default=None, help="Number of tasks."),
        click.option("-N", "--nodes", metavar="N", default=None, help="Number of nodes."),
        click.option("-c", "--cores-per-task", metavar="N", default=None, help="Cores per task."),
        click.option("-g", "--gpus-per-task", metavar="N", default=None, help="GPUs per task."),
        click.option("-x", "--exclusive", is_flag=True, default=None, help="Allocate whole nodes."),
        click.option("-t", "--time-limit", metavar="MIN|FSD", help="Time limit (minutes, or an FSD)."),
        click.option("-q", "--queue", metavar="NAME", shell_complete=complete_queues,
                     help="Submit to queue NAME."),
        click.option("--requires", "requires", multiple=True, metavar="CONSTRAINT",
                     help="Specify job constraints in RFC 35 syntax"),
        click.option("--urgency", default="default", metavar="N", help="0-31, hold, default or expedite."),
        click.option("-S", "--setattr", "setattrs", multiple=True, metavar="KEY=VAL",
                     help="Set a jobspec attribute (system. prefix implied)."),
        click.option("--job-name", metavar="NAME", help="Job name."),
        click.option("--flags", default="", metavar="FLAGS", help="debug, waitable, novalidate."),
        click.option("--dependency", "dependencies", multiple=True, metavar="URI", cls=_OrderedDependencyOption,
                     shell_complete=_complete_dependency, help="Set an RFC 26 dependency URI for this job"),
        click.option("--begin-time", "begin_times", multiple=True, metavar="+FSD|TIME", cls=_OrderedDependencyOption,
                     help='Set minimum start time as offset in FSD (e.g. +1h) or an absolute TIME '
                          '(e.g. "3pm") for job'),
        click.option("--output", metavar="TEMPLATE",
                     help="Write the job's standard output (and error, without --error) to TEMPLATE "
                          "({{id}}, {{name}}, {{taskid}}... are replaced)."),
        click.option("--error", metavar="TEMPLATE", help="Write the job's standard error to TEMPLATE."),
        click.option("--dry-run", is_flag=True, help="Print the jobspec instead of submitting it."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def build_jobspec(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit,
                  setattrs, job_name, queue=None, requires=()):
    import os

    if not command:
        raise FluxLiteError("job command and arguments are missing")
    ntasks, nodes, cores_per_task, gpus_per_task = (
        _count(value, option) for value, option in ((ntasks, "ntasks"), (nodes, "nodes"),
                                                    (cores_per_task, "cores-per-task"),
                                                    (gpus_per_task, "gpus-per-task")))
    duration = parse_time_limit(time_limit)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    return jobspecmod.build(
        list(command),
        # no -n (or -n0): one task per node with -N, else one task
        ntasks=ntasks or (None if nodes is not None else 1),
        nnodes=nodes,
        cores_per_task=1 if cores_per_task is None else cores_per_task,
        gpus_per_task=gpus_per_task or 0,
        duration=duration,
        name=job_name,
        cwd=cwd,
        setattrs=list(setattrs),  # KEY[=VAL], parsed as Flux does (no VAL: 1)
        exclusive=exclusive,
        queue=queue,
        constraints=_constraints(requires),
    )


def add_output(js, output, error, label_io):
    """--output/--error as flux submit records them: shell options
    output.stdout/stderr {type: file, path: TEMPLATE}, with label true
    under --label-io ("none" or "kvs" keep --output's stream in the KVS)."""
    if (output is None or output in ("none", "kvs")) and error is None:
        return js
    shell = js.setdefault("attributes", {}).setdefault("system", {}).setdefault("shell", {})
    opts = shell.setdefault("options", {}).setdefault("output", {})
    for stream, path in (("stdout", output if output not in ("none", "kvs") else None), ("stderr", error)):
        if path is not None:
            conf = opts.setdefault(stream, {})
            conf["type"] = "file"
            conf["path"] = path
            if label_io:
                conf["label"] = True
    return js


def with_environment(js, extra=None):
    """The jobspec as flux submit --dry-run prints it: the submitting
    environment in attributes.system.environment, placed right after
    duration as Flux's Jobspec sets it (the job manager never stores it, as
    Flux's ingest drops it, so it is added only here)."""
    import os

    env = dict(os.environ)
    env.update(extra or {})
    system = js["attributes"]["system"]
    ordered = {}
    for key, value in system.items():
        ordered[key] = value
        if key == "duration":
            ordered["environment"] = env
    ordered.setdefault("environment", env)
    return {**js, "attributes": {**js["attributes"], "system": ordered}}


def _constraints(requires):
    """--requires (repeatable: the queries are joined, as flux submit does)."""
    if not requires:
        return None

    try:
        return constraint.parse(" ".join(requires))
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None


def _count(value, option):
    """An integer option's value, converted after parsing as flux submit does."""
    if value is None or isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise FluxLiteError(f"--{option}: invalid int value '{value}'") from None


_ORDER_KEY = "flux_lite.dependency_order"


class _OrderedDependencyOption(click.Option):
    """--dependency and --begin-time: flux submit's argparse appends both, in
    command-line order, to one dependency list. Click keeps one list per
    option, so note the kind of each occurrence as the parser meets it."""

    def add_to_parser(self, parser, ctx):
        super().add_to_parser(parser, ctx)
        order = ctx.meta.setdefault(_ORDER_KEY, [])
        for opt in self.opts:
            parsed = getattr(parser, "_long_opt", {}).get(opt)
            if parsed is None or not callable(getattr(parsed, "process", None)):
                continue  # another click: the order falls back to --dependency first

            def process(value, state, _process=parsed.process, _name=self.name):
                order.append(_name)
                _process(value, state)

            parsed.process = process


def dependency_entries(uris, begin_times):
    """RFC 26 entries for --dependency and --begin-time in command-line order,
    as flux submit makes them. Begin times are converted first (flux submit
    does it while parsing its options, so their errors come first); the
    deprecated `after` scheme warns here, on the client side."""
    if not uris and not begin_times:
        return None

    begins = []
    if begin_times:
        now = _instance_now()
        begins = [dependency.begin_time_uri(t, now) for t in begin_times]
    ctx = click.get_current_context(silent=True)
    order = list(ctx.meta.get(_ORDER_KEY, ())) if ctx is not None else []
    if order.count("dependencies") != len(uris) or order.count("begin_times") != len(begins):
        order = ["dependencies"] * len(uris) + ["begin_times"] * len(begins)
    pending = {"dependencies": iter(uris), "begin_times": iter(begins)}
    entries = []
    for kind in order:
        entry = dependency.parse_uri(next(pending[kind]))
        if entry["scheme"] == "after":
            click.echo(dependency.DEPRECATED_AFTER, err=True)
        entries.append(entry)
    return entries


def _instance_now():
    """The instance clock (virtual or real) that --begin-time counts from;
    wall time when there is no instance (a --dry-run)."""
    import time

    try:
        return instance().clock_now()
    except NoInstanceError:
        return time.time()


def add_dependencies(jobspec, entries):
    if entries:
        jobspec.setdefault("attributes", {}).setdefault("system", {})["dependencies"] = list(entries)
    return jobspec


def parse_flags(flags):
    try:
        return job.parse_flags(flags)
    except ValueError as exc:
        raise FluxLiteError(f"--flags: Unknown flag {exc}") from None


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@click.option("--cc", metavar="IDSET", help="Submit one copy of the job per id in IDSET ({cc} is replaced).")
@click.option("--quiet", is_flag=True, help="Do not print job ids.")
@click.option("--wait-event", metavar="NAME", help="Wait for event NAME on each job before exiting.")
@click.option("--wait", is_flag=True, help="Wait for the jobs to end; exit with the largest exit code.")
@click.option("--watch", is_flag=True, help="Watch the jobs' output (implies --wait; test jobs have none).")
@click.option("-l", "--label-io", is_flag=True, help="With --watch, label each line of output with its job id.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def submit(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit, queue, requires, urgency,
           setattrs, job_name, flags, dependencies, begin_times, output, error, dry_run, cc, quiet, wait_event, wait,
           watch, label_io):
    """Submit a job to run COMMAND; print its id (f58)."""
    urgency_value = parse_urgency(urgency)
    flagbits = parse_flags(flags)
    dep_entries = dependency_entries(dependencies, begin_times)
    copies = [None]
    if cc is not None:
        try:
            ids = IDset.parse(cc)
        except ValueError:
            raise FluxLiteError(f"IDset(): Invalid argument: {cc}") from None
        if not ids:
            raise FluxLiteError(f"IDset(): Invalid argument: {cc}")  # an empty --cc submits nothing
        if len(ids) > MAX_CC:
            raise UsageError(f"--cc: {len(ids)} copies is more than the limit of {MAX_CC} per command")
        copies = list(ids)
    specs = []
    templated = any("{cc}" in arg for arg in command)
    for ccid in copies:
        if specs and not templated:
            specs.append(specs[0])  # identical copies: build (and validate) once
            continue
        cmd = [arg.replace("{cc}", str(ccid)) for arg in command] if ccid is not None else list(command)
        specs.append(add_output(add_dependencies(build_jobspec(cmd, ntasks, nodes, cores_per_task, gpus_per_task,
                                                               exclusive, time_limit, setattrs, job_name, queue,
                                                               requires),
                                                 dep_entries), output, error, label_io))
    if dry_run:
        # as flux submit: the first job's jobspec only (it exits there), with
        # the environment the job would carry (FLUX_JOB_CC for a --cc copy)
        extra = {"FLUX_JOB_CC": str(copies[0])} if copies[0] is not None else {}
        click.echo(json.dumps(with_environment(specs[0], extra)))
        return

    inst = instance()
    try:
        with inst.session() as broker:
            ids = []
            with progress(len(specs), "submitting") as advance:
                for js in specs:
                    ids.append(broker.jm.submit(js, urgency=urgency_value, flags=flagbits))
                    broker.run()
                    advance(1)
    except FluxLiteError as exc:
        _refused(exc)
    if not quiet:
        click.echo("\n".join(f58(i) for i in ids))
    if wait or watch or wait_event:
        sys.exit(_wait_all(inst, ids, wait_event if wait_event and not (wait or watch) else "clean", watch,
                           label_io))


def _refused(exc):
    """A submission the job manager refused. As `flux`, flux submit prints
    the RPC's error as Python shows an OSError (`[Errno 22] ...`)."""
    if exc.errno and not isinstance(exc, UsageError) and is_flux():
        click.echo(f"[Errno {exc.errno}] {exc}", err=True)
        sys.exit(1)
    raise exc


def _wait_all(inst, ids, name, watch=False, label_io=False):
    """Wait for event NAME (or the end) of each job, as flux submit's job
    watcher does: fatal exceptions on stderr; the largest exit code."""
    exit_code = 0
    with attach_signals(prog("submit"), ids) as intr:
        for jobid in ids:
            try:
                entries = inst.wait(lambda b, j=jobid: intr.check(b) or attach.watched(b, j, name))
            except (WaitTimeout, WaitStalled):
                raise FluxLiteError(f"wait-event: event '{name}' cannot arrive under the virtual clock") from None
            if entries is DETACHED:
                return 1
            output = None
            if watch:
                with inst.session() as broker:
                    output = attach.job_output(broker, jobid)
            lines, code = attach.watch_report(entries, output, f"{f58(jobid)}: " if label_io else None)
            emit(lines, prog("submit"))
            exit_code = max(exit_code, code)
    return exit_code


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@click.option("-l", "--label-io", is_flag=True, help="Label each line of output with its task rank.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit, queue, requires, urgency,
        setattrs, job_name, flags, dependencies, begin_times, output, error, dry_run, label_io):
    """Submit a job and wait for it to end; exit with the job's exit code.

    Under a virtual clock the wait advances the clock; under a real clock it
    waits in wall time.
    """
    js = build_jobspec(command, ntasks, nodes, cores_per_task, gpus_per_task, exclusive, time_limit,
                       setattrs, job_name, queue, requires)
    add_dependencies(js, dependency_entries(dependencies, begin_times))
    add_output(js, output, error, label_io)
    if dry_run:
        click.echo(json.dumps(with_environment(js)))
        return
    inst = instance()
    with inst.session() as broker:
        jobid = broker.jm.submit(js, urgency=parse_urgency(urgency), flags=parse_flags(flags))
        endless = None if inst.virtual else exec_.endless_command(broker, js)
    if endless is not None:
        click.echo(f"{prog('run')}: {f58(jobid)}: {endless}", err=True)
    sys.exit(attach_job(inst, jobid, label_io=label_io))


def _job_prog():
    """flux-job's program name: run's reports come from flux job attach."""
    return prog("job")
