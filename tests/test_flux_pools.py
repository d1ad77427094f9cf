"""flux.resource's pools: ResourcePool, Rv1Pool, ResourceRequest, ResourceCount, the
pool-class URI (what Flux's Python scheduler modules allocate with), over flux-lite's
scheduler pool."""

import json
import sys
import time

import pytest

from flux_lite import bindings

NOW = 1_000_000.0


@pytest.fixture
def fr(monkeypatch):
    """flux.resource, with time.time() fixed at NOW (a job's end time is read from it)."""
    monkeypatch.syspath_prepend(str(bindings.PATH))
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    monkeypatch.setattr(time, "time", lambda: NOW)
    import flux.resource

    assert flux.resource.__file__.startswith(str(bindings.PATH))
    return flux.resource


def R(ranks="0-3", cores="0-3", gpus=None, hosts=None, props=None, scheduling=None, expiration=0.0):
    children = {"core": cores}
    if gpus:
        children["gpu"] = gpus
    execution = {"R_lite": [{"rank": ranks, "children": children}], "starttime": 0.0,
                 "expiration": expiration, "nodelist": [hosts or f"node[{ranks}]"]}
    if props:
        execution["properties"] = props
    r = {"version": 1, "execution": execution}
    if scheduling is not None:
        r["scheduling"] = scheduling
    return r


UNEVEN = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0-1"}},
                                                  {"rank": "1", "children": {"core": "0-3"}},
                                                  {"rank": "2", "children": {"core": "0-1"}}],
                                       "starttime": 0.0, "expiration": 0.0, "nodelist": ["a,b,c"]}}


def jobspec(resources, duration=60.0, constraints=None):
    system = {"duration": duration}
    if constraints is not None:
        system["constraints"] = constraints
    return {"version": 1, "resources": resources, "tasks": [], "attributes": {"system": system}}


def slots(count, cores=1, gpus=0, exclusive=False):
    inner = [{"type": "core", "count": cores}]
    if gpus:
        inner.append({"type": "gpu", "count": gpus})
    slot = {"type": "slot", "count": count, "label": "task", "with": inner}
    if exclusive:
        slot["exclusive"] = True
    return [slot]


def nodes(count, per_node=1, cores=1, gpus=0, exclusive=False):
    node = {"type": "node", "count": count, "with": slots(per_node, cores, gpus)}
    if exclusive:
        node["exclusive"] = True
    return [node]


def alloc(pool, jobid, resources, **kw):
    return pool.alloc(jobid, pool.parse_resource_request(jobspec(resources, **kw)))


def summary(pool):
    return pool.copy_allocated().dumps()


# -- the package ---------------------------------------------------------------------------


def test_names_are_fluxs_and_load_when_first_named(fr):
    from flux.resource.ResourcePool import ResourcePool
    from flux.resource.ResourcePoolImplementation import InfeasibleRequest, InsufficientResources
    from flux.resource.Rv1Pool import Rv1Pool

    # importing the modules leaves the package naming the classes, as Flux's does
    assert fr.Rv1Pool is Rv1Pool and fr.ResourcePool is ResourcePool
    assert fr.InsufficientResources is InsufficientResources is ResourcePool.InsufficientResources
    assert fr.InfeasibleRequest is InfeasibleRequest is ResourcePool.InfeasibleRequest
    assert issubclass(InsufficientResources, OSError) and issubclass(InfeasibleRequest, OSError)
    assert InsufficientResources("insufficient resources").errno is None
    assert fr.ResourceCount.__module__ == "flux.resource.ResourceCount"
    with pytest.raises(AttributeError):
        fr.NoSuchPool  # noqa: B018


