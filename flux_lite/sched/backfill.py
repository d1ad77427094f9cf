"""sched-backfill: EASY, hybrid and conservative backfilling over one pool.

Every pass drops all reservations and replans the queue in priority order
(Fluxion's backfill family). While fewer than ``reservation depth`` jobs have
been reserved in this pass a job is "allocated, else reserved" at the
earliest time it fits; after that it may only start now. Either way a job is
placed only where it delays no reservation: it avoids every reserved core or
gpu whose reservation begins before the job ends. Jobs without a duration
"end" at the instance expiration, or never. Depths: easy 1, hybrid
``reservation-depth`` (default 64), conservative unlimited.

The plan (:class:`Plan`) holds the release times of the running jobs (their
pool end time; 0 = never) and the reservations, the latter on an interval
tree; it is rebuilt by every pass. The planner behind it is built only once
the first job is blocked, so a pass where everything fits costs what a FIFO
pass costs. A pass whose only news is arrivals behind every job it reserved
(a burst of submissions, a queued job updated), or withdrawn requests it
neither started nor reserved, continues the previous one instead of
replanning: same result, less work. The last pass is kept across commands
as a summary in ``sched.state`` (its time and reservations: a few hundred
at most), so a command that queues one job reads neither the queue nor the
plan's other jobs; anything else the pass depended on drops it.

Within a command the planner itself is kept from pass to pass
(:class:`_KeptPlanner`): a new pass brings it up to date in place, re-reading
only the jobs that started or ended since (``_Planner.sync``), and plans
exactly what a planner built afresh would (tests/test_backfill_inplace.py
compares the two on random workloads). The first reservation of a pass of
one-core slots takes the time the free-core count gives, and its resources
are chosen only when a window overlapping it is looked at
(``_Planner.materialize``); jobs needing more cores than are free are
passed over without looking.

Annotations: on SUCCESS ``resource_summary`` and ``selection_type``
(``reserved`` if the job was reserved by the previous pass, else
``backfill`` with ``backfill`` = the first job reserved ahead of it, else
``immediate``); reserved pending jobs carry ``t_estimate`` and
``selection_type``; other blocked ones ``reason_pending``.
"""

import math
from bisect import bisect_left, bisect_right, insort

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.sched import store
from flux_lite.sched.base import COMMON_ARGS, ModuleArg, PendingJob, Scheduler, posint
from flux_lite.sched.pool import InfeasibleRequest
from flux_lite.sched.preview import describe_moves
from flux_lite.sched.registry import register

INF = math.inf
_BIG = 1 << 62  # sorts after every rank index / sequence number
DEPTHS = {"easy": 1, "hybrid": 64, "conservative": INF}


def shape_key(request):
    """Requests with equal keys are interchangeable for the pool's selection."""
    cons = request.constraint
    return (request.nnodes, request.nslots, request.slot_size, request.gpu_per_slot, bool(request.exclusive),
            tuple(request.properties or ()), request.constraint_key if cons else None)


def _end_parts(rec):
    """(end, parts) of a pool record; parts = ((index, coremask, gpumask), ...)."""
    return (rec[1], rec[2]) if isinstance(rec, tuple) else (rec.end, rec.parts)


class Plan:
    """One pass's plan: running-job release times and reservations.

    ``tree`` holds the reservations as intervals [start, end) (end ``inf``
    for a job that never ends) with the job id as data; ``ends`` the sorted
    release times of the running jobs; ``starts`` maps every placed job to
    its start (``now`` for jobs allocated in the pass).
    """

    def __init__(self, now, ends, reservations, starts, allocated=None, reserved_parts=None, ranks=None,
                 materialize=None):
        self.now = now
        self._materialize = materialize  # (chooses the resources of a lazy reservation)
        self._ends = ends
        self.reservations = list(reservations)  # (jobid, start, end), in placement order
        self.starts = dict(starts)
        self.allocated = dict(allocated or {})  # jobid -> Rset of the jobs the pass started
        self._parts = {} if reserved_parts is None else reserved_parts
        self._ranks = ranks
        self._tree = None

    @property
    def tree(self):
        if self._tree is None:
            from intervaltree import Interval, IntervalTree

            self._tree = IntervalTree(Interval(s, e, jobid) for jobid, s, e in self.reservations)
        return self._tree

    @property
    def ends(self):
        return self._ends() if callable(self._ends) else self._ends

    def reserved_resources(self, jobid):
        """{(rank, "core"|"gpu", id)} a reservation holds."""
        if self._materialize is not None:
            self._materialize()
            self._materialize = None
        out = set()
        for i, cm, gm in self._parts.get(jobid, ()):
            rank = self._ranks[i]
            for kind, mask in (("core", cm), ("gpu", gm)):
                while mask:
                    low = mask & -mask
                    out.add((rank, kind, low.bit_length() - 1))
                    mask ^= low
        return out

    def reserved(self):
        """{jobid: reserved start} in start order."""
        return {iv.data: iv.begin for iv in sorted(self.tree, key=lambda iv: (iv.begin, iv.data))}

    def reservations_at(self, t0, t1=None):
        """Job ids reserved over [t0, t1) (or at t0)."""
        ivs = self.tree.at(t0) if t1 is None else self.tree.overlap(t0, t1)
        return sorted(iv.data for iv in ivs)


def _step(totals, times, total, r):
    """Append (total at time r) to a step function kept as (totals, times),
    times ascending: a second total at the same time replaces the first."""
    if times[-1] == r:
        totals[-1] = total
    else:
        totals.append(total)
        times.append(r)


class _View:
    """A private pool copy showing what is unusable over the window [t, ew):
    what running jobs still hold at t, plus what reservations overlapping the
    window hold. ``nres``/``nrun``: reservations and new allocations seen;
    ``dirty``: ranks changed between passes, to refresh (see _Planner.sync)."""

    __slots__ = ("pool", "t", "ew", "nres", "nrun", "dirty")

    def __init__(self, pool, t, ew, nres, nrun, dirty=()):
        self.pool, self.t, self.ew, self.nres, self.nrun = pool, t, ew, nres, nrun
        self.dirty = set(dirty)

    def copy(self):
        return _View(self.pool.copy(jobs=False), self.t, self.ew, self.nres, self.nrun, self.dirty)


