"""R version 1 (RFC 20) resource sets.

An :class:`Rset` is immutable: every operation returns a new set.  Per rank it
holds a hostname, a cores :class:`IDset` and a gpus :class:`IDset`; besides
that, ``properties`` (name -> IDset of ranks, only non-empty entries),
``starttime``/``expiration`` (floats, 0.0 = unset), ``nslots`` (int, 0 =
unset) and the opaque ``scheduling`` value.

Encoding follows flux-core's Python ``Rv1Set._build_dict`` (the R that
sched-simple/fifo/backfill commit): ``R_lite`` entries group ranks with
identical children (consecutive or not) ordered by their lowest rank, then
``starttime``, ``expiration`` (always written), ``nslots`` (if > 0),
``nodelist`` (one compressed hostlist, written when the set carries host
names) and ``properties`` (sorted, only non-empty), and ``scheduling`` at the
top level when present.

R_lite is decoded in one place (:func:`rlite_entries`, then
:func:`rlite_ranks` to merge a rank's entries) and ranks are grouped into
R_lite entries in one place (:func:`group_ranks`); :class:`Rset`, the
scheduler's pool and the resource module use them, and
:func:`property_terms` is the one reading of ``^name`` (RFC 31 property
negation).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from itertools import islice
from operator import itemgetter
from typing import Any

from flux_lite.errors import HostlistError, IdsetError, RsetError
from flux_lite.formats import jsontext
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.limits import MAX_TIME

__all__ = [
    "Rset",
    "PROPERTY_INVALID_CHARS",
    "check_property_name",
    "entry_summary",
    "group_ranks",
    "nodes_summary",
    "one_entry_text",
    "property_terms",
    "rlite_entries",
    "rlite_ids",
    "rlite_nodes",
    "rlite_ranks",
    "rlite_summary",
    "rlite_without",
]

#: Characters not allowed in property names (RFC 20; flux-core rejects
#: ``^&'"`|()``, the RFC also lists ``!``).
PROPERTY_INVALID_CHARS = "!&'\"^`|()"

_EMPTY = IDset()


def check_property_name(name):
    """Raise RsetError if `name` is not a valid RFC 20 property name."""
    if not isinstance(name, str) or not name:
        raise RsetError(f"invalid property name {name!r}")
    for c in name:
        if c in PROPERTY_INVALID_CHARS:
            raise RsetError(f"invalid character '{c}' in property \"{name}\"")


def _as_idset(ids):
    if isinstance(ids, IDset):
        return ids
    if isinstance(ids, str):
        try:
            return IDset.parse(ids)
        except IdsetError as exc:
            raise RsetError(f"invalid idset '{ids}': {exc}") from None
    if isinstance(ids, int):
        return IDset((ids,))
    return IDset(ids)


def _num(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RsetError(f"{what} must be a number")
    try:
        value = float(value)
    except OverflowError:
        raise RsetError(f"{what} is out of range") from None
    if not math.isfinite(value):
        raise RsetError(f"{what} must be finite")
    return value if value > 0 else 0.0


# Rset.from_dict results by R's JSON text (bounded: when full, the older
# half is dropped, see _make_room)
_FROM_DICT_CACHE: dict = {}
_FROM_DICT_CACHE_SIZE = 4096
# the same, by the identity of the R dict parsed (a job's R is one object
# from the scheduler's answer to the job's end); R dicts are never changed
# in place (a resource-update gives the job a new one), and the entry holds
# the dict, so that its id is not reused
_FROM_DICT_BY_ID: dict = {}


def _make_room(cache):
    """Drop the older half of a full cache (dicts keep insertion order). Not
    all of it: the sets still asked for are the recent ones (the R of a job
    started a while ago, read back when it ends and when its row is
    written), and a cleared cache would parse them all again."""
    if len(cache) >= _FROM_DICT_CACHE_SIZE:
        for key in list(islice(cache, len(cache) // 2)):
            del cache[key]


def _remember_object(obj, rs, text=None):
    """text: json.dumps(obj) as this module's to_dict() wrote it (remember_as), or None."""
    _make_room(_FROM_DICT_BY_ID)
    _FROM_DICT_BY_ID[id(obj)] = (obj, rs, text)


def compact_R(obj):
    """json.dumps(obj, separators=(",", ":")) of an R dict. The scheduler's
    R (remember_as) has its text with the default separators already: as
    to_dict() writes them, no string in it can hold ", " or ": " (ids, and
    host lists, which have no spaces) unless it has properties or
    scheduling, so dropping the spaces after them gives the compact text."""
    hit = _FROM_DICT_BY_ID.get(id(obj))
    if hit is not None and hit[0] is obj and hit[2] is not None and "scheduling" not in obj:
        execution = obj.get("execution")
        if type(execution) is dict and "properties" not in execution:
            return hit[2].replace(", ", ",").replace(": ", ":")
    return jsontext.compact(obj)


# -- R_lite: the one decoder and the one grouping ----------------------------------


# the idset texts of R_lite entries read so far, decoded: a scheduler's
# hello reads thousands of Rs made of a few hundred rank and core texts
_RLITE_IDS: dict[str, IDset] = {"": IDset.parse("")}


def rlite_entries(R: Any) -> list[tuple[IDset, IDset, IDset]]:
    """The R_lite entries of R, an R version 1 dict, decoded: a list of
    (ranks, cores, gpus) IDsets, one per entry, as written (a rank may
    appear in several entries). RsetError says what is malformed."""
    try:
        R_lite = R["execution"]["R_lite"]
        version = R["version"]
    except (KeyError, TypeError, IndexError):
        return _rlite_checked(R)  # (it says what is wrong)
    if version != 1 or type(version) is not int or type(R_lite) is not list:
        return _rlite_checked(R)
    get = _RLITE_IDS.get
    out: list[tuple[IDset, IDset, IDset]] = []
    for entry in R_lite:
        # an entry of texts read before is not checked again
        try:
            children = entry["children"]
            ranks, cores, gpus = get(entry["rank"]), get(children["core"]), get(children.get("gpu", ""))
        except (KeyError, TypeError, AttributeError):
            return _rlite_checked(R)
        if ranks is None and cores is not None and gpus is not None and type(entry["rank"]) is str:
            # a rank set not seen yet beside known children (a reload's
            # thousands of one-node jobs): parse just it
            try:
                ranks = _rlite_ids(entry["rank"])
            except IdsetError:
                ranks = None
        if ranks is None or cores is None or gpus is None:
            ranks, cores, gpus = _rlite_entry(len(out), entry)
        out.append((ranks, cores, gpus))
    return out


# -- R as text: the usual allocation, read without decoding it ---------------------

_NUMBER = r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_HOST = r'"[^"\\\x00-\x1f]*"'
# the compact text flux-lite writes of an R of one R_lite entry (compact_R
# of to_dict()'s keys, in its order): a reload's thousands of running jobs
_ONE_ENTRY_R = re.compile(
    r'\{"version":1,"execution":\{"R_lite":\[\{"rank":"([0-9,-]+)","children":\{"core":"([0-9,-]+)"'
    r'(?:,"gpu":"([0-9,-]+)")?\}\}\],"starttime":' + _NUMBER + r',"expiration":' + _NUMBER
    + r'(?:,"nslots":[0-9]+)?,"nodelist":\[' + _HOST + "(?:," + _HOST + r")*\]\}\}")


