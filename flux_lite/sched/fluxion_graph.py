"""Fluxion's resource graph: what sched-fluxion-resource holds and matches.

A model of flux-sched's resource module as an admin sees it (rv1exec reader,
``containment`` subsystem): the vertices ``/cluster0``, ``/cluster0/HOST``,
``/cluster0/HOST/core<i>`` and ``/cluster0/HOST/gpu<i>``; each node's id is
the numeric suffix of its hostname (``node07`` -> 7, none -> -1), not its
rank; every job (allocated or reserved) books specific cores and gpus for a
window ``[at, end)`` of whole seconds; matching follows the match policy.

The API the modules and ``flux ion-resource`` call (stable)::

    graph = ResourceGraph.create(rset, params, now, expiration)   # at module load
    graph = ResourceGraph.from_state(state)   # state: what to_state() returned
    graph.to_state() -> dict                  # JSON-able, kept in the KVS

    graph.match(op, jobid, jobspec, now, request=None) -> Match
        (request: the jobspec's ResourceRequest when the caller read it already)
        op: "allocate", "allocate_with_satisfiability", "allocate_orelse_reserve",
            "without_allocating", "satisfiability"
        Match: .status ("ALLOCATED", "RESERVED", "MATCHED"), .at (int), .overhead
               (float), .R (an R dict, integer starttime/expiration; None for
               satisfiability), .jobid
        errors (protocol.error, a FluxLiteError with .errno): EBUSY (not now /
        cannot be reserved), ENODEV "Unsatisfiable request", EINVAL (a jobspec
        or duration Fluxion refuses, the job already known), ...
    graph.update(jobid, R, now) -> Match      # book exactly R's vertices (hello,
                                              # ion-resource update); same R again: ok;
                                              # another R for a known job: EINVAL
    graph.info(jobid) -> (status, at, overhead)   # ENOENT when unknown
    graph.cancel(jobid)                       # ENOENT when unknown
    graph.partial_cancel(jobid, R) -> bool    # True: nothing of the job is left
    graph.cancel_reservations() -> list[int]  # every RESERVED job dropped (a queue loop)
    graph.params() -> dict                    # the raw option strings (ion-resource params)
    graph.set_status(path, "up"|"down"); graph.status_of(path) -> "up"|"down"
    graph.set_property(path, key, value); graph.get_property(path, key) -> str|None;
    graph.remove_property(path, key); graph.properties_of(path) -> dict
    graph.paths() -> list[str]                # every vertex, in creation order
    graph.vertex(path) -> Vertex              # .path .type .rank .id (node id / local id)
                                              # .host .uniq_id
    graph.jobs -> {jobid: GraphJob}           # .status .at .end .nodes {rank: (cmask, gmask)}
    graph.allocated_R(now) / graph.down_R() / graph.all_R()   # R dicts (status/find)
    graph.stats() -> dict                     # sched-fluxion-resource.stats-get
    graph.stats_clear()

Within a command, the loaded module and its graph:

    from flux_lite.sched import fluxion_resource
    mod = fluxion_resource.get(broker)        # None when the module is not loaded
    mod.graph                                 # the ResourceGraph above
    mod.dirty = True                          # after changing it: saved when the command ends
    broker.rpc("sched-fluxion-resource.<method>", payload)   # FluxionResource.handle:
        # match {cmd, jobid, jobspec}, update {jobid, R}, info {jobid}, cancel {jobid},
        # partial-cancel {jobid, R}, params, stats-get, stats-clear, set_status {resource_path, status},
        # status, set_property {sp_resource_path, sp_keyval}, get_property {gp_resource_path, gp_key},
        # remove_property {resource_path, key}  (payload keys: a first guess at Fluxion's; the
        # ion-resource command may change them: the graph's methods above are the stable API)

State between commands: a command runs in one SQLite transaction, and each
module keeps its state in the KVS. The resource module's graph is the key
``sched-fluxion-resource.state`` (STATE_KEY below) and its arguments
``sched-fluxion-resource.module`` (MODULE_KEY); load_graph(kvs) /
save_graph(kvs, graph) read and write them, and fluxion_resource.py's module
object (what the broker routes ``sched-fluxion-resource.*`` requests to) keeps
one graph per command and saves it when the command ends.

Errors carry Flux's errno (ENOENT, EBUSY, ENODEV, EINVAL) as
protocol.error does, so a caller answers as Fluxion's module would.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from errno import EBUSY, EINVAL, ENODEV, ENOENT
from typing import Any

from flux_lite import protocol as rfc27
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset, RsetError
from flux_lite.sched.request import ResourceRequest, request_from_jobspec

STATE_KEY = "sched-fluxion-resource.state"
MODULE_KEY = "sched-fluxion-resource.module"
STATE_VERSION = 1

# resource/config/system_defaults.hpp: a graph without expiration spans 100 years
DEFAULT_SPAN = 3153600000

MATCH_OPS = ("allocate", "allocate_with_satisfiability", "allocate_orelse_reserve", "without_allocating",
             "satisfiability")
NAMED_POLICIES = ("first", "firstnodex", "high", "low", "lonode", "hinode", "lonodex", "hinodex",
                  "locality", "variation")
UNSUPPORTED_POLICIES = ("locality", "variation")

# the resource module's options, in the order its params answer lists them
# (resource_match_opts.cpp), with the module's defaults
RESOURCE_DEFAULTS: dict[str, Any] = {
    "load-file": None,
    "load-format": "rv1exec",
    "load-allowlist": None,
    "policy": "first",
    "match-format": "rv1_nosched",
    "subsystems": "containment",
    "reserve-vtx-vec": 0,
    "prune-filters": "ALL:core,ALL:node",
    "update-interval": 0,
    "traverser": "simple",
}


class Policy:
    """A match policy as flux-sched's factory builds it: an ordering
    (low/high), node-centric or not, node-exclusive or not, and first-fit."""

    __slots__ = ("name", "high", "node_centric", "node_exclusive", "first")

    def __init__(self, name: str, high: bool, node_centric: bool, node_exclusive: bool, first: bool) -> None:
        self.name = name
        self.high = high
        self.node_centric = node_centric
        self.node_exclusive = node_exclusive
        self.first = first


_NAMED = {
    "first": (True, True, False, True),
    "firstnodex": (True, True, True, True),
    "high": (True, False, False, False),
    "low": (False, False, False, False),
    "hinode": (True, True, False, False),
    "lonode": (False, True, False, False),
    "hinodex": (True, True, True, False),
    "lonodex": (False, True, True, False),
}


def make_policy(text: str) -> Policy:
    """The policy a match-policy value names, or a custom one
    ("policy=high node_centric=true node_exclusive=true stop_on_1_matches=true").
    Raises ValueError with Fluxion's words for a value it refuses."""
    if text in UNSUPPORTED_POLICIES:
        raise ValueError(f"match policy ({text}) is not supported by flux-lite")
    named = _NAMED.get(text)
    if named is not None:
        return Policy(text, *named)
    attrs = {"policy": None, "node_centric": "false", "node_exclusive": "false", "stop_on_1_matches": "false"}
    words = text.split()
    if not words:
        raise ValueError(f"Unknown match policy ({text})! ")
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or key not in attrs or (key == "policy" and value not in ("low", "high")) \
                or (key != "policy" and value not in ("true", "false")):
            raise ValueError(f"Unknown match policy ({text})! ")
        attrs[key] = value
    if attrs["policy"] is None:
        raise ValueError(f"Unknown match policy ({text})! ")
    return Policy(text, attrs["policy"] == "high", attrs["node_centric"] == "true",
                  attrs["node_exclusive"] == "true", attrs["stop_on_1_matches"] == "true")


