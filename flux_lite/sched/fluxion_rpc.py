"""sched-fluxion-resource's requests (`sched-fluxion-resource.METHOD`) on its
resource graph: what `flux ion-resource` and Fluxion's tests ask, answered
as flux-sched's resource module answers (resource/modules/resource.cpp).

`handle(graph, method, payload, now)` is the whole interface: the module
that owns the graph (sched-fluxion-resource) passes each request here and
saves the graph when `changed(method)` says the request may have changed it.
Errors are protocol errors with Fluxion's errno and, where Fluxion sends
one, its message (ENOENT unknown job, EBUSY, ENODEV unsatisfiable, EINVAL).

R as the module sends it in a match or update response is the text its
rv1_nosched writer prints (`json_dumps(JSON_INDENT(0))` and a newline):
R_lite entries grouped by identical children, ordered by the children's text,
then nodelist, properties (when any), starttime, expiration.

The find criteria (resource/evaluators/expr_eval_*.cpp): predicates
`status=up|down`, `sched-now=allocated|free`, `sched-future=reserved|free`,
`property=NAME`, `jobid-alloc|jobid-span|jobid-tag|jobid-reserved=JOBID`,
`agfilter=true|false`, `names=HOSTLIST`, joined by `and`, `or` or a bare
space (and), with parentheses; evaluated left to right, without precedence.
A vertex is reported when it satisfies the criteria or has a reported child;
a down, allocated or reserved vertex makes its descendants so.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from errno import EBUSY, EINVAL, ENODEV, ENOENT
from typing import Any, Callable

from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError
from flux_lite.formats import jobid as jobidfmt
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.sched.fluxion_graph import RESOURCE_DEFAULTS, ResourceGraph, _bits

# requests that may change the graph (the module saves it after them)
WRITES = frozenset(("match", "update", "cancel", "partial-cancel", "stats-clear", "set_status",
                    "set_property", "remove_property", "add_subgraph", "remove_subgraph"))
FIND_FORMATS = ("rv1_nosched", "rv1", "jgf")


def changed(method: str) -> bool:
    return method in WRITES


def handle(graph: ResourceGraph, method: str, payload: dict[str, Any], now: float) -> Any:
    """The response to sched-fluxion-resource.METHOD, or a protocol error."""
    fn = _METHODS.get(method)
    if fn is None:
        raise rfc27.error(38, f"Unknown service method 'sched-fluxion-resource.{method}'")
    return fn(graph, payload if isinstance(payload, dict) else {}, now)


# -- payload fields ---------------------------------------------------------------------------


def _field(payload: dict, key: str, kind: type | tuple[type, ...]) -> Any:
    value = payload.get(key)
    if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise rfc27.error(rfc27.EPROTO, "Protocol error")
    return value


def _jobid(payload: dict) -> int:
    return _field(payload, "jobid", int)


def _parse_jobspec(text: str) -> Any:
    """A jobspec as the module reads it (yaml-cpp: YAML, so JSON too)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise rfc27.error(EINVAL, str(exc)) from None


def _parse_R(text: str) -> dict:
    try:
        R = json.loads(text)
    except ValueError:
        raise rfc27.error(EINVAL, "Invalid argument") from None
    if not isinstance(R, dict):
        raise rfc27.error(EINVAL, "Invalid argument")
    return R


# -- R as the rv1_nosched writer prints it ------------------------------------------------------


def _jansson(value: Any) -> str:
    # jansson's JSON_INDENT(0): ", " and ": " separators, no newlines
    return json.dumps(value, separators=(", ", ": "))