def one_entry_text(text: str) -> tuple[str, str, str, float] | None:
    """(rank, core and gpu idset texts, expiration) of the JSON text of an
    R whose one R_lite entry is a rank set with cores (and gpus), written
    compact in flux-lite's key order, its times within [0, MAX_TIME]: a
    valid Rv1 (check_R passes it). None for any other text, which the
    caller decodes. The idset texts are not parsed here."""
    fields = _ONE_ENTRY_READ.get(text)
    if fields is not None:
        return fields
    m = _ONE_ENTRY_R.fullmatch(text)
    if m is None:
        return None
    ranks, cores, gpus, start, end = m.groups()
    expiration = float(end)
    if not (0 <= float(start) <= MAX_TIME and 0 <= expiration <= MAX_TIME):
        return None
    if len(_ONE_ENTRY_READ) >= 65536:
        _ONE_ENTRY_READ.clear()
    fields = _ONE_ENTRY_READ[text] = ranks, cores, gpus or "", expiration
    return fields


# the texts one_entry_text() read last: hello reads each twice, the job
# manager to check it, then the scheduler to register it
_ONE_ENTRY_READ: dict[str, tuple[str, str, str, float]] = {}


def rlite_ids(text: str) -> IDset:
    """The IDset of an R_lite idset text, decoded once per process
    (IdsetError when malformed)."""
    ids = _RLITE_IDS.get(text)
    return ids if ids is not None else _rlite_ids(text)


