"""flux-lite queue: list, status, enable, disable, start, stop, drain, idle (as flux queue)."""

import errno
import os

import click
from flux_lite.cli.common import instance, read_session, session
from flux_lite.cli.params import complete_queues
from flux_lite.cli.listing import format_string, listing_options
from flux_lite.cli.output import emit

from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd, outputformat
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_manager import queues as qmod
from flux_lite.listing import queues as qlist


@click.group()
def queue():
    """List and control job queues (as flux queue)."""


@queue.command("list")
@click.option("-q", "--queue", "queues", multiple=True, metavar="QUEUE,...", shell_complete=complete_queues,
              help="Include only these queues.")
@listing_options(format_help="Output format, named format, 'help', or get-config=NAME.",
                 formats="flux_lite.listing.queues:QUEUE_LIST")
def queue_list(queues, no_header, fmt):
    """List queue status, defaults and limits."""
    fmt = format_string(qlist.QUEUE_LIST, fmt)  # help, get-config=, FLUX_QUEUE_LIST_FORMAT_DEFAULT
    names = [n for item in queues for n in item.split(",") if n]

    try:
        fields = outputformat.OutputFormat(fmt, qlist.HEADINGS).fields
    except ValueError as exc:
        raise FluxLiteError(str(exc)) from None
    with read_session() as broker:
        # Flux colours the glyphs whatever the output is (recorded through a pipe);
        # a format without {color_*} fields has none. NO_COLOR (non-empty) turns it off.
        rows = qlist.list_rows(broker, names or None, color=not os.environ.get("NO_COLOR"), fields=fields)
    try:
        lines = qlist.QUEUE_LIST.lines(fmt, rows, no_header=no_header)
    except ValueError as exc:
        # flux queue reports a bad field plainly (no "Error in user format")
        raise FluxLiteError(str(exc)) from None
    emit(lines)  # as is: click would strip the colours from a pipe


def _echo_enable(name, status):
    prefix = f"{name}: " if name else ""
    if status["enable"]:
        click.echo(f"{prefix}Job submission is enabled")
    else:
        click.echo(f"{prefix}Job submission is disabled: {status['disable_reason']}")


def _echo_start(name, status):
    prefix = f"{name}: " if name else ""
    if status["start"]:
        click.echo(f"{prefix}Scheduling is started")
    else:
        reason = f": {status['stop_reason']}" if status.get("stop_reason") else ""
        click.echo(f"{prefix}Scheduling is stopped{reason}")


def _echo_both(name, status):
    _echo_enable(name, status)
    _echo_start(name, status)


def _report(broker, name, verbose, echo, errprefix="status"):
    queues = broker.queues
    try:
        names = queues.status_names(name, verbose)
        statuses = [(n, queues.status(n)) for n in names]
    except FluxLiteError as exc:
        raise FluxLiteError(f"{errprefix}: {exc}") from None
    for n, st in statuses:
        echo(n, st)


def _alloc_query(broker):
    q = broker.queues.alloc_query()
    click.echo(f"{q['queue_length']} alloc requests queued")
    click.echo(f"{q['alloc_pending']} alloc requests pending to scheduler")
    click.echo(f"{q['running']} running jobs")


def _queue_argument(f):
    return click.argument("name", metavar="[QUEUE]", required=False, shell_complete=complete_queues)(f)


def _old_queue_option(f):
    # flux queue's old -q/--queue spelling of the QUEUE argument
    return click.option("-q", "--queue", "old_queue", metavar="NAME", hidden=True,
                        shell_complete=complete_queues)(f)


def _pick(name, old_queue):
    if old_queue is not None:
        if name is not None:
            raise FluxLiteError(f"Conflicting queues specified as --queue={old_queue} and {name}")
        return old_queue
    return name


@queue.command("status")
@click.option("-v", "--verbose", is_flag=True, help="Also show alloc request and running job counts.")
@_old_queue_option
@_queue_argument
def queue_status(verbose, old_queue, name):
    """Report whether submission is enabled and scheduling started."""
    name = _pick(name, old_queue)
    with read_session() as broker:
        _report(broker, name, verbose, _echo_both)
        if verbose:
            _alloc_query(broker)


