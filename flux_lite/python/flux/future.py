"""Futures (flux.future): a request's response, fetched when asked for.

flux-lite has no broker process to answer in the background: a future holds
the request and runs it when its value is first needed -- `get()`, or the
reactor calling a `then()` callback. A streaming future yields one response
per fulfilment; `reset()` makes it fetch the next.
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Callable, Iterator
from typing import Any

from flux_lite.errors import FluxLiteError

_PENDING = object()


def os_error(exc: FluxLiteError) -> OSError:
    """The OSError Flux's bindings raise for an error response."""
    num = exc.errno if exc.errno is not None else _errno.EINVAL
    return OSError(num, exc.message or os.strerror(num))


class Future:
    """A response not yet read (one response; see StreamFuture for more)."""

    def __init__(self, flux_handle: Any, fetch: Callable[[], Any] | None = None) -> None:
        self.flux_handle = flux_handle
        self._fetch = fetch
        self._value: Any = _PENDING
        self._error: OSError | None = None
        self._then: tuple[Callable[..., Any], tuple, dict] | None = None

    # -- fulfilment ---------------------------------------------------------

    def _next(self) -> Any:
        if self._fetch is None:
            raise OSError(_errno.EINVAL, "Invalid argument")
        return self._fetch()

    def _fulfil(self) -> None:
        if self._value is not _PENDING or self._error is not None:
            return
        try:
            self._value = self._next()
        except FluxLiteError as exc:
            self._error = os_error(exc)
        except OSError as exc:
            self._error = exc

    def is_ready(self) -> bool:
        """Fulfilled already? (Here a response is ready once asked for.)"""
        return self._value is not _PENDING or self._error is not None

    def wait_for(self, timeout: float = -1.0) -> Future:
        self._fulfil()
        return self

    def get(self) -> Any:
        self._fulfil()
        if self._error is not None:
            raise self._error
        return self._value

    def error_string(self) -> str | None:
        self._fulfil()
        return self._error.strerror if self._error is not None else None

    def get_flux(self) -> Any:
        return self.flux_handle

    def reset(self) -> None:
        """Forget the response read (a stream's next one is fetched on demand)."""
        self._value = _PENDING
        self._error = None

    # -- callbacks ----------------------------------------------------------

    def then(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """Call callback(future, *args, **kwargs) from the handle's reactor once fulfilled."""
        self._then = (callback, args, kwargs)
        self.flux_handle._watch(self)
        return self

    def _run_callback(self) -> bool:
        """Fulfil and call back; True if the future wants to be called again."""
        if self._then is None:
            return False
        self._fulfil()
        callback, args, kwargs = self._then
        callback(self, *args, **kwargs)
        return self._wants_more()

    def _wants_more(self) -> bool:
        return False

    def __del__(self) -> None:  # nothing to free: the request ran in this process
        pass


class StreamFuture(Future):
    """A streaming request's responses: each fulfilment is the next one; the
    end of the stream is an error, ENODATA, as Flux ends a stream."""

    def __init__(self, flux_handle: Any, responses: Callable[[], Iterator[Any]]) -> None:
        super().__init__(flux_handle)
        self._start = responses
        self._iter: Iterator[Any] | None = None
        self._done = False

    def _next(self) -> Any:
        if self._iter is None:
            self._iter = self._start()
        if self._done:
            raise OSError(_errno.ENODATA, "No data available")
        try:
            return next(self._iter)
        except StopIteration:
            self._done = True
            raise OSError(_errno.ENODATA, "No data available") from None
        except BaseException:
            self._done = True
            raise

    def _wants_more(self) -> bool:
        # a callback that reset the future asks for the next response
        return not self.is_ready() and not self._done and self._then is not None

    def cancel(self, stop: bool = False) -> None:
        """Stop the stream: no more responses are fetched."""
        self._done = True
        if stop:
            self._then = None
