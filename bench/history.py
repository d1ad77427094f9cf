#!/usr/bin/env python3
"""A production-sized history: dump, restore and fsck of 100,000 and
1,000,000 inactive jobs, and the everyday commands on it.

Each size is built once and cached outside the checkout (default
$XDG_CACHE_HOME/flux-lite-bench/history, else ~/.cache/...; --cache DIR):
`start --test-size=64 --test-cores=32 --clock=virtual`, then `submit
--cc=1-CHUNK -n1 -S exec.test.run_duration=1s true` and `clock advance 1h`
until N jobs have run (every command through the CLI, as a user would: a
valid state fsck accepts). --quick builds and measures 20,000 jobs.

Measured on the cached state (whole command, wall and CPU; peak RSS of
the child from wait4, what resource.getrusage(RUSAGE_CHILDREN) gives for
one child, which covers a second process it forks and waits for; the
everyday commands the best of 3 runs): `dump` (.tar and .tgz), `restore` of each archive into
a new state directory, `fsck`, `jobs -a -c 100`, `jobs --stats-only`, `job
last`, `queue list`, `resource list`; then on a copy (they change it):
`submit`, `clock advance`, `job purge --num-limit=100` (count only, no
--force). The same everyday commands on an instance of the same shape with
10 finished jobs (`job last` needs one) give the ratios. Targets (issue 29): dump and restore >= 20,000 jobs/s and
< 250 MB; fsck <= 60 s and < 250 MB at 1M; everyday commands within 1.5x of
empty and < 100 MB; a restored dump lists the same jobs (`jobs -a -c N`
identical, compared by digest).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

RECIPE = 1  # bump when the way a cached state is built changes
CHUNK = 10000
EVERYDAY = {
    "jobs_a_c100": ["jobs", "-a", "-c", "100"],
    "jobs_stats_only": ["jobs", "--stats-only"],
    "job_last": ["job", "last"],
    "queue_list": ["queue", "list"],
    "resource_list": ["resource", "list"],
}
CHANGING = {
    "submit": ["submit", "-n1", "-S", "exec.test.run_duration=1s", "true"],
    "clock_advance": ["clock", "advance", "1m"],
    "job_purge_count": ["job", "purge", "--num-limit=100"],
}
STREAM_RATE = 20000  # jobs/s
STREAM_RSS = 250  # MB
FSCK_1M_S = 60
EVERYDAY_RSS = 100


def cache_root(arg):
    if arg:
        return arg
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "flux-lite-bench", "history")


def build(state, njobs):
    """The cached state of njobs finished jobs (built once)."""
    marker = os.path.join(state, ".complete")
    want = f"recipe {RECIPE} jobs {njobs}\n"
    if os.path.exists(marker) and open(marker).read() == want:
        return None
    shutil.rmtree(state, ignore_errors=True)
    os.makedirs(os.path.dirname(state), exist_ok=True)
    t0 = time.perf_counter()
    bl.start_instance(state, size=64, cores=32)
    done = 0
    while done < njobs:
        n = min(CHUNK, njobs - done)
        bl.fl(["submit", "--quiet", f"--cc=1-{n}", "-n1", "-S", "exec.test.run_duration=1s", "true"], state)
        bl.fl(["clock", "advance", "1h"], state)
        done += n
        bl.log(f"history {njobs}: {done} jobs ({time.perf_counter() - t0:.0f} s)")
    with open(marker, "w") as f:
        f.write(want)
    return round(time.perf_counter() - t0, 1)


def measure(argv, state, stdin=None):
    """One run of `flux-lite ARGV`: wall, CPU, peak RSS (MB), exit status, stdout.
    (`jobs --stats-only` exits 1 when no job is active, as Flux's does.)"""
    env = bl.base_env(state)
    t0 = time.perf_counter()
    proc = subprocess.Popen([bl.flux_lite_exe(), *argv], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not (code == 1 and "--stats-only" in argv):
        raise bl.CommandFailed(f"flux-lite {' '.join(argv)}: exit {code}: {err.decode(errors='replace')[-2000:]}")
    return {"wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_rss_mb": round(ru.ru_maxrss / 1024.0, 1)}, out


def digest_of_listing(state, njobs):
    """The digest and line count of `jobs -a` over every job, read as it comes
    (held whole, a million lines would raise this process's RSS, which a
    forked child's peak RSS starts from)."""
    argv = [bl.flux_lite_exe(), "jobs", "-a", "-c", str(njobs + 10), "-no",
            "{id} {state} {result} {t_submit} {t_run} {t_inactive} {nodelist} {status}"]
    proc = subprocess.Popen(argv, env=bl.base_env(state), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    h = hashlib.sha256()
    lines = 0
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
        h.update(chunk)
        lines += chunk.count(b"\n")
    proc.stdout.close()
    if proc.wait() != 0:
        raise bl.CommandFailed(f"flux-lite jobs -a: exit {proc.returncode}")
    return h.hexdigest(), lines


def run_size(njobs, root, work, figures, targets, formats):
    state = os.path.join(root, f"history-{njobs}")
    built = build(state, njobs)
    fig = figures[str(njobs)] = {"jobs": njobs, "state_mb": round(_du(state) / 1e6, 1)}
    fig["state_bytes_per_job"] = round(_du(state) / njobs)
    if built is not None:
        fig["built_in_s"] = built
    tag = f"{njobs // 1000}k"

    # everyday commands, read-only, on the cached state: the best of 3, as
    # on the empty instance (one run is at the mercy of a cold page cache)
    for name, argv in EVERYDAY.items():
        fig[name] = _best(argv, state)

    # fsck
    bl.log(f"{tag}: fsck")
    fig["fsck"], _ = measure(["fsck"], state)
    fig["fsck"]["jobs_per_cpu_s"] = round(njobs / fig["fsck"]["cpu_s"])
    targets.append(bl.target(f"fsck {tag} peak RSS", fig["fsck"]["peak_rss_mb"], STREAM_RSS, unit="MB"))
    if njobs >= 1000000:
        targets.append(bl.target("fsck 1M wall", fig["fsck"]["wall_s"], FSCK_1M_S))

    # dump and restore, plain and gzip; the restored instance lists the same jobs
    want, nlisted = digest_of_listing(state, njobs)
    fig["listed"] = nlisted
    for ext in formats:
        out = os.path.join(work, f"history.{ext}")
        bl.log(f"{tag}: dump .{ext}")
        fig[f"dump_{ext}"], _ = measure(["dump", "-q", out], state)
        fig[f"dump_{ext}"]["archive_mb"] = round(os.path.getsize(out) / 1e6, 1)
        fig[f"dump_{ext}"]["jobs_per_s"] = round(njobs / fig[f"dump_{ext}"]["wall_s"])
        fig[f"dump_{ext}"]["jobs_per_cpu_s"] = round(njobs / fig[f"dump_{ext}"]["cpu_s"])
        copy = os.path.join(work, "restored")
        shutil.rmtree(copy, ignore_errors=True)
        bl.log(f"{tag}: restore .{ext}")
        fig[f"restore_{ext}"], _ = measure(["restore", "-q", out], copy)
        fig[f"restore_{ext}"]["jobs_per_s"] = round(njobs / fig[f"restore_{ext}"]["wall_s"])
        fig[f"restore_{ext}"]["jobs_per_cpu_s"] = round(njobs / fig[f"restore_{ext}"]["cpu_s"])
        got, _ = digest_of_listing(copy, njobs)
        fig[f"restore_{ext}"]["same_jobs"] = got == want
        targets.append(bl.target(f"restore .{ext} {tag}: jobs -a identical", got == want, True, op="==", unit=""))
        for what in ("dump", "restore"):
            f = fig[f"{what}_{ext}"]
            targets.append(bl.target(f"{what} .{ext} {tag} rate", f["jobs_per_s"], STREAM_RATE, op=">=",
                                     unit="jobs/s", note=f"{f['jobs_per_cpu_s']} jobs per CPU second"))
            targets.append(bl.target(f"{what} .{ext} {tag} peak RSS", f["peak_rss_mb"], STREAM_RSS, unit="MB"))
        shutil.rmtree(copy, ignore_errors=True)
        os.unlink(out)

    # the commands that change the instance, on a copy
    copy = os.path.join(work, "changed")
    bl.copy_state(state, copy)
    for name, argv in CHANGING.items():
        fig[name] = _best(argv, copy)
    shutil.rmtree(copy, ignore_errors=True)
    return fig


def _best(argv, state, runs=3):
    """measure() of the run with the least wall time of runs."""
    return min((measure(argv, state)[0] for _ in range(runs)), key=lambda r: r["wall_s"])


def _du(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


def main():
    p = bl.parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="Comma list of job counts (default 100000,1000000; quick 20000).")
    p.add_argument("--cache", default=None, help="Where the built states are kept (see above).")
    p.add_argument("--formats", default="tar,tgz", help="Archive formats dumped and restored (default tar,tgz).")
    args = bl.parse_args(p)
    t_start = time.perf_counter()
    sizes = [int(s) for s in (args.sizes or ("20000" if args.quick else "100000,1000000")).split(",")]
    root = cache_root(args.cache)
    figures, targets = {"cache": root}, []
    with bl.temp_dir("flux-lite-history-") as work:
        # the same commands on an instance of the same shape with 10 jobs
        # (`job last` needs one), the "empty" instance of the ratios
        empty = os.path.join(work, "empty")
        bl.start_instance(empty, size=64, cores=32)
        bl.fl(["submit", "--quiet", "--cc=1-10", "-n1", "-S", "exec.test.run_duration=1s", "true"], empty)
        bl.fl(["clock", "advance", "1h"], empty)
        base = figures["empty"] = {}
        for name, argv in {**EVERYDAY, **CHANGING}.items():
            base[name] = _best(argv, empty)
        for njobs in sizes:
            fig = run_size(njobs, root, work, figures, targets, args.formats.split(","))
            tag = f"{njobs // 1000}k"
            for name in {**EVERYDAY, **CHANGING}:
                ratio = fig[name]["cpu_s"] / max(base[name]["cpu_s"], 1e-3)
                fig[name]["cpu_ratio_to_empty"] = round(ratio, 2)
                targets.append(bl.target(f"{name} {tag} CPU vs empty", ratio, 1.5, unit="x"))
                targets.append(bl.target(f"{name} {tag} peak RSS", fig[name]["peak_rss_mb"], EVERYDAY_RSS,
                                         unit="MB"))
    bl.emit(bl.report("history", args, figures, targets, t_start=t_start))


if __name__ == "__main__":
    main()
