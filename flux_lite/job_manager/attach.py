"""What `run` and `submit --wait` report about a job, from its eventlog.

`flux run` is `flux job attach`: it prints each exception as it arrives
(``1.027s: job.exception ID type=... severity=0 NOTE``, time since submit),
the job shell's fate from the finish status (``job shell Killed``, ``task(s)
exited with exit code 3``), and, for a job that started but has no output
eventlog (Flux's test exec), ``No job output found``; it exits with the job's
exit code (128+signal for a signaled shell, at least 1 after a fatal
exception). `flux submit --wait` (JobWatcher) prints ``job.exception: ...``
for fatal exceptions and exits with the largest exit code of its jobs.

A job whose command is emulated has an output eventlog (RFC 24,
``guest.output``): both print its tasks' output, stdout to stdout and stderr
to stderr, in the order it was written among the job's events; with
``--label-io`` each line of `run`'s output starts with ``RANK: `` (the task
rank), each of `submit --watch`'s with ``JOBID: ``.
"""

import json

from flux_lite.formats.jobid import kvs_key
from flux_lite.job_manager.wait import waitstatus_outcome
from flux_lite.job_manager.waiters import readable_eventlog

LOG = "log"  # a line flux-job logs under its program name
RAW = "raw"  # a line printed as it is
STDOUT = "stdout"  # the job's standard output, written as it is (lines end with their newline)
STDERR = "stderr"  # the job's standard error, likewise


def job_output(broker, jobid: int):
    """The entries of a job's output eventlog, or None when it has none
    (test exec mode, a job that never started). Call after readable_eventlog
    has checked the requester may watch the job."""
    return broker.kvs.get_eventlog(kvs_key(jobid, "guest.output"))


# the job shell's log levels, as flux job attach names them
SHELL_LEVELS = ("FATAL", "ALERT", "CRIT", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG")


def output_items(output, label=None, t0=None):
    """[(timestamp, STDOUT|STDERR|RAW, text)] of an output eventlog's data
    events; label(rank) gives each line's prefix (--label-io). With t0 (the
    job's submit time), the job shell's log events too, as flux job attach
    prints them (`0.094s: flux-shell[0]: FATAL: ...`)."""
    items = []
    for entry in output or ():
        ctx = entry.get("context") or {}
        if entry.get("name") == "log" and t0 is not None:
            level = ctx.get("level")
            name = SHELL_LEVELS[level] if isinstance(level, int) and 0 <= level < len(SHELL_LEVELS) else str(level)
            items.append((entry["timestamp"], RAW, f"{entry['timestamp'] - t0:.3f}s: flux-shell[{ctx.get('rank')}]: "
                                                   f"{name}: {ctx.get('message', '')}"))
            continue
        if entry.get("name") == "redirect":
            # where the job shell writes a stream instead, said on stderr
            items.append((entry["timestamp"], STDERR,
                          f"{ctx.get('rank')}: {ctx.get('stream')} redirected to {ctx.get('path')}\n"))
            continue
        if entry.get("name") != "data" or "data" not in ctx:
            continue
        data = ctx["data"]
        if not isinstance(data, str):
            continue
        if ctx.get("encoding") == "base64":
            import base64

            try:
                data = base64.b64decode(data).decode("utf-8", errors="replace")
            except ValueError:
                continue
        kind = STDOUT if ctx.get("stream") == "stdout" else STDERR
        if label is not None:
            prefix = label(ctx.get("rank"))
            data = "".join(prefix + line for line in data.splitlines(keepends=True))
        items.append((entry["timestamp"], kind, data))
    return items


def _merged(timed_lines, items):
    """Event lines [(timestamp, kind, text)] and output items in time order,
    output first at the same instant (the tasks wrote it before they ended)."""
    order = [(ts, 1, i, kind, text) for i, (ts, kind, text) in enumerate(timed_lines)]
    order += [(ts, 0, i, kind, text) for i, (ts, kind, text) in enumerate(items)]
    order.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(kind, text) for _ts, _o, _i, kind, text in order]


def watched(broker, jobid: int, stop: str = "clean"):
    """Eventlog entries up to the first `stop` event (all of them once the
    job is inactive without it), or None while the job has not got there."""
    entries = readable_eventlog(broker, jobid)
    if entries is None:
        return None
    for i, entry in enumerate(entries):
        if entry["name"] == stop:
            return entries[: i + 1]
    if entries and entries[-1]["name"] == "clean":
        return entries
    return None


