"""The resource pool the schedulers share (flux-core ``Rv1Pool`` semantics).

Per rank the pool tracks the topology (cores, gpus), an up/down flag and the
allocated cores/gpus; per job the allocated :class:`Rset`, its end time and
the per-rank bitmasks it holds.

Allocation is worst-fit like ``Rv1Pool.alloc``: candidates are the up ranks
with enough free cores (every core free for exclusive requests) and gpus that
satisfy the constraint, ordered by most free cores, then most free gpus, then
lowest rank; with ``nnodes > 0`` each of the first ``nnodes`` candidates gets
``nslots // nnodes`` slots (or the whole node when exclusive), otherwise
slots are packed rank by rank in that order.  Cores and gpus are taken lowest
id first.

To stay fast with thousands of ranks and jobs, cores/gpus are Python int
bitmasks and the up ranks are kept in buckets keyed by (free cores, free
gpus), each a bitmask of rank indexes, so a small request looks at the
first bucket only instead of sorting every rank, and moving a rank between
buckets is two bit operations.

Deviations from Rv1Pool (all where Rv1Pool misbehaves): an exclusive
request needs nodes with at least ``slots_per_node * slot_size`` cores (and
gpus) instead of accepting smaller nodes; the exclusive "unsatisfiable"
message names the gpu count when gpus are requested; a partial free releases
exactly what the job holds on the freed ranks; registering resources that
are already allocated is refused; frees for unknown jobs are ignored.
"""

from __future__ import annotations

from itertools import compress

from flux_lite.errors import FluxLiteError, RsetError
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.formats.rset import (
    Rset,
    entry_summary,
    group_ranks,
    one_entry_text,
    property_terms,
    rlite_entries,
    rlite_ids,
    rlite_nodes,
    rlite_ranks,
    rlite_without,
)
from flux_lite.limits import MAX_TIME
from flux_lite.sched.request import ResourceRequest, request_from_jobspec

__all__ = [
    "Pool",
    "Topology",
    "Allocation",
    "RequestPlan",
    "InsufficientResources",
    "InfeasibleRequest",
    "PoolError",
]


class InsufficientResources(FluxLiteError):
    """The request fits the pool, but not right now (wait)."""


class InfeasibleRequest(FluxLiteError):
    """The request can never be satisfied by this pool (deny)."""


class PoolError(FluxLiteError, ValueError):
    """Inconsistent register/free/alloc call (accounting error)."""


