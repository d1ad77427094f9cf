"""sched-backfill: EASY, hybrid and conservative backfilling over one pool.

Every pass drops all reservations and replans the queue in priority order
(Fluxion's backfill family). While fewer than ``reservation depth`` jobs have
been reserved in this pass a job is "allocated, else reserved" at the
earliest time it fits; after that it may only start now. Either way a job is
placed only where it delays no reservation: it avoids every reserved core or
gpu whose reservation begins before the job ends. Jobs without a duration
"end" at the instance expiration, or never. Depths: easy 1, hybrid
``reservation-depth`` (default 64), conservative unlimited.

This module is the policy: the pass (:class:`_Pass`), its result
(:class:`Plan`), the cache of passes across commands, and the scheduler
module. The time x resource placement is sched/planner.py's
:class:`~flux_lite.sched.planner.Planner`.

The plan (:class:`Plan`) holds the release times of the running jobs (their
pool end time; 0 = never) and the reservations, the latter on an interval
tree; it is rebuilt by every pass. The planner behind it is built only once
the first job is blocked, so a pass where everything fits costs what a FIFO
pass costs; within a command it is kept from pass to pass
(:class:`~flux_lite.sched.planner.KeptPlanner`). A pass whose only news is
arrivals behind every job it reserved (a burst of submissions, a queued job
updated), or withdrawn requests it neither started nor reserved, continues
the previous one instead of replanning: same result, less work. The last
pass is kept across commands as a summary in ``sched.state`` (its time and
reservations: a few hundred at most), so a command that queues one job
reads neither the queue nor the plan's other jobs; anything else the pass
depended on drops it. Jobs needing more cores than are free are passed over
without looking.

Annotations: on SUCCESS ``resource_summary`` and ``selection_type``
(``reserved`` if the job was reserved by the previous pass, else
``backfill`` with ``backfill`` = the first job reserved ahead of it, else
``immediate``); reserved pending jobs carry ``t_estimate`` and
``selection_type``; other blocked ones ``reason_pending``.
"""

from flux_lite import config as configmod
from flux_lite.errors import FluxLiteError, UsageError
from flux_lite.sched import store
from flux_lite.sched.base import COMMON_ARGS, ModuleArg, PendingJob, Scheduler, posint
from flux_lite.sched.planner import INF, KeptPlanner, Planner, shape_key
from flux_lite.sched.pool import InfeasibleRequest
from flux_lite.sched.preview import describe_moves
from flux_lite.sched.registry import register

DEPTHS = {"easy": 1, "hybrid": 64, "conservative": INF}


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


class _Pass:
    """One scheduling pass, resumable: jobs that arrive later with a lower
    priority than every job already placed are placed by the same pass, with
    the same result a full replan would give, as long as nothing else changed
    (see BackfillScheduler.schedule). kept: the pool's KeptPlanner, or
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
        be chosen alike (see Planner.unchanged_until) and the instance
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
                    self.planner = Planner(pool, now, inst, self.shortcuts) if kept is None \
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
                        self.free = pool.nfree_up_cores
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
                p = pool.plan(pj.request)
                needs[pj.jobid] = p.min_cores
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
                planner = self.planner = Planner(pool, self.now, self.inst)
                topo = pool.topology
                for jobid, s, e, parts in summary["reservations"]:
                    jobid, s = int(jobid), float(s)
                    e = INF if e is None else float(e)
                    parts = store.decode_parts(pool, parts)
                    if not (self.now <= s < e) or any(cm & ~topo.core_mask[i] or gm & ~topo.gpu_mask[i]
                                                      for i, cm, gm in parts):
                        return None
                    planner.add_reservation(jobid, s, e, parts)
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
        self._planner_kept = None  # the planner kept for self.pool (see KeptPlanner)
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
        if topo is not pool.topology:
            notes = {}
            self._feasible = (pool.topology, notes)
        return notes

    def core_needs(self, pool):
        """{jobid: the fewest cores it can start with} of feasible queued
        jobs, kept while the pool's topology is the same (see
        feasibility_notes): a pass passes over a job needing more than are
        free without looking at it."""
        topo, needs = self._needs
        if topo is not pool.topology or len(needs) > 4096:  # (jobs gone leave theirs behind)
            needs = {}
            self._needs = (pool.topology, needs)
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
            kept = self._planner_kept = KeptPlanner(self.pool)
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