def test_importing_flux_resource_loads_no_pool():
    """`import flux.resource` does not pay for the scheduler's pool (a fresh interpreter)."""
    import subprocess

    code = ("import sys; import flux.resource; "
            "print(sorted(m for m in sys.modules if m.startswith('flux_lite.sched') or 'Pool' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(bindings.PATH)}).stdout
    assert out.strip() == "[]"


# -- the request -------------------------------------------------------------------------------


def test_parse_resource_request_reads_counts_ranges_and_attributes(fr):
    pool = fr.ResourcePool(R())
    cons = {"properties": ["fast"]}
    spec = jobspec([{"type": "node", "count": {"min": 2, "max": 4}, "with": [
        {"type": "slot", "count": "2-3", "label": "task",
         "with": [{"type": "core", "count": 2}, {"type": "gpu", "count": 1}]}]}], 90, cons)
    rr = pool.parse_resource_request(spec)
    assert (rr.nnodes, rr.nnodes_max, rr.nslots, rr.nslots_max) == (2, 4, 4, 12)
    assert (rr.slot_size, rr.gpu_per_slot, rr.ncores, rr.ngpus) == (2, 1, 8, 4)
    assert repr(rr.node_count) == "ResourceCount(2, 4)" and repr(rr.slot_count) == "ResourceCount(2, 3)"
    assert rr.duration == 90.0 and rr.constraint == cons and rr.exclusive is False and rr.jobspec is spec
    # slots alone: no node count; unbounded
    rr = pool.parse_resource_request(jobspec(slots({"min": 3}), 0))
    assert rr.node_count is None and (rr.nnodes, rr.nnodes_max, rr.nslots, rr.nslots_max) == (0, 0, 3, None)
    assert rr.duration == 0.0 and rr.constraint is None
    # exclusive slots are whole nodes, one slot each
    rr = pool.parse_resource_request(jobspec(slots(3, exclusive=True)))
    assert rr.exclusive and (rr.nnodes, rr.nslots, repr(rr.slot_count)) == (3, 3, "ResourceCount(1, 1)")


@pytest.mark.parametrize("spec,message", [
    ({"version": 1, "resources": [], "attributes": {"system": {"duration": 1}}}, "jobspec has no resources"),
    ({"version": 1, "resources": slots(1), "attributes": {}}, "getting duration: Object item not found: system"),
    ({"version": 1, "resources": slots(1), "attributes": {"system": {}}},
     "getting duration: Object item not found: duration"),
    (jobspec([{"type": "core", "count": 1}]), "Unable to determine slot count"),
    (jobspec([{"type": "slot", "count": 1}]), "Unable to determine slot size"),
    (jobspec(slots(0)), "RFC 14 count: integer count must be >= 1, got 0"),
    (jobspec(slots({"min": 2, "max": 1})), "RFC 14 count: max must be >= min, got max=1 min=2"),
    (jobspec(slots({"min": 1, "operator": "*", "operand": 2})),
     "RFC 14 unbounded count with operator='*' operand=2 cannot be expanded to a finite set"),
])
def test_parse_resource_request_errors_are_valueerrors(fr, spec, message):
    pool = fr.ResourcePool(R())
    with pytest.raises(ValueError) as info:
        pool.parse_resource_request(spec)
    assert str(info.value) == message


def test_resource_count_forms(fr):
    RC = fr.ResourceCount
    assert repr(RC.from_count_spec(4)) == "ResourceCount(4, 4)"
    assert repr(RC.from_count_spec({"min": 2})) == "ResourceCount(2, None)"
    assert repr(RC.from_count_spec("[2-5]")) == "ResourceCount(2, 5)"
    assert repr(RC.from_count_spec("2+")) == "ResourceCount(2, None)"
    assert repr(RC.from_count_spec(None, default=3)) == "ResourceCount(3, 3)"
    stepped = RC.from_count_spec({"min": 2, "max": 20, "operator": "*", "operand": 2})
    assert (stepped.min, stepped.max, str(stepped._values)) == (2, 20, "2,4,8,16")
    assert str(RC.from_count_spec("2-8:3").__getattribute__("_values")) == "2,5,8"
    assert str(RC.from_count_spec("1,7-9")._values) == "1,7-9"
    assert list(stepped.valid_counts(10)) == [8, 4, 2] and list(stepped.valid_counts(1)) == []
    assert list(RC(2, None).valid_counts(4)) == [4, 3, 2]
    assert repr(RC(2, 3).scaled(3)) == "ResourceCount(6, 9)" and str(stepped.scaled(2)._values) == "4,8,16,32"
    with pytest.raises(ValueError, match="sequence too large to expand"):
        RC.from_count_spec({"min": 1, "max": 10**9, "operand": 2})


# -- allocation ----------------------------------------------------------------------------


def test_alloc_is_worst_fit_lowest_ids_and_returns_r_of_the_allocation(fr):
    pool = fr.ResourcePool(R(props={"fast": "0-1", "+local": "0"}, scheduling={"writer": "x", "k": 1}))
    assert pool.generation == 0
    a = alloc(pool, 1, nodes(2, cores=2))
    assert type(a) is fr.ResourcePool and pool.generation == 1
    assert a.dumps() == "rank[0-1]/core[0-1]"
    # instance-local (+) properties stay out of a job's R; scheduling is carried (RFC 20)
    assert a.to_dict() == {"version": 1, "scheduling": {"writer": "x", "k": 1}, "execution": {
        "R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}], "starttime": 0.0, "expiration": 0.0,
        "nslots": 2, "nodelist": ["node[0-1]"], "properties": {"fast": "0-1"}}}
    # the most free cores first: ranks 2 and 3, then what is left on 0-1
    assert alloc(pool, 2, slots(2, cores=3)).dumps() == "rank[2-3]/core[0-2]"
    assert alloc(pool, 3, slots(1, cores=2)).dumps() == "rank0/core[2-3]"
    assert summary(pool) == "rank0/core[0-3] rank1/core[0-1] rank[2-3]/core[0-2]"
    assert sorted(pool.job_end_times()) == [(1, NOW + 60), (2, NOW + 60), (3, NOW + 60)]


def test_alloc_picks_the_node_with_most_free_cores(fr):
    pool = fr.Rv1Pool(UNEVEN)
    assert pool.alloc(1, pool.parse_resource_request(jobspec(nodes(1)))).dumps() == "rank1/core0"
    assert pool.alloc(2, pool.parse_resource_request(jobspec(nodes(1)))).dumps() == "rank1/core1"
    # now every rank has two free: the lowest rank
    assert pool.alloc(3, pool.parse_resource_request(jobspec(nodes(1)))).dumps() == "rank0/core0"


def test_insufficient_and_infeasible(fr):
    pool = fr.ResourcePool(R())
    alloc(pool, 1, nodes(4, cores=4))
    gen = pool.generation
    with pytest.raises(fr.InsufficientResources) as info:
        alloc(pool, 2, nodes(1))
    assert str(info.value) == "insufficient resources" and pool.generation == gen
    cases = [
        (nodes(5), "unsatisfiable request: need 5 node(s) with 1 cores each, only 4 eligible"),
        (slots(1, cores=5), "unsatisfiable request: need 1 slot(s) of 5 core(s), "
                            "only 0 such slot(s) available (total cores: 16)"),
        (slots(1, gpus=1), "unsatisfiable request: need 1 slot(s) with 1 GPU(s) each, "
                           "only 0 available (total GPUs: 0)"),
        (nodes("1-3:2:*"), "node count specifies discrete valid values that this scheduler "
                           "does not support; use a simple min-max range instead"),
        (slots("1,3"), "slot count specifies discrete valid values that this scheduler "
                       "does not support; use a simple min-max range instead"),
    ]
    for resources, message in cases:
        rr = pool.parse_resource_request(jobspec(resources))
        # infeasible whatever is allocated or down, at alloc and in check_feasibility
        for call, args in ((pool.alloc, (3, rr)), (pool.check_feasibility, (rr,))):
            with pytest.raises(fr.InfeasibleRequest) as info:
                call(*args)
            assert str(info.value) == message
    pool.mark_down("all")
    assert pool.check_feasibility(pool.parse_resource_request(jobspec(nodes(4, cores=4)))) is None


def test_exclusive_takes_whole_nodes(fr):
    pool = fr.ResourcePool(R())
    alloc(pool, 1, slots(1))
    a = alloc(pool, 2, nodes(2, exclusive=True))
    assert a.dumps() == "rank[1-2]/core[0-3]" and a.to_dict()["execution"]["nslots"] == 2
    # exclusive slots are nodes too; a node with a core taken is not free for them
    assert alloc(pool, 3, slots(1, exclusive=True)).dumps() == "rank3/core[0-3]"
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 4, nodes(1, exclusive=True))
    assert alloc(pool, 5, slots(3)).dumps() == "rank0/core[1-3]"


