"""flux-lite submit / run: build a jobspec from the command line and submit it."""

import json
import sys

import click
from flux_lite.cli.common import instance
from flux_lite.cli.params import complete_queues
from flux_lite.cli.interrupt import DETACHED, attach_signals
from flux_lite.cli.output import progress
from flux_lite.cli.words import is_flux, prog

from flux_lite.errors import FluxLiteError, IdsetError, NoInstanceError, UsageError
from flux_lite.formats import constraint, fsd, jobopts, submitopts
from flux_lite.formats import shape as shapemod
from flux_lite.formats import jobspec as jobspecmod
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.cli.job_attach import attach_job, emit
from flux_lite import job_info
from flux_lite.job_manager import attach, dependency, emulate, job
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


class _OrderedOption(click.Option):
    """An option whose occurrences flux submit's argparse appends, in
    command-line order, to one list shared with other options
    (--dependency and --begin-time; --env, --env-remove and --env-file).
    Click keeps one list per option, so note the option of each occurrence
    as the parser meets it."""

    def add_to_parser(self, parser, ctx):
        super().add_to_parser(parser, ctx)
        order = ctx.meta.setdefault(_ORDER_KEY, [])
        for opt in self.opts:
            parsed = getattr(parser, "_long_opt", {}).get(opt) or getattr(parser, "_short_opt", {}).get(opt)
            if parsed is None or not callable(getattr(parsed, "process", None)):
                continue  # another click: the order falls back to one option after the other

            def process(value, state, _process=parsed.process, _name=self.name):
                order.append(_name)
                _process(value, state)

            parsed.process = process


_ORDER_KEY = "flux_lite.option_order"


def ordered_values(**lists):
    """The values of options sharing one list, in command-line order:
    (option name, value) pairs."""
    ctx = click.get_current_context(silent=True)
    order = [name for name in (ctx.meta.get(_ORDER_KEY, ()) if ctx is not None else ()) if name in lists]
    if any(order.count(name) != len(values) for name, values in lists.items()):
        order = [name for name, values in lists.items() for _ in values]
    pending = {name: iter(values) for name, values in lists.items()}
    return [(name, next(pending[name])) for name in order]


