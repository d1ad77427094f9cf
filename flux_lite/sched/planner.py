"""The backfill planner: earliest-start placement of jobs over time and resources.

A :class:`Planner` answers, for one scheduling pass over one pool, "when
and where can this job start without delaying any reservation made so far?"
It knows the jobs running at the start of the pass (their release times:
the pool's end times, 0 = never) and the reservations the pass has made,
and places a job either now (allocating it in the pool) or at the earliest
later time it fits (a reservation). Jobs without a duration "end" at the
instance expiration, or never.

The pool is read through its public planner view (``Pool.topology``,
``alloc_cores``, ``nfree_cores``, ``rank_up``, ``jobs``, ``plan``,
``select``, ``apply``, ``set_masks``: see sched/pool.py); the policy that
drives it (reservation depth, the pass, annotations) is sched/backfill.py.

Within a command the planner is kept from pass to pass
(:class:`KeptPlanner`): a new pass brings it up to date in place,
re-reading only the jobs that started or ended since (``Planner.sync``),
and plans exactly what a planner built afresh would
(tests/test_backfill_inplace.py compares the two on random workloads). The
first reservation of a pass of one-core slots takes the time the free-core
count gives, and its resources are chosen only when a window overlapping it
is looked at (``Planner.materialize``).
"""

import math
from bisect import bisect_left, bisect_right, insort

__all__ = ["INF", "KeptPlanner", "Planner", "shape_key"]

INF = math.inf
_BIG = 1 << 62  # sorts after every rank index / sequence number


