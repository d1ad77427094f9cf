"""flux-lite batch / alloc / bulksubmit: a batch script's job (the script
in its jobspec, as Flux records it), the interactive allocation flux-lite
cannot give, and one job per set of inputs."""

import itertools
import json
import random
import re
import shlex
import stat
import sys

import click
from flux_lite.cli.submit import (
    add_dependencies,
    build_jobspec,
    LogFiles,
    bulk_options,
    check_progress,
    cc_ids,
    dependency_entries,
    job_copies,
    job_options,
    parse_flags,
    parse_urgency,
    submit_all,
)

from flux_lite.errors import FluxLiteError
from flux_lite.formats import jobopts

# RFC 36 submission directives: a comment line holding "flux:" or "FLUX:"
_DIRECTIVE = re.compile(r"^([^\w]*)((?:flux|FLUX):)(.*)$")


class _RawArgsCommand(click.Command):
    """Keeps the arguments it was given (batch re-reads them after its
    script's directives)."""

    def parse_args(self, ctx, args):
        ctx.meta.setdefault("flux_lite.raw_args", list(args))
        return super().parse_args(ctx, args)


def script_directives(script, name):
    """The arguments of a script's RFC 36 directives (``#FLUX: -n2``...),
    in the comment block that opens it (errors name the script)."""
    args = []
    for lineno, line in enumerate(script.splitlines()[1:], 2):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        m = _DIRECTIVE.match(line)
        if m is None or "#" not in m.group(1):
            continue
        try:
            words = shlex.split(m.group(3), comments=True)
        except ValueError as exc:
            raise FluxLiteError(f"{name}: line {lineno}: {m.group(3)}: {exc}") from None
        if words and not words[0].startswith("-"):
            raise FluxLiteError(f"{name}: line {lineno}: Unknown directive: {m.group(3)}")
        args.extend(words)
    return args


def _read_script(script_args, wrap):
    if script_args and script_args[0] == "--":
        script_args = script_args[1:]
    if wrap:
        body = " ".join(script_args) + "\n" if script_args else sys.stdin.read()
        return "#!/bin/sh\n" + body, script_args
    name = script_args[0] if script_args else "stdin"
    try:
        if script_args:
            with open(script_args[0], encoding="utf-8") as fp:
                text = fp.read()
        else:
            text = sys.stdin.read()
    except UnicodeError:
        raise FluxLiteError(f"{name} does not appear to be a script, or failed to encode as utf-8") from None
    except OSError as exc:
        raise FluxLiteError(str(exc)) from None
    return text, script_args


@click.command(cls=_RawArgsCommand, context_settings={"allow_interspersed_args": False})
@job_options(per_task=False)
@click.option("-n", "--nslots", metavar="N", default=None,
              help="Number of total resource slots requested (each -c cores and -g GPUs)")
@click.option("-c", "--cores-per-slot", metavar="N", default="1", help="Number of cores to allocate per slot")
@click.option("-g", "--gpus-per-slot", metavar="N", default=None, help="Number of GPUs to allocate per slot")
@click.option("-N", "--nodes", metavar="N", default=None,
              help="Distribute allocated resource slots across N individual nodes")
@click.option("-x", "--exclusive", is_flag=True, default=False, help="With -N, --nodes, allocate nodes exclusively")
@click.option("--conf", "confs", multiple=True, metavar="CONF",
              help="Set configuration for the child instance: KEY=VAL, JSON or TOML text, or a .toml/.json file")
