import json
import random

import pytest

from flux_lite.errors import FluxLiteError
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset
from flux_lite.sched.pool import (
    InfeasibleRequest,
    InsufficientResources,
    Pool,
    PoolError,
)
from flux_lite.sched.request import ResourceRequest

RR = ResourceRequest
REF_R = (
    '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": '
    '{"core": "0-1"}}], "starttime": 1795978044.3859792, "expiration": '
    '1795978344.3859792, "nslots": 1, "nodelist": ["vm"]}}'
)


def ascii_ids(jobid):
    return f"f{jobid}"


def pool_of(n, cores, gpus=0, **kw):
    return Pool(Rset.build([(f"node{i}", cores, gpus) for i in range(n)]), **kw)


def test_worst_fit_order_t2300():
    pool = pool_of(2, 2)
    got = [pool.alloc(j, RR(), 100.0).summary() for j in range(1, 5)]
    assert got == ["rank0/core0", "rank1/core0", "rank0/core1", "rank1/core1"]
    with pytest.raises(InsufficientResources):
        pool.alloc(5, RR(), 100.0)
    assert pool.free_rset().summary() == ""
    assert pool.allocated_rset().summary() == "rank[0-1]/core[0-1]"
    # cancel job3 -> job5 gets rank0/core1
    freed = pool.free(3)
    assert freed.summary() == "rank0/core1"
    assert pool.alloc(5, RR(), 101.0).summary() == "rank0/core1"
    for j in (1, 2, 4, 5):
        pool.free(j, None, True)
    assert pool.free_rset().summary() == "rank[0-1]/core[0-1]"
    assert len(pool) == 0


def test_reference_job_R():
    pool = Pool(Rset.build([("vm", 2, 0)] * 4))
    R = pool.alloc(7, RR(nnodes=1, nslots=1, exclusive=True, duration=300.0), 1795978044.3859792)
    assert R.to_json() == REF_R
    assert pool.end_time(7) == 1795978344.3859792
    assert pool.free_rset().summary() == "rank[1-3]/core[0-1]"
    assert str(pool.free_rset().nodelist) == "vm,vm,vm"


def test_expiration_rules():
    pool = pool_of(1, 4)
    R = pool.alloc(1, RR(duration=60.0), 1000.0, expiration_default=5000.0)
    assert (R.starttime, R.expiration) == (1000.0, 1060.0)
    R = pool.alloc(2, RR(), 1000.0, expiration_default=5000.0)
    assert (R.starttime, R.expiration) == (1000.0, 5000.0)
    assert pool.end_time(2) == 5000.0
    R = pool.alloc(3, RR(), 1000.0)
    assert R.expiration == 0.0 and pool.end_time(3) == 0.0
    assert R.to_dict()["execution"]["expiration"] == 0.0
    assert pool.update_expiration(1, 2000.0)
    assert pool.end_time(1) == 2000.0
    assert not pool.update_expiration(99, 1.0)
    assert pool.end_time(99) is None
    assert sorted(pool.job_end_times()) == [(1, 2000.0), (2, 5000.0), (3, 0.0)]


def test_drain_interplay_t2302():
    pool = pool_of(2, 4)
    assert pool.free_rset().summary() == "rank[0-1]/core[0-3]"
    pool.set_down(IDset([0]))
    assert pool.up_rset().summary() == "rank1/core[0-3]"
    assert pool.down_rset().summary() == "rank0/core[0-3]"
    R = pool.alloc(1, RR(), 1.0)
    assert R.summary() == "rank1/core0"
    assert pool.free_rset().summary() == "rank1/core[1-3]"
    pool.set_down("1")
    assert pool.down_rset().summary() == "rank[0-1]/core[0-3]"
    assert pool.allocated_rset().summary() == "rank1/core0"
    assert pool.free_rset().summary() == ""
    assert pool.free_counts() == (0, 0)
    with pytest.raises(InsufficientResources):
        pool.alloc(2, RR(), 2.0)
    assert not pool.would_fit_now(RR())
    pool.set_up("0")
    assert pool.alloc(2, RR(), 3.0).summary() == "rank0/core0"
    alloc = pool.allocated_rset()
    assert alloc.summary() == "rank[0-1]/core0"
    assert (alloc.nnodes, alloc.ncores) == (2, 2)
    assert pool.down_ranks() == IDset([1]) and pool.up_ranks() == IDset([0])
    assert pool.is_up(0) and not pool.is_up(1) and not pool.is_up(7)
    pool.set_up("all")
    pool.set_down([5, 0])  # unknown ranks ignored
    assert pool.down_ranks() == IDset([0])


