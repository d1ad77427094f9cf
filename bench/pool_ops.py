#!/usr/bin/env python3
"""The scheduler pool's own operations on a large, fragmented machine.

4096 nodes of 32 cores hold 10,000 random small allocations of which half
are then freed (a fragmented pool, seeded); timed in process: one
allocation of a small request, one refused allocation of a request larger
than the machine (InsufficientResources after the counts are read), and a
copy (what a forecast simulates on). Targets: alloc and refusal <= 1 ms,
copy <= 50 ms.
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import benchlib as bl  # noqa: E402

from flux_lite.formats.rset import Rset  # noqa: E402
from flux_lite.sched.pool import InsufficientResources, Pool  # noqa: E402
from flux_lite.sched.request import ResourceRequest as RR  # noqa: E402


def fragmented_pool(seed):
    pool = Pool(Rset.build([(f"node{i}", 32, 0) for i in range(4096)]))
    rng = random.Random(seed)
    for jid in range(1, 10001):
        pool.alloc(jid, RR(nslots=rng.randint(1, 3), slot_size=rng.randint(1, 4)), 0.0)
    jobs = list(pool.allocations())
    rng.shuffle(jobs)
    for j in jobs[:5000]:
        pool.free(j)
    return pool, rng


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=7)
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    pool, rng = fragmented_pool(args.seed)
    n = 200 if args.quick else 1000
    reqs = [RR(nslots=1, slot_size=rng.randint(1, 4)) for _ in range(n)]
    t0 = time.perf_counter()
    for jid, req in enumerate(reqs, 20001):
        pool.alloc(jid, req, 0.0)
    per_alloc = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(200):
        try:
            pool.alloc(0, RR(nslots=65000, slot_size=2), 0.0)
        except InsufficientResources:
            pass
    per_fail = (time.perf_counter() - t0) / 200
    t0 = time.perf_counter()
    pool.copy()
    per_copy = time.perf_counter() - t0
    figures = {"alloc_s": round(per_alloc, 6), "refused_alloc_s": round(per_fail, 6), "copy_s": round(per_copy, 4)}
    targets = [bl.target("alloc", per_alloc, 0.001), bl.target("refused alloc", per_fail, 0.001),
               bl.target("copy", per_copy, 0.05)]
    bl.emit(bl.report("pool_ops", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
