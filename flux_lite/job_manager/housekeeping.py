"""Housekeeping: an epilog that runs after the job, holding its nodes.

When a job's resources are released, the job manager hands its R to
housekeeping and posts ``free`` at once (the job goes INACTIVE), but the
scheduler keeps the ranks allocated to that job until housekeeping sends
``sched.free`` for them: in batches by ``release-after`` (Flux's partial
release), with ``final`` only on the last. Nothing executes here, so the work
per rank is simulated: a duration (default, or per rank/host), ranks that
never finish until killed (``inf``), ranks that fail.
"""

import math
import signal

from flux_lite import config as configmod
from flux_lite.formats.idset import IDset
from flux_lite.formats.jobid import f58
from flux_lite.formats.jobid import f58 as _f58
from flux_lite.formats.rset import Rset
from flux_lite.job_manager import emulate

KEY = "job-manager.housekeeping"


def _strsignal(signum):
    try:
        return signal.strsignal(signum) or f"Signal {signum}"
    except (ValueError, TypeError):
        return f"Unknown signal {signum}"


class Housekeeping:
    def __init__(self, broker):
        self.b = broker
        self._allocs = None
        self._dirty = False

    # -- config ---------------------------------------------------------------

    @property
    def conf(self):
        return configmod.get_path(self.b.config, "job-manager.housekeeping")

    @property
    def configured(self):
        return self.conf is not None

    def config_loaded(self):
        """What Flux's housekeeping logs of a configuration it is given (at start, at config load)."""
        if (self.conf or {}).get("use-systemd-unit"):
            self.b.log("job-manager", "err", "job-manager.housekeeping.use-systemd-unit is deprecated - ignoring")

    @property
    def release_after(self):
        conf = self.conf or {}
        if "release-after" not in conf:
            return -1.0
        return configmod._fsd(conf["release-after"], "job-manager.housekeeping.release-after")

    def _rank_duration(self, rank):
        conf = self.conf or {}
        overrides = conf.get("rank-durations") or {}
        for target, value in overrides.items():
            if rank in self.b.resources.targets_to_ranks(str(target)):
                return configmod._fsd(value, "job-manager.housekeeping.rank-durations")
        if "duration" not in conf:
            run = self._command_run(rank)
            if run is not None:
                return run.duration
        return configmod._fsd(conf.get("duration", 0), "job-manager.housekeeping.duration")

    def _fails(self, rank):
        conf = self.conf or {}
        if "fail-ranks" not in conf:
            run = self._command_run(rank)
            return run is not None and run.rc != 0
        return rank in self.b.resources.targets_to_ranks(str(conf["fail-ranks"]))

    def _command_run(self, rank):
        """What the configured command would do on rank, when it is one the
        job emulation knows (`sleep inf`, `true`, `false`, a script of
        those...); the simulation keys, when set, say instead."""
        command = (self.conf or {}).get("command")
        if not command:
            return None
        host = self.b.resources.hostlist_of(IDset([rank]))
        return emulate.housekeeping_run(command, rank, host, self.b.instance.owner)

    def stats_config(self):
        conf = self.conf or {}
        command = conf.get("command") or []
        return {"release-after": self.release_after, "command": " ".join(command)}

    # -- state ----------------------------------------------------------------

    @property
    def allocs(self):
        if self._allocs is None:
            raw = self.b.kvs.get(KEY) or {}
            self._allocs = {int(k): v for k, v in raw.items()}
        return self._allocs

    def save(self):
        if self._dirty:
            self.b.kvs.put(KEY, {str(k): v for k, v in sorted(self.allocs.items())})
            self._dirty = False

    # -- hand-off ---------------------------------------------------------------

    def hand_off(self, job):
        """Take over a finished job's R (or free it at once when unconfigured)."""
        if not self.configured or not job.R:
            if job.R:
                self.b.jm.send_free(job.id, job.R, final=True)
            return
        ranks = Rset.from_dict(job.R).ranks
        self.allocs[job.id] = {
            "R": job.R,
            "t_start": self.b.now,
            "pending": str(ranks),
            "free": "",
            "userid": job.userid,
            "priority": job.priority,
            "t_submit": job.t_submit,
            "armed": False,
            "expired": False,
            "release_after": self.release_after,
            "ends": {},  # rank -> simulated finish time (kept so timers can be rebuilt)
        }
        self._dirty = True
        self.b.log("job-manager", "debug", f"housekeeping: {f58(job.id)} started")
        for rank in ranks:
            duration = self._rank_duration(rank)
            if not math.isinf(duration):
                end = self.b.now + duration
                fail = self._fails(rank)
                self.allocs[job.id]["ends"][str(rank)] = [end, fail]
                self.b.add_timer(end, "housekeeping.finish", job.id, {"rank": rank, "fail": fail})

    # -- progress -------------------------------------------------------------------

    def timer(self, what, jobid, arg):
        alloc = self.allocs.get(jobid)
        if alloc is None:
            return
        if what == "finish":
            # the job's other ranks that end at this instant finish with it,
            # as one batch of exits in Flux (one error line for those failed)
            rank = arg["rank"]
            end = alloc.get("ends", {}).get(str(rank), [None])[0]
            pending = IDset.parse(alloc["pending"])
            together = {rank: bool(arg.get("fail"))}
            if end is not None:
                for other, (t, fail) in alloc["ends"].items():
                    if t == end and int(other) in pending:
                        together.setdefault(int(other), bool(fail))
            others = set(together) - {rank}
            if others:
                self.b.cancel_timers(jobid, "housekeeping.finish", match=lambda a, others=others: a["rank"] in others)
            for fail in sorted({together[r] for r in together}, reverse=True):
                self._finish(jobid, alloc, sorted(r for r in together if together[r] == fail),
                             "nonzero exit code" if fail else None)
                if jobid not in self.allocs:
                    break
        elif what == "release":
            alloc["expired"] = True
            self._dirty = True
            self._release(jobid, alloc)

    def _finish(self, jobid, alloc, ranks, reason):
        pending = IDset.parse(alloc["pending"])
        done = IDset(r for r in ranks if r in pending)
        if not done:
            return
        self._dirty = True
        if reason:
            hosts = self.b.resources.hostlist_of(done)
            self.b.log("job-manager", "err", f"housekeeping: {hosts} (rank {done}) {f58(jobid)}: {reason}")
            conf = self.conf or {}
            if conf.get("drain-on-failure"):
                # as the systemd unit's `flux resource drain`: ranks already
                # drained keep their reason
                res = self.b.resources
                fresh = IDset(r for r in done if r not in res.drained)
                if fresh:
                    res.drain(fresh, f"housekeeping@{f58(jobid)} {reason}")
        release_after = alloc["release_after"]
        if release_after == 0:
            # each rank is freed as it is finished, as Flux's finish_one does
            for rank in done:
                pending = pending - IDset([rank])
                alloc["pending"] = str(pending)
                self._release(jobid, alloc)
        else:
            alloc["pending"] = str(pending - done)
            if not alloc["pending"] or alloc["expired"]:
                self._release(jobid, alloc)
            elif release_after > 0 and not alloc["armed"]:
                alloc["armed"] = self.b.now + release_after
                self.b.add_timer(alloc["armed"], "housekeeping.release", jobid)
        if not alloc["pending"] and jobid in self.allocs:
            self._complete(jobid)

    def _release(self, jobid, alloc):
        R = Rset.from_dict(alloc["R"])
        held = R.ranks - IDset.parse(alloc["free"])
        ranks = held - IDset.parse(alloc["pending"])
        if not ranks:
            return
        final = not alloc["pending"]
        self.b.jm.send_free(jobid, R.copy_ranks(ranks).to_dict(), final=final)
        alloc["free"] = str(IDset.parse(alloc["free"]) | ranks)
        self._dirty = True

    def _complete(self, jobid):
        self.b.log("job-manager", "debug", f"housekeeping: {f58(jobid)} complete")
        del self.allocs[jobid]
        self.b.cancel_timers(jobid)
        self._dirty = True

    # -- kill ---------------------------------------------------------------------------

    def kill(self, signum=15, jobid=None, ranks=None):
        """job-manager.housekeeping-kill: signal pending ranks; they finish failed."""
        for jid in sorted(self.allocs):
            if jobid is not None and jid != jobid:
                continue
            alloc = self.allocs.get(jid)
            if alloc is None:
                continue
            pending = IDset.parse(alloc["pending"])
            victims = pending if ranks is None else pending & ranks
            if not victims:
                continue
            self.b.cancel_timers(jid, "housekeeping.finish", match=lambda arg, victims=victims: arg["rank"] in victims)
            self._finish(jid, alloc, list(victims), _strsignal(signum))

    # -- hello ------------------------------------------------------------------------

    def hello_records(self, partial_ok):
        records = []
        for jobid in sorted(self.allocs):
            alloc = self.allocs[jobid]
            if alloc["free"] and not partial_ok:
                remaining = Rset.from_dict(alloc["R"]).ranks - IDset.parse(alloc["free"])
                hosts = self.b.resources.hostlist_of(remaining)
                self.b.log(
                    "job-manager", "err",
                    f"housekeeping: {hosts} (rank {remaining}) from {f58(jobid)} will be terminated "
                    "because scheduler does not support restart with partially released resources",
                )
                # SIGTERM to what remains, and forget the allocation: no more frees
                del self.allocs[jobid]
                self.b.cancel_timers(jobid)
                self._dirty = True
                continue
            rec = {"id": jobid, "priority": alloc["priority"], "userid": alloc["userid"],
                   "t_submit": alloc["t_submit"], "R": alloc["R"]}
            if alloc["free"]:
                rec["free"] = alloc["free"]
            records.append(rec)
        return records

    def rebuild_timers(self):
        """Re-create housekeeping timers from the allocations (derived-table rebuild)."""
        for jobid, alloc in self.allocs.items():
            pending = IDset.parse(alloc["pending"])
            for rank, (end, fail) in alloc.get("ends", {}).items():
                if int(rank) in pending:
                    self.b.add_timer(end, "housekeeping.finish", jobid, {"rank": int(rank), "fail": fail})
            if alloc["armed"] and not alloc["expired"]:
                self.b.add_timer(alloc["armed"], "housekeeping.release", jobid)

    def R_of(self, jobid):
        alloc = self.allocs.get(jobid)
        return None if alloc is None else alloc["R"]

    # -- views ---------------------------------------------------------------------------

    def running(self):
        """Flux's stats .housekeeping.running: f58 -> {t_start, pending, allocated}."""
        out = {}
        for jobid in sorted(self.allocs):
            alloc = self.allocs[jobid]
            allocated = Rset.from_dict(alloc["R"]).ranks - IDset.parse(alloc["free"])
            out[jobid] = {"t_start": alloc["t_start"], "pending": alloc["pending"], "allocated": str(allocated)}
        return out

    def allocated_R(self):
        """The R still held by housekeeping, per job (for resource-status)."""
        out = {}
        for jobid, alloc in self.allocs.items():
            R = Rset.from_dict(alloc["R"])
            out[jobid] = R.remove_ranks(IDset.parse(alloc["free"]))
        return out


def stats(broker):
    """Flux's `module stats job-manager` .housekeeping object."""
    hk = broker.housekeeping
    running = {_f58(j): v for j, v in hk.running().items()}
    return {"running": running, "config": hk.stats_config()}
