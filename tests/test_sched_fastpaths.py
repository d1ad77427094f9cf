"""The scheduler's fast paths give what the general code gives.

Each shortcut taken on the replay's hot path is compared here with the plain
computation on random cases (as tests/test_backfill_inplace.py does for the
planner): a shortcut that answers differently fails.
"""

import copy
import math
import random

import pytest


# -- reading a jobspec's request (sched.request: the common shape, or the general walk) ----


def _common_jobspec(rng):
    """What `submit -n N [-c C] [-t T]` and a trace replay write."""
    js = {"resources": [{"type": "slot", "count": rng.randint(1, 64), "with": [{"type": "core",
                                                                              "count": rng.choice([1, 1, 2, 4])}],
                         "label": "task"}],
          "tasks": [{"command": ["x"], "slot": "task", "count": {"per_slot": 1}}],
          "attributes": {"system": {"duration": rng.choice([0, 0.0, 60, 60.0, 1e9, 3600.5])}},
          "version": 1}
    if rng.random() < 0.2:
        js["attributes"]["system"]["constraints"] = rng.choice([{}, {"properties": ["a"]}, None])
    return js


_ODD_VALUES = [None, True, False, 0, -1, 1, 2, 2.0, "2", "1-3", "", [], {}, {"min": 2}, {"min": 1, "max": 3},
               float("nan"), float("inf"), -0.0, 10 ** 400, "slot", "core", "node", "gpu"]


def _mutate(rng, js):
    """Change one value somewhere in js (or add or drop a key)."""
    paths = []

    def walk(obj, path):
        if isinstance(obj, dict):
            for k, v in obj.items():
                paths.append(path + (k,))
                walk(v, path + (k,))
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                paths.append(path + (i,))
                walk(v, path + (i,))

    walk(js, ())
    path = rng.choice(paths)
    parent = js
    for k in path[:-1]:
        parent = parent[k]
    r = rng.random()
    if r < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif r < 0.3 and isinstance(parent, dict):
        parent[rng.choice(["with", "exclusive", "count", "type", "x"])] = copy.deepcopy(rng.choice(_ODD_VALUES + [
            [{"type": "core", "count": 1}], [{"type": "gpu", "count": 1}]]))
    elif r < 0.4 and isinstance(parent, list):
        parent.append(copy.deepcopy(rng.choice(parent)) if parent else 1)
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(_ODD_VALUES))


def _outcome(fn, js):
    try:
        req = fn(js)
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))
    d = req.as_dict()
    # the same values, and of the same types (1 and 1.0 compare equal)
    return ("ok", {k: (type(v).__name__, "nan" if isinstance(v, float) and math.isnan(v) else v)
                   for k, v in d.items()})


@pytest.mark.parametrize("seed", range(8))
def test_request_fast_path_reads_what_the_jobspec_walk_reads(seed):
    from flux_lite.formats.jj import common_shape
    from flux_lite.sched.request import read_request, request_from_jobspec

    rng = random.Random(seed)
    fast_taken = 0
    for _ in range(600):
        js = _common_jobspec(rng)
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            _mutate(rng, js)
        general = _outcome(read_request, js)
        if common_shape(js) is not None:
            fast_taken += 1
            assert general[0] == "ok", js  # (the classifier takes only jobspecs the walk reads)
        assert _outcome(request_from_jobspec, js) == general, js
    assert fast_taken > 200  # (the commonest shape does take it)


# -- the scheduler's row-backed maps (sched.store.LazyRows) ---------------------------


@pytest.mark.parametrize("seed", range(6))
def test_lazy_rows_behave_as_the_dict_they_stand_for(seed):
    """Rows are read as ids are asked for; ids known to have no row are not
    asked for again (until every row is read: then the map is the whole
    truth, and that bookkeeping stops), nor those above the table's largest.
    Checked against a plain dict; saving what is dirty makes the table that
    dict, though a record set and removed again before the save is not
    remembered at all."""
    from flux_lite.sched.store import LazyRows

    rng = random.Random(seed)
    table = {jobid: f"row{jobid}" for jobid in rng.sample(range(60), 25)}
    reads = []

    class Rows(LazyRows):
        def _table_max(self):
            return max(table)

        def _one(self, jobid):
            reads.append(jobid)
            return table.get(jobid)

        def _each(self):
            reads.append("all")
            return iter(list(table.items()))

    rows = Rows(conn=object())  # (a connection: rows are read lazily)
    model = dict(table)
    changed = set()
    for step in range(400):
        jobid = rng.randrange(70)
        op = rng.random()
        if op < 0.25:
            assert rows.get(jobid) == model.get(jobid), step
            assert (jobid in rows) == (jobid in model), step
        elif op < 0.45:
            rows[jobid] = model[jobid] = f"new{step}"
            changed.add(jobid)
        elif op < 0.65:
            if jobid in model:
                changed.add(jobid)
            assert rows.pop(jobid, None) == model.pop(jobid, None), step
        elif op < 0.75:
            if jobid in model:
                del rows[jobid]
                del model[jobid]
                changed.add(jobid)
            else:
                with pytest.raises(KeyError):
                    del rows[jobid]
        elif op < 0.8 and rng.random() < 0.3:
            assert dict(rows.items()) == model, step
        n = len(reads)
        assert rows.get(jobid) == model.get(jobid), step
        assert rows.get(jobid) == model.get(jobid), step
        assert len(reads) - n <= 1  # (a second look reads nothing)
    assert rows.copy() == model
    assert len(rows) == len(model) and sorted(rows) == sorted(model)
    assert rows.dirty <= changed
    for jobid in rows.dirty:  # (what save_pool and save_queue do)
        if jobid in rows:
            table[jobid] = rows[jobid]
        else:
            table.pop(jobid, None)
    assert table == model


