"""Terminal output: plain and stable when piped; rich only on a TTY."""

import contextlib
import sys

from flux_lite.cli.words import c_fullname

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
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
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


# flux-jobs' colors for a job's line, by result (flux-core's flux-jobs.py)
RESULT_COLORS = {"COMPLETED": "\033[01;32m", "FAILED": "\033[01;31m", "CANCELED": "\033[37m",
                 "TIMEOUT": "\033[01;31m"}
COLOR_RESET = "\033[0;0m"
COLOR_HELP = "Use color; WHEN can be 'never', 'always' or 'auto' (default)."


def color_option(*short):
    """Flux's --color[=WHEN] (with -L where Flux has it): the parameter `color`."""
    import click

    return click.option(*short, "--color", "color", is_flag=False, flag_value="always", default=None,
                        metavar="WHEN", help=COLOR_HELP)


def use_color(when, c_style=False):
    """Whether --color[=WHEN] colors stdout, as Flux decides: without the option,
    'auto' (a terminal), or 'never' if NO_COLOR is set to a non-empty value.
    A bad WHEN is argparse's usage error (exit 2), or liboptparse's line
    (c_style: exit 1)."""
    import os

    import click

    if when is None:
        when = "never" if os.environ.get("NO_COLOR") else "auto"
    if when in ("always", "never", "auto"):
        return when == "always" or (when == "auto" and is_tty())
    message = f"Invalid argument to --color: '{when}'"
    if c_style:
        click.echo(f"{c_fullname(click.get_current_context())}: {message}", err=True)
        raise SystemExit(1)
    raise click.UsageError(message, ctx=click.get_current_context())


def emit(lines, colors=None):
    """Print lines; colors, when given, holds each line's ANSI prefix ("" for
    none), reset after the line's newline as flux-jobs does."""
    import click

    if not lines:
        return
    if not colors:
        # color=True: click would strip the codes of a --color=always listing off a pipe
        click.echo("\n".join(lines), color=True)
        return
    out = []
    for line, color in zip(lines, colors):
        out.append(f"{color}{line}\n{COLOR_RESET}" if color else line + "\n")
    # click strips ANSI codes off a pipe unless told: --color=always means it
    click.echo("".join(out), nl=False, color=True)
