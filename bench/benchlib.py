"""Helpers shared by the flux-lite benchmarks (stdlib only).

Every benchmark is a script that prints one JSON document: its figures, its
targets (value, limit, pass flag) and the environment it ran in. Commands are
timed whole, in a subprocess, with the wall clock; instances live in temporary
state directories with a virtual clock and are removed afterwards.
"""

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)


# -- the commands ----------------------------------------------------------------


def flux_lite_exe():
    """The flux-lite console script: next to sys.executable, else on PATH.

    The one next to the interpreter comes first on purpose: a PATH entry may
    be a wrapper (pyenv shims cost tens of milliseconds per call), which is
    not what a user of an installed flux-lite pays.
    """
    here = os.path.join(os.path.dirname(sys.executable), "flux-lite")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("flux-lite")
    if found:
        return found
    raise SystemExit("bench: no flux-lite console script next to sys.executable or on PATH")


def flux_lite_script():
    """The console script as a Python file (to run it under -X importtime or cProfile)."""
    return flux_lite_exe()


# Bytecode: flux-lite is usually installed editable here, and the environment
# may set PYTHONDONTWRITEBYTECODE, so every command would compile its modules
# from source. An installed package has .pyc files; by default the benchmarks
# give commands a persistent bytecode cache outside the checkout
# (PYTHONPYCACHEPREFIX). --pyc=asis measures the environment unchanged.
PYC_MODE = "prefix"
PYC_PREFIX = os.path.join(tempfile.gettempdir(), f"flux-lite-bench-pycache-{os.getuid()}")


def base_env(state_dir=None):
    env = dict(os.environ)
    if PYC_MODE == "prefix":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = PYC_PREFIX
    for var in ("FLUX_HANDLE_USERID", "FLUX_HANDLE_ROLEMASK"):
        env.pop(var, None)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if state_dir is not None:
        env["FLUX_LITE_STATE_DIR"] = str(state_dir)
    return env


class CommandFailed(RuntimeError):
    pass


