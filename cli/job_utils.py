"""flux-lite job submit/eventlog/info/wait-event/urgency/raise/cancel/timeleft: one job at a time."""

import json
import sys

import click
from flux_lite.cli.common import instance, read_session, session
from flux_lite.cli.params import FSD, JOBID, JOBID_TEXT, c_jobid, jobids_and_note
from flux_lite.cli.words import prog
from flux_lite.cli.output import color_option, emit, use_color
from flux_lite.cli.submit import parse_urgency

from flux_lite import job_info as jobinfo
from flux_lite import job_list
from flux_lite.access import EVENTLOG_ACCESS
from flux_lite.config import read_input
from flux_lite.errors import FluxLiteError
from flux_lite.formats import eventlog, fsd
from flux_lite.formats import jobspec as jobspecmod
from flux_lite.formats.jobid import decode, f58, kvs_key
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_info import lookup as lookup_job
from flux_lite.job_info import lookup_keys
from flux_lite.job_manager.job import parse_flags


@click.command("submit")
@click.option("-u", "--urgency", default="default", metavar="N", help="0-31, or hold, default, expedite.")
@click.option("-f", "--flags", default="", metavar="FLAGS", help="Comma-separated: debug, waitable, novalidate.")
@click.argument("file", required=False, default="-")
def job_submit(urgency, flags, file):
    """Submit a jobspec (YAML or JSON) from FILE or stdin; print its id."""
    text = read_input(file, "jobspec", limit=16 << 20)
    try:
        flagbits = parse_flags(flags)
    except ValueError as exc:
        raise FluxLiteError(f"unknown flag: {exc}") from None
    # parsed here, validated by ingest (unless novalidate, instance owner only,
    # or job-ingest's disable-validator), as in Flux
    js = jobspecmod.loads(text, check=False)
    with session() as broker:
        jobid = broker.jm.submit(js, urgency=parse_urgency(urgency), flags=flagbits)
    click.echo(f58(jobid))


@click.command("eventlog")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text", help="Output format.")
@click.option("-T", "--time-format", type=click.Choice(["raw", "iso", "offset", "human"]), default="raw",
              help="Timestamp format.")
@click.option("-H", "--human", is_flag=True, help="Same as --time-format=human.")
@click.option("-p", "--path", default="eventlog", help="Eventlog under the job directory (default eventlog).")
@color_option("-L")
@click.argument("jobid", type=JOBID_TEXT)
def job_eventlog(fmt, time_format, human, path, color, jobid):
    """Print a job's eventlog."""
    typed, jobid = jobid, c_jobid(jobid)
    with read_session() as broker:
        # flux job eventlog names the job as it was typed
        lookup_job(broker, jobid, not_found=f"job {typed} not found",
                     denied=EVENTLOG_ACCESS)
        key = jobinfo.EVENTLOG_PATHS.get(path, path)
        entries = broker.kvs.get_eventlog(kvs_key(jobid, key))
        if entries is None and key == jobinfo.EXEC_EVENTLOG:
            entries = jobinfo.exec_eventlog(broker, broker.jm.load_any(jobid))
    if entries is None:
        raise FluxLiteError(f"job {f58(jobid)}: {path}: No such file or directory")
    _print_events(entries, fmt, time_format, human, color)


def _print_events(entries, fmt, time_format, human, color, t0=None):
    """As libeventlog's formatter prints them: -H is text with human times;
    -L/--color[=WHEN] colors text lines (names, times, context keys/values).
    t0: the origin of offsets when it is not the first entry printed."""
    color = use_color(color, c_style=True)
    if human:
        fmt, time_format = "text", "human"
    if fmt == "json":
        emit([eventlog.display_json(e) for e in entries])
    else:
        formatter = eventlog.EventlogFormatter(timestamp_format=time_format, color=color)
        if t0 is not None:
            formatter.update_t0(t0)
        emit(formatter.format_entries(entries))


@click.command("info")
@click.option("-o", "--original", is_flag=True, help="Print the jobspec as submitted (from J).")
@click.argument("jobid", type=JOBID_TEXT)
@click.argument("keys", nargs=-1, required=True)
def job_info(original, jobid, keys):
    """Print job KEYS: jobspec, R, eventlog, J (current values: updates applied)."""
    jobid = c_jobid(jobid)
    with read_session() as broker:
        values = lookup_keys(broker, jobid, list(keys), original=original)
    out = [values[key].rstrip("\n") for key in keys]
    click.echo("\n".join(out))