def test_unsatisfiable_messages():
    pool = pool_of(2, 2)
    with pytest.raises(InfeasibleRequest) as exc:
        pool.alloc(1, RR(slot_size=3), 0.0)
    assert str(exc.value).startswith("unsatisfiable request")
    assert str(exc.value) == (
        "unsatisfiable request: need 1 slot(s) of 3 core(s), only 0 such "
        "slot(s) available (total cores: 4)"
    )
    with pytest.raises(InfeasibleRequest, match="(?i)gpu"):
        pool.alloc(1, RR(gpu_per_slot=1), 0.0)
    with pytest.raises(InfeasibleRequest, match="(?i)gpu"):
        pool.alloc(1, RR(nnodes=1, gpu_per_slot=1), 0.0)
    with pytest.raises(InfeasibleRequest, match="(?i)gpu"):
        pool.alloc(1, RR(nnodes=1, gpu_per_slot=1, exclusive=True), 0.0)
    with pytest.raises(InfeasibleRequest, match="unsatisfiable request"):
        pool.alloc(1, RR(slot_size=100), 0.0)
    with pytest.raises(InfeasibleRequest) as exc:
        pool.alloc(1, RR(nnodes=3, nslots=3, exclusive=True), 0.0)
    assert str(exc.value) == (
        "unsatisfiable request: need 3 exclusive node(s), only 2 eligible"
    )
    with pytest.raises(InfeasibleRequest) as exc:
        pool.alloc(1, RR(nnodes=2, nslots=6), 0.0)
    assert str(exc.value) == (
        "unsatisfiable request: need 2 node(s) with 3 cores each, only 0 eligible"
    )
    with pytest.raises(InfeasibleRequest):
        pool.alloc(1, RR(nslots=0), 0.0)
    with pytest.raises(InfeasibleRequest):
        pool.check_feasibility(RR(nslots=5))
    pool.check_feasibility(RR(nslots=4))
    # infeasible even while everything is allocated or down: still infeasible
    pool.set_down("all")
    with pytest.raises(InfeasibleRequest):
        pool.alloc(1, RR(slot_size=3), 0.0)
    with pytest.raises(InsufficientResources):
        pool.alloc(1, RR(slot_size=2), 0.0)
    assert len(pool) == 0 and pool.generation > 0
    assert isinstance(InsufficientResources("x"), FluxLiteError)


def test_gpu_allocation():
    pool = Pool(
        Rset.from_dict(
            {
                "version": 1,
                "execution": {
                    "R_lite": [{"rank": "0-1", "children": {"core": "0-1", "gpu": "0"}}],
                    "nodelist": ["vm,vm"],
                },
            }
        )
    )
    R = pool.alloc(1, RR(gpu_per_slot=1), 5.0)
    assert R.summary() == "rank0/core0,gpu0"
    assert R.to_dict()["execution"]["R_lite"] == [
        {"rank": "0", "children": {"core": "0", "gpu": "0"}}
    ]
    assert pool.alloc(2, RR(gpu_per_slot=1), 5.0).summary() == "rank1/core0,gpu0"
    with pytest.raises(InsufficientResources):
        pool.alloc(3, RR(gpu_per_slot=1), 5.0)
    # gpu-free slots still fit (worst fit by free cores, then free gpus)
    assert pool.alloc(3, RR(), 5.0).summary() == "rank0/core1"


def test_node_requests():
    pool = pool_of(4, 4)
    R = pool.alloc(1, RR(nnodes=2, nslots=4), 0.0)
    assert R.summary() == "rank[0-1]/core[0-1]" and R.nslots == 4
    R = pool.alloc(2, RR(nnodes=1, nslots=1, exclusive=True), 0.0)
    assert R.summary() == "rank2/core[0-3]" and R.nslots == 1
    # exclusive without nodes: one whole node per slot
    R = pool.alloc(3, RR(nslots=1, exclusive=True), 0.0)
    assert R.summary() == "rank3/core[0-3]"
    with pytest.raises(InsufficientResources):
        pool.alloc(4, RR(nnodes=1, exclusive=True), 0.0)
    # slot packing: most free cores first
    R = pool.alloc(4, RR(nslots=3, slot_size=1), 0.0)
    assert R.summary() == "rank0/core[2-3] rank1/core2"
    assert R.nslots == 3


