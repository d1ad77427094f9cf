"""The `resource list`, `resource status` and `resource drain` listings."""

from flux_lite import config as configmod
from flux_lite.config import queue_config, queues_of_ranks
from flux_lite.errors import FluxLiteError
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
            value = str(rs.nodelist) if rs.nnodes else ""
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


def list_rows(broker, states=("free", "allocated", "down"), source="job-manager", fields=None, queues=None):
    """`resource list`: one row per state asked for, split, as flux resource
    list does, into one row per distinct value of the uniq fields the
    format shows (queue, properties); queues (names) restrict it to their
    resources, and the QUEUE column to their names."""
    qc = queue_config(broker.config)
    for name in queues or ():
        if name not in qc.defs:
            raise FluxLiteError(f"--queue: {name}: no such queue")
    status = resource_status(broker, source)
    for state in states:
        if state not in status:
            raise FluxLiteError(f"Invalid resource state {state} specified")
    fields = set(fields or ())
    split = [f for f in UNIQ_FIELDS if f in fields and f != "state"]
    if len(fields) <= 1 and "state" not in fields:
        split = []  # `-no {properties}` lists each value once, as in Flux
    per_queue = queues_of_ranks(broker.config, status["all"]) if qc.named else {}
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
    out = []
    for state in states:
        rset = status[state]
        if queues:
            rset = rset.copy_ranks(rset.ranks & wanted)
        if not split or (not rset.properties and not qc.named):
            out.append(_row(state, rset))  # one line: nothing to split it by
            continue
        if not rset.nnodes:
            if "queue" in split and qc.named:
                out.extend(_row(state, rset, name, names) for name in listed)
            else:
                out.append(_row(state, rset, "", names))
            continue
        groups = {}  # key -> (queue string, [ranks])
        for rank in rset.ranks:
            qs = ",".join(n for n in listed if rank in per_queue[n])
            props = tuple(sorted(p for p, ids in rset.properties.items() if rank in ids))
            key = tuple(qs if f == "queue" else props for f in split)
            groups.setdefault(key, (qs, []))[1].append(rank)
        for qs, ranks in groups.values():
            out.append(_row(state, rset.copy_ranks(IDset(ranks)), qs, names))
    return out


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


def _rank_sets(broker, include=None):
    """Ranks by status: all, online, offline, exclude, allocated, torpid,
    housekeeping, draining, drained, avail (as Flux's ResourceStatus)."""
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
    if include is not None:
        try:
            wanted = set(targets_to_ranks(full, include))
        except FluxLiteError as exc:
            raise FluxLiteError(f"--include: {exc}") from None
        sets = {name: ids & wanted for name, ids in sets.items()}
    drained = {r for r in res.drained if r in sets["all"]}
    sets["draining"] = drained & sets["allocated"]
    sets["drained"] = drained - sets["draining"]
    sets["avail"] = sets["all"] - sets["exclude"] - drained - sets["torpid"]
    return full, sets, IDset


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
        line.set_ranks(hostname, sorted(ranks))
        return line

    def set_ranks(self, hostname, ranks):
        self["_ranks"] = ranks
        self["ranks"] = str(IDset(ranks))
        self["nodelist"] = str(Hostlist([hostname(r) for r in ranks]))
        self["nnodes"] = len(ranks)


def status_lines(broker, fmt, states_text=None, skip_empty=False, include=None):
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
    full, sets, _ = _rank_sets(broker, include)
    if "all" in states or "draining" in states or "drained" in states:
        sets["torpid"] = sets["torpid"] - sets["draining"] - sets["drained"]
    hostname = full.hostname
    drained = broker.resources.drained
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
    keyfmt = outputformat.OutputFormat._from_tokens(
        formatter, [tok for tok in formatter.tokens if tok[1] not in ("nodelist", "ranks", "nnodes")])
    combined = {}
    lines = []
    for line in candidates:
        key = keyfmt.format(line)
        first = combined.get(key)
        if first is not None:
            first.set_ranks(hostname, sorted(set(first["_ranks"]) | set(line["_ranks"])))
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
