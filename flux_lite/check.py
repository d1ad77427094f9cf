"""`sched check`: the scheduler's allocations against a fresh eventlog replay.

It sits beside both sides, asking the scheduler (``sched.allocations``) and
replaying the job manager's eventlogs.

Expected: every job whose replayed eventlog says it holds resources (current
R) plus every housekeeping allocation (minus released ranks). Any job the
scheduler tracks that is not expected is a leak; any expected job it does not
track, or tracks with other cores, could be double-booked; two allocations
sharing a core are double-booked.
"""

from flux_lite import protocol
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import Rset
from flux_lite.job_manager.replay import replay_job


def expected_allocations(broker):
    out = {}
    for jobid in sorted(broker.jm.jobs):
        job = replay_job(broker.kvs, jobid)
        if job is not None and job.has_resources and job.R:
            out[jobid] = Rset.from_dict(job.R)
    for jobid, rset in broker.housekeeping.allocated_R().items():
        if rset.ranks:
            out[jobid] = rset
    return out


def _cores(rset):
    pairs = set()
    for rank in rset.ranks:
        for core in rset.cores(rank):
            pairs.add((rank, "core", core))
        for gpu in rset.gpus(rank):
            pairs.add((rank, "gpu", gpu))
    return pairs


def check(broker):
    problems = []
    try:
        actual = broker.rpc(protocol.SCHED_ALLOCATIONS, {})["allocations"]
    except FluxLiteError as exc:
        if exc.errno != protocol.ENOSYS:
            raise
        return ["no scheduler is loaded"]
    expected = expected_allocations(broker)
    for jobid in sorted(set(expected) | set(actual)):
        exp, act = expected.get(jobid), actual.get(jobid)
        if act is None:
            problems.append(f"{f58(jobid)}: holds {exp.summary()} but the scheduler does not track it "
                            "(those resources may be double-booked)")
        elif exp is None:
            problems.append(f"{f58(jobid)}: the scheduler holds {act.summary()} for a job that holds nothing "
                            "(leaked)")
        elif _cores(exp) != _cores(act):
            problems.append(f"{f58(jobid)}: the scheduler holds {act.summary()}, the eventlogs say {exp.summary()}")
    owner = {}
    for jobid, rset in actual.items():
        for item in _cores(rset):
            if item in owner and owner[item] != jobid:
                problems.append(f"rank{item[0]}/{item[1]}{item[2]}: double-booked by {f58(owner[item])} "
                                f"and {f58(jobid)}")
            owner[item] = jobid
    return problems