@click.option("--broker-opts", "broker_opts", multiple=True, metavar="OPTS", help="Pass options to flux brokers")
@click.option("--wrap", is_flag=True, help="Wrap arguments or stdin in a /bin/sh script")
@click.option("--quiet", is_flag=True, help="Do not print jobid to stdout on submission")
@click.argument("script", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def batch(ctx, script, opts, nslots, cores_per_slot, gpus_per_slot, nodes, exclusive, confs, broker_opts, wrap,
          quiet):
    """Submit a batch SCRIPT (or standard input) as a job: a Flux instance
    that runs it. The script travels in the jobspec (files.script)."""
    text, script_args = _read_script(list(script), wrap)
    directives = [] if ctx.meta.get("flux_lite.directives_done") else script_directives(
        text, script_args[0] if script_args and not wrap else "stdin")
    if directives:
        # the script's directives first, the command line's options over them
        ctx.meta["flux_lite.directives_done"] = True
        raw = ctx.meta.get("flux_lite.raw_args", [])
        sub = ctx.command.make_context(ctx.info_name, directives + raw, parent=ctx.parent)
        sub.meta["flux_lite.directives_done"] = True
        with sub:
            return sub.command.invoke(sub)
    name = opts.get("job_name") or (script_args[0] if script_args else "batch")
    if opts.get("resources_shape") or opts.get("resources_json"):
        nodes = "1"  # (the shape plugin's preinit: the resources are replaced)
    counts = {}
    for key, value in (("nslots", nslots), ("cores-per-slot", cores_per_slot), ("gpus-per-slot", gpus_per_slot),
                       ("nodes", nodes)):
        try:
            counts[key] = int(value) if value is not None else None
        except ValueError:
            raise click.BadParameter(f"invalid int value: '{value}'", ctx=ctx,
                                     param=next(p for p in ctx.command.params
                                                if p.name == key.replace("-", "_"))) from None
    if not counts["nslots"]:
        if not counts["nodes"]:
            raise FluxLiteError("Number of slots to allocate must be specified")
        counts["nslots"] = counts["nodes"]
        exclusive = True
    if not text.startswith("#!"):
        raise FluxLiteError(f"{name} does not appear to start with '#!'")
    conf = _conf(confs)
    brokers = [o for item in broker_opts for o in item.split(",")]
    if conf is not None:
        brokers.append("-c{{tmpdir}}/conf.json")
    command = ["flux", "broker", *brokers, "{{tmpdir}}/script", *script_args[1:]]
    opts.update(ntasks=counts["nslots"], cores_per_task=counts["cores-per-slot"],
                gpus_per_task=counts["gpus-per-slot"], nodes=counts["nodes"], exclusive=exclusive or None,
                job_name=name, output=opts.get("output") or "flux-{{id}}.out", label_io=False)
    parse_urgency(opts.urgency)
    parse_flags(opts.flags)
    js = build_jobspec(command, opts)
    # as Flux's nested instance: one broker per node, no MPI, no exit timeout;
    # the script (and the configuration) come first among the files
    for key, value in (("per-resource.type", "node"), ("mpi", "none"), ("exit-timeout", "none")):
        jobopts.set_shell_option(js, key, value)
    system = js["attributes"]["system"]
    files = {"script": {"mode": 0o700 | stat.S_IFREG, "data": text, "encoding": "utf-8"}}
    if conf is not None:
        files["conf.json"] = {"mode": 0o600 | stat.S_IFREG, "data": conf}
    files.update(system.get("files") or {})
    system["files"] = files
    add_dependencies(js, dependency_entries(opts.dependencies, opts.begin_times))
    if opts.dry_run:
        click.echo(json.dumps(js, ensure_ascii=False))
        return
    submit_all([js], opts, quiet, None, False, False, False)


def _conf(confs):
    """--conf, applied in turn: KEY=VAL (VAL as JSON, else a string), a
    .toml/.json file, or JSON/TOML text (with a newline)."""
    if not confs:
        return None
    import tomllib

    config: dict = {}
    for value in confs:
        if "\n" in value:
            try:
                doc = json.loads(value)
            except ValueError:
                try:
                    doc = tomllib.loads(value)
                except tomllib.TOMLDecodeError:
                    raise FluxLiteError("--conf: failed to parse multiline as TOML or JSON") from None
            _merge(config, doc)
        elif "=" in value:
            key, _, text = value.partition("=")
            try:
                val = json.loads(text)
            except ValueError:
                val = text
            jobopts.set_path(config, key, val)
        elif value.endswith((".toml", ".json")):
            try:
                with open(value, "rb") as fp:
                    doc = tomllib.load(fp) if value.endswith(".toml") else json.load(fp)
            except OSError as exc:
                raise FluxLiteError(f"--conf: {exc}") from None
            except (ValueError, tomllib.TOMLDecodeError) as exc:
                raise FluxLiteError(f"--conf: parse error: {value}: {exc}") from None
            _merge(config, doc)
        else:
            raise FluxLiteError(f"--conf: named config '{value}' not found")
    return config


def _merge(into, doc):
    for key, value in doc.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def alloc(args):
    """Allocate resources and start an interactive Flux instance: flux-lite cannot."""
    raise FluxLiteError("flux-lite runs no processes, so it cannot start an interactive instance in an "
                        "allocation: submit a batch script (flux-lite batch), or a job (flux-lite submit, run)")


@click.command(context_settings={"allow_interspersed_args": False})
@job_options
@bulk_options
@click.option("--shuffle", is_flag=True, help="Shuffle list of commands before submission")
@click.option("--sep", default="\n", metavar="STRING",
              help="Set the input argument separator. To split on whitespace, use --sep=none. The default is newline.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def bulksubmit(command, opts, cc, bcc, quiet, wait_event, wait, watch, label_io, log, log_stderr, progress_, jps,
               shuffle, sep):
    """Submit one job per set of inputs, as xargs would run a command:
    inputs from standard input (split at --sep), or from ::: lists on the
    command line (every combination; :::: FILE reads a list from FILE;
    :::+ links a list to the one before); {} (or {0}, {1}...) in the command
    and the options' values is replaced by the inputs, {seq} and {seq1} by
    the job's sequence number."""
    opts["label_io"] = label_io
    sep = bytes(sep, "utf-8").decode("unicode_escape")
    if sep == "":
        raise FluxLiteError("empty separator")  # (Python's split refuses it; Flux says so)
    template, inputs = _inputs(list(command), None if sep.lower() == "none" else sep)
    if shuffle:
        random.shuffle(inputs)
    if not inputs:
        raise FluxLiteError("no jobs provided for bulk submission")
    parse_urgency(opts.urgency)
    parse_flags(opts.flags)
    specs = []
    logs = []  # per job, its --log and --log-stderr names ({} replaced)
    opts["log"], opts["log_stderr"] = log, log_stderr
    for seq, values in enumerate(inputs):
        cmd, job_opts, changed = _expand(template, opts, values, seq)
        if opts.dry_run or opts.get("verbose"):
            click.echo("bulksubmit: submit " + " ".join(changed + cmd))
        if opts.dry_run:
            continue
        copies, set_cc = cc_ids(cc, bcc)
        specs.extend(job_copies(cmd, job_opts, copies, set_cc,
                                dependency_entries(job_opts.dependencies, job_opts.begin_times)))
        logs.extend((job_opts.get("log"), job_opts.get("log_stderr"), ccid) for ccid in copies)
    if opts.dry_run:
        return
    bar = check_progress(progress_)
    files = LogFiles()
    try:
        targets = [files.targets(*names) for names in logs] if log or log_stderr else None
        labels = [f"cc={ccid}: " for _log, _err, ccid in logs] if cc is not None or bcc is not None else None
        code = submit_all(specs, opts, quiet, wait_event, wait, watch, label_io, targets, bar, labels)
    finally:
        files.close()
    if wait or watch or wait_event:
        sys.exit(code)


def _inputs(command, sep):
    """(the command template, the list of input tuples) of bulksubmit's
    command line, reading standard input when it gives no ::: list."""
    parts = [[]]
    for arg in command:
        if arg.startswith(":::"):
            parts.append([arg])
        else:
            parts[-1].append(arg)
    template = parts[0] or ["{}"]
    lists, links = [], []
    for part in parts[1:]:
        kind, values = part[0], part[1:]
        if kind == "::::" or kind == "::::+":
            if len(values) != 1:
                raise FluxLiteError("Multiple args not allowed after ::::")
            try:
                with (open(values[0], encoding="utf-8") if values[0] != "-" else sys.stdin) as fp:
                    values = [v for v in fp.read().split(sep) if v]
            except OSError as exc:
                raise FluxLiteError(str(exc)) from None
        if kind.endswith("+"):
            links.append((len(lists) + len(links), values))
        elif kind in (":::", "::::"):
            lists.append(values)
        else:
            raise FluxLiteError(f"unknown input separator {kind}")
    if not lists:
        lists = [[v for v in sys.stdin.read().split(sep) if v]]
    inputs = [list(combo) for combo in itertools.product(*lists)]
    for index, values in links:
        cycle = itertools.cycle(values or [""])
        for combo in inputs:
            combo.insert(index, next(cycle))
    return template, inputs


# the options whose values bulksubmit formats, with their spelling on its report line
_MUTABLE = (("queue", "-q"), ("bank", "-B"), ("ntasks", "-n"), ("nodes", "-N"), ("cores_per_task", "-c"),
            ("gpus_per_task", "-g"), ("cores", "--cores="), ("tasks_per_node", "--tasks-per-node="),
            ("tasks_per_core", "--tasks-per-core="), ("gpus_per_node", "--gpus-per-node="), ("time_limit", "-t"),
            ("env_rules", "--env="), ("env_files", "--env-file="), ("env_removes", "--env-remove="),
            ("urgency", "--urgency="), ("setopts", "-o "), ("setattrs", "--setattr="), ("job_name", "--job-name="),
            ("output", "--output="), ("error", "--error="), ("dependencies", "--dependency="),
            ("taskmap", "--taskmap="), ("requires", "--requires="), ("cwd", "--cwd="), ("flags", "--flags="),
            ("begin_times", "--begin-time="), ("signal", "--signal="), ("log", "--log="),
            ("log_stderr", "--log-stderr="))


def _expand(template, opts, values, seq):
    """The command and the options of one set of inputs ({} replaced,
    mustache tags kept), and the report of what changed."""
    def fmt(text):
        kept = text.replace("{{", "\0stache\0").replace("}}", "\0/stache\0")
        try:
            out = kept.format(*values, seq=seq, seq1=seq + 1, cc="{cc}")
        except (IndexError, KeyError) as exc:
            raise FluxLiteError(f"Invalid replacement string in command: '{text}' ({exc})") from None
        except ValueError as exc:  # a lone brace: str.format's words, as flux-bulksubmit reports them
            raise FluxLiteError(str(exc)) from None
        return out.replace("\0stache\0", "{{").replace("\0/stache\0", "}}")

    cmd = [fmt(arg) for arg in template]
    new = type(opts)(opts)
    changed = []
    for name, spelling in _MUTABLE:
        value = opts.get(name)
        if isinstance(value, str):
            new[name] = fmt(value)
        elif isinstance(value, (list, tuple)) and value:
            new[name] = type(value)(fmt(v) for v in value)
        else:
            continue
        if new[name] != value and new[name]:
            changed.append(f"{spelling}{new[name] if isinstance(new[name], str) else list(new[name])}")
    return cmd, new, changed