def test_ranges_take_as_many_as_are_free_up_to_max(fr):
    pool = fr.ResourcePool(R())
    alloc(pool, 1, nodes(1, cores=4))
    a = alloc(pool, 2, [{"type": "node", "count": {"min": 1, "max": 2}, "with": slots(1)}])
    assert a.dumps() == "rank[1-2]/core0" and a.to_dict()["execution"]["nslots"] == 2
    a = alloc(pool, 3, [{"type": "node", "count": {"min": 1}, "with": slots(2)}])
    assert a.dumps() == "rank[1-2]/core[1-2] rank3/core[0-1]"
    assert alloc(pool, 4, slots({"min": 1, "max": 100})).dumps() == "rank[1-2]/core3 rank3/core[2-3]"
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 5, slots("1-4"))
    # a maximum beyond the pool is no reason to deny
    pool.check_feasibility(pool.parse_resource_request(jobspec(slots({"min": 1, "max": 1000}))))


def test_gpus(fr):
    pool = fr.ResourcePool(R("0-1", cores="0-1", gpus="0-1"))
    assert alloc(pool, 1, slots(1, gpus=1)).dumps() == "rank0/core0,gpu0"
    assert alloc(pool, 2, nodes(1, per_node=2, gpus=1)).dumps() == "rank1/core[0-1],gpu[0-1]"
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 3, slots(2, gpus=1))


