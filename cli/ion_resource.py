"""flux-lite ion-resource: Fluxion's front end to sched-fluxion-resource
(flux-sched's `flux ion-resource`), as Fluxion's tests and admins use it.

Every subcommand is one request to the module (`flux_lite.services.fluxion`);
this file reads the files named, prints the responses in Fluxion's layouts
and turns errors into Fluxion's lines: `<OSError class>: error(<errno>):
<message>` on standard output (where flux-ion-resource.py prints them), exit
3 for ENOENT, 16 for EBUSY, 19 for ENODEV, 2 for a jobspec that is not YAML,
1 otherwise.
"""

from __future__ import annotations

import errno
import json
import sys
import time
from typing import Any, NoReturn

import click
from flux_lite.cli.common import instance
from flux_lite.cli.params import JOBID
from flux_lite.cli.words import prog

from flux_lite.errors import FluxLiteError
from flux_lite.services import fluxion

RESOURCE = fluxion.RESOURCE
WIDTH = 80
_EXIT = {errno.ENOENT: 3, errno.EBUSY: 16, errno.ENODEV: 19}


def _oserror_line(num: int, message: str) -> str:
    # Python picks OSError's subclass from the errno (FileNotFoundError for 2, ...)
    name = type(OSError(num, message)).__name__
    return f"{name}: error({num}): {message}"


def _fail(num: int, message: str) -> NoReturn:
    click.echo(_oserror_line(num, message))
    sys.exit(_EXIT.get(num, 1))


def _rpc(topic: str, payload: dict[str, Any] | None = None) -> Any:
    inst = instance()  # no instance is flux-lite's own error, not the module's
    try:
        return fluxion.request(inst, topic, payload)
    except FluxLiteError as exc:
        _fail(exc.errno or errno.EINVAL, exc.message)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except OSError as exc:
        _fail(exc.errno or errno.EIO, exc.strerror or str(exc))


def _yaml_file(path: str) -> Any:
    """The file read as YAML (so JSON too), as Fluxion's client reads a jobspec."""
    import yaml

    try:
        with open(path, encoding="utf-8") as stream:
            # from the stream, so that a parse error names the file as Fluxion's does
            return yaml.safe_load(stream)
    except OSError as exc:
        _fail(exc.errno or errno.EIO, exc.strerror or str(exc))
    except yaml.YAMLError as exc:
        click.echo(f"Parsing error:  {exc}")
        sys.exit(2)


def _jobspec_text(path: str) -> str:
    """The jobspec file re-dumped as YAML, as Fluxion's client sends it."""
    import yaml

    return yaml.dump(_yaml_file(path))


def _json_file(path: str) -> Any:
    try:
        return json.loads(_read(path))
    except ValueError as exc:
        # Fluxion's client leaves this to a traceback, whose last line this is
        click.echo(f"json.decoder.JSONDecodeError: {exc}", err=True)
        sys.exit(1)


def heading() -> str:
    return "{:20} {:20} {:20} {:20}".format("JOBID", "STATUS", "AT", "OVERHEAD (Secs)")


def body(resp: dict[str, Any]) -> str:
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(resp["at"]))
    return "{:20} {:20} {:20} {:20}".format(str(resp["jobid"]), resp["status"], at, str(resp["overhead"]))


def _job_report(resp: dict[str, Any], title: str) -> None:
    click.echo(heading())
    click.echo(body(resp))
    click.echo("=" * WIDTH)
    click.echo(title)
    click.echo(resp["R"])


# (name, help) of every subcommand, in Fluxion's order
SUBCOMMANDS = (
    ("match", "Find the best matching resources for a jobspec."),
    ("update", "Update the resource database."),
    ("info", "Print info on a single job."),
    ("stats", "Print overall performance statistics."),
    ("stats-cancel", "Clear overall performance statistics."),
    ("cancel", "Cancel an allocated or reserved job."),
    ("partial-cancel", "Partially cancel an allocated job."),
    ("find", "Find resources matching with a criteria."),
    ("status", "Display resource status."),
    ("set-status", "Set up/down status of a resource vertex."),
    ("set-property", "Set property-key=value for specified resource."),
    ("remove-property", "Remove property for specified resource."),
    ("get-property", "Get value for specified resource and property-key."),
    ("ns-info", "Get remapped ID given raw ID seen by the reader."),
    ("params", "Display the module's parameter values."),
    ("add-subgraph", "Add a subgraph to the resource graph."),
    ("remove-subgraph", "Remove a subgraph from the resource graph."),
)