def R_object(graph: ResourceGraph, picked: dict[int, tuple[int, int]], start: int, end: int) -> dict | None:
    """The rv1_nosched writer's R of the given vertices (rank -> core/gpu masks);
    None when no core or gpu is among them."""
    groups: dict[str, list[int]] = {}
    for rank in sorted(picked):
        c, g = picked[rank]
        children = {}
        if c:
            children["core"] = str(IDset.from_mask(c))
        if g:
            children["gpu"] = str(IDset.from_mask(g))
        if not children:
            continue
        groups.setdefault(_jansson(children), []).append(rank)
    if not groups:
        return None
    rlite = [{"rank": str(IDset(ranks)), "children": json.loads(key)} for key, ranks in sorted(groups.items())]
    ranks = sorted(r for rs in groups.values() for r in rs)
    execution: dict[str, Any] = {
        "R_lite": rlite,
        "nodelist": [Hostlist([graph.by_rank[r].host for r in ranks]).encode()],
    }
    props: dict[str, str] = {}
    chosen = IDset(ranks)
    for name, pranks in sorted(graph.properties_R.items()):
        common = pranks & chosen
        if common:
            props[name] = str(common)
    for path, kv in sorted(graph.props.items()):
        v = _vertex(graph, path)
        if v is not None and v.type == "node" and v.rank in chosen:
            for key, value in kv.items():
                prop = f"{key}={value}" if value else key
                props[prop] = str(IDset(set(IDset.parse(props[prop])) | {v.rank})) if prop in props \
                    else str(v.rank)
    if props:
        execution["properties"] = props
    execution["starttime"] = start
    execution["expiration"] = end
    return {"version": 1, "execution": execution}


def R_text(graph: ResourceGraph, picked: dict[int, tuple[int, int]], start: int, end: int) -> str:
    R = R_object(graph, picked, start, end)
    return "" if R is None else _jansson(R) + "\n"


def _vertex(graph: ResourceGraph, path: str) -> Any:
    try:
        return graph.vertex(path)
    except Exception:
        return None


def _match_R_text(graph: ResourceGraph, R: dict | None, fallback_nodes: dict | None = None) -> str:
    if R is None:
        return ""
    ex = R.get("execution", {})
    nodes = fallback_nodes if fallback_nodes is not None else graph._nodes_of(R)
    return R_text(graph, nodes, int(ex.get("starttime") or 0), int(math.ceil(ex.get("expiration") or 0)))


# -- jobs ------------------------------------------------------------------------------------------


def _next_jobid(graph: ResourceGraph, payload: dict, now: float) -> dict:
    return {"jobid": max(graph.jobs) + 1 if graph.jobs else 0}


def _response(jobid: int, status: str, at: int, overhead: float, R: str) -> dict:
    return {"jobid": jobid, "status": status, "overhead": overhead, "R": R, "at": at}


def _match(graph: ResourceGraph, payload: dict, now: float) -> dict:
    cmd = _field(payload, "cmd", str)
    jobid = _jobid(payload)
    jobspec = _parse_jobspec(_field(payload, "jobspec", str))
    if cmd == "without_allocating_future":
        # the earliest fit, now or reserved later, booked on a copy only
        trial = ResourceGraph.from_state(copy.deepcopy(graph.to_state()))
        trial_id = max(trial.jobs) + 1 if trial.jobs else 0
        try:
            m = trial.match("allocate_orelse_reserve", trial_id, jobspec, now)
        except FluxLiteError as exc:
            graph._stat("failed", -1)
            raise rfc27.error(exc.errno or EINVAL, os.strerror(exc.errno or EINVAL)) from None
        graph._stat("succeeded", -1)
        job = trial.jobs[trial_id]
        return _response(-1, "MATCHED", m.at, m.overhead, R_text(graph, job.nodes, job.at, job.end))
    if cmd not in ("allocate", "allocate_with_satisfiability", "allocate_orelse_reserve", "without_allocating"):
        raise rfc27.error(EINVAL, "Invalid argument")
    try:
        m = graph.match(cmd, jobid, jobspec, now)
    except FluxLiteError as exc:
        if cmd == "allocate_with_satisfiability" and exc.errno in (EBUSY, ENODEV):
            # the satisfiability check after the failed match counts too
            graph._stat("succeeded" if exc.errno == EBUSY else "failed", jobid)
        # the module answers a failed match with the errno alone
        raise rfc27.error(exc.errno or EINVAL, os.strerror(exc.errno or EINVAL)) from None
    if cmd == "without_allocating":
        return _response(-1, "MATCHED", m.at, m.overhead, _match_R_text(graph, m.R))
    job = graph.jobs[m.jobid]
    return _response(m.jobid, m.status, m.at, m.overhead, R_text(graph, job.nodes, job.at, job.end))