def test_constraints_select_ranks(fr):
    pool = fr.ResourcePool(R(props={"fast": "2-3", "big": "3"}))
    for cons, expect in [
        ({"properties": ["fast"]}, "rank2/core0"),
        ({"properties": ["^fast"]}, "rank0/core0"),
        ({"hostlist": "node1"}, "rank1/core0"),  # (Flux takes a string for hostlist and ranks)
        ({"ranks": ["3"]}, "rank3/core0"),
        ({"not": [{"ranks": ["0-2"]}]}, "rank3/core1"),
        (json.dumps({"properties": ["big"]}), "rank3/core2"),
        # a queue's requires, as submission adds them to a job's constraint
        ({"and": [{"hostlist": ["node[2-3]"]}, {"properties": ["fast"]}]}, "rank2/core1"),
    ]:
        spec = jobspec(slots(1), constraints=cons)
        assert pool.alloc(len(pool.job_end_times()) + 1, pool.parse_resource_request(spec)).dumps() == expect
    rr = pool.parse_resource_request(jobspec(slots(1), constraints={"properties": ["nope"]}))
    with pytest.raises(fr.InfeasibleRequest, match="only 0 such slot"):
        pool.alloc(99, rr)
    rr = pool.parse_resource_request(jobspec(slots(1), constraints={"bad": 1}))
    with pytest.raises(fr.InfeasibleRequest, match="invalid constraint: unknown constraint operator 'bad'"):
        pool.alloc(99, rr)


def test_expiration_and_end_times(fr):
    pool = fr.ResourcePool(R(expiration=5000.0))
    assert pool.expiration == 5000.0
    alloc(pool, 1, slots(1), duration=0)  # no duration: the resources' expiration
    pool.expiration = 0.0
    alloc(pool, 2, slots(1), duration=0)  # no end at all
    alloc(pool, 3, slots(1), duration=30)
    assert pool.job_end_times() == [(1, 5000.0), (2, 0.0), (3, NOW + 30)]
    gen = pool.generation
    pool.update_expiration(3, NOW + 100)
    assert pool.generation == gen + 1 and pool.job_end_times()[2] == (3, NOW + 100)
    pool.update_expiration(42, 1.0)  # an unknown job changes nothing
    assert pool.generation == gen + 1


def test_success_r_is_stamped_by_the_scheduler(fr):
    pool = fr.ResourcePool(R())
    a = alloc(pool, 1, slots(1))
    a.set_starttime(NOW)
    a.set_expiration(NOW + 60)
    assert (a.to_dict()["execution"]["starttime"], a.to_dict()["execution"]["expiration"]) == (NOW, NOW + 60)
    assert summary(pool) == "rank0/core0"  # (the pool's own record is untouched)


# -- free -------------------------------------------------------------------------------------


def test_free_whole_partial_and_final(fr):
    pool = fr.ResourcePool(R())
    a = alloc(pool, 1, nodes(4, cores=2))
    alloc(pool, 2, slots(1))
    gen = pool.generation
    # housekeeping releases ranks 0-1 first (an R of those ranks), then the rest with final
    part = fr.ResourcePool(a.to_dict())
    part.remove_ranks("2-3")
    pool.free(1, part)
    assert pool.generation == gen + 1
    assert summary(pool) == "rank0/core2 rank[2-3]/core[0-1]"
    assert [j for j, _ in pool.job_end_times()] == [1, 2]
    rest = fr.ResourcePool(a.to_dict())
    rest.remove_ranks("0-1")
    with pytest.raises(ValueError) as info:  # final must be all the job still holds
        pool.free(1, a, final=True)
    assert str(info.value) == "free: f2: R contains ranks not in job allocation: {0, 1}"
    pool.free(1, rest, final=True)
    assert summary(pool) == "rank0/core2" and [j for j, _ in pool.job_end_times()] == [2]
    with pytest.raises(ValueError, match=r"^free: f3: R contains ranks not in job allocation: \{1, 2, 3\}$"):
        pool.free(2, fr.ResourcePool(R()))
    pool.free(2)  # no R: all of it
    pool.free(7)  # an unknown job is ignored
    assert summary(pool) == "" and pool.job_end_times() == []


