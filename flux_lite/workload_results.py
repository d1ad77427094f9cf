"""Workload studies on top of the trace replay (flux_lite.workload): per-job
results, the SWF of a replay, time series, comparisons of policies in
parallel processes, grids of replays (sweeps, locally or as jobs of a real
Flux) and their pictures.

A replay hands every finished job to a ``Results`` as its index row is
written (``workload.replay_trace``'s ``results``): per-job rows go to their
file at once, and what must come out in time order (the SWF, the series) is
kept in a ``Spill`` (sorted runs on disk beyond a chunk in memory), so a
trace of a million jobs never holds its rows.
"""

from __future__ import annotations

import csv
import heapq
import itertools
import json
import math
import os
import pickle
import tempfile
from array import array
from typing import Any, Iterable, Iterator

from flux_lite import users
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import f58plain

# per-job columns of --jobs-out, in order (times on the trace's own axis, in seconds)
JOB_FIELDS = ("trace_id", "jobid", "user", "queue", "submit", "start", "end", "wait", "run", "requested_time",
              "requested_cores", "cores", "nodes", "result", "bounded_slowdown")
SERIES_FIELDS = ("time", "running", "busy_cores", "utilization", "pending", "pending_cores")
# SWF status (field 11) of a result: 1 completed, 5 canceled, 0 anything else (failed, timeout)
SWF_STATUS = {"COMPLETED": 1, "CANCELED": 5}
# header keys of the trace kept in --swf-out (the rest describe the original run)
SWF_KEPT_HEADER = ("Installation", "Acknowledge", "Information", "UnixStartTime", "TimeZone", "TimeZoneString",
                   "StartTime")
PLOT_POINTS = 400  # samples of each series a plot draws
WAIT_QUANTILES = 200  # points of each wait distribution a plot draws


def number(x: float | None) -> str:
    """A time or count as a CSV/SWF field: integral values without a fraction."""
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else repr(round(x, 6))


def user_name(uid: int, names: str) -> str:
    """A trace user's name: ``userN`` (names "synthetic"), else the local one."""
    return f"user{uid}" if names == "synthetic" else users.username(uid)


class Spill:
    """Records (tuples) given in any order, read back sorted once: sorted runs
    of CHUNK records go to temporary files and are merged on reading."""

    CHUNK = 65536

    def __init__(self) -> None:
        self._buf: list[tuple] = []
        self._files: list[Any] = []

    def add(self, rec: tuple) -> None:
        self._buf.append(rec)
        if len(self._buf) >= self.CHUNK:
            self._spill()

    def _spill(self) -> None:
        buf, self._buf = self._buf, []
        buf.sort()
        f = tempfile.TemporaryFile()
        for i in range(0, len(buf), 1024):
            pickle.dump(buf[i:i + 1024], f, protocol=pickle.HIGHEST_PROTOCOL)
        f.seek(0)
        self._files.append(f)

    @staticmethod
    def _read(f) -> Iterator[tuple]:
        with f:
            while True:
                try:
                    block = pickle.load(f)
                except EOFError:
                    return
                yield from block

    def __iter__(self) -> Iterator[tuple]:
        self._buf.sort()
        return heapq.merge(*(self._read(f) for f in self._files), self._buf)

    def close(self) -> None:
        for f in self._files:
            f.close()


class Sampler:
    """Rows of the series at every change (step None) or every step seconds."""

    def __init__(self, step: float | None, t_first: float) -> None:
        self.step, self.t_first, self.k = step, t_first, 0

    def due(self, t: float) -> Iterator[float]:
        """The sample times before t (a change at t is not yet applied)."""
        if self.step is None:
            return
        while self.t_first + self.k * self.step < t:
            yield self.t_first + self.k * self.step
            self.k += 1


def series(events: Iterable[tuple], total_cores: int, steps: list[float | None], t_first: float
           ) -> Iterator[tuple[int, tuple]]:
    """(sampler index, series row) from the time-sorted events (t, seq,
    dpending, dpending_cores, drunning, dbusy), a sampler per step (None:
    at every change)."""
    smp = [Sampler(s, t_first) for s in steps]
    running = busy = pending = pcores = 0

    def row(t):
        return (t, running, busy, round(busy / total_cores, 6), pending, pcores)

    for t, group in itertools.groupby(events, key=lambda e: e[0]):
        for i, s in enumerate(smp):
            for ts in s.due(t):
                yield i, row(ts)
        for _, _, dp, dpc, dr, db in group:
            pending += dp
            pcores += dpc
            running += dr
            busy += db
        for i, s in enumerate(smp):
            if s.step is None:
                yield i, row(t)
    for i, s in enumerate(smp):  # the last change's state, at the next sample
        if s.step is not None:
            yield i, row(s.t_first + s.k * s.step)