def _control(command, name, all_queues, quiet, verbose, **kw):
    with session() as broker:
        queues = broker.queues
        if command in ("start", "stop") and name is None and not all_queues and queues.config.named:
            raise FluxLiteError("Named queues are defined. Specify queues or use --all.")
        try:
            if command in ("enable", "disable"):
                queues.enable(name, all_queues, command == "enable", kw.get("reason"))
            else:
                queues.start(name, all_queues, command == "start", kw.get("reason"), kw.get("nocheckpoint", False))
        except FluxLiteError as exc:
            # flux queue words these with the RPC's name: stop errors say "start:"
            rpc = "enable" if command in ("enable", "disable") else "start"
            raise FluxLiteError(f"{rpc}: {exc}") from None
        broker.run()
        if quiet:
            return
        echo = _echo_enable if command in ("enable", "disable") else _echo_start
        _report(broker, name, verbose, echo)
        if verbose and command in ("start", "stop"):
            _alloc_query(broker)


_all_option = click.option("-a", "--all", "all_queues", is_flag=True,
                           help="Apply to all queues when none is named.")
_quiet_option = click.option("--quiet", is_flag=True, help="Display only errors.")
_verbose_option = click.option("-v", "--verbose", is_flag=True,
                               help="Show every queue, and (start/stop) alloc request counts.")


def _control_command(action, doc, nocheckpoint_help=None, message_help=None, default_reason=None):
    """Define `queue ACTION` (enable, disable, start, stop) with the options the
    four share; disable and stop also take --nocheckpoint and -m REASON."""
    def command(all_queues, quiet, verbose, old_queue, name, nocheckpoint=False, message=None):
        _control(action, _pick(name, old_queue), all_queues, quiet, verbose,
                 reason=message or default_reason, nocheckpoint=nocheckpoint)

    command.__doc__ = doc
    options = [_all_option, _quiet_option, _verbose_option]
    if message_help is not None:
        options += [click.option("--nocheckpoint", is_flag=True, help=nocheckpoint_help),
                    click.option("-m", "--message", metavar="REASON", help=message_help)]
    options += [_old_queue_option, _queue_argument]
    for option in reversed(options):
        command = option(command)
    return queue.command(action)(command)


_control_command("enable", "Allow job submission to QUEUE (or the anonymous queue).")
_control_command("disable", "Refuse job submission to QUEUE, with a reason.",
                 nocheckpoint_help="Accepted for compatibility (disable is always kept).",
                 message_help="Reason shown to users who submit.",
                 default_reason="disabled by administrator")
_control_command("start", "Start scheduling jobs of QUEUE.")
_control_command("stop", "Stop scheduling jobs of QUEUE: pending jobs stay in SCHED, running ones go on.",
                 nocheckpoint_help="Do not checkpoint that the queue was stopped.",
                 message_help="Reason the queue is stopped.")


def _timeout(text):
    if text is None:
        return None

    try:
        seconds = fsd.parse(text)
    except ValueError:
        raise FluxLiteError("invalid Flux standard duration") from None
    return None if seconds < 0 or seconds == float("inf") else seconds


def _wait(what, check, timeout):
    try:
        return instance().wait(check, timeout=_timeout(timeout))
    except WaitTimeout:
        raise FluxLiteError(f"{what}: timeout") from None
    except WaitStalled:
        raise FluxLiteError(f"{what}: nothing left to happen under the virtual clock "
                            "(no job can end without a command)") from None
    except FluxLiteError as exc:
        if exc.errno != errno.EPERM:
            raise
        raise FluxLiteError(f"{what}: {exc}", errno=exc.errno) from None  # flux queue names the RPC


@queue.command("drain")
@click.option("-t", "--timeout", metavar="DURATION", help="Give up after DURATION (FSD).")
def queue_drain(timeout):
    """Wait until no job is active (under a virtual clock, time advances)."""
    _wait("drain", qmod.drained, timeout)


@queue.command("idle")
@click.option("-t", "--timeout", metavar="DURATION", help="Give up after DURATION (FSD).")
@click.option("--quiet", is_flag=True, help="Print the pending job count only when nonzero.")
def queue_idle(timeout, quiet):
    """Wait until no job holds resources; print the number of pending jobs."""
    pending = _wait("idle", qmod.idle, timeout)
    if not quiet or pending > 0:
        click.echo(f"{pending} jobs")