def _slots_fit(key, s, g):
    """How many slots of s cores and g gpus fit a rank whose free (cores, gpus) is key."""
    fc, fg = key
    if g:
        return min(fc // s, fg // g) if fg >= g else 0
    return fc // s


def _lowest(mask, n):
    """The n lowest set bits of mask."""
    if n <= 0:
        return 0
    low = mask & -mask
    shift = low.bit_length() - 1
    full = (1 << n) - 1
    if ((mask >> shift) & full) == full:
        return full << shift
    out = 0
    for _ in range(n):
        low = mask & -mask
        out |= low
        mask ^= low
    return out


_WORD = (1 << 64) - 1


def _indexes(mask):
    """The set bits of mask, lowest first (64 at a time: a mask of
    thousands of ranks is not shifted bit by bit)."""
    base = 0
    while mask:
        word = mask & _WORD
        mask >>= 64
        while word:
            low = word & -word
            yield base + low.bit_length() - 1
            word ^= low
        base += 64


_IDS_INFO = {}  # id(IDset) -> (the IDset, its encode(), its bitmask or None), for register_hello
_NO_IDS = IDset.parse("")  # (the empty set the R_lite decoder gives for no gpus)
_TEXT_IDS = {}  # R_lite idset text -> (its encode(), its bitmask or None), for register_hello's texts


def _ids_info(ids):
    """(ids, ids.encode(), ids.as_mask()) of an IDset, made once per set (the
    entry holds it, so its id is not reused); no bitmask (None) of absurdly
    high ids (register_hello leaves those to the checking path)."""
    hit = _IDS_INFO.get(id(ids))
    if hit is None or hit[0] is not ids:
        if len(_IDS_INFO) > 65536:
            _IDS_INFO.clear()
        last = ids.last()
        hit = _IDS_INFO[id(ids)] = (ids, ids.encode(), None if last is not None and last >= 65536 else ids.as_mask())
    return hit


def _text_ids(text):
    """_TEXT_IDS' entry of an idset text, made once: (text, None) when
    malformed (the checking path says so)."""
    try:
        _, encoded, mask = _ids_info(rlite_ids(text))
    except ValueError:
        encoded, mask = text, None
    if len(_TEXT_IDS) > 65536:
        _TEXT_IDS.clear()
    hit = _TEXT_IDS[text] = (encoded, mask)
    return hit


class Topology:
    """Static per-rank data of a pool, shared by the pool and its copies.

    A rank is addressed by its *index*, its position in ``ranks`` (ascending
    rank order); every per-rank list here and in :class:`Pool` is indexed so.
    What a planner may read (never change):

    ``rset``       the pool's whole resource set;
    ``ranks``      rank of each index; ``index``: rank -> index;
    ``hosts``      hostname of each index;
    ``core_mask``  all core ids of each index, as an int bitmask
                   (``gpu_mask``: the gpu ids);
    ``ncores``     core count of each index (``ngpus``: the gpu count).

    A topology is never changed (its own caches aside): a pool whose ranks
    change (``remove_ranks``) gets a new one, so ``pool.topology is topo``
    tells a cache keyed on the topology (feasibility, request plans) that
    it still holds.
    """

    __slots__ = (
        "rset",
        "ranks",
        "index",
        "hosts",
        "core_mask",
        "gpu_mask",
        "ncores",
        "ngpus",
        "ncores_values",
        "property_masks",
        "allmask",
        "masks",
        "shapes",
        "host_prefix",
        "identity",
        "hello_ranks",
        "hello_rank_texts",
    )

    def __init__(self, rset):
        self.rset = rset
        self.ranks = []
        self.hosts = []
        self.core_mask = []
        self.gpu_mask = []
        self.ncores = []
        self.ngpus = []
        for rank, host, cores, gpus in rset.nodes():
            self.ranks.append(rank)
            self.hosts.append(host)
            self.core_mask.append(cores.as_mask())
            self.gpu_mask.append(gpus.as_mask())
            self.ncores.append(len(cores))
            self.ngpus.append(len(gpus))
        self.index = {r: i for i, r in enumerate(self.ranks)}
        # rank i at index i (the usual case): an allocation's R_lite groups are
        # made from bitmasks of their indexes; not on pools of thousands of
        # ranks, where such masks are big numbers, slower to make and read
        # than the lists of ranks they stand for
        self.identity = len(self.ranks) <= 1024 and all(r == i for i, r in enumerate(self.ranks))
        self.ncores_values = frozenset(self.ncores)
        self.allmask = (1 << len(self.ranks)) - 1
        self.property_masks = {}
        for name, ids in rset.properties.items():
            m = 0
            for r in ids:
                i = self.index.get(r)
                if i is not None:
                    m |= 1 << i
            self.property_masks[name] = m
        self.masks = {}  # constraint key -> index mask (None = all)
        self.shapes = {}  # constraint key -> {(ncore, ngpu): count}
        # hosts named prefix + rank: an allocation's nodelist is written from its ranks
        self.host_prefix = Hostlist.rank_prefix(self.hosts, self.ranks)
        # id(rank IDset) -> Pool._ranks_info() of it (the IDsets are
        # rlite_entries' cached ones: thousands of hello entries share them)
        self.hello_ranks = {}
        self.hello_rank_texts = {}  # R_lite rank text -> (its encode(), its indexes or None)

    def index_mask(self, request):
        """(key, index mask or None) of ranks allowed by the request."""
        props = request.properties or ()
        props = (props,) if isinstance(props, str) else tuple(props)
        cons = request.constraint
        if not props and not cons:
            return None, None
        try:
            if not cons:
                ckey = None
            elif isinstance(request, ResourceRequest):
                ckey = request.constraint_key
            else:
                ckey = repr(cons)
            key = (props, ckey)
            return key, self.masks[key]
        except KeyError:
            pass
        except (TypeError, ValueError):  # unhashable / not JSON-able
            raise InfeasibleRequest("invalid constraint") from None
        try:
            required, excluded = property_terms(props)
        except RsetError as exc:
            raise InfeasibleRequest(str(exc)) from None
        m = self.allmask
        for name in required:
            m &= self.property_masks.get(name, 0)
        for name in excluded:
            m &= ~self.property_masks.get(name, 0)
        if cons:
            try:
                ids = self.rset.ranks_matching(cons)
            except ValueError as exc:
                raise InfeasibleRequest(f"invalid constraint: {exc}") from None
            cm = 0
            for r in ids:
                cm |= 1 << self.index[r]
            m &= cm
        if len(self.masks) > 1024:
            self.masks.clear()
        self.masks[key] = m
        return key, m

    def shape_counts(self, key, allowed):
        shapes = self.shapes.get(key)
        if shapes is None:
            shapes = {}
            for i in range(len(self.ranks)):
                if allowed is None or (allowed >> i) & 1:
                    k = (self.ncores[i], self.ngpus[i])
                    shapes[k] = shapes.get(k, 0) + 1
            if len(self.shapes) > 1024:
                self.shapes.clear()
            self.shapes[key] = shapes
        return shapes


class Allocation:
    """One job's allocation as the pool keeps it.

    A planner may read ``end`` (the end time the pool tracks, 0.0 = none)
    and ``parts``, the ``(index, coremask, gpumask)`` it holds per rank
    index; ``rset()`` is its R as an :class:`Rset`, ``as_dict()`` as a dict.
    Never mutated except to fill the lazily built R / dict caches (copies
    of the pool share records).
    """

    __slots__ = ("R", "end", "parts", "rdict", "topo")

    def __init__(self, R, end, parts, rdict=None, topo=None):
        self.R = R  # Rset, or None until first needed (after load)
        self.end = end
        self.parts = parts  # ((index, coremask, gpumask), ...)
        self.rdict = rdict  # R as a dict (dump cache), or None
        self.topo = topo  # with neither R nor rdict (a stored row): R is built from parts

    def rset(self):
        R = self.R
        if R is None:
            if self.rdict is None:
                R = self.R = self._from_parts()
            else:
                R = self.R = Rset.from_dict(self.rdict)
        return R

    def _from_parts(self):
        """The allocation's resources (what the pool needs of an R: ranks,
        hosts, cores, gpus) from its bitmasks and the topology."""
        topo = self.topo
        frm = IDset.from_mask
        nodes = {}
        for i, cm, gm in sorted(self.parts, key=lambda p: topo.ranks[p[0]]):
            nodes[topo.ranks[i]] = (topo.hosts[i], frm(cm), frm(gm))
        return topo.rset.with_nodes(nodes, nslots=0, scheduling=None, starttime=0.0, expiration=self.end)

    def as_dict(self):
        d = self.rdict
        if d is None:
            d = self.rdict = self.rset().to_dict()
        return d


class RequestPlan:
    """How a request is laid out on the pool (``Pool.plan``); it depends on
    the request and the topology alone, and is made once per request.

    The request is ``count`` *units*: whole nodes when ``per_node`` (each of
    ``slots_per_node`` slots), else single slots packed rank by rank; one
    unit needs ``unit_cores`` cores and ``unit_gpus`` gpus on one rank, and
    the request at least ``min_cores`` cores in all (exclusive: more). A
    slot is ``slot_size`` cores and ``gpu_per_slot`` gpus. ``exclusive``:
    units take whole nodes. ``allowed``: bitmask of the rank indexes its
    properties and constraint admit (None: all), ``key`` the cache key of
    that selection. Read-only for everyone but the pool.
    """

    __slots__ = (
        "per_node",
        "count",
        "slots_per_node",
        "slot_size",
        "gpu_per_slot",
        "unit_cores",
        "unit_gpus",
        "min_cores",
        "exclusive",
        "key",
        "allowed",
        "feasible",  # _check_feasible passed (it depends on the topology alone)
    )


class Pool:
    """Schedulable resources: topology, up/down state, allocations.

    Besides allocating (``alloc``, ``free``, ``register_alloc``...), a pool
    offers a planner (sched/planner.py) its state, to read without copying.
    The lists are indexed by rank index (see :class:`Topology`); they are
    the pool's own, changed in place as it allocates: read them, never
    change them, except through the methods below.

    ``topology``        the :class:`Topology` (a cache key: see there);
    ``alloc_cores[i]``  allocated core ids of rank index i, an int bitmask
                        (``alloc_gpus[i]``: gpu ids);
    ``nfree_cores[i]``  free core count of rank index i, up or down
                        (``nfree_gpus[i]``: gpus);
    ``rank_up[i]``      whether rank index i is up;
    ``nfree_up_cores``  free cores summed over up ranks;
    ``jobs``            jobid -> :class:`Allocation`, read-only.

    ``plan(request)`` lays a request out (:class:`RequestPlan`);
    ``select(plan)`` says what the pool's worst-fit choice would take now,
    changing nothing; ``alloc_selected`` allocates that for a job. A planner
    simulating other times on a copy (``copy(jobs=False)``) changes what it
    shows with ``apply(parts, take)`` and ``set_masks(i, cm, gm)``. A store
    bringing a saved pool back (sched/store.py) uses ``restore_masks``,
    ``attach_jobs`` and ``allocation_from_parts``.
    """

    #: the request a jobspec makes of this pool (Rv1Pool's reading)
    read_request = staticmethod(request_from_jobspec)

    def __init__(self, rset, *, jobid_str=None):
        if not isinstance(rset, Rset):
            rset = Rset.from_dict(rset)
        self._jobid_str = jobid_str or f58
        self._init_topology(Topology(rset))
        self._jobs = {}
        self.generation = 0

    def _init_topology(self, topo):
        self.topology = topo
        n = len(topo.ranks)
        self.alloc_cores = [0] * n
        self.alloc_gpus = [0] * n
        self.nfree_cores = list(topo.ncores)
        self.nfree_gpus = list(topo.ngpus)
        self.rank_up = [True] * n
        self.nfree_up_cores = sum(self.nfree_cores)  # free cores of up ranks (kept as they change)
        buckets = {}
        for i in range(n):
            key = (self.nfree_cores[i], self.nfree_gpus[i])
            buckets[key] = buckets.get(key, 0) | 1 << i
        self._buckets = buckets
        self._keys = None
        self._bulk = False
        self._insufficient = None  # see alloc()

    # -- basic queries -----------------------------------------------------

    @property
    def rset(self):
        """The full resource set (topology) of the pool."""
        return self.topology.rset

    @property
    def ranks(self):
        return self.topology.rset.ranks

    def is_up(self, rank):
        i = self.topology.index.get(rank)
        return i is not None and self.rank_up[i]

    def up_ranks(self):
        t = self.topology
        return IDset(t.ranks[i] for i, up in enumerate(self.rank_up) if up)

    def down_ranks(self):
        t = self.topology
        return IDset(t.ranks[i] for i, up in enumerate(self.rank_up) if not up)

    @property
    def jobs(self):
        """jobid -> :class:`Allocation` of every job holding resources (a
        mapping: the scheduler's store may back it by a table). Read-only."""
        return self._jobs

    def attach_jobs(self, jobs):
        """Use jobs, a mapping equivalent to the pool's own (the same
        allocations), as the job table from now on: sched/store.py reads
        and writes its rows lazily through one."""
        self._jobs = jobs

    def allocation_from_parts(self, end, parts):
        """An :class:`Allocation` of parts (``(index, coremask, gpumask)``)
        ending at end, its R built from the topology when first asked for."""
        return Allocation(None, float(end), parts, topo=self.topology)

    def allocations(self):
        """dict jobid -> (Rset, end_time)."""
        return {j: (rec.rset(), rec.end) for j, rec in self._jobs.items()}

    def end_time(self, jobid):
        rec = self._jobs.get(jobid)
        return None if rec is None else rec.end

    def job_end_times(self):
        return [(j, rec.end) for j, rec in self._jobs.items()]

    def job_ends(self):
        """(job_end_times(), a function of a jobid giving its allocation's
        parts): what a simulation that releases jobs with apply() reads,
        without the allocations' R (a store reads only the rows asked for)."""
        ends = getattr(self._jobs, "ends", None)
        if ends is not None:
            return ends()
        jobs = self._jobs
        return self.job_end_times(), lambda jobid: jobs[jobid].parts

    def __contains__(self, jobid):
        return jobid in self._jobs

    def __len__(self):
        return len(self._jobs)

    # -- bucket bookkeeping ------------------------------------------------

    def _sorted_keys(self):
        keys = self._keys
        if keys is None:
            keys = self._keys = sorted(self._buckets, reverse=True)
        return keys

    def _bucket_remove(self, i, key):
        b = self._buckets[key] & ~(1 << i)
        if b:
            self._buckets[key] = b
        else:
            del self._buckets[key]
            self._keys = None

    def _bucket_add(self, i, key):
        b = self._buckets.get(key)
        if b is None:
            self._buckets[key] = 1 << i
            self._keys = None
        else:
            self._buckets[key] = b | 1 << i

    def _apply(self, i, cm, gm, take):
        """Allocate (take=True) or release cm/gm on rank index i."""
        self.apply(((i, cm, gm),), take)

    def apply(self, parts, take):
        """Allocate (take=True) or release the cores and gpus of parts,
        ``(index, coremask, gpumask)`` each, recording no job: what a job's
        parts add to or take from what the pool shows. Releasing something
        not allocated, or taking something allocated, is the caller's error."""
        ac_, ag_, fc_, fg_ = self.alloc_cores, self.alloc_gpus, self.nfree_cores, self.nfree_gpus
        ncore, ngpu, up = self.topology.ncores, self.topology.ngpus, self.rank_up
        buckets = self._buckets
        bulk = self._bulk
        self._insufficient = None
        for i, cm, gm in parts:
            fc0, fg0 = fc_[i], fg_[i]
            ac = ac_[i] | cm if take else ac_[i] & ~cm
            ac_[i] = ac
            fc = fc_[i] = ncore[i] - ac.bit_count()
            if gm:  # (without GPUs to take or release, the free GPU count stays)
                ag = ag_[i] | gm if take else ag_[i] & ~gm
                ag_[i] = ag
                fg = fg_[i] = ngpu[i] - ag.bit_count()
            else:
                fg = fg0
            if (fc != fc0 or fg != fg0) and up[i] and not bulk:
                self.nfree_up_cores += fc - fc0
                # (_bucket_remove, then _bucket_add)
                bit = 1 << i
                key = (fc0, fg0)
                b = buckets[key] ^ bit  # (its bit is set there)
                if b:
                    buckets[key] = b
                else:
                    del buckets[key]
                    self._keys = None
                key = (fc, fg)
                b = buckets.get(key)
                if b is None:
                    buckets[key] = bit
                    self._keys = None
                else:
                    buckets[key] = b | bit

    def set_masks(self, i, cm, gm):
        """Make rank index i's allocated core and gpu bitmasks exactly cm and
        gm, recording no job (what apply() of the ids to take, then of those
        to release, would give): a planner's copy showing another time."""
        old_fc, old_fg = self.nfree_cores[i], self.nfree_gpus[i]
        self._insufficient = None
        self.alloc_cores[i] = cm
        self.alloc_gpus[i] = gm
        fc = self.topology.ncores[i] - cm.bit_count()
        fg = self.topology.ngpus[i] - gm.bit_count()
        if fc != old_fc or fg != old_fg:
            self.nfree_cores[i] = fc
            self.nfree_gpus[i] = fg
            if self.rank_up[i] and not self._bulk:
                self.nfree_up_cores += fc - old_fc
                self._bucket_remove(i, (old_fc, old_fg))
                self._bucket_add(i, (fc, fg))

    # -- up / down -----------------------------------------------------------

    def _indexes(self, ranks):
        if isinstance(ranks, str):
            if ranks == "all":
                return range(len(self.topology.ranks))
            ranks = IDset.parse(ranks)
        elif isinstance(ranks, int):
            ranks = (ranks,)
        pos = self.topology.index
        return [pos[r] for r in ranks if r in pos]

    def set_down(self, ranks):
        """Mark ranks (IDset, idset string, iterable or "all") down."""
        for i in self._indexes(ranks):
            if self.rank_up[i]:
                self._insufficient = None
                self.rank_up[i] = False
                self.nfree_up_cores -= self.nfree_cores[i]
                self._bucket_remove(i, (self.nfree_cores[i], self.nfree_gpus[i]))
        self.generation += 1

    def set_up(self, ranks):
        """Mark ranks (IDset, idset string, iterable or "all") up."""
        for i in self._indexes(ranks):
            if not self.rank_up[i]:
                self._insufficient = None
                self.rank_up[i] = True
                self.nfree_up_cores += self.nfree_cores[i]
                self._bucket_add(i, (self.nfree_cores[i], self.nfree_gpus[i]))
        self.generation += 1

    # -- planning ----------------------------------------------------------

    def plan(self, req):
        """The :class:`RequestPlan` of request req on this pool (made once
        per request and topology); InfeasibleRequest if req is malformed
        (counts not integers or out of range, a bad constraint)."""
        cached = req.pool_plan if type(req) is ResourceRequest else None
        if cached is not None and cached[0] is self.topology:
            return cached[1]  # (a request's plan depends on it and the topology alone)
        s = req.slot_size
        g = req.gpu_per_slot
        nslots = req.nslots
        nnodes = req.nnodes
        for v in (s, g, nslots, nnodes):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InfeasibleRequest("invalid resource request: counts must be integers")
        if s < 1 or nslots < 1 or g < 0 or nnodes < 0:
            raise InfeasibleRequest(
                "invalid resource request: "
                "slot count and slot size must be at least 1"
            )
        p = RequestPlan()
        p.slot_size = s
        p.gpu_per_slot = g
        p.exclusive = bool(req.exclusive)
        if p.exclusive and nnodes == 0:
            p.per_node, p.count, p.slots_per_node = True, nslots, 1
        elif nnodes > 0:
            p.per_node, p.count, p.slots_per_node = True, nnodes, max(1, nslots // nnodes)
        else:
            p.per_node, p.count, p.slots_per_node = False, nslots, 0
        if p.per_node:
            p.unit_cores = p.slots_per_node * s
            p.unit_gpus = p.slots_per_node * g
        else:
            p.unit_cores = s
            p.unit_gpus = g
        p.min_cores = p.count * p.unit_cores
        p.key, p.allowed = self.topology.index_mask(req)
        p.feasible = False
        if type(req) is ResourceRequest:
            req.pool_plan = (self.topology, p)
        return p

    def select(self, p):
        """What alloc() would take now for plan p: ``(parts, nslots)``, parts
        a list of ``(index, coremask, gpumask)``, or None if it does not fit
        now. Changes nothing (the same state gives the same answer)."""
        buckets = self._buckets
        keys = self._sorted_keys()
        allowed = p.allowed
        need_c = p.unit_cores
        need_g = p.unit_gpus
        topo = self.topology
        if p.per_node:
            nn = p.count
            exclusive = p.exclusive
            ncv = topo.ncores_values
            # quick upper bound
            avail = 0
            for key in keys:
                if key[0] < need_c:
                    break
                if key[1] >= need_g and (not exclusive or key[0] in ncv):
                    avail += buckets[key].bit_count()
            if avail < nn:
                return None
            chosen = []
            ncore = topo.ncores
            for key in keys:
                fc, fg = key
                if fc < need_c:
                    break
                if fg < need_g or (exclusive and fc not in ncv):
                    continue
                for i in _indexes(buckets[key] if allowed is None else buckets[key] & allowed):
                    if exclusive and ncore[i] != fc:
                        continue
                    chosen.append(i)
                    if len(chosen) == nn:
                        break
                if len(chosen) == nn:
                    break
            if len(chosen) < nn:
                return None
            sel = []
            for i in chosen:
                free_c = topo.core_mask[i] & ~self.alloc_cores[i]
                free_g = topo.gpu_mask[i] & ~self.alloc_gpus[i]
                if exclusive:
                    sel.append((i, free_c, free_g))
                else:
                    sel.append((i, _lowest(free_c, need_c), _lowest(free_g, need_g)))
            return sel, p.slots_per_node * nn
        # slot packing
        s = p.slot_size
        g = p.gpu_per_slot
        want = p.count
        avail = 0
        for key in keys:
            if key[0] < s:
                break
            avail += _slots_fit(key, s, g) * buckets[key].bit_count()
            if avail >= want:
                break
        if avail < want:
            return None
        sel = []
        left = want
        cmask, gmask, ac, ag = topo.core_mask, topo.gpu_mask, self.alloc_cores, self.alloc_gpus
        for key in keys:
            fc, fg = key
            if fc < s:
                break
            per = _slots_fit(key, s, g)
            if not per:
                continue
            m = buckets[key] if allowed is None else buckets[key] & allowed
            while m:  # (the bucket's ranks, lowest index first)
                low = m & -m
                i = low.bit_length() - 1
                take = per if per < left else left
                # every rank here has fc cores free: taking them all needs no pick
                n = take * s
                cm = cmask[i] & ~ac[i] if n == fc else _lowest(cmask[i] & ~ac[i], n)
                if g:
                    n = take * g
                    gm = gmask[i] & ~ag[i] if n == fg else _lowest(gmask[i] & ~ag[i], n)
                else:
                    gm = 0
                sel.append((i, cm, gm))
                left -= take
                if not left:
                    break
                m ^= low
            if not left:
                break
        if left:
            return None
        return sel, want

    def _check_feasible(self, p):
        """Raise InfeasibleRequest if p can never fit the whole pool."""
        if p.feasible:
            return
        self._check_feasible_shapes(p)
        p.feasible = True

    def _check_feasible_shapes(self, p):
        shapes = self.topology.shape_counts(p.key, p.allowed)
        if p.per_node:
            need_c, need_g = p.unit_cores, p.unit_gpus
            eligible = sum(
                cnt for (nc, ng), cnt in shapes.items() if nc >= need_c and ng >= need_g
            )
            if eligible < p.count:
                if p.exclusive:
                    gpus = f" with {need_g} GPU(s)" if need_g else ""
                    raise InfeasibleRequest(
                        f"unsatisfiable request: need {p.count} exclusive node(s)"
                        f"{gpus}, only {eligible} eligible"
                    )
                gpus = f" and {need_g} GPUs" if need_g else ""
                raise InfeasibleRequest(
                    f"unsatisfiable request: need {p.count} node(s) with "
                    f"{need_c} cores{gpus} each, only {eligible} eligible"
                )
            return
        s, g, nslots = p.slot_size, p.gpu_per_slot, p.count
        total_slots = sum(cnt * (nc // s) for (nc, ng), cnt in shapes.items())
        if total_slots < nslots:
            total_cores = sum(cnt * nc for (nc, ng), cnt in shapes.items())
            raise InfeasibleRequest(
                f"unsatisfiable request: need {nslots} slot(s) of {s} core(s), "
                f"only {total_slots} such slot(s) available "
                f"(total cores: {total_cores})"
            )
        if g > 0:
            gpu_slots = sum(
                cnt * min(nc // s, ng // g) for (nc, ng), cnt in shapes.items()
            )
            if gpu_slots < nslots:
                total_gpus = sum(cnt * ng for (nc, ng), cnt in shapes.items())
                raise InfeasibleRequest(
                    f"unsatisfiable request: need {nslots} slot(s) with {g} GPU(s) "
                    f"each, only {gpu_slots} available (total GPUs: {total_gpus})"
                )

    def check_feasibility(self, request):
        """Raise InfeasibleRequest unless the request fits the whole pool
        (ignoring allocations and down ranks)."""
        self._check_feasible(self.plan(request))

    def would_fit_now(self, request):
        """True if alloc() would succeed now (nothing is changed)."""
        try:
            return self.select(self.plan(request)) is not None
        except InfeasibleRequest:
            return False

    # -- allocation --------------------------------------------------------

    def _build_rset(self, sel, starttime, expiration, nslots):
        topo = self.topology
        nodes = {}
        frm = IDset.from_mask
        ranks, hosts = topo.ranks, topo.hosts
        sel = sorted(sel)
        # the R_lite groups, by (core mask, gpu mask)
        if topo.identity:
            # rank i at index i: sel is (rank, cores, gpus) already, and a
            # group's ranks are a bitmask of its indexes
            by_masks = group_ranks(sel, True)
            rank_ids = frm
        else:
            by_masks = group_ranks([(ranks[i], cm, gm) for i, cm, gm in sel])
            rank_ids = IDset
        if len(by_masks) == 1:
            # its ranks share one (cores, gpus) pair of sets
            (cm, gm), group = next(iter(by_masks.items()))
            c, g = frm(cm), frm(gm)
            groups = [(rank_ids(group), c, g)]
            nodes = {ranks[i]: (hosts[i], c, g) for i, _cm, _gm in sel}
        else:
            groups = []
            sets = {}
            for key, group in by_masks.items():
                c, g = sets[key] = (frm(key[0]), frm(key[1]))
                groups.append((rank_ids(group), c, g))
            for i, cm, gm in sel:
                c, g = sets[(cm, gm)]
                nodes[ranks[i]] = (hosts[i], c, g)
        nodelist = None
        prefix = topo.host_prefix
        if prefix is not None:
            if len(nodes) == 1:
                nodelist = prefix + str(next(iter(nodes)))
            else:
                ranks_set = groups[0][0] if len(groups) == 1 else IDset(nodes)
                nodelist = f"{prefix}[{ranks_set}]"
        props = {}
        if topo.property_masks:
            selmask = 0
            for i, _, _ in sel:
                selmask |= 1 << i
            chosen = None
            for name, pm in topo.property_masks.items():
                if name.startswith("+") or not pm & selmask:
                    continue
                if chosen is None:
                    chosen = IDset(nodes)
                props[name] = topo.rset.ranks_with_property(name) & chosen
            props = dict(sorted(props.items()))
        return Rset.from_nodes(nodes, properties=props, starttime=float(starttime), expiration=float(expiration),
                               nslots=nslots, scheduling=topo.rset.scheduling, groups=groups, nodelist_text=nodelist)

    def alloc(self, jobid, request, now, expiration_default=0.0):
        """Allocate for jobid; return the job's R (starttime=now).

        Raises InsufficientResources (try later) or InfeasibleRequest.
        """
        R = self.alloc_or_none(jobid, request, now, expiration_default)
        if R is None:
            raise InsufficientResources("insufficient resources")
        return R

    def alloc_or_none(self, jobid, request, now, expiration_default=0.0):
        """alloc(), but None where it raises InsufficientResources (a pass
        that tries its blocked head at every end need not raise)."""
        if jobid in self._jobs:
            raise PoolError(f"alloc: {self._jobid_str(jobid)}: already allocated")
        last = self._insufficient
        if last is not None and last[0] == jobid and last[1] is request and last[2] == self.generation:
            # (the same request found no room, and nothing changed since: a
            # blocked FCFS head is tried at every pass)
            return None
        p = self.plan(request)
        found = self.select(p)
        if found is None:
            self._check_feasible(p)
            self._insufficient = (jobid, request, self.generation)
            return None
        return self.alloc_selected(jobid, request, found, now, expiration_default)

    def alloc_selected(self, jobid, request, found, now, expiration_default=0.0):
        """alloc() of what select() just found for the request (found, not
        None; nothing allocated since)."""
        sel, nslots = found
        self.apply(sel, True)
        duration = request.duration or 0.0
        if duration > 0:
            # a duration past the year 9999 is stored, its end time clamped
            expiration = min(now + duration, MAX_TIME)
        elif expiration_default and expiration_default > 0:
            expiration = expiration_default
        else:
            expiration = 0.0
        R = self._build_rset(sel, now, expiration, nslots)
        self._jobs[jobid] = Allocation(R, float(expiration), tuple(sel))
        self.generation += 1
        return R

    def register_alloc(self, jobid, R, nodes=None):
        """Mark an existing allocation (scheduler hello); end time = R expiration.

        R may be an Rset or an R dict; a dict is read from R_lite alone (the
        Rset is built only when needed), which is what makes a reload with
        thousands of running jobs fast.
        """
        if isinstance(R, dict) and self._register_dict(jobid, R, nodes):
            return
        if not isinstance(R, Rset):
            R = Rset.from_dict(R)
        topo = self.topology
        pos = topo.index
        missing = [r for r in R.ranks if r not in pos]
        if missing:
            raise PoolError(
                f"allocation contains ranks not in resource pool: {missing}"
            )
        if jobid in self._jobs:
            raise PoolError(
                f"hello: {self._jobid_str(jobid)}: job already has an allocation"
            )
        parts = []
        unknown = []
        busy = []
        for rank, _host, cores, gpus in R.nodes():
            i = pos[rank]
            cm = cores.as_mask()
            gm = gpus.as_mask()
            if cm & ~topo.core_mask[i] or gm & ~topo.gpu_mask[i]:
                unknown.append(rank)
            elif cm & self.alloc_cores[i] or gm & self.alloc_gpus[i]:
                busy.append(rank)
            parts.append((i, cm, gm))
        if unknown:
            raise PoolError(
                "allocation contains resources not in resource pool: "
                + R.copy_ranks(unknown).summary()
            )
        if busy:
            overlap = R.intersection(self.allocated_rset())
            raise PoolError(
                f"hello: {self._jobid_str(jobid)}: resources already allocated: "
                + overlap.summary()
            )
        for i, cm, gm in parts:
            self._apply(i, cm, gm, True)
        self._jobs[jobid] = Allocation(R, R.expiration, tuple(parts))
        self.generation += 1

    def register_hello(self, jobid, R, free=None):
        """register_alloc() of an R from hello, minus the ranks of the
        `free` idset string; returns the allocation's summary (as
        Rset.summary() prints it), or None when the R is not one R_lite
        entry, or conflicts (register_alloc() then decides, with messages).
        R is a dict, or its JSON text (a record of HELLO_R_TEXT): a text of
        the usual shape is read without decoding it, None for another
        (the caller decodes it).

        Thousands of running jobs share a few hundred rank, core and gpu
        sets: each is decoded once per process (rlite_entries keeps them),
        its text and bitmask made once (_ids_info)."""
        if jobid in self._jobs:
            return None
        if type(R) is str:
            return None if free else self._hello_text(jobid, R)
        try:
            entries = rlite_entries(R)
            if len(entries) != 1:
                return None
            ranks, cores, gpus = entries[0]
            expiration = float(R["execution"].get("expiration", 0.0) or 0.0)
            if free:
                ranks = ranks - IDset.parse(free)
                if not ranks:
                    return None
            info = _IDS_INFO.get(id(cores))  # (_ids_info(cores), without a call when known)
            _, ctext, cm = info if info is not None and info[0] is cores else _ids_info(cores)
            if gpus is _NO_IDS:
                gtext, gm = "", 0
            else:
                _, gtext, gm = _ids_info(gpus)
            if cm is None or gm is None:
                return None
        except (RsetError, TypeError, ValueError):
            return None
        hit = self.topology.hello_ranks.get(id(ranks))
        if hit is None or hit[0] is not ranks:
            hit = self._ranks_info(ranks, cache=not free)
        _, rtext, indexes = hit
        if indexes is None:
            return None
        if free:
            R = rlite_without(R, IDset.parse(free))
        return self._book_hello(jobid, indexes, cm, gm, expiration, R, rtext, ctext, gtext)

    def _hello_text(self, jobid, text):
        """register_hello() of an R text, from one_entry_text's fields: each
        rank, core and gpu text is decoded once per pool (ranks) or process."""
        fields = one_entry_text(text)
        if fields is None:
            return None
        rank_t, core_t, gpu_t, expiration = fields
        hit = self.topology.hello_rank_texts.get(rank_t)
        rtext, indexes = hit if hit is not None else self._rank_text_info(rank_t)
        ctext, cm = _TEXT_IDS.get(core_t) or _text_ids(core_t)
        gtext, gm = (_TEXT_IDS.get(gpu_t) or _text_ids(gpu_t)) if gpu_t else ("", 0)
        if indexes is None or cm is None or gm is None:
            return None
        return self._book_hello(jobid, indexes, cm, gm, expiration, None, rtext, ctext, gtext)

    def _rank_text_info(self, text):
        """(the rank set's encode(), its indexes or None) of an R_lite rank
        text, kept per topology for _hello_text."""
        if text.isdigit():  # (one rank: most allocations, and no idset to parse)
            rank = int(text)
            i = self.topology.index.get(rank)
            info = (str(rank), None if i is None else (i,))
        else:
            try:
                ranks = rlite_ids(text)
            except ValueError:
                info = (text, None)
            else:
                _, encoded, indexes = self._ranks_info(ranks)
                info = (encoded, indexes)
        cache = self.topology.hello_rank_texts
        if len(cache) > 65536:
            cache.clear()
        cache[text] = info
        return info

    def _book_hello(self, jobid, indexes, cm, gm, expiration, R, rtext, ctext, gtext):
        """The tail of register_hello(): the allocation on the rank indexes,
        unless it conflicts (None); its summary."""
        topo = self.topology
        cmask, gmask, ac, ag = topo.core_mask, topo.gpu_mask, self.alloc_cores, self.alloc_gpus
        for i in indexes:
            if cm & ~cmask[i] or gm & ~gmask[i] or cm & ac[i] or gm & ag[i]:
                return None
        parts = tuple([(i, cm, gm) for i in indexes]) if len(indexes) > 1 else ((indexes[0], cm, gm),)
        if self._bulk:
            # hello registers thousands: the buckets are rebuilt once at the end
            ncore, fc = topo.ncores, self.nfree_cores
            for i in indexes:
                c = ac[i] = ac[i] | cm
                fc[i] = ncore[i] - c.bit_count()
            if gm:
                ngpu, fg = topo.ngpus, self.nfree_gpus
                for i in indexes:
                    g = ag[i] = ag[i] | gm
                    fg[i] = ngpu[i] - g.bit_count()
        else:
            for i, c, g in parts:
                self._apply(i, c, g, True)
        # (without R, the allocation's R is made from its parts when asked for)
        self._jobs[jobid] = Allocation(None, expiration, parts, R, None if R is not None else topo)
        self.generation += 1
        return entry_summary(rtext, ctext, gtext)

    def _ranks_info(self, ranks, cache=True):
        """(ranks, ranks.encode(), their indexes in the pool, or None if one
        is not in it), kept per rank set for register_hello unless not cache
        (a set made for one job: no other will bring the same object)."""
        topo = self.topology
        pos = topo.index
        if len(ranks) == 1:  # (most allocations: one node)
            r = ranks.first()
            i = pos.get(r)
            info = (ranks, str(r), None if i is None else (i,))
        else:
            indexes: list | None = []
            for r in ranks:
                i = pos.get(r)
                if i is None:
                    indexes = None
                    break
                indexes.append(i)
            info = (ranks, ranks.encode(), tuple(indexes) if indexes else None)
        if cache:
            if len(topo.hello_ranks) > 65536:
                topo.hello_ranks.clear()
            topo.hello_ranks[id(ranks)] = info
        return info

    def begin_bulk(self):
        """Many register_hello() calls follow: keep the free-resource buckets
        stale until end_bulk() (nothing may be allocated meanwhile)."""
        self._bulk = True

    def end_bulk(self):
        if self._bulk:
            self._bulk = False
            buckets = {}
            up, fc, fg = self.rank_up, self.nfree_cores, self.nfree_gpus
            for i in range(len(up)):
                if up[i]:
                    key = (fc[i], fg[i])
                    buckets[key] = buckets.get(key, 0) | 1 << i
            self._buckets = buckets
            self._keys = None
            self.nfree_up_cores = sum(compress(fc, up))

    def restore_masks(self, rows):
        """Set the allocated core and gpu bitmasks of many ranks at once,
        recording no job: rows of ``(rank, coremask, gpumask)``, what a
        store saved of ``alloc_cores``/``alloc_gpus`` (the jobs come with
        attach_jobs). Ranks no longer in the pool (shrunk) are skipped;
        ValueError for ids the rank does not have. Nothing may be allocated
        before (the masks of other ranks stay as they are)."""
        topo = self.topology
        pos, cmask, gmask, ncore, ngpu = topo.index, topo.core_mask, topo.gpu_mask, topo.ncores, topo.ngpus
        ac, ag, fc, fg = self.alloc_cores, self.alloc_gpus, self.nfree_cores, self.nfree_gpus
        self.begin_bulk()  # the free-resource buckets are rebuilt once
        try:
            for rank, cm, gm in rows:
                i = pos.get(rank)
                if i is None:
                    continue
                if cm & ~cmask[i] or gm & ~gmask[i]:
                    raise ValueError(f"rank {rank}: resources not in the pool")
                ac[i], ag[i] = cm, gm
                fc[i] = ncore[i] - cm.bit_count()
                fg[i] = ngpu[i] - gm.bit_count()
        finally:
            self.end_bulk()
        self._insufficient = None

    def _register_dict(self, jobid, R, nodes=None):
        """Fast path of register_alloc; False when the slow path must decide
        (unknown ranks or resources, double booking: it has the messages).
        nodes: rlite_nodes(R), when the caller has it already."""
        topo = self.topology
        pos = topo.index
        if jobid in self._jobs:
            return False
        parts = []
        for rank, cores, gpus in nodes if nodes is not None else rlite_nodes(R):
            i = pos.get(rank)
            if i is None:
                return False
            cm = cores.as_mask()
            gm = gpus.as_mask()
            if cm & ~topo.core_mask[i] or gm & ~topo.gpu_mask[i] or cm & self.alloc_cores[i] or gm & self.alloc_gpus[i]:
                return False
            parts.append((i, cm, gm))
        self.apply(parts, True)
        expiration = float(R["execution"].get("expiration", 0.0) or 0.0)
        self._jobs[jobid] = Allocation(None, expiration, tuple(parts), rdict=R)
        self.generation += 1
        return True

    def free(self, jobid, R=None, final=False):
        """Release a job's resources (all of them, or the ranks of R).

        Returns the freed Rset, or None for an unknown job.
        """
        rec = self._jobs.get(jobid)
        if rec is None:
            return None
        alloc, end, parts = rec.rset(), rec.end, rec.parts
        if final and R is alloc:
            R = None  # (the set this pool built: nothing to check)
        if R is not None:
            if not isinstance(R, Rset):
                R = Rset.from_dict(R)
            extra = R.ranks - alloc.ranks
            if extra:
                listed = ", ".join(str(r) for r in extra)
                raise PoolError(
                    f"free: {self._jobid_str(jobid)}: R contains ranks not in "
                    f"job allocation: {{{listed}}}"
                )
            if final and not R.same_resources(alloc):
                raise PoolError(
                    f"free: {self._jobid_str(jobid)}: final R mismatch: "
                    f"got {R.summary()}, expected {alloc.summary()}"
                )
        if final or R is None:
            self.apply(parts, False)
            del self._jobs[jobid]
            freed = alloc
        else:
            gone = R.ranks
            ranks = self.topology.ranks
            keep = []
            for part in parts:
                if ranks[part[0]] in gone:
                    self._apply(part[0], part[1], part[2], False)
                else:
                    keep.append(part)
            self._jobs[jobid] = Allocation(alloc.remove_ranks(gone), end, tuple(keep))
            freed = alloc.copy_ranks(gone)
        self.generation += 1
        return freed

    def update_expiration(self, jobid, expiration):
        """Change a job's tracked end time; False if the job is unknown."""
        rec = self._jobs.get(jobid)
        if rec is None:
            return False
        self._jobs[jobid] = Allocation(rec.R, float(expiration), rec.parts, rec.rdict, rec.topo)
        self.generation += 1
        return True

    # -- views -------------------------------------------------------------

    def _view(self, want):
        topo = self.topology
        nodes = {}
        frm = IDset.from_mask
        for i, rank in enumerate(topo.ranks):
            cg = want(i)
            if cg is not None:
                cm, gm = cg
                if cm or gm:
                    nodes[rank] = (topo.hosts[i], frm(cm), frm(gm))
        return topo.rset.with_nodes(nodes, nslots=0, scheduling=None)

    def allocated_rset(self):
        """Allocated cores/gpus (down ranks included)."""
        ac, ag = self.alloc_cores, self.alloc_gpus
        return self._view(lambda i: (ac[i], ag[i]))

    def free_rset(self):
        """Up and unallocated cores/gpus."""
        t, ac, ag, up = self.topology, self.alloc_cores, self.alloc_gpus, self.rank_up
        return self._view(
            lambda i: (t.core_mask[i] & ~ac[i], t.gpu_mask[i] & ~ag[i]) if up[i] else None
        )

    def down_rset(self):
        """All resources of down ranks."""
        t, up = self.topology, self.rank_up
        return self._view(lambda i: None if up[i] else (t.core_mask[i], t.gpu_mask[i]))

    def up_rset(self):
        """All resources of up ranks (allocated or not)."""
        t, up = self.topology, self.rank_up
        return self._view(lambda i: (t.core_mask[i], t.gpu_mask[i]) if up[i] else None)

    def free_counts(self):
        """(free cores, free gpus) summed over up ranks."""
        fc = fg = 0
        for i, up in enumerate(self.rank_up):
            if up:
                fc += self.nfree_cores[i]
                fg += self.nfree_gpus[i]
        return fc, fg

    # -- copies, shrink, persistence ---------------------------------------

    def copy(self, jobs=True):
        """Independent copy (topology shared) for simulations; with
        jobs=False, one that knows of no allocation (its masks still show
        them)."""
        new = object.__new__(Pool)
        new._jobid_str = self._jobid_str
        new.topology = self.topology
        new.alloc_cores = list(self.alloc_cores)
        new.alloc_gpus = list(self.alloc_gpus)
        new.nfree_cores = list(self.nfree_cores)
        new.nfree_gpus = list(self.nfree_gpus)
        new.rank_up = list(self.rank_up)
        new.nfree_up_cores = self.nfree_up_cores
        new._buckets = dict(self._buckets)
        new._keys = self._keys
        new._bulk = False
        new._insufficient = None
        new._jobs = dict(self._jobs) if jobs else {}
        new.generation = self.generation
        return new

    def remove_ranks(self, ranks):
        """Drop ranks from the pool (shrink). Jobs keep their R; the removed
        ranks are simply no longer tracked."""
        if not isinstance(ranks, IDset):
            ranks = IDset(ranks) if not isinstance(ranks, str) else IDset.parse(ranks)
        old_topo = self.topology
        old_up = dict(zip(old_topo.ranks, self.rank_up))
        self._init_topology(Topology(old_topo.rset.remove_ranks(ranks)))
        pos = self.topology.index
        jobs = {}
        for jobid, rec in self._jobs.items():
            keep = []
            for i, cm, gm in rec.parts:
                j = pos.get(old_topo.ranks[i])
                if j is not None:
                    self._apply(j, cm, gm, True)
                    keep.append((j, cm, gm))
            jobs[jobid] = Allocation(rec.rset(), rec.end, tuple(keep), rec.rdict)
        self._jobs = jobs
        down = [r for r, up in old_up.items() if not up and r in pos]
        if down:
            self.set_down(down)
        self.generation += 1

    def dump_allocs(self):
        """JSON-able list of {"id", "R", "end_time"} for every job."""
        return [
            {"id": jobid, "R": rec.as_dict(), "end_time": rec.end}
            for jobid, rec in self._jobs.items()
        ]

    def _parts_from_dict(self, rdict):
        """Allocation bitmasks straight from an R dict, or None when the R
        is unusual or conflicts (then the validating path reports it)."""
        try:
            nodes = rlite_ranks(rlite_entries(rdict))
        except RsetError:
            return None
        topo = self.topology
        pos = topo.index
        parts = []
        for r, (cores, gpus) in nodes.items():
            i = pos.get(r)
            if i is None:
                return None
            cm, gm = cores.as_mask(), gpus.as_mask()
            if cm & ~topo.core_mask[i] or gm & ~topo.gpu_mask[i]:
                return None
            if cm & self.alloc_cores[i] or gm & self.alloc_gpus[i]:
                return None
            parts.append((i, cm, gm))
        return tuple(parts)

    @classmethod
    def load(cls, rset, allocs, down=None, *, jobid_str=None):
        """Pool over rset with the allocations from dump_allocs().

        R objects are only parsed when first needed (allocations(), free);
        a bad or conflicting entry raises like register_alloc().
        """
        pool = cls(rset, jobid_str=jobid_str)
        jobs = pool._jobs
        for entry in allocs:
            jobid = entry["id"]
            rdict = entry["R"]
            parts = None if jobid in jobs else pool._parts_from_dict(rdict)
            if parts is None:
                pool.register_alloc(jobid, Rset.from_dict(rdict))
                rec = jobs[jobid]
            else:
                for i, cm, gm in parts:
                    pool._apply(i, cm, gm, True)
                end = rdict.get("execution", {}).get("expiration", 0.0)
                rec = jobs[jobid] = Allocation(None, float(end or 0.0), parts, rdict)
            end = entry.get("end_time")
            if end is not None:
                rec.end = float(end)
        if down:
            pool.set_down(down)
        pool.generation = 0
        return pool
