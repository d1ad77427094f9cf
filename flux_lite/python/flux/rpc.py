"""flux.rpc: a request to one of the instance's services (flux_lite.services)."""

from __future__ import annotations

import errno
import json
from typing import Any

from flux.future import Future, StreamFuture


def _payload(payload: Any) -> dict:
    if payload is None:
        return {}
    if isinstance(payload, (str, bytes)):
        if not payload:
            return {}
        try:
            value = json.loads(payload)
        except ValueError:
            raise OSError(errno.EPROTO, "Protocol error") from None
        if not isinstance(value, dict):
            raise OSError(errno.EPROTO, "Protocol error")
        return value
    if isinstance(payload, dict):
        return payload
    raise TypeError("payload must be a dict, a JSON string or None")


class RPC(Future):
    """One request and its response (`get()` decodes it, `get_str()` is its JSON)."""

    def __init__(self, flux_handle: Any, topic: str, payload: Any = None, nodeid: int = 0, flags: int = 0) -> None:
        request = _payload(payload)
        super().__init__(flux_handle, lambda: flux_handle._call(topic, request))
        self.topic = topic

    def get_str(self) -> str | None:
        value = self.get()
        # (a response's payload as the broker sends it: compact JSON)
        return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def get_raw(self) -> bytes:
        text = self.get_str()
        return b"" if text is None else text.encode()


class StreamingRPC(StreamFuture):
    """A request answered by a stream of responses (FLUX_RPC_STREAMING)."""

    def __init__(self, flux_handle: Any, topic: str, payload: Any = None, nodeid: int = 0, flags: int = 0) -> None:
        request = _payload(payload)
        super().__init__(flux_handle, lambda: flux_handle._stream(topic, request))
        self.topic = topic

    def get_str(self) -> str | None:
        value = self.get()
        return None if value is None else json.dumps(value)

