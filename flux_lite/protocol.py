"""RFC 27, the job manager <-> scheduler protocol, as flux-lite carries it.

This module *is* the protocol: both sides build and check their messages
here, and the broker (:mod:`flux_lite.broker`) carries them. Neither side
holds a reference to the other.

Two kinds of traffic, as in Flux:

* **messages** (``Broker.send``): queued and delivered in order when the
  broker runs; no reply. ``sched.alloc`` is answered later by one or more
  ``job-manager.alloc-response`` messages (ANNOTATE..., then SUCCESS, DENY
  or CANCEL), as Flux's streaming alloc responses are.
* **requests** (``Broker.rpc``): delivered at once; the handler returns the
  response payload, or raises :class:`~flux_lite.errors.FluxLiteError` with
  an errno and a message, which the requester gets back (Flux's error
  response). A topic nobody serves fails with ENOSYS.

The scheduler drives its own start-up, as a Flux scheduler module does:
``job-manager.sched-hello`` (one record per job holding resources; the
``free`` idset of partly released ones when ``partial-ok``), then
``job-manager.sched-ready`` (``mode`` unlimited, or limited with ``limit``).
When it goes away the broker tells the job manager (``job-manager.disconnect``).

Payloads are plain dicts of JSON values, except where noted (hello records
carry R as a dict, already parsed).
"""

from __future__ import annotations

from errno import EINVAL, ENOENT, ENOSYS, EPERM, EPROTO  # noqa: F401 (the protocol's errnos, re-exported)
from typing import Any, TypedDict

from flux_lite.errors import FluxLiteError

# -- topics -----------------------------------------------------------------------
# job manager -> scheduler
SCHED_ALLOC = "sched.alloc"  # message
SCHED_FREE = "sched.free"  # message
SCHED_CANCEL = "sched.cancel"  # message
SCHED_PRIORITIZE = "sched.prioritize"  # message (no sender yet: see CONTRIBUTING.md, "The protocol")
SCHED_EXPIRATION = "sched.expiration"  # request
# anyone -> scheduler
SCHED_RESOURCE_STATUS = "sched.resource-status"  # request
SCHED_RESOURCE_UPDATE = "sched.resource-update"  # request: resource.acquire's update responses in Flux
SCHED_STATS = "sched.stats-get"  # request (flux module stats)
SCHED_DEBUG = "sched.debug"  # request (flux module debug)
# job manager -> scheduler's feasibility service (update queue=)
SCHED_FEASIBILITY = "feasibility.check"  # request: {"jobspec": ...} -> {} or EINVAL with the reason
# flux-lite's own (no Flux counterpart): what-if and consistency checks
SCHED_EXPIRATION_PREVIEW = "sched.expiration-preview"  # request (update --dry-run)
SCHED_ALLOCATIONS = "sched.allocations"  # request (sched check)
# scheduler -> job manager
JM_ALLOC_RESPONSE = "job-manager.alloc-response"  # message
JM_HELLO = "job-manager.sched-hello"  # request, streamed response (a list here)
JM_READY = "job-manager.sched-ready"  # request
JM_RAISE = "job-manager.raise"  # request
# broker -> job manager, when the scheduler module goes away
JM_DISCONNECT = "job-manager.disconnect"  # request
JM_STATS = "job-manager.stats-get"  # request (flux module stats job-manager)

SCHED_SERVICE = "sched"
JM_SERVICE = "job-manager"

# -- alloc response types (RFC 27) ------------------------------------------------
SUCCESS, ANNOTATE, DENY, CANCEL = 0, 1, 2, 3
RESPONSE_TYPES = (SUCCESS, ANNOTATE, DENY, CANCEL)

# -- ready modes -------------------------------------------------------------------
UNLIMITED, LIMITED = "unlimited", "limited"



def error(errnum: int, message: str) -> FluxLiteError:
    """An error response: errno and message, as Flux's."""
    return FluxLiteError(message, errno=errnum)


def service_of(topic: str) -> str:
    return topic.split(".", 1)[0]


class Cred:
    """The credentials a request carries (Flux's message userid and rolemask)."""

    __slots__ = ("userid", "is_owner")

    def __init__(self, userid: int, is_owner: bool) -> None:
        self.userid = userid
        self.is_owner = is_owner