def _update(graph: ResourceGraph, payload: dict, now: float) -> dict:
    jobid = _jobid(payload)
    R = _parse_R(_field(payload, "R", str))
    m = graph.update(jobid, R, now)
    job = graph.jobs[jobid]
    return _response(jobid, "ALLOCATED", m.at, m.overhead, R_text(graph, job.nodes, job.at, job.end))


def _info(graph: ResourceGraph, payload: dict, now: float) -> dict:
    jobid = _jobid(payload)
    status, at, overhead = graph.info(jobid)
    return {"jobid": jobid, "status": status, "at": at, "overhead": overhead}


def _cancel(graph: ResourceGraph, payload: dict, now: float) -> dict:
    graph.cancel(_jobid(payload))
    return {}


def _partial_cancel(graph: ResourceGraph, payload: dict, now: float) -> dict:
    jobid = _jobid(payload)
    R = _parse_R(_field(payload, "R", str))
    job = graph.jobs.get(jobid)
    if job is not None and any(rank not in job.nodes for rank in graph._nodes_of(R)):
        # vertices the job no longer holds: the traverser fails half-way and
        # leaves the job in the ERROR state (info says so)
        job.status = "ERROR"
        raise rfc27.error(EINVAL, "Invalid argument")
    return {"full-removal": 1 if graph.partial_cancel(jobid, R) else 0}


# -- statistics and parameters ---------------------------------------------------------------------


def _stats(graph: ResourceGraph, payload: dict, now: float) -> dict:
    stats = graph.stats()
    for which in ("succeeded", "failed"):
        m = stats["match"][which]
        if not m["njobs-reset"]:
            # 0 in a fresh module, -1 once the statistics were cleared (load-and-dmesg.txt)
            m["max-match-jobid"] = m["max-match-iters"] = -1 if "reset" in graph.match_stats else 0
    stats["graph-uptime"] = int(now - graph.load_time)
    # the reset time rides in the persisted match statistics
    reset = graph.match_stats.get("reset") or [int(graph.load_time)]
    stats["time-since-reset"] = int(now - reset[0])
    return stats


def _stats_clear(graph: ResourceGraph, payload: dict, now: float) -> None:
    graph.stats_clear()
    graph.match_stats["reset"] = [int(now)]
    return None


def _params(graph: ResourceGraph, payload: dict, now: float) -> dict:
    # every option, an unset one as null (resource_match_opts.cpp's jsonify)
    return {"params": {key: graph.options.get(key) for key in RESOURCE_DEFAULTS}}


# -- status and properties -------------------------------------------------------------------------


def _set_status(graph: ResourceGraph, payload: dict, now: float) -> None:
    path, status = payload.get("resource_path"), payload.get("status")
    if not isinstance(path, str) or not isinstance(status, str):
        raise rfc27.error(EINVAL, "malformed RPC")
    if _vertex(graph, path) is None:
        raise rfc27.error(EINVAL, f"could not find path '{path}' in resource graph")
    if status not in ("up", "down"):
        raise rfc27.error(EINVAL, f"unrecognized status '{status}'")
    graph.set_status(path, status)
    return None


def _paths(payload: dict, key: str) -> list[str]:
    value = payload.get(key)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        if not value:
            raise rfc27.error(EINVAL, f"{key} array cannot be empty")
        if not all(isinstance(p, str) for p in value):
            raise rfc27.error(EINVAL, f"{key} array must contain only strings")
        return value
    raise rfc27.error(EINVAL, f"{key} must be a string or array of strings")


def _require_vertex(graph: ResourceGraph, path: str) -> None:
    """ENOENT, in the property requests' words, for a path not in the graph."""
    if _vertex(graph, path) is None:
        raise rfc27.error(ENOENT, f"Couldn't find '{path}' in resource graph")


def _set_property(graph: ResourceGraph, payload: dict, now: float) -> dict:
    paths = _paths(payload, "sp_resource_path")
    keyval = payload.get("sp_keyval")
    if not isinstance(keyval, str):
        raise rfc27.error(EINVAL, "could not unpack payload")
    pos = keyval.find("=")
    if pos <= 0 or pos == len(keyval) - 1:
        raise rfc27.error(EINVAL, "Incorrect format, use set-property <resource> PROPERTY=VALUE")
    key, value = keyval[:pos], keyval[pos + 1:]
    # path by path, as Fluxion: those before an unknown one keep the property
    for path in paths:
        _require_vertex(graph, path)
        graph.set_property(path, key, value)
    return {}


