"""flux-lite resource: list, info, status, drain and undrain."""

import contextlib
import errno
import json
import os
import sys

import click
from flux_lite.cli import listing
from flux_lite.cli._complete import complete_targets
from flux_lite.cli.common import instance, read_session, session
from flux_lite.cli.output import emit
from flux_lite.cli.params import FSD
from flux_lite.cli.params import complete_queues
from flux_lite.cli.listing import format_option, listing_options
from flux_lite.cli.output import color_option, use_color
from flux_lite.cli.words import echo_error, info

from flux_lite import admin
from flux_lite.errors import FluxLiteError, FormatError, UsageError
from flux_lite.formats import eventlog
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.formats.outputformat import without_fields
from flux_lite.kvs import KVSError
from flux_lite.listing import resources as res_listing
from flux_lite.listing.resources import COLOR_FIELDS


def _fields(listing, fmt):
    try:
        return listing.fields(fmt)
    except ValueError:
        return ()  # reported when the rows are rendered


@click.group()
def resource():
    """Resource commands (as flux resource)."""


def _input_options(f):
    """-i/--include, and the hidden --from-stdin and --config-file (flux resource's test inputs)."""
    for option in reversed([
        click.option("-i", "--include", metavar="TARGETS",
                     help="Include only specified targets in output set. TARGETS may be provided as an "
                          "idset or hostlist."),
        click.option("--from-stdin", is_flag=True, hidden=True,
                     help="Read the scheduler's resource-status payload from stdin instead of the instance."),
        click.option("--config-file", metavar="FILE", hidden=True,
                     help="With --from-stdin: the JSON config whose queues -q names."),
    ]):
        f = option(f)
    return f


def _skip_options(f):
    for option in reversed([
        click.option("--skip-empty", is_flag=True, help="Skip empty lines. This is the default with -i, --include."),
        click.option("--no-skip-empty", is_flag=True, help="Do not skip empty lines, even with --include."),
    ]):
        f = option(f)
    return f


@resource.command("list")
@click.option("-s", "--states", default="free,allocated,down", metavar="STATES",
              help="Comma-separated states: free, allocated, down, up, all.")
@click.option("--from-sched", is_flag=True,
              help="Ask the scheduler instead of the job manager (as FLUX_RESOURCE_LIST_RPC=sched.resource-status).")
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
@_input_options
@_skip_options
@listing_options(json_help="Print JSON instead of a table.", formats="flux_lite.listing.resources:RESOURCE_LIST")
def resource_list(states, from_sched, queues, include, from_stdin, config_file, skip_empty, no_skip_empty,
                  no_header, fmt, as_json):
    """Show free, allocated and down resources."""
    _list(states, from_sched, queues, no_header, fmt, as_json, include=include, from_stdin=from_stdin,
          config_file=config_file, skip_empty=skip_empty or (include is not None and not no_skip_empty))


@resource.command("info")
@click.option("-s", "--states", default="all", metavar="STATE,...",
              help="Show output only for resources in given states (default all).")
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
@_input_options
@_skip_options
def resource_info(states, queues, include, from_stdin, config_file, skip_empty, no_skip_empty):
    """Summarise resources on one line: N Nodes, N Cores, N GPUs."""
    _list(states, False, queues, True, "{nnodes} Nodes, {ncores} Cores, {ngpus} GPUs", False, include=include,
          from_stdin=from_stdin, config_file=config_file,
          skip_empty=skip_empty or (include is not None and not no_skip_empty))


@resource.command("R")
@click.option("-s", "--states", default="all", metavar="STATE,...",
              help="Emit R for resources in the given states (default all).")
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
@_input_options
def resource_R(states, queues, include, from_stdin, config_file):
    """Emit R for the resources in the given states (all by default)."""
    with _status_source(from_stdin, config_file, "job-manager") as (broker, status, cfg):
        status = res_listing.listed_status(broker, status, cfg, _queue_names(queues), include)
        click.echo(res_listing.R_of_states(status, [s for s in states.split(",") if s]).to_json())


def _queue_names(queues):
    return [q for item in queues for q in item.split(",") if q]


@contextlib.contextmanager
def _status_source(from_stdin, config_file, source):
    """(broker, status, config) of the listing: the instance's, or with
    --from-stdin the payload on stdin (no broker) and --config-file's config."""
    if not from_stdin:
        with read_session() as broker:
            yield broker, None, None
        return
    text = sys.stdin.read()
    try:
        doc = json.loads(text) if text.strip() else None
    except ValueError as exc:
        raise FluxLiteError(f"stdin: {exc}") from None
    yield None, doc, _config_file(config_file)


def _config_file(path):
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}") from None
    except ValueError as exc:
        raise FluxLiteError(f"{path}: {exc}") from None


