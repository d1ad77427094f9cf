"""Who may do what: every permission rule of the instance, in one place.

Flux checks credentials in the service that receives a request (RFC 12: the
instance owner holds the owner role, everyone else the user role). Here the
requests are library calls, so each entry point that acts for a requester
calls one of the rules below before it changes anything; library callers
(tests, benchmarks, other commands) get the same answer as the CLI. Internal
actions taken for the instance itself (drain-on-failure, restart replay) do
not pass through these rules.

Owner-only administration has one message (``OWNER_ONLY``). Job requests keep
the message each Flux service gives (job-info, job-manager raise, urgency,
update), since scripts match on them; the rules are still written only here.
"""

import os
from collections.abc import Callable
from errno import EINVAL, EPERM

from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import jobid_of_key

ROLE_OWNER = 1
ROLE_USER = 2

NOT_PERMITTED = "Operation not permitted"  # strerror(EPERM), as Flux's services answer
# what Flux's message dispatch answers a guest's request to an owner-only handler
OWNER_CREDENTIALS = "Request requires owner credentials"
OWNER_ONLY = NOT_PERMITTED + ": {} is for the instance owner"
JOB_ACCESS = "access is restricted to job/instance owner"  # job-info's wording
# flux job eventlog reports job-info's refusal through its lookup call
EVENTLOG_ACCESS = "flux_job_eventlog_lookup_get: Operation not permitted"


class Identity:
    """Who is asking: the instance owner may act as another user (as in Flux)."""

    def __init__(self, owner: int) -> None:
        real = os.getuid()
        self.owner = owner
        env_uid = os.environ.get("FLUX_HANDLE_USERID")
        env_role = os.environ.get("FLUX_HANDLE_ROLEMASK")
        self.userid = real
        self.rolemask = ROLE_OWNER if real == owner else ROLE_USER
        if env_uid is not None or env_role is not None:
            if real != owner:
                raise FluxLiteError("only the instance owner may set FLUX_HANDLE_USERID or FLUX_HANDLE_ROLEMASK")
            try:
                if env_uid is not None:
                    self.userid = int(env_uid, 0)
                if env_role is not None:
                    self.rolemask = int(env_role, 0)
                elif self.userid != owner:
                    self.rolemask = ROLE_USER
            except ValueError:
                raise FluxLiteError("FLUX_HANDLE_USERID and FLUX_HANDLE_ROLEMASK must be integers") from None
            if not 0 <= self.userid <= 0xFFFFFFFF:
                raise FluxLiteError("FLUX_HANDLE_USERID must be a user id between 0 and 4294967295")

    @classmethod
    def given(cls, owner: int, userid: int, rolemask: int) -> "Identity":
        """A requester whose credentials were established elsewhere (the
        broker socket's handshake and the message's own credentials)."""
        ident = cls.__new__(cls)
        ident.owner, ident.userid, ident.rolemask = owner, userid, rolemask
        return ident

    @property
    def is_owner(self) -> bool:
        return bool(self.rolemask & ROLE_OWNER)


# -- instance administration -------------------------------------------------------


def require_owner(identity: Identity, operation: str | None) -> None:
    """Owner-only requests: module load/remove/reload/debug, sched reload, drain,
    undrain, housekeeping kill, config load, kvs put, purge, fsck --repair,
    queue enable/disable/start/stop, dmesg (reading and clearing: Flux's log
    service is the owner's), clock advance (the clock is every job's).

    The message names the operation; with operation None it is Flux's
    dispatch refusal, for services whose callers already name it as Flux's do
    (``flux queue start``: "start: Request requires owner credentials")."""
    if not identity.is_owner:
        raise FluxLiteError(OWNER_CREDENTIALS if operation is None else OWNER_ONLY.format(operation), errno=EPERM)


# -- jobs ---------------------------------------------------------------------------------


def may_access(identity: Identity, userid: int) -> bool:
    """The instance owner may act on any job; a guest only on their own."""
    return identity.is_owner or userid == identity.userid


def require_job_access(identity: Identity, userid: int, message: str = JOB_ACCESS) -> None:
    """A request about a job owned by userid; message is the receiving service's."""
    if not may_access(identity, userid):
        raise FluxLiteError(message, errno=EPERM)


def check_kvs_read(identity: Identity, key: str, job_userid: Callable[[int], int | None]) -> None:
    """kvs get / kvs eventlog get: a job's keys are its owner's and the
    instance owner's (as job-info.lookup); job_userid(jobid) names the owner."""
    if identity.is_owner:
        return

    jobid = jobid_of_key(key)
    if jobid is not None:
        userid = job_userid(jobid)
        if userid is not None:
            require_job_access(identity, userid)


def visible_userid(identity: Identity) -> int | None:
    """Whose jobs a guest's job-id completion may offer: None means everyone's."""
    return None if identity.is_owner else identity.userid


def check_raise(identity: Identity, userid: int | None) -> None:
    """job-manager.raise / raiseall on jobs of userid (None: every user)."""
    if not identity.is_owner and userid != identity.userid:
        raise FluxLiteError("guests can only raise exceptions on their own jobs", errno=EPERM)


def check_set_urgency(identity: Identity, userid: int, urgency: int) -> None:
    """job-manager.urgency: guests reprioritize their own jobs, up to the default."""
    if identity.is_owner:
        return
    if userid != identity.userid:
        raise FluxLiteError("guests can only reprioritize their own jobs", errno=EPERM)
    if urgency > 16:
        raise FluxLiteError("guests can only adjust urgency <= default", errno=EPERM)


def check_submit(identity: Identity, urgency: int, novalidate: bool, waitable: bool = False) -> None:
    """job-ingest: urgency above the default, FLUX_JOB_WAITABLE and
    FLUX_JOB_NOVALIDATE are the owner's."""
    if urgency > 16 and not identity.is_owner:
        raise FluxLiteError("only the instance owner can submit with urgency >16", errno=EINVAL)
    if waitable and not identity.is_owner:
        raise FluxLiteError("only the instance owner can submit with FLUX_JOB_WAITABLE", errno=EINVAL)
    if novalidate and not identity.is_owner:
        raise FluxLiteError("only the instance owner can submit with FLUX_JOB_NOVALIDATE", errno=EPERM)


def check_signer(identity: Identity, signer: int) -> None:
    """job-ingest: a signed jobspec (J) must be the requester's."""
    if signer != identity.userid:
        raise FluxLiteError(f"signer={signer} != requestor={identity.userid}", errno=EPERM)


def check_submit_as(identity: Identity) -> None:
    """Submitting on behalf of another user (a trace replay's jobs keep
    their users) is the owner's."""
    if not identity.is_owner:
        raise FluxLiteError("only the instance owner can submit on behalf of another user", errno=EPERM)


def check_update(identity: Identity, userid: int, immutable: bool) -> None:
    """job-manager.update: guests update their own jobs, unless the owner froze them."""
    require_job_access(identity, userid, "guests may only update their own jobs")
    if immutable and not identity.is_owner:
        raise FluxLiteError("job is immutable due to previous instance owner update", errno=EPERM)


def may_skip_validation(identity: Identity, owner_allow_any: bool) -> bool:
    """update-duration: the owner's duration updates bypass the limits (owner-allow-any)."""
    return identity.is_owner and owner_allow_any


def freezes_job(identity: Identity, userid: int) -> bool:
    """An unvalidated owner update of someone else's job makes that job immutable."""
    return identity.is_owner and userid != identity.userid