# -- R parsed once: Rset.from_dict's caches (formats.rset) --------------------------


def test_rset_caches_keep_the_recent_sets():
    """A job's R is read back (free, its index row) a while after the
    scheduler made it: a full cache drops its older half, not everything,
    so recent sets are still found, by the dict and by its text; whatever
    was dropped is parsed again to an equal set."""
    from flux_lite.formats import rset as rsetmod
    from flux_lite.formats.rset import Rset

    base = Rset.from_config([f"n{i}" for i in range(8)], 4)
    made = []
    for k in range(rsetmod._FROM_DICT_CACHE_SIZE + 10):
        rs = base.copy_ranks([k % 8]).with_times(starttime=float(k + 1), expiration=float(k + 100))
        R = rs.to_dict()
        rs.remember_as(rs.to_json(), R)
        made.append((R, rs))
    for R, rs in made[-1000:]:
        assert Rset.from_dict(R) is rs
        assert Rset.from_dict(copy.deepcopy(R)) is rs
    for R, rs in made[:50]:
        assert Rset.from_dict(copy.deepcopy(R)) == rs
    assert len(rsetmod._FROM_DICT_BY_ID) <= rsetmod._FROM_DICT_CACHE_SIZE
    assert len(rsetmod._FROM_DICT_CACHE) <= rsetmod._FROM_DICT_CACHE_SIZE


# -- the pool's count of free cores on up ranks (Pool.nfree_up_cores) -------------------------


@pytest.mark.parametrize("bulk", [False, True])
def test_free_core_count_follows_hello_and_state_rows(bulk):
    """Allocations registered at hello (in bulk: the masks are set directly,
    the count made again at the end), on down ranks, and a pool attached
    to the scheduler's rows: the kept count is what the ranks say."""
    import sqlite3

    from flux_lite.formats.rset import Rset
    from flux_lite import schedstate
    from flux_lite.sched import store
    from flux_lite.sched.pool import Pool

    rng = random.Random(3)
    rset = Rset.from_config("n[0-11]", 4, 1)
    pool = Pool(rset)
    pool.set_down("2,5")
    if bulk:
        pool.begin_bulk()
    for jobid in range(1, 9):
        rank, cores = rng.randrange(12), rng.choice(["0", "1-2", "3", "0-3"])
        R = {"version": 1, "execution": {"R_lite": [{"rank": str(rank), "children": {"core": cores}}],
                                         "starttime": 1.0, "expiration": 100.0}}
        if pool.register_hello(jobid, R) is None:
            continue
    pool.end_bulk()

    def counted(p):
        return sum(p.nfree_cores[i] for i in range(12) if p.rank_up[i])

    assert pool.nfree_up_cores == counted(pool) == pool.free_counts()[0]
    pool.set_up("5")
    assert pool.nfree_up_cores == counted(pool)
    conn = sqlite3.connect(":memory:")
    schedstate.create(conn)
    store.save_pool(conn, pool)
    again = Pool(rset)
    again.set_down("2")
    store.attach(again, conn)
    assert again.nfree_up_cores == counted(again) == pool.nfree_up_cores


# -- a pending job's sort key, made when its priority is set (PendingJob.key) --------------


def test_queue_order_follows_priority_changes():
    """The queue is sorted by (-priority, id) at every pass; the key is kept
    with the job and must follow each change of its priority."""
    from flux_lite.sched.base import PendingJob
    from flux_lite.sched.request import ResourceRequest

    rng = random.Random(9)
    jobs = [PendingJob(rng.randrange(1 << 40), rng.choice([0, 16, 31]), 0, 0.0, ResourceRequest())
            for _ in range(60)]
    for _ in range(300):
        pj = rng.choice(jobs)
        pj.priority = rng.choice([0, 1, 16, 20, 31, 2**31 - 1])
        plain = sorted(jobs, key=lambda j: (-j.priority, j.jobid))
        assert sorted(jobs, key=PendingJob.sort_key) == plain
        assert [j.jobid for j in sorted(jobs, key=lambda j: j.key)] == [j.jobid for j in plain]
        assert PendingJob.load(pj.dump()).sort_key() == pj.sort_key() == (-pj.priority, pj.jobid)


# -- an allocation's R, built from index masks when rank i is at index i ----------------


@pytest.mark.parametrize("cores,gpus", [(1, 0), (4, 2)])
def test_allocation_R_from_index_masks_is_the_general_one(cores, gpus):
    """Pool._build_rset's path for pools whose rank i sits at index i (the
    usual case) gives the R its general path (rank lists) gives."""
    from flux_lite.formats.rset import Rset
    from flux_lite.sched.pool import Pool

    rset = Rset.from_config("n[0-149]", cores, gpus)
    fast, plain = Pool(rset), Pool(rset)
    assert fast.topology.identity
    plain.topology = copy.copy(fast.topology)
    plain.topology.identity = False
    rng = random.Random(cores)
    for _ in range(300):
        idx = rng.sample(range(150), rng.choice([1, 1, 2, 3, 8, 40, 150]))
        sel = [(i, rng.choice([1, (1 << cores) - 1, rng.randrange(1, 1 << cores)]),
                rng.choice([0, rng.randrange(1 << gpus)]) if gpus else 0) for i in idx]
        a = fast._build_rset(list(sel), 5.0, 105.0, len(sel))
        b = plain._build_rset(list(sel), 5.0, 105.0, len(sel))
        assert a == b
        assert (a.to_json(), a.summary(), a.nodelist_text(), a.to_dict()) == \
            (b.to_json(), b.summary(), b.nodelist_text(), b.to_dict())
        assert list(a.nodes()) == list(b.nodes())