def _rlite_checked(R: Any) -> list[tuple[IDset, IDset, IDset]]:
    """rlite_entries(), checking everything (messages as flux-core's)."""
    if not isinstance(R, dict):
        raise RsetError("R must be a JSON object")
    if "version" not in R:
        raise RsetError("R: version is required")
    version = R["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise RsetError("R: version must be an integer")
    if version != 1:
        raise RsetError(f"invalid version={version}")
    execution = R.get("execution")
    if execution is None:
        raise RsetError("R: execution is required")
    if not isinstance(execution, dict):
        raise RsetError("R: execution must be an object")
    R_lite = execution.get("R_lite")
    if R_lite is None:
        raise RsetError("R: execution.R_lite is required")
    if not isinstance(R_lite, list):
        raise RsetError("R: R_lite must be an array")
    return [_rlite_entry(i, entry) for i, entry in enumerate(R_lite)]


def _rlite_ids(text: str) -> IDset:
    """IDset.parse(text), remembered (IdsetError when malformed)."""
    if len(_RLITE_IDS) >= 65536:
        _RLITE_IDS.clear()
        _RLITE_IDS[""] = IDset.parse("")
    ids = _RLITE_IDS[text] = IDset.parse(text)
    return ids


def _rlite_entry(i: int, entry: Any) -> tuple[IDset, IDset, IDset]:
    """R_lite[i], checked and decoded (its texts remembered)."""
    if not isinstance(entry, dict):
        raise RsetError(f"R: R_lite[{i}] must be an object")
    rank = entry.get("rank")
    if not isinstance(rank, str):
        raise RsetError(f"R: R_lite[{i}].rank must be an idset string")
    children = entry.get("children")
    if not isinstance(children, dict):
        raise RsetError(f"R: R_lite[{i}].children must be an object")
    core = children.get("core")
    if not isinstance(core, str):
        raise RsetError(f"R: R_lite[{i}].children.core must be an idset string")
    gpu = children.get("gpu", "")
    if not isinstance(gpu, str):
        raise RsetError(f"R: R_lite[{i}].children.gpu must be an idset string")
    if len(_RLITE_IDS) >= 65536:
        _RLITE_IDS.clear()
        _RLITE_IDS[""] = IDset.parse("")
    decoded = []
    for text in (rank, core, gpu):
        ids = _RLITE_IDS.get(text)
        if ids is None:
            try:
                ids = _RLITE_IDS[text] = IDset.parse(text)
            except IdsetError as exc:
                raise RsetError(f"R: R_lite[{i}]: {exc}") from None
        decoded.append(ids)
    return decoded[0], decoded[1], decoded[2]


def rlite_ranks(entries: list[tuple[IDset, IDset, IDset]]) -> dict[int, tuple[IDset, IDset]]:
    """{rank: (cores, gpus)} of rlite_entries() output, in ascending rank
    order, a rank's children merged across entries; RsetError when two
    entries give a rank the same core or gpu."""
    if len(entries) == 1:
        ranks, cores, gpus = entries[0]
        return dict.fromkeys(ranks, (cores, gpus))
    raw: dict[int, tuple[IDset, IDset]] = {}
    for i, (ranks, cores, gpus) in enumerate(entries):
        for r in ranks:
            prev = raw.get(r)
            if prev is None:
                raw[r] = (cores, gpus)
            else:
                if prev[0] & cores or prev[1] & gpus:
                    raise RsetError(f"R: R_lite[{i}]: rank {r} has duplicate resources")
                raw[r] = (prev[0] | cores, prev[1] | gpus)
    return {r: raw[r] for r in sorted(raw)}


def group_ranks(nodes: Iterable[tuple[int, Any, Any]], as_mask: bool = False) -> dict[tuple[Any, Any], Any]:
    """The R_lite grouping: the ranks of `nodes`, (rank, cores, gpus) in
    ascending rank order, by identical children, as {(cores, gpus): ranks}
    in the order of their lowest rank; each group is one R_lite entry.
    cores and gpus may be IDsets, or bitmasks standing for them. The ranks
    of a group come as a list, or with `as_mask` as a bitmask (small ranks:
    cheaper to collect, and to make an IDset of)."""
    by: dict[tuple[Any, Any], Any] = {}
    if as_mask:
        for rank, cores, gpus in nodes:
            key = (cores, gpus)
            by[key] = by.get(key, 0) | 1 << rank
        return by
    for rank, cores, gpus in nodes:
        key = (cores, gpus)
        group = by.get(key)
        if group is None:
            by[key] = [rank]
        else:
            group.append(rank)
    return by


def rlite_summary(groups: Iterable[tuple[IDset, IDset, IDset]]) -> str:
    """``rank<ids>/core<ids>[,gpu<ids>]`` of R_lite groups, (ranks, cores,
    gpus) IDsets each, joined by spaces (what Rset.summary() prints)."""
    return " ".join([entry_summary(ranks.encode(), cores.encode(), gpus.encode() if gpus else "")
                     for ranks, cores, gpus in groups])


def entry_summary(ranks: str, cores: str, gpus: str = "") -> str:
    """rlite_summary() of one group, from the encode() texts of its id sets
    (a caller that keeps them saves encoding them again)."""
    return f"rank{ranks}/core{cores},gpu{gpus}" if gpus else f"rank{ranks}/core{cores}"


def property_terms(props: Iterable[Any]) -> tuple[list[str], list[str]]:
    """(required, excluded) property names of an RFC 31 ``properties``
    list: ``^name`` excludes the ranks with property name, any other name
    requires it. RsetError for an entry that is not a string."""
    required, excluded = [], []
    for prop in props:
        if not isinstance(prop, str):
            raise RsetError("property constraint must be a string")
        if prop.startswith("^"):
            excluded.append(prop[1:])
        else:
            required.append(prop)
    return required, excluded


class Rset:
    """Immutable RFC 20 R version 1 resource set."""

    __slots__ = (
        "_nodes",
        "_props",
        "_starttime",
        "_expiration",
        "_nslots",
        "_scheduling",
        "_has_nodelist",
        "_cache",
    )

    def __init__(self):
        self._nodes = {}
        self._props = {}
        self._starttime = 0.0
        self._expiration = 0.0
        self._nslots = 0
        self._scheduling = None
        self._has_nodelist = False
        self._cache = {}

    # -- constructors from parts -----------------------------------------------

    @classmethod
    def from_nodes(
        cls,
        nodes: dict[int, tuple[str, IDset, IDset]],
        *,
        properties: dict[str, IDset] | None = None,
        starttime: float = 0.0,
        expiration: float = 0.0,
        nslots: int = 0,
        scheduling: Any = None,
        has_nodelist: bool = True,
        groups: list[tuple[IDset, IDset, IDset]] | None = None,
        nodelist_text: str | None = None,
    ) -> Rset:
        """A set of `nodes`, taken as given (not checked, not copied: the
        caller hands them over): a dict rank -> (hostname, cores IDset, gpus
        IDset) in ascending rank order. `properties`: dict name -> non-empty
        IDset of ranks among them; `starttime`, `expiration` floats (0.0 =
        unset), `nslots` an int (0 = unset), `scheduling` the opaque value,
        `has_nodelist` whether R carries the host names. `groups` (what
        group_ranks makes of the nodes, as [(ranks, cores, gpus)]) and
        `nodelist_text` (str(nodelist)) save their computation when the
        caller has them (a scheduler making one R per job)."""
        self = object.__new__(cls)
        self._nodes = nodes
        self._props = {} if properties is None else properties
        self._starttime = starttime
        self._expiration = expiration
        self._nslots = nslots
        self._scheduling = scheduling
        self._has_nodelist = has_nodelist
        self._cache = {}
        if groups is not None:
            self._set_groups(groups)
        if nodelist_text is not None:
            self._cache["nodelist_text"] = nodelist_text
        return self

    def with_nodes(self, nodes: dict[int, tuple[str, IDset, IDset]], properties: dict[str, IDset] | None = None,
                   **changes: Any) -> Rset:
        """A set of `nodes` (as from_nodes takes them; ranks of this set),
        with this set's properties restricted to them (or `properties`) and
        its other fields, but those `changes` (from_nodes keywords) give."""
        if properties is None:
            properties = self._restrict_props(nodes)
        args = dict(
            starttime=self._starttime,
            expiration=self._expiration,
            nslots=self._nslots,
            scheduling=self._scheduling,
            has_nodelist=self._has_nodelist,
        )
        args.update(changes)
        return Rset.from_nodes(nodes, properties=properties, **args)

    def _restrict_props(self, nodes):
        if not self._props:
            return {}
        if len(nodes) == len(self._nodes):
            return self._props
        ranks = IDset(nodes)
        out = {}
        for name, ids in self._props.items():
            common = ids & ranks
            if common:
                out[name] = common
        return out

    # -- constructors --------------------------------------------------------

    @classmethod
    def from_json(cls, text):
        """Parse R from a JSON string (RsetError if invalid)."""
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8", errors="replace")
        try:
            obj = json.loads(text)
        except (ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RsetError(f"invalid R JSON: {msg}") from None
        return cls.from_dict(obj)

    @classmethod
    def from_dict(cls, obj):
        """Build from a decoded R object, validating it (RsetError).

        Sets are immutable, so one parsed from the same content is reused:
        a job's R is read back several times while it runs (listing fields,
        sched.free), and the JSON text is a cheap, exact key.
        """
        if isinstance(obj, Rset):
            return obj
        if not isinstance(obj, dict) or obj.get("scheduling") is not None:
            return cls._from_dict(obj)  # (scheduling is kept by reference: not shared)
        hit = _FROM_DICT_BY_ID.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        try:
            key = jsontext.dumps(obj)
        except (TypeError, ValueError, RecursionError):
            return cls._from_dict(obj)
        rs = _FROM_DICT_CACHE.get(key)
        if rs is None:
            rs = cls._from_dict(obj)
            _make_room(_FROM_DICT_CACHE)
            _FROM_DICT_CACHE[key] = rs
        _remember_object(obj, rs)
        return rs

    def remember_as(self, text, obj=None):
        """Let from_dict() of an R whose json.dumps() is text (or of obj
        itself) return this set (text: this set's to_dict() obj, encoded by
        its builder, which is about to hand that R on: the scheduler's R is
        parsed back when the job manager lists or frees the job)."""
        if self._scheduling is None:
            self._cache["json"] = text  # (to_json's text)
            _make_room(_FROM_DICT_CACHE)
            _FROM_DICT_CACHE[text] = self
            if obj is not None:
                _remember_object(obj, self, text)

    @classmethod
    def _from_dict(cls, obj):
        raw = rlite_ranks(rlite_entries(obj))
        execution = obj["execution"]
        rank_order = list(raw)

        has_nodelist = False
        hostnames = None
        nodelist = execution.get("nodelist")
        if nodelist is not None:
            if not isinstance(nodelist, list):
                raise RsetError("R: nodelist must be an array")
            hosts = []
            for entry in nodelist:
                if not isinstance(entry, str):
                    raise RsetError("R: nodelist entries must be strings")
                try:
                    hosts.extend(Hostlist.parse(entry))
                except HostlistError as exc:
                    raise RsetError(f"R: nodelist: {exc}") from None
            if len(hosts) != len(rank_order):
                raise RsetError(
                    f"R: nodelist has {len(hosts)} host(s)"
                    f" but R_lite has {len(rank_order)} rank(s)"
                )
            hostnames = hosts
            has_nodelist = True

        nodes = {}
        for pos, r in enumerate(rank_order):
            host = hostnames[pos] if hostnames is not None else f"rank{r}"
            cores, gpus = raw[r]
            nodes[r] = (host, cores, gpus)

        props = {}
        properties = execution.get("properties")
        if properties is not None:
            if not isinstance(properties, dict):
                raise RsetError("properties must be an object")
            all_ranks = IDset(rank_order)
            for name, value in properties.items():
                if not isinstance(value, str):
                    raise RsetError(
                        f"properties value '{json.dumps(value)}' not a string"
                    )
                check_property_name(name)
                try:
                    ids = IDset.parse(value)
                except IdsetError:
                    raise RsetError(
                        f"invalid idset '{value}' specified for property \"{name}\""
                    ) from None
                unknown = ids - all_ranks
                if unknown:
                    word = "rank" if len(unknown) == 1 else "ranks"
                    raise RsetError(f"{word} {unknown} not found in target resource list")
                if ids:
                    props[name] = ids

        starttime = _num(execution.get("starttime", 0.0), "starttime")
        expiration = _num(execution.get("expiration", 0.0), "expiration")
        nslots = execution.get("nslots", 0)
        if nslots is None:
            nslots = 0
        if isinstance(nslots, bool) or not isinstance(nslots, int):
            raise RsetError("R: nslots must be an integer")
        nslots = max(nslots, 0)
        return cls.from_nodes(nodes, properties=props, starttime=starttime, expiration=expiration, nslots=nslots,
                              scheduling=obj.get("scheduling"), has_nodelist=has_nodelist)

    @classmethod
    def build(cls, nodes, starttime=0.0, expiration=0.0, scheduling=None):
        """Instance resources from a list of nodes, ranks 0..N-1.

        Each node is ``(hostname, ncores, ngpus[, properties])`` or a dict
        with those keys; cores are ``0..ncores-1``, gpus ``0..ngpus-1``
        (or an IDset: the ids themselves).
        """
        out = {}
        props = {}
        for rank, node in enumerate(nodes):
            if isinstance(node, dict):
                host = node.get("hostname")
                ncores = node.get("ncores", node.get("cores", 0))
                ngpus = node.get("ngpus", node.get("gpus", 0))
                nprops = node.get("properties", ())
            else:
                host, ncores, ngpus, *rest = node
                nprops = rest[0] if rest else ()
            if not isinstance(host, str) or not host:
                raise RsetError(f"rank {rank}: invalid hostname {host!r}")
            if isinstance(ncores, IDset) or isinstance(ngpus, IDset):
                core_ids = ncores if isinstance(ncores, IDset) else IDset.range(0, ncores - 1)
                gpu_ids = ngpus if isinstance(ngpus, IDset) else IDset.range(0, ngpus - 1)
            elif ncores < 0 or ngpus < 0:
                raise RsetError(f"rank {rank}: negative resource count")
            else:
                core_ids, gpu_ids = IDset.range(0, ncores - 1), IDset.range(0, ngpus - 1)
            out[rank] = (host, core_ids, gpu_ids)
            if isinstance(nprops, str):
                nprops = (nprops,)
            for name in nprops or ():
                check_property_name(name)
                props.setdefault(name, []).append(rank)
        props = {name: IDset(r) for name, r in sorted(props.items())}
        return cls.from_nodes(out, properties=props, starttime=float(starttime), expiration=float(expiration),
                              scheduling=scheduling)

    @classmethod
    def from_config(cls, hosts, cores_per_node, gpus_per_node=0, properties=None):
        """Homogeneous instance R: `hosts` is a hostlist string or a list of
        hostlist strings; `properties` maps name -> idset of ranks."""
        try:
            hl = Hostlist(hosts) if not isinstance(hosts, Hostlist) else hosts
        except HostlistError as exc:
            raise RsetError(str(exc)) from None
        rs = cls.build([(h, cores_per_node, gpus_per_node) for h in hl])
        if properties:
            rs = rs.with_properties(properties)
        return rs

    # -- encoding ------------------------------------------------------------

    def _groups(self):
        """[(ranks IDset, cores, gpus)] ordered by lowest rank."""
        g = self._cache.get("groups")
        if g is None:
            by = group_ranks((rank, cores, gpus) for rank, (_, cores, gpus) in self._nodes.items())
            g = [(IDset(ranks), key[0], key[1]) for key, ranks in by.items()]
            self._set_groups(g)
        return g

    def _set_groups(self, g):
        self._cache["groups"] = g
        if len(g) == 1:  # (one group: its ranks are all of them)
            self._cache.setdefault("ranks", g[0][0])

    def to_dict(self):
        """R as a dict in flux-core's Python encoder key order."""
        R_lite = []
        for ranks, cores, gpus in self._groups():
            children = {"core": str(cores)}
            if gpus:
                children["gpu"] = str(gpus)
            R_lite.append({"rank": str(ranks), "children": children})
        execution = {
            "R_lite": R_lite,
            "starttime": self._starttime,
            "expiration": self._expiration,
        }
        if self._nslots > 0:
            execution["nslots"] = self._nslots
        if self._has_nodelist:
            execution["nodelist"] = [self.nodelist_text()]
        if self._props:
            execution["properties"] = {
                name: str(ids) for name, ids in sorted(self._props.items())
            }
        result = {"version": 1, "execution": execution}
        if self._scheduling is not None:
            result["scheduling"] = self._scheduling
        return result

    def to_json(self):
        """``json.dumps(self.to_dict())`` with default separators."""
        s = self._cache.get("json")
        if s is None:
            s = self._cache["json"] = self._written_json() or jsontext.dumps(self.to_dict())
        return s

    def _written_json(self):
        """to_json's text written directly (a scheduler makes one R per job):
        for an R without properties or scheduling, with finite float times
        and a host list json writes as it is; None for any other."""
        start, end = self._starttime, self._expiration
        if self._props or self._scheduling is not None or type(start) is not float or type(end) is not float \
                or not (math.isfinite(start) and math.isfinite(end)):
            return None
        parts = []
        for ranks, cores, gpus in self._groups():  # (id lists: digits, commas and dashes)
            if gpus:
                parts.append('{"rank": "%s", "children": {"core": "%s", "gpu": "%s"}}' % (ranks, cores, gpus))
            else:
                parts.append('{"rank": "%s", "children": {"core": "%s"}}' % (ranks, cores))
        text = ('{"version": 1, "execution": {"R_lite": [' + ", ".join(parts) + '], "starttime": ' + repr(start)
                + ', "expiration": ' + repr(end))
        if self._nslots > 0:
            if type(self._nslots) is not int:
                return None
            text += ', "nslots": %d' % self._nslots
        if self._has_nodelist:
            hosts = self.nodelist_text()
            if not (hosts.isascii() and hosts.isprintable()) or '"' in hosts or "\\" in hosts:
                return None  # (json would escape something)
            text += ', "nodelist": ["' + hosts + '"]'
        return text + "}}"

    def summary(self):
        """``rank<ids>/core<ids>[,gpu<ids>]`` groups joined by spaces."""
        s = self._cache.get("summary")
        if s is None:
            s = self._cache["summary"] = rlite_summary(self._groups())
        return s

    dumps = summary

    def __str__(self):
        return self.summary()

    def __repr__(self):
        return f"Rset('{self.summary()}')"

    def __eq__(self, other):
        if not isinstance(other, Rset):
            return NotImplemented
        return (
            self._nodes == other._nodes
            and self._props == other._props
            and self._starttime == other._starttime
            and self._expiration == other._expiration
            and self._nslots == other._nslots
            and self._scheduling == other._scheduling
            and self._has_nodelist == other._has_nodelist
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def same_resources(self, other):
        """True if both sets hold the same cores/gpus on the same ranks."""
        if len(self._nodes) != len(other._nodes):
            return False
        for rank, (_, cores, gpus) in self._nodes.items():
            o = other._nodes.get(rank)
            if o is None or o[1] != cores or o[2] != gpus:
                return False
        return True

    # -- queries -------------------------------------------------------------

    @property
    def starttime(self):
        return self._starttime

    @property
    def expiration(self):
        return self._expiration

    @property
    def nslots(self):
        return self._nslots

    @property
    def scheduling(self):
        return self._scheduling

    @property
    def has_nodelist(self):
        return self._has_nodelist

    @property
    def properties(self):
        """dict name -> IDset of ranks (copy)."""
        return dict(self._props)

    @property
    def ranks(self):
        r = self._cache.get("ranks")
        if r is None:
            r = self._cache["ranks"] = IDset(self._nodes)
        return r

    @property
    def nnodes(self):
        return len(self._nodes)

    @property
    def ncores(self):
        n = self._cache.get("ncores")
        if n is None:
            g = self._cache.get("groups")
            if g is not None:  # (fewer groups than nodes)
                n = sum(len(ranks) * len(cores) for ranks, cores, _ in g)
            else:
                n = sum(len(c) for _, c, _ in self._nodes.values())
            self._cache["ncores"] = n
        return n

    @property
    def ngpus(self):
        n = self._cache.get("ngpus")
        if n is None:
            n = self._cache["ngpus"] = sum(len(g) for _, _, g in self._nodes.values())
        return n

    @property
    def nodelist(self):
        """Hostlist of the hostnames in rank order."""
        h = self._cache.get("nodelist")
        if h is None:
            h = self._cache["nodelist"] = Hostlist.from_hosts(
                host for host, _, _ in self._nodes.values()
            )
        return h

    def nodelist_text(self):
        """str(self.nodelist)."""
        s = self._cache.get("nodelist_text")
        if s is None:
            s = self._cache["nodelist_text"] = str(self.nodelist)
        return s

    def __len__(self):
        return len(self._nodes)

    def __bool__(self):
        return bool(self._nodes)

    def __contains__(self, rank):
        return rank in self._nodes

    def is_empty(self):
        return not self._nodes

    def _node(self, rank):
        try:
            return self._nodes[rank]
        except KeyError:
            raise RsetError(f"rank {rank} not found in resource set") from None

    def hostname(self, rank):
        return self._node(rank)[0]

    def cores(self, rank):
        return self._node(rank)[1]

    def gpus(self, rank):
        return self._node(rank)[2]

    def nodes(self):
        """Iterate (rank, hostname, cores, gpus) in rank order."""
        for rank, (host, cores, gpus) in self._nodes.items():
            yield rank, host, cores, gpus

    def ranks_with_property(self, name):
        return self._props.get(name, _EMPTY)

    def properties_of(self, rank):
        """Sorted list of property names set on `rank`."""
        return sorted(n for n, ids in self._props.items() if rank in ids)

    def ranks_of_hosts(self, hosts):
        """IDset of ranks whose hostname is in `hosts` (hostlist or names)."""
        if isinstance(hosts, str):
            hosts = Hostlist(hosts)
        wanted = set(hosts)
        return IDset(r for r, (h, _, _) in self._nodes.items() if h in wanted)

    # -- derivations -----------------------------------------------------

    def copy_ranks(self, ranks):
        """Only the given ranks (IDset, idset string or iterable)."""
        ranks = _as_idset(ranks)
        nodes = {r: n for r, n in self._nodes.items() if r in ranks}
        return self.with_nodes(nodes)

    def remove_ranks(self, ranks):
        ranks = _as_idset(ranks)
        if not ranks:
            return self
        nodes = {r: n for r, n in self._nodes.items() if r not in ranks}
        return self.with_nodes(nodes)

    def subset(self, parts):
        """The resources of self named by (rank, cores, gpus) parts, merged
        in one pass (a union of many job Rs without a Rset per job)."""
        merged = {}
        for rank, cores, gpus in parts:
            have = merged.get(rank)
            merged[rank] = (cores, gpus) if have is None else (have[0] | cores, have[1] | gpus)
        nodes = {}
        for rank in sorted(merged):
            node = self._nodes.get(rank)
            if node is not None:
                cores, gpus = merged[rank]
                nodes[rank] = (node[0], node[1] & cores, node[2] & gpus)
        return self.with_nodes(nodes)

    def union(self, other):
        """Resource-level union; hostnames and times come from self."""
        if not other._nodes:
            return self
        merged = dict(self._nodes)
        for rank, (host, cores, gpus) in other._nodes.items():
            mine = merged.get(rank)
            if mine is None:
                merged[rank] = (host, cores, gpus)
            else:
                merged[rank] = (mine[0], mine[1] | cores, mine[2] | gpus)
        nodes = {r: merged[r] for r in sorted(merged)}
        props = dict(self._props)
        for name, ids in other._props.items():
            props[name] = props[name] | ids if name in props else ids
        return self.with_nodes(
            nodes, props, has_nodelist=self._has_nodelist or other._has_nodelist
        )

    __or__ = union

    def add(self, other):
        """union(), with other's properties taken only on the ranks it adds
        (Flux's Rv1Set.add: merging a part of a set, free or allocated, into
        the rest gives back the whole set without spreading properties)."""
        new_ranks = other.ranks - self.ranks
        merged = self.union(other)
        props = dict(self._props)
        for name, ids in other._props.items():
            added = ids & new_ranks
            if added:
                props[name] = props[name] | added if name in props else added
        return merged.with_nodes(merged._nodes, props)

    def difference(self, other):
        """Remove other's cores/gpus; ranks left with nothing are dropped."""
        if not other._nodes:
            return self
        nodes = {}
        for rank, (host, cores, gpus) in self._nodes.items():
            o = other._nodes.get(rank)
            if o is None:
                nodes[rank] = (host, cores, gpus)
                continue
            c = cores - o[1]
            g = gpus - o[2]
            if c or g:
                nodes[rank] = (host, c, g)
        return self.with_nodes(nodes)

    __sub__ = difference

    def intersection(self, other):
        """Cores/gpus present in both; ranks left with nothing are dropped."""
        nodes = {}
        for rank, (host, cores, gpus) in self._nodes.items():
            o = other._nodes.get(rank)
            if o is None:
                continue
            c = cores & o[1]
            g = gpus & o[2]
            if c or g:
                nodes[rank] = (host, c, g)
        return self.with_nodes(nodes)

    __and__ = intersection

    def with_times(self, starttime=None, expiration=None):
        """Copy with new starttime and/or expiration (None keeps)."""
        st = self._starttime if starttime is None else _num(starttime, "starttime")
        ex = self._expiration if expiration is None else _num(expiration, "expiration")
        return self.with_nodes(self._nodes, self._props, starttime=st, expiration=ex)

    def with_expiration(self, expiration):
        return self.with_times(expiration=expiration)

    def with_nslots(self, nslots):
        return self.with_nodes(self._nodes, self._props, nslots=max(int(nslots), 0))

    def with_scheduling(self, scheduling):
        return self.with_nodes(self._nodes, self._props, scheduling=scheduling)

    def with_properties(self, properties):
        """Copy with properties added: mapping name -> idset of ranks."""
        props = dict(self._props)
        ranks = self.ranks
        for name, ids in properties.items():
            check_property_name(name)
            ids = _as_idset(ids)
            unknown = ids - ranks
            if unknown:
                word = "rank" if len(unknown) == 1 else "ranks"
                raise RsetError(f"{word} {unknown} not found in target resource list")
            if ids:
                props[name] = props[name] | ids if name in props else ids
        return self.with_nodes(self._nodes, props)

    def without_local_properties(self):
        """Copy without instance-local (``+``-prefixed) properties."""
        if not any(n.startswith("+") for n in self._props):
            return self
        props = {n: i for n, i in self._props.items() if not n.startswith("+")}
        return self.with_nodes(self._nodes, props)

    def ranks_matching(self, constraint):
        """IDset of ranks satisfying an RFC 31 constraint (dict or JSON)."""
        if constraint is None:
            return self.ranks
        if isinstance(constraint, str):
            try:
                constraint = json.loads(constraint)
            except ValueError:
                raise RsetError("constraint is not valid JSON") from None
        return _eval_constraint(self, constraint)

    def copy_constraint(self, constraint):
        """Only the ranks satisfying the RFC 31 constraint."""
        return self.copy_ranks(self.ranks_matching(constraint))


def _eval_constraint(rs, c):
    if not isinstance(c, dict):
        raise RsetError("constraint must be an object")
    if not c:
        return rs.ranks
    result = None
    for op, arg in c.items():
        if op == "properties":
            if not isinstance(arg, list):
                raise RsetError("properties constraint must be an array")
            required, excluded = property_terms(arg)
            ids = rs.ranks
            for name in required:
                ids = ids & rs.ranks_with_property(name)
            for name in excluded:
                ids = ids - rs.ranks_with_property(name)
        elif op == "hostlist":
            if not isinstance(arg, list):
                raise RsetError("hostlist constraint must be an array")
            try:
                hosts = set()
                for h in arg:
                    hosts.update(Hostlist.parse(h))
            except HostlistError as exc:
                raise RsetError(str(exc)) from None
            ids = IDset(r for r, (h, _, _) in rs._nodes.items() if h in hosts)
        elif op == "ranks":
            if not isinstance(arg, list):
                raise RsetError("ranks constraint must be an array")
            ids = _EMPTY
            for s in arg:
                if not isinstance(s, str):
                    raise RsetError("ranks constraint must be idset strings")
                try:
                    ids = ids | IDset.parse(s)
                except IdsetError as exc:
                    raise RsetError(f"invalid ranks constraint '{s}': {exc}") from None
            ids = ids & rs.ranks
        elif op in ("and", "or"):
            if not isinstance(arg, list):
                raise RsetError(f"'{op}' operand must be an array")
            parts = [_eval_constraint(rs, sub) for sub in arg]
            if op == "and":
                ids = rs.ranks
                for p in parts:
                    ids = ids & p
            else:
                ids = _EMPTY
                for p in parts:
                    ids = ids | p
        elif op == "not":
            if not isinstance(arg, list) or not arg:
                raise RsetError("'not' operand must be a non-empty array")
            ids = rs.ranks
            for sub in arg:
                ids = ids - _eval_constraint(rs, sub)
        else:
            raise RsetError(f"unknown constraint operator '{op}'")
        result = ids if result is None else result & ids
    return result


def rlite_nodes(R: Any) -> list[tuple[int, IDset, IDset]]:
    """(rank, cores IDset, gpus IDset) of an R dict, from R_lite alone, in
    ascending rank order (a rank's children merged across entries).

    For hot paths (scheduler hello) that need no host names: it skips the
    nodelist expansion a full Rset.from_dict does. Malformed R -> RsetError.
    """
    return [(rank, cores, gpus) for rank, (cores, gpus) in rlite_ranks(rlite_entries(R)).items()]


def nodes_summary(nodes: Iterable[tuple[int, IDset, IDset]]) -> str:
    """Rset.summary() of rlite_nodes() output."""
    groups = group_ranks(sorted(nodes, key=itemgetter(0)))
    return rlite_summary([(IDset(ranks), cores, gpus) for (cores, gpus), ranks in groups.items()])


def rlite_without(R: dict, ranks: Any) -> dict:
    """An R dict minus `ranks`, built from R_lite alone (no host names: the
    result has no nodelist). For scheduler hello of partly freed allocations."""
    ranks = IDset(ranks)
    decoded = rlite_entries(R)
    entries = []
    execution = R["execution"]
    for ent, (have, _cores, _gpus) in zip(execution["R_lite"], decoded):
        left = have - ranks
        if left:
            entries.append({"rank": str(left), "children": ent["children"]})
    out = {"R_lite": entries}
    for key in ("starttime", "expiration"):
        if key in execution:
            out[key] = execution[key]
    return {"version": 1, "execution": out}


# -- librlist's operations (flux R, the resource module's checks) ------------------
#
# flux-core's C library reads and writes R a little differently from its
# Python Rv1Set (what Rset.to_dict follows): it reads leniently (R_lite of any
# JSON type, a rank with no core), writes nslots before the times and times
# as "%.17g", lists in the nodelist every rank (one without resources too),
# and keeps the opaque scheduling key of the first set that has one. These
# functions are those rules, on Rsets.

#: verification modes of [resource.verify] (librlist's rlist_verify_config)
VERIFY_MODES = ("strict", "allow-extra", "allow-missing", "ignore")
VERIFY_TYPES = ("default", "hostname", "core", "gpu")


def jansson_type(value: Any) -> str:
    """A value's JSON type as jansson names it in its errors (null, true, integer...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    for kind, name in ((int, "integer"), (float, "real"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _need(obj: dict, key: str, kind: Any, what: str) -> Any:
    """obj[key] as jansson's unpack checks it (its words)."""
    if key not in obj:
        raise RsetError(f"Object item not present: {key}")
    value = obj[key]
    if not _is(value, kind):
        raise RsetError(f"Expected {what}, got {jansson_type(value)}")
    return value


def _is(value: Any, kind: Any) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


def rlist_from_dict(obj: Any) -> Rset:
    """An R object read as librlist's rlist_from_json reads it (RsetError
    with jansson's and librlist's words). Resource types other than core
    and gpu are ignored: no flux-lite resource has them."""
    if not isinstance(obj, dict):
        raise RsetError(f"Expected object, got {jansson_type(obj)}")
    version = _need(obj, "version", int, "integer")
    execution = _need(obj, "execution", dict, "object")
    R_lite = _need(execution, "R_lite", object, "")
    for key, kind, what in (("nslots", int, "integer"), ("starttime", float, "real"), ("expiration", float, "real")):
        if key in execution and not _is(execution[key], kind):
            raise RsetError(f"Expected {what}, got {jansson_type(execution[key])}")
    if version != 1:
        raise RsetError(f"invalid version={version}")
    raw: dict[int, tuple[IDset, IDset]] = {}
    for entry in R_lite if isinstance(R_lite, list) else ():
        if not isinstance(entry, dict):
            raise RsetError(f"Expected object, got {jansson_type(entry)}")
        rank = _need(entry, "rank", str, "string")
        children = _need(entry, "children", dict, "object")
        try:
            ranks = IDset.parse(rank)
        except IdsetError as exc:
            raise RsetError(f"invalid rank idset '{rank}': {exc}") from None
        ids: list[IDset] = []
        for name in ("core", "gpu"):
            text = children.get(name, "")
            try:
                if not isinstance(text, str):
                    raise IdsetError("not a string")
                ids.append(IDset.parse(text))
            except IdsetError:
                raise RsetError(f"invalid {name} idset {json.dumps(text)}") from None
        for r in ranks:
            prev = raw.get(r)
            if prev is None:
                raw[r] = (ids[0], ids[1])
            elif prev[0] & ids[0] or prev[1] & ids[1]:
                raise RsetError(f"rank {r}: duplicate resources")
            else:
                raw[r] = (prev[0] | ids[0], prev[1] | ids[1])
    order = sorted(raw)
    hosts = None
    nodelist = execution.get("nodelist")
    if nodelist is not None:
        hosts = []
        for entry in nodelist if isinstance(nodelist, list) else ():
            try:
                hosts.extend(Hostlist.parse(entry if isinstance(entry, str) else ""))
            except HostlistError as exc:
                raise RsetError(f"nodelist: {exc}") from None
        if len(hosts) != len(order):
            raise RsetError(f"nodelist has {len(hosts)} hosts for {len(order)} ranks")
    nodes = {r: (hosts[i] if hosts is not None else f"rank{r}",) + raw[r] for i, r in enumerate(order)}
    rs = Rset.from_nodes(
        nodes,
        starttime=max(float(execution.get("starttime", 0.0)), 0.0),
        expiration=max(float(execution.get("expiration", 0.0)), 0.0),
        nslots=max(execution.get("nslots", 0), 0),
        scheduling=obj.get("scheduling"),
        has_nodelist=hosts is not None,
    )
    properties = execution.get("properties")
    if properties is not None:
        rs = rlist_assign_properties(rs, properties)
    return rs


def rlist_assign_properties(rs: Rset, properties: Any) -> Rset:
    """rs with `properties` ({name: idset string}) added, checked first as
    librlist checks them (its words)."""
    if not isinstance(properties, dict):
        raise RsetError("properties must be an object")
    parsed = {}
    for name, value in properties.items():
        if not isinstance(value, str):
            raise RsetError(f"properties value '{json.dumps(value, separators=(',', ':'))}' not a string")
        bad = [c for c in name if c in "^&'\"`|()"]
        if bad:
            raise RsetError(f"invalid character '{bad[0]}' in property \"{name}\"")
        try:
            parsed[name] = IDset.parse(value)
        except IdsetError:
            raise RsetError(f"invalid idset '{value}' specified for property \"{name}\"") from None
    props = dict(rs._props)
    for name, ids in parsed.items():
        unknown = ids - rs.ranks
        if unknown:
            raise RsetError(f"{'rank' if len(unknown) == 1 else 'ranks'} {unknown} not found in target resource list")
        if ids:
            props[name] = props[name] | ids if name in props else ids
    return rs.with_nodes(rs._nodes, props)


def _c_real(value: float) -> str:
    """A real as jansson writes it (17 significant digits, always a dot or an exponent)."""
    text = f"{value:.17g}"
    return text if any(c in text for c in ".en") else text + ".0"


def rlist_encode(rs: Rset) -> str:
    """R as librlist writes it (rlist_encode): ranks with identical
    resources grouped, ranks without resources only in the nodelist, which
    is written when every rank has a host name."""
    entries = []
    nodes = [(rank, cores, gpus) for rank, (_, cores, gpus) in rs._nodes.items() if cores or gpus]
    for (cores, gpus), ranks in group_ranks(nodes).items():
        children = {}
        if cores:
            children["core"] = str(cores)
        if gpus:
            children["gpu"] = str(gpus)
        entries.append({"rank": str(IDset(ranks)), "children": children})
    text = '{"version": 1, "execution": {"R_lite": ' + json.dumps(entries, ensure_ascii=False)
    if rs._nslots > 0:
        text += f', "nslots": {rs._nslots}'
    text += f', "starttime": {_c_real(rs._starttime)}, "expiration": {_c_real(rs._expiration)}'
    if rs._has_nodelist or not rs._nodes:
        text += ', "nodelist": ' + json.dumps([rs.nodelist_text()], ensure_ascii=False)
    if rs._props:
        text += ', "properties": ' + json.dumps({n: str(ids) for n, ids in sorted(rs._props.items())},
                                                ensure_ascii=False)
    text += "}"
    if rs._scheduling is not None:
        text += ', "scheduling": ' + json.dumps(rs._scheduling, ensure_ascii=False)
    return text + "}"


def _child_dumps(cores: IDset, gpus: IDset) -> str:
    return ",".join(f"{name}{ids.encode()}" for name, ids in (("core", cores), ("gpu", gpus)) if ids)


def rlist_dumps(rs: Rset) -> str:
    """librlist's short form: ``rank[0-1]/core[0-3],gpu0 ...``, ranks
    without resources left out."""
    nodes = [(rank, cores, gpus) for rank, (_, cores, gpus) in rs._nodes.items() if cores or gpus]
    return " ".join(f"rank{IDset(ranks).encode()}/{_child_dumps(cores, gpus)}"
                    for (cores, gpus), ranks in group_ranks(nodes).items())


def _scheduling_of(a: Rset, b: Rset) -> Any:
    return a._scheduling if a._scheduling is not None else b._scheduling


def rlist_union(a: Rset, b: Rset) -> Rset:
    """librlist's union: a's hosts, b's ranks added; a host list only when
    every rank has a name; a's scheduling key, else b's."""
    both_named = (a._has_nodelist or not a._nodes) and (b._has_nodelist or not b._nodes)
    merged = dict(a._nodes)
    for rank, (host, cores, gpus) in b._nodes.items():
        mine = merged.get(rank)
        merged[rank] = (host, cores, gpus) if mine is None else (mine[0], mine[1] | cores, mine[2] | gpus)
    props = dict(a._props)
    for name, ids in b._props.items():
        props[name] = props[name] | ids if name in props else ids
    return a.with_nodes({r: merged[r] for r in sorted(merged)}, props, has_nodelist=both_named,
                        scheduling=_scheduling_of(a, b))


def rlist_append(a: Rset, b: Rset) -> Rset:
    """rlist_union, refused (RsetError) when the two sets share a resource."""
    if rlist_intersect(a, b)._nodes:
        raise RsetError(f"R objects '{rlist_dumps(a)}' and '{rlist_dumps(b)}' overlap")
    return rlist_union(a, b)


def rlist_diff(a: Rset, b: Rset) -> Rset:
    """a without b's resources; ranks left with nothing are dropped."""
    return a.difference(b)


def rlist_intersect(a: Rset, b: Rset) -> Rset:
    """Resources in both; a's scheduling key unless nothing is left."""
    out = a.intersection(b)
    return out if out._nodes or out._scheduling is None else out.with_scheduling(None)


def _renumbered(rs: Rset, order: list[int], remap_cores: bool) -> Rset:
    """rs with the ranks of `order` numbered 0, 1, ...: hosts and properties
    move with their node; cores (not gpus) renumbered from 0 with remap_cores."""
    new = {old: i for i, old in enumerate(order)}
    nodes = {}
    for old in order:
        host, cores, gpus = rs._nodes[old]
        if remap_cores and cores:
            cores = IDset.range(0, len(cores) - 1)
        nodes[new[old]] = (host, cores, gpus)
    props = {name: IDset(new[r] for r in ids) for name, ids in rs._props.items()}
    return rs.with_nodes(nodes, props)


def rlist_remap(rs: Rset) -> Rset:
    """Ranks renumbered from 0 in rank order, each rank's cores from 0 (gpu
    ids are kept: they name devices)."""
    return _renumbered(rs, sorted(rs._nodes), remap_cores=True)


def rlist_rerank(rs: Rset, hosts: str) -> Rset:
    """Ranks renumbered by the index of their host in the hostlist `hosts`
    (RsetError with flux R's words)."""
    try:
        hl = Hostlist.parse(hosts)
    except HostlistError as exc:
        raise RsetError(f"hostlist_decode: {hosts}: {exc}") from None
    if len(hl) > len(rs._nodes):
        raise RsetError(f"Too many hosts specified (expected {len(rs._nodes)})")
    if len(hl) < len(rs._nodes):
        raise RsetError(f"Too few hosts specified (expected {len(rs._nodes)})")
    by_host: dict[str, int] = {}
    for rank, (host, _, _) in rs._nodes.items():
        by_host.setdefault(host, rank)
    order = []
    for host in hl:
        if host not in by_host or not rs._has_nodelist:
            raise RsetError("failed to find one or more provided hosts in R")
        order.append(by_host[host])
    return _renumbered(rs, order, remap_cores=False)


def verify_modes(verify: Any = None) -> dict[str, str]:
    """[resource.verify] (true, false or a table of modes) as a mode per
    type, hostname, core and gpu (RsetError with librlist's words)."""
    default, overrides = "strict", {}
    if verify is None or verify is True:
        pass
    elif verify is False:
        default = "ignore"
    elif isinstance(verify, dict):
        for key, mode in verify.items():
            if not isinstance(mode, str):
                raise RsetError(f"verify.{key} mode must be a string")
            if mode not in VERIFY_MODES:
                raise RsetError(f"verify.{key}: unknown verify mode '{mode}'")
            if key == "default":
                default = mode
            elif key not in VERIFY_TYPES:
                raise RsetError(f"verify: unsupported resource type: {key}")
            else:
                overrides[key] = mode
    else:
        raise RsetError("verify must be a table or boolean")
    return {t: overrides.get(t, default) for t in ("hostname", "core", "gpu")}


def rlist_verify(expected: Rset, rs: Rset, modes: dict[str, str] | None = None) -> tuple[int, str]:
    """librlist's check of one rank's resources, rs, against those R
    expects of it: (0, "") when they match, (1, message) when the rank has
    more than expected, (-1, message) when it is not as expected."""
    modes = modes or verify_modes()
    if len(rs._nodes) != 1:
        return -1, "Verification supported on single rank only"
    rank, (host, cores, gpus) = next(iter(rs._nodes.items()))
    exp = expected._nodes.get(rank)
    if exp is None:
        return -1, f"rank {rank} not found in expected ranks"
    name = host if rs._has_nodelist else "unknown"
    if modes["hostname"] == "strict" and rs._has_nodelist and expected._has_nodelist and host != exp[0]:
        return -1, f"rank {rank} got hostname '{host}', expected '{exp[0]}'"

    def diff(have: tuple, other: tuple, ignored: tuple[str, ...]) -> str:
        c = IDset() if modes["core"] in ignored else have[1] - other[1]
        g = IDset() if modes["gpu"] in ignored else have[2] - other[2]
        return _child_dumps(c, g)

    missing = diff(exp, (host, cores, gpus), ("ignore", "allow-missing"))
    if missing:
        return -1, f"rank {rank} ({name}) missing resources: {missing}"
    extra = diff((host, cores, gpus), exp, ("ignore", "allow-extra"))
    if extra:
        return 1, f"rank {rank} ({name}) has extra resources: {extra}"
    return 0, ""


def rlist_from_config(entries: Any) -> Rset:
    """R from a [[resource.config]] array as librlist builds it: ranks in
    the order hosts first appear; an entry's cores, gpus and properties
    added to each of its hosts (RsetError with librlist's words)."""
    if not isinstance(entries, list):
        raise RsetError("resource config must be an array")
    hosts: dict[str, list] = {}  # host -> [cores, gpus, properties]
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RsetError(f"config[{i}]: Expected object, got {jansson_type(entry)}")
        try:
            _need(entry, "hosts", str, "string")
            for key in ("cores", "gpus"):
                if key in entry and not isinstance(entry[key], str):
                    raise RsetError(f"Expected string, got {jansson_type(entry[key])}")
        except RsetError as exc:
            raise RsetError(f"config[{i}]: {exc}") from None
        extra = [k for k in entry if k not in ("hosts", "cores", "gpus", "properties")]
        if extra:
            raise RsetError(f"config[{i}]: {len(extra)} object item(s) left unpacked: {', '.join(extra)}")
        props = entry.get("properties")
        if props is not None and not isinstance(props, list):
            raise RsetError(f"config[{i}]: properties must be an array")
        try:
            hl = Hostlist.parse(entry["hosts"])
        except HostlistError:
            raise RsetError(f"config[{i}]: invalid hostlist '{entry['hosts']}'") from None
        if not len(hl):
            raise RsetError(f"config[{i}]: empty hostlist specified")
        ids = []
        for key in ("cores", "gpus"):
            try:
                ids.append(IDset.parse(entry[key]) if key in entry else IDset())
            except IdsetError:
                raise RsetError(f"config[{i}]: invalid idset {key}='{entry[key]}'") from None
        for prop in props or ():
            if not isinstance(prop, str) or any(c in prop for c in "^&'\"`|()"):
                raise RsetError(f"config[{i}]: invalid property \"{json.dumps(prop, ensure_ascii=False)}\"")
        for host in hl:
            rec = hosts.setdefault(host, [IDset(), IDset(), []])
            if rec[0] & ids[0] or rec[1] & ids[1]:
                raise RsetError("Unable to add rnode: File exists")
            rec[0], rec[1] = rec[0] | ids[0], rec[1] | ids[1]
            rec[2].extend(p for p in props or () if p not in rec[2])
    if not hosts:
        raise RsetError("no hosts configured")
    empty = [h for h, (c, g, _) in hosts.items() if not c and not g]
    if empty:
        raise RsetError(f"resource.config: {Hostlist.from_hosts(empty)} assigned no resources")
    nodes = {rank: (host, c, g) for rank, (host, (c, g, _)) in enumerate(hosts.items())}
    named: dict[str, list[int]] = {}
    for rank, (_, _, names) in enumerate(hosts.values()):
        for name in names:
            named.setdefault(name, []).append(rank)
    return Rset.from_nodes(nodes, properties={n: IDset(r) for n, r in named.items()})


_GPU_BACKENDS = ("CUDA", "OpenCL", "RSMI")


def hwloc_xml_hostname(text: str) -> str | None:
    """The HostName info of hwloc XML's root object (what flux-core's rhwloc
    names the node after), or None."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    for obj in root.iter("object"):
        for info in obj.findall("info"):
            if info.get("name") == "HostName" and info.get("value"):
                return info.get("value")
        break  # the root object only
    return None


def hwloc_xml_children(text: str) -> tuple[IDset, IDset]:
    """(cores, gpus) of one node described by hwloc XML, as flux-core's
    rhwloc counts them: cores by logical index; compute GPUs (CUDA, OpenCL
    and RSMI devices), one per PCI device and backend, the most any backend
    shows of a device (CUDA and OpenCL name the same NVIDIA GPU; a
    partitioned AMD GPU shows several RSMI devices). RsetError if not XML."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise RsetError(f"invalid hwloc XML: {exc}") from None
    ncores = sum(1 for obj in root.iter("object") if obj.get("type") == "Core")
    ngpus = 0
    for pci in root.iter("object"):
        per_backend: dict[str, int] = {}
        for dev in pci.findall("object"):
            if dev.get("type") != "OSDev":
                continue
            backend = next((i.get("value") for i in dev.findall("info") if i.get("name") == "Backend"), None)
            if backend in _GPU_BACKENDS:
                per_backend[backend] = per_backend.get(backend, 0) + 1
        ngpus += max(per_backend.values(), default=0)
    return IDset.range(0, ncores - 1), IDset.range(0, ngpus - 1)
