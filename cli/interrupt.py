"""Ctrl-C while `run` or `submit --wait` waits for jobs, as `flux job attach`
takes it: the first ctrl-C says what a second one would do; a second within
2 s cancels the jobs (note "interrupted by ctrl-C"), and the wait goes on
until they have ended, so no job is left running unseen. After a ctrl-C,
ctrl-Z within 2 s detaches (the jobs keep running; said so, exit 1, as
attach). The handlers only record what was typed: the cancel is raised by
the wait's own check, inside its transaction, never from the handler.
"""

import signal
import time
from contextlib import contextmanager

import click

from flux_lite.errors import FluxLiteError

WINDOW = 2.0
NOTE = "interrupted by ctrl-C"
DETACHED = object()  # what the check returns once the user detached


def monotonic():
    """The clock of the 2 s window (one place, so tests can move it)."""
    return time.monotonic()


class Interrupts:
    def __init__(self, prog, jobids):
        self.prog = prog
        self.jobids = list(jobids)
        self.t_sigint = None
        self.cancel = False
        self.canceled = False
        self.detach = False
        self._tstp_default = None

    def _say(self, text):
        click.echo(f"{self.prog}: {text}", err=True)

    def _in_window(self):
        return self.t_sigint is not None and monotonic() - self.t_sigint <= WINDOW

    def on_sigint(self, signum=signal.SIGINT, frame=None):
        if self._in_window():
            self.cancel = True
            return
        self.t_sigint = monotonic()
        self._watch_tstp()
        self._say("one more ctrl-C within 2s to cancel or ctrl-Z to detach")

    def on_sigtstp(self, signum=signal.SIGTSTP, frame=None):
        if self._in_window():
            self.detach = True
            self._say("detaching...")
        else:
            # the next ctrl-Z suspends, as usual
            self._unwatch_tstp()
            self._say("one more ctrl-Z to suspend")

    def _watch_tstp(self):
        if self._tstp_default is None and hasattr(signal, "SIGTSTP"):
            try:
                self._tstp_default = signal.signal(signal.SIGTSTP, self.on_sigtstp)
            except ValueError:  # not the main thread
                pass

    def _unwatch_tstp(self):
        if self._tstp_default is not None:
            signal.signal(signal.SIGTSTP, self._tstp_default)
            self._tstp_default = None

    def check(self, broker):
        """Called by the wait at every step: cancel the jobs once asked to;
        DETACHED once the user detached, else None."""
        if self.detach:
            return DETACHED
        if self.cancel and not self.canceled:
            self.canceled = True
            for jobid in self.jobids:
                try:
                    broker.jm.request_raise(jobid, 0, "cancel", NOTE)
                    broker.run()
                except FluxLiteError:
                    pass  # already inactive: nothing to cancel
        return None


@contextmanager
def attach_signals(prog, jobids):
    """Install the ctrl-C handling for the length of a wait."""
    intr = Interrupts(prog, jobids)
    try:
        previous = signal.signal(signal.SIGINT, intr.on_sigint)
    except ValueError:  # not the main thread (an embedding caller): no handling
        yield intr
        return
    try:
        yield intr
    finally:
        signal.signal(signal.SIGINT, previous)
        intr._unwatch_tstp()
