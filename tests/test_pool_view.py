"""The pool's public planner view (sched/pool.py: Topology, the per-rank
lists, jobs, plan/select/apply/set_masks, restore_masks/attach_jobs), what a
planner relies on; and that no module but pool.py reads a Pool private."""

import pathlib
import random
import re

import pytest

from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset
from flux_lite.sched.pool import InfeasibleRequest, Pool, ResourceRequest

RR = ResourceRequest


def ids(text):
    return IDset.parse(text)


def sparse_pool():
    """Ranks 2, 5, 9 and 11 (index 0-3), unequal cores and gpus, properties."""
    nodes = {2: ("a2", ids("0-3"), IDset()), 5: ("b5", ids("0-7"), ids("0-1")), 9: ("a9", ids("0-3"), ids("0")),
             11: ("c11", ids("0-1"), IDset())}
    rs = Rset.from_nodes(nodes, properties={"big": ids("5"), "gpu": ids("5,9"), "x": ids("2,9")})
    return Pool(rs)


def state(pool):
    return (list(pool.alloc_cores), list(pool.alloc_gpus), list(pool.nfree_cores), list(pool.nfree_gpus),
            list(pool.rank_up), pool.nfree_up_cores, dict(pool.jobs), pool.free_counts())


def consistent(pool):
    """The lists agree with each other and the topology."""
    topo = pool.topology
    for i in range(len(topo.ranks)):
        assert pool.alloc_cores[i] & ~topo.core_mask[i] == 0
        assert pool.nfree_cores[i] == topo.ncores[i] - pool.alloc_cores[i].bit_count()
        assert pool.nfree_gpus[i] == topo.ngpus[i] - pool.alloc_gpus[i].bit_count()
    assert pool.nfree_up_cores == sum(n for n, up in zip(pool.nfree_cores, pool.rank_up) if up)
    assert pool.nfree_up_cores == pool.free_counts()[0]


def test_topology():
    pool = sparse_pool()
    topo = pool.topology
    assert topo.ranks == [2, 5, 9, 11]
    assert topo.index == {2: 0, 5: 1, 9: 2, 11: 3}
    assert topo.hosts == ["a2", "b5", "a9", "c11"]
    assert topo.core_mask == [0xF, 0xFF, 0xF, 0x3] and topo.gpu_mask == [0, 0x3, 0x1, 0]
    assert topo.ncores == [4, 8, 4, 2] and topo.ngpus == [0, 2, 1, 0]
    assert topo.rset is pool.rset
    # shared by copies; a pool whose ranks change gets another
    assert pool.copy().topology is topo and pool.copy(jobs=False).topology is topo
    pool.remove_ranks("9")
    assert pool.topology is not topo and pool.topology.ranks == [2, 5, 11]


def test_lists_follow_alloc_down_free():
    pool = sparse_pool()
    assert state(pool)[:6] == ([0] * 4, [0] * 4, [4, 8, 4, 2], [0, 2, 1, 0], [True] * 4, 18)
    R = pool.alloc(1, RR(nnodes=1, nslots=1, slot_size=3, gpu_per_slot=1, duration=60.0), 10.0)
    assert R.summary() == "rank5/core[0-2],gpu0"
    assert pool.alloc_cores[1] == 0b111 and pool.alloc_gpus[1] == 0b1
    assert pool.nfree_cores[1] == 5 and pool.nfree_gpus[1] == 1 and pool.nfree_up_cores == 15
    job = pool.jobs[1]
    assert job.end == 70.0 and job.parts == ((1, 0b111, 0b1),) and job.rset() is R
    assert list(pool.jobs) == [1] and 1 in pool.jobs
    consistent(pool)
    pool.set_down("5,11")
    assert pool.rank_up == [True, False, True, False]
    assert pool.nfree_up_cores == 8  # the free cores of ranks 2 and 9
    assert pool.nfree_cores[1] == 5  # (down or not)
    consistent(pool)
    pool.set_up("all")
    pool.free(1)
    assert state(pool)[:6] == ([0] * 4, [0] * 4, [4, 8, 4, 2], [0, 2, 1, 0], [True] * 4, 18)
    assert dict(pool.jobs) == {}


