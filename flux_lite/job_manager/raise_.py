"""Job exceptions (flux-core job-manager/raise.c).

``raise_exception`` posts the ``exception`` event for the job manager's own
modules; ``request_raise`` is the ``job-manager.raise`` service, with Flux's
checks and messages, for users and for other modules (the scheduler raises
``scheduler-restart`` through it).
"""

from errno import EPROTO

from flux_lite import access
from flux_lite.errors import FluxLiteError


class Raise:
    def __init__(self, jm):
        self.jm = jm
        self.b = jm.b

    def raise_exception(self, job, etype, severity, note="", userid=None, wait_status=None):
        ctx = {"type": etype, "severity": severity, "note": note or ""}
        if userid is not None:
            ctx["userid"] = userid
        if wait_status is not None:
            ctx["wait_status"] = wait_status
        self.jm.event.post(job, "exception", ctx)

    def request_raise(self, jobid, severity, etype, note=None, cred=None):
        """job-manager.raise; cred: the requester (default: whoever runs the command)."""
        ident = cred if cred is not None else self.b.instance.identity
        if not isinstance(severity, int) or not 0 <= severity <= 7:
            raise FluxLiteError("invalid exception severity", errno=EPROTO)
        if not etype or any(c.isspace() for c in etype) or "=" in etype:
            raise FluxLiteError("invalid exception type", errno=EPROTO)
        job = self.jm.index.require_active(jobid)
        access.check_raise(ident, job.userid)
        self.raise_exception(job, etype, severity, note or "", userid=ident.userid)

    def handle_raise(self, msg, cred=None):
        """The job-manager.raise request handler."""
        self.request_raise(msg.get("id"), msg.get("severity"), msg.get("type"), msg.get("note"), cred=cred)
        return {}
