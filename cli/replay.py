"""flux-lite replay: run a workload trace (SWF) through the job manager and scheduler."""

import json
import os
import shlex

import click
from flux_lite.cli._complete import PolicyChoice
from flux_lite.cli.output import progress_report
from flux_lite.cli.params import FSD

from flux_lite import config as configmod
from flux_lite import study, workload
from flux_lite.errors import UsageError
from flux_lite.formats.fsd import format_fsd
from flux_lite.sched import registry


def _duration(seconds):
    return f"{seconds:.0f}s ({format_fsd(seconds)})" if seconds >= 60 else f"{seconds:.0f}s"


def _skipped(skipped):
    return ", ".join(f"{k} {v}" for k, v in skipped.items() if v) or "none"


def _text(summary, figures):
    res = ", ".join(f"{k} {v}" for k, v in summary["results"].items())
    lines = [
        f"trace:            {figures['trace']}",
        f"instance:         {summary['nodes']} nodes x {summary['cores_per_node']} cores, "
        f"policy {summary['policy']}, virtual clock",
        f"jobs:             {summary['jobs']} replayed (skipped: {_skipped(figures['skipped'])})",
        f"results:          {res}",
        f"makespan:         {_duration(summary['makespan'])}",
        f"utilization:      {summary['utilization'] * 100:.1f}%",
        f"wait mean:        {_duration(summary['wait_mean'])}",
        f"wait p50/p90/p99: {summary['wait_p50']:.0f}s / {summary['wait_p90']:.0f}s / {summary['wait_p99']:.0f}s",
        f"wait max:         {_duration(summary['wait_max'])}",
        f"bounded slowdown: {summary['bounded_slowdown_mean']:.2f} (mean, runs under 10s count as 10s)",
        f"user wait max:    {_duration(summary['user_wait_mean_max'])} (the largest of the users' mean waits)",
    ]
    return "\n".join(lines)


# the rows of the side-by-side table of several policies: (heading, how a summary shows it)
COMPARED = (
    ("jobs", lambda s: str(s["jobs"])),
    ("makespan", lambda s: f"{s['makespan']:.0f}s"),
    ("utilization", lambda s: f"{s['utilization'] * 100:.1f}%"),
    ("wait mean", lambda s: f"{s['wait_mean']:.0f}s"),
    ("wait p50", lambda s: f"{s['wait_p50']:.0f}s"),
    ("wait p95", lambda s: f"{s['wait_p95']:.0f}s"),
    ("wait max", lambda s: f"{s['wait_max']:.0f}s"),
    ("bounded slowdown", lambda s: f"{s['bounded_slowdown_mean']:.2f}"),
    ("user wait max", lambda s: f"{s['user_wait_mean_max']:.0f}s"),
)


def compared_table(labels, summaries):
    """Policies (or grid points) side by side, one metric a line."""
    results = sorted({k for s in summaries for k in s["results"]})
    rows = [(name, [show(s) for s in summaries]) for name, show in COMPARED]
    rows += [(k, [str(s["results"].get(k, 0)) for s in summaries]) for k in results]
    width = max(len(r[0]) for r in rows) + 2
    cols = [max(len(label), *(len(r[1][i]) for r in rows)) for i, label in enumerate(labels)]
    lines = [" " * width + "  ".join(label.rjust(c) for label, c in zip(labels, cols))]
    lines += [name.ljust(width) + "  ".join(v.rjust(c) for v, c in zip(vals, cols)) for name, vals in rows]
    return "\n".join(lines)


def study_options(f):
    """The per-job, series, comparison, configuration and plot options (flux-lite-replay(1))."""
    for opt in reversed((
        click.option("--jobs-out", metavar="FILE", help="Write one row per job as it finishes: CSV, or JSON lines "
                     "if FILE ends in .jsonl."),
        click.option("--swf-out", metavar="FILE", help="Write the replay as an SWF trace (simulated waits)."),
        click.option("--series-out", metavar="FILE", help="Write the time series (CSV) of running and pending jobs."),
        click.option("--series-step", type=FSD, metavar="FSD", help="Sample the series every FSD "
                     "(default: at every change)."),
        click.option("--users", type=click.Choice(["synthetic", "local"]), default="synthetic", show_default=True,
                     help="Trace users as userN, or as the local users of their numbers."),
        click.option("-c", "--config", "config_file", metavar="FILE|DIR", type=click.Path(),
                     help="Instance configuration (as flux-lite start --config)."),
        click.option("--queue-map", metavar="N=NAME,...", help="Trace queue numbers (or partition:N) to queues."),
        click.option("-j", "--parallel", type=click.IntRange(1, 1024), metavar="N",
                     help="Replay several policies in N processes (default: one per core)."),
        click.option("--plot", metavar="FILE", help="Draw utilisation, queue length and waits (.svg, .png, .pdf)."),
    )):
        f = opt(f)
    return f


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--policy", type=PolicyChoice(multiple=True), default=None, metavar="POLICY[,POLICY...]",
              help="Scheduling policy, or several compared (default: the configuration's, else "
                   f"{registry.default_policy()}).")
