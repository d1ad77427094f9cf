"""The `housekeeping list` listing: one row per job whose nodes are still in housekeeping."""

from flux_lite.errors import FluxLiteError, FormatError
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.outputformat import lookup
from flux_lite.listing import Listing, Row
from flux_lite.listing.jobs import ID_HEADINGS, JobID

HOUSEKEEPING = Listing(
    "flux-housekeeping",
    {
        "default": ("Default flux-housekeeping format string",
                    "{id.f58:>12} {nnodes:>6} {pending.nnodes:>7} {runtime!F:>8} {nodelist}"),
        "pending": ("flux-housekeeping format string including active nodes only",
                    "{id.f58:>12} {pending.nnodes:>7} {runtime!F:>8} {pending.nodelist}"),
    },
    {
        **ID_HEADINGS,
        "t_start": "T_START", "runtime": "RUNTIME",
        "ranks": "RANKS", "nodelist": "NODELIST", "nnodes": "NNODES",
        "allocated.ranks": "RANKS", "allocated.nodelist": "NODELIST", "allocated.nnodes": "NNODES",
        "pending.ranks": "ACTIVE_RANKS", "pending.nodelist": "ACTIVE_NODES", "pending.nnodes": "#ACTIVE",
    },
)
NODE_FIELDS = ("ranks", "nodelist", "nnodes")


def _nodeinfo(broker, ranks):
    return Row(ranks=str(ranks), nodelist=broker.resources.hostlist_of(ranks) if ranks else "",
               nnodes=len(ranks))


def include_ranks(broker, text):
    """`-i HOSTS|RANKS`: an idset, else a hostlist whose hosts must all be the
    instance's (`host 'X' not found`, as Flux's Hostlist.index says)."""
    try:
        return IDset.parse(text)
    except FormatError:
        pass
    try:
        hosts = set(Hostlist.parse(text))
    except FormatError as exc:
        raise FluxLiteError(str(exc)) from None
    rset = broker.resources.rset
    known = {rset.hostname(r) for r in rset.ranks}
    for host in Hostlist.parse(text):
        if host not in known:
            raise FluxLiteError(f"host '{host}' not found")
    return IDset(r for r in rset.ranks if rset.hostname(r) in hosts)


def rows(broker, include=None):
    """Rows for `housekeeping list`: one per job, sets restricted to `include`."""
    items = []
    for jobid, rec in broker.housekeeping.running().items():
        pending = IDset.parse(rec["pending"])
        allocated = IDset.parse(rec["allocated"])
        if include is not None:
            pending = pending & include
            allocated = allocated & include
            if not allocated:
                continue
        alloc = _nodeinfo(broker, allocated)
        item = Row(id=JobID(jobid), t_start=rec["t_start"], runtime=max(broker.now - rec["t_start"], 0.0),
                   pending=_nodeinfo(broker, pending), allocated=alloc)
        item.update(alloc)
        items.append(item)
    return items


def merge(broker, items, fields):
    """Rows identical except for node/rank/count fields are merged (ranks unioned)."""
    keyfields = [f for f in fields if f.split(".")[-1] not in NODE_FIELDS]
    merged = {}
    order = []
    for item in items:
        key = tuple(str(lookup(item, f)) for f in keyfields)
        if key not in merged:
            merged[key] = (IDset.parse(item["allocated"]["ranks"]), IDset.parse(item["pending"]["ranks"]), item)
            order.append(key)
        else:
            a, p, first = merged[key]
            merged[key] = (a | IDset.parse(item["allocated"]["ranks"]), p | IDset.parse(item["pending"]["ranks"]),
                           first)
    out = []
    for key in order:
        a, p, first = merged[key]
        item = Row(first)
        item["allocated"] = _nodeinfo(broker, a)
        item["pending"] = _nodeinfo(broker, p)
        item.update(item["allocated"])
        out.append(item)
    return out