def _help_text(prog: str) -> str:
    """The top-level help Fluxion's argparse parser prints (80 columns)."""
    import textwrap

    choices = "{" + ",".join(name for name, _ in SUBCOMMANDS) + "}"
    indent = " " * (len("usage: ") + len(prog) + 1)
    desc = textwrap.fill("Front-end command for sched-fluxion-resource module for testing. Provide 4 "
                         f"sub-commands. For sub-command usage, {prog} <sub-command> --help", 78)
    lines = [f"usage: {prog} [-h] [-v]", indent + choices, indent + "...", "", desc, "", "options:",
             "  -h, --help            show this help message and exit",
             "  -v, --verbose         be verbose", "", "Available Commands:", "  Valid commands", "",
             f"  {choices}", " " * 24 + "Additional help"]
    lines += [f"    {name:<20}{text}" if len(name) <= 18 else f"    {name}\n{' ' * 24}{text}"
              for name, text in SUBCOMMANDS]
    return "\n".join(lines)


def _require_subcommand(ctx: click.Context) -> None:
    if ctx.invoked_subcommand is None:
        click.echo(_help_text(prog("ion-resource", ctx)))
        click.echo("\nA subcommand is required.")
        sys.exit(1)


@click.group(invoke_without_command=True)
@click.option("-v", "--verbose", is_flag=True, help="be verbose")
@click.pass_context
def ion_resource(ctx, verbose):
    """Front-end command for sched-fluxion-resource module for testing."""
    _require_subcommand(ctx)


ion_resource.argparse_no_dest = True  # type: ignore[attr-defined]


# -- match ----------------------------------------------------------------------------------------


@ion_resource.group(invoke_without_command=True)
@click.pass_context
def match(ctx):
    """Find the best matching resources for a jobspec."""
    # argparse's nested parser has no required subcommand either: the top help
    _require_subcommand(ctx)


match.argparse_no_dest = True  # type: ignore[attr-defined]


def _match_command(cmd: str, doc: str) -> None:
    @match.command(cmd, help=doc)
    @click.argument("jobspec", metavar="Jobspec", type=click.Path(dir_okay=True))
    def run(jobspec):
        text = _jobspec_text(jobspec)
        jobid = _rpc(f"{RESOURCE}.next_jobid")["jobid"]
        resp = _rpc(f"{RESOURCE}.match", {"cmd": cmd, "jobid": jobid, "jobspec": text})
        _job_report(resp, "MATCHED RESOURCES:")


_match_command("allocate", "Allocate the best matching resources if found.")
_match_command("allocate_with_satisfiability",
               "Allocate the best matching resources if found. If not found, check jobspec's overall "
               "satisfiability.")
_match_command("allocate_orelse_reserve",
               "Allocate the best matching resources if found. If not found, reserve them instead at "
               "earliest time.")
_match_command("without_allocating",
               "Return the best matching resources if found. Do not allocate or reserve them. Will only "
               "return resources available immediately.")
_match_command("without_allocating_future",
               "Return the best matching resources if found. Do not allocate or reserve them. Will return "
               "both resources available immediately and resources only available in the future.")


@match.command("satisfiability")
@click.argument("jobspec", metavar="Jobspec")
def satisfiability(jobspec):
    """Check jobspec's overall satisfiability."""
    loaded = _yaml_file(jobspec)
    _rpc("feasibility.check", {"jobspec": loaded})
    click.echo("=" * WIDTH)
    click.echo("Satisfiable request")
    click.echo("=" * WIDTH)


# -- jobs -----------------------------------------------------------------------------------------