@click.command("wait-event")
@click.option("-t", "--timeout", type=FSD, default=None, help="Give up after this long (FSD).")
@click.option("-m", "--match-context", "match", metavar="KEY=VAL", help="Only an event whose context has KEY=VAL.")
@click.option("-c", "--count", type=int, default=1, help="Wait for the Nth matching event.")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("-T", "--time-format", type=click.Choice(["raw", "iso", "offset", "human"]), default="raw",
              help="Timestamp format.")
@click.option("-H", "--human", is_flag=True, help="Same as --format=text --time-format=human.")
@color_option("-L")
@click.option("-p", "--path", default="eventlog", metavar="PATH",
              help="Eventlog under the job directory: eventlog (default), exec, output, input or a key.")
@click.option("-W", "--waitcreate", is_flag=True, help="Wait for the eventlog at PATH to be created.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the event.")
@click.option("-v", "--verbose", is_flag=True, help="Print every event up to the matching one.")
@click.argument("jobid", type=JOBID_TEXT)
@click.argument("name")
def job_wait_event(timeout, match, count, fmt, time_format, human, color, path, waitcreate, quiet, verbose,
                   jobid, name):
    """Wait for event NAME in a job's eventlog (the virtual clock advances while waiting)."""
    typed, jobid = jobid, c_jobid(jobid)  # the id is parsed first, as in Flux
    if count <= 0:
        raise FluxLiteError("count must be > 0")
    if match is not None and "=" not in match:
        raise FluxLiteError("must specify a context test as key=value")
    key = jobinfo.EVENTLOG_PATHS.get(path, path)
    try:
        found = instance().wait(lambda b: jobinfo.path_event_matcher(b, jobid, typed, key, name, match, count,
                                                                     waitcreate),
                                timeout=timeout,
                                watches=[{"service": "job-info", "jobid": jobid, "guest": key.startswith("guest.")}])
    except WaitTimeout:
        raise FluxLiteError(f"wait-event timeout on event '{name}'") from None
    except WaitStalled:
        raise FluxLiteError(f"wait-event: event '{name}' cannot arrive: nothing left to happen "
                 "under the virtual clock (advance it or use --timeout)") from None
    if isinstance(found, str):
        raise FluxLiteError(found)
    entries, entry = found
    if quiet:
        return
    # offsets count from the eventlog's first event, printed or not (as Flux's formatter)
    _print_events(entries if verbose else [entry], fmt, time_format, human, color, t0=entries[0]["timestamp"])


