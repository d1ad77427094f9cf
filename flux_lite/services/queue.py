"""job-manager.queue-status: a queue's enable and start state, as `flux queue status` reports it."""

from __future__ import annotations

from flux_lite.instance import Instance
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []


@service(SERVICES, "job-manager.queue-status")
def queue_status(instance: Instance, payload: Payload) -> Payload:
    """{"enable", "start"} (with disable_reason, stop_reason, blocked when
    they apply) of the queue named (none: the anonymous queue); EINVAL for
    a queue that is not configured, or no name when queues are named."""
    name = field(payload, "name", str, None) if "name" in payload else None
    with instance.read_session() as broker:
        return broker.queues.status(name)