class Results:
    """What a replay gives besides its summary: per-job rows (CSV, or JSON
    lines for .jsonl), the SWF of the replay, the time series, what a plot
    draws, and the users' mean waits (the summary's fairness figure)."""

    def __init__(self, jobs_out: str | None = None, swf_out: str | None = None, series_out: str | None = None,
                 series_step: float | None = None, plot: bool = False, names: str = "synthetic") -> None:
        if series_step is not None and not 0 < series_step < math.inf:
            raise FluxLiteError("--series-step must be a positive, finite duration")
        self.paths = [p for p in (jobs_out, swf_out, series_out) if p]
        self.names = names
        self.series_step = series_step
        self.plot = plot
        self._jobs = self._jobs_csv = None
        self._files: list[Any] = []
        try:
            if jobs_out:
                self._jobs = self._open(jobs_out)
                if not jobs_out.endswith(".jsonl"):
                    self._jobs_csv = csv.writer(self._jobs, lineterminator="\n")
                    self._jobs_csv.writerow(JOB_FIELDS)
            self._swf = self._open(swf_out) if swf_out else None
            self._series = self._open(series_out) if series_out else None
        except BaseException:
            self.close(ok=False)
            raise
        self._swf_spill = Spill() if swf_out else None
        self._events = Spill() if (series_out or plot) else None
        self._seq = 0
        self._active: dict[int, tuple] = {}  # job id -> (trace position, trace job, queue) until it finishes
        self._user_waits: dict[int, list] = {}  # trace user -> [sum of waits, jobs]
        self._waits = array("d") if plot else None
        self.plotdata: dict[str, Any] = {}

    def _open(self, path: str):
        try:
            f = open(path, "w", encoding="utf-8", newline="")
        except OSError as exc:
            raise FluxLiteError(f"{path}: {exc.strerror}") from None
        self._files.append(f)
        return f

    def begin(self, clock_start: float, t0: float, nodes: int, cores: int, header: dict[str, str],
              policy: str, default_queue: str | None = None) -> None:
        """The replay's instance: its clock's start is the trace's time t0."""
        self.default_queue = default_queue
        self.offset = t0 - clock_start
        self.t0, self.nodes, self.total_cores = t0, nodes, nodes * cores
        self.header, self.policy, self.cores = header, policy, cores

    def submitted(self, jobid: int, position: int, job, queue: str | None, t: float) -> None:
        self._active[jobid] = (position, job, queue)
        if self._events is not None:
            self._event(t, 1, job.procs, 0, 0)

    def _event(self, t, dp, dpc, dr, db):
        self._seq += 1
        self._events.add((t + self.offset, self._seq, dp, dpc, dr, db))

    def add(self, outcomes: Iterable[tuple], now: float) -> None:
        """The finished jobs' outcome tuples (index._outcome: id, t_submit,
        t_run, t_cleanup, ncores, result, nnodes), at clock time now."""
        for jobid, t_submit, t_run, t_end, ncores, result, nnodes in outcomes:
            entry = self._active.pop(jobid, None)
            if entry is None:
                continue
            position, job, queue = entry
            ncores = ncores or 0
            started = bool(t_run)
            wait = run = slowdown = None
            if started:
                wait = t_run - t_submit
                run = max((t_end or t_run) - t_run, 0.0)
                slowdown = max(1.0, (wait + run) / max(run, 10.0))
                acc = self._user_waits.setdefault(job.user, [0.0, 0])
                acc[0] += wait
                acc[1] += 1
                if self._waits is not None:
                    self._waits.append(wait)
            off = self.offset
            if self._jobs is not None:
                row = (job.num, f58plain(jobid), user_name(job.user, self.names), queue or self.default_queue,
                       t_submit + off, t_run + off if started else None,
                       (t_end or t_run) + off if started else None, wait, run,
                       job.limit, job.procs, ncores, nnodes or 0, result,
                       None if slowdown is None else round(slowdown, 6))
                if self._jobs_csv is not None:
                    self._jobs_csv.writerow([number(v) if isinstance(v, float) else v for v in row])
                else:
                    self._jobs.write(json.dumps(dict(zip(JOB_FIELDS, row))) + "\n")
            if self._swf_spill is not None:
                self._swf_spill.add((job.submit, position, self._swf_line(job, wait, run, ncores, result)))
            if self._events is not None:
                if started:
                    self._event(t_run, -1, -job.procs, 1, ncores)
                    self._event(t_end or t_run, 0, 0, -1, -ncores)
                else:
                    self._event(now, -1, -job.procs, 0, 0)

    @staticmethod
    def _swf_line(job, wait, run, ncores, result) -> str:
        fields = (job.num, job.submit, -1 if wait is None else wait, -1 if run is None else run,
                  ncores or -1, -1, -1, job.procs, job.req_time if job.req_time > 0 else -1, -1,
                  SWF_STATUS.get(result, 0), job.user, job.group, -1, job.queue, job.partition, -1, -1)
        return " ".join(number(float(v)) for v in fields)

    def user_wait_mean_max(self) -> float:
        """The largest of the trace users' mean waits (0 without started jobs)."""
        return round(max((s / n for s, n in self._user_waits.values()), default=0.0), 3)

    def finish(self, span: tuple[float, float]) -> None:
        """Write what comes out in time order; span: (first submit, last end) in clock time."""
        if self._swf_spill is not None:
            self._write_swf()
        if self._events is not None:
            self._write_series(span)
        if self._waits is not None:
            waits = sorted(self._waits)
            n = len(waits)
            self.plotdata["waits"] = [waits[min(n - 1, round(q * (n - 1) / WAIT_QUANTILES))]
                                      for q in range(WAIT_QUANTILES + 1)] if n else []

    def _write_swf(self) -> None:
        f, h, spill = self._swf, self.header, self._swf_spill
        assert f is not None and spill is not None
        lines = ["; Version: 2.2", f"; Computer: flux-lite replay, policy {self.policy}, "
                 f"{self.nodes} nodes x {self.cores} cores",
                 "; Note: wait (field 3), run time (4) and allocated cores (5) are simulated;",
                 ";       status (11) is 1 completed, 5 canceled, 0 otherwise (failed, timeout)"]
        lines += [f"; {k}: {h[k]}" for k in SWF_KEPT_HEADER if k in h]
        lines += [f"; MaxNodes: {self.nodes}", f"; MaxProcs: {self.total_cores}", ";"]
        f.write("\n".join(lines) + "\n")
        for _, _, line in spill:
            f.write(line + "\n")
        spill.close()

    def _write_series(self, span: tuple[float, float]) -> None:
        first = span[0] + self.offset
        width = max(span[1] - span[0], 1.0) / PLOT_POINTS
        steps = [self.series_step, width]
        events = self._events
        assert events is not None
        if self._series is not None:
            out = csv.writer(self._series, lineterminator="\n")
            out.writerow(SERIES_FIELDS)
        times: list[float] = []
        util: list[float] = []
        pending: list[int] = []
        for which, row in series(events, self.total_cores, steps, first):
            if which == 0:
                if self._series is not None:
                    out.writerow([number(float(v)) for v in row])
            elif self.plot:
                times.append(row[0] - first)
                util.append(row[3])
                pending.append(row[4])
        events.close()
        if self.plot:
            self.plotdata.update(times=times, utilization=util, pending=pending)

    def close(self, ok: bool = True) -> None:
        """Close the files; on failure remove them (no half-written results)."""
        for f in self._files:
            f.close()
        if not ok:
            for p in self.paths:
                try:
                    os.unlink(p)
                except OSError:
                    pass


