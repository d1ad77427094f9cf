"""Workload studies: one trace under several policies (``replay --policy
a,b``), grids of replays (``flux-lite sweep``) run on a local process pool
or as jobs of a real Flux instance, and pictures of them.

Each replay is ``replay_point``: a replay of one trace with one policy and
configuration, writing its own per-job files, returning its summary. The
comparison and the sweep only run points and gather their summaries, so a
point's figures are those of the single ``flux-lite replay`` it stands for.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from flux_lite import config as configmod
from flux_lite import workload
from flux_lite.errors import FluxLiteError
from flux_lite.workload_results import Results

PLOT_FORMATS = (".svg", ".png", ".pdf")
PLOT_EXTRA = "--plot needs matplotlib: pip install 'flux-lite[plot]'"


def replay_point(trace: str, policy: str | None, *, nodes: int | None = None, cores_per_node: int | None = None,
                 limit: int | None = None, config: dict | None = None, queue_map: dict | None = None,
                 jobs_out: str | None = None, swf_out: str | None = None, series_out: str | None = None,
                 series_step: float | None = None, plot: bool = False, names: str = "synthetic",
                 keep: str | None = None, progress=None, module: str | None = None,
                 module_args: list[str] | None = None) -> dict[str, Any]:
    """One replay with its outputs: {"policy", "summary", "skipped", "plot"}
    (plot: what plot() draws of it, when asked). The output files are
    removed if the replay fails."""
    results = Results(jobs_out, swf_out, series_out, series_step, plot, names)
    ok = False
    try:
        summary, tr = workload.replay_file(trace, policy, nodes, cores_per_node, limit, keep, progress,
                                           config=config, results=results, queue_map=queue_map, module=module,
                                           module_args=module_args)
        ok = True
    finally:
        results.close(ok)
    return {"policy": summary["policy"], "summary": summary, "skipped": tr.skipped, "plot": results.plotdata}


def _point(kwargs: dict) -> dict:
    """replay_point in a worker process: an error comes back as its message."""
    try:
        return replay_point(**kwargs)
    except FluxLiteError as exc:
        return {"error": str(exc)}


def run_points(points: list[dict], parallel: int | None = None) -> list[dict]:
    """replay_point of each point's keyword arguments, in up to parallel
    processes (default: one per core); results in the points' order. The
    first failure is raised once all have ended."""
    parallel = parallel or os.cpu_count() or 1
    if parallel == 1 or len(points) == 1:
        out = [_point(p) for p in points]
    else:
        with ProcessPoolExecutor(max_workers=min(parallel, len(points))) as pool:
            out = list(pool.map(_point, points))
    for r in out:
        if "error" in r:
            raise FluxLiteError(r["error"])
    return out


def per_point_path(path: str | None, tag: str) -> str | None:
    """An output file of one of several replays: the tag before the extension
    (jobs.csv -> jobs.easy.csv)."""
    if not path:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}.{tag}{ext}"


def check_plot(path: str) -> None:
    """Refuse a --plot that cannot be drawn, before any replay runs."""
    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise FluxLiteError(f"--plot: {path}: the name must end in {', '.join(PLOT_FORMATS)}")
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise FluxLiteError(PLOT_EXTRA)


def plot(path: str, runs: list[tuple[str, dict]]) -> None:
    """Draw utilisation and pending jobs over time (one line per run) and each
    run's wait distribution to path (.svg, .png or .pdf); runs: (label, the
    "plot" of replay_point)."""
    check_plot(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (util, pend, waits) = plt.subplots(3, 1, figsize=(9, 10), constrained_layout=True)
    for label, data in runs:
        days = [t / 86400 for t in data.get("times", [])]
        util.plot(days, [u * 100 for u in data.get("utilization", [])], label=label, linewidth=0.8)
        pend.plot(days, data.get("pending", []), label=label, linewidth=0.8)
        w = data.get("waits", [])
        if w:
            waits.plot([x / 3600 for x in w], [i / (len(w) - 1) for i in range(len(w))], label=label)
    util.set(title="Utilisation", xlabel="days since the first submit", ylabel="% of cores busy")
    pend.set(title="Queue length", xlabel="days since the first submit", ylabel="pending jobs")
    waits.set(title="Wait time distribution", xlabel="wait (hours)", ylabel="fraction of jobs")
    for ax in (util, pend, waits):
        ax.grid(True, alpha=0.3)
        ax.legend()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}") from None
    finally:
        plt.close(fig)


# -- sweeps ----------------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A grid value as configuration takes it: a JSON value (integer, number,
    boolean), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_grid(items: list[str]) -> list[tuple[str, list]]:
    """--set KEY=V1,V2,...: a configuration key and the values it takes."""
    out = []
    for item in items:
        key, sep, values = item.partition("=")
        vals = [parse_value(v.strip()) for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not vals:
            raise FluxLiteError(f"--set: expected KEY=VALUE[,VALUE...], got {item!r}")
        out.append((key.strip(), vals))
    return out


def with_values(base: dict | None, params: dict[str, Any]) -> dict:
    """base configuration with the dotted keys of params set, checked."""
    cfg = copy.deepcopy(base or {})
    for key, value in params.items():
        table = cfg
        *parents, last = key.split(".")
        for p in parents:
            nxt = table.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise FluxLiteError(f"--set: {key}: {p} is not a table")
            table = nxt
        table[last] = value
    return configmod.validate(cfg)


def grid(traces: list[str], policies: list[str], params: list[tuple[str, list]], base: dict | None = None
         ) -> list[dict]:
    """Every (trace, policy, parameter values) of the grid, with its configuration."""
    keys = [k for k, _ in params]
    points = []
    for trace, policy in itertools.product(traces, policies):
        for values in itertools.product(*[v for _, v in params]):
            chosen = dict(zip(keys, values))
            points.append({"trace": trace, "policy": policy, "params": chosen, "config": with_values(base, chosen)})
    return points


def _point_files(outdir: str | None, n: int) -> dict[str, str]:
    if not outdir:
        return {}
    stem = os.path.join(outdir, f"point-{n:04d}")
    return {"jobs_out": stem + ".csv", "config_file": stem + ".config.json", "summary_file": stem + ".json",
            "stem": stem}


def run_sweep(points: list[dict], common: dict, parallel: int | None = None, outdir: str | None = None
              ) -> list[dict]:
    """Run the grid on a local process pool; each point's per-job rows go to
    outdir/point-NNNN.csv when outdir is given. Returns each point with its
    summary."""
    if outdir:
        _make_dir(outdir)
    kwargs = [dict(common, trace=p["trace"], policy=p["policy"], config=p["config"],
                   jobs_out=_point_files(outdir, n).get("jobs_out")) for n, p in enumerate(points, 1)]
    out = [dict(p, **r) for p, r in zip(points, run_points(kwargs, parallel))]
    for n, r in enumerate(out, 1):
        if outdir:  # as `replay --json` writes it in a Flux job (run_on_flux)
            _write_json(_point_files(outdir, n)["summary_file"],
                        dict(r["summary"], trace=os.path.basename(r["trace"]), skipped=r["skipped"]))
    return out


def _make_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}") from None


def _write_json(path: str, doc: Any) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, sort_keys=True) + "\n")
    except OSError as exc:
        raise FluxLiteError(f"{path}: {exc.strerror}") from None


def flux_command(point: dict, files: dict, common: dict) -> list[str]:
    """The `flux submit` of one grid point: `flux-lite replay ... --json --jobs-out`."""
    replay = [sys.executable, "-m", "flux_lite", "replay", "--json", f"--config={files['config_file']}",
              f"--jobs-out={files['jobs_out']}"]
    if point["policy"] is not None:
        replay.append(f"--policy={point['policy']}")
    for opt in ("nodes", "cores_per_node", "limit"):
        if common.get(opt) is not None:
            replay.append(f"--{opt.replace('_', '-')}={common[opt]}")
    if common.get("names") == "local":
        replay.append("--users=local")
    if common.get("queue_map"):
        replay.append("--queue-map=" + ",".join(f"{field}:{num}={name}"
                                                for (field, num), name in common["queue_map"].items()))
    replay.append(os.path.abspath(point["trace"]))
    return ["submit", f"--job-name=sweep-{os.path.basename(files['stem'])}", f"--output={files['summary_file']}",
            f"--error={files['stem']}.err", "--"] + replay


def run_on_flux(points: list[dict], common: dict, outdir: str, flux: str = "flux") -> list[dict]:
    """Submit each grid point as a job of the Flux instance `flux` reaches
    (FLUX_URI, or the enclosing instance), wait for them all, and gather
    their summaries (point-NNNN.json) as run_sweep does."""
    _make_dir(outdir)
    outdir = os.path.abspath(outdir)
    jobs = []
    for n, p in enumerate(points, 1):
        files = _point_files(outdir, n)
        _write_json(files["config_file"], p["config"])
        jobs.append((_flux(flux, flux_command(p, files, common)).strip(), files))
    out = []
    for (jobid, files), p in zip(jobs, points):
        try:
            _flux(flux, ["job", "attach", jobid])
        except FluxLiteError:
            err = _tail(files["stem"] + ".err")
            raise FluxLiteError(f"sweep point {os.path.basename(files['stem'])} (flux job {jobid}) failed"
                                + (f": {err}" if err else "")) from None
        try:
            with open(files["summary_file"], encoding="utf-8") as f:
                summary = json.load(f)
        except (OSError, ValueError) as exc:
            raise FluxLiteError(f"{files['summary_file']}: {exc}") from None
        skipped = summary.pop("skipped", {})
        summary.pop("trace", None)
        out.append(dict(p, policy=summary["policy"], summary=summary, skipped=skipped, plot={}, flux_jobid=jobid))
    return out


def _flux(flux: str, args: list[str]) -> str:
    try:
        r = subprocess.run([flux] + args, capture_output=True, text=True)
    except OSError as exc:
        raise FluxLiteError(f"{flux}: {exc.strerror}") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        raise FluxLiteError(f"{flux} {shlex.join(args[:2])}: {last}")
    return r.stdout


def _tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""