def test_final_free_mismatch(fr):
    pool = fr.ResourcePool(R())
    alloc(pool, 1, nodes(2))
    other = fr.ResourcePool(R("0-1", cores="2"))
    with pytest.raises(ValueError) as info:
        pool.free(1, other, final=True)
    assert str(info.value) == ("free: f2: final R mismatch: got rank[0-1]/core2, "
                               "expected rank[0-1]/core0")


def test_freed_resources_are_allocated_again(fr):
    pool = fr.ResourcePool(R("0"))
    alloc(pool, 1, slots(4))
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 2, slots(1))
    pool.free(1)
    assert alloc(pool, 2, slots(1)).dumps() == "rank0/core0"


# -- up, down, shrink --------------------------------------------------------------------------


def test_mark_down_and_up(fr):
    pool = fr.ResourcePool(R())
    gen = pool.generation
    pool.mark_down("all")
    pool.mark_up("1,3")
    assert pool.generation == gen + 2
    assert pool.copy_down().dumps() == "rank[0,2]/core[0-3]"
    assert alloc(pool, 1, nodes(2)).dumps() == "rank[1,3]/core0"
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 2, nodes(3))
    pool.mark_up("0")
    pool.mark_down("3")
    assert alloc(pool, 2, nodes(2)).dumps() == "rank0/core0 rank1/core1"
    # a down rank's allocations stay allocated and are freed as usual
    assert summary(pool) == "rank[0,3]/core0 rank1/core[0-1]"
    pool.free(1)
    assert summary(pool) == "rank0/core0 rank1/core1"
    assert pool.to_resource_set().dumps() == "rank[0-3]/core[0-3]"


def test_remove_ranks_shrinks_the_pool(fr):
    pool = fr.ResourcePool(R())
    alloc(pool, 1, nodes(1))
    gen = pool.generation
    pool.remove_ranks("2-3")
    assert pool.generation == gen + 1 and pool.dumps() == "rank[0-1]/core[0-3]"
    with pytest.raises(fr.InfeasibleRequest):
        alloc(pool, 2, nodes(3))
    assert alloc(pool, 2, nodes(2)).dumps() == "rank0/core1 rank1/core0"


# -- hello ---------------------------------------------------------------------------------------


def test_register_alloc_and_hello_with_freed_ranks(fr):
    pool = fr.ResourcePool(R())
    pool.mark_down("3")
    job_r = R("0-3", cores="0-1", expiration=NOW + 10)
    # hello's R of a job whose ranks 0-1 housekeeping has released already
    held = fr.ResourcePool(job_r)
    held.remove_ranks("0-1")
    pool.register_alloc(1, held)  # (a down rank may hold a running job)
    assert summary(pool) == "rank[2-3]/core[0-1]" and pool.job_end_times() == [(1, NOW + 10)]
    assert pool.generation == 2
    with pytest.raises(ValueError) as info:
        pool.register_alloc(2, fr.ResourcePool(R("3-5")))
    assert str(info.value) == "allocation contains ranks not in resource pool: [4, 5]"
    # (Flux's pool would count rank 2's core 0 twice: flux-lite's refuses)
    with pytest.raises(ValueError, match="hello: f3: resources already allocated: rank2/core0"):
        pool.register_alloc(2, fr.ResourcePool(R("2", cores="0")))
    pool.free(1, held, final=True)
    assert summary(pool) == ""


# -- copies ----------------------------------------------------------------------------------------


def test_copy_is_independent_and_keeps_generation(fr):
    logged = []
    pool = fr.ResourcePool(R(), log=lambda level, msg: logged.append(msg))
    alloc(pool, 1, nodes(4, cores=2))
    pool.mark_down("3")
    sim = pool.copy()
    assert type(sim) is fr.ResourcePool and sim.generation == pool.generation
    assert sim.copy_down().dumps() == "rank3/core[0-3]" and summary(sim) == "rank[0-3]/core[0-1]"
    before = len(logged)
    sim.free(1)
    alloc(sim, 2, nodes(3, cores=4))
    sim.update_expiration(2, 1.0)
    assert len(logged) == before  # (a simulation logs nothing)
    assert summary(pool) == "rank[0-3]/core[0-1]" and pool.job_end_times() == [(1, NOW + 60)]
    assert sim.job_end_times() == [(2, 1.0)] and sim.generation > pool.generation
    alloc(pool, 3, slots(1))
    assert summary(sim) == "rank[0-2]/core[0-3]"


