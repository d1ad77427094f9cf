"""The `resource list`, `resource status` and `resource drain` listings."""

import re

from flux_lite import config as configmod
from flux_lite.config import queue_config, queues_of_ranks
from flux_lite.errors import FluxLiteError, FormatError
from flux_lite.formats import outputformat
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.outputformat import Markup
from flux_lite.formats.rset import Rset
from flux_lite.listing import AltField, Listing, Row
from flux_lite.resources import resource_status, targets_to_ranks

RESOURCE_LIST = Listing(
    "flux-resource list",
    {
        "default": ("Default flux-resource list format string",
                    "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} +:{ncores:>6} ?+:{ngpus:>5} "
                    "{nodelist}"),
        "rlist": ("Format including resource list details",
                  # Flux 0.88's own "?:+": the sentinel goes, the "+" stays (+NGPUS)
                  "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} +:{ncores:>6} ?:+{ngpus:>5} "
                  "{rlist}"),
    },
    {
        "state": "STATE", "nnodes": "NNODES", "ncores": "NCORES", "ngpus": "NGPUS", "nodelist": "NODELIST",
        "ranks": "RANKS", "rlist": "LIST", "properties": "PROPERTIES", "propertiesx": "PROPERTIES", "queue": "QUEUE",
    },
    user_format_errors=False,
)

_STATUS_HEADINGS = {
    "state": "STATE", "statex": "STATE", "nnodes": "NNODES", "ranks": "RANKS", "nodelist": "NODELIST",
    "reason": "REASON", "timestamp": "TIME", "status": "STATUS", "up": "UP", "up.ascii": "UP",
    "color_up": "", "color_off": "",
}
COLOR_FIELDS = ("color_up", "color_off")

RESOURCE_STATUS = Listing(
    "flux-resource status",
    {
        # uncolored, the {color_up}/{color_off} fields go with the space before
        # them (outputformat.without_fields): "{state:>12}{up:>2} ..."
        "default": ("Default flux-resource status format string",
                    "{state:>12} {color_up}{up:>2}{color_off} {nnodes:>6} {nodelist}"),
        "long": ("Long flux-resource status format string",
                 "{state:>12} {color_up}{up:>2}{color_off} {nnodes:>6} +:{reason:<30.30} {nodelist}"),
    },
    _STATUS_HEADINGS,
    user_format_errors=False,
)

RESOURCE_DRAIN = Listing(
    "flux-resource drain",
    {
        "long": ("Long flux-resource drain format string",
                 "{timestamp!d:%b%d %R::<12} {state:<8.8} {ranks:<8.8+} +:{reason:<30.30} {nodelist}"),
        "default": ("Default flux-resource drain format string",
                    "{timestamp!d:%b%d %R::<12} {state:<8.8} {reason:<30.30+} {nodelist}"),
    },
    _STATUS_HEADINGS,
    user_format_errors=False,
)

# `resource status -s`: the states Flux knows, in the order it lists them
STATUS_STATES = ("all", "online", "avail", "offline", "exclude", "drain", "draining", "drained", "torpid",
                 "allocated", "housekeeping")
STATUS_DEFAULT = "avail,exclude,draining,drained,torpid,housekeeping"


class InvalidState(FluxLiteError):
    """A -s state flux resource status does not know (Flux also lists the valid ones)."""


class _ResourceRow(Row):
    """A resource list line; the costly fields (a nodelist of thousands of
    hosts, the rank idset, the R summary) are computed only when printed."""

    __slots__ = ("_rset",)

    def __missing__(self, key):
        rs = self._rset
        if key == "nodelist":
            value = str(rs.nodelist) if rs.nnodes and rs.has_nodelist else ""
        elif key == "ranks":
            value = str(rs.ranks)
        elif key == "rlist":
            value = rs.summary()
        else:
            raise KeyError(key)
        self[key] = value
        return value


def _row(state, rset, queue="", queue_names=()):
    props = sorted(rset.properties) if rset.properties else []
    row = _ResourceRow(
        state=state, nnodes=rset.nnodes, ncores=rset.ncores, ngpus=rset.ngpus,
        properties=",".join(props),
        # properties that are not also the name of a configured queue
        propertiesx=",".join(p for p in props if p not in queue_names),
        queue=queue,
    )
    row._rset = rset
    return row


# fields whose values split a state's resources into several lines
UNIQ_FIELDS = ("state", "properties", "propertiesx", "queue")