# -- payloads: job manager -> scheduler --------------------------------------------


def alloc_request(jobid: int, priority: int, userid: int, t_submit: float, jobspec: dict) -> dict:
    return {"id": jobid, "priority": priority, "userid": userid, "t_submit": t_submit, "jobspec": jobspec}


def free_request(jobid: int, R: dict, final: bool) -> dict:
    """sched.free; the scheduling key of R is the scheduler's own, not sent back."""
    if "scheduling" in R:
        R = dict(R)
        del R["scheduling"]
    return {"id": jobid, "R": R, "final": final}


def cancel_request(jobid: int) -> dict:
    return {"id": jobid}


def prioritize_request(pairs: list[tuple[int, int]]) -> dict:
    return {"jobs": [[jobid, priority] for jobid, priority in pairs]}


def expiration_request(jobid: int, expiration: float) -> dict:
    return {"id": jobid, "expiration": expiration}


def check_expiration(msg: dict) -> tuple[int, float]:
    jobid, expiration = msg.get("id"), msg.get("expiration")
    if not isinstance(jobid, int) or not isinstance(expiration, (int, float)):
        raise error(EPROTO, "malformed sched.expiration request")
    if expiration < 0:
        raise error(EINVAL, f"invalid expiration {expiration}")
    return jobid, float(expiration)


def resource_update(down: str | None = None, expiration: float | None = None) -> dict:
    """What changed in the resources the scheduler acquired: the idset of
    ranks now down (all others up), and/or the instance expiration."""
    msg: dict[str, Any] = {}
    if down is not None:
        msg["down"] = down
    if expiration is not None:
        msg["expiration"] = expiration
    return msg


def debug_request(flags: int | None = None) -> dict:
    """Set the module's debug flags (None: only read them); the response is {"flags": N}."""
    return {} if flags is None else {"flags": flags}


# -- payloads: scheduler -> job manager ---------------------------------------------


def alloc_response(jobid: int, rtype: int, **payload: Any) -> dict:
    """SUCCESS carries R (and annotations), ANNOTATE annotations, DENY a note."""
    if rtype not in RESPONSE_TYPES:
        raise ValueError(f"unknown alloc response type {rtype}")
    payload.update({"id": jobid, "type": rtype})
    return payload


# flux-lite's own schedulers ask hello for R as the job manager keeps it, its
# JSON text (in Flux a message's payload is text anyway): a scheduler that
# reads the usual one-entry R from a few fields of its text builds no dict for
# each of thousands of running jobs. Texts of other shapes still come decoded.
HELLO_R_TEXT = "flux-lite.R-text"


def hello_request(partial_ok: bool, R_text: bool = False) -> dict:
    msg: dict[str, Any] = {"partial-ok": bool(partial_ok)}
    if R_text:
        msg[HELLO_R_TEXT] = True
    return msg


class HelloRecord(TypedDict, total=False):
    id: int
    priority: int
    userid: int
    t_submit: float
    R: dict | str | None  # (a str: its checked JSON text, when the request asked for HELLO_R_TEXT)
    free: str  # idset of ranks already released (partial-ok only)


def hello_record(jobid: int, priority: int, userid: int, t_submit: float, R: dict | str | None,
                 free: str | None = None) -> HelloRecord:
    rec: HelloRecord = {"id": jobid, "priority": priority, "userid": userid, "t_submit": t_submit, "R": R}
    if free:
        rec["free"] = free
    return rec


def ready_request(mode: str, limit: int | None = None) -> dict:
    msg: dict[str, Any] = {"mode": mode}
    if mode == LIMITED:
        msg["limit"] = limit
    return msg


def check_ready(msg: dict) -> tuple[str, int]:
    """(mode, limit) of a ready request, or the job manager's EPROTO refusal."""
    mode = msg.get("mode")
    if mode == LIMITED:
        limit = msg.get("limit")
        if not isinstance(limit, int) or limit <= 0:
            raise error(EPROTO, "invalid ready limit")
        return mode, limit
    if mode != UNLIMITED:
        raise error(EPROTO, "invalid ready mode")
    return mode, 0


def raise_request(jobid: int, etype: str, severity: int, note: str = "") -> dict:
    return {"id": jobid, "type": etype, "severity": severity, "note": note}