def status_exitcode(status: int) -> int:
    """A wait status as a shell exit code (128+signal when signaled)."""
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def attach_report(entries, jobid_f58: str, output=None, label_io: bool = False):
    """([(LOG|RAW|STDOUT|STDERR, text)], exit code) of `flux run` for a job
    that ended; output: the entries of its output eventlog, if it has one."""
    t0 = entries[0]["timestamp"] if entries else 0.0
    start = next((e["timestamp"] for e in entries if e["name"] == "start"), None)
    lines = []
    times = []  # the timestamp of each line
    exit_code = 1  # a job that never finishes failed
    fatal = False
    early = False  # a fatal exception as the job started comes before the output check
    for entry in entries:
        name = entry["name"]
        ctx = entry.get("context") or {}
        if name == "exception":
            severity = ctx.get("severity", 0)
            lines.append((RAW, f"{entry['timestamp'] - t0:.3f}s: job.exception {jobid_f58} "
                               f"type={ctx.get('type')} severity={severity} {ctx.get('note', '')}"))
            times.append(entry["timestamp"])
            if severity == 0:
                fatal = True
                if start is not None and entry["timestamp"] <= start:
                    early = True
        elif name == "finish":
            exit_code, text = waitstatus_outcome(ctx.get("status", 0))
            if exit_code:
                lines.append((LOG, text))
                times.append(entry["timestamp"])
    if fatal and exit_code == 0:
        exit_code = 1
    if output is not None:
        label = (lambda rank: f"{rank}: ") if label_io else None
        return _merged([(ts, kind, text) for ts, (kind, text) in zip(times, lines)],
                       output_items(output, label, t0)), exit_code
    if start is not None:
        no_output = (LOG, "No job output found")
        if early:
            lines.append(no_output)
        else:
            lines.insert(0, no_output)
    return lines, exit_code


def context_string(ctx) -> str:
    """An event's context as Flux's Python tools print it: compact JSON
    with sorted keys, nothing when empty."""
    return json.dumps(ctx, ensure_ascii=False, separators=(",", ":"), sort_keys=True) if ctx else ""


def watch_report(entries, output=None, label=None, verbose=0, t0=None, name_f58=None):
    """([(RAW|STDOUT|STDERR, text)], exit code) of `flux submit --wait` or
    `--watch` for one job's entries: RAW lines go to stderr. output: the
    entries of its output eventlog (--watch of a job that has one); then, as
    Flux's job watcher, exceptions once the job shell started are not
    printed (the output tells). label: each output line's prefix (--label-io).
    verbose (-v, -vv): as the watcher's log_status and log_events, the job's
    end (`ID: 0.050s: failed: status=256`) and each event, timed from t0
    (the first job's submission), the job named name_f58."""
    lines = []
    times = []
    exit_code = 0
    started = False

    def log(ts, msg):
        lines.append((RAW, f"{name_f58}: {ts - t0:4.3f}s: {msg}"))
        times.append(ts)

    for entry in entries:
        name = entry["name"]
        ctx = entry.get("context") or {}
        if verbose > 1:
            log(entry["timestamp"], f"{name} {context_string(ctx)}")
        if name == "start":
            started = True
        elif name == "exception" and ctx.get("severity", 0) == 0:
            if not started:
                exit_code = max(exit_code, 1)
            elif output is not None:
                continue
            text = f"job.exception: type={ctx.get('type')} severity={ctx.get('severity', 0)}"
            if ctx.get("note"):
                text += f" {ctx['note']}"
            lines.append((RAW, text))
            times.append(entry["timestamp"])
        elif name == "finish":
            status = ctx.get("status", 0)
            exit_code = max(exit_code, status_exitcode(status))
            if verbose:
                log(entry["timestamp"], f"{'failed' if status > 0 else 'complete'}: status={status}")
    if output is not None:
        return _merged(list(zip(times, (k for k, _t in lines), (t for _k, t in lines))),
                       output_items(output, (lambda _rank: label) if label else None)), exit_code
    return lines, exit_code


def result_doc(jobid: int, entries) -> dict:
    """flux_job_result's document for an ended job (`flux job status --json`):
    keys in the order libjob sets them while reading the eventlog."""
    doc = {"id": jobid, "exception_occurred": False}
    for entry in entries:
        name = entry["name"]
        ctx = entry.get("context") or {}
        if name == "submit":
            doc["t_submit"] = entry["timestamp"]
        elif name == "alloc":
            doc["t_run"] = entry["timestamp"]
        elif name == "finish":
            doc["t_cleanup"] = entry["timestamp"]
            doc["waitstatus"] = ctx.get("status", 0)
        elif name == "exception":
            severity = ctx.get("severity", 0)
            prev = doc.get("exception_severity")
            if doc["exception_occurred"] and prev is not None and 0 < prev < severity:
                continue  # only a more severe exception replaces the first
            doc["exception_occurred"] = True
            doc["exception_type"] = ctx.get("type")
            doc["exception_note"] = ctx.get("note", "")
            doc["exception_severity"] = severity
    status = doc.get("waitstatus", -1)
    if doc.get("t_run", -1.0) > 0 and status == 0:
        result = 1  # COMPLETED
    elif doc["exception_occurred"] and doc.get("exception_type") == "cancel":
        result = 4
    elif doc["exception_occurred"] and doc.get("exception_type") == "timeout":
        result = 8
    else:
        result = 2
    doc["result"] = result
    return doc


def dumps_jansson(doc: dict) -> str:
    """Compact JSON with reals as jansson writes them (%.17g)."""
    import json

    def enc(value):
        if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, float):
            text = "%.17g" % value
            return text if any(c in text for c in ".eninf") else text + ".0"
        if isinstance(value, dict):
            return "{" + ",".join(f"{json.dumps(k)}:{enc(v)}" for k, v in value.items()) + "}"
        return "[" + ",".join(enc(v) for v in value) + "]"

    return enc(doc)