def _list(states, from_sched, queues, no_header, fmt, as_json, include=None, from_stdin=False, config_file=None,
          skip_empty=False):
    fmt = listing.format_string(res_listing.RESOURCE_LIST, fmt)
    source = "sched" if from_sched or os.environ.get("FLUX_RESOURCE_LIST_RPC") == "sched.resource-status" \
        else "job-manager"
    with _status_source(from_stdin, config_file, source) as (broker, doc, cfg):
        rows = res_listing.list_rows(broker, [s for s in states.split(",") if s], source=source,
                                     fields=_fields(res_listing.RESOURCE_LIST, fmt), queues=_queue_names(queues),
                                     include=include,
                                     status=res_listing.status_of_input(doc) if broker is None else None, cfg=cfg)
    if skip_empty:
        rows = [row for row in rows if row["nnodes"]]
    if as_json:
        listing.emit_json({"resources": rows})
        return
    listing.emit(res_listing.RESOURCE_LIST, fmt, rows, no_header=no_header)


def _status_options(f):
    for option in reversed([
        click.option("-i", "--include", metavar="TARGETS",
                     help="Include only these targets (an idset or hostlist) in the output."),
        click.option("-n", "--no-header", is_flag=True, help="Suppress the header line."),
        color_option("-L"),
    ]):
        f = option(f)
    return f


@resource.command("status")
@format_option("flux_lite.listing.resources:RESOURCE_STATUS",
               help="Output format, or a named format ('help' lists them).")
@click.option("-s", "--states", default=None, metavar="STATE,...",
              help="Only these states: all, online, avail, offline, exclude, drain, draining, drained, "
                   "torpid, allocated, housekeeping ('help' lists them).")
@_status_options
@click.option("-q", "--queue", "queues", metavar="QUEUE,...", multiple=True, shell_complete=complete_queues,
              help="Only the resources of these queues.")
@click.option("--skip-empty", is_flag=True, help="Skip empty lines of output even with --states.")
@click.option("--from-stdin", is_flag=True, hidden=True,
              help="Read the resource module's resource.status payload from stdin instead of the instance.")
@click.option("--config-file", metavar="FILE", hidden=True,
              help="With --from-stdin: the JSON config whose queues -q names.")
def resource_status(fmt, states, include, no_header, color, queues, skip_empty, from_stdin, config_file):
    """Show node states (avail, exclude, draining, drained, allocated, housekeeping)."""
    if states == "help":
        info(f"valid states: {','.join(res_listing.STATUS_STATES)}")
        return
    try:
        res_listing.status_states(states)
    except res_listing.InvalidState as exc:
        _invalid_state(exc)
    fmt = _colored(listing.format_string(res_listing.RESOURCE_STATUS, fmt), color)
    with _status_source(from_stdin, config_file, None) as (broker, doc, cfg):
        rows = res_listing.status_lines(broker, fmt, states, skip_empty=skip_empty, include=include,
                                        queues=_queue_names(queues), doc=doc, cfg=cfg)
    listing.emit(res_listing.RESOURCE_STATUS, fmt, rows, no_header=no_header)


def _colored(fmt, color):
    """fmt as -L/--color[=WHEN] leaves it: without color, less its color fields."""
    return fmt if use_color(color) else without_fields(fmt, COLOR_FIELDS)


def _invalid_state(exc):
    echo_error(str(exc))
    info(f"valid states: {','.join(res_listing.STATUS_STATES)}")
    raise SystemExit(1)


@resource.command("drain")
@click.option("-f", "--force", count=True,
              help="Overwrite an existing drain reason; twice to also update the drain time.")
@click.option("-u", "--update", is_flag=True,
              help="Do not fail for targets already drained, and keep their reason.")
@format_option("flux_lite.listing.resources:RESOURCE_DRAIN",
               help="Output format or a named format (only used when listing drained nodes).")
@_status_options
@click.argument("targets", required=False, shell_complete=complete_targets)
@click.argument("reason", nargs=-1)
def drain(force, update, fmt, include, no_header, color, targets, reason):
    """Drain TARGETS (ranks or hosts) with an optional REASON; without TARGETS list drained nodes."""
    if targets is None:
        fmt = _colored(listing.format_string(res_listing.RESOURCE_DRAIN, fmt), color)
        with read_session() as broker:
            rows = res_listing.status_lines(broker, fmt, "drain", skip_empty=True, include=include)
        listing.emit(res_listing.RESOURCE_DRAIN, fmt, rows, no_header=no_header)
        return
    if force and update:
        echo_error("Only one of --force and --update may be specified")
        raise SystemExit(1)
    mode = "update" if update else {0: None, 1: "overwrite"}.get(force, "force-overwrite")

    try:
        with session() as broker:
            admin.drain(broker, targets, " ".join(reason) if reason else None, mode=mode)
    except FluxLiteError as exc:
        if exc.errno == errno.EPERM or isinstance(exc, KVSError):
            raise  # an owner-only refusal, or the state dir's answer: what every command gives
        # flux resource drain logs the request's OSError as it prints
        echo_error(f"[Errno {exc.errno or errno.EINVAL}] {exc}")
        if exc.errno == errno.EEXIST:
            info("Use --force to overwrite existing drain reason")
        raise SystemExit(1) from None