class _Planner:
    """Earliest-start placement over running jobs plus reservations.

    Views (:class:`_View`) show the pool as it will be over a window [t, ew).
    Moving a view only refreshes the ranks whose running jobs end, or whose
    reservations enter or leave, between the old and new window, so trying a
    job at successive release times costs per step what changed, not the
    size of the pool. One view stays at ``now`` (allocations and backfill
    checks); a few more sit at future times, and a search starts from the
    nearest one (or a cheap copy), so successive searches do not walk the
    same release times again. A count-only sweep over the release times
    gives, per request shape, the earliest time it could fit if there were
    no reservations; searches start there. The pool's own selection
    (worst-fit) picks the resources, so a job placed now gets exactly what
    ``Pool.alloc`` would give it when no reservation is in the way.
    """

    MAX_VIEWS = 12
    COPY_COST = 32  # release events / reservations to replay that are worth a fresh view copy
    MAX_NOW_VIEWS = 16
    NOW_COPY_COST = 0

    def __init__(self, pool, now, inst_exp, shortcuts=True):
        self.now = now
        self.inst_exp = inst_exp or 0.0
        self.shortcuts = shortcuts  # lazy reservations, the pool as a view (tests compare with views)
        self.topo = pool._topo
        base = pool.copy(jobs=False)
        n = len(base._ac)
        run = self.run = [{} for _ in range(n)]  # per rank: {jobid: (release, cm, gm)}
        known = self.known = {}  # jobid -> (pool record, release, parts) of the jobs running at the start
        counts = []  # (release, jobid, cores on up ranks) of the jobs running at the start, finite releases
        up = pool._up
        for jobid, rec in pool._jobs.items():
            end, parts = _end_parts(rec)
            r = self.release(end)
            known[jobid] = (rec, r, parts)
            nc = 0
            for i, cm, gm in parts:
                run[i][jobid] = (r, cm, gm)
                if up[i]:
                    nc += cm.bit_count()
            if r != INF:
                counts.append((r, jobid, nc))
        counts.sort()
        self.counts = counts  # (also the release events: the planner's own allocations are in run_log)
        # what running jobs hold now (for the now-window shortcut), and the free counts at the start
        self.busy_c, self.busy_g = list(base._ac), list(base._ag)
        self.fc0, self.fg0, self.up0 = list(base._fc), list(base._fg), list(base._up)
        self.free0 = base._free_up
        self.res = [[] for _ in range(n)]  # per rank: [(start, end, cm, gm)] sorted
        self.res_span = [0.0] * n  # per rank: longest reservation there
        self.serial = 0
        self._new_pass()
        self.src = pool
        # windows starting now (the first: an empty window, no reservation
        # overlaps it); made when first needed (see _base_view)
        self.now_views = [_View(base, now, now, 0, 0)]
        self.views = []  # windows starting later

    def _new_pass(self):
        self.res_start = []  # sorted (start, seq)
        self.res_start_now = []  # same, only reservations holding resources free now
        self.res_end = []  # sorted (end, seq), finite ends only
        self.res_ranks = []  # seq -> rank indexes
        self.res_now_ranks = []  # seq -> rank indexes that matter for a window starting now
        self.run_log = []  # (release, rank indexes, parts, jobid) of each job allocated by the planner
        self.reservations = []  # (jobid, start, end)
        self.reserved_parts = {}  # jobid -> parts
        self.frontier = {}  # shape -> ([d], [start]): lower bounds on later starts
        self.now_fail = {}  # shape -> smallest window (duration) that did not fit now
        self.never = {}  # shape -> smallest duration that could not be placed at all
        self.run_lb = {}  # shape -> earliest fit ignoring reservations
        self.capacity = {}  # kind of request -> (totals, times) (see _capacity)
        self.sweep = None  # (totals, times, [next count]) of _free_cores
        self.free_ub = None  # see _free_unreserved
        self.lazy = None  # (jobid, start, end, _Plan, extra cores) of a reservation without resources yet
        self.serial += 1  # (Plans of an earlier pass may not materialize)
        # a restored pass (see _Pass.restore): did a job its earlier part
        # started share a rank with a reservation it outlasts?
        self.conflict = False

    def sync(self, pool, now, inst_exp, touched):
        """Make this planner, kept from an earlier pass over pool, what
        _Planner(pool, now, inst_exp) would build: touched holds every job
        whose allocation may have changed since (freed, or allocated by a
        pass). The views of later windows are kept: each notes the ranks
        whose masks in it may have changed, and refreshes them when next
        moved. False when it cannot be done (then build a new planner)."""
        if pool._topo is not self.topo or (inst_exp or 0.0) != self.inst_exp or now < self.now:
            return False
        self.now = now
        changes = []  # (release, parts) of running-job entries removed or added
        run, known, jobs, up = self.run, self.known, pool._jobs, pool._up
        self.counts = counts = list(self.counts)  # the last pass's Plan keeps its own
        for r, _idx, parts, jobid in self.run_log:
            # the last pass's own allocations: running jobs now, as the pool holds them
            changes.append((r, parts))
            rec = jobs.get(jobid)
            if rec is not None:
                end, rparts = _end_parts(rec)
                if self.release(end) == r and (rparts == parts or set(rparts) == set(parts)):
                    known[jobid] = (rec, r, rparts)
                    if r != INF:
                        insort(counts, (r, jobid, sum(cm.bit_count() for i, cm, _gm in parts if up[i])))
                    touched.discard(jobid)
                    continue
            for i, _cm, _gm in parts:  # (changed since: re-read below)
                del run[i][jobid]
        for jobid in touched:
            old = known.get(jobid)
            rec = jobs.get(jobid)
            if old is not None:
                if old[0] is rec:
                    continue
                del known[jobid]
                r, parts = old[1], old[2]
                for i, _cm, _gm in parts:
                    del run[i][jobid]
                if r != INF:
                    del counts[bisect_left(counts, (r, jobid))]
                changes.append((r, parts))
            if rec is not None:
                end, parts = _end_parts(rec)
                r = self.release(end)
                known[jobid] = (rec, r, parts)
                nc = 0
                for i, cm, gm in parts:
                    run[i][jobid] = (r, cm, gm)
                    if up[i]:
                        nc += cm.bit_count()
                if r != INF:
                    insort(counts, (r, jobid, nc))
                changes.append((r, parts))
        touched.clear()
        if len(known) != len(jobs) or (counts and counts[0][0] <= now):
            return False  # (a job past its end still holds resources: every release would move)
        self.busy_c, self.busy_g = list(pool._ac), list(pool._ag)
        self.fc0, self.fg0, self.up0 = list(pool._fc), list(pool._fg), list(pool._up)
        self.free0 = pool._free_up
        # a view shows a running job if it releases after the window's
        # start, and the reservations it has taken in (seq < nres) that
        # overlap its window
        reservations, res_ranks = self.reservations, self.res_ranks
        for v in self.views:
            t, dirty = v.t, v.dirty
            for r, parts in changes:
                if r > t:
                    dirty.update(i for i, _cm, _gm in parts)
            for seq in range(v.nres):
                _jobid, rs, re = reservations[seq]
                if rs < v.ew and re > t:
                    dirty.update(res_ranks[seq])
            v.nres = v.nrun = 0
        res, span = self.res, self.res_span
        for idx in res_ranks:
            for i in idx:
                res[i] = []
                span[i] = 0.0
        self._new_pass()
        # windows starting now are cheap to set up from a copy of the pool,
        # as a new planner does (only when a pass needs one)
        self.src = pool
        self.now_views = []
        return True

    def _base_view(self):
        """A view of the empty window at now: a copy of the pool. (Taken
        after the planner's own allocations of the pass, it shows them too;
        moving it refreshes their ranks to the same masks.)"""
        views = self.now_views
        if not views:
            views.append(_View(self.src.copy(jobs=False), self.now, self.now, 0, 0))
        return views[0]

    def release(self, end):
        """When a running job's resources come back: its end; never for 0;
        just after now for a job past its end that still holds them."""
        if not end or end <= 0:
            return INF
        if end <= self.now:
            return math.nextafter(self.now, INF)
        return float(end)

    def window_end(self, t, duration):
        if duration > 0:
            return t + duration
        if self.inst_exp > t:
            return self.inst_exp
        return INF

    # -- views ---------------------------------------------------------------

    def _refresh(self, view, i):
        t, ew = view.t, view.ew
        cm = gm = 0
        for r, c, g in self.run[i].values():
            if r > t:
                cm |= c
                gm |= g
        res = self.res[i]
        if res:
            # sorted by start: nothing that starts before t - (longest one here) reaches t
            span = self.res_span[i]
            first = bisect_left(res, (t - span,)) if span != INF else 0
            for k in range(first, len(res)):
                s, e, c, g = res[k]
                if s >= ew:
                    break
                if e > t:
                    cm |= c
                    gm |= g
        pool = view.pool
        if pool._ac[i] != cm or pool._ag[i] != gm:
            pool._set_masks(i, cm, gm)

    def move(self, view, t, ew):
        t0, ew0 = view.t, view.ew
        dirty, view.dirty = view.dirty, set()
        ranks = self.res_ranks
        # placed since this view was last moved: only what overlaps its old
        # window is missing from it (the rest is handled like any other below)
        if view.nres < len(ranks):
            spans = self.reservations
            rr = self.res_now_ranks if t0 == self.now else ranks
            for seq in range(view.nres, len(ranks)):
                _jobid, rs0, re0 = spans[seq]
                if rs0 < ew0 and re0 > t0:
                    dirty.update(rr[seq])
            view.nres = len(ranks)
        if view.nrun < len(self.run_log):
            for k in range(view.nrun, len(self.run_log)):
                r, idx, _parts, _jobid = self.run_log[k]
                if r > t0:
                    dirty.update(idx)
            view.nrun = len(self.run_log)
        if t != t0:
            lo, hi = (t0, t) if t0 < t else (t, t0)
            ev, known = self.counts, self.known
            for k in range(bisect_right(ev, (lo, INF)), bisect_right(ev, (hi, INF))):
                dirty.update(i for i, _cm, _gm in known[ev[k][1]][2])
            for r, idx, _parts, _jobid in self.run_log:
                if lo < r <= hi:
                    dirty.update(idx)
            re = self.res_end
            for k in range(bisect_right(re, (lo, _BIG)), bisect_right(re, (hi, _BIG))):
                dirty.update(ranks[re[k][1]])
        if ew != ew0:
            lo, hi = (ew0, ew) if ew0 < ew else (ew, ew0)
            if t == t0 == self.now:
                # at t = now, reserving what running jobs hold anyway changes nothing
                rs, rr = self.res_start_now, self.res_now_ranks
            else:
                rs, rr = self.res_start, ranks
            for k in range(bisect_left(rs, (lo, -1)), bisect_left(rs, (hi, -1))):
                dirty.update(rr[rs[k][1]])
        view.t, view.ew = t, ew
        for i in dirty:
            self._refresh(view, i)

    def _view_for(self, t, ew):
        """The view cheapest to move to the window [t, ew), or a copy of it
        when that is cheaper than replaying many changes and there is room.
        Windows starting now (backfill checks) and later ones (searches for
        a start) keep separate views: time limits cluster on a few values,
        so a few views at now cover most windows exactly."""
        if t == self.now:
            self._base_view()
            views, limit, copy_cost = self.now_views, self.MAX_NOW_VIEWS, self.NOW_COPY_COST
            rs = self.res_start_now
            k = bisect_left(rs, (ew, -1))
            best, cost = None, None
            for v in views:
                c = abs(bisect_left(rs, (v.ew, -1)) - k) if v.ew != ew else 0
                if best is None or c < cost:
                    best, cost = v, c
                    if c == 0:
                        break
        else:
            views, limit, copy_cost = self.views, self.MAX_VIEWS, self.COPY_COST
            ev = self.counts  # (the planner's own allocations aside: an estimate)
            k = bisect_right(ev, (t, INF))
            rs = self.res_start
            j = bisect_left(rs, (ew, -1))
            best, cost = None, None
            for v in views:
                c = abs(bisect_right(ev, (v.t, INF)) - k) if v.t != t else 0
                if v.ew != ew:
                    c += abs(bisect_left(rs, (v.ew, -1)) - j)
                if best is None or c < cost:
                    best, cost = v, c
                    if c == 0:
                        break
            if best is None:  # the first search: start from a copy of a view at now
                best, cost = self._base_view(), copy_cost + 1
        if cost > copy_cost and len(views) < limit:
            best = best.copy()
            views.append(best)
        return best

    def next_release(self, t):
        """The first time after t when running jobs or reservations release something."""
        best = None
        ev = self.counts
        k = bisect_right(ev, (t, INF))
        if k < len(ev):
            best = ev[k][0]
        for r, _idx, _parts, _jobid in self.run_log:
            if t < r != INF and (best is None or r < best):
                best = r
        re = self.res_end
        k = bisect_right(re, (t, _BIG))
        if k < len(re) and (best is None or re[k][0] < best):
            best = re[k][0]
        return best

    # -- bookkeeping of placed jobs -----------------------------------------

    def _add_running(self, parts, r, jobid):
        idx = []
        for i, cm, gm in parts:
            self.run[i][jobid] = (r, cm, gm)
            self.busy_c[i] |= cm
            self.busy_g[i] |= gm
            idx.append(i)
        self.run_log.append((r, idx, parts, jobid))

    def _add_reservation(self, jobid, s, e, parts):
        seq = len(self.res_ranks)
        idx = []
        free_now = []  # ranks where it holds something no running job holds now
        for i, cm, gm in parts:
            insort(self.res[i], (s, e, cm, gm))
            if e - s > self.res_span[i]:
                self.res_span[i] = e - s
            idx.append(i)
            if cm & ~self.busy_c[i] or gm & ~self.busy_g[i]:
                free_now.append(i)
        self.res_ranks.append(idx)
        self.res_now_ranks.append(free_now)
        insort(self.res_start, (s, seq))
        if free_now:
            insort(self.res_start_now, (s, seq))
        if e != INF:
            insort(self.res_end, (e, seq))
        self.reservations.append((jobid, s, e))
        self.reserved_parts[jobid] = parts

    def _lower_bound(self, key, d):
        """No job of this shape with a window at least d can start before this."""
        fr = self.frontier.get(key)
        if fr is None:
            return self.now
        k = bisect_right(fr[0], d)
        return fr[1][k - 1] if k else self.now

    def _record_start(self, key, d, s):
        ds, ss = self.frontier.setdefault(key, ([], []))
        k = bisect_right(ds, d)
        if k and ss[k - 1] >= s:
            return
        j = k
        while j < len(ds) and ss[j] <= s:
            j += 1
        ds[k:j] = [d]
        ss[k:j] = [s]

    def _running_lb(self, key, req):
        """Earliest time the request fits when only the jobs running at the
        start of the pass are considered (counts only; INF = never)."""
        lb = self.run_lb.get(key)
        if lb is not None:
            return lb
        p = self.src._plan(req)
        want = p.count
        if not p.nodes and p.s == 1 and not p.g and p.allowed is None:
            totals, times = self._free_cores(want)
        else:
            totals, times = self._capacity(p)
        k = bisect_left(totals, want)
        lb = times[k] if k < len(totals) else INF
        self.run_lb[key] = lb
        return lb

    def _free_cores(self, want):
        """_capacity for slots of one core anywhere (most requests): free
        cores of up ranks, swept only as far as a request of want needs."""
        sweep = self.sweep
        if sweep is None:
            sweep = self.sweep = ([self.free0], [self.now], [0])
        totals, times, pos = sweep
        total = totals[-1]
        if total < want:
            counts, k = self.counts, pos[0]
            n = len(counts)
            while k < n:
                r, _jobid, nc = counts[k]
                k += 1
                if nc:
                    total += nc
                    _step(totals, times, total, r)
                    if total >= want and (k == n or counts[k][0] != r):
                        break
            pos[0] = k
        return totals, times

    def _capacity(self, p):
        """How many of p's units (nodes, or slots) fit the ranks as the jobs
        running at the start of the pass end: (totals, times), totals
        non-decreasing, times[k] when totals[k] become free (times[0] = now).
        Requests differing only in their count share one sweep, so a pass
        pays it once per kind of request, and each job a binary search."""
        if p.nodes:
            ckey = (p.key, True, p.need_c, p.need_g, p.exclusive)
        else:
            ckey = (p.key, False, p.s, p.g)
        hit = self.capacity.get(ckey)
        if hit is not None:
            return hit
        allowed = p.allowed
        up = self.up0
        fc, fg = list(self.fc0), list(self.fg0)
        ok = [up[i] and (allowed is None or (allowed >> i) & 1) for i in range(len(fc))]
        if p.nodes:
            need_c, need_g, excl, ncore = p.need_c, p.need_g, p.exclusive, self.topo.ncore

            def value(i):
                return 1 if ok[i] and fc[i] >= need_c and fg[i] >= need_g and (not excl or fc[i] == ncore[i]) \
                    else 0
        else:
            sz, g = p.s, p.g

            def value(i):
                if not ok[i]:
                    return 0
                n = fc[i] // sz
                return min(n, fg[i] // g) if g else n
        total = sum(value(i) for i in range(len(fc)))
        totals, times = [total], [self.now]
        known = self.known
        for r, jobid, _nc in self.counts:
            gain = 0
            for i, cm, gm in known[jobid][2]:
                before = value(i)
                fc[i] += cm.bit_count()
                fg[i] += gm.bit_count()
                gain += value(i) - before
            if gain:
                total += gain
                _step(totals, times, total, r)
        hit = self.capacity[ckey] = (totals, times)
        return hit

    # -- placement ------------------------------------------------------------------

    def place(self, pj, reserve, key, pool):
        """("alloc", rset) if pj starts now (allocated in pool, the one the
        planner was built over), ("reserve", t) if reserved at t, or None: it
        cannot start now (reserve=False), or cannot be placed at all. key:
        pj's shape_key, or None."""
        req = pj.request
        now = self.now
        d = req.duration or 0.0
        deff = d if d > 0 else INF
        if key is None:
            key = shape_key(req)
        never = self.never.get(key)
        if never is not None and deff >= never:
            return None
        t = self._running_lb(key, req)
        if t == INF:
            self.never[key] = 0.0
            return None
        if reserve:
            t = max(t, self._lower_bound(key, deff))
        elif t > now:
            return None
        if t == now:
            fail = self.now_fail.get(key)
            if fail is not None and deff >= fail:
                if not reserve:
                    return None
                t = self.next_release(now)
        limit = self.inst_exp if self.inst_exp > now else INF  # nothing starts once the instance ends
        plan = self.src._plan(req)
        lazy = self.lazy
        if lazy is None:
            if reserve and self.shortcuts and now < t < limit and not self.reservations and not self.run_log \
                    and not plan.nodes and plan.s == 1 and not plan.g and plan.allowed is None:
                # the first reservation of a pass that has started nothing yet, of
                # one-core slots anywhere: it starts when the count sweep says;
                # of the cores free then, it leaves `extra` to others
                totals, times, _pos = self.sweep
                k = bisect_left(times, t)
                extra = totals[k] - plan.count if k < len(times) and times[k] == t else INF
                self.lazy = (pj.jobid, t, self.window_end(t, d), plan, extra)
                self._record_start(key, deff, t)
                return ("reserve", t)
        elif reserve or self.window_end(now, d) > lazy[1]:  # (a window overlapping it)
            if not reserve and plan.count * (plan.need_c if plan.nodes else plan.s) > lazy[4]:
                # it would need cores the reservation takes: of the cores free
                # now it leaves at most what it leaves of those free at its start
                return None
            self.materialize()
        view = None
        rs = self.res_start_now
        while t is not None and (t == now or t < limit):
            ew = self.window_end(t, d)
            if t == now and self.shortcuts and (not rs or rs[0][0] >= ew) and pool is self.src:
                # no reservation holding something free now starts within the
                # window: the pool itself shows what a view of it would
                view = None
                found = pool._select(plan)
            else:
                if t == now and not reserve and self.shortcuts and len(self.reservations) == 1 \
                        and pool is self.src \
                        and plan.count * (plan.need_c if plan.nodes else plan.s) > self._free_unreserved():
                    return None  # (more cores than are free now outside the one reservation)
                if t == now or view is None or view.t == now:
                    view = self._view_for(t, ew)
                # later steps of a search keep the view: it is one release away
                self.move(view, t, ew)
                found = view.pool._select(plan)
            if found is None:
                if t == now:
                    fail = self.now_fail.get(key)
                    if fail is None or deff < fail:
                        self.now_fail[key] = deff
                    if not reserve:
                        return None
                t = self.next_release(t)
                continue
            if t == now:
                # what the view shows free now is free in the pool (it holds what
                # the pool holds, and reservations); parts in rank order, as from R
                sel, nslots = found
                parts = tuple(sorted(sel))
                rset = pool.alloc_selected(pj.jobid, req, (parts, nslots), t, expiration_default=self.inst_exp)
                if view is not None:
                    view.pool._apply_parts(sel, True)
                self._add_running(parts, self.release(rset.expiration), pj.jobid)
                return ("alloc", rset)
            # a reservation needs no R, and the view needs no update: its next
            # move refreshes the ranks of reservations placed since the last
            parts = tuple(found[0])
            self._add_reservation(pj.jobid, t, view.ew, parts)
            self._record_start(key, deff, t)
            return ("reserve", t)
        if reserve:
            if never is None or deff < never:
                self.never[key] = deff
        return None

    def _free_unreserved(self):
        """With one reservation: cores free now outside it, at most (taken
        when first asked in a pass: the pass's allocations only lower it)."""
        ub = self.free_ub
        if ub is None:
            pool = self.src
            ac, up = pool._ac, pool._up
            held = sum((cm & ~ac[i]).bit_count() for i, cm, _gm in self.reserved_parts[self.reservations[0][0]]
                       if up[i])
            ub = self.free_ub = pool._free_up - held
        return ub

    def materialize(self, serial=None):
        """Choose the resources of the reservation place() left lazy (see
        _Planner), as place() would have then: since, only windows it does
        not overlap were looked at, and only jobs that end before it starts
        were allocated, so the view at its start is what it was. serial:
        that of the pass it was made in (a Plan asking later)."""
        if serial is not None and serial != self.serial:
            raise RuntimeError("the reservations of an earlier pass are gone")
        lazy = self.lazy
        if lazy is not None:
            self.lazy = None
            jobid, t, ew, plan, _extra = lazy
            view = self._view_for(t, ew)
            self.move(view, t, ew)
            found = view.pool._select(plan)
            assert found is not None, "a reservation the count sweep found does not fit"
            self._add_reservation(jobid, t, view.ew, tuple(found[0]))

    def rebase(self, t):
        """Move the plan's "now" to t, a later time at which nothing has
        changed: no running job or reservation releases anything by t (the
        caller checks). Every cached answer stays true: what fits now fits
        the same ranks, and a window starting later overlaps the same
        reservations or more, so what failed still fails."""
        old = self.now
        self.now = t
        for totals_times in self.capacity.values():
            totals_times[1][0] = t
        if self.sweep is not None:
            self.sweep[1][0] = t
        for key, lb in self.run_lb.items():
            if lb == old:
                self.run_lb[key] = t
        # the views at the old now show the same running jobs; move() brings
        # their windows over (through its general path, as their t is not now)

    def unchanged_until(self, t):
        """Does nothing the plan knows of release resources by t, and would a
        fresh plan at t reserve what this one did? It would unless a job this
        plan started shares a rank with a reservation it outlasts: as a
        running job it then changes that rank's free count, and so the
        pool's choice of ranks for the reservation. (A lazy reservation has
        none of those: every job started before it is chosen ends by its
        start, see place().)"""
        ev = self.counts
        if self.conflict or (ev and ev[0][0] <= t) or any(r <= t for r, _i, _p, _j in self.run_log):
            return False
        for (_jobid, start, _end), ranks in zip(self.reservations, self.res_ranks):
            for r, idx, _parts, _jobid2 in self.run_log:
                if r > start and any(i in ranks for i in idx):
                    return False
        return True

    @property
    def ranks(self):
        return self.topo.ranks


class _KeptPlanner:
    """The planner of the passes over one pool (the scheduler's own), kept
    from pass to pass: a pass that needs one brings it up to date
    (_Planner.sync), which re-reads only the jobs whose allocations changed
    since (``touched``: the passes' allocations, the frees). Anything else
    that changes the pool, or the instance expiration, drops it."""

    def __init__(self, pool):
        self.pool = pool
        self.planner = None
        self.touched = set()

    def drop(self):
        self.planner = None

    def planner_at(self, now, inst):
        planner = self.planner
        if planner is None or not planner.sync(self.pool, now, inst, self.touched):
            planner = self.planner = _Planner(self.pool, now, inst)
        self.touched.clear()
        return planner


class _Pass:
    """One scheduling pass, resumable: jobs that arrive later with a lower
    priority than every job already placed are placed by the same pass, with
    the same result a full replan would give, as long as nothing else changed
    (see BackfillScheduler.schedule). kept: the pool's _KeptPlanner, or
    None for a planner of the pass's own."""

    def __init__(self, sched, pool, commit, kept=None, shortcuts=True):
        self.sched = sched
        self.shortcuts = shortcuts  # (tests: False for the plain algorithm, for reference)
        self.pool = pool
        self.commit = commit
        self.kept = kept
        self.touched = kept.touched if kept is not None else set()
        self.now = sched.b.now
        self.inst = sched.instance_expiration
        self.depth = sched.reservation_depth
        self.planner = None
        self.first_reserved = None
        self.nreserved = 0
        self.starts = {}
        self.allocated = {}
        self.feasible = sched.feasibility_notes(pool)
        self.needs = sched.core_needs(pool)
        self.free = None  # free cores of up ranks once the planner is in use (an upper bound)
        self.last_key = None  # the largest sort key placed
        self.reserved_key = None  # ... and reserved

    def resumable(self, now):
        """Can jobs arriving at now be placed by continuing this pass, as a
        new pass would place them? At its own time or later, if nothing it
        planned with has released anything by then, its reservations would
        be chosen alike (see _Planner.unchanged_until) and the instance
        expiration is as it was (the queued jobs it could not start still
        cannot: same pool, same reservations, and their windows only grow)."""
        if now != self.now and (now < self.now or self.inst != self.sched.instance_expiration
                                or (self.inst and self.inst <= now)):
            return False
        return self.planner is None or self.planner.unchanged_until(now)

    def rebase(self, now):
        if now != self.now:
            self.now = now
            if self.planner is not None:
                self.planner.rebase(now)

    def place_all(self, queue):
        """Place queue (sorted by PendingJob.sort_key) in order."""
        if queue:
            last = queue[-1].sort_key()  # (the largest)
            if self.last_key is None or last > self.last_key:
                self.last_key = last

        sched, pool, commit, now, inst = self.sched, self.pool, self.commit, self.now, self.inst
        touched, needs = self.touched, self.needs
        for pj in queue:
            if self.planner is None:
                try:
                    rset = pool.alloc_or_none(pj.jobid, pj.request, now, expiration_default=inst)
                except InfeasibleRequest as exc:
                    if commit:
                        sched.deny(pj, str(exc) or "unsatisfiable request")
                    continue
                if rset is None:  # (no room now)
                    kept = self.kept
                    self.planner = _Planner(pool, now, inst, self.shortcuts) if kept is None \
                        else kept.planner_at(now, inst)
                else:
                    touched.add(pj.jobid)
                    self.starts[pj.jobid] = now
                    self.allocated[pj.jobid] = rset
                    if commit:
                        sched._success(pj, rset, None)
                    continue
            reserve = self.nreserved < self.depth
            if not reserve and self.shortcuts:
                # it can only start now: not if it needs more cores than are free
                need = needs.get(pj.jobid)
                if need is not None:
                    if self.free is None:
                        self.free = pool._free_up
                    if need > self.free:
                        continue
            key = shape_key(pj.request)
            note = self.feasible.get(key)
            if note is None:
                try:
                    pool.check_feasibility(pj.request)
                    note = self.feasible[key] = ""
                except InfeasibleRequest as exc:
                    note = self.feasible[key] = str(exc) or "unsatisfiable request"
            if note:
                if commit:
                    sched.deny(pj, note)
                continue
            if pj.jobid not in needs:  # (a feasible job: one to pass over while it cannot fit)
                p = pool._plan(pj.request)
                needs[pj.jobid] = p.count * (p.need_c if p.nodes else p.s)
            placed = self.planner.place(pj, reserve, key, pool)
            if placed is None:
                continue
            if placed[0] == "alloc":
                rset = placed[1]
                touched.add(pj.jobid)
                self.starts[pj.jobid] = now
                self.allocated[pj.jobid] = rset
                if commit:
                    sched._success(pj, rset, self.first_reserved)
            else:
                self.nreserved += 1
                self.reserved_key = pj.sort_key()
                if self.first_reserved is None:
                    self.first_reserved = pj.jobid
                self.starts[pj.jobid] = placed[1]
        return self

    def accepts(self, new):
        """Can these arrivals (sorted) be placed by continuing this pass, as
        a new pass would place them? If they are behind every job it
        reserved, yes, wherever they fall among the jobs it left blocked:
        those hold nothing in the plan, and placing an arrival (reserving
        it, or starting it) only takes resources from them, so they stay
        blocked. (Below the reservation depth a blocked job is one that
        could not be placed at all; past it, one that cannot start now.)
        The jobs the pass started are running, as a new pass would see them."""
        return not new or self.reserved_key is None or new[0].sort_key() > self.reserved_key

    # -- across commands ---------------------------------------------------------------

    # a pass with more reservations than this is not kept (conservative over
    # a deep queue): restoring it would cost what a replan costs
    MAX_KEPT_RESERVATIONS = 256
    MAX_KEPT_PARTS = 4096  # ... or more reserved (rank, cores) entries in all: a few big jobs on a big pool

    def summary(self):
        """What a later command needs to continue this pass (JSON), or None."""
        planner = self.planner
        out = {"now": self.now, "inst": self.inst, "depth": self.depth if self.depth != INF else None,
               "last_key": self.last_key, "reserved_key": self.reserved_key, "nreserved": self.nreserved,
               "first_reserved": self.first_reserved, "planner": planner is not None}
        if planner is not None:
            planner.materialize()
            if len(planner.reservations) > self.MAX_KEPT_RESERVATIONS or not planner.unchanged_until(-INF) \
                    or sum(map(len, planner.reserved_parts.values())) > self.MAX_KEPT_PARTS:
                return None  # (a conflict makes it unresumable anyway)

            out["reservations"] = [[jobid, s, e if e != INF else None,
                                    store.encode_parts(self.pool, planner.reserved_parts[jobid])]
                                   for jobid, s, e in planner.reservations]
        return out

    @classmethod
    def restore(cls, sched, pool, summary):
        """The pass a summary() describes, rebuilt over pool (which holds the
        jobs it started), or None when the summary is not one this policy
        wrote (a cache: anything odd means a full pass instead)."""
        try:
            self = cls(sched, pool, commit=True)
            if pool is sched.pool:  # (its allocations change what the kept planner knows)
                self.touched = sched._planner_for_pool().touched
            depth = summary["depth"]
            if (INF if depth is None else depth) != self.depth:
                return None
            self.now = float(summary["now"])
            self.inst = float(summary["inst"])
            for name in ("last_key", "reserved_key"):
                key = summary[name]
                if key is not None:
                    key = (int(key[0]), int(key[1]))
                setattr(self, name, key)
            self.nreserved = int(summary["nreserved"])
            first = summary["first_reserved"]
            self.first_reserved = None if first is None else int(first)
            if summary["planner"]:
                planner = self.planner = _Planner(pool, self.now, self.inst)
                topo = pool._topo
                for jobid, s, e, parts in summary["reservations"]:
                    jobid, s = int(jobid), float(s)
                    e = INF if e is None else float(e)
                    parts = store.decode_parts(pool, parts)
                    if not (self.now <= s < e) or any(cm & ~topo.cmask[i] or gm & ~topo.gmask[i]
                                                      for i, cm, gm in parts):
                        return None
                    planner._add_reservation(jobid, s, e, parts)
                    self.starts[jobid] = s
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return self

    def reserved_ids(self):
        """The jobs this pass reserved (plan().reservations)."""
        planner = self.planner
        if planner is None:
            return set()
        out = {jobid for jobid, _s, _e in planner.reservations}
        if planner.lazy is not None:
            out.add(planner.lazy[0])
        return out

    def plan(self):
        planner = self.planner
        if planner is None:
            pool, now = self.pool, self.now
            return Plan(now, lambda: sorted({e for _j, e in pool.job_end_times() if e and e > now}), [],
                        self.starts, self.allocated)
        if self.kept is None:
            planner.materialize()
        ev, log = planner.counts, planner.run_log  # (the planner may be kept for the next pass: this pass's own)
        reservations, lazy, serial = planner.reservations, planner.lazy, planner.serial
        if lazy is not None:
            reservations = reservations + [lazy[:3]]
        return Plan(self.now, lambda: sorted({e[0] for e in ev} | {e[0] for e in log if e[0] != INF}), reservations,
                    self.starts,
                    self.allocated, planner.reserved_parts, planner.ranks, lambda: planner.materialize(serial))


def _parse_policy(value):
    if value not in DEPTHS:
        raise UsageError(f"policy='{value}' is invalid: expected easy, hybrid or conservative")
    return {"policy": value}


@register
class BackfillScheduler(Scheduler):
    name = "sched-backfill"
    policies = ("easy", "hybrid", "conservative")
    description = "backfill (easy, hybrid, conservative)"
    module_args = COMMON_ARGS + (
        ModuleArg("policy", _parse_policy, "easy, hybrid or conservative", tuple(DEPTHS)),
        ModuleArg("reservation-depth", lambda v: {"reservation-depth": posint(v, "reservation-depth")},
                  "reservations per pass (hybrid; a cap for conservative)"),
    )
    queue_depth = "unlimited"
    policy = "easy"
    default_log_level = "debug"  # its backfill decisions are logged unless asked not to

    @classmethod
    def policy_args(cls, policy, cfg=None):
        args = {"policy": policy}
        if cfg is not None:
            rdepth = configmod.get_path(cfg, "sched.reservation-depth")
            if rdepth is not None:
                args["reservation-depth"] = rdepth
        return args

    def __init__(self, broker, args=None, state=None):
        self.plan = None
        self._ahead = (None, None)  # (jobid, its f58) of the last backfill annotation
        self.last_reserved = None  # jobs reserved by the last pass of this process
        self._live = None  # the last pass, while only new arrivals happened since
        self._kept = None  # the last command's last pass (its summary), not yet restored
        self._planner_kept = None  # the planner kept for self.pool (see _KeptPlanner)
        self._arrivals = []
        self._annotate = set()  # jobs forecast() must annotate; None: all
        self._feasible = (None, {})  # (topology, {shape: "" or why it never fits})
        self._needs = (None, {})  # (topology, {jobid: fewest cores}) (see core_needs)
        super().__init__(broker, args, state)

    def apply_args(self, args):
        super().apply_args(args)
        self.policy = args.get("policy", "easy")
        depth = DEPTHS[self.policy]
        if args.get("reservation-depth"):
            if self.policy == "easy":
                # EASY is depth 1 by definition; a depth means hybrid
                raise FluxLiteError("reservation-depth does not apply to the easy policy (use hybrid)")
            # hybrid's depth, or a cap on conservative (as Fluxion caps it at its queue depth)
            depth = int(args["reservation-depth"])
        self.reservation_depth = depth

    def ready_log(self):
        super().ready_log()
        depth = "unlimited" if self.reservation_depth == INF else self.reservation_depth
        self.log("info", f"policy={self.policy} reservation-depth={depth}")

    def stats(self):
        out = super().stats()
        out["reservation-depth"] = "unlimited" if self.reservation_depth == INF else self.reservation_depth
        out["reserved_jobs"] = sum(1 for pj in self.queue.values()
                                   if pj.annotations.get("selection_type") == "reserved")
        return out

    def load_extra(self, state):
        kept = state.get("pass")
        self._kept = kept if isinstance(kept, dict) else None

    def dump_extra(self):
        live = self._live
        if live is None:
            # not restored this command: what was kept still holds (changed() drops it)
            return {} if self._kept is None else {"pass": self._kept}
        summary = live.summary()
        return {} if summary is None else {"pass": summary}

    def feasibility_notes(self, pool):
        """{shape: "" if it fits the whole pool, else why not}, kept while the
        pool's topology is the same (allocations and down ranks aside, as
        check_feasibility is)."""
        topo, notes = self._feasible
        if topo is not pool._topo:
            notes = {}
            self._feasible = (pool._topo, notes)
        return notes

    def core_needs(self, pool):
        """{jobid: the fewest cores it can start with} of feasible queued
        jobs, kept while the pool's topology is the same (see
        feasibility_notes): a pass passes over a job needing more than are
        free without looking at it."""
        topo, needs = self._needs
        if topo is not pool._topo or len(needs) > 4096:  # (jobs gone leave theirs behind)
            needs = {}
            self._needs = (pool._topo, needs)
        return needs

    # -- the plan is stale as soon as anything changes ---------------------------

    def changed(self, what, msg=None):
        self.plan = None
        kept = self._planner_kept
        if kept is not None and what not in ("alloc", "cancel", "prioritize"):  # (those change only the queue)
            if what == "free":
                kept.touched.add(msg["id"])
            else:
                kept.drop()
        if what == "alloc":
            # a new arrival: the last pass may still be continued (see schedule)
            self._arrivals.append(msg["id"])
        elif what == "cancel" and msg is not None and (live := self._current()) is not None \
                and msg.get("id") not in live.starts:
            # a withdrawn request the pass neither started nor reserved held
            # nothing in its plan: the pass stands
            self.plan = live.plan()
        else:
            self._live = self._kept = None

    def _current(self):
        """The last pass, restored from the last command if need be."""
        if self._live is None and self._kept is not None:
            self._live = _Pass.restore(self, self.pool, self._kept)
            self._kept = None
        return self._live

    # -- the pass -----------------------------------------------------------------

    def schedule(self):
        """Replan everything; but when only new jobs arrived since the last
        pass, at the same time, all behind every job placed by it (a burst of
        submissions), place just those, continuing that pass."""
        arrivals, self._arrivals = self._arrivals, []
        live = self._current()
        if live is not None and live.resumable(self.b.now):
            if len(arrivals) == 1:  # (a submission at a time: a trace replay)
                pj = self.queue.get(arrivals[0])
                new = [] if pj is None else [pj]
            else:
                new = sorted((self.queue[j] for j in arrivals if j in self.queue), key=PendingJob.sort_key)
            if live.accepts(new):
                live.rebase(self.b.now)
                live.place_all(new)
                self._finish(live)
                if self._annotate is not None:
                    self._annotate.update(pj.jobid for pj in new)
                return
        self._finish(_Pass(self, self.pool, commit=True, kept=self._planner_for_pool()).place_all(self.sorted_queue()))
        self._annotate = None

    def _planner_for_pool(self):
        kept = self._planner_kept
        if kept is None or kept.pool is not self.pool:
            kept = self._planner_kept = _KeptPlanner(self.pool)
        return kept

    def _finish(self, live):
        self._live = live
        self._plan, self._plan_of = None, live  # (made when asked for: once per command)
        self.last_reserved = live.reserved_ids()

    @property
    def plan(self):
        """The last pass's Plan, or None if anything changed since."""
        plan = self._plan
        if plan is None and self._plan_of is not None:
            plan = self._plan = self._plan_of.plan()
            self._plan_of = None
        return plan

    @plan.setter
    def plan(self, plan):
        self._plan, self._plan_of = plan, None

    def forecast(self):
        """Annotate pending jobs from the last pass's plan (once per command)."""
        plan = self.plan
        only, self._annotate = self._annotate, set()
        if plan is None:  # something changed after the last pass: estimates only
            plan = self.replan(self.pool.copy(), self.sorted_queue(), commit=False)
            only = None
        reserved = plan.reserved()
        if only is None:
            queue = self.sorted_queue()
        else:
            # only continued passes this command: the jobs queued before were
            # annotated from the same plan, which only grew behind them
            queue = [pj for pj in (self.queue.get(j) for j in sorted(only)) if pj is not None]
        for pj in queue:
            t = reserved.get(pj.jobid)
            if t is not None:
                self.annotate(pj, {"t_estimate": t, "selection_type": "reserved", "reason_pending": None})
            else:
                self.annotate(pj, {"t_estimate": None, "selection_type": None,
                                   "reason_pending": "insufficient resources"})

    def replan(self, pool, queue, commit):
        """Place every queued job in priority order on pool (allocating there).

        With commit, allocations and denials are answered; without, pool
        should be a copy and nothing else changes. Returns the Plan.
        """
        return _Pass(self, pool, commit).place_all(queue).plan()

    def _success(self, pj, rset, first_reserved):
        sched = {"resource_summary": rset.summary()}
        if self.last_reserved is not None:
            was_reserved = pj.jobid in self.last_reserved
        else:  # first pass since load: the annotations say what the last one did
            was_reserved = pj.annotations.get("selection_type") == "reserved"
        if was_reserved:
            sched["selection_type"] = "reserved"
        elif first_reserved is not None:
            sched["selection_type"] = "backfill"
            memo = self._ahead
            if memo[0] != first_reserved:  # (one per pass: the jobs it backfills share it)
                memo = self._ahead = (first_reserved, self.job_name(first_reserved))
            sched["backfill"] = ahead = memo[1]
            if self.logs("debug"):
                name = self.job_name(pj.jobid)
                self.log("debug", f"backfill: {name} (ahead of {ahead})")
                self.success(pj, rset, {"sched": sched}, name)
                return
        else:
            sched["selection_type"] = "immediate"
        self.success(pj, rset, {"sched": sched})

    # -- what-if -----------------------------------------------------------------------

    def preview_expiration(self, jobid, expiration):
        """Lines for reserved jobs whose start would move if jobid ended at expiration.

        Both plans are computed on copies of the pool; nothing persistent changes.
        """
        if jobid not in self.pool:
            return []
        queue = self.sorted_queue()
        old = self.replan(self.pool.copy(), queue, commit=False).starts
        pool = self.pool.copy()
        pool.update_expiration(jobid, expiration)
        new = self.replan(pool, queue, commit=False).starts

        return describe_moves(queue, old, new, self.b.now)