def list_rows(broker, states=("free", "allocated", "down"), source="job-manager", fields=None, queues=None,
              include=None, status=None, cfg=None):
    """`resource list`: one row per state asked for, split, as flux resource
    list does, into one row per distinct value of the uniq fields the
    format shows (queue, properties); queues (names) restrict it to their
    resources, and the QUEUE column to their names; include (ranks or
    hosts) to those resources. status and cfg (resource_status()'s dict
    and a config) replace the instance's (--from-stdin, --config-file)."""
    if cfg is None:
        cfg = broker.config
    qc = queue_config(cfg)
    for name in queues or ():
        check_queue(qc, name)
    if status is None:
        status = resource_status(broker, source)
    for state in states:
        if state not in status:
            raise FluxLiteError(f"Invalid resource state {state} specified")
    if include is not None:
        status = filter_status(status, include_ranks(status["all"], include))
    fields = set(fields or ())
    # the fields whose values make lines differ: none when the format shows
    # a single field other than state (`-no {properties}` prints one line)
    uniq = [f for f in UNIQ_FIELDS if f in fields] if len(fields) > 1 or "state" in fields else []
    per_queue = queues_of_ranks(cfg, status["all"]) if qc.named else {}
    if queues:
        # the queues asked for, in config order: a virtual one on its parent's nodes
        listed = [n for n in qc.names() if n in queues]
        wanted = IDset()
        for name in listed:
            wanted = wanted | per_queue[name]
    else:
        # virtual queues run on their parent's nodes: Flux lists only the parents
        listed = [n for n in qc.names() if not qc.defs[n].parent]
    names = set(qc.names())
    lines = {}  # key -> [state, queue string, rset]: what prints alike is one line

    def add(state, props, qs, rset):
        values = {"state": state, "properties": props, "propertiesx": tuple(p for p in props if p not in names),
                  "queue": qs}
        key = tuple(values[f] for f in uniq)
        line = lines.get(key)
        if line is None:
            lines[key] = [state, qs, rset]
        else:
            line[2] = line[2].union(rset)

    for state in states:
        rset = status[state]
        if queues:
            rset = rset.copy_ranks(rset.ranks & wanted)
        if not rset.nnodes:
            # an empty line per queue (Flux shows the queue of an empty state)
            for name in (listed or [""]) if qc.named else [""]:
                add(state, (), name, rset)
            continue
        groups = {}  # (properties, queues) -> [ranks]
        for rank in rset.ranks:
            qs = ",".join(n for n in listed if rank in per_queue[n])
            props = tuple(sorted(p for p, ids in rset.properties.items() if rank in ids))
            groups.setdefault((props, qs), []).append(rank)
        for (props, qs), ranks in groups.items():
            add(state, props, qs, rset.copy_ranks(IDset(ranks)))
    # Flux's order: by state as asked, then by first rank (empty lines last)
    order = {state: i for i, state in enumerate(states)}
    ordered = sorted(lines.values(), key=lambda line: (order[line[0]], line[2].ranks.first() if line[2].nnodes
                                                        else 1 << 32))
    return [_row(state, rset, qs, names if qc.named else ()) for state, qs, rset in ordered]


def check_queue(qc, name):
    """A queue -q names: configured, and a virtual one's parent too (Flux's words)."""
    if name not in qc.defs:
        raise FluxLiteError(f"--queue: {name}: no such queue")
    parent = qc.defs[name].parent
    if parent and parent not in qc.defs:
        raise FluxLiteError(f"--queue: queue '{name}': parent queue '{parent}' is not configured")


def include_ranks(rset, text):
    """-i/--include as flux resource reads it: an idset of ranks, else a
    hostlist whose hosts in rset name ranks (other hosts are ignored)."""
    try:
        return IDset.parse(text) & rset.ranks  # (never expanded: "0-999999999" stays a range)
    except FormatError:
        pass
    try:
        hosts = set(Hostlist.parse(text))
    except FormatError as exc:
        raise FluxLiteError(f"--include: {exc}") from None
    if not rset.has_nodelist:
        return IDset()
    return IDset(r for r in rset.ranks if rset.hostname(r) in hosts)


def filter_status(status, ranks):
    """resource_status()'s dict restricted to ranks."""
    out = {name: status[name].copy_ranks(status[name].ranks & ranks) for name in ("all", "allocated", "down")}
    return with_derived(out)


def with_derived(status):
    """{all, allocated, down} with up (all but down) and free (up but allocated) added."""
    status = dict(status)
    status["up"] = status["all"].difference(status["down"])
    status["free"] = status["up"].difference(status["allocated"])
    return status