@ion_resource.command()
@click.argument("rv1", metavar="RV1")
@click.argument("jobid", metavar="Jobid", type=JOBID)
def update(rv1, jobid):
    """Update the resource database."""
    R = json.dumps(_json_file(rv1))
    resp = _rpc(f"{RESOURCE}.update", {"jobid": int(jobid), "R": R})
    _job_report(resp, "UPDATED RESOURCES:")


@ion_resource.command()
@click.argument("jobid", metavar="Jobid", type=JOBID)
def info(jobid):
    """Print info on a single job."""
    resp = _rpc(f"{RESOURCE}.info", {"jobid": int(jobid)})
    click.echo(heading())
    click.echo(body(resp))


@ion_resource.command()
@click.argument("jobid", metavar="Jobid", type=JOBID)
def cancel(jobid):
    """Cancel an allocated or reserved job."""
    _rpc(f"{RESOURCE}.cancel", {"jobid": int(jobid)})


@ion_resource.command("partial-cancel")
@click.argument("jobid", metavar="Jobid", type=JOBID)
@click.argument("rv1exec", metavar="rv1exec")
def partial_cancel(jobid, rv1exec):
    """Partially cancel an allocated job."""
    R = json.dumps(_json_file(rv1exec))
    _rpc(f"{RESOURCE}.partial-cancel", {"jobid": int(jobid), "R": R})


# -- statistics -----------------------------------------------------------------------------------


def _py(value: Any) -> str:
    """A value as Python's print() shows it."""
    return str(value)


@ion_resource.command()
def stats():
    """Print overall performance statistics."""
    resp = _rpc(f"{RESOURCE}.stats-get")
    lines = [
        ("Num. of Vertices: ", resp["V"], None),
        ("Num. of Edges: ", resp["E"], None),
        ("Num. of Vertices by Rank: ", json.dumps(resp["by_rank"]), None),
        ("Graph Load Time: ", resp["load-time"], "Secs"),
        ("Graph Upime: ", resp["graph-uptime"], "Secs"),
        ("Time Since Stats Reset: ", resp["time-since-reset"], "Secs"),
    ]
    for kind, labels in (("succeeded", ("Num. of Total Jobs Successfully Matched: ",
                                        "Num. of Jobs Successfully Matched Since Reset: ",
                                        "Min. Successful Match Time: ",
                                        "Max. Successful Match Time: ",
                                        "Avg. Successful Match Time: ",
                                        "Successful Match Variance: ")),
                         ("failed", ("Num. of Jobs with Failed Matches: ",
                                     "Num. of Jobs with Failed Matches Since Reset: ",
                                     "Min. Match Time of Failed Matches: ",
                                     "Max. Match Time of Failed Matches: ",
                                     "Avg. Match Time of Failed Matches: ",
                                     "Match Variance of Failed Matches: "))):
        m = resp["match"][kind]
        st = m["stats"]
        lines += [
            (labels[0], m["njobs"], None),
            (labels[1], m["njobs-reset"], None),
            ("Jobid corresponding to max match time: ", m["max-match-jobid"], None),
            ("Match iterations corresponding to max match time: ", m["max-match-iters"], None),
            (labels[2], st["min"], "Secs"),
            (labels[3], st["max"], "Secs"),
            (labels[4], st["avg"], "Secs"),
            (labels[5], st["variance"], "Secs^2"),
        ]
    for label, value, unit in lines:
        click.echo(" ".join(p for p in (label, _py(value), unit) if p is not None))


@ion_resource.command("stats-cancel")
def stats_cancel():
    """Clear overall performance statistics."""
    _rpc(f"{RESOURCE}.stats-clear")


# -- graph queries --------------------------------------------------------------------------------


