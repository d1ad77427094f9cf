"""flux-lite job last / wait / purge / stats / status: the job-control
subcommands admin scripts lean on, with flux-job's words and exit codes."""

import sys
from errno import ECHILD

import click
from flux_lite.cli.params import c_jobid
from flux_lite.cli.common import instance, read_session, session
from flux_lite.cli.words import error_line, prog

from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.jobid import f58, kvs_key
from flux_lite.instance import WaitStalled, WaitTimeout
from flux_lite.job_manager import attach, history, purge, stats, wait


def _prog(sub=None):
    """flux-job's program name (flux-lite's spelling unless invoked as flux)."""
    return prog("job", sub=sub)


def _fail(message, code=1):
    """flux-job's error line (no traceback), then exit with code."""
    click.echo(error_line(message, "job"), err=True)
    sys.exit(code)


def _complete_jobids(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_jobids

    return complete_jobids(ctx, incomplete)


# -- job last -------------------------------------------------------------------------

def _last_usage():
    click.echo(f"Usage: {_prog('last')} SLICE\nList my most recently submitted job id(s)\n"
               "  -h, --help             Display this message.", err=True)
    sys.exit(1)


@click.command("last")
@click.argument("args", nargs=-1, metavar="[N|SLICE]")
def job_last(args):
    """List my most recently submitted job id(s), newest first.

    N lists the last N; SLICE is a Python-style slice of the history
    ('[0:2]', '[-1:]', '[::2]'). Purged jobs leave the history.
    """
    if len(args) > 1:
        _last_usage()
    text = "[:1]"
    if args:
        text = args[0]
        if "[" not in text:
            value, rest = history._strtol(text)
            if value is None or rest:
                _last_usage()
            text = f"[:{value}]"
    with read_session() as broker:
        broker.jobtap.require_service(".history", "job-manager.history.get")
        ids = history.last(broker.kvs.conn, broker.instance.identity.userid, text)
    if not ids:
        raise FluxLiteError("job history is empty")
    click.echo("\n".join(f58(i) for i in ids))


# -- job wait -------------------------------------------------------------------------

def _wait(inst, check, what):
    try:
        return inst.wait(check)
    except (WaitStalled, WaitTimeout):
        raise FluxLiteError(f"{what} cannot end under the virtual clock (nothing is left that could "
                            "end it: advance the clock or cancel it)") from None
    except FluxLiteError as exc:
        if exc.errno == ECHILD:
            _fail(str(exc), 2)
        raise


@click.command("wait")
@click.option("-a", "--all", "all_", is_flag=True, help="Wait for all (waitable) jobs.")
@click.option("-v", "--verbose", is_flag=True,
              help="Emit a line of output for all jobs, not just failing ones.")
@click.argument("jobid", required=False, shell_complete=_complete_jobids)
def job_wait(all_, verbose, jobid):
    """Wait for a waitable job (submitted with --flags=waitable) to end.

    Without JOBID, waits for any waitable job and prints its id. Exits 0 if the
    job succeeded, 1 if it failed, 2 if there is nothing (left) to wait for.
    Each job can be waited on once. Under a virtual clock the clock advances.
    """
    target = c_jobid(jobid) if jobid is not None else None
    if target is not None and all_:
        raise FluxLiteError("jobid not supported with --all: No such file or directory")
    inst = instance()
    if all_:
        rc = 0
        while True:
            try:
                got = inst.wait(wait.check_any)
            except (WaitStalled, WaitTimeout):
                raise FluxLiteError("waitable jobs cannot end under the virtual clock "
                                    "(advance the clock or cancel them)") from None
            except FluxLiteError as exc:
                if exc.errno == ECHILD:
                    break  # none left: every waitable job was reaped
                raise
            jid, success, errstr = got
            if not success:
                click.echo(f"{f58(jid)}: {errstr}", err=True)
                rc = 1
            elif verbose:
                click.echo(f"{f58(jid)}: job completed successfully", err=True)
        sys.exit(rc)
    if target is None:
        jid, success, errstr = _wait(inst, lambda b: wait.check_any(b), "the waitable jobs")
        click.echo(f58(jid))
    else:
        jid, success, errstr = _wait(inst, lambda b: wait.check_one(b, target), f58(target))
    if not success:
        raise FluxLiteError(errstr)


# -- job purge ------------------------------------------------------------------------

def _option_value(name, value, parse):
    try:
        return parse(value)
    except (ValueError, TypeError):
        click.echo(f"{_prog('purge')}: purge: Invalid argument for option '{name}': '{value}'", err=True)
        sys.exit(1)


def _fsd(text):
    return fsd.parse(text)


@click.command("purge")
@click.option("--age-limit", metavar="FSD", help="Purge jobs that became inactive beyond age-limit.")
@click.option("--num-limit", metavar="COUNT", help="Purge oldest inactive jobs until COUNT are left.")
@click.option("-f", "--force", is_flag=True, help="Perform the irreversible purge.")
@click.option("--batch", metavar="COUNT", help="Limit number of jobs per request (default 50).")
@click.argument("ids", nargs=-1, metavar="[ID...]", shell_complete=_complete_jobids)
def job_purge(age_limit, num_limit, force, batch, ids):
    """Purge inactive jobs (instance owner only): by age, by count, or by id.

    Without --force, only says how many would be purged. Purged jobs leave
    the KVS, `jobs` and `job last`.
    """
    age = _option_value("age-limit", age_limit, _fsd) if age_limit is not None else purge.UNLIMITED
    num = _option_value("num-limit", num_limit, int) if num_limit is not None else purge.UNLIMITED
    size = _option_value("batch", batch, int) if batch is not None else 50
    targets = [c_jobid(i) for i in ids]
    try:
        with session() as broker:
            if targets:
                count, remaining = purge.purge_ids(broker, targets, force=force)
            else:
                count, remaining = purge.purge(broker, age, num, size, force=force)
    except FluxLiteError as exc:
        raise FluxLiteError(f"purge: {exc}") from None
    if force:
        click.echo(f"purged {count} inactive jobs, {remaining} remaining")
    else:
        click.echo(f"use --force to purge {count} of {remaining} inactive jobs")


# -- job stats ------------------------------------------------------------------------

@click.command("stats")
def job_stats():
    """Print job statistics (counts by state and result) as JSON."""
    import json

    with read_session() as broker:
        doc = stats.job_stats(broker, queues=True)
    click.echo(json.dumps(doc, separators=(",", ":")))


# -- job status -----------------------------------------------------------------------

@click.command("status")
@click.option("-v", "--verbose", count=True, help="Increase verbosity.")
@click.option("-e", "--exception-exit-code", "exception_code", type=int, default=1, metavar="N",
              help="Exit code for jobs that end solely by an exception (default 1).")
@click.option("-j", "--json", "as_json", is_flag=True,
              help="Print the job result information gleaned from the eventlog.")
@click.argument("ids", nargs=-1, metavar="ID...", shell_complete=_complete_jobids)
def job_status(verbose, exception_code, as_json, ids):
    """Wait for jobs to end; exit with the largest exit code (as a shell would
    give it), or N for a job that ended by an exception only."""
    if not ids:
        click.echo(f"Usage: {_prog('status')} [OPTIONS...] ID [ID...]", err=True)
        sys.exit(1)
    targets = [(text, c_jobid(text)) for text in ids]
    inst = instance()
    if verbose and len(targets) > 1:
        _log(f"fetching status for {len(targets)} jobs")
    docs = []
    for text, jobid in targets:
        try:
            entries = inst.wait(lambda b, j=jobid: attach.watched(b, j) or (
                "unknown" if not b.kvs.exists(_eventlog_key(j)) else None))
        except (WaitStalled, WaitTimeout):
            raise FluxLiteError(f"{text}: the job cannot end under the virtual clock") from None
        if entries == "unknown":
            raise FluxLiteError(f"{text}: No such job")
        docs.append((text, attach.result_doc(jobid, entries)))
    if verbose and len(targets) > 1:
        _log("all done.")
    exit_code = 0
    for text, doc in docs:
        if as_json:
            click.echo(attach.dumps_jansson(doc))
        status = doc.get("waitstatus", -1)
        code = 0 if status < 0 else attach.status_exitcode(status)
        exit_code = max(exit_code, code)
        fatal = doc["exception_occurred"] and doc.get("exception_severity") == 0
        if fatal:
            exit_code = max(exit_code, exception_code)
        if verbose:
            if status >= 0 and status & 0x7F:
                _log(f"{text}: job shell died by signal {status & 0x7F}")
            elif verbose > 1 or code != 0:
                if fatal:
                    _log(f"{text}: exception type={doc['exception_type']}")
                else:
                    _log(f"{text}: exited with exit code {code}")
    sys.exit(exit_code)


def _eventlog_key(jobid):
    return kvs_key(jobid, "eventlog")


def _log(message):
    """flux-job's log_msg: the program name, then the message, on stderr."""
    click.echo(f"{_prog()}: {message}", err=True)