# the options every submission command takes (submit, run; batch and
# bulksubmit add theirs), in flux submit's order; the command gets them as
# one dict (JobOptions)
def job_options(f=None, *, per_task=True):
    """The job options (see JobOptions); per_task=False leaves out the
    resource options of submit and run (batch has its own)."""
    if f is None:
        return lambda g: job_options(g, per_task=per_task)
    options = [
        click.option("-B", "--bank", metavar="BANK", help="Submit a job to a specific named bank"),
        click.option("-q", "--queue", metavar="NAME", shell_complete=complete_queues,
                     help="Submit a job to a specific named queue"),
        click.option("-t", "--time-limit", metavar="MIN|FSD",
                     help="Time limit in minutes when no units provided, otherwise in Flux standard duration, "
                          "e.g. 30s, 2d, 1.5h"),
        click.option("--urgency", default="default", metavar="N",
                     help="Set job urgency (0-31), hold=0, default=16, expedite=31"),
        click.option("--job-name", metavar="NAME", help="Set an optional name for job to NAME"),
        click.option("-o", "--setopt", "setopts", multiple=True, metavar="OPT",
                     help="Set shell option OPT. An optional value is supported with OPT=VAL (default VAL=1) "
                          "(multiple use OK)"),
        click.option("-S", "--setattr", "setattrs", multiple=True, metavar="ATTR",
                     help="Set job attribute ATTR (system. prefix implied). An optional value is supported with "
                          "ATTR=VAL (default VAL=1); ^ATTR=FILE takes the JSON in FILE (multiple use OK)"),
        click.option("--add-file", "add_files", multiple=True, metavar="[NAME=]PATH",
                     help="Add a file at PATH with optional NAME (NAME:PERMS) to jobspec; NAME=DATA with "
                          "a newline adds DATA (multiple use OK)"),
        click.option("--dependency", "dependencies", multiple=True, metavar="URI", cls=_OrderedOption,
                     shell_complete=_complete_dependency, help="Set an RFC 26 dependency URI for this job"),
        click.option("--requires", "requires", multiple=True, metavar="CONSTRAINT",
                     help="Specify job constraints in RFC 35 syntax"),
        click.option("--begin-time", "begin_times", multiple=True, metavar="+FSD|TIME", cls=_OrderedOption,
                     help='Set minimum start time as offset in FSD (e.g. +1h) or an absolute TIME '
                          '(e.g. "3pm") for job'),
        click.option("--env", "env_rules", multiple=True, metavar="RULE", cls=_OrderedOption,
                     help="Control how environment variables are exported: -PATTERN removes, ^FILE reads "
                          "rules from FILE, VAR=VALUE sets, PATTERN copies (multiple use OK, in order)"),
        click.option("--env-remove", "env_removes", multiple=True, metavar="PATTERN", cls=_OrderedOption,
                     help="Remove environment variables matching PATTERN (a glob, or /REGEX/) (multiple use OK)"),
        click.option("--env-file", "env_files", multiple=True, metavar="FILE", cls=_OrderedOption,
                     help="Read a set of environment rules from FILE. (multiple use OK)"),
        click.option("--rlimit", "rlimits", multiple=True, metavar="RULE",
                     help="Control how soft resource limits are propagated to the job: -NAME (a glob) does "
                          "not propagate, NAME propagates the current limit, NAME=N|unlimited sets it "
                          "(multiple use OK, comma-separated lists OK)."),
        output_option := click.option("--output", metavar="TEMPLATE",
                     help="Write the job's standard output (and error, without --error) to TEMPLATE "
                          "({{id}}, {{name}}, {{taskid}}... are replaced)."),
        click.option("--error", metavar="TEMPLATE", help="Write the job's standard error to TEMPLATE."),
        click.option("-u", "--unbuffered", is_flag=True, help="Disable buffering of input and output"),
        click.option("--cwd", metavar="DIRECTORY", help="Set job working directory"),
        click.option("--flags", "flags", multiple=True, metavar="FLAGS",
                     help="Set comma separated list of job submission flags. Possible flags: "
                          "debug, waitable, novalidate"),
        click.option("--signal", metavar="[SIG][@TIME]",
                     help="Schedule delivery of signal SIG at a defined TIME before job expiration. "
                          "Default SIG is SIGUSR1, default TIME is 60s."),
        click.option("--dry-run", is_flag=True, help="Don't actually submit job, just emit jobspec"),
    ]
    task_options = [
        click.option("--taskmap", metavar="URI",
                     help="Select the scheme for mapping task ids to nodes as a URI (SCHEME[:VALUE]): block, "
                          "cyclic, cyclic:N, or manual:TASKMAP (default: block)"),
        # counts are checked after parsing, with flux submit's words (exit 1)
        click.option("-N", "--nodes", metavar="N", default=None, help="Number of nodes to allocate"),
        click.option("-x", "--exclusive", is_flag=True, default=None,
                     help="With -N, --nodes, allocate nodes exclusively"),
        click.option("-n", "--ntasks", metavar="N", default=None, help="Number of tasks to start"),
        click.option("-c", "--cores-per-task", metavar="N", default=None, help="Number of cores to allocate per task"),
        click.option("-g", "--gpus-per-task", metavar="N", default=None, help="Number of GPUs to allocate per task"),
        click.option("--cores", metavar="N", default=None, help="Request a total number of cores"),
        click.option("--tasks-per-node", metavar="N", default=None, help="Force number of tasks per node"),
        click.option("--tasks-per-core", metavar="N", default=None, help="Force number of tasks per core"),
        click.option("--gpus-per-node", metavar="N", default=None,
                     help="Request a number of GPUs per node with --nodes"),
        click.option("-v", "--verbose", count=True, help="Increase verbosity on stderr (multiple use OK)"),
        # (Flux's shape plugin, installed with its CLI: flux/cli/plugins/shape.py)
        click.option("--resources-shape", "resources_shape", metavar="SHAPE",
                     help="Provide an RFC 46 jobspec shape on the command line. Any other resource arguments "
                          "will be ignored."),
        click.option("--resources-json", "resources_json", metavar="FILE",
                     help="Provide a JSON file specifying the `resources` section of a jobspec."),
    ]
    if per_task:
        # (flux batch reads its script, not an input file)
        options.insert(options.index(output_option), click.option("--input", metavar="FILENAME",
                                        help="Redirect job stdin from FILENAME (flux run: an IDSET of task ranks "
                                             "that get run's standard input)."))
        options += task_options
    names = []
    for opt in reversed(options):
        f = opt(f)
        names.append(f.__click_params__[-1].name)
    option_names = frozenset(names)

    import functools

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        opts = JobOptions({k: kwargs.pop(k) for k in list(kwargs) if k in option_names})
        return f(*args, opts=opts, **kwargs)

    return wrapper


