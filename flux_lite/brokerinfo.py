"""What an instance's brokers say of themselves: broker attributes (flux
getattr/lsattr), uptime and the overlay (TBON) status.
flux-lite's instance is brokers that are always up on one machine: every
rank of the instance is online and in state run.
"""

import socket
from typing import Any

from flux_lite import __version__
from flux_lite.formats.rset import Rset
from flux_lite.instance import served_socket

# Flux's default tree-based overlay network: k-ary, k = 32
TBON_FANOUT = 32

def attributes(broker: Any) -> dict[str, str]:
    """The broker attributes of rank 0, by name (sorted), as strings."""
    inst = broker.instance
    hosts = hostnames(broker)
    size = len(hosts)
    state = str(inst.state_dir)
    sock = served_socket(state)
    attrs = {
        "broker.pid": "0",
        "broker.starttime": "%f" % inst.meta.get("start", 0.0),
        "hostlist": (hosts[0] if _fake(broker) else broker.resources.hostlist_of(range(size))) if size else "",
        "instance-level": "0",
        # the broker socket while `flux-lite start COMMAND` serves one
        "local-uri": f"local://{sock or state}",
        "rank": "0",
        "rundir": state,
        "security.owner": str(inst.owner),
        "size": str(size),
        "statedir": state,
        "tbon.fanout": str(TBON_FANOUT),
        "tbon.topo": f"kary:{TBON_FANOUT}",
        "version": __version__,  # (as flux version prints it)
    }
    return dict(sorted(attrs.items()))


def hostnames(broker: Any) -> list[str]:
    """The host name of each broker rank of the instance (excluded ranks
    too): one per rank of its resources, except an instance of
    [fake-resources], which is one broker on this machine (as Flux's:
    size 1, its own host name) whatever nodes its resources pretend."""
    if _fake(broker):
        return [socket.gethostname().split(".", 1)[0]]
    rset = Rset.from_dict(broker.resources.instance_R)
    return [rset.hostname(rank) for rank in sorted(rset.ranks)]


def _fake(broker: Any) -> bool:
    return broker.config.get("fake-resources") is not None


def tbon_children(size: int, fanout: int = TBON_FANOUT) -> dict[int, list[int]]:
    """rank -> its children in a k-ary tree of size ranks (rank 0 the root)."""
    return {rank: [c for c in range(rank * fanout + 1, rank * fanout + fanout + 1) if c < size]
            for rank in range(size)}


def uptime(broker: Any) -> dict:
    """flux uptime's figures: now, the seconds since the instance started,
    the owner, the size, drained ranks, and whether submission is disabled
    (every queue) or scheduling stopped (every queue)."""
    inst = broker.instance
    size = len(hostnames(broker))
    queues = broker.queues
    names = queues.status_names()
    statuses = [queues.status(name) for name in names]
    return {
        "now": broker.now,
        "runtime": max(broker.now - inst.meta.get("start", broker.now), 0.0),
        "owner": inst.owner,
        "size": size,
        "drained": len(broker.resources.drained),
        "submit_disabled": all(not s["enable"] for s in statuses),
        "sched_stopped": all(not s["start"] for s in statuses),
    }