@ion_resource.command()
@click.argument("criteria", metavar="Criteria")
@click.option("--format", "fmt", metavar="FORMAT", help="Writer format for find query")
@click.option("-q", "--quiet", is_flag=True, help="be quiet")
def find(criteria, fmt, quiet):
    """Find resources matching with a criteria."""
    payload: dict[str, Any] = {"criteria": criteria}
    if fmt:
        payload["format"] = fmt
    resp = _rpc(f"{RESOURCE}.find", payload)
    if not quiet:
        click.echo("CRITERIA")
        click.echo("'" + criteria + "'")
        click.echo("=" * WIDTH)
        click.echo("MATCHED RESOURCES:")
    click.echo(json.dumps(resp["R"]))


@ion_resource.command()
def status():
    """Display resource status."""
    resp = _rpc(f"{RESOURCE}.status")
    click.echo("CRITERIA")
    click.echo("all: 'status=up or status=down'")
    click.echo("down: 'status=down'")
    click.echo("allocated: 'sched-now=allocated'")
    click.echo("=" * WIDTH)
    click.echo("MATCHED RESOURCES:")
    click.echo(json.dumps(resp))


@ion_resource.command("set-status")
@click.argument("resource_path")
@click.argument("status")
def set_status(resource_path, status):
    """Set up/down status of a resource vertex."""
    _rpc(f"{RESOURCE}.set_status", {"resource_path": resource_path, "status": status})


class _PathsThenOne(click.Command):
    """PATH [PATH...] LAST, parsed as argparse parses nargs="+" then one:
    a single operand is a path, and LAST is what is missing."""

    def parse_args(self, ctx, args):
        operands = [a for a in args if not a.startswith("-")]
        if len(operands) == 1 and len(args) == 1:
            raise click.MissingParameter(ctx=ctx, param=self.params[-1])
        return super().parse_args(ctx, args)


@ion_resource.command("set-property", cls=_PathsThenOne)
@click.argument("paths", metavar="ResourcePath", nargs=-1, required=True)
@click.argument("keyval", metavar="PropertyKeyVal")
def set_property(paths, keyval):
    """Set property-key=value for specified resource."""
    _rpc(f"{RESOURCE}.set_property", {"sp_resource_path": list(paths), "sp_keyval": keyval})


@ion_resource.command("remove-property", cls=_PathsThenOne)
@click.argument("paths", metavar="ResourcePath", nargs=-1, required=True)
@click.argument("key", metavar="PropertyKey")
def remove_property(paths, key):
    """Remove property for specified resource."""
    _rpc(f"{RESOURCE}.remove_property", {"resource_path": list(paths), "key": key})


@ion_resource.command("get-property")
@click.argument("path", metavar="ResourcePath")
@click.argument("key", metavar="PropertyKey")
def get_property(path, key):
    """Get value for specified resource and property-key."""
    resp = _rpc(f"{RESOURCE}.get_property", {"gp_resource_path": path, "gp_key": key})
    click.echo(f"{key} = {resp['values']!r}")


@ion_resource.command("ns-info")
@click.argument("rank", metavar="Rank", type=int)
@click.argument("type_name", metavar="Type")
@click.argument("ident", metavar="Id", type=int)
def ns_info(rank, type_name, ident):
    """Get remapped ID given raw ID seen by the reader."""
    resp = _rpc(f"{RESOURCE}.ns-info", {"rank": rank, "type-name": type_name, "id": ident})
    click.echo(resp["id"])


@ion_resource.command()
def params():
    """Display the module's parameter values."""
    click.echo(json.dumps(_rpc(f"{RESOURCE}.params")))


@ion_resource.command("add-subgraph")
@click.argument("subgraph", metavar="Subgraph")
def add_subgraph(subgraph):
    """Add a subgraph to the resource graph."""
    _rpc(f"{RESOURCE}.add_subgraph", {"subgraph": json.dumps(_json_file(subgraph))})


@ion_resource.command("remove-subgraph")
@click.argument("subgraph_path", metavar="SubgraphPath")
def remove_subgraph(subgraph_path):
    """Remove a subgraph from the resource graph."""
    _rpc(f"{RESOURCE}.remove_subgraph", {"subgraph_path": subgraph_path})


# Fluxion's order (usage lines and choices list them so)
ion_resource.commands = {name: ion_resource.commands[name] for name, _ in SUBCOMMANDS}
