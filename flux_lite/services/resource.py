"""resource: what `flux resource list` and `flux resource status` read.

resource.sched-status (the resource module's copy of the scheduler's view,
what Flux 0.88's `resource list` asks) and sched.resource-status (the
scheduler's own answer; ENOSYS with no scheduler loaded) give Rv1 sets
{all, allocated, down}; resource.status gives the resource module's state:
R, the drain reasons and times, and the online/offline/exclude/torpid idsets.
"""

from __future__ import annotations

import errno

from flux_lite import admin
from flux_lite.errors import FluxLiteError
from flux_lite.formats.idset import IDset
from flux_lite.instance import Instance
from flux_lite.resources import module_status, resource_status
from flux_lite.services.table import Payload, Service, field, service

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


@service(SERVICES, "resource.monitor-waitup")
def monitor_waitup(instance: Instance, payload: Payload) -> Payload | None:
    """Answers once `up` ranks are online (Flux's tests wait so for the
    brokers). flux-lite's ranks are all online from the start and stay so:
    any other count can never come, and says so instead of waiting."""
    up = field(payload, "up", int)
    with instance.read_session() as broker:
        online = len(IDset(module_status(broker)["online"]))
        size = broker.resources.size()
    if not 0 <= up <= size:
        raise FluxLiteError("up value is out of range", errno=errno.EPROTO)
    if up != online:
        raise FluxLiteError(f"{online} ranks are online and stay so under flux-lite: {up} can never be",
                            errno=errno.ETIMEDOUT)
    return None  # an empty response, as Flux's


def _drain_args(payload: Payload) -> tuple:
    targets = field(payload, "targets", str)
    reason = payload.get("reason")
    mode = payload.get("mode")
    if (reason is not None and not isinstance(reason, str)) or (mode is not None and not isinstance(mode, str)):
        raise FluxLiteError("Protocol error", errno=errno.EPROTO)
    return targets, reason, mode


@service(SERVICES, "resource.drain")
def drain(instance: Instance, payload: Payload) -> Payload | None:
    """{targets, reason?, mode?}: as `flux resource drain` (owner only)."""
    targets, reason, mode = _drain_args(payload)
    with instance.session() as broker:
        admin.drain(broker, targets, reason, mode=mode)
    return None


@service(SERVICES, "resource.undrain")
def undrain(instance: Instance, payload: Payload) -> Payload | None:
    """{targets, reason?, mode?}: as `flux resource undrain` (owner only)."""
    targets, reason, mode = _drain_args(payload)
    with instance.session() as broker:
        admin.undrain(broker, targets, reason, mode=mode)
    return None
