"""resource: what `flux resource list` and `flux resource status` read.

resource.sched-status (the resource module's copy of the scheduler's view,
what Flux 0.88's `resource list` asks) and sched.resource-status (the
scheduler's own answer; ENOSYS with no scheduler loaded) give Rv1 sets
{all, allocated, down}; resource.status gives the resource module's state:
R, the drain reasons and times, and the online/offline/exclude/torpid idsets.
"""

from __future__ import annotations

from flux_lite.instance import Instance
from flux_lite.resources import module_status, resource_status
from flux_lite.services.table import Payload, Service, service

SERVICES: list[Service] = []


def _sets(instance: Instance, source: str) -> Payload:
    with instance.read_session() as broker:
        status = resource_status(broker, source)
        return {state: status[state].to_dict() for state in ("all", "allocated", "down")}


@service(SERVICES, "resource.sched-status")
def sched_status(instance: Instance, payload: Payload) -> Payload:
    """As `flux-lite resource list`: jobs' and housekeeping's resources allocated."""
    return _sets(instance, "job-manager")


@service(SERVICES, "sched.resource-status")
def sched_resource_status(instance: Instance, payload: Payload) -> Payload:
    """As `flux-lite resource list --from-sched` (the scheduler's pool)."""
    return _sets(instance, "sched")


@service(SERVICES, "resource.status")
def status(instance: Instance, payload: Payload) -> Payload:
    with instance.read_session() as broker:
        return module_status(broker)