def test_slot_packing_spans_ranks():
    pool = pool_of(3, 4)
    R = pool.alloc(1, RR(nslots=5, slot_size=2), 0.0)
    assert R.summary() == "rank[0-1]/core[0-3] rank2/core[0-1]"
    assert R.nslots == 5


def test_properties_and_scheduling_t2300():
    rs = Rset.from_dict(
        {
            "version": 1,
            "execution": {
                "R_lite": [{"rank": "0-3", "children": {"core": "0-1"}}],
                "nodelist": ["vm,vm,vm,vm"],
                "properties": {"xx": "0-1", "+batch": "0-3"},
            },
            "scheduling": {"test": "data"},
        }
    )
    pool = Pool(rs)
    R = pool.alloc(1, RR(properties=("xx",)), 0.0)
    d = R.to_dict()
    assert d["execution"]["properties"] == {"xx": "0"}
    assert d["scheduling"] == {"test": "data"}
    R = pool.alloc(2, RR(properties=["+batch"]), 0.0)
    assert R.summary() == "rank1/core0"
    assert "+batch" not in R.to_dict()["execution"].get("properties", {})
    assert "+batch" in pool.rset.to_dict()["execution"]["properties"]
    R = pool.alloc(3, RR(properties=("^xx",)), 0.0)
    assert R.ranks == IDset([2])
    assert "properties" not in R.to_dict()["execution"]
    R = pool.alloc(4, RR(constraint={"hostlist": ["vm"], "ranks": ["3"]}), 0.0)
    assert R.ranks == IDset([3])
    assert pool.alloc(6, RR(properties="xx"), 0.0).ranks == IDset([0])
    with pytest.raises(InfeasibleRequest, match="invalid constraint"):
        pool.alloc(7, RR(constraint={"bogus": []}), 0.0)
    with pytest.raises(InfeasibleRequest, match="invalid constraint"):
        pool.alloc(7, RR(constraint={"properties": [object()]}), 0.0)
    with pytest.raises(InfeasibleRequest):
        pool.alloc(7, RR(properties=(["x"],)), 0.0)
    with pytest.raises(InfeasibleRequest) as exc:
        pool.alloc(5, RR(properties=("nope",)), 0.0)
    assert "only 0 such slot(s)" in str(exc.value)
    with pytest.raises(InsufficientResources):
        pool.alloc(5, RR(nslots=2, slot_size=2, properties=("xx",)), 0.0)


def test_register_alloc_hello():
    pool = pool_of(2, 2, jobid_str=ascii_ids)
    R = Rset.build([("node0", 2, 0), ("node1", 2, 0)]).copy_ranks("1").with_times(1.0, 50.0)
    pool.register_alloc(11, R)
    assert pool.end_time(11) == 50.0
    assert pool.allocated_rset().summary() == "rank1/core[0-1]"
    assert pool.alloc(12, RR(), 2.0).summary() == "rank0/core0"
    # double booking
    with pytest.raises(PoolError, match="already allocated: rank0/core0"):
        pool.register_alloc(13, Rset.build([("node0", 1, 0)]))
    with pytest.raises(PoolError, match="already has an allocation"):
        pool.register_alloc(11, R)
    # ranks not in the pool (e.g. excluded by config)
    big = Rset.build([(f"node{i}", 1, 0) for i in range(4)])
    with pytest.raises(PoolError) as exc:
        pool.register_alloc(14, big.copy_ranks("2-3"))
    assert str(exc.value) == "allocation contains ranks not in resource pool: [2, 3]"
    assert isinstance(exc.value, ValueError)
    with pytest.raises(PoolError, match="not in resource pool: rank0/core7"):
        pool.register_alloc(15, Rset.from_dict(
            {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "7"}}]}}
        ))
    # failed registrations changed nothing
    assert pool.allocated_rset().summary() == "rank0/core0 rank1/core[0-1]"
    # hello on a down rank, then free (t4184)
    pool.set_down("1")
    assert pool.free(11, R, final=True).summary() == "rank1/core[0-1]"
    pool.set_up("1")
    assert pool.free_rset().summary() == "rank0/core1 rank1/core[0-1]"


