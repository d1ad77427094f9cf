"""Work done in a second process, for the commands that read or write a
whole history (dump, restore, fsck): the machine's other core.

`forked(produce)` runs the generator function `produce` in a child made by
fork(2) and yields its items in the parent as they come, through a pipe
(pickled, a batch at a time); `worker(fn)` applies fn in a child to the
requests the parent submits, one at a time. The child starts with a copy
of the parent's memory, so `produce` and `fn` can be any closures; they
must not use a database connection the parent opened (SQLite's rule across
fork): they open their own when they read the database.

An error in the child comes back to the parent: a FluxLiteError as the same
class with the same message (another FluxLiteError when that class cannot be
rebuilt from its message), anything else as a FluxLiteError naming it (the
child's traceback is not the user's business: "no traceback, ever"). A
parent that stops reading early (an error of its own, ^C) kills the child.
Where fork(2) is missing, `produce` runs in the parent itself, item by item.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from flux_lite.errors import FluxLiteError

T = TypeVar("T")

BATCH = 512  # items pickled at a time
_PIPE_BUFFER = 1 << 20


def available() -> bool:
    """Can work be forked here?"""
    return hasattr(os, "fork")


def _pipe() -> tuple[int, int]:
    """A pipe as large as the system lets it be (Linux: up to 1 MiB): the
    two processes' speeds vary from batch to batch, and each stall of one
    waiting on a full or empty pipe is time lost to both."""
    r, w = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, _PIPE_BUFFER)
    except (ImportError, AttributeError, OSError):
        pass  # (the default size works, more slowly)
    return r, w


class forked:  # noqa: N801 - used as a function: `with forked(produce) as items:`
    """produce()'s items, made in a child process started at once (see the
    module's note): the caller does its own work meanwhile, then iterates.
    Items are sent batch items at a time, and at once after an item that
    heavy(item) says is large.
    Leaving the with block (or close()) kills a child still running and
    reaps it."""

    def __init__(self, produce: Callable[[], Iterator[T]], batch: int = BATCH,
                 heavy: Callable[[T], bool] | None = None) -> None:
        self.pid = 0
        self._items: Iterator = iter(())
        if not available():
            self._items = produce()
            return
        r, w = _pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(r)
            _child(produce, w, batch, heavy)
        os.close(w)
        self.pid = pid
        self._items = self._receive(os.fdopen(r, "rb", buffering=_PIPE_BUFFER))

    def __enter__(self) -> forked:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator:
        return self._items

    def __next__(self):
        return next(self._items)

    def _receive(self, inp) -> Iterator:
        with inp:
            while True:
                try:
                    what, payload = pickle.load(inp)
                except EOFError:
                    raise FluxLiteError("a helper process ended before its work was done") from None
                if what == "items":
                    yield from payload
                elif what == "end":
                    self._reap(kill=False)
                    return
                else:
                    self._reap(kill=False)
                    raise _rebuilt(*payload)

    def _reap(self, kill: bool) -> None:
        if self.pid:
            pid, self.pid = self.pid, 0
            if kill:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            os.waitpid(pid, 0)

    def close(self) -> None:
        self._reap(kill=True)
        close = getattr(self._items, "close", None)
        if close is not None:
            close()


class worker:  # noqa: N801 - used as a function: `helper = worker(fn)`
    """fn applied in a child process to the requests submitted, one at a
    time: submit(request), then result() (fn's value, or its error raised
    here as forked's are). The caller does other work between the two; a
    request and a result are pickled. close() ends the child."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.pid = 0
        if not available():
            self._pending: list = []
            return
        r1, w1 = _pipe()  # requests
        r2, w2 = _pipe()  # results
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(w1)
            os.close(r2)
            _serve(fn, r1, w2)
        os.close(r1)
        os.close(w2)
        self.pid = pid
        self._to = os.fdopen(w1, "wb", buffering=_PIPE_BUFFER)
        self._from = os.fdopen(r2, "rb", buffering=_PIPE_BUFFER)

    def submit(self, request: Any) -> None:
        if not self.pid:
            self._pending.append(request)
            return
        pickle.dump(request, self._to, pickle.HIGHEST_PROTOCOL)
        self._to.flush()

    def result(self) -> Any:
        if not self.pid:
            return self.fn(self._pending.pop(0))
        try:
            what, payload = pickle.load(self._from)
        except EOFError:
            self.close()
            raise FluxLiteError("a helper process ended before its work was done") from None
        if what != "result":
            self.close()
            raise _rebuilt(*payload)
        return payload

    def close(self) -> None:
        if self.pid:
            pid, self.pid = self.pid, 0
            for f in (self._to, self._from):
                try:
                    f.close()
                except OSError:
                    pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)


def _serve(fn, r, w) -> None:
    code = 0
    inp = os.fdopen(r, "rb", buffering=_PIPE_BUFFER)
    out = os.fdopen(w, "wb", buffering=_PIPE_BUFFER)
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        while True:
            try:
                request = pickle.load(inp)
            except EOFError:
                break  # closed: the work is over
            pickle.dump(("result", fn(request)), out, pickle.HIGHEST_PROTOCOL)
            out.flush()
    except FluxLiteError as exc:
        _send_error(out, [], type(exc), exc.message, exc.errno)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
        _send_error(out, [], None, f"{type(exc).__name__}: {exc}", None)
        code = 1
    finally:
        try:
            out.flush()
        except BaseException:  # noqa: BLE001 - the parent has gone
            code = 1
        os._exit(code)


def _child(produce, w, batch, heavy) -> None:
    code = 0
    out = os.fdopen(w, "wb", buffering=_PIPE_BUFFER)
    items: list = []
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ^C: the parent reports it, once
        for item in produce():
            items.append(item)
            # (a heavy item goes at once: a batch of them would be held whole on both sides)
            if len(items) >= batch or (heavy is not None and heavy(item)):
                pickle.dump(("items", items), out, pickle.HIGHEST_PROTOCOL)
                out.flush()  # (the parent has them at once)
                items = []
        if items:
            pickle.dump(("items", items), out, pickle.HIGHEST_PROTOCOL)
        pickle.dump(("end", None), out, pickle.HIGHEST_PROTOCOL)
    except FluxLiteError as exc:
        _send_error(out, items, type(exc), exc.message, exc.errno)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
        _send_error(out, items, None, f"{type(exc).__name__}: {exc}", None)
        code = 1
    finally:
        try:
            out.flush()
        except BaseException:  # noqa: BLE001 - the parent has gone: nothing to tell
            code = 1
        for f in (sys.stdout, sys.stderr):  # (what produce() printed: os._exit would drop it)
            try:
                f.flush()
            except BaseException:  # noqa: BLE001
                pass
        # no interpreter shutdown: the parent's connections and files are not ours to close
        os._exit(code)


def _send_error(out, items, cls, message, errno) -> None:
    """The items made before the error, then the error."""
    if items:
        pickle.dump(("items", items), out, pickle.HIGHEST_PROTOCOL)
    try:
        pickle.dump(("error", (cls, message, errno)), out, pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a class that does not pickle
        pickle.dump(("error", (None, message, errno)), out, pickle.HIGHEST_PROTOCOL)


def _rebuilt(cls, message, errno) -> FluxLiteError:
    if cls is not None:
        try:
            exc = cls(message)
            if isinstance(exc, FluxLiteError) and exc.message == message:
                if errno is not None:
                    exc.errno = errno
                return exc
        except Exception:  # noqa: BLE001 - a class with another constructor
            pass
    return FluxLiteError(message, errno)
