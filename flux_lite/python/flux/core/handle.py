"""flux.core.handle: the handle a script opens on an instance (flux.Flux).

Flux's handle is a connection to a broker. flux-lite's is the state
directory of an instance: chosen by the URL given (`local://DIR` or a
directory), else FLUX_LITE_STATE_DIR (which `flux python`, `flux-lite env`
and `flux-lite start COMMAND` set), else FLUX_URI when it is `local://` a
flux-lite state directory or the broker socket in one (`flux-lite start
COMMAND` sets it so), else the default instance. The instance is opened
at the first request, and every request is one transaction of it, as every
CLI command is.
"""

from __future__ import annotations

import errno
import os
import sys
from collections import deque
from typing import Any

import flux.constants as constants
from flux.future import Future, os_error
from flux.rpc import RPC, StreamingRPC
from flux_lite.errors import FluxLiteError

# The library's instance and services are imported by the first request,
# not by `import flux`: a script pays for what it uses.

_LEVELS = {constants.FLUX_LOG_EMERG: "emerg", constants.FLUX_LOG_ALERT: "alert", constants.FLUX_LOG_CRIT: "crit",
           constants.FLUX_LOG_ERR: "err", constants.FLUX_LOG_WARNING: "warning",
           constants.FLUX_LOG_NOTICE: "notice", constants.FLUX_LOG_INFO: "info", constants.FLUX_LOG_DEBUG: "debug"}


def _state_dir_of(url: str | None) -> str | None:
    from flux_lite.instance import Instance, state_dir_of_uri

    # (a local:// path may name the instance's broker socket, as the FLUX_URI
    # `flux-lite start COMMAND` sets does: its directory is the instance)
    if url:
        return state_dir_of_uri(url[len("local://"):]) if url.startswith("local://") else url
    if os.environ.get("FLUX_LITE_STATE_DIR"):
        return os.environ["FLUX_LITE_STATE_DIR"]
    uri = os.environ.get("FLUX_URI", "")
    if uri.startswith("local://"):
        path = state_dir_of_uri(uri[len("local://"):])
        if Instance.exists(path):
            return path
    return None


class Flux:
    """A handle on a flux-lite instance (Flux's `flux.Flux(url=None, flags=0)`)."""

    def __init__(self, url: str | None = None, flags: int = 0) -> None:
        self.url = url
        self.flags = flags
        self.aux: dict[str, Any] = {}
        self._state_dir = _state_dir_of(url)
        self._instance: Any = None
        self._watched: deque[Future] = deque()
        self._stopped = False
        _ = self.instance  # Flux connects at construction: a missing instance fails here

    # -- the instance -----------------------------------------------------------

    @property
    def instance(self) -> Any:
        """The flux-lite instance behind this handle (flux_lite.instance.Instance)."""
        if self._instance is None:
            from flux_lite.instance import Instance

            try:
                self._instance = Instance.open(self._state_dir)
            except FluxLiteError as exc:
                err = os_error(exc)
                if exc.errno is None:
                    err = OSError(errno.ENOENT, f"Unable to connect to Flux: {exc.message}")
                raise err from None
        return self._instance

    def _call(self, topic: str, payload: dict) -> Any:
        from flux_lite import services

        return services.call(self.instance, topic, payload)

    def _stream(self, topic: str, payload: dict) -> Any:
        from flux_lite import services

        return services.stream(self.instance, topic, payload)

    def close(self) -> None:
        if self._instance is not None:
            self._instance.close()
            self._instance = None

    def __enter__(self) -> Flux:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------

    def rpc(self, topic: str, payload: Any = None, nodeid: int = constants.FLUX_NODEID_ANY,
            flags: int = 0) -> RPC | StreamingRPC:
        """A request to topic: a future of its response (of its responses,
        with flags=FLUX_RPC_STREAMING)."""
        if not isinstance(topic, str):
            raise TypeError("topic must be a string")
        if flags & constants.FLUX_RPC_STREAMING:
            return StreamingRPC(self, topic, payload, nodeid, flags)
        return RPC(self, topic, payload, nodeid, flags)

    def attr_get(self, name: str) -> str:
        return self.rpc("attr.get", {"name": name}).get()["value"]

    def get_rank(self) -> int:
        return 0

    def get_size(self) -> int:
        return int(self.attr_get("size"))

    def log(self, level: int, fstring: str, *args: Any) -> None:
        """A line in the instance log (`flux dmesg`), from this script."""
        text = fstring % args if args else fstring
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        with self.instance.session() as broker:
            broker.log(name, _LEVELS.get(level, "info"), text)

    # -- the reactor --------------------------------------------------------------

    def _watch(self, future: Future) -> None:
        if future not in self._watched:
            self._watched.append(future)

    def reactor_run(self, reactor: Any = None, flags: int = 0) -> int:
        """Fulfil the futures given callbacks, calling them back, until none
        is left (or reactor_stop); returns 0 as Flux does on a clean end."""
        self._stopped = False
        while self._watched and not self._stopped:
            future = self._watched.popleft()
            if future._run_callback():
                self._watched.append(future)
        return 0

    def reactor_stop(self, reactor: Any = None) -> None:
        self._stopped = True

    def reactor_stop_error(self, reactor: Any = None) -> None:
        self._stopped = True
