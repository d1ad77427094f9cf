"""flux.job.event: watching a job's eventlogs (job-info.eventlog-watch)."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

from flux import constants
from flux.eventlog import EventLogEvent
from flux.job._handle import check_handle, jobid
from flux.rpc import StreamingRPC

MAIN_EVENTS = frozenset({"submit", "depend", "priority", "flux-restart", "urgency", "alloc", "free", "start",
                         "release", "finish", "clean", "debug", "exception"})


class JobEventWatchFuture(StreamingRPC):
    """The entries of a job's eventlog, one per fulfilment: get_event()."""

    def get_event(self, autoreset: bool = True) -> EventLogEvent | None:
        """The next entry, or None once the eventlog has ended (or the watch
        was canceled); autoreset=False keeps this one for the next call."""
        try:
            return EventLogEvent(self.get()["event"])
        except OSError as exc:
            if exc.errno == errno.ENODATA:
                return None
            raise
        finally:
            if autoreset:
                self.reset()


def event_watch_async(flux_handle: Any, jobid: Any, eventlog: str = "eventlog") -> JobEventWatchFuture:
    """Watch the entries of a job's eventlog (eventlog: a path under the
    job's directory: eventlog, guest.exec.eventlog, guest.output...)."""
    check_handle(flux_handle)
    payload = {"id": _jobid(jobid), "path": eventlog, "flags": 0}
    return JobEventWatchFuture(flux_handle, "job-info.eventlog-watch", payload, flags=constants.FLUX_RPC_STREAMING)


def event_watch(flux_handle: Any, jobid: Any, eventlog: str = "eventlog") -> Iterator[EventLogEvent]:
    """The entries of a job's eventlog, as they are posted (simulated time
    passes under a virtual clock), until it ends."""
    watcher = event_watch_async(flux_handle, jobid, eventlog)
    event = watcher.get_event()
    while event is not None:
        yield event
        event = watcher.get_event()


class JobException(Exception):
    """A fatal exception event seen while waiting for another event."""

    def __init__(self, event: EventLogEvent) -> None:
        self.timestamp = event.timestamp
        self.type = event.context["type"]
        self.note = event.context.get("note", "")
        self.severity = event.context["severity"]
        super().__init__()

    def __str__(self) -> str:
        return f"job.exception: type={self.type}: {self.note}"


def event_wait(flux_handle: Any, jobid: Any, name: str, eventlog: str = "eventlog",
               raiseJobException: bool = True) -> EventLogEvent:
    """The first entry called name; JobException for a fatal exception
    before it (unless raiseJobException=False); OSError ENODATA when the
    eventlog ends without it."""
    for event in event_watch(flux_handle, jobid, eventlog):
        if event.name == name:
            return event
        if raiseJobException and event.name == "exception" and event.context.get("severity") == 0:
            raise JobException(event)
    raise OSError(errno.ENODATA, f"eventlog ended before event='{name}'")


_jobid = jobid
