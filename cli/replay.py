"""flux-lite replay: run a workload trace (SWF) through the job manager and scheduler."""

import json
import os
import shlex

import click
from flux_lite.cli._complete import PolicyChoice
from flux_lite.cli.output import progress_report

from flux_lite import workload
from flux_lite.formats.fsd import format_fsd
from flux_lite.sched import registry


def _duration(seconds):
    return f"{seconds:.0f}s ({format_fsd(seconds)})" if seconds >= 60 else f"{seconds:.0f}s"


def _text(summary, figures):
    res = ", ".join(f"{k} {v}" for k, v in summary["results"].items())
    skipped = ", ".join(f"{k} {v}" for k, v in figures["skipped"].items() if v) or "none"
    lines = [
        f"trace:            {figures['trace']}",
        f"instance:         {summary['nodes']} nodes x {summary['cores_per_node']} cores, "
        f"policy {summary['policy']}, virtual clock",
        f"jobs:             {summary['jobs']} replayed (skipped: {skipped})",
        f"results:          {res}",
        f"makespan:         {_duration(summary['makespan'])}",
        f"utilization:      {summary['utilization'] * 100:.1f}%",
        f"wait mean:        {_duration(summary['wait_mean'])}",
        f"wait p50/p90/p99: {summary['wait_p50']:.0f}s / {summary['wait_p90']:.0f}s / {summary['wait_p99']:.0f}s",
        f"wait max:         {_duration(summary['wait_max'])}",
        f"bounded slowdown: {summary['bounded_slowdown_mean']:.2f} (mean, runs under 10s count as 10s)",
    ]
    return "\n".join(lines)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--policy", type=PolicyChoice(), default=registry.default_policy(), show_default=True,
              help="Scheduling policy (as sched.policy: see flux-lite-sched(1)).")
@click.option("--nodes", type=click.IntRange(1, 65536), default=None,
              help="Nodes of the instance (default: the trace's MaxNodes, else MaxProcs).")
@click.option("--cores-per-node", type=click.IntRange(1, 4096), default=None,
              help="Cores per node (default: MaxProcs / MaxNodes of the trace, at least 1).")
@click.option("--limit", type=click.IntRange(1, None), default=None, metavar="N",
              help="Replay only the first N replayable jobs.")
@click.option("--scheduler", "module", type=click.Path(dir_okay=False), default=None, metavar="PATH.py",
              help="Schedule with this Python scheduler module file instead of a policy.")
@click.option("--module-args", default="", metavar="ARGS",
              help="Arguments for the --scheduler module, as `flux module load` takes them (one string).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--keep", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Create the replay's instance at DIR (must not exist) and keep it for inspection.")
@click.argument("trace", type=click.Path(dir_okay=False, allow_dash=True))
def replay(policy, nodes, cores_per_node, limit, module, module_args, as_json, keep, trace):
    """Replay an SWF workload trace (plain or gzip) in simulated time.

    Each job is submitted when the virtual clock reaches its trace submit
    time, asking for one core per trace processor, its requested time as the
    time limit and its recorded run time as exec.test.run_duration. The
    instance then runs until every job is inactive, and a summary is printed.
    """
    if module_args and module is None:
        raise click.UsageError("--module-args needs --scheduler")
    if module is not None and not module.endswith(".py"):
        raise click.UsageError(f"--scheduler: {module}: expected a Python module file (.py)")
    with progress_report("replaying") as report:
        summary, tr = workload.replay_file(trace, policy, nodes, cores_per_node, limit, keep, progress=report,
                                           module=module, module_args=shlex.split(module_args))
    figures = {"trace": os.path.basename(trace) if trace != "-" else "-", "skipped": tr.skipped}
    if as_json:
        click.echo(json.dumps(dict(summary, trace=figures["trace"], skipped=tr.skipped), sort_keys=True))
    else:
        click.echo(_text(summary, figures))
