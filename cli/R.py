"""flux-lite R: read, make and combine RFC 20 resource sets (as flux R).

Every subcommand but encode and parse-config reads one or more R objects
from stdin; the result goes to stdout as librlist writes it. No instance is
opened.
"""

import json
import os
import socket
import sys

import click
from flux_lite.cli.words import echo_error

from flux_lite import config as configmod
from flux_lite.errors import ConfigError, FluxLiteError, FormatError, HostlistError, IdsetError
from flux_lite.formats import jsontext
from flux_lite.formats import rset as rsetmod
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset


@click.group("R", context_settings={"help_option_names": ["-h", "--help"]})
def R():
    """Read, generate, and process RFC 20 Resource Set objects."""


def _fail(message):
    raise FluxLiteError(message)


def _json_error(exc):
    """A json error as jansson words its position ("... on line N")."""
    return f"{exc.msg} on line {exc.lineno}"


def _read_all():
    """The R objects on stdin, one after the other; reading stops at the
    first text that is not JSON (as flux R reads them), which is an error
    only before any R was read."""
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    out = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            if not out:
                msg = "'[' or '{' expected near end of file" if pos >= len(text) else _json_error(exc)
                _fail(f"Failed to read an R object: {msg}")
            return out
        try:
            out.append(rsetmod.rlist_from_dict(obj))
        except FormatError as exc:
            _fail(f"Failed to decode R on stdin: {exc}")


def _transform(name, fn, minimum=1):
    """All R on stdin folded with fn (a union, a difference...)."""
    sets = _read_all()
    if len(sets) < minimum:
        _fail(f"{name} requires at least {minimum} resource sets")
    result = sets[0]
    for rs in sets[1:]:
        result = fn(result, rs)
    return result


def _put(rs):
    click.echo(rsetmod.rlist_encode(rs))


def _properties(rs, specs):
    """NAME[:RANKS] specs (all ranks without RANKS) assigned to rs; a name
    given twice keeps its last ranks."""
    wanted = {}
    for spec in specs:
        name, sep, ranks = spec.partition(":")
        wanted[name] = ranks if sep else str(rs.ranks)
    try:
        return rsetmod.rlist_assign_properties(rs, wanted)
    except FormatError as exc:
        _fail(f"failed to assign properties: {exc}")


