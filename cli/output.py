"""Terminal output: plain and stable when piped; rich only on a TTY."""

import contextlib
import sys

PROGRESS_MIN = 500  # smaller batches finish too fast for a bar to help


def is_tty(stream=None):
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def progress(total, description, stream=None):
    """Yield advance(n); a rich progress bar on stderr when it is a TTY."""
    stream = stream or sys.stderr
    if total < PROGRESS_MIN or not is_tty(stream):
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(file=stream)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextlib.contextmanager
def progress_report(description, stream=None):
    """Yield report(done, total) for work whose size is known only once it
    starts (a reload's hello); the bar appears on a TTY for large totals."""
    stream = stream or sys.stderr
    state = {}

    def report(done, total):
        if "advance" not in state:
            if total < PROGRESS_MIN or not is_tty(stream):
                state["advance"] = None
            else:
                state["cm"] = progress(total, description, stream)
                state["advance"] = state["cm"].__enter__()
                state["done"] = 0
        if state["advance"] is not None:
            state["advance"](done - state["done"])
            state["done"] = done

    try:
        yield report
    finally:
        if state.get("cm") is not None:
            state["cm"].__exit__(None, None, None)


STATE_STYLES = {
    "R": "green", "RUN": "green", "C": "yellow", "CLEANUP": "yellow", "S": "cyan", "SCHED": "cyan",
    "CD": "green", "COMPLETED": "green", "F": "red", "FAILED": "red", "CA": "magenta",
    "CANCELED": "magenta", "TO": "red", "TIMEOUT": "red",
}


def emit(lines, colorize=None):
    """Print lines; on a TTY colorize(line) may return rich markup-free styling spans."""
    import click

    if not lines:
        return
    if colorize is None or not is_tty():
        click.echo("\n".join(lines))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    for line in lines:
        text = Text(line)
        for start, end, style in colorize(line):
            text.stylize(style, start, end)
        console.print(text)
