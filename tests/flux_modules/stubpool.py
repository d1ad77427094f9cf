"""A tiny stand-in for flux.resource's pools (tests only): Flux's pool calls
over flux-lite's own Pool, so the module API is tested on its own."""

from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset
from flux_lite.sched import pool as lite
from flux_lite.sched.request import request_from_jobspec

InsufficientResources = lite.InsufficientResources
InfeasibleRequest = lite.InfeasibleRequest


class StubAlloc:
    def __init__(self, rset):
        self.rset = rset

    def set_starttime(self, t):
        self.rset = self.rset.with_times(starttime=t)

    def set_expiration(self, t):
        self.rset = self.rset.with_times(expiration=t)

    def dumps(self):
        return self.rset.summary()

    def to_dict(self):
        return self.rset.to_dict()


class StubPool:
    version = 1

    def __init__(self, R, log=None, **kwargs):
        self.rset = R.rset if isinstance(R, StubAlloc) else Rset.from_dict(R)
        self.pool = lite.Pool(self.rset)
        self.expiration = 0.0
        self.generation = 0

    def _ids(self, ids):
        return self.rset.ranks if ids == "all" else IDset.parse(ids) if isinstance(ids, str) else ids

    def mark_up(self, ids):
        self.pool.set_up(self._ids(ids))

    def mark_down(self, ids):
        self.pool.set_down(self._ids(ids))

    def parse_resource_request(self, jobspec):
        return request_from_jobspec(jobspec)

    def alloc(self, jobid, rr):
        self.generation += 1
        return StubAlloc(self.pool.alloc(jobid, rr, 0.0))

    def register_alloc(self, jobid, R):
        self.pool.register_alloc(jobid, R.rset.to_dict())

    def free(self, jobid, R=None, final=False):
        self.generation += 1
        self.pool.free(jobid, None if R is None else R.rset, final)

    def update_expiration(self, jobid, expiration):
        self.pool.update_expiration(jobid, expiration)

    def job_end_times(self):
        return list(self.pool.job_end_times())

    def check_feasibility(self, rr):
        self.pool.check_feasibility(rr)

    def dumps(self):
        return self.rset.summary()

    def to_dict(self):
        return self.rset.to_dict()


def install(monkeypatch):
    """Make flux.resource's pool names the stub's (until flux.resource has its own)."""
    import flux.resource as resource

    for name, value in (("Rv1Pool", StubPool), ("ResourcePool", None),
                        ("InsufficientResources", InsufficientResources), ("InfeasibleRequest", InfeasibleRequest)):
        monkeypatch.setattr(resource, name, value, raising=False)