def run(argv, env=None, check=True, stdin=subprocess.DEVNULL, capture=True):
    """Run argv; return (wall seconds, CompletedProcess). stdout is a pipe, not a TTY.

    proc.cpu_s is the child's user+system CPU time: on a loaded machine the
    wall time also counts waiting for a CPU, the CPU time does not.
    """
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=stdin, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.cpu_s = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if check and proc.returncode != 0:
        raise CommandFailed(f"{' '.join(map(str, argv))}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return wall, proc


def run_rss(argv, env):
    """(wall, cpu, peak RSS MB, returncode, stdout, stderr) of one child, from wait4
    (stdout is read whole first, then stderr: a command's stderr is short)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, proc.returncode, out, err


def fl(args, state_dir, check=True, capture=True):
    """Run `flux-lite ARGS` against state_dir; return (wall, CompletedProcess)."""
    return run([flux_lite_exe(), *args], env=base_env(state_dir), check=check, capture=capture)


def python_baseline_argv():
    return [sys.executable, "-c", "import click, sqlite3"]


# -- instances ---------------------------------------------------------------------


@contextlib.contextmanager
def temp_dir(prefix="flux-lite-bench-"):
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def start_instance(state_dir, size=4, cores=4, config=None, extra=()):
    """`flux-lite start --clock=virtual` in state_dir (config: a dict, written as JSON,
    which the YAML config loader accepts)."""
    args = ["start", f"--test-size={size}", f"--test-cores={cores}", "--clock=virtual", "--force", *extra]
    if config is not None:
        os.makedirs(state_dir, exist_ok=True)
        path = os.path.join(state_dir, "bench-config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        args.append(f"--config={path}")
    return fl(args, state_dir)[0]


def copy_state(src, dst):
    """Copy a closed instance (the SQLite database and its WAL files), and
    have the copy written to disk: otherwise the first command that syncs
    the database (a checkpoint at its close) waits for the whole copy to be
    written back (0.35 s for a 900 MB history), a cost of the copy, not of
    the command measured."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    for name in os.listdir(dst):
        path = os.path.join(dst, name)
        if os.path.isfile(path):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


# -- statistics and the report -------------------------------------------------------


def median(values):
    return statistics.median(values) if values else None


def summary(values):
    values = list(values)
    if not values:
        return None
    return {
        "median": round(statistics.median(values), 6),
        "min": round(min(values), 6),
        "max": round(max(values), 6),
        "n": len(values),
    }


class Samples:
    """Wall and CPU times of repeated runs of one command."""

    def __init__(self):
        self.walls = []
        self.cpus = []

    def add(self, wall, proc=None):
        self.walls.append(wall)
        if proc is not None and hasattr(proc, "cpu_s"):
            self.cpus.append(proc.cpu_s)
        return proc

    @property
    def median(self):
        return median(self.walls)

    def summary(self):
        out = summary(self.walls)
        if out is not None and self.cpus:
            out["cpu_median"] = round(statistics.median(self.cpus), 6)
        return out


def target(name, value, limit, op="<=", unit="s", note=None):
    """One target: value compared with limit; pass is None when value is missing."""
    if value is None:
        ok = None
    elif op == "<=":
        ok = value <= limit
    elif op == ">=":
        ok = value >= limit
    elif op == "==":
        ok = value == limit
    else:
        raise ValueError(op)
    out = {"name": name, "value": None if value is None else round(value, 6) if isinstance(value, float) else value,
           "op": op, "limit": limit, "unit": unit, "pass": ok}
    if note:
        out["note"] = note
    return out


def git_info():
    try:
        rev = subprocess.run(["git", "-C", REPO_DIR, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO_DIR, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return {"commit": rev or None, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def environment():
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "flux_lite": flux_lite_exe(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": None if load is None else [round(x, 2) for x in load],
        "git": git_info(),
        "pyc": PYC_MODE,
        "pycache_prefix": PYC_PREFIX if PYC_MODE == "prefix" else os.environ.get("PYTHONPYCACHEPREFIX"),
        "PYTHONDONTWRITEBYTECODE_in_env": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }


def report(name, args, figures, targets, skipped=None, extra=None, t_start=None):
    """The JSON document a benchmark prints."""
    considered = [t["pass"] for t in targets if t["pass"] is not None]
    doc = {
        "benchmark": name,
        "quick": bool(getattr(args, "quick", False)),
        "pass": all(considered) if considered else None,
        "targets": targets,
        "figures": figures,
    }
    if skipped:
        doc["skipped"] = skipped
    if extra:
        doc.update(extra)
    doc["environment"] = environment()
    if t_start is not None:
        doc["bench_wall_s"] = round(time.perf_counter() - t_start, 3)
    return doc


def emit(doc):
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


def parser(description, runs=None, runs_flag="-n", runs_what="each command"):
    """The options every benchmark takes; runs=(default, quick) adds --runs
    (parse_args fills in the default for the mode)."""
    p = argparse.ArgumentParser(description=description)
    if runs is not None:
        p.add_argument(runs_flag, "--runs", type=int, default=None,
                       help=f"Runs of {runs_what} (default {runs[0]}, quick {runs[1]}).")
        p.set_defaults(runs_default=runs)
    p.add_argument("--quick", action="store_true", help="A smaller, faster run.")
    p.add_argument("--profile", action="store_true",
                   help="Also run the slow part once under cProfile and report the top functions.")
    p.add_argument("--top", type=int, default=10, help="Functions in a profile (default 10).")
    p.add_argument("--pyc", choices=("prefix", "asis"), default="prefix",
                   help="prefix (default): commands get a persistent bytecode cache in PYTHONPYCACHEPREFIX; "
                        "asis: the environment unchanged (PYTHONDONTWRITEBYTECODE may make every command "
                        "compile flux-lite from source).")
    return p


def parse_args(p):
    """Parse, and apply the options every benchmark shares."""
    global PYC_MODE
    args = p.parse_args()
    PYC_MODE = args.pyc
    if getattr(args, "runs_default", None) is not None:
        args.runs = args.runs or args.runs_default[1 if args.quick else 0]
    return args


def log(msg):
    """Progress on stderr (stdout carries only the JSON document)."""
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# -- profiles --------------------------------------------------------------------------


def top_functions(stats, n=10):
    """Top n functions by tottime: file:line(function), calls, tottime, cumtime."""
    stats.sort_stats("tottime")
    out = []
    for func in stats.fcn_list[:n]:
        filename, line, fname = func
        cc, nc, tt, ct, _callers = stats.stats[func]
        short = filename
        for root in (REPO_DIR + os.sep, sys.prefix + os.sep):
            if short.startswith(root):
                short = short[len(root):]
        out.append({"function": f"{short}:{line}({fname})", "ncalls": nc, "tottime": round(tt, 4),
                    "cumtime": round(ct, 4)})
    return out


def profile_command(args, state_dir, n=10):
    """Run `flux-lite ARGS` once under cProfile (python -m cProfile); return the top n."""
    with temp_dir("flux-lite-prof-") as tmp:
        out = os.path.join(tmp, "prof.out")
        wall, _ = run([sys.executable, "-m", "cProfile", "-o", out, flux_lite_script(), *args],
                      env=base_env(state_dir))
        stats = pstats.Stats(out, stream=io.StringIO())
        return {"command": "flux-lite " + " ".join(args), "wall_s": round(wall, 4),
                "total_tt": round(stats.total_tt, 4), "top_tottime": top_functions(stats, n)}


@contextlib.contextmanager
def profiled(result, n=10, enabled=True):
    """Profile the with-block in process; put the top n functions into result (a dict)."""
    if not enabled:
        yield
        return
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        stats = pstats.Stats(prof, stream=io.StringIO())
        result["total_tt"] = round(stats.total_tt, 4)
        result["top_tottime"] = top_functions(stats, n)


def imported_modules(args, state_dir, stdin_text=None):
    """Modules a `flux-lite ARGS` run imports (python -X importtime, stdout piped).

    Returns (set of module names, list of (cumulative us, name) for the
    top-level imports, wall seconds)."""
    env = base_env(state_dir)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-X", "importtime", flux_lite_script(), *args], env=env,
                          input=stdin_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise CommandFailed(f"importtime flux-lite {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    names = set()
    top = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        cumulative = int(parts[1].strip())
        raw = parts[2]
        name = raw.strip()
        names.add(name)
        depth = (len(raw) - len(raw.lstrip(" "))) // 2
        if depth == 0:
            top.append((cumulative, name))
    top.sort(reverse=True)
    return names, top, wall


def has_package(names, pkg):
    return sorted(n for n in names if n == pkg or n.startswith(pkg + "."))