def shape_key(request):
    """Requests with equal keys are interchangeable for the pool's selection."""
    cons = request.constraint
    return (request.nnodes, request.nslots, request.slot_size, request.gpu_per_slot, bool(request.exclusive),
            tuple(request.properties or ()), request.constraint_key if cons else None)


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
    ``dirty``: ranks changed between passes, to refresh (see Planner.sync)."""

    __slots__ = ("pool", "t", "ew", "nres", "nrun", "dirty")

    def __init__(self, pool, t, ew, nres, nrun, dirty=()):
        self.pool, self.t, self.ew, self.nres, self.nrun = pool, t, ew, nres, nrun
        self.dirty = set(dirty)

    def copy(self):
        return _View(self.pool.copy(jobs=False), self.t, self.ew, self.nres, self.nrun, self.dirty)


class Planner:
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
        self.topo = pool.topology
        base = pool.copy(jobs=False)
        n = len(base.alloc_cores)
        self.run = [{} for _ in range(n)]  # per rank: {jobid: (release, cm, gm)}
        self.known = {}  # jobid -> (pool record, release, parts) of the jobs running at the start
        counts = []  # (release, jobid, cores on up ranks) of the jobs running at the start, finite releases
        up = pool.rank_up
        for jobid, rec in pool.jobs.items():
            r, nc = self._enter(jobid, rec, up)
            if r != INF:
                counts.append((r, jobid, nc))
        counts.sort()
        self.counts = counts  # (also the release events: the planner's own allocations are in run_log)
        # what running jobs hold now (for the now-window shortcut), and the free counts at the start
        self.busy_c, self.busy_g = list(base.alloc_cores), list(base.alloc_gpus)
        self.fc0, self.fg0, self.up0 = list(base.nfree_cores), list(base.nfree_gpus), list(base.rank_up)
        self.free0 = base.nfree_up_cores
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
        Planner(pool, now, inst_exp) would build: touched holds every job
        whose allocation may have changed since (freed, or allocated by a
        pass). The views of later windows are kept: each notes the ranks
        whose masks in it may have changed, and refreshes them when next
        moved. False when it cannot be done (then build a new planner)."""
        if pool.topology is not self.topo or (inst_exp or 0.0) != self.inst_exp or now < self.now:
            return False
        self.now = now
        changes = []  # (release, parts) of running-job entries removed or added
        run, known, jobs, up = self.run, self.known, pool.jobs, pool.rank_up
        self.counts = counts = list(self.counts)  # the last pass's Plan keeps its own
        for r, _idx, parts, jobid in self.run_log:
            # the last pass's own allocations: running jobs now, as the pool holds them
            changes.append((r, parts))
            rec = jobs.get(jobid)
            if rec is not None:
                end, rparts = rec.end, rec.parts
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
                r, nc = self._enter(jobid, rec, up)
                if r != INF:
                    insort(counts, (r, jobid, nc))
                changes.append((r, rec.parts))
        touched.clear()
        if len(known) != len(jobs) or (counts and counts[0][0] <= now):
            return False  # (a job past its end still holds resources: every release would move)
        self.busy_c, self.busy_g = list(pool.alloc_cores), list(pool.alloc_gpus)
        self.fc0, self.fg0, self.up0 = list(pool.nfree_cores), list(pool.nfree_gpus), list(pool.rank_up)
        self.free0 = pool.nfree_up_cores
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

    def _enter(self, jobid, rec, up):
        """Take running job jobid (its pool record) into the planner: its
        parts on their ranks until its release. (release, its cores on up ranks)."""
        r = self.release(rec.end)
        parts = rec.parts
        self.known[jobid] = (rec, r, parts)
        run = self.run
        nc = 0
        for i, cm, gm in parts:
            run[i][jobid] = (r, cm, gm)
            if up[i]:
                nc += cm.bit_count()
        return r, nc

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
        if pool.alloc_cores[i] != cm or pool.alloc_gpus[i] != gm:
            pool.set_masks(i, cm, gm)

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

    def add_reservation(self, jobid, s, e, parts):
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
        p = self.src.plan(req)
        want = p.count
        if not p.per_node and p.slot_size == 1 and not p.gpu_per_slot and p.allowed is None:
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
        if p.per_node:
            ckey = (p.key, True, p.unit_cores, p.unit_gpus, p.exclusive)
        else:
            ckey = (p.key, False, p.slot_size, p.gpu_per_slot)
        hit = self.capacity.get(ckey)
        if hit is not None:
            return hit
        allowed = p.allowed
        up = self.up0
        fc, fg = list(self.fc0), list(self.fg0)
        ok = [up[i] and (allowed is None or (allowed >> i) & 1) for i in range(len(fc))]
        if p.per_node:
            need_c, need_g, excl, ncore = p.unit_cores, p.unit_gpus, p.exclusive, self.topo.ncores

            def value(i):
                return 1 if ok[i] and fc[i] >= need_c and fg[i] >= need_g and (not excl or fc[i] == ncore[i]) \
                    else 0
        else:
            sz, g = p.slot_size, p.gpu_per_slot

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
        plan = self.src.plan(req)
        lazy = self.lazy
        if lazy is None:
            if reserve and self.shortcuts and now < t < limit and not self.reservations and not self.run_log \
                    and not plan.per_node and plan.slot_size == 1 and not plan.gpu_per_slot and plan.allowed is None:
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
            if not reserve and plan.min_cores > lazy[4]:
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
                found = pool.select(plan)
            else:
                if t == now and not reserve and self.shortcuts and len(self.reservations) == 1 \
                        and pool is self.src \
                        and plan.min_cores > self._free_unreserved():
                    return None  # (more cores than are free now outside the one reservation)
                if t == now or view is None or view.t == now:
                    view = self._view_for(t, ew)
                # later steps of a search keep the view: it is one release away
                self.move(view, t, ew)
                found = view.pool.select(plan)
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
                    view.pool.apply(sel, True)
                self._add_running(parts, self.release(rset.expiration), pj.jobid)
                return ("alloc", rset)
            # a reservation needs no R, and the view needs no update: its next
            # move refreshes the ranks of reservations placed since the last
            parts = tuple(found[0])
            self.add_reservation(pj.jobid, t, view.ew, parts)
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
            ac, up = pool.alloc_cores, pool.rank_up
            held = sum((cm & ~ac[i]).bit_count() for i, cm, _gm in self.reserved_parts[self.reservations[0][0]]
                       if up[i])
            ub = self.free_ub = pool.nfree_up_cores - held
        return ub

    def materialize(self, serial=None):
        """Choose the resources of the reservation place() left lazy (see
        Planner), as place() would have then: since, only windows it does
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
            found = view.pool.select(plan)
            assert found is not None, "a reservation the count sweep found does not fit"
            self.add_reservation(jobid, t, view.ew, tuple(found[0]))

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


class KeptPlanner:
    """The planner of the passes over one pool (the scheduler's own), kept
    from pass to pass: a pass that needs one brings it up to date
    (Planner.sync), which re-reads only the jobs whose allocations changed
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
            planner = self.planner = Planner(self.pool, now, inst)
        self.touched.clear()
        return planner