def _remove_property(graph: ResourceGraph, payload: dict, now: float) -> dict:
    paths = _paths(payload, "resource_path")
    key = payload.get("key")
    if not isinstance(key, str):
        raise rfc27.error(EINVAL, "could not unpack payload")
    for path in paths:
        _require_vertex(graph, path)
        graph.remove_property(path, key)
    return {}


def _vertex_properties(graph: ResourceGraph, path: str) -> dict[str, str]:
    """A vertex's properties: a node's from R (value ""), then those set."""
    v = graph.vertex(path)
    props: dict[str, str] = {}
    if v.type == "node":
        for name, ranks in graph.properties_R.items():
            if v.rank in ranks:
                props[name] = ""
    props.update(graph.properties_of(path))
    return props


def _get_property(graph: ResourceGraph, payload: dict, now: float) -> dict:
    path, key = payload.get("gp_resource_path"), payload.get("gp_key")
    if not isinstance(path, str) or not isinstance(key, str):
        raise rfc27.error(EINVAL, "could not unpack payload")
    _require_vertex(graph, path)
    props = _vertex_properties(graph, path)
    if key not in props:
        raise rfc27.error(ENOENT, f"Property '{key}' was not found for resource {path}")
    return {"values": [props[key]]}


def _ns_info(graph: ResourceGraph, payload: dict, now: float) -> dict:
    _field(payload, "rank", int)
    _field(payload, "type-name", str)
    _field(payload, "id", int)
    # the rv1exec reader remaps no id: the remapper knows none
    raise rfc27.error(ENOENT, "No such file or directory")


def _subgraph(graph: ResourceGraph, payload: dict, now: float) -> dict:
    raise rfc27.error(EINVAL, "subgraphs (JGF) are not supported by flux-lite's sched-fluxion-resource")


# -- find --------------------------------------------------------------------------------------


class _Vtx:
    """What the criteria see of one vertex, with its ancestors' overrides."""

    __slots__ = ("path", "type", "name", "rank", "down", "allocated", "reserved", "alloc_jobs", "rsv_jobs",
                 "span_jobs", "tag_jobs", "props")

    def __init__(self, path: str, type_: str, name: str, rank: int) -> None:
        self.path, self.type, self.name, self.rank = path, type_, name, rank
        self.down = self.allocated = self.reserved = False
        self.alloc_jobs: set[int] = set()
        self.rsv_jobs: set[int] = set()
        self.span_jobs: set[int] = set()
        self.tag_jobs: set[int] = set()
        self.props: set[str] = set()


_PREDICATES = ("status", "sched-now", "sched-future", "jobid-alloc", "jobid-span", "jobid-tag", "jobid-reserved",
               "agfilter", "names", "property")


def _parse_jobid(text: str) -> int | None:
    try:
        return jobidfmt.decode(text)
    except ValueError:
        return None


def _leaf_valid(key: str, value: str) -> bool:
    lc = value.lower()
    if key == "status":
        return lc in ("up", "down")
    if key == "sched-now":
        return lc in ("allocated", "free")
    if key == "sched-future":
        return lc in ("reserved", "free")
    if key in ("jobid-alloc", "jobid-span", "jobid-tag", "jobid-reserved"):
        return _parse_jobid(value) is not None
    if key == "agfilter":
        return lc in ("true", "t", "false", "f")
    if key == "names":
        try:
            Hostlist.parse(lc)
        except ValueError:
            return False
        return True
    if key == "property":
        return len(lc) > 0
    return False


