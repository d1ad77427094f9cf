"""Terminal output: plain and stable when piped; rich only on a TTY."""

import contextlib
import sys

PROGRESS_MIN = 500  # smaller batches finish too fast for a bar to help
JOBS_PROGRESS_MIN = 2000  # `jobs` lists ~10k rows a second: below this a bar only flickers


def is_tty(stream=None):
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def progress(total, description, stream=None, minimum=None, count=True):
    """Yield advance(n); a rich progress bar on stderr when it is a TTY and
    total is at least `minimum` (default PROGRESS_MIN). count: show "done/total"
    (else a percentage)."""
    stream = stream or sys.stderr
    if total < (PROGRESS_MIN if minimum is None else minimum) or not is_tty(stream):
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn,
    )

    # is_tty said yes: rich must draw the bar even where its own check differs
    console = Console(file=stream, force_terminal=True)
    with Progress(TextColumn("{task.description}"), BarColumn(),
                  MofNCompleteColumn() if count else TaskProgressColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextlib.contextmanager
def progress_report(description, stream=None, minimum=None, count=True):
    """Yield report(done, total) for work whose size is known only once it
    starts (a reload's hello); the bar appears on a TTY for large totals
    (at least `minimum`, default PROGRESS_MIN)."""
    stream = stream or sys.stderr
    minimum = PROGRESS_MIN if minimum is None else minimum
    state = {}

    def report(done, total):
        if "advance" not in state:
            if total < minimum or not is_tty(stream):
                state["advance"] = None
            else:
                state["cm"] = progress(total, description, stream, minimum=0, count=count)
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


@contextlib.contextmanager
def staged_progress(description, stages, stream=None, minimum=None):
    """One bar over `stages` consecutive passes over the same items (read,
    build rows, render): yields stage(k), which returns the report(done,
    total) callback of pass k. The bar's size is set by the first report of
    pass 0; each pass fills its equal share. Yields None off a TTY, so callers
    skip even the counting a bar needs."""
    stream = stream or sys.stderr
    if not is_tty(stream):
        yield None
        return
    minimum = PROGRESS_MIN if minimum is None else minimum
    # the bar's units are passes x items: a percentage, not a count, is honest
    with progress_report(description, stream, minimum=minimum * stages, count=False) as report:
        size = {}

        def stage(k):
            def step(done, total):
                if "n" not in size:
                    size["n"] = max(total, 1)
                n = size["n"]
                report(k * n + (n * done // total if total else n), stages * n)
            return step

        yield stage


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