def _local_cores():
    """The cores of this machine this process may run on (hwloc's count:
    one per core, not per hardware thread)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in cpus:
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(base + "physical_package_id") as f1, open(base + "core_id") as f2:
                cores.add((f1.read().strip(), f2.read().strip()))
        except OSError:
            cores.add(("", str(cpu)))
    return IDset.range(0, len(cores) - 1)


@R.command()
@click.option("-r", "--ranks", metavar="IDSET",
              help="Generate an R with ranks in IDSET. If not provided then either match the number of "
                   "nodes given in --hosts option, or emit a single rank: \"0\"")
@click.option("-c", "--cores", metavar="IDS",
              help="Assign cores with IDS to each rank in R. Default is to assign a single core \"0\" "
                   "to each rank.")
@click.option("-g", "--gpus", metavar="IDS",
              help="Assign gpu resources with IDS to each rank in R. Default is to assign no gpu resources.")
@click.option("-H", "--hosts", metavar="HOSTS",
              help="Generate R with nodelist set to HOSTS. By default, duplicate the local hostname to "
                   "match the number of ranks given in --ranks.")
@click.option("-p", "--property", "properties", metavar="NAME[:RANKS]", multiple=True,
              help="Assign property NAME to target ranks RANKS. If RANKS is not specified then the "
                   "property applies to all defined ranks. This option may be specified multiple times "
                   "for each property")
@click.option("-l", "--local", is_flag=True, help="Generate child resources from local system")
@click.option("-f", "--xml", metavar="FILE", help="Generate child resources from hwloc XML")
def encode(ranks, cores, gpus, hosts, properties, local, xml):
    """Encode RFC 20 R objects for testing."""
    cores, gpus = cores or "", gpus or ""
    if not cores and not gpus:
        cores = "0"
    elif local or xml is not None:
        _fail("do not specify --cores or --gpus with --local or --xml")
    if ranks is None:
        hostlist = _hostlist(hosts, 0 if hosts is not None else 1)
        rank_ids = IDset.range(0, len(hostlist) - 1)
    else:
        try:
            rank_ids = IDset.parse(ranks)
        except IdsetError:
            _fail(f"Failed to decode ranks='{ranks}' as idset")
        hostlist = _hostlist(hosts, len(rank_ids))
    try:
        core_ids, gpu_ids = IDset.parse(cores), IDset.parse(gpus)
    except IdsetError as exc:
        _fail(f"rlist_append rank={rank_ids.first() if rank_ids else 0}: {exc}")
    if xml is not None:
        try:
            with open(xml if xml != "-" else "/dev/stdin", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            _fail(f"{xml}: {exc.strerror}")
        try:
            core_ids, gpu_ids = rsetmod.hwloc_xml_children(text)
        except FormatError as exc:
            _fail(f"rlist_from_hwloc: {exc}")
    elif local:
        core_ids, gpu_ids = _local_cores(), IDset()
    nodes = {rank: (host, core_ids, gpu_ids) for rank, host in zip(rank_ids, hostlist)}
    rs = Rset.from_nodes(nodes)
    if properties:
        rs = _properties(rs, properties)
    _put(rs)


def _hostlist(hosts, count):
    """--hosts, else this host's name count times."""
    if hosts is None:
        return [socket.gethostname()] * count
    try:
        hl = list(Hostlist.parse(hosts))
    except HostlistError:
        _fail(f"invalid hostlist '{hosts}'")
    if count and len(hl) != count:
        _fail(f"hostname count in '{hosts}' does not match nranks ({count})")
    return hl


@R.command()
def append():
    """Append multiple R objects on stdin. Emits an error if resource sets are not disjoint."""
    sets = _read_all()
    result = Rset.from_nodes({})
    for rs in sets:
        try:
            result = rsetmod.rlist_append(result, rs)
        except FormatError as exc:
            _fail(str(exc))
    _put(result)


@R.command()
def diff():
    """Return the set difference of multiple R objects on stdin. (i.e. (R1 - R2) - R3 ...)"""
    _put(_transform("diff", rsetmod.rlist_diff, 2))


@R.command()
def intersect():
    """Return the intersection of all R objects on stdin"""
    _put(_transform("intersect", rsetmod.rlist_intersect, 2))


@R.command()
def remap():
    """Return the union of all R objects on stdin with ranks re-numbered starting from index 0."""
    _put(rsetmod.rlist_remap(_transform("union", rsetmod.rlist_union)))


@R.command()
@click.argument("hostlist", required=False)
def rerank(hostlist):
    """Return the union of all R objects on stdin with ranks re-mapped based on their index in HOSTLIST."""
    rs = _transform("union", rsetmod.rlist_union)
    if hostlist is None:
        _fail("Must provide a hostlist for re-ranking")
    try:
        _put(rsetmod.rlist_rerank(rs, hostlist))
    except FormatError as exc:
        _fail(str(exc))


