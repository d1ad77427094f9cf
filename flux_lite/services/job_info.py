"""job-info: a job's eventlogs, for those who may read them."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

from flux_lite.errors import FluxLiteError
from flux_lite.formats.eventlog import format_json
from flux_lite.formats.jobid import f58
from flux_lite.instance import Instance, WaitStalled
from flux_lite.job_manager import waiters
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []


@service(SERVICES, "job-info.eventlog-watch", streaming=True)
def eventlog_watch(instance: Instance, payload: Payload) -> Iterator[Payload]:
    """A job's main eventlog, entry by entry, ending (ENODATA) after `clean`.

    Each entry not yet written is waited for as `flux job wait-event` waits:
    under a virtual clock, simulated time passes until it is posted."""
    jobid = field(payload, "id", int)
    path = field(payload, "path", str, "eventlog")
    if path != "eventlog":
        raise FluxLiteError(f"{path}: only the main eventlog is watched", errno=errno.EINVAL)
    sent = 0
    while True:
        def more(broker: Any, sent: int = sent) -> Any:
            entries = waiters.readable_eventlog(broker, jobid)
            if entries is None:
                return f"job {f58(jobid)} not found"
            if len(entries) > sent:
                return entries[sent:]
            return None

        try:
            found = instance.wait(more)
        except WaitStalled:
            raise FluxLiteError("Connection timed out: nothing left to happen under the virtual clock",
                                errno=errno.ETIMEDOUT) from None
        if isinstance(found, str):
            raise FluxLiteError("No such file or directory", errno=errno.ENOENT)
        for entry in found:
            sent += 1
            yield {"event": format_json(entry)}
            if entry["name"] == "clean":
                return