class JobOptions(dict):
    """The job options of one command line, by name (see job_options)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _value_error(fn, *args):
    try:
        return fn(*args)
    except (ValueError, OSError) as exc:
        raise FluxLiteError(str(exc)) from None


def _file_entry(arg):
    """--add-file=ARG as (name, RFC 37 file object)."""
    name, data, perms = submitopts.add_file_arg(arg)
    encoding = "utf-8" if "\n" in data else None
    try:
        return name, submitopts.file_entry(data, perms, encoding)
    except OSError as exc:
        raise ValueError(f"--add-file={arg}: {exc}") from None


def build_jobspec(command, opts, extra_env=None):
    """The jobspec of COMMAND and the job options, as flux submit builds it:
    per-task (-n, -c, -g) or per-resource (--cores, --tasks-per-node,
    --tasks-per-core, --gpus-per-node) resources, then the options applied
    in Flux's order (environment, signal, taskmap, dependencies,
    constraints, shell options, attributes, files). extra_env: variables
    the job gets beside its rules (FLUX_JOB_CC)."""
    import os

    command = list(command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise FluxLiteError("job command and arguments are missing")
    shaped = opts.get("resources_shape") or opts.get("resources_json")
    if shaped:
        # (the shape plugin's preinit: one node, whose resources are replaced)
        opts = JobOptions(dict(opts, nodes="1"))
    counts = {name: _count(opts.get(name), name.replace("_", "-"))
              for name in ("ntasks", "nodes", "cores", "cores_per_task", "gpus_per_task", "tasks_per_node",
                           "tasks_per_core", "gpus_per_node")}
    duration = parse_time_limit(opts.get("time_limit"))
    cwd = opts.get("cwd")
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
    exclusive = opts.get("exclusive")
    if counts["tasks_per_node"] is not None and counts["tasks_per_core"] is not None:
        raise FluxLiteError("Do not specify both the number of tasks per node and per core")
    per_type = per_count = None
    if counts["tasks_per_node"] is not None:
        if counts["tasks_per_node"] < 1:
            raise FluxLiteError("--tasks-per-node must be >= 1")
        per_type, per_count = "node", counts["tasks_per_node"]
    elif counts["tasks_per_core"] is not None:
        if counts["tasks_per_core"] < 1:
            raise FluxLiteError("--tasks-per-core must be >= 1")
        per_type, per_count = "core", counts["tasks_per_core"]
    if counts["gpus_per_node"] and not counts["nodes"]:
        raise FluxLiteError("--gpus-per-node requires --nodes")
    if per_type is not None or counts["gpus_per_node"] is not None or counts["cores"] is not None:
        if counts["ntasks"] is not None or counts["cores_per_task"] is not None or counts["gpus_per_task"]:
            raise FluxLiteError("Per-resource options can't be used with per-task options. (See --help for details)")
        if counts["nodes"] and counts["cores"] is None:
            exclusive = True
        js = _value_error(jobopts.per_resource, command, counts["cores"], counts["nodes"], per_type, per_count,
                          counts["gpus_per_node"], bool(exclusive))
        system = js["attributes"]["system"]
        if duration is not None:
            system["duration"] = duration
        if cwd is not None:
            system["cwd"] = cwd
        for key, value in (("job", {"name": opts.get("job_name")}), ("queue", opts.get("queue")),
                           ("bank", opts.get("bank"))):
            if (value.get("name") if key == "job" else value) is not None:
                system[key] = value
    else:
        ntasks, nodes = counts["ntasks"], counts["nodes"]
        js = jobspecmod.build(
            command,
            # no -n (or -n0): one task per node with -N, else one task
            ntasks=ntasks or (None if nodes is not None else 1),
            nnodes=nodes,
            cores_per_task=counts["cores_per_task"] or 1,
            gpus_per_task=counts["gpus_per_task"] or 0,
            duration=duration,
            name=opts.get("job_name"),
            cwd=cwd,
            exclusive=exclusive,
            queue=opts.get("queue"),
            bank=opts.get("bank"),
            check=False,
        )
    stdin = input_file(opts.get("input"))
    if stdin is not None:
        jobopts.set_shell_option(js, "input.stdin", {"type": "file", "path": stdin})
    add_output(js, opts.get("output"), opts.get("error"), opts.get("label_io", False))
    if opts.get("unbuffered"):
        jobopts.set_unbuffered(js)
    rules = environment_rules(opts)
    env, expand = _value_error(submitopts.filtered_environment, rules)
    env.update(extra_env or {})
    if opts.get("dry_run") or rules or emulate.reads_environment(js):
        # kept (in J) only where it is read: a job's command that reads it,
        # or rules that say what it is; thousands of copies of the whole
        # environment would make every submission cost more
        jobopts.set_environment(js, env)
    if expand:
        jobopts.set_shell_option(js, "env-expand", expand)
    if opts.get("dry_run") or opts.get("rlimits"):
        # as the environment: kept only where asked for or shown
        jobopts.set_shell_option(js, "rlimit", _value_error(submitopts.filtered_rlimits, opts.get("rlimits")))
    if opts.get("signal") is not None:
        jobopts.set_shell_option(js, "signal", _value_error(submitopts.signal_option, opts["signal"]))
    if opts.get("taskmap") is not None:
        jobopts.set_shell_option(js, "taskmap", _value_error(submitopts.uri_entry, opts["taskmap"], "taskmap"))
    constraints = _constraints(opts.get("requires") or ())
    if constraints is not None:
        js["attributes"]["system"]["constraints"] = constraints
    for keyval in opts.get("setopts") or ():
        key, value = _value_error(submitopts.parse_keyval, "--setopt", keyval)
        _value_error(jobopts.set_shell_option, js, key, value)
    setattrs = []
    for keyval in opts.get("setattrs") or ():
        if keyval.startswith("^"):
            setattrs.append(_value_error(submitopts.parse_keyval, "--setattr", keyval))
        else:
            setattrs.append(keyval)
    jobspecmod.apply_setattrs(js, setattrs)
    for arg in opts.get("add_files") or ():
        name, ref = _value_error(_file_entry, arg)
        js["attributes"]["system"].setdefault("files", {})[name] = ref
    if shaped:
        js["resources"] = shaped_resources(opts.get("resources_shape"), opts.get("resources_json"))
    if not opts.get("dry_run"):
        # (flux submit --dry-run prints what Python's Jobspec accepts; ingest is stricter)
        jobspecmod.validate(js)
    return js


def shaped_resources(shape, json_file):
    """The resources --resources-shape (RFC 46) or --resources-json give
    (a file of a jobspec, whose resources are taken, or of the list)."""
    if shape and json_file:
        raise FluxLiteError("`--resources-shape` and `--resources-json` are mutually exclusive arguments. "
                            "Use only one.")
    if shape:
        return _value_error(shapemod.parse, shape)
    try:
        with open(json_file, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise FluxLiteError(f"{json_file}: {exc.strerror}") from None
    except ValueError as exc:
        raise FluxLiteError(f"{json_file}: {exc}") from None
    if isinstance(data, dict):
        if "resources" not in data:
            raise FluxLiteError(f"{json_file}: no resources")
        return data["resources"]
    return data


def input_file(value):
    """--input: a file the job shell reads (None for no option, or for an
    idset of task ranks, which flux run feeds from its own standard input)."""
    if value is None:
        return None
    try:
        IDset.parse(value)
    except IdsetError:
        return value
    return None


def environment_rules(opts):
    """--env, --env-remove (-PATTERN) and --env-file (^FILE) rules, in order."""
    prefix = {"env_rules": "", "env_removes": "-", "env_files": "^"}
    return [prefix[name] + value for name, value in ordered_values(
        env_rules=opts.get("env_rules") or (), env_removes=opts.get("env_removes") or (),
        env_files=opts.get("env_files") or ())]


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
    entries = []
    for _kind, uri in ordered_values(dependencies=uris, begin_times=begins):
        entry = dependency.parse_uri(uri)
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
    """--flags (repeatable, each a comma list)."""
    if not isinstance(flags, str):
        flags = ",".join(flags)
    try:
        return job.parse_flags(flags)
    except ValueError as exc:
        raise FluxLiteError(f"--flags: Unknown flag {exc}") from None


def bulk_options(f):
    """The options of submit and bulksubmit beyond the job options."""
    options = [
        click.option("--cc", metavar="IDSET",
                     help="Replicate job for each ID in IDSET. (FLUX_JOB_CC=ID will be set for each job "
                          "submitted; {cc} in the command is replaced)"),
        click.option("--bcc", metavar="IDSET",
                     help="Replicate job for each ID in IDSET. (FLUX_JOB_CC will not be set)"),
        click.option("--quiet", is_flag=True, help="Do not print jobid to stdout on submission"),
        click.option("--wait-event", metavar="NAME", help="Wait for event NAME on each job before exiting."),
        click.option("--wait", is_flag=True, help="Wait for the jobs to end; exit with the largest exit code."),
        click.option("--watch", is_flag=True, help="Watch the jobs' output (implies --wait; test jobs have none)."),
        click.option("-l", "--label-io", is_flag=True, help="With --watch, label each line of output with its job id."),
        click.option("--log", metavar="FILE",
                     help="Print program log messages (e.g. submitted jobid) to FILE instead of terminal"),
        click.option("--log-stderr", metavar="FILE",
                     help="Separate stderr messages into FILE instead of terminal or logfile destination"),
        click.option("--progress", "progress_", is_flag=True,
                     help="Show progress of job submission or completion (with --wait)"),
        click.option("--jps", is_flag=True, help="With --progress, show job throughput"),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def cc_ids(cc, bcc):
    """The copies of --cc (FLUX_JOB_CC set) or --bcc: ([ids], with FLUX_JOB_CC);
    [None] without either."""
    if cc is not None and bcc is not None:
        raise FluxLiteError("Do not specify both --cc and --bcc")
    text = cc if cc is not None else bcc
    if text is None:
        return [None], False
    try:
        ids = IDset.parse(text)
    except ValueError:
        raise FluxLiteError(f"IDset(): Invalid argument: {text}") from None
    if not ids:
        raise FluxLiteError(f"IDset(): Invalid argument: {text}")  # an empty --cc submits nothing
    if len(ids) > MAX_CC:
        opt = "--cc" if cc is not None else "--bcc"
        raise UsageError(f"{opt}: {len(ids)} copies is more than the limit of {MAX_CC} per command")
    return list(ids), cc is not None


def job_copies(command, opts, copies, set_cc, dep_entries):
    """The jobspecs of COMMAND's copies ({cc} replaced; FLUX_JOB_CC in the
    environment when set_cc)."""
    specs = []
    templated = any("{cc}" in arg for arg in command)
    for ccid in copies:
        if specs and not templated:
            # identical copies but for FLUX_JOB_CC: built (and validated) once
            first = specs[0]
            if "environment" not in first["attributes"]["system"] or not set_cc:
                specs.append(first)
                continue
            system = dict(first["attributes"]["system"])
            system["environment"] = dict(system["environment"], FLUX_JOB_CC=str(ccid))
            specs.append({**first, "attributes": {**first["attributes"], "system": system}})
            continue
        cmd = [arg.replace("{cc}", str(ccid)) for arg in command] if ccid is not None else list(command)
        extra = {"FLUX_JOB_CC": str(ccid)} if ccid is not None and set_cc else None
        specs.append(add_dependencies(build_jobspec(cmd, opts, extra), dep_entries))
    return specs


class LogFiles:
    """Where each job's id and messages go (--log, --log-stderr), as Flux's
    submit opens them: FILE once per name (truncated, line buffered), {cc}
    in a name replaced by the job's cc; the terminal without them."""

    def __init__(self):
        self._files = {}

    def open(self, name):
        if name is None:
            return None
        f = self._files.get(name)
        if f is None:
            try:
                f = self._files[name] = open(name, "w", buffering=1, encoding="utf-8")  # noqa: SIM115 (closed by close())
            except OSError as exc:
                raise FluxLiteError(f"{name}: {exc.strerror}") from None
        return f

    def targets(self, log, log_stderr, ccid=None):
        """(stdout, stderr) of one job: a file, or None for the terminal."""
        def name(text):
            return text.replace("{cc}", str(ccid)) if text is not None and ccid is not None else text
        out = self.open(name(log))
        return out, self.open(name(log_stderr)) or out

    def close(self):
        for f in self._files.values():
            f.close()
        self._files.clear()


