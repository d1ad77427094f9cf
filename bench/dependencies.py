#!/usr/bin/env python3
"""Dependencies: submitting dependent jobs, and releasing them.

* `submit --cc=1-10000 --quiet --dependency=afterany:H` rate, H a held job
  (target >= 2000 jobs/s, as for plain submits);
* with those 10,000 jobs waiting in DEPEND, `cancel P` of a held job P that
  has one (held) dependent, against `cancel Q` of a held job Q with none:
  what releasing a dependent costs on top of a cancel (target: <= 1.25x;
  the dependents index is read, never the waiting jobs' dependencies);
* `cancel H`: 10,000 dependents released at once (dependency-remove, depend,
  priority each), and the wall of that command.

Instance: 4 nodes x 4 cores, virtual clock.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RATE_TARGET = 2000.0
RELEASE_FACTOR = 1.25


def _submit(state, *args):
    _, proc = bl.fl(["submit", *args, "true"], state)
    return proc.stdout.strip()


def main():
    p = bl.parser(__doc__.splitlines()[0])
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    n = 2000 if args.quick else 10000
    runs = 3 if args.quick else 7
    figures = {"instance": "4 nodes x 4 cores, virtual clock", "dependents": n, "runs": runs}
    with bl.temp_dir() as base, bl.temp_dir() as work:
        state = os.path.join(base, "state")
        bl.start_instance(state, size=4, cores=4)
        held = _submit(state, "--urgency=hold")
        bl.log("burst")
        wall, _ = bl.fl(["submit", f"--cc=1-{n}", "--quiet", f"--dependency=afterany:{held}",
                         "-S", "exec.test.run_duration=1s", "true"], state)
        rate = n / wall
        figures["burst_wall_s"] = round(wall, 3)
        figures["burst_jobs_per_s"] = round(rate, 1)
        p_job = _submit(state, "--urgency=hold")
        # held, so that its release costs events, not a scheduling pass
        _submit(state, f"--dependency=afterany:{p_job}", "--urgency=hold")
        q_job = _submit(state, "--urgency=hold")
        _, proc = bl.fl(["jobs", "-n", "-c", "0", "-f", "depend", "-o", "{id}"], state)
        figures["waiting_in_depend"] = len(proc.stdout.split())
        bl.log("one release among many waiting jobs")
        release, plain = bl.Samples(), bl.Samples()
        copy = os.path.join(work, "state")
        for i in range(runs):
            order = [(release, p_job), (plain, q_job)]
            if i % 2:
                order.reverse()
            for bucket, jobid in order:
                bl.copy_state(state, copy)
                bucket.add(*bl.fl(["cancel", jobid], copy))
        figures["cancel_with_one_dependent_s"] = release.summary()
        figures["cancel_without_dependents_s"] = plain.summary()
        ratio = release.median / plain.median
        figures["release_over_plain"] = round(ratio, 3)
        bl.log("mass release")
        bl.copy_state(state, copy)
        wall, _ = bl.fl(["cancel", held], copy)
        figures["mass_release_wall_s"] = round(wall, 3)
        _, proc = bl.fl(["jobs", "-n", "-c", "0", "-f", "depend", "-o", "{id}"], copy)
        figures["left_in_depend"] = len(proc.stdout.split())
    targets = [
        bl.target(f"submit --cc=1-{n} --dependency rate", rate, RATE_TARGET, op=">=", unit="jobs/s"),
        bl.target("cancel releasing one dependent / cancel releasing none", ratio, RELEASE_FACTOR, unit="x"),
        bl.target("jobs left in DEPEND after the mass release (P's dependent)", figures["left_in_depend"], 1,
                  op="==", unit="jobs"),
    ]
    bl.emit(bl.report("dependencies", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