def status_of_input(doc):
    """What flux resource list --from-stdin reads (the scheduler's
    resource-status payload: all, allocated and down, each an R or null)
    as resource_status()'s dict; FluxLiteError if it is not that."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise FluxLiteError("input is not a JSON object")
    out = {}
    for name in ("all", "allocated", "down"):
        R = doc.get(name)
        try:
            out[name] = Rset.from_dict(R) if R is not None else Rset()
        except FormatError as exc:
            raise FluxLiteError(f"{name}: {exc}") from None
    return with_derived(out)


def listed_status(broker, doc, cfg, queues=(), include=None):
    """resource_status()'s dict (`resource R`): the instance's, or the
    input's (doc, with the config cfg), restricted to the resources of
    queues and to include (ranks or hosts)."""
    if broker is not None:
        status, cfg = resource_status(broker), broker.config
    else:
        status = status_of_input(doc)
    if queues:
        qc = queue_config(cfg)
        for name in queues:
            check_queue(qc, name)
        per_queue = queues_of_ranks(cfg, status["all"])
        wanted = IDset()
        for name in queues:
            wanted = wanted | per_queue[name]
        status = filter_status(status, wanted)
    if include is not None:
        status = filter_status(status, include_ranks(status["all"], include))
    return status


def R_of_states(status, states):
    """`resource R`: the union of the states' resource sets, with the times of all."""
    rs = Rset().with_times(status["all"].starttime, status["all"].expiration)
    for state in states:
        if state not in status:
            raise FluxLiteError(f"Invalid resource state {state} specified")
        rs = rs.union(status[state])
    return rs


def status_states(text=None):
    """-s STATES as flux resource status reads them: checked, `drain` meaning
    draining and drained, and online/offline alone adding the default states."""
    states = (text or STATUS_DEFAULT).split(",")
    for state in states:
        if state not in STATUS_STATES:
            raise InvalidState(f"Invalid resource state {state} specified")
    if all(state in ("online", "offline") for state in states):
        states += STATUS_DEFAULT.split(",")
    if "drain" in states:
        states.remove("drain")
        states += ["draining", "drained"]
    return states


def _rank_sets(broker, include=None, queues=None):
    """Ranks by status: all, online, offline, exclude, allocated, torpid,
    housekeeping, draining, drained, avail (as Flux's ResourceStatus), and
    the drain reason and time of each drained rank."""
    res = broker.resources
    full = Rset.from_dict(res.instance_R)
    everything = set(full.ranks)
    exclude = set()
    text = configmod.get_path(broker.config, "resource.exclude")
    if text is not None:
        exclude = set(targets_to_ranks(full, str(text)))
    hk = set()
    for rs in broker.housekeeping.allocated_R().values():
        hk |= set(rs.ranks)
    sets = {"all": everything, "online": set(everything), "offline": set(), "exclude": exclude,
            "allocated": set(res.allocated_rset().ranks), "torpid": set(), "housekeeping": hk}
    return _derived_sets(full, sets, res.drained, broker.config, include, queues)


def _derived_sets(full, sets, drained, cfg, include, queues):
    if queues:
        qc = queue_config(cfg)
        for name in queues:
            check_queue(qc, name)
        per_queue = queues_of_ranks(cfg, full)
        wanted = set()
        for name in queues:
            wanted |= set(per_queue[name])
        sets = {name: ids & wanted for name, ids in sets.items()}
    if include is not None:
        wanted = set(include_ranks(full, include))
        sets = {name: ids & wanted for name, ids in sets.items()}
    drained = {r: info for r, info in drained.items() if r in sets["all"]}
    sets["draining"] = set(drained) & sets["allocated"]
    sets["drained"] = set(drained) - sets["draining"]
    sets["avail"] = sets["all"] - sets["exclude"] - set(drained) - sets["torpid"]
    return full, sets, drained


