"""flux-lite dmesg: print (or clear, or follow) the instance log, as flux dmesg does."""

import sys

import click
from flux_lite.cli.common import instance
from flux_lite.cli.output import color_option, use_color

from flux_lite import admin, log
from flux_lite.errors import FluxLiteError
from flux_lite.formats.outputformat import escape_controls

# flux dmesg's colors (ANSI): name, time, a new minute, and message by severity
BOLD, RED, GREEN, YELLOW, BLUE, REVERSE, RESET = (
    "\033[1m", "\033[31m", "\033[32m", "\033[33m", "\033[34m", "\033[7m", "\033[0m")
SEVERITY_COLORS = {"emerg": REVERSE + RED, "alert": REVERSE + RED, "crit": BOLD + RED, "err": RED,
                   "warning": BOLD, "notice": "", "info": "", "debug": BLUE}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_line(t, name, level, msg):
    """One log line with an ISO 8601 timestamp (UTC), as flux dmesg prints it."""
    return LineFormatter().line(t, name, level, msg)


class LineFormatter:
    """Formats log rows: ISO timestamps, or -H's human ones (the date and
    minute when it changes, else seconds since the last such line, or with
    -d since the previous line); colored with -L."""

    def __init__(self, human=False, delta=False, color=False):
        self.human = human
        self.delta = delta
        self.color = color
        self.last_minute = None
        self.last_t = 0.0

    def _c(self, code):
        return code if self.color else ""

    def _reset(self):
        return RESET if self.color else ""

    def stamp(self, t):
        import datetime

        if not self.human:
            iso = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            return f"{self._c(GREEN)}{iso}{self._reset()}"
        local = datetime.datetime.fromtimestamp(t)
        minute = (local.year, local.month, local.day, local.hour, local.minute)
        if minute == self.last_minute:
            text = f"[{t - self.last_t:+11.6f}]"
            if self.delta:
                self.last_t = t
            return f"{self._c(GREEN)}{text}{self._reset()}"
        self.last_minute = minute
        self.last_t = t
        text = f"[{MONTHS[local.month - 1]}{local.day:02d} {local.hour:02d}:{local.minute:02d}]"
        return f"{self._c(BOLD + GREEN)}{text}{self._reset()}"

    def line(self, t, name, level, msg):
        msg = escape_controls(msg)  # user strings (job names, notes) reach the log
        return (f"{self.stamp(t)} {self._c(YELLOW)}{name}.{level}[0]{self._reset()}: "
                f"{self._c(SEVERITY_COLORS.get(level, ''))}{msg}{self._reset()}")


def write_log(path, rows):
    """The instance log (rows of (t, name, level, msg)) written to path as
    the Flux broker writes its log-filename: one line per entry, local time
    ("Dec 02 17:51:03.729976 UTC 2026 resource.err[0]: ...")."""
    import datetime

    lines = []
    for t, name, level, msg in rows:
        local = datetime.datetime.fromtimestamp(t).astimezone()
        stamp = f"{MONTHS[local.month - 1]} {local.day:02d} {local.strftime('%H:%M:%S')}.{local.microsecond:06d} " \
                f"{local.strftime('%Z')} {local.year}"
        lines.append(f"{stamp} {name}.{level}[0]: {escape_controls(msg)}\n")
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}") from None


@click.command()
@click.option("-C", "--clear", is_flag=True, help="Clear the ring buffer.")
@click.option("-c", "--read-clear", is_flag=True, help="Clear the ring buffer contents after printing.")
@click.option("-f", "--follow", is_flag=True, help="Track new entries as they are logged (until interrupted).")
@click.option("-n", "--new", is_flag=True, help="Show only new log messages (with --follow).")
@click.option("-H", "--human", is_flag=True, help="Human readable output.")
@click.option("-d", "--delta", is_flag=True, help="With --human, show timestamp delta between messages.")
@color_option("-L")
def dmesg(clear, read_clear, follow, new, human, delta, color):
    """Print the instance log: protocol, scheduler and housekeeping lines, as flux dmesg does."""
    if delta and not human:
        raise FluxLiteError("--delta can only be used with --human")

    fmt = LineFormatter(human=human, delta=delta, color=use_color(color, c_style=True))
    inst = instance()
    if clear or not follow:
        rows = admin.read_log(inst, read=not clear and not new, clear=clear or read_clear)
        if rows:
            # click strips ANSI codes off a pipe unless told: --color=always means it
            click.echo("\n".join(fmt.line(*row) for row in rows), color=fmt.color)
        if not follow or clear:
            return
    else:
        admin.read_log(inst, read=False)  # the log is the owner's to follow, too
    # --follow: print what is logged from now on (or the backlog first), polling
    # the log, since there is no broker to stream it
    import time

    with inst.kvs.transaction():
        seq = log.last_seq(inst.kvs) if new or read_clear else 0
    try:
        while True:
            with inst.kvs.transaction():
                rows = log.read(inst.kvs, seq)
            for row in rows:
                seq = row[0]
                click.echo(fmt.line(*row[1:]), color=fmt.color)
            sys.stdout.flush()
            time.sleep(0.2)
    except KeyboardInterrupt:
        return