def _leaf_eval(key: str, value: str, v: _Vtx) -> bool:
    lc = value.lower()
    if key == "status":
        return v.down if lc == "down" else not v.down
    if key == "sched-now":
        return v.allocated if lc == "allocated" else not v.allocated
    if key == "sched-future":
        return v.reserved if lc == "reserved" else not v.reserved
    if key == "jobid-alloc":
        return _parse_jobid(value) in v.alloc_jobs
    if key == "jobid-reserved":
        return _parse_jobid(value) in v.rsv_jobs
    if key == "jobid-span":
        return _parse_jobid(value) in v.span_jobs
    if key == "jobid-tag":
        return _parse_jobid(value) in v.tag_jobs
    if key == "agfilter":
        return lc in ("true", "t")
    if key == "names":
        return v.name in set(Hostlist.parse(lc))
    return lc in v.props  # property


Expr = Callable[[_Vtx], bool]


def _leaf(key: str, value: str) -> Expr:
    def run(v: _Vtx) -> bool:
        return _leaf_eval(key, value, v)

    return run


def _ws(e: str, at: int) -> int:
    while at < len(e) and e[at] in " \t":
        at += 1
    return at


def _closing(e: str, at: int) -> int:
    bal, pa = 1, at + 1
    while bal:
        nxt = [i for i in (e.find("(", pa), e.find(")", pa)) if i >= 0]
        if not nxt:
            raise rfc27.error(EINVAL, "Invalid argument")
        pa = min(nxt)
        bal += -1 if e[pa] == ")" else 1
        pa += 1
    return pa


def _compile(e: str) -> Expr:
    """The criteria as a predicate over vertices (EINVAL when Fluxion's
    parser or validator refuses them)."""
    terms: list[tuple[str, Expr]] = []
    at = 0
    op = "and"
    last = len(e.rstrip(" \t"))
    first = True
    while first or at < last:
        if not first:
            if e[at] not in " \t":
                raise rfc27.error(EINVAL, "Invalid argument")
            nws = _ws(e, at)
            end = nws
            while end < len(e) and e[end] not in " \t":
                end += 1
            word = e[nws:end]
            if word in ("and", "or"):
                op, at = word, end
            else:
                op = "and"
        first = False
        tok = _ws(e, at)
        if tok >= len(e):
            raise rfc27.error(EINVAL, "Invalid argument")
        if e[tok] == "(":
            end = _closing(e, tok)
            sub = _compile(e[tok + 1:end - 1])
            terms.append((op, sub))
        else:
            end = tok
            while end < len(e) and e[end] not in " \t":
                end += 1
            leaf = e[tok:end]
            key, eq, value = leaf.partition("=")
            if not eq or key not in _PREDICATES or not _leaf_valid(key, value):
                raise rfc27.error(EINVAL, "Invalid argument")
            terms.append((op, _leaf(key, value)))
        at = end

    def run(v: _Vtx) -> bool:
        result = terms[0][1](v)
        for o, t in terms[1:]:
            r = t(v)
            result = (result and r) if o == "and" else (result or r)
        return result

    return run


def _agfilter(criteria: str) -> bool:
    """Whether the criteria ask for aggregate filters (the last agfilter= wins)."""
    value = None
    for word in criteria.replace("(", " ").replace(")", " ").split():
        key, eq, x = word.partition("=")
        if eq and key == "agfilter":
            value = x.lower() in ("true", "t")
    return bool(value)