def check_progress(progress_):
    """--progress: a bar on a terminal; Flux's warning, and none, elsewhere."""
    if progress_ and not sys.stdout.isatty():
        who = "flux" if is_flux() else prog("submit")
        click.echo(f"{who}: WARNING: stdout is not a tty. Ignoring --progress option", err=True)
        return False
    return progress_


def submit_all(specs, opts, quiet, wait_event, wait, watch, label_io, targets=None, bar=False, labels=None):
    """Submit the jobspecs in one transaction, print their ids (unless
    quiet), and wait as asked; returns the exit code. targets: per job,
    (stdout, stderr) files for its id and messages (None: the terminal);
    bar: a progress bar on stdout (--progress); labels: per job, what
    prefixes its error (`cc=N: `, with --cc or --bcc)."""
    urgency_value = parse_urgency(opts.urgency)
    flagbits = parse_flags(opts.flags)
    inst = instance()
    try:
        with inst.session() as broker:
            ids = []
            with progress(len(specs), "submitting", stream=sys.stdout if bar else None,
                          minimum=1 if bar else None) as advance:
                for js in specs:
                    ids.append(broker.jm.submit(js, urgency=urgency_value, flags=flagbits))
                    broker.run()
                    advance(1)
    except FluxLiteError as exc:
        _refused(exc, [err for _out, err in targets] if targets else [None] * len(specs), labels)
    if not quiet:
        if targets is None:
            click.echo("\n".join(f58(i) for i in ids))
        else:
            for jobid, (out, _err) in zip(ids, targets):
                click.echo(f58(jobid), file=out)
    if wait or watch or wait_event:
        return _wait_all(inst, ids, wait_event if wait_event and not (wait or watch) else "clean", watch,
                         label_io, targets, opts.get("verbose") or 0)
    return 0


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@bulk_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def submit(command, opts, cc, bcc, quiet, wait_event, wait, watch, label_io, log, log_stderr, progress_, jps):
    """Submit a job to run COMMAND; print its id (f58)."""
    opts["label_io"] = label_io
    if opts.input is not None and input_file(opts.input) is None:
        # (Flux's message, from its logger named flux)
        click.echo(f"{'flux' if is_flux() else 'flux-lite submit'}: ERROR: per-task input not supported for submit",
                   err=True)
        sys.exit(1)
    parse_urgency(opts.urgency)
    parse_flags(opts.flags)
    dep_entries = dependency_entries(opts.dependencies, opts.begin_times)
    copies, set_cc = cc_ids(cc, bcc)
    specs = job_copies(command, opts, copies, set_cc, dep_entries)
    if opts.dry_run:
        # as flux submit: the first job's jobspec only (it exits there)
        click.echo(json.dumps(specs[0], ensure_ascii=False))
        return
    bar = check_progress(progress_)
    files = LogFiles()
    try:
        targets = [files.targets(log, log_stderr, ccid) for ccid in copies] if log or log_stderr else None
        labels = [f"cc={ccid}: " for ccid in copies] if copies[0] is not None else None
        code = submit_all(specs, opts, quiet, wait_event, wait, watch, label_io, targets, bar, labels)
    finally:
        files.close()
    if wait or watch or wait_event:
        sys.exit(code)


