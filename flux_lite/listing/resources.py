"""The `resource list`, `resource status` and `resource drain` listings."""

from flux_lite.errors import FluxLiteError
from flux_lite.listing import Listing, Row

RESOURCE_LIST = Listing(
    "flux-resource list",
    {
        "default": ("Default flux-resource list format string",
                    "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} {ncores:>6} {ngpus:>5} "
                    "{nodelist}"),
        "rlist": ("Format including resource list details",
                  # the stray "+" before NGPUS is Flux 0.88's own
                  "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} {ncores:>6} +{ngpus:>5} "
                  "{rlist}"),
    },
    {
        "state": "STATE", "nnodes": "NNODES", "ncores": "NCORES", "ngpus": "NGPUS", "nodelist": "NODELIST",
        "ranks": "RANKS", "rlist": "LIST", "properties": "PROPERTIES", "propertiesx": "PROPERTIES", "queue": "QUEUE",
    },
)

RESOURCE_STATUS = Listing(
    "flux-resource status",
    {"default": ("Default flux-resource status format string", "{state:>12}{up:>2} {nnodes:>6} {nodelist}")},
    {"state": "STATE", "up": "UP", "nnodes": "NNODES", "nodelist": "NODELIST", "ranks": "RANKS",
     "reason": "REASON"},
)


def _row(state, rset, queue=""):
    props = sorted(rset.properties) if rset.properties else []
    qnames = set(queue.split(",")) if queue else set()
    return Row(
        state=state, nnodes=rset.nnodes, ncores=rset.ncores, ngpus=rset.ngpus,
        nodelist=str(rset.nodelist) if rset.nnodes else "", ranks=str(rset.ranks),
        rlist=rset.summary(), properties=",".join(props),
        # properties that are not also the name of a queue the resources belong to
        propertiesx=",".join(p for p in props if p not in qnames),
        queue=queue,
    )


# fields whose values split a state's resources into several lines
UNIQ_FIELDS = ("state", "properties", "propertiesx", "queue")


def list_rows(broker, states=("free", "allocated", "down"), source="job-manager", fields=None, queue=None):
    """`resource list`: one row per state asked for, split, as flux resource
    list does, into one row per distinct value of the uniq fields the
    format shows (queue, properties); queue restricts to one queue's lines."""
    from flux_lite.queues import queue_config, queues_of_ranks
    from flux_lite.resources import resource_status

    qc = queue_config(broker.config)
    if queue is not None and queue not in qc.defs:
        raise FluxLiteError(f"--queue: {queue}: no such queue")
    status = resource_status(broker, source)
    for state in states:
        if state not in status:
            raise FluxLiteError(f"Invalid resource state {state} specified")
    fields = set(fields or ())
    split = [f for f in UNIQ_FIELDS if f in fields and f != "state"]
    if len(fields) <= 1 and "state" not in fields:
        split = []  # `-no {properties}` lists each value once, as in Flux
    per_queue = queues_of_ranks(broker.config, status["all"]) if qc.named else {}
    out = []
    for state in states:
        rset = status[state]
        if queue is not None:
            rset = rset.copy_ranks(rset.ranks & per_queue[queue])
        if not split:
            out.append(_row(state, rset))
            continue
        if not rset.nnodes:
            if "queue" in split and qc.named:
                names = [queue] if queue is not None else qc.names()
                out.extend(_row(state, rset, name) for name in names)
            else:
                out.append(_row(state, rset))
            continue
        groups = {}  # key -> (queue string, [ranks])
        for rank in rset.ranks:
            qs = ",".join(n for n in qc.names() if rank in per_queue[n])
            props = tuple(sorted(p for p, ids in rset.properties.items() if rank in ids))
            key = tuple(qs if f == "queue" else props for f in split)
            groups.setdefault(key, (qs, []))[1].append(rank)
        from flux_lite.formats.idset import IDset

        for qs, ranks in groups.values():
            out.append(_row(state, rset.copy_ranks(IDset(ranks)), qs))
    return out


# the states flux resource status accepts
STATUS_STATES = ("online", "offline", "avail", "exclude", "draining", "drained", "torpid", "housekeeping",
                 "allocated", "lost", "up", "down", "all")


def status_rows(broker, states=None):
    """`resource status`: nodes grouped by state (avail, draining, drained,
    housekeeping), drained ones also by reason, as flux resource status does."""
    from flux_lite.formats.idset import IDset

    res = broker.resources
    allocated = res.allocated_rset().ranks
    drained = res.drained
    hk_ranks = set()
    for rs in broker.housekeeping.allocated_R().values():
        hk_ranks |= set(rs.ranks)
    groups = {}  # (state, reason) -> ranks, in rank order
    for rank in res.rset.ranks:
        if rank in drained:
            groups.setdefault((_drain_state(rank, allocated), drained[rank]["reason"]), []).append(rank)
        else:
            groups.setdefault(("avail", ""), []).append(rank)
        if rank in hk_ranks:
            groups.setdefault(("housekeeping", ""), []).append(rank)
    for state in states or ():
        if state not in STATUS_STATES:
            raise FluxLiteError(f"Invalid resource state {state} specified")
    wanted = states or ["avail", "exclude", "draining", "drained", "torpid", "housekeeping"]
    rows = []
    for state in wanted:
        for (gstate, reason), ranks in groups.items():
            if gstate != state:
                continue
            idset = IDset(ranks)
            rows.append(Row(state=state, up="\u2714", nnodes=len(ranks), ranks=str(idset),
                            nodelist=res.hostlist_of(idset), reason=reason))
    return rows


def drained_rows(broker):
    """`resource drain` without targets: (timestamp, state, rank, reason, nodelist) per drained rank."""
    from flux_lite.formats.idset import IDset

    res = broker.resources
    allocated = res.allocated_rset().ranks
    rows = []
    for rank in sorted(res.drained):
        info = res.drained[rank]
        rows.append((info["timestamp"], _drain_state(rank, allocated), rank, info["reason"],
                     res.hostlist_of(IDset([rank]))))
    return rows


def _drain_state(rank, allocated):
    """A drained rank still in use is "draining" until its job or housekeeping lets go."""
    return "draining" if rank in allocated else "drained"
