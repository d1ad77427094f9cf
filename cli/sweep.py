"""flux-lite sweep: a grid of trace replays (policies x traces x configuration values)."""

import json
import os

import click
from flux_lite.cli._complete import PolicyChoice
from flux_lite.cli.replay import COMPARED

from flux_lite import config as configmod
from flux_lite import study, workload
from flux_lite.errors import UsageError
from flux_lite.sched import registry


def _table(runs, keys):
    """A line per point: its trace, policy and values, then replay's compared figures."""
    head = ["TRACE", "POLICY"] + keys + [name.upper().replace(" ", "_") for name, _ in COMPARED]
    rows = [[os.path.basename(r["trace"]), r["policy"]] + [str(r["params"][k]) for k in keys]
            + [show(r["summary"]) for _, show in COMPARED] for r in runs]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.ljust(w) if i < 2 + len(keys) else x.rjust(w)
                               for i, (x, w) in enumerate(zip(line, widths))).rstrip() for line in [head] + rows)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--policy", type=PolicyChoice(multiple=True), default=None, metavar="POLICY[,POLICY...]",
              help=f"Policies of the grid (default: the configuration's, else {registry.default_policy()}).")
@click.option("--set", "grid", multiple=True, metavar="KEY=VALUE[,VALUE...]",
              help="A configuration key and its values in the grid (e.g. sched.queue-depth=8,32); repeatable.")
@click.option("-c", "--config", "config_file", metavar="FILE|DIR", type=click.Path(),
              help="The configuration every point starts from.")
@click.option("--nodes", type=click.IntRange(1, 65536), default=None, help="Nodes of each replay's instance.")
@click.option("--cores-per-node", type=click.IntRange(1, 4096), default=None, help="Cores per node.")
@click.option("--limit", type=click.IntRange(1, None), default=None, metavar="N",
              help="Replay only the first N replayable jobs of each trace.")
@click.option("--users", type=click.Choice(["synthetic", "local"]), default="synthetic", show_default=True,
              help="Trace users as userN, or as the local users of their numbers.")
@click.option("--queue-map", metavar="N=NAME,...", help="Trace queue numbers (or partition:N) to queues.")
@click.option("-j", "--parallel", type=click.IntRange(1, 1024), metavar="N",
              help="Replays at once on this machine (default: one per core).")
@click.option("-o", "--out-dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Write each point's per-job rows, summary and configuration to DIR.")
@click.option("--on-flux", is_flag=True, help="Submit each point as a job to the Flux instance `flux` reaches.")
@click.option("--flux", "flux_cmd", default="flux", show_default=True, metavar="PATH",
              help="The flux command --on-flux runs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per point.")
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
def sweep(policy, grid, config_file, nodes, cores_per_node, limit, users, queue_map, parallel, out_dir, on_flux,
          flux_cmd, as_json, traces):
    """Replay every trace under every policy and every combination of the
    --set values, and print a table of their summaries: on this machine's
    cores, or as jobs of a real Flux instance (--on-flux)."""
    if on_flux and not out_dir:
        raise UsageError("--on-flux needs --out-dir (a directory the Flux jobs write to)")
    if "-" in traces:
        raise UsageError("a sweep reads each trace several times: name files, not -")
    params = study.parse_grid(list(grid))
    base = configmod.load_file(config_file) if config_file else None
    points = study.grid(list(traces), policy or [None], params, base)
    common = dict(nodes=nodes, cores_per_node=cores_per_node, limit=limit, names=users,
                  queue_map=workload.parse_queue_map(queue_map) if queue_map else None)
    if on_flux:
        runs = study.run_on_flux(points, common, out_dir, flux=flux_cmd)
    else:
        runs = study.run_sweep(points, common, parallel, out_dir)
    keys = [k for k, _ in params]
    if as_json:
        for r in runs:
            extra = {"flux_jobid": r["flux_jobid"]} if "flux_jobid" in r else {}
            click.echo(json.dumps(dict(r["summary"], trace=os.path.basename(r["trace"]), params=r["params"],
                                       skipped=r["skipped"], **extra), sort_keys=True))
    else:
        click.echo(_table(runs, keys))