def test_a_forecast_simulation(fr):
    """What sched-fifo's forecast does: on a copy, free jobs by end time until the head fits."""
    pool = fr.ResourcePool(R("0-1"))
    alloc(pool, 1, nodes(1, cores=4), duration=100)
    alloc(pool, 2, nodes(1, cores=4), duration=50)
    head = pool.parse_resource_request(jobspec(nodes(2)))
    sim = pool.copy()
    t = 0.0
    while True:
        try:
            sim.alloc(3, head)
            break
        except fr.InsufficientResources:
            t = min(e for _, e in sim.job_end_times() if e > t)
            for jobid, end in list(sim.job_end_times()):
                if 0 < end <= t:
                    sim.free(jobid)
    assert t == NOW + 100 and len(pool.job_end_times()) == 2


def test_views_and_counts(fr):
    pool = fr.Rv1Pool(R("0-1", props={"fast": "1", "+local": "0"}, scheduling={"k": 1}))
    a = pool.alloc(5, pool.parse_resource_request(jobspec(slots(5))))
    assert a.nnodes() == 2 and a.count("core") == 5 and a.count("gpu") == 0 and str(a.ranks()) == "0-1"
    assert sorted(pool._ranks[1]) == ["allocated_cores", "allocated_gpus", "cores", "gpus", "hostname", "up"]
    assert pool._ranks[1]["allocated_cores"] == {0} and pool._ranks[0]["cores"] == frozenset(range(4))
    assert pool._properties == {"fast": {1}, "+local": {0}} and pool._scheduling == {"k": 1}
    end, held = pool._job_state[5]
    assert end == NOW + 60 and held.dumps() == "rank0/core[0-3] rank1/core0"
    assert pool.name == "Rv1Pool" and pool.known_options == frozenset()
    assert fr.ResourcePool(pool).impl is pool and fr.ResourcePool(None).dumps() == ""


def test_alloc_twice_is_an_error_once_it_fits(fr):
    pool = fr.ResourcePool(R("0"))
    alloc(pool, 1, slots(2))
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 1, slots(3))
    with pytest.raises(ValueError, match="alloc: f2: already allocated"):
        alloc(pool, 1, slots(1))


def test_construction_errors(fr):
    with pytest.raises(TypeError, match="ResourcePool cannot be instantiated from <class 'int'>"):
        fr.ResourcePool(3)
    with pytest.raises(ValueError, match="R version 2 not supported by ResourcePool"):
        fr.ResourcePool({"version": 2})
    with pytest.raises(TypeError, match="Rv1Pool: expected str or Mapping"):
        fr.Rv1Pool(3)
    assert fr.ResourcePool(json.dumps(R("0"))).dumps() == "rank0/core[0-3]"


# -- logging and subclasses --------------------------------------------------------------------------


def test_pool_logs_alloc_free_and_hello_through_its_logger(fr):
    logged = []
    pool = fr.Rv1Pool(R("0-1"), log=lambda level, msg: logged.append((level, msg)))
    pool.alloc(1, pool.parse_resource_request(jobspec(slots(2))))
    pool.free(1)
    pool.register_alloc(2, fr.Rv1Pool(R("1", cores="3")))
    assert logged == [(7, "alloc: f2: rank0/core[0-1]"), (7, "free: f2: rank0/core[0-1]"),
                      (6, "hello: f3: rank1/core3")]


def test_subclass_hooks(fr):
    class BestFit(fr.Rv1Pool):
        def __init__(self, R, log=None, **kwargs):
            super().__init__(R, log=log)
            self.tag = kwargs.get("tag")

        def _init_from_state(self, source):
            self.tag = source.tag

        def _sort_candidates(self, candidates):
            return sorted(candidates, key=lambda c: len(c[2]))

        def _check_feasibility(self, request):
            super()._check_feasibility(request)
            if request.nnodes > 1:
                raise fr.InfeasibleRequest("one node at most")

    pool = BestFit(UNEVEN, tag="t")
    a = pool.alloc(1, pool.parse_resource_request(jobspec(nodes(1))))
    assert type(a) is BestFit and a.tag == "t" and a.dumps() == "rank0/core0"
    assert pool.alloc(2, pool.parse_resource_request(jobspec(slots(3)))).dumps() == "rank0/core1 rank2/core[0-1]"
    assert pool.copy().tag == "t"
    with pytest.raises(fr.InfeasibleRequest, match="one node at most"):
        pool.check_feasibility(pool.parse_resource_request(jobspec(nodes(2))))
    with pytest.raises(fr.InsufficientResources):
        pool.alloc(3, pool.parse_resource_request(jobspec(slots(5))))