def node_id(hostname: str) -> int:
    """A node vertex's id: the hostname's trailing number (-1 without one)."""
    m = re.search(r"(\d+)$", hostname)
    return int(m.group(1)) if m else -1


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _mask(ids: Any) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


class Vertex:
    __slots__ = ("path", "type", "rank", "id", "host", "uniq_id")

    def __init__(self, path: str, type_: str, rank: int, id_: int, host: str, uniq_id: int) -> None:
        self.path = path
        self.type = type_
        self.rank = rank
        self.id = id_
        self.host = host
        self.uniq_id = uniq_id


class Node:
    """One node of the graph: its rank, hostname, id and children (masks)."""

    __slots__ = ("rank", "host", "id", "uniq_id", "cores", "gpus", "ncores", "ngpus")

    def __init__(self, rank: int, host: str, uniq_id: int, cores: int, gpus: int) -> None:
        self.rank = rank
        self.host = host
        self.id = node_id(host)
        self.uniq_id = uniq_id
        self.cores = cores
        self.gpus = gpus
        self.ncores = cores.bit_count()
        self.ngpus = gpus.bit_count()


class GraphJob:
    """A job the graph holds: ALLOCATED or RESERVED vertices over [at, end)."""

    __slots__ = ("jobid", "status", "at", "end", "overhead", "nodes", "R")

    def __init__(self, jobid: int, status: str, at: int, end: int, nodes: dict[int, tuple[int, int]],
                 R: dict | None, overhead: float = 0.0) -> None:
        self.jobid = jobid
        self.status = status
        self.at = at
        self.end = end
        self.overhead = overhead
        self.nodes = nodes  # rank -> (core mask, gpu mask)
        self.R = R

    def dump(self) -> list:
        return [self.status, self.at, self.end, self.overhead,
                [[r, c, g] for r, (c, g) in self.nodes.items()], self.R]

    @classmethod
    def load(cls, jobid: int, rec: list) -> GraphJob:
        status, at, end, overhead, nodes, R = rec
        return cls(jobid, status, at, end, {r: (c, g) for r, c, g in nodes}, R, overhead)