def _refused(exc, errs, labels=None):
    """A submission the job manager refused (all of it: one transaction).
    As `flux`, flux submit prints the RPC's error as Python shows an
    OSError (`[Errno 22] ...`), for each job (`cc=N: ` before it), to its
    --log-stderr/--log file or the terminal (errs: per job, a file or None);
    flux-lite's own words say it once."""
    if exc.errno and not isinstance(exc, UsageError) and is_flux():
        for n, err in enumerate(errs if labels else errs[:1]):
            click.echo(f"{labels[n] if labels else ''}[Errno {exc.errno}] {exc}", err=err is None, file=err)
        sys.exit(1)
    if errs and errs[0] is not None:
        click.echo(f"{prog('submit')}: ERROR: {exc}", file=errs[0])
        sys.exit(1)
    raise exc


def _wait_all(inst, ids, name, watch=False, label_io=False, targets=None, verbose=0):
    """Wait for event NAME (or the end) of each job, as flux submit's job
    watcher does: fatal exceptions on stderr; the largest exit code."""
    exit_code = 0
    t0 = None
    with attach_signals(prog("submit"), ids) as intr:
        for n, jobid in enumerate(ids):
            try:
                entries = inst.wait(lambda b, j=jobid: intr.check(b) or job_info.watched(b, j, name))
            except (WaitTimeout, WaitStalled):
                raise FluxLiteError(f"wait-event: event '{name}' cannot arrive under the virtual clock") from None
            if entries is DETACHED:
                return 1
            output = None
            if watch:
                with inst.session() as broker:
                    output = attach.job_output(broker, jobid)
            if t0 is None and entries:
                t0 = entries[0]["timestamp"]  # (the first job's submission: the watcher's start)
            lines, code = attach.watch_report(entries, output, f"{f58(jobid)}: " if label_io else None,
                                              verbose, t0, f58(jobid))
            out, err = targets[n] if targets else (None, None)
            emit(lines, prog("submit"), out, err)
            exit_code = max(exit_code, code)
    return exit_code


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@click.option("-l", "--label-io", is_flag=True, help="Label each line of output with its task rank.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run(command, opts, label_io):
    """Submit a job and wait for it to end; exit with the job's exit code.

    Under a virtual clock the wait advances the clock; under a real clock it
    waits in wall time.
    """
    opts["label_io"] = label_io
    js = build_jobspec(command, opts)
    add_dependencies(js, dependency_entries(opts.dependencies, opts.begin_times))
    if opts.dry_run:
        click.echo(json.dumps(js, ensure_ascii=False))
        return
    inst = instance()
    data = None
    if emulate.reads_input(js) and input_file(opts.input) is None:
        # what flux run forwards to the tasks' standard input (all, or the --input idset)
        data = sys.stdin.read()
    with inst.session() as broker:
        jobid = broker.jm.submit(js, urgency=parse_urgency(opts.urgency), flags=parse_flags(opts.flags))
        if data is not None:
            exec_.write_input(broker, jobid, data, opts.input if opts.input is not None else "all")
        endless = None if inst.virtual else exec_.endless_command(broker, js)
    if endless is not None:
        click.echo(f"{prog('run')}: {f58(jobid)}: {endless}", err=True)
    sys.exit(attach_job(inst, jobid, label_io=label_io))


def _job_prog():
    """flux-job's program name: run's reports come from flux job attach."""
    return prog("job")