def test_a_selection_hook_cannot_take_allocated_resources(fr):
    class Greedy(fr.Rv1Pool):
        def _select_resources(self, candidates, request):
            return [(0, frozenset({0}), frozenset())], 1

    pool = Greedy(UNEVEN)
    pool.alloc(1, pool.parse_resource_request(jobspec(slots(1))))
    with pytest.raises(ValueError, match="_select_resources: rank 0: resources not free in the pool"):
        pool.alloc(2, pool.parse_resource_request(jobspec(slots(1))))


# -- pool classes -----------------------------------------------------------------------------------


@pytest.fixture
def poolmod(fr, tmp_path, monkeypatch):
    from flux.resource import ResourcePool as RP_module  # noqa: F401  (the class, see the first test)
    from flux.resource.ResourcePool import _POOL_CLASS_CACHE

    (tmp_path / "rackpool.py").write_text(
        "from flux.resource.Rv1Pool import Rv1Pool\n"
        "class RackPool(Rv1Pool):\n"
        "    known_options = frozenset({'racks'})\n"
        "    def __init__(self, R, log=None, **kw):\n"
        "        super().__init__(R, log=log)\n"
        "        self.impl = self\n"
        "        self.kw = kw\n"
        "pool_class = RackPool\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    _POOL_CLASS_CACHE.clear()
    sys.modules.pop("rackpool", None)


def test_pool_class_from_uri(fr, poolmod):
    from flux.resource.ResourcePool import _POOL_CLASS_CACHE, _pool_class_from_uri

    assert _pool_class_from_uri("rackpool").__name__ == "RackPool"
    assert _pool_class_from_uri("rackpool:RackPool") is _pool_class_from_uri("rackpool")
    assert _pool_class_from_uri("rackpool:Nope") is None
    assert _pool_class_from_uri("json") is None  # (no pool_class)
    assert _pool_class_from_uri("no-such-pool-module") is None
    # a bare name is looked up in flux.resource too; dashes read as underscores
    assert _pool_class_from_uri("Rv1Pool:Rv1Pool") is fr.Rv1Pool
    assert sorted(_POOL_CLASS_CACHE) == ["Rv1Pool:Rv1Pool", "rackpool", "rackpool:RackPool"]


def test_make_pool_selection(fr, poolmod):
    from flux.resource.ResourcePool import make_pool

    rack = sys.modules["rackpool"].RackPool if "rackpool" in sys.modules else None
    pool = make_pool(R(scheduling={"writer": "nosuchwriter"}), None, {"racks": 2})
    assert type(pool) is fr.ResourcePool  # (an unresolved writer: the default)
    pool = make_pool(json.dumps(R(scheduling={"writer": "rackpool"})), None, {"racks": 2})
    rack = type(pool)
    assert rack.__name__ == "RackPool" and pool.kw == {"racks": 2} and pool.impl is pool
    # pool_class first, whatever the writer says
    assert type(make_pool(R(scheduling={"writer": "rackpool"}), fr.ResourcePool)) is fr.ResourcePool
    assert type(make_pool(R(scheduling={}), None)) is fr.ResourcePool  # (no writer: fluxion, not here)
    sim = pool.copy()
    assert type(sim) is rack and sim.impl is sim
    with pytest.raises(ValueError, match="pool_class must be a ResourcePool or ResourcePoolImplementation"):
        make_pool(R(), str)
    with pytest.raises(ValueError, match="must set self.impl = self during __init__"):
        make_pool(R(), fr.Rv1Pool)


# -- TreePool ----------------------------------------------------------------------------------------

NUMA2 = [{"cores": "0-3", "gpus": "0"}, {"cores": "4-7", "gpus": "1"}]


def tree_R(ranks="0-1", children=None):
    r = R(ranks, cores="0-7", gpus="0-1")
    r["scheduling"] = {"writer": "TreePool", "children": children or [{"ranks": ranks, "topo": {"numa": NUMA2}}]}
    return r


def test_treepool_is_a_pool_class_uri(fr):
    from flux.resource.ResourcePool import _POOL_CLASS_CACHE, _pool_class_from_uri, make_pool
    from flux.resource.TreePool import TreePool

    try:
        assert _pool_class_from_uri("TreePool") is TreePool
        pool = make_pool(tree_R())  # (the writer names it)
        assert type(pool) is TreePool and pool.impl.name == "TreePool"
    finally:
        _POOL_CLASS_CACHE.clear()


def test_treepool_layouts_are_renumbered_and_shared(fr):
    from flux.resource.TreePool import TreePool

    pool = TreePool(tree_R(children=[{"ranks": "10", "topo": {"numa": NUMA2}},
                                     {"ranks": "11", "topo": {"numa": NUMA2}}]))
    impl = pool.impl
    assert impl._rank_type == {0: 0, 1: 0} and len(impl._type_levels) == 1
    g0, g1 = (frozenset(range(4)), frozenset({0})), (frozenset(range(4, 8)), frozenset({1}))
    assert impl._rank_levels(0) == [[g0, g1], [(frozenset(range(8)), frozenset({0, 1}))]]
    assert impl.scheduling["children"] == [{"ranks": "0", "topo": {"numa": NUMA2}},
                                           {"ranks": "1", "topo": {"numa": NUMA2}}]
    for bad, message in [({"writer": "TreePool"}, "TreePool requires scheduling.children"),
                         (None, "TreePool requires R.scheduling")]:
        r = tree_R()
        if bad is None:
            del r["scheduling"]
        else:
            r["scheduling"] = bad
        with pytest.raises(ValueError, match=message):
            TreePool(r)
    with pytest.raises(ValueError, match="rank count mismatch: 1 in children vs 2 in pool"):
        TreePool(tree_R(children=[{"ranks": "0", "topo": {"numa": NUMA2}}]))


def test_treepool_places_slots_in_groups(fr):
    from flux.resource.TreePool import TreePool

    pool = TreePool(tree_R())
    # a gpu slot takes its cores next to its gpu; best fit keeps to the used node
    assert alloc(pool, 1, slots(1, cores=2, gpus=1)).dumps() == "rank0/core[0-1],gpu0"
    assert alloc(pool, 2, slots(1, cores=2, gpus=1)).dumps() == "rank0/core[4-5],gpu1"
    # a cpu slot goes to the group with the fewest free cores (keeping rank 1's whole)
    assert alloc(pool, 3, slots(1, cores=2)).dumps() == "rank0/core[2-3]"
    # a slot wider than a group: the whole node's level
    assert alloc(pool, 4, slots(1, cores=6, gpus=1)).dumps() == "rank1/core[0-5],gpu0"
    with pytest.raises(fr.InsufficientResources):
        alloc(pool, 5, slots(1, cores=3, gpus=1))
    a = alloc(pool, 6, slots(1, cores=2, gpus=1))
    assert a.dumps() == "rank1/core[6-7],gpu1"
    # an allocation's R keeps the children of its ranks
    assert a.to_dict()["scheduling"]["children"] == [{"ranks": "1", "topo": {"numa": NUMA2}}]
    with pytest.raises(fr.InfeasibleRequest):
        alloc(pool, 7, slots(1, gpus=3))


def test_treepool_exclusive_nodes_and_containers(fr):
    from flux.resource.TreePool import TreePool

    pool = TreePool(tree_R())
    a = alloc(pool, 1, nodes(1, cores=4, gpus=1, exclusive=True))
    assert a.dumps() == "rank0/core[0-7],gpu[0-1]" and a.impl._nslots == 1
    numa = [{"type": "node", "count": 1, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "numa", "count": 1, "exclusive": True}]}]}]
    rr = pool.parse_resource_request(jobspec(numa))
    assert rr.container_level == "numa" and rr.slot_size == 0 and rr.nnodes == 1
    assert pool.alloc(2, rr).dumps() == "rank1/core[0-3],gpu0"
    assert pool.alloc(3, rr).dumps() == "rank1/core[4-7],gpu1"
    with pytest.raises(fr.InsufficientResources):
        pool.alloc(4, rr)
    three = [{"type": "node", "count": 1, "with": [
        {"type": "slot", "count": 3, "with": [{"type": "numa", "count": 1, "exclusive": True}]}]}]
    with pytest.raises(fr.InfeasibleRequest) as info:
        pool.check_feasibility(pool.parse_resource_request(jobspec(three)))
    assert str(info.value) == ("unsatisfiable request: need 1 node(s) with 3 exclusive 'numa' "
                               "container(s) each, only 0 eligible")
