"""job-ingest: job submission by request (flux.job.submit)."""

from __future__ import annotations

from flux_lite.instance import Instance
from flux_lite.job_manager.submit import ingest
from flux_lite.services.table import Payload, Service, field, service

SERVICES: list[Service] = []


@service(SERVICES, "job-ingest.submit")
def submit(instance: Instance, payload: Payload) -> Payload:
    """{J, urgency, flags} -> {id}: J signed (mechanism none) or plain jobspec JSON."""
    J = field(payload, "J", str)
    urgency = field(payload, "urgency", int, 16)
    flags = field(payload, "flags", int, 0)
    with instance.session() as broker:
        jobid = ingest(broker, J, urgency, flags)
    return {"id": jobid}