def test_request_plan():
    pool = sparse_pool()
    p = pool.plan(RR(nslots=5, slot_size=2, gpu_per_slot=0))
    assert (p.per_node, p.count, p.slots_per_node, p.slot_size, p.gpu_per_slot) == (False, 5, 0, 2, 0)
    assert (p.unit_cores, p.unit_gpus, p.min_cores, p.exclusive, p.allowed) == (2, 0, 10, False, None)
    p = pool.plan(RR(nnodes=2, nslots=6, slot_size=1, gpu_per_slot=1))
    assert (p.per_node, p.count, p.slots_per_node, p.unit_cores, p.unit_gpus, p.min_cores) == (True, 2, 3, 3, 3, 6)
    p = pool.plan(RR(nslots=2, slot_size=2, exclusive=True))  # a whole node per slot
    assert (p.per_node, p.count, p.slots_per_node, p.unit_cores, p.min_cores, p.exclusive) == (True, 2, 1, 2, 4, True)
    req = RR(nslots=1, properties=["gpu"])
    assert pool.plan(req) is pool.plan(req)  # made once per request and topology
    assert pool.plan(req).allowed == 0b0110
    with pytest.raises(InfeasibleRequest, match="counts must be integers"):
        pool.plan(RR(nslots=1.5))


@pytest.mark.parametrize("seed", range(4))
def test_allowed_ranks_are_what_constraints_match(seed):
    """The pool's reading of properties (with ^name) and constraints is the
    Rset's: the rank indexes a plan allows are the ranks ranks_matching gives."""
    pool = sparse_pool()
    rs, topo = pool.rset, pool.topology
    rnd = random.Random(seed)
    names = ["big", "gpu", "x", "nosuch"]
    for _ in range(50):
        props = [("^" if rnd.random() < 0.4 else "") + rnd.choice(names) for _ in range(rnd.randint(1, 3))]
        cons = rnd.choice([None, {"properties": [rnd.choice(["^big", "x"])]}, {"hostlist": ["a[2,9]"]}])
        want = rs.ranks_matching({"properties": props})
        if cons:
            want = want & rs.ranks_matching(cons)
        allowed = pool.plan(RR(nslots=1, properties=props, constraint=cons)).allowed
        assert {topo.ranks[i] for i in range(len(topo.ranks)) if allowed >> i & 1} == set(want), (props, cons)
    with pytest.raises(InfeasibleRequest, match="^property constraint must be a string$"):
        pool.plan(RR(nslots=1, properties=["x", 7]))


def test_select_changes_nothing_and_is_what_alloc_takes():
    rnd = random.Random(3)
    pool = sparse_pool()
    shapes = [RR(nslots=n, slot_size=s) for n in (1, 2, 5) for s in (1, 2)] + \
        [RR(nnodes=1, nslots=1, slot_size=2, gpu_per_slot=1), RR(nnodes=2, nslots=2, exclusive=True),
         RR(nslots=1, properties=["^big"])]
    live = []
    for jobid in range(300):
        req = rnd.choice(shapes)
        before = state(pool)
        found = pool.select(pool.plan(req))
        assert state(pool) == before
        other = pool.copy()
        got = other.alloc_or_none(jobid, req, float(jobid))
        if found is None:
            assert got is None
        else:
            R = pool.alloc_selected(jobid, req, found, float(jobid))
            assert got is not None and R.to_dict() == got.to_dict()
            assert state(pool)[:6] == state(other)[:6]
            live.append(jobid)
        if live and (found is None or rnd.random() < 0.3):
            pool.free(live.pop(rnd.randrange(len(live))))
        consistent(pool)