def test_free_checks_and_partial_release():
    pool = pool_of(4, 2, jobid_str=ascii_ids)
    R = pool.alloc(42, RR(nnodes=4, nslots=4, exclusive=True), 0.0)
    assert R.summary() == "rank[0-3]/core[0-1]"
    with pytest.raises(PoolError) as exc:
        pool.free(42, Rset.build([(f"n{i}", 2, 0) for i in range(6)]).copy_ranks("3-5"))
    assert str(exc.value) == (
        "free: f42: R contains ranks not in job allocation: {4, 5}"
    )
    with pytest.raises(PoolError) as exc:
        pool.free(42, R.copy_ranks("0-1"), final=True)
    assert str(exc.value) == (
        "free: f42: final R mismatch: got rank[0-1]/core[0-1], "
        "expected rank[0-3]/core[0-1]"
    )
    # housekeeping style: ranks 0, 1, 2 then the final rank 3
    for r in "012":
        freed = pool.free(42, R.copy_ranks(r), final=False)
        assert freed.summary() == f"rank{r}/core[0-1]"
    remaining, end = pool.allocations()[42]
    assert remaining.summary() == "rank3/core[0-1]"
    with pytest.raises(PoolError, match="not in job allocation: {0, 1, 2}"):
        pool.free(42, R, final=True)
    short = Rset.from_dict(
        {"version": 1, "execution": {"R_lite": [{"rank": "3", "children": {"core": "0"}}]}}
    )
    with pytest.raises(PoolError, match="final R mismatch: got rank3/core0, expected"):
        pool.free(42, short, final=True)
    pool.free(42, R.copy_ranks("3"), final=True)
    assert 42 not in pool
    assert pool.free_rset().summary() == "rank[0-3]/core[0-1]"
    assert pool.free(42, R, True) is None  # unknown job: ignored


def test_alloc_same_job_twice():
    pool = pool_of(1, 2)
    pool.alloc(1, RR(), 0.0)
    with pytest.raises(PoolError):
        pool.alloc(1, RR(), 0.0)


def test_copy_is_independent():
    pool = pool_of(2, 2)
    pool.alloc(1, RR(duration=10), 0.0)
    gen = pool.generation
    sim = pool.copy()
    assert sim.generation == gen
    sim.alloc(2, RR(), 0.0)
    sim.free(1)
    sim.set_down("0")
    sim.update_expiration(2, 99.0)
    assert sorted(pool.allocations()) == [1]
    assert pool.allocated_rset().summary() == "rank0/core0"
    assert pool.down_ranks() == IDset()
    assert pool.generation == gen
    assert pool.alloc(3, RR(), 0.0).summary() == "rank1/core0"


def test_dump_and_load():
    pool = pool_of(3, 4)
    pool.alloc(1, RR(nslots=2, duration=10), 5.0)
    pool.alloc(2, RR(nnodes=1, exclusive=True), 5.0)
    three = Rset.build([(f"node{i}", 4, 0) for i in range(3)])
    pool.register_alloc(3, three.copy_ranks("2").with_times(1, 2))
    pool.update_expiration(1, 77.0)
    pool.set_down("2")
    state = json.loads(json.dumps(pool.dump_allocs()))
    again = Pool.load(pool.rset, state, down="2")
    assert again.allocated_rset() == pool.allocated_rset()
    assert again.free_rset() == pool.free_rset()
    assert again.down_rset() == pool.down_rset()
    assert sorted(again.job_end_times()) == sorted(pool.job_end_times())
    assert {j: r.to_json() for j, (r, _) in again.allocations().items()} == {
        j: r.to_json() for j, (r, _) in pool.allocations().items()
    }
    assert again.end_time(1) == 77.0
    assert again.dump_allocs() == state
    # a loaded job can be freed and the pool keeps working
    again.free(2, None, True)
    assert again.alloc(4, RR(nnodes=1, exclusive=True), 6.0).summary() == "rank1/core[0-3]"
    # conflicting persisted allocations are refused like register_alloc
    with pytest.raises(PoolError):
        Pool.load(pool.rset, state + [dict(state[0], id=9)])
    small = Rset.build([("node0", 4, 0)])
    with pytest.raises(PoolError, match="not in resource pool"):
        Pool.load(small, state)


