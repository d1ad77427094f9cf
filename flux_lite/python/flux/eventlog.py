"""flux.eventlog: one entry of an RFC 18 eventlog."""

from __future__ import annotations

import json
from typing import Any


class EventLogEvent(dict):
    """An eventlog entry (a dict: timestamp, name, context), from its JSON
    text or a dict; ``context`` is {} when the entry has none."""

    def __init__(self, event: str | dict) -> None:
        if isinstance(event, (str, bytes)):
            event = json.loads(event)
        super().__init__(event)
        self.setdefault("context", {})

    def __str__(self) -> str:
        return f"{self.timestamp:<0.5f}: {self.name} {self.context}"

    @property
    def name(self) -> str:
        return self["name"]

    @property
    def timestamp(self) -> float:
        return self["timestamp"]

    @property
    def context(self) -> dict[str, Any]:
        return self["context"]

    @property
    def context_string(self) -> str:
        if not self.context:
            return ""
        return json.dumps(self.context, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
