"""Urgency and priority (flux-core job-manager/urgency.c, priority.c).

The priority is computed from the urgency alone (Flux's built-in priority
plugin): hold is the lowest, expedite the highest, anything else the urgency.
"""

from errno import EINVAL

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.job_manager.job import PRIORITY_MAX, PRIORITY_MIN, RUNNING, URGENCY_EXPEDITE, URGENCY_HOLD


def compute_priority(job):
    if job.urgency == URGENCY_HOLD:
        return PRIORITY_MIN
    if job.urgency == URGENCY_EXPEDITE:
        return PRIORITY_MAX
    return job.urgency


class Urgency:
    compute_priority = staticmethod(compute_priority)

    def __init__(self, jm):
        self.jm = jm
        self.b = jm.b

    def set_urgency(self, jobid, urgency):
        """job-manager.urgency: returns the old urgency."""
        ident = self.b.instance.identity
        if not 0 <= urgency <= 31:
            raise FluxLiteError("urgency value is out of range", errno=EINVAL)
        job = self.jm.index.require_active(jobid, unknown="unknown job", inactive_errno=EINVAL)
        access.check_set_urgency(ident, job.userid, urgency)
        if job.has_resources or job.state & RUNNING:
            raise FluxLiteError("urgency cannot be changed once resources are allocated", errno=EINVAL)
        old = job.urgency
        self.jm.event.post(job, "urgency", {"userid": ident.userid, "urgency": urgency})
        return old
