"""RFC 31 constraints as the schedulers use them.

Matching itself is Rset.ranks_matching (every policy's pool filters its
candidate ranks with it). Here: the checks a constraint gets at submit time.
"""

from __future__ import annotations

from errno import EINVAL

from flux_lite.errors import FluxLiteError


def check_hosts(broker, constraint) -> None:
    """job-ingest's check: every host a constraint names must exist."""
    from flux_lite.formats.constraint import hostnames

    try:
        names = hostnames(constraint)
    except ValueError as exc:
        raise FluxLiteError(f"invalid constraint: {exc}", errno=EINVAL) from None
    if not names:
        return
    rset = broker.resources.rset
    known = {rset.hostname(r) for r in rset.ranks}
    for name in names:
        if name not in known:
            raise FluxLiteError(f"host constraint contains invalid hosts: host '{name}' not found", errno=EINVAL)