def find(graph: ResourceGraph, criteria: str, now: float, fmt: str = "rv1_nosched") -> dict | None:
    """The R (format rv1_nosched, or rv1 with its JGF "scheduling" key) or the
    JGF (format jgf) of the vertices the criteria select; None when none."""
    expr, agfilter = _compile(criteria), _agfilter(criteria)
    jobid_pred = _jobid_predicate(criteria)
    t = int(now)
    alloc_now: dict[int, tuple[int, int]] = {}
    alloc_by_job: dict[int, dict[int, tuple[int, int]]] = {}
    rsv_by_job: dict[int, dict[int, tuple[int, int]]] = {}
    rsv_any: dict[int, tuple[int, int]] = {}
    for jobid, job in graph.jobs.items():
        if job.status == "ALLOCATED" and job.at <= t < job.end:
            alloc_by_job[jobid] = job.nodes
            for r, (c, g) in job.nodes.items():
                bc, bg = alloc_now.get(r, (0, 0))
                alloc_now[r] = (bc | c, bg | g)
        elif job.status == "RESERVED" or job.at > t:
            rsv_by_job[jobid] = job.nodes
            for r, (c, g) in job.nodes.items():
                bc, bg = rsv_any.get(r, (0, 0))
                rsv_any[r] = (bc | c, bg | g)

    def jobs_on(table: dict[int, dict[int, tuple[int, int]]], rank: int, kind: int, i: int | None) -> set[int]:
        out = set()
        for jobid, nodes in table.items():
            cg = nodes.get(rank)
            if cg is None:
                continue
            if i is None or (cg[kind] >> i) & 1:
                out.add(jobid)
        return out

    def whole(node: Any, masks: tuple[int, int]) -> bool:
        # a node's own schedule holds only whole-node (exclusive) bookings
        return bool(node.cores | node.gpus) and masks == (node.cores, node.gpus)

    def job_masks(rank: int) -> tuple[int, int]:
        """What the job the criteria name holds on rank (for agfilter)."""
        job = graph.jobs.get(jobid_pred) if jobid_pred is not None else None
        return job.nodes.get(rank, (0, 0)) if job is not None else (0, 0)

    cluster = _Vtx("/cluster0", "cluster", "cluster0", -1)
    cluster.down = graph._path_down("/cluster0")
    cluster.props = set(graph.properties_of("/cluster0"))
    cluster.span_jobs = set(alloc_by_job) | set(rsv_by_job)
    cluster.tag_jobs = set(cluster.span_jobs)
    picked: dict[int, tuple[int, int]] = {}
    jnodes: list[dict] = []
    jedges: list[dict] = []
    ncores = ngpus = nnodes_used = used_cores = used_gpus = 0
    any_node = False
    for node in graph.nodes:
        npath = f"/cluster0/{node.host}"
        nv = _Vtx(npath, "node", node.host, node.rank)
        nv.props = set(_vertex_properties(graph, npath))
        now_masks = alloc_now.get(node.rank, (0, 0))
        nv.down = cluster.down or node.rank in graph.down_ranks or graph._path_down(npath)
        nv.allocated = cluster.allocated or whole(node, now_masks)
        nv.reserved = cluster.reserved or whole(node, rsv_any.get(node.rank, (0, 0)))
        nv.alloc_jobs = {j for j in jobs_on(alloc_by_job, node.rank, 0, None)
                         if whole(node, alloc_by_job[j][node.rank])}
        nv.rsv_jobs = {j for j in jobs_on(rsv_by_job, node.rank, 0, None) if whole(node, rsv_by_job[j][node.rank])}
        nv.span_jobs = jobs_on(alloc_by_job, node.rank, 0, None) | jobs_on(rsv_by_job, node.rank, 0, None)
        nv.tag_jobs = set(nv.span_jobs)
        cmask = gmask = 0
        children: list[str] = []
        for kind, mask, name in ((0, node.cores, "core"), (1, node.gpus, "gpu")):
            for k, i in enumerate(_bits(mask)):
                cv = _Vtx(f"{npath}/{name}{i}", name, f"{name}{i}", node.rank)
                cv.props = set(graph.properties_of(cv.path))
                cv.down = nv.down or graph._path_down(cv.path)
                busy = (now_masks[kind] >> i) & 1
                rsv = (rsv_any.get(node.rank, (0, 0))[kind] >> i) & 1
                cv.allocated = nv.allocated or bool(busy)
                cv.reserved = nv.reserved or bool(rsv)
                cv.alloc_jobs = jobs_on(alloc_by_job, node.rank, kind, i)
                cv.rsv_jobs = jobs_on(rsv_by_job, node.rank, kind, i)
                cv.tag_jobs = cv.alloc_jobs | cv.rsv_jobs
                # cores and gpus have no pruning filter: under agfilter they never report
                if expr(cv) and not agfilter:
                    if kind == 0:
                        cmask |= 1 << i
                    else:
                        gmask |= 1 << i
                    uid = node.uniq_id + 1 + (k if kind == 0 else node.ncores + k)
                    jnodes.append(_jgf_vertex(uid, name, name, i, node.rank, cv.path, None))
                    jedges.append({"source": str(node.uniq_id), "target": str(uid)})
                    children.append(str(uid))
        node_c, node_g = node.cores.bit_count(), node.gpus.bit_count()
        ncores += node_c
        ngpus += node_g
        jc = job_masks(node.rank)
        held = jc if jobid_pred is not None else now_masks
        used_cores += held[0].bit_count()
        used_gpus += held[1].bit_count()
        nnodes_used += 1 if whole(node, held) else 0
        if expr(nv) or children:
            if cmask or gmask:
                picked[node.rank] = (cmask, gmask)
            ag = {"core": f"used:{held[0].bit_count()}, total:{node_c}"} if agfilter else None
            base = re.sub(r"\d+$", "", node.host) or node.host
            jnodes.append(_jgf_vertex(node.uniq_id, "node", base, node.id, node.rank, npath, ag, node.host))
            jedges.append({"source": "0", "target": str(node.uniq_id)})
            any_node = True
        else:
            # the node's cores reported nothing, and neither does it: drop its edges
            jedges = [e for e in jedges if e["source"] != str(node.uniq_id)]
    if any_node or expr(cluster):
        ag = None
        if agfilter:
            ag = {"core": f"used:{used_cores}, total:{ncores}"}
            if ngpus:
                ag["gpu"] = f"used:{used_gpus}, total:{ngpus}"
            ag["node"] = f"used:{nnodes_used}, total:{len(graph.nodes)}"
        jnodes.append(_jgf_vertex(0, "cluster", "cluster", 0, -1, "/cluster0", ag))
    if fmt == "jgf":
        return {"graph": {"nodes": jnodes, "edges": jedges}} if jnodes else None
    R = R_object(graph, picked, 0, 0)
    if R is not None and fmt == "rv1":
        R["scheduling"] = {"graph": {"nodes": jnodes, "edges": jedges}}
    return R