@resource.command("undrain")
@click.option("-f", "--force", count=True,
              help="Do not fail for targets not drained; twice to also update the undrain time (the event "
                   "records overwrite=1 or 2).")
@click.option("-u", "--update", is_flag=True,
              help="Do not fail for targets not drained, and keep an existing undrain reason.")
@click.argument("targets", shell_complete=complete_targets)
@click.argument("reason", nargs=-1)
def undrain(force, update, targets, reason):
    """Return drained TARGETS to service, with an optional REASON."""
    if force and update:
        echo_error("Only one of --force and --update may be specified")
        raise SystemExit(1)
    mode = "update" if update else {0: None, 1: "overwrite"}.get(force, "force-overwrite")
    with session() as broker:
        admin.undrain(broker, targets, " ".join(reason) if reason else None, mode=mode)


@resource.command("reload")
@click.option("-x", "--xml", is_flag=True, help="interpret path as XML dir")
@click.option("-f", "--force", is_flag=True, help="allow resources to contain invalid ranks")
@click.argument("path", type=click.Path())
def reload(xml, force, path):
    """Make the R in PATH (or the hwloc PATH/<rank>.xml files) the instance's resources."""
    with session() as broker:
        admin.resource_reload(broker, os.path.realpath(path), xml=xml, force=force)


@resource.command("eventlog")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", metavar="FORMAT",
              help="Specify output format: text, json")
@click.option("-T", "--time-format", type=click.Choice(["raw", "iso", "offset", "human"]), default="raw",
              metavar="FORMAT", help="Specify time format: raw, iso, offset, human")
@click.option("-H", "--human", is_flag=True, help="Display human-readable output.")
@color_option("-L")
@click.option("-F", "--follow", is_flag=True, help="Display new events as they are posted")
@click.option("-t", "--timeout", type=FSD, default=None, metavar="TIME",
              help="With --follow or --wait, timeout after TIME has elapsed")
@click.option("-w", "--wait", "wait_for", metavar="EVENT", help="Display events until EVENT is posted")
@click.option("-m", "--match-context", "match", metavar="KEY=VAL", multiple=True,
              help="With --wait, match KEY=VAL in context of EVENT")
@click.option("-i", "--include", metavar="TARGETS", help="Only display events that include TARGETS (hosts or ranks)")
def resource_eventlog(fmt, time_format, human, color, follow, timeout, wait_for, match, include):
    """Show the resource journal: resource.eventlog, with the brokers' restart and online events."""
    wanted = {}
    for item in match:
        key, sep, value = item.partition("=")
        if not sep or not key:
            why = "empty key" if sep else "missing '='"
            raise UsageError(f"invalid KEY=VAL argument: {item!r} ({why})")
        try:
            wanted[key] = json.loads(value)
        except ValueError:
            wanted[key] = value
    targets = None
    if include is not None:
        with read_session() as broker:
            targets = broker.resources.journal_targets(include)

    def shown(entry):
        return targets is None or _journal_match(entry, *targets)

    def until(broker):
        entries = broker.resources.journal()
        for i, entry in enumerate(entries):
            if shown(entry) and entry["name"] == wait_for and _context_match(entry.get("context") or {}, wanted):
                return entries[:i + 1]
        return None

    if wait_for is None:
        with read_session() as broker:
            entries = broker.resources.journal()
    else:
        try:
            entries = instance().wait(until, timeout=timeout)
        except WaitTimeout:
            raise FluxLiteError("timeout") from None
        except WaitStalled:
            raise FluxLiteError(f"event '{wait_for}' cannot arrive: nothing left to happen "
                                "under the virtual clock (advance it or use --timeout)") from None
    entries = [e for e in entries if shown(e)]
    color = use_color(color)
    if human:
        fmt, time_format = "text", "human"
    if fmt == "json":
        emit([eventlog.display_json(e) for e in entries])
    else:
        emit(eventlog.EventlogFormatter(timestamp_format=time_format, color=color).format_entries(entries))


def _journal_match(entry, ranks, hosts):
    """Flux's Targets.match: an event names the targets by idset (or ranks) or nodelist."""
    ctx = entry.get("context") or {}
    for key in ("ranks", "idset"):
        if key in ctx:
            try:
                if IDset.parse(str(ctx[key])) & ranks:
                    return True
            except FormatError:
                pass
            break
    if "nodelist" in ctx:
        try:
            return bool(set(Hostlist.parse(str(ctx["nodelist"]))) & hosts)
        except FormatError:
            return False
    return False


def _context_match(ctx, wanted):
    """-m KEY=VAL: every pair in the context (floats within 1e-5), as Flux's KVArgs.match."""
    for key, value in wanted.items():
        other = ctx.get(key)
        if isinstance(other, float):
            try:
                if abs(float(value) - other) > 1e-5:
                    return False
            except (TypeError, ValueError):
                return False
        elif other != value:
            return False
    return True