@click.option("--nodes", type=click.IntRange(1, 65536), default=None,
              help="Nodes of the instance (default: the trace's MaxNodes, else MaxProcs).")
@click.option("--cores-per-node", type=click.IntRange(1, 4096), default=None,
              help="Cores per node (default: MaxProcs / MaxNodes of the trace, at least 1).")
@click.option("--limit", type=click.IntRange(1, None), default=None, metavar="N",
              help="Replay only the first N replayable jobs.")
@click.option("--scheduler", "module", type=click.Path(dir_okay=False), default=None, metavar="PATH.py|fluxion",
              help="Schedule with this Python scheduler module file instead of a policy, or with Fluxion's "
                   "modules (fluxion: --policy names the queue policy).")
@click.option("--match-policy", default=None, metavar="POLICY",
              help="With --scheduler=fluxion: the resource module's match policy (first, lonodex, ...).")
@click.option("--module-args", default="", metavar="ARGS",
              help="Arguments for the --scheduler module, as `flux module load` takes them (one string).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--keep", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Create the replay's instance at DIR (must not exist) and keep it for inspection.")
@study_options
@click.argument("trace", type=click.Path(dir_okay=False, allow_dash=True))
def replay(policy, nodes, cores_per_node, limit, module, match_policy, module_args, as_json, keep, trace, **opts):
    """Replay an SWF workload trace (plain or gzip) in simulated time.

    Each job is submitted when the virtual clock reaches its trace submit
    time, asking for one core per trace processor, its requested time as the
    time limit and its recorded run time as exec.test.run_duration. The
    instance then runs until every job is inactive, and a summary is printed.
    """
    fluxion = module == workload.FLUXION
    if match_policy is not None and not fluxion:
        raise click.UsageError("--match-policy needs --scheduler=fluxion")
    if fluxion:
        if module_args:
            raise click.UsageError("--module-args: Fluxion's modules take their options from -c/--config")
        bad = [p for p in policy or () if p not in workload.FLUXION_QUEUE_POLICIES]
        if bad:
            known = ", ".join(workload.FLUXION_QUEUE_POLICIES)
            raise click.UsageError(f"--policy: Fluxion's queue policies are {known}, not {bad[0]}")
        module = None
    if module_args and module is None:
        raise click.UsageError("--module-args needs --scheduler")
    if module is not None and not module.endswith(".py"):
        raise click.UsageError(f"--scheduler: {module}: expected a Python module file (.py)")
    if module is not None and policy:
        raise click.UsageError("--scheduler replays with the module: give no --policy")
    policies = policy or [None]
    several = len(policies) > 1
    if several and keep:
        raise UsageError("--keep keeps one instance: name one policy")
    if several and trace == "-":
        raise UsageError("several policies read the trace once each: name a file, not -")
    if opts["series_step"] is not None and not opts["series_out"]:
        raise UsageError("--series-step samples the series of --series-out: name a file")
    if opts["plot"]:
        study.check_plot(opts["plot"])
    config = configmod.load_file(opts["config_file"]) if opts["config_file"] else None
    configs = {p: config for p in policies}
    if fluxion:
        # each point a configuration selecting Fluxion with its queue policy
        configs = {p: workload.fluxion_config(config, p, match_policy) for p in policies}
    common = dict(nodes=nodes, cores_per_node=cores_per_node, limit=limit, series_step=opts["series_step"],
                  queue_map=workload.parse_queue_map(opts["queue_map"]) if opts["queue_map"] else None,
                  plot=bool(opts["plot"]), names=opts["users"], module=module,
                  module_args=shlex.split(module_args) if module_args else None)
    outs = ("jobs_out", "swf_out", "series_out")
    name = os.path.basename(trace) if trace != "-" else "-"
    if not several:
        with progress_report("replaying") as report:
            runs = [study.replay_point(trace, None if fluxion else policies[0], keep=keep, progress=report,
                                       config=configs[policies[0]], **common, **{k: opts[k] for k in outs})]
    else:
        runs = study.run_points([dict(common, trace=trace, policy=None if fluxion else p, config=configs[p],
                                      **{k: study.per_point_path(opts[k], p) for k in outs}) for p in policies],
                                opts["parallel"])
    if opts["plot"]:
        study.plot(opts["plot"], [(r["policy"], r["plot"]) for r in runs])
    if as_json:
        docs = {r["policy"]: dict(r["summary"], trace=name, skipped=r["skipped"]) for r in runs}
        click.echo(json.dumps(docs if several else docs[runs[0]["policy"]], sort_keys=True))
    elif not several:
        click.echo(_text(runs[0]["summary"], {"trace": name, "skipped": runs[0]["skipped"]}))
    else:
        first = runs[0]["summary"]
        click.echo(f"trace:     {name} (skipped: {_skipped(runs[0]['skipped'])})\n"
                   f"instance:  {first['nodes']} nodes x {first['cores_per_node']} cores, virtual clock\n")
        click.echo(compared_table([r["policy"] for r in runs], [r["summary"] for r in runs]))