def test_remove_ranks():
    pool = pool_of(3, 2)
    pool.alloc(1, RR(nnodes=3, nslots=3), 0.0)
    pool.set_down("0")
    pool.remove_ranks("2")
    assert pool.ranks == IDset([0, 1])
    assert pool.allocated_rset().summary() == "rank[0-1]/core0"
    assert pool.down_ranks() == IDset([0])
    assert pool.free(1).ranks == IDset([0, 1, 2])
    assert pool.allocated_rset().summary() == ""


# --- model check against a straightforward port of Rv1Pool's algorithm -----


class RefPool:
    def __init__(self, nodes, props):
        self.nodes = nodes  # rank -> (cores set, gpus set)
        self.props = props  # name -> set of ranks
        self.ac = {r: set() for r in nodes}
        self.ag = {r: set() for r in nodes}
        self.up = {r: True for r in nodes}
        self.jobs = {}

    def allowed(self, req):
        ok = set(self.nodes)
        for p in req.properties:
            if p.startswith("^"):
                ok -= self.props.get(p[1:], set())
            else:
                ok &= self.props.get(p, set())
        return ok

    def alloc(self, jobid, req):
        s, g = req.slot_size, req.gpu_per_slot
        excl = req.exclusive
        nnodes, nslots = req.nnodes, req.nslots
        if excl and nnodes == 0:
            nnodes, spn = nslots, 1
        elif nnodes:
            spn = max(1, nslots // nnodes)
        ok = self.allowed(req)
        cands = []
        for r in sorted(self.nodes):
            if not self.up[r] or r not in ok:
                continue
            fc = self.nodes[r][0] - self.ac[r]
            fg = self.nodes[r][1] - self.ag[r]
            if len(fc) < (len(self.nodes[r][0]) if excl else s):
                continue
            if g > 0 and len(fg) < g:
                continue
            cands.append((r, fc, fg))
        cands.sort(key=lambda c: (len(c[1]), len(c[2])), reverse=True)
        sel = []
        if nnodes:
            for r, fc, fg in cands:
                if len(sel) == nnodes:
                    break
                if len(fc) < spn * s or len(fg) < spn * g:
                    continue
                if excl:
                    sel.append((r, fc, fg))
                else:
                    sel.append((r, set(sorted(fc)[: spn * s]), set(sorted(fg)[: spn * g])))
            if len(sel) < nnodes:
                return None
        else:
            left = nslots
            for r, fc, fg in cands:
                if not left:
                    break
                per = len(fc) // s
                if g:
                    per = min(per, len(fg) // g)
                take = min(per, left)
                if take:
                    sel.append((r, set(sorted(fc)[: take * s]), set(sorted(fg)[: take * g])))
                    left -= take
            if left:
                return None
        for r, c, gg in sel:
            self.ac[r] |= c
            self.ag[r] |= gg
        self.jobs[jobid] = sel
        return {r: (c, gg) for r, c, gg in sel}

    def free(self, jobid):
        for r, c, g in self.jobs.pop(jobid):
            self.ac[r] -= c
            self.ag[r] -= g


def random_request(rng):
    kind = rng.random()
    props = tuple(rng.sample(["a", "b", "^a", "+c"], rng.randint(0, 1)))
    g = rng.choice([0, 0, 0, 1, 2])
    if kind < 0.55:
        return RR(nslots=rng.randint(1, 6), slot_size=rng.randint(1, 3), gpu_per_slot=g,
                  properties=props)
    if kind < 0.8:
        n = rng.randint(1, 3)
        return RR(nnodes=n, nslots=n * rng.randint(1, 2), slot_size=rng.randint(1, 2),
                  gpu_per_slot=g, properties=props)
    return RR(nnodes=rng.randint(0, 2), nslots=rng.randint(1, 2), exclusive=True,
              gpu_per_slot=g, properties=props)


@pytest.mark.parametrize("seed", range(28))
def test_matches_reference_model(seed):
    rng = random.Random(seed)
    nranks = rng.randint(1, 9) if seed < 24 else rng.randint(65, 160)  # (wide: rank masks of several words)
    spec = []
    props = {"a": set(), "b": set(), "+c": set()}
    for r in range(nranks):
        nc, ng = rng.choice([(2, 0), (4, 0), (4, 2), (8, 1), (3, 3)])
        mine = tuple(p for p in props if rng.random() < 0.4)
        for p in mine:
            props[p].add(r)
        spec.append((f"h{r}", nc, ng, mine))
    pool = Pool(Rset.build(spec))
    ref = RefPool({r: (set(range(nc)), set(range(ng))) for r, (_, nc, ng, _) in enumerate(spec)},
                  props)
    jid = 0
    for _ in range(300):
        op = rng.random()
        if op < 0.55:
            jid += 1
            req = random_request(rng)
            want = ref.alloc(jid, req)
            assert pool.would_fit_now(req) == (want is not None)
            try:
                R = pool.alloc(jid, req, float(jid))
            except InsufficientResources:
                assert want is None
                continue
            except InfeasibleRequest:
                assert want is None
                continue
            assert want is not None
            got = {r: (set(c), set(g)) for r, _, c, g in R.nodes()}
            assert got == want
            assert not any(n.startswith("+") for n in R.properties)
        elif op < 0.85 and ref.jobs:
            j = rng.choice(sorted(ref.jobs))
            ref.free(j)
            pool.free(j, pool.allocations()[j][0], final=True)
        elif op < 0.93:
            r = rng.randrange(nranks)
            ref.up[r] = False
            pool.set_down([r])
        else:
            r = rng.randrange(nranks)
            ref.up[r] = True
            pool.set_up([r])
        # invariants
        alloc = pool.allocated_rset()
        assert {r: (set(c), set(g)) for r, _, c, g in alloc.nodes()} == {
            r: (ref.ac[r], ref.ag[r]) for r in ref.nodes if ref.ac[r] or ref.ag[r]
        }
        assert pool.free_rset().union(alloc).union(pool.down_rset()).same_resources(pool.rset)
        if rng.random() < 0.1:
            sim = pool.copy()
            assert sim.allocated_rset() == alloc
        assert pool.nfree_up_cores == pool.free_counts()[0]


def test_large_fragmented_pool_allocates_refuses_and_copies():
    # (timed in bench/pool_ops.py: tests are not timed)
    rs = Rset.build([(f"node{i}", 32, 0) for i in range(256)])
    pool = Pool(rs)
    rng = random.Random(7)
    jid = 0
    for _ in range(1000):
        jid += 1
        pool.alloc(jid, RR(nslots=rng.randint(1, 3), slot_size=rng.randint(1, 4)), 0.0)
    jobs = list(pool.allocations())
    rng.shuffle(jobs)
    for j in jobs[:500]:
        pool.free(j)
    before = pool.free_counts()
    with pytest.raises(InsufficientResources):
        pool.alloc(0, RR(nslots=8000, slot_size=1), 0.0)  # fits the machine, not what is free
    assert pool.free_counts() == before  # a refusal changes nothing
    for _ in range(100):
        jid += 1
        pool.alloc(jid, RR(nslots=1, slot_size=rng.randint(1, 4)), 0.0)
    sim = pool.copy()
    assert len(sim) == len(pool) and sim.free_counts() == pool.free_counts()
    sim.free(jid)
    assert sim.free_counts() != pool.free_counts()  # the copy is independent


def test_compact_R_of_the_schedulers_R():
    """The row's compact R text, derived from the text the scheduler stored,
    is json.dumps' compact text: with GPUs, nslots, odd host names and
    properties (which take the encoder); an R that was only parsed (its
    strings may hold anything) is encoded."""
    from flux_lite.formats import jsontext
    from flux_lite.formats.rset import compact_R

    rng = random.Random(3)
    hosts = [("fe", 2, 0), ("node007", 4, 1), ("node8", 4, 2), ("x-1.lab", 3, 0), ("node10", 4, 2)]
    for props in (None, {"big mem": "1-2", "gpu:a": "4"}):
        rs = Rset.build(hosts)
        if props:
            rs = rs.with_properties(props)
        pool = Pool(rs)
        for jobid in range(1, 40):
            req = RR(nnodes=rng.choice([0, 0, 1, 2]), nslots=rng.choice([1, 2, 3]), slot_size=rng.choice([1, 2]),
                     gpu_per_slot=rng.choice([0, 0, 1]), duration=rng.choice([0.0, 60.5]))
            try:
                got = pool.alloc(jobid, req, 1767225600.25)
            except (InsufficientResources, InfeasibleRequest):
                pool.free(rng.choice(list(pool.allocations()) or [jobid]), None, final=True)
                continue
            R = got.to_dict()
            got.remember_as(jsontext.dumps(R), R)
            assert compact_R(R) == json.dumps(R, separators=(",", ":"))
    parsed = json.loads('{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}, '
                        '"note": "a, b: c"}], "starttime": 0.0, "expiration": 0.0}}')
    Rset.from_dict(parsed)
    assert compact_R(parsed) == json.dumps(parsed, separators=(",", ":"))


@pytest.mark.parametrize("nranks", [40, 150])  # (150: bucket masks of more than one 64-bit word)
def test_buckets_follow_allocations_and_frees(nranks):
    """The free-capacity buckets (bitmasks of rank indexes, moved a rank at
    a time when a job takes or gives back ranks) always hold what the
    ranks' free counts say."""
    rng = random.Random(11)
    pool = Pool(Rset.build([(f"n{i}", rng.choice([1, 2, 4]), rng.choice([0, 0, 2])) for i in range(nranks)]))
    pool.set_down("3,17")

    def expected():
        out = {}
        for i in range(nranks):
            if pool.rank_up[i]:
                key = (pool.nfree_cores[i], pool.nfree_gpus[i])
                out[key] = out.get(key, 0) | 1 << i
        return out

    live = []
    for step in range(600):
        if live and (rng.random() < 0.45 or len(live) > 12):
            pool.free(live.pop(rng.randrange(len(live))), None, final=True)
        else:
            req = RR(nnodes=rng.choice([0, 0, 2, 5]), nslots=rng.choice([1, 3, 8, 20]), slot_size=rng.choice([1, 2]),
                     gpu_per_slot=rng.choice([0, 0, 1]))
            try:
                pool.alloc(step, req, 0.0)
                live.append(step)
            except (InsufficientResources, InfeasibleRequest):
                pass
        if step == 300:
            pool.set_up("3")
        assert pool._buckets == expected()
        assert pool._sorted_keys() == sorted(expected(), reverse=True)
        # the free cores of up ranks, kept as they change (a pass reads it)
        assert pool.nfree_up_cores == sum(pool.nfree_cores[i] for i in range(nranks) if pool.rank_up[i])
        if step % 50 == 0:
            view = pool.copy(jobs=False)
            for i in rng.sample(range(nranks), 5):  # (a planner's view sets ranks' masks directly)
                view.set_masks(i, pool.topology.core_mask[i] & rng.getrandbits(4), 0)
            assert view.nfree_up_cores == sum(view.nfree_cores[i] for i in range(nranks) if view.rank_up[i])


@pytest.mark.parametrize("hosts", [
    [f"node{i}" for i in range(120)],  # prefix + rank: the nodelist is written from the ranks
    [f"n-{i}" for i in range(12)],
    [f"node{i:03d}" for i in range(12)],  # padded, a digit-ended prefix, other names: Hostlist writes it
    [f"rack1{i}" for i in range(12)],
    ["fe"] + [f"node{i}" for i in range(1, 12)],
])
def test_allocation_nodelist_is_the_hostlist_of_its_hosts(hosts):
    from flux_lite.formats.hostlist import Hostlist

    rng = random.Random(len(hosts))
    pool = Pool(Rset.build([(h, 2, 0) for h in hosts]))
    live = []
    for jobid in range(300):
        req = RR(nslots=rng.choice([1, 2, 3, 7, 15, 40]), slot_size=rng.choice([1, 2]))
        try:
            R = pool.alloc(jobid, req, 0.0)
        except InfeasibleRequest:
            continue
        except InsufficientResources:
            pool.free(live.pop(rng.randrange(len(live))), None, final=True)
            continue
        live.append(jobid)
        want = str(Hostlist.from_hosts(hosts[r] for r in R.ranks))
        assert R.to_dict()["execution"]["nodelist"] == [want]
        assert R.nodelist_text() == want == str(R.nodelist)