class Match:
    __slots__ = ("jobid", "status", "at", "overhead", "R")

    def __init__(self, jobid: int, status: str, at: int, R: dict | None, overhead: float = 0.0) -> None:
        self.jobid = jobid
        self.status = status
        self.at = at
        self.overhead = overhead
        self.R = R

    def __repr__(self) -> str:
        return f"Match({self.jobid}, {self.status}, at={self.at})"


def _ceil(duration: float) -> int:
    return int(math.ceil(duration)) if duration > 0 else 0


class ResourceGraph:
    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.by_rank: dict[int, Node] = {}
        self.jobs: dict[int, GraphJob] = {}
        self.weights: dict[int, int] = {}  # rank -> the node edge's weight once used (else "UINT64_MAX")
        self.down: set[str] = set()  # paths marked down
        # ranks the resource module reports down (drain): by rank, as hostnames may repeat
        self.down_ranks: set[int] = set()
        self.props: dict[str, dict[str, str]] = {}
        self.options: dict[str, Any] = dict(RESOURCE_DEFAULTS)
        self.policy = make_policy("first")
        self.graph_start = 0
        self.graph_end = DEFAULT_SPAN
        self.load_time = 0.0
        self.R: dict = {}
        self.rset: Rset | None = None
        # njobs, njobs since reset, max jobid, max iterations (per outcome)
        self.match_stats: dict[str, list[int]] = {"succeeded": [0, 0, 0, 0], "failed": [0, 0, 0, 0]}
        self.properties_R: dict[str, IDset] = {}
        self._gen = 0  # changes of the bookings or statuses (caches below)
        self._sgen = 0  # changes of the statuses
        self._prof: Any = None
        self._deltas: dict[int, int] = {}  # time -> change of booked cores
        self._wgen = 0  # changes of the weights (first's node order)
        self._order_cache: tuple[int, list[Node]] | None = None
        self._usable_count: tuple[int, int] | None = None
        self._sat_cache: dict[Any, bool] = {}

    # -- construction and persistence ----------------------------------------------

    @classmethod
    def create(cls, rset: Rset, options: dict[str, Any] | None = None, now: float = 0.0,
               expiration: float = 0.0) -> ResourceGraph:
        """The graph of the instance's R (as rv1exec reads it) at module load.
        options: the resource module's options (RESOURCE_DEFAULTS' keys)."""
        g = cls()
        if options:
            g.options.update(options)
        g.policy = make_policy(str(g.options["policy"]))
        g.graph_start = int(now)
        g.graph_end = int(expiration) if expiration and expiration > 0 else g.graph_start + DEFAULT_SPAN
        g.load_time = now
        g.R = rset.to_dict()
        g._build(rset)
        return g

    def _build(self, rset: Rset) -> None:
        self.rset = rset
        uniq = 1  # cluster0 is vertex 0
        for rank, host, cores, gpus in rset.nodes():
            node = Node(rank, host, uniq, cores.as_mask(), gpus.as_mask())
            uniq += 1 + node.ncores + node.ngpus
            self.nodes.append(node)
            self.by_rank[rank] = node
        self.properties_R = {name: rset.ranks_with_property(name) for name in rset.properties}

    def to_state(self) -> dict:
        return {"version": STATE_VERSION, "R": self.R, "options": self.options,
                "graph": [self.graph_start, self.graph_end, self.load_time],
                "jobs": [[jobid] + job.dump() for jobid, job in self.jobs.items()],
                "weights": sorted(self.weights.items()), "down": sorted(self.down),
                "down-ranks": sorted(self.down_ranks),
                "props": self.props, "match-stats": self.match_stats}

    @classmethod
    def from_state(cls, state: dict) -> ResourceGraph:
        g = cls()
        g.options.update(state["options"])
        g.policy = make_policy(str(g.options["policy"]))
        g.graph_start, g.graph_end, g.load_time = state["graph"]
        g.R = state["R"]
        g._build(Rset.from_dict(g.R))
        for rec in state["jobs"]:
            g._book(GraphJob.load(rec[0], rec[1:]))
        g.weights = {r: w for r, w in state["weights"]}
        g.down = set(state["down"])
        g.down_ranks = set(state.get("down-ranks", ()))
        g.props = state["props"]
        g.match_stats = state["match-stats"]
        return g

    # -- vertices ----------------------------------------------------------------------

    def paths(self) -> list[str]:
        out = ["/cluster0"]
        for n in self.nodes:
            out.append(f"/cluster0/{n.host}")
            out.extend(f"/cluster0/{n.host}/core{i}" for i in _bits(n.cores))
            out.extend(f"/cluster0/{n.host}/gpu{i}" for i in _bits(n.gpus))
        return out

    def vertex(self, path: str) -> Vertex:
        """The vertex at path (ENOENT when the graph has none)."""
        parts = path.split("/")
        if path == "/cluster0":
            return Vertex(path, "cluster", -1, 0, "", 0)
        if len(parts) >= 3 and parts[0] == "" and parts[1] == "cluster0":
            for n in self.nodes:
                if n.host != parts[2]:
                    continue
                if len(parts) == 3:
                    return Vertex(path, "node", n.rank, n.id, n.host, n.uniq_id)
                m = re.fullmatch(r"(core|gpu)(\d+)", parts[3]) if len(parts) == 4 else None
                if m:
                    i = int(m.group(2))
                    mask = n.cores if m.group(1) == "core" else n.gpus
                    if mask >> i & 1:
                        offset = 1 + len([b for b in _bits(n.cores) if b < i]) if m.group(1) == "core" \
                            else 1 + n.ncores + len([b for b in _bits(n.gpus) if b < i])
                        return Vertex(path, m.group(1), n.rank, i, n.host, n.uniq_id + offset)
        raise rfc27.error(ENOENT, f"could not find path '{path}' in resource graph")

    def set_status(self, path: str, status: str) -> None:
        if status not in ("up", "down"):
            raise rfc27.error(EINVAL, f"unrecognized status '{status}'")
        self.vertex(path)
        if status == "down":
            self.down.add(path)
        else:
            self.down.discard(path)
        self._changed(status=True)

    def status_of(self, path: str) -> str:
        self.vertex(path)
        return "down" if self._path_down(path) else "up"

    def _path_down(self, path: str) -> bool:
        return any(path == d or path.startswith(d + "/") for d in self.down)

    def set_ranks_status(self, ranks: Any, status: str) -> None:
        """Mark whole nodes (by rank) up or down (the resource module's updates)."""
        for r in ranks:
            if r not in self.by_rank:
                continue
            if status == "down":
                self.down_ranks.add(r)
            else:
                self.down_ranks.discard(r)
        self._changed(status=True)

    def set_property(self, path: str, key: str, value: str) -> None:
        self.vertex(path)
        self.props.setdefault(path, {})[key] = value

    def get_property(self, path: str, key: str) -> str | None:
        self.vertex(path)
        return self.props.get(path, {}).get(key)

    def remove_property(self, path: str, key: str) -> None:
        self.vertex(path)
        props = self.props.get(path)
        if props is not None:
            props.pop(key, None)
            if not props:
                del self.props[path]

    def properties_of(self, path: str) -> dict[str, str]:
        self.vertex(path)
        return dict(self.props.get(path, {}))

    def params(self) -> dict[str, Any]:
        """The options as ion-resource params answers them (unset strings left out)."""
        return {k: v for k, v in self.options.items() if v is not None}

    # -- availability -------------------------------------------------------------------

    def _usable(self, node: Node) -> tuple[int, int] | None:
        """(cores, gpus) of an up node that are up, or None when it is down."""
        if not self.down and not self.down_ranks:
            return node.cores, node.gpus
        base = f"/cluster0/{node.host}"
        if node.rank in self.down_ranks or self._path_down(base):
            return None
        cores, gpus = node.cores, node.gpus
        if self.down:
            for i in _bits(cores):
                if f"{base}/core{i}" in self.down:
                    cores &= ~(1 << i)
            for i in _bits(gpus):
                if f"{base}/gpu{i}" in self.down:
                    gpus &= ~(1 << i)
        return cores, gpus

    def _busy(self, t0: int, t1: int) -> dict[int, tuple[int, int]]:
        """rank -> (cores, gpus) booked by some job during [t0, t1)."""
        busy: dict[int, tuple[int, int]] = {}
        for job in self.jobs.values():
            if job.at < t1 and t0 < job.end:
                for r, (c, g) in job.nodes.items():
                    bc, bg = busy.get(r, (0, 0))
                    busy[r] = (bc | c, bg | g)
        return busy

    def _order(self, cands: list[Node]) -> list[Node]:
        p = self.policy
        if p.first:
            # by_outedges: descending (weight, uniq_id); never-used nodes weigh UINT64_MAX
            top = 1 << 64
            return sorted(cands, key=lambda n: (self.weights.get(n.rank, top), n.uniq_id), reverse=True)
        if p.high:
            return sorted(cands, key=lambda n: (-n.id, n.uniq_id))
        return sorted(cands, key=lambda n: (n.id, n.uniq_id))

    def _pick(self, mask: int, n: int) -> int:
        """n ids of mask: the highest under a high policy (first is one), else the lowest."""
        ids = _bits(mask)
        chosen = ids[-n:] if self.policy.high else ids[:n]
        return _mask(chosen) if n else 0

    def _ordered_nodes(self) -> list[Node]:
        """The nodes in the policy's order (first's changes with the weights)."""
        key = self._wgen if self.policy.first else -1
        cache = self._order_cache
        if cache is None or cache[0] != key:
            cache = self._order_cache = (key, self._order(self.nodes))
        return cache[1]

    def _select(self, req: ResourceRequest, t0: int, t1: int, use_busy: bool, allowed: set[int] | None,
                ) -> dict[int, tuple[int, int]] | None:
        """The vertices the policy picks for req over [t0, t1), or None."""
        busy = self._busy(t0, t1) if use_busy else {}
        exclusive = self.policy.node_exclusive or req.exclusive
        size, gper = req.slot_size, req.gpu_per_slot
        picked: dict[int, tuple[int, int]] = {}
        no_busy = (0, 0)

        def avail(node: Node) -> tuple[int, int, bool] | None:
            if allowed is not None and node.rank not in allowed:
                return None
            usable = self._usable(node)
            if usable is None:
                return None
            bc, bg = busy.get(node.rank, no_busy)
            return usable[0] & ~bc, usable[1] & ~bg, not bc and not bg

        if req.nnodes > 0:
            spn = req.slots_per_node
            for node in self._ordered_nodes():
                a = avail(node)
                if a is None:
                    continue
                c, g, whole = a
                if exclusive:
                    if not whole or node.ncores < spn * size or node.ngpus < spn * gper:
                        continue
                    picked[node.rank] = (c, g)
                else:
                    if c.bit_count() < spn * size or g.bit_count() < spn * gper:
                        continue
                    picked[node.rank] = (self._pick(c, spn * size), self._pick(g, spn * gper))
                if len(picked) == req.nnodes:
                    return picked
            return None
        need = req.nslots
        if exclusive:
            # whole nodes, filled with as many slots as fit
            for node in self._ordered_nodes():
                a = avail(node)
                if a is None:
                    continue
                c, g, whole = a
                fit = self._fit(c, g, size, gper)
                if not whole or fit == 0:
                    continue
                picked[node.rank] = (c, g)
                need -= fit
                if need <= 0:
                    return picked
            return None
        if self.policy.node_centric:
            for node in self._ordered_nodes():
                a = avail(node)
                if a is None:
                    continue
                c, g, _whole = a
                take = min(self._fit(c, g, size, gper), need)
                if take:
                    picked[node.rank] = (self._pick(c, take * size), self._pick(g, take * gper))
                    need -= take
                    if need == 0:
                        return picked
            return None
        nodes_avail = []
        for node in self.nodes:
            a = avail(node)
            if a is not None:
                nodes_avail.append((node, a[0], a[1]))
        # low/high, not node-centric: slots compete across nodes by their
        # cores' own ids (score = sum of ids), ties in vertex creation order
        slots: list[tuple[int, int, int, int, int]] = []  # (score, uniq, rank, cmask, gmask)
        for node, c, g in nodes_avail:
            cids, gids = _bits(c), _bits(g)
            if self.policy.high:
                cids.reverse()
                gids.reverse()
            k = 0
            while (k + 1) * size <= len(cids) and (k + 1) * gper <= len(gids):
                cs = cids[k * size:(k + 1) * size]
                gs = gids[k * gper:(k + 1) * gper]
                score = sum(cs) + sum(gs)
                slots.append((-score if self.policy.high else score, node.uniq_id + k, node.rank,
                              _mask(cs), _mask(gs)))
                k += 1
        if len(slots) < need:
            return None
        slots.sort()
        for _s, _u, rank, cm, gm in slots[:need]:
            pc, pg = picked.get(rank, (0, 0))
            picked[rank] = (pc | cm, pg | gm)
        return picked

    @staticmethod
    def _fit(c: int, g: int, size: int, gper: int) -> int:
        fit = c.bit_count() // size if size else 1 << 30
        if gper:
            fit = min(fit, g.bit_count() // gper)
        return 0 if fit >= 1 << 30 else fit

    def _allowed(self, req: ResourceRequest) -> set[int] | None:
        if not req.constraint or self.rset is None:
            return None
        try:
            return set(self.rset.ranks_matching(req.constraint))
        except RsetError as exc:
            raise rfc27.error(EINVAL, str(exc)) from None

    # -- matching -------------------------------------------------------------------------

    def _request(self, jobspec: Any) -> ResourceRequest:
        try:
            return request_from_jobspec(jobspec)
        except Exception as exc:
            raise rfc27.error(EINVAL, str(exc) or "invalid jobspec") from None

    def duration_of(self, req: ResourceRequest, now: int) -> int:
        """Whole seconds the job books: its duration rounded up; 0 = the rest of
        the graph's span. EINVAL beyond the span (a match error)."""
        d = req.duration or 0.0
        if d < 0:
            raise rfc27.error(EINVAL, "Invalid argument")
        span = self.graph_end - self.graph_start
        if d == 0:
            return max(self.graph_end - now, 1)
        if d > span:
            raise rfc27.error(EINVAL, "Invalid argument")
        return _ceil(d)

    def satisfiable(self, req: ResourceRequest) -> bool:
        key = (repr(req.as_dict()), self._sgen)
        hit = self._sat_cache.get(key)
        if hit is None:
            if len(self._sat_cache) > 4096:
                self._sat_cache.clear()
            hit = self._sat_cache[key] = self._select(req, 0, 1, False, self._allowed(req)) is not None
        return hit

    def match(self, op: str, jobid: int, jobspec: Any, now: float, request: ResourceRequest | None = None) -> Match:
        """request: what jobspec asks, when the caller read it already (then
        jobspec is not read)."""
        if op not in MATCH_OPS:
            raise rfc27.error(EINVAL, f"unknown match op {op}")
        req = request if request is not None else self._request(jobspec)
        if op == "satisfiability":
            if not self.satisfiable(req):
                raise rfc27.error(ENODEV, "Unsatisfiable request")
            return Match(jobid, "MATCHED", int(now), None)
        if op != "without_allocating" and jobid in self.jobs:
            raise rfc27.error(EINVAL, "Invalid argument")
        t = int(now)
        d = self.duration_of(req, t)
        allowed = self._allowed(req)
        need = req.ncores
        picked = None
        if t + d <= self.graph_end and self._fits_count(need, t, t + d):
            picked = self._select(req, t, t + d, True, allowed)
        at = t
        if picked is None and op == "allocate_orelse_reserve":
            for start in self._starts(t):
                if start + d > self.graph_end:
                    break
                # the cores free over the window bound what any placement finds
                if not self._fits_count(need, start, start + d):
                    continue
                picked = self._select(req, start, start + d, True, allowed)
                if picked is not None:
                    at = start
                    break
        if picked is None:
            self._stat("failed", jobid)
            if op in ("allocate_with_satisfiability", "allocate_orelse_reserve") and not self.satisfiable(req):
                raise rfc27.error(ENODEV, "Unsatisfiable request")
            raise rfc27.error(EBUSY, "Device or resource busy")
        R = self.make_R(picked, at, at + d)
        self._stat("succeeded", jobid)
        if op == "without_allocating":
            return Match(-1, "MATCHED", at, R)
        status = "ALLOCATED" if at == t else "RESERVED"
        self._book(GraphJob(jobid, status, at, at + d, picked, R))
        self._use(picked, t)
        return Match(jobid, status, at, R)

    def _book(self, job: GraphJob) -> None:
        """Hold job's vertices (and count its cores in the profile's steps)."""
        self.jobs[job.jobid] = job
        n = sum(c.bit_count() for c, _g in job.nodes.values())
        deltas = self._deltas
        deltas[job.at] = deltas.get(job.at, 0) + n
        deltas[job.end] = deltas.get(job.end, 0) - n
        self._changed()

    def _unbook(self, jobid: int) -> GraphJob | None:
        job = self.jobs.pop(jobid, None)
        if job is not None:
            n = sum(c.bit_count() for c, _g in job.nodes.values())
            deltas = self._deltas
            for t, dn in ((job.at, -n), (job.end, n)):
                v = deltas.get(t, 0) + dn
                if v:
                    deltas[t] = v
                else:
                    deltas.pop(t, None)
            self._changed()
        return job

    def _changed(self, status: bool = False) -> None:
        self._gen += 1
        if status:
            self._sgen += 1

    def _profile(self) -> tuple[list[int], list[int], int]:
        """(times, used cores from each time on, usable cores): the step
        function of booked cores, made once per change of the graph."""
        prof = self._prof
        if prof is None or prof[0] != self._gen:
            deltas = self._deltas
            times = sorted(deltas)
            levels = list(accumulate(deltas[tm] for tm in times))
            usable = self._usable_cores()
            prof = self._prof = (self._gen, times, levels, usable)
        return prof[1], prof[2], prof[3]

    def _usable_cores(self) -> int:
        hit = self._usable_count
        if hit is None or hit[0] != self._sgen:
            usable = 0
            for node in self.nodes:
                u = self._usable(node)
                if u is not None:
                    usable += u[0].bit_count()
            hit = self._usable_count = (self._sgen, usable)
        return hit[1]

    def _fits_count(self, need: int, t0: int, t1: int) -> bool:
        if need <= 0:
            return True
        times, levels, usable = self._profile()
        i = bisect_right(times, t0)
        peak = levels[i - 1] if i else 0
        j = bisect_left(times, t1)
        if j > i:
            peak = max(peak, max(levels[i:j]))
        return usable - peak >= need

    def _starts(self, t: int) -> list[int]:
        """Candidate start times: the ends of what is booked after t."""
        return sorted({job.end for job in self.jobs.values() if job.end > t})

    def _use(self, picked: dict[int, tuple[int, int]], now: int) -> None:
        """A node edge on a match's path weighs its cores free at now (first's order)."""
        busy = self._busy(now, now + 1)
        for rank in picked:
            node = self.by_rank[rank]
            weight = (node.cores & ~busy.get(rank, (0, 0))[0]).bit_count()
            if self.weights.get(rank) != weight:
                self.weights[rank] = weight
                self._wgen += 1

    def _stat(self, which: str, jobid: int) -> None:
        s: Any = self.match_stats[which]
        s[0] += 1
        s[1] += 1
        s[2] = max(s[2], jobid)
        s[3] = max(s[3], 1)

    def make_R(self, picked: dict[int, tuple[int, int]], at: int, end: int) -> dict:
        """R version 1 (rv1_nosched) of the picked vertices, with integer times."""
        nodes = {}
        for rank in sorted(picked):
            c, g = picked[rank]
            nodes[rank] = (self.by_rank[rank].host, IDset.from_mask(c), IDset.from_mask(g))
        props = {}
        if self.properties_R:
            chosen = IDset(nodes)
            for name, ranks in self.properties_R.items():
                if not name.startswith("+") and ranks & chosen:
                    props[name] = ranks & chosen
        R = Rset.from_nodes(nodes, properties=props or None, starttime=float(at), expiration=float(end)).to_dict()
        ex = R["execution"]
        ex["starttime"] = at
        ex["expiration"] = end
        # the rv1_nosched writer's key order, which `flux job info ID R` shows
        order = ("R_lite", "nodelist", "properties", "starttime", "expiration")
        R["execution"] = {**{k: ex[k] for k in order if k in ex}, **{k: v for k, v in ex.items() if k not in order}}
        return R

    # -- jobs ---------------------------------------------------------------------------------

    def info(self, jobid: int) -> tuple[str, int, float]:
        job = self.jobs.get(jobid)
        if job is None:
            raise rfc27.error(ENOENT, "No such file or directory")
        return job.status, job.at, job.overhead

    def cancel(self, jobid: int) -> None:
        if self._unbook(jobid) is None:
            raise rfc27.error(ENOENT, "No such file or directory")

    def cancel_reservations(self) -> list[int]:
        gone = [jobid for jobid, job in self.jobs.items() if job.status == "RESERVED"]
        for jobid in gone:
            self._unbook(jobid)
        return gone

    def _nodes_of(self, R: dict) -> dict[int, tuple[int, int]]:
        try:
            rs = Rset.from_dict(R)
        except (RsetError, TypeError, ValueError, KeyError) as exc:
            raise rfc27.error(EINVAL, str(exc) or "Invalid argument") from None
        out = {}
        for rank, _host, cores, gpus in rs.nodes():
            node = self.by_rank.get(rank)
            c, g = cores.as_mask(), gpus.as_mask()
            if node is None or c & ~node.cores or g & ~node.gpus:
                raise rfc27.error(EINVAL, "Invalid argument")
            out[rank] = (c, g)
        return out

    def partial_cancel(self, jobid: int, R: dict) -> bool:
        """Release R's ranks of the job; True when nothing of it is left."""
        job = self.jobs.get(jobid)
        if job is None:
            raise rfc27.error(ENOENT, "No such file or directory")
        gone = self._nodes_of(R)
        self._unbook(jobid)
        job.nodes = {rank: cg for rank, cg in job.nodes.items() if rank not in gone}
        if not job.nodes:
            return True
        self._book(job)
        return False

    def update(self, jobid: int, R: dict, now: float) -> Match:
        """Book exactly R's vertices for R's window (hello; ion-resource update)."""
        nodes = self._nodes_of(R)
        job = self.jobs.get(jobid)
        if job is not None:
            if job.status == "ALLOCATED" and job.nodes == nodes:
                return Match(jobid, "ALLOCATED", job.at, job.R)
            raise rfc27.error(EINVAL, "Invalid argument")
        ex = R.get("execution", {})
        at = int(ex.get("starttime") or 0)
        end = int(math.ceil(ex.get("expiration") or 0)) or self.graph_end
        busy = self._busy(at, end)
        for rank, (c, g) in nodes.items():
            bc, bg = busy.get(rank, (0, 0))
            if c & bc or g & bg:
                raise rfc27.error(EINVAL, "Invalid argument")
        self._book(GraphJob(jobid, "ALLOCATED", at, end, nodes, R))
        self._use(nodes, int(now))
        return Match(jobid, "ALLOCATED", at, R)

    # -- views -----------------------------------------------------------------------------------

    def _R_of_masks(self, masks: dict[int, tuple[int, int]]) -> dict | None:
        masks = {r: cg for r, cg in masks.items() if cg[0] or cg[1]}
        if not masks:
            return None
        R = self.make_R(masks, 0, 0)
        return R

    def all_R(self) -> dict | None:
        return self._R_of_masks({n.rank: (n.cores, n.gpus) for n in self.nodes})

    def down_R(self) -> dict | None:
        masks = {}
        for n in self.nodes:
            usable = self._usable(n)
            if usable is None:
                masks[n.rank] = (n.cores, n.gpus)
            else:
                masks[n.rank] = (n.cores & ~usable[0], n.gpus & ~usable[1])
        return self._R_of_masks(masks)

    def allocated_R(self, now: float) -> dict | None:
        t = int(now)
        return self._R_of_masks(self._busy(t, t + 1))

    def stats(self) -> dict:
        nv = 1 + sum(1 + n.ncores + n.ngpus for n in self.nodes)
        by_rank: dict[int, list[int]] = {}
        for n in self.nodes:
            by_rank.setdefault(1 + n.ncores + n.ngpus, []).append(n.rank)
        def one(which: str) -> dict:
            s = self.match_stats[which]
            return {"njobs": s[0], "njobs-reset": s[1], "max-match-jobid": s[2] if s[0] else -1,
                    "max-match-iters": s[3] if s[0] else -1,
                    "stats": {"min": 0.0, "max": 0.0, "avg": 0.0, "variance": 0.0}}
        return {"V": nv, "E": nv - 1,
                "by_rank": {str(IDset(ranks).encode()): count for count, ranks in by_rank.items()},
                "load-time": 0.0, "graph-uptime": 0, "time-since-reset": 0,
                "match": {"succeeded": one("succeeded"), "failed": one("failed")}}

    def stats_clear(self) -> None:
        for which in ("succeeded", "failed"):
            self.match_stats[which][1] = 0


def load_graph(kvs: Any) -> ResourceGraph | None:
    """The resource module's graph as the KVS holds it (None when not loaded)."""
    state = kvs.get(STATE_KEY)
    return None if state is None else ResourceGraph.from_state(state)


def save_graph(kvs: Any, graph: ResourceGraph) -> None:
    kvs.put(STATE_KEY, graph.to_state())