@R.command()
@click.option("-s", "--short", is_flag=True, help="Print short-form representation of R")
@click.option("-n", "--nodelist", is_flag=True, help="Print nodelist in hostlist form from R, if any")
@click.option("-r", "--ranks", is_flag=True, help="Print ranks in idset form from R, if any")
@click.option("-c", "--count", metavar="TYPE", help="Print count of resource TYPE in R (ranks, core, gpu)")
@click.option("-i", "--include", metavar="RANKS", help="Include only specified ranks.")
@click.option("-x", "--exclude", metavar="RANKS", help="Exclude specified ranks.")
@click.option("-p", "--properties", metavar="LIST", help="Filter on properties")
def decode(short, nodelist, ranks, count, include, exclude, properties):
    """Return the union of all R objects on stdin and print details or summary of the result.

    By default an RFC 20 JSON object is emitted on stdout, unless one or more options below are used
    """
    rs = _transform("union", rsetmod.rlist_union)
    if properties is not None:
        try:
            rs = _keep_scheduling(rs, rs.copy_constraint({"properties": [p for p in properties.split(",") if p]}))
        except FormatError as exc:
            _fail(f"Invalid property constraint: {exc}")
    if include is not None:
        try:
            rs = _keep_scheduling(rs, rs.copy_ranks(IDset.parse(include)))
        except IdsetError:
            _fail(f"Invalid ranks option: '{include}'")
    if exclude is not None:
        try:
            rs = rs.remove_ranks(IDset.parse(exclude))
        except IdsetError:
            _fail(f"Invalid idset in --exclude option: {exclude}")
    lines = []
    if short:
        lines.append(rsetmod.rlist_dumps(rs))
    if nodelist:
        if not rs.has_nodelist and rs.nnodes:
            _fail("rlist_nodelist: R has no host names")
        lines.append(rs.nodelist_text())
    if ranks:
        lines.append(str(rs.ranks))
    if count is not None:
        counts = {"node": rs.nnodes, "core": rs.ncores, "gpu": rs.ngpus}
        lines.append(str(counts.get(count, 0)))
    if not lines:
        lines.append(rsetmod.rlist_encode(rs))
    for line in lines:
        click.echo(line)


def _keep_scheduling(orig, rs):
    """A copy keeps the scheduling key only when it holds a rank (librlist's copies)."""
    return rs if rs.nnodes or orig.scheduling is None else rs.with_scheduling(None)


@R.command()
def verify():
    """Takes 2 R objects on stdin and verifies that the resources in each rank present in R2 has at
    least resources present for the same rank in R1."""
    sets = _read_all()
    if len(sets) != 2:
        _fail("verify requires exactly 2 R objects on stdin")
    rc, message = rsetmod.rlist_verify(sets[0], sets[1])
    if rc != 0:
        echo_error(message)
    if rc < 0:
        raise SystemExit(1)


@R.command("set-property")
@click.argument("specs", nargs=-1, metavar="PROPERTY:RANKS [PROPERTY:RANKS]...")
def set_property(specs):
    """Set properties on R object on stdin, emitting the result on stdout"""
    rs = _transform("union", rsetmod.rlist_union)
    _put(_properties(rs, specs))


@R.command("parse-config")
@click.argument("path")
def parse_config(path):
    """Read config from resource.config array"""
    try:
        cfg = configmod.load_file(path, check=False)
    except ConfigError as exc:
        _fail(f"flux_conf_parse: {exc}")
    resource = cfg.get("resource")
    if not isinstance(resource, dict):
        _fail("Config file error: " + ("Object item not present: resource" if resource is None
                                       else f"Expected object, got {rsetmod._jansson_type(resource)}"))
    for key in ("path", "scheduling"):
        if key in resource and not isinstance(resource[key], str):
            _fail(f"Config file error: Expected string, got {rsetmod._jansson_type(resource[key])}")
    if "config" in resource:
        try:
            rs = rsetmod.rlist_from_config(resource["config"])
        except FormatError as exc:
            _fail(f"Config file error: {exc}")
    elif "path" in resource:
        rpath = resource["path"]
        try:
            rs = rsetmod.rlist_from_dict(_load_json(rpath))
        except FormatError as exc:
            _fail(f"{rpath}: {exc}")
    else:
        _fail("Config file error: resource.config or resource.path must be defined")
    if "scheduling" in resource:
        try:
            rs = rs.with_scheduling(_load_json(resource["scheduling"]))
        except FormatError as exc:
            _fail(f"resource.scheduling: {resource['scheduling']}: {exc}")
    _put(rs)


def _load_json(path):
    try:
        return jsontext.load_file(path)
    except jsontext.JSONFileError as exc:
        # (flux R words only a parse error with its line)
        raise FormatError(f"{exc.text} on line {exc.line}" if exc.parse else exc.text) from None