class Collected:
    """The finished jobs' outcomes (JobIndex.outcomes, the index's
    ``_outcome`` tuples), handed to a Results as each batch is written and
    kept in columns: 41 bytes a job, where the tuples of a 250,000-job
    replay held some 50 MB. ``rows()`` gives them back in id order."""

    def __init__(self, results: Results, clock) -> None:
        self.results, self.clock = results, clock
        self._ids = array("q")
        self._times = array("d")  # t_submit, t_run, t_cleanup of each job in turn
        self._ncores = array("q")
        self._result = array("B")  # an index into _names
        self._names: list[str] = []
        self._codes: dict[str, int] = {}

    def extend(self, items: Iterable[tuple]) -> None:
        items = list(items)
        self.results.add(items, self.clock())
        codes = self._codes
        for jobid, t_submit, t_run, t_end, ncores, result, _nnodes in items:
            code = codes.get(result)
            if code is None:
                code = codes[result] = len(self._names)
                self._names.append(result)
            self._ids.append(jobid)
            self._times.extend((t_submit, t_run or 0.0, t_end or 0.0))
            self._ncores.append(ncores or 0)
            self._result.append(code)

    def __len__(self) -> int:
        return len(self._ids)

    def pop(self, i: int = -1) -> tuple:
        """Forget one job's outcome (a test's lost row): (id, t_submit, t_run, t_end, ncores, result)."""
        i = range(len(self._ids))[i]
        t = self._times[3 * i:3 * i + 3]
        del self._times[3 * i:3 * i + 3]
        return (self._ids.pop(i), *t, self._ncores.pop(i), self._names[self._result.pop(i)])

    def rows(self) -> Iterator[tuple]:
        """(t_submit, t_run, t_end, ncores, result) of each job, in id order
        (what index.outcome_rows gives; 0.0 for a time the job has not)."""
        ids, times, ncores, result, names = self._ids, self._times, self._ncores, self._result, self._names
        for i in sorted(range(len(ids)), key=ids.__getitem__):
            yield times[3 * i], times[3 * i + 1], times[3 * i + 2], ncores[i], names[result[i]]