def _jgf_vertex(uid: int, type_: str, basename: str, ident: int, rank: int, path: str, agfilter: dict | None,
                name: str | None = None) -> dict:
    """One JGF vertex as Fluxion's writer emits it: basename when it is not
    the type, name when it is not basename+id."""
    meta: dict[str, Any] = {"type": type_}
    if basename != type_:
        meta["basename"] = basename
    if name is not None and name != f"{basename}{ident}":
        meta["name"] = name
    meta.update({"id": ident, "rank": rank, "exclusive": True, "paths": {"containment": path}})
    if agfilter is not None:
        meta["agfilter"] = agfilter
    return {"id": str(uid), "metadata": meta}


def _jobid_predicate(criteria: str) -> int | None:
    """The job a jobid-* predicate names (Fluxion's find takes the last)."""
    jobid = None
    for word in criteria.replace("(", " ").replace(")", " ").split():
        key, eq, x = word.partition("=")
        if eq and key in ("jobid-alloc", "jobid-span", "jobid-tag", "jobid-reserved"):
            jobid = _parse_jobid(x)
    return jobid


def _find(graph: ResourceGraph, payload: dict, now: float) -> dict:
    criteria = _field(payload, "criteria", str)
    fmt = payload.get("format", "rv1_nosched")
    if fmt not in FIND_FORMATS:
        raise rfc27.error(EINVAL, f"find format '{fmt}' is not supported by flux-lite (rv1_nosched, rv1, jgf)")
    return {"R": find(graph, criteria, now, fmt)}


def _status(graph: ResourceGraph, payload: dict, now: float) -> dict:
    return {"all": find(graph, "status=up or status=down", now), "down": find(graph, "status=down", now),
            "allocated": find(graph, "sched-now=allocated", now)}


_METHODS: dict[str, Callable[[ResourceGraph, dict, float], Any]] = {
    "next_jobid": _next_jobid,
    "match": _match,
    "update": _update,
    "info": _info,
    "cancel": _cancel,
    "partial-cancel": _partial_cancel,
    "stats-get": _stats,
    "stats-clear": _stats_clear,
    "params": _params,
    "set_status": _set_status,
    "set_property": _set_property,
    "remove_property": _remove_property,
    "get_property": _get_property,
    "ns-info": _ns_info,
    "find": _find,
    "status": _status,
    "add_subgraph": _subgraph,
    "remove_subgraph": _subgraph,
}