def _input_sets(doc, cfg, include, queues):
    """_rank_sets() of what flux resource status --from-stdin reads: the
    resource module's resource.status payload (R, online, offline,
    exclude, torpid and drain: {ranks: {timestamp, reason}}), nothing
    allocated or in housekeeping."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise FluxLiteError("input is not a JSON object")
    try:
        full = Rset.from_dict(doc["R"]) if doc.get("R") is not None else Rset()
        sets = {name: set(IDset.parse(doc.get(name) or "")) for name in ("online", "offline", "exclude", "torpid")}
        drained = {}
        for ranks, entry in (doc.get("drain") or {}).items():
            for rank in IDset.parse(ranks):
                drained[rank] = {"timestamp": entry["timestamp"], "reason": entry.get("reason") or ""}
    except (FormatError, KeyError, TypeError, AttributeError) as exc:
        raise FluxLiteError(f"invalid resource status input: {exc}") from None
    sets.update(all=set(full.ranks), allocated=set(), housekeeping=set())
    return _derived_sets(full, sets, drained, cfg, include, queues)


# the UP column ({up.ascii}: y/n) and Flux's colors for it
_UP, _DOWN = AltField("\u2714", "y"), AltField("\u2717", "n")
_GREEN, _RED, _RESET = Markup("\033[01;32m"), Markup("\033[01;31m"), Markup("\033[0;0m")


class StatusLine(Row):
    """One `resource status` line; lines alike but for their nodes combine."""

    __slots__ = ()

    @classmethod
    def make(cls, hostname, state, online, ranks, reason="", timestamp=""):
        line = cls(statex=state, state=state if online else state + "*", status="online" if online else "offline",
                   up=_UP if online else _DOWN, reason=reason, timestamp=timestamp,
                   color_up=_GREEN if online else _RED, color_off=_RESET)
        ranks = sorted(ranks)
        line.set_ranks(ranks, [hostname(r) for r in ranks])
        return line

    def set_ranks(self, ranks, hosts):
        self["_ranks"] = ranks
        self["_hosts"] = hosts
        self["ranks"] = str(IDset(ranks))
        self["nodelist"] = str(Hostlist(hosts))
        self["nnodes"] = len(hosts)

    def combine(self, other):
        """other's nodes added, as Flux's ResourceStatusLine.update: ranks
        as a set, hosts appended and sorted (a rank in two combined states,
        excluded and drained, counts twice in NNODES, as in Flux)."""
        self.set_ranks(sorted(set(self["_ranks"]) | set(other["_ranks"])),
                       sorted(self["_hosts"] + other["_hosts"], key=_host_order))


def _host_order(host):
    """Flux's hostlist sort: by prefix, then by the number that ends the name."""
    match = re.match(r"(.*?)(\d*)$", host)
    prefix, digits = match.group(1), match.group(2)
    return (prefix, digits != "", int(digits) if digits else 0, len(digits))


def status_lines(broker, fmt, states_text=None, skip_empty=False, include=None, queues=None, doc=None, cfg=None):
    """`resource status` rows, built and combined as flux resource status does:
    a line per state and online status, drained ranks one by one (with their
    reason and time); lines that print alike but for nodelist, ranks and
    nnodes are combined into the first. Empty lines are kept only when
    states were asked for (-s) and not --skip-empty."""
    states = status_states(states_text)
    skip_empty = skip_empty or not states_text
    skip_empty_offline = "offline" not in states
    include_online = "online" in states or "offline" not in states
    include_offline = "offline" in states or "online" not in states
    if doc is not None or broker is None:
        full, sets, drained = _input_sets(doc, cfg or {}, include, queues)
    else:
        full, sets, drained = _rank_sets(broker, include, queues)
    if "all" in states or "draining" in states or "drained" in states:
        sets["torpid"] = sets["torpid"] - sets["draining"] - sets["drained"]
    hostname = full.hostname
    wanted = set(states)
    candidates = []
    for state in ("avail", "exclude", "allocated", "torpid", "housekeeping"):
        if not wanted & {state, "all"}:
            continue
        for online in (True, False):
            if not (include_online if online else include_offline):
                continue
            ranks = sets[state] & sets["online" if online else "offline"]
            candidates.append(StatusLine.make(hostname, state, online, ranks))
    for state in ("draining", "drained"):
        if not wanted & {state, "all"}:
            continue
        if not sets[state] and include_online:
            candidates.append(StatusLine.make(hostname, state, True, ()))
        for rank in sorted(sets[state]):
            online = rank in sets["online"]
            if not (include_online if online else include_offline):
                continue
            info = drained[rank]
            candidates.append(StatusLine.make(hostname, state, online, (rank,), reason=info["reason"] or "",
                                              timestamp=info["timestamp"]))
    formatter = outputformat.OutputFormat(fmt, RESOURCE_STATUS.headings)
    keyfmt = formatter.dedup_format(("nodelist", "ranks", "nnodes"))
    combined = {}
    lines = []
    for line in candidates:
        key = keyfmt.format(line)
        first = combined.get(key)
        if first is not None:
            first.combine(line)
            continue
        combined[key] = line
        lines.append(line)
    return [line for line in lines
            if line["nnodes"] or not (skip_empty or (line["status"] == "offline" and skip_empty_offline))]


def drained_rows(broker):
    """(timestamp, state, rank, reason, nodelist) per drained rank, for library callers."""
    res = broker.resources
    allocated = res.allocated_rset().ranks
    return [(info["timestamp"], _drain_state(rank, allocated), rank, info["reason"] or "",
             res.hostlist_of(IDset([rank]))) for rank, info in sorted(res.drained.items())]


def _drain_state(rank, allocated):
    """A drained rank still in use is "draining" until its job or housekeeping lets go."""
    return "draining" if rank in allocated else "drained"