def test_apply_and_set_masks_on_a_copy():
    pool = sparse_pool()
    pool.alloc(1, RR(nslots=3), 0.0)
    before = state(pool)
    view = pool.copy(jobs=False)
    assert dict(view.jobs) == {} and view.alloc_cores == pool.alloc_cores
    view.apply(((3, 0b11, 0), (2, 0b1, 0b1)), True)
    assert view.alloc_cores[3] == 0b11 and view.nfree_cores[3] == 0 and view.alloc_gpus[2] == 0b1
    consistent(view)
    # the job took cores 0-2 of rank 5 (the most free): what the view shows free is taken next
    assert pool.alloc_cores[1] == 0b111
    assert view.select(view.plan(RR(nnodes=1, nslots=1, slot_size=1, gpu_per_slot=1)))[0] == [(1, 0b1000, 0b1)]
    view.set_masks(1, 0xFF, 0b11)  # rank 5 all taken
    assert view.nfree_cores[1] == 0 and view.nfree_gpus[1] == 0
    assert view.select(view.plan(RR(nslots=1, gpu_per_slot=1))) is None
    view.apply(((3, 0b11, 0),), False)
    view.set_masks(1, 0, 0)
    consistent(view)
    # rank 5 emptied (the job's 3 cores free), rank 9 still holds core 0
    assert view.alloc_cores == [0, 0, 0b1, 0] and view.nfree_up_cores == pool.nfree_up_cores + 3 - 1
    assert state(pool) == before  # the pool itself never changed


def test_restore_masks_and_attach_jobs():
    pool = sparse_pool()
    R1 = pool.alloc(1, RR(nnodes=2, nslots=2, slot_size=2, duration=100.0), 5.0)
    R2 = pool.alloc(2, RR(nslots=1, gpu_per_slot=1), 6.0)
    rows = [(pool.topology.ranks[i], cm, gm) for i, (cm, gm) in enumerate(zip(pool.alloc_cores, pool.alloc_gpus))
            if cm or gm]
    again = sparse_pool()
    again.restore_masks(rows + [(99, 0b1, 0)])  # (a rank no longer in the pool: skipped)
    assert state(again)[:6] == state(pool)[:6]
    consistent(again)
    jobs = {jobid: again.allocation_from_parts(rec.end, rec.parts) for jobid, rec in pool.jobs.items()}
    again.attach_jobs(jobs)
    assert again.jobs is jobs
    assert again.allocations()[1][0].same_resources(R1) and again.allocations()[2][0].same_resources(R2)
    assert again.end_time(1) == 105.0 and again.allocations()[1][1] == 105.0
    assert again.free(1).same_resources(R1)
    pool.free(1)
    assert state(again)[:6] == state(pool)[:6]
    with pytest.raises(ValueError, match="^rank 11: resources not in the pool$"):
        sparse_pool().restore_masks([(2, 0b1, 0), (11, 0b100, 0)])


def test_no_module_reads_a_pool_private():
    """Only pool.py touches what Pool keeps private (an underscore name of
    self in class Pool) on anything but self; planners use the public view."""
    root = pathlib.Path(__file__).resolve().parent.parent / "flux_lite"
    src = (root / "sched" / "pool.py").read_text()
    body = src[src.index("\nclass Pool:"):]
    private = {n for n in set(re.findall(r"\bself\.(_\w+)", body)) | set(re.findall(r"\n    def (_\w+)\(", body))
               if not n.startswith("__")}
    assert {"_jobs", "_buckets", "_apply", "_build_rset"} <= private
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "sched" / "pool.py":
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            for m in re.finditer(r"(\w+)\.(_\w+)\b", line):
                if m.group(2) in private and m.group(1) not in ("self", "cls"):
                    found.append(f"{path.relative_to(root)}:{no}: {line.strip()}")
    assert found == []