def _complete_urgency(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_urgency

    return complete_urgency(ctx, param, incomplete)


@click.command("urgency")
@click.option("-v", "--verbose", is_flag=True, help="Print the old urgency.")
@click.argument("jobid", type=JOBID_TEXT)
@click.argument("urgency", shell_complete=_complete_urgency)
def job_urgency(verbose, jobid, urgency):
    """Set a pending job's urgency: 0-31, hold, default or expedite.

    A negative URGENCY is a value, not an option (it is out of range)."""
    value = _c_urgency(urgency)
    with session() as broker:
        try:
            old = broker.jm.set_urgency(c_jobid(jobid), value)
        except FluxLiteError as exc:
            # flux job echoes the id as it was typed
            raise FluxLiteError(f"{jobid}: {exc}") from None
    if verbose:
        names = {0: "job held", 31: "job expedited"}
        click.echo(f"old urgency: {names.get(old, old)}", err=True)


@click.command("memo")
@click.option("--volatile", is_flag=True, help="Memo will not appear in eventlog (will be lost on restart)")
@click.argument("jobid", type=JOBID_TEXT, required=False)
@click.argument("memos", nargs=-1, metavar="KEY=VALUE...")
def job_memo(volatile, jobid, memos):
    """Post a memo to an active job: each KEY (a.b for nested keys) set to
    VALUE, JSON if it parses as JSON, else a string (- reads it from stdin);
    null removes a key. Memos are the job's user annotations ({user.KEY})."""
    if jobid is None or not memos:
        click.echo(f"Usage: {prog('job', sub='memo')} [--volatile] id key=value [key=value, ...]", err=True)
        raise SystemExit(1)
    jobid = c_jobid(jobid)
    memo: dict = {}
    for item in memos:
        key, sep, value = item.partition("=")
        if not sep:
            raise FluxLiteError(f"memo: no value for key={item}")
        if value == "-":
            value = sys.stdin.read()
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value  # not JSON: a string, as flux job memo takes it
        _jpath_set(memo, key, parsed)
    with session() as broker:
        try:
            broker.jm.memo(jobid, memo, volatile=volatile)
        except FluxLiteError as exc:
            raise FluxLiteError(f"memo: {exc}") from None


def _jpath_set(obj, path, value):
    """Set obj's key path a.b.c to value, making (or replacing) the objects on the way."""
    *parents, last = path.split(".")
    for part in parents:
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
        obj = obj[part]
    obj[last] = value


def _c_urgency(text):
    """flux job urgency's value: a name (any case), else strtoull() cast to int."""
    import re

    names = {"hold": 0, "default": 16, "expedite": 31}
    if text.lower() in names:
        return names[text.lower()]
    match = re.fullmatch(r"\s*([+-]?)(\d+)", text)
    value = int(match.group(2)) if match else None
    if value is None or value >= 1 << 64:
        raise FluxLiteError(f'error parsing urgency: "{text}"')
    if match.group(1) == "-":
        value = -value % (1 << 64)  # strtoull negates in unsigned arithmetic
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@click.command("raise", context_settings={"allow_interspersed_args": False})
@click.option("-s", "--severity", type=int, default=0, show_default=True, help="0 (fatal) to 7.")
@click.option("-t", "--type", "etype", default="cancel", show_default=True, help="Exception type.")
@click.option("-m", "--message", default=None, metavar="NOTE", help="Exception note.")
@click.argument("words", nargs=-1, required=True, metavar="JOBID... [NOTE...]")
def job_raise(severity, etype, message, words):
    """Raise an exception on jobs; the words after the job ids are the note (options end at the first id)."""
    ids, note = jobids_and_note(words)
    if note is not None and message is not None:
        raise FluxLiteError("Do not set note on command line and with --message")
    text = message if message is not None else note or ""
    failed = False
    with session() as broker:
        for typed, jobid in ids:
            try:
                broker.jm.request_raise(jobid, severity, etype, text)
            except FluxLiteError as exc:
                # (as flux-job: each job's error on its line, the others raised)
                click.echo(f"{prog('job')}: raise {typed}: {exc}", err=True)
                failed = True
    if failed:
        sys.exit(1)


@click.command("cancel")
@click.argument("jobid", type=JOBID)
@click.argument("message", nargs=-1)
def job_cancel(jobid, message):
    """Cancel one job (as flux job cancel)."""
    with session() as broker:
        broker.jm.request_raise(jobid, 0, "cancel", " ".join(message))


@click.command("timeleft")
@click.option("-H", "--human", is_flag=True, help="Output in Flux Standard Duration instead of seconds.")
@click.argument("jobid", required=False, type=JOBID_TEXT)
@click.argument("extra", nargs=-1)
def job_timeleft(human, jobid, extra):
    """Print the whole seconds left before a running job's expiration.

    Without JOBID: the job named by FLUX_JOB_ID (a command run inside a
    job), else the instance's own expiration. 0 means expired or no longer
    running; 4294967295 (-H: infinity) means unlimited.
    """
    import math
    import os

    if extra:
        click.echo(f"Usage: {prog('job', sub='timeleft')} [JOBID]", err=True)
        raise SystemExit(1)
    text = jobid if jobid is not None else os.environ.get("FLUX_JOB_ID")
    with read_session() as broker:
        if text is None:
            execution = (broker.resources.instance_R or {}).get("execution") or {}
            expiration = execution.get("expiration") or 0.0
        else:
            try:
                target = decode(text)
            except ValueError:
                raise FluxLiteError(f"failed to parse jobid {text}") from None
            recs = job_list.query(broker, ids=[target], missing_ok=True)
            if not recs:
                raise FluxLiteError(f"{text}: no such jobid")
            state = recs[0]["state"]
            if state & job_list.PENDING:
                raise FluxLiteError(f"job {text} has not started")
            if state != job_list.RUN:
                expiration = 1.0  # past: no time left
            else:
                expiration = job_list.job_attrs(recs[0]).get("expiration", 0.0)
        now = broker.now
    left = math.inf if not expiration else max(expiration - now, 0.0)
    if human:
        click.echo(fsd.format_c(left, 6))
    elif math.isinf(left):
        click.echo("4294967295")
    else:
        # whole seconds, but never 0 while time is left: 0 means expired
        click.echo(str(max(int(left), 1) if left > 0 else 0))
