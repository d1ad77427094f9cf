"""Purging inactive jobs, as flux-core's job-manager purge service.

Inactive jobs are purged oldest first (by the time they became inactive). A
job is eligible when it became inactive more than ``age_limit`` seconds ago,
or when more than ``num_limit`` inactive jobs would otherwise remain (-1 for
either means no limit). Purging unlinks the job's KVS directory and drops it
from the jobs index (and so from `jobs` and `job last`); a waitable job not
waited on yet can still be waited on, as Flux keeps its zombies.

``job-manager.inactive-age-limit`` / ``inactive-num-limit`` in the config make
every command purge what became eligible, as Flux's job manager does on its
heartbeat, so a long rehearsal does not grow without bound.
"""

from errno import EINVAL, ENOENT

from flux_lite import access
from flux_lite.errors import FluxLiteError
from flux_lite.formats import fsd
from flux_lite.formats.jobid import kvs_key
from flux_lite.job_manager import index, stats, wait
from flux_lite.job_manager.job import INACTIVE

BATCH_MAX = 100  # Flux's limit on KVS unlinks per purge request
UNLIMITED = -1


def inactive_count(conn) -> int:
    return index.inactive_count(conn)


def eligible_count(conn, now: float, age_limit: float = UNLIMITED, num_limit: int = UNLIMITED) -> int:
    """How many inactive jobs the limits make purgeable.

    Both limits select a prefix of the oldest-first order, so the eligible
    jobs are the longer of the two prefixes; each is counted through an index.
    """
    count = 0
    if num_limit != UNLIMITED:
        count = max(inactive_count(conn) - num_limit, 0)
    if age_limit != UNLIMITED:
        count = max(count, index.inactive_count(conn, before=now - age_limit))
    return count


def eligible(conn, now: float, age_limit: float = UNLIMITED, num_limit: int = UNLIMITED):
    """Ids of the purgeable inactive jobs, oldest first."""
    count = eligible_count(conn, now, age_limit, num_limit)
    return index.oldest_inactive(conn, count) if count else []


def remove(broker, ids) -> None:
    """Unlink purged jobs: KVS directory and index (a zombie stays waitable)."""
    if not ids:
        return
    kvs = broker.kvs
    wait.keep_outcomes(kvs, ids)
    for jobid in ids:
        kvs.delete(kvs_key(jobid))
    by_queue = index.queue_counts(kvs.conn, list(ids))
    index.delete(kvs.conn, ids)
    stats.add_purged(kvs, len(ids), by_queue)


def _check_owner(broker):
    access.require_owner(broker.instance.identity, "purge")


def purge(broker, age_limit: float = UNLIMITED, num_limit: int = UNLIMITED, batch: int = 50,
          force: bool = False):
    """job-manager.purge: returns (count, inactive jobs remaining).

    Without force only counts what would go. With force, purges in batches
    until none is left (as `flux job purge --force` repeats its request).
    """
    _check_owner(broker)
    if age_limit != UNLIMITED and age_limit < 0:
        raise FluxLiteError("if set, age limit must be >= 0", errno=EINVAL)
    if num_limit != UNLIMITED and num_limit < 0:
        raise FluxLiteError("if set, num limit must be >= 0", errno=EINVAL)
    if not 1 <= batch <= BATCH_MAX:
        raise FluxLiteError(f"batch must be >= 1 and <= {BATCH_MAX}", errno=EINVAL)
    broker.flush()  # this command's own changes must be visible
    conn = broker.kvs.conn
    if not force:  # only say how many: no need to read their ids
        return eligible_count(conn, broker.now, age_limit, num_limit), inactive_count(conn)
    ids = eligible(conn, broker.now, age_limit, num_limit)
    if ids:
        remove(broker, ids)
        broker.log("job-manager", "debug", f"purged {len(ids)} inactive jobs")
    return len(ids), inactive_count(conn)


def purge_ids(broker, ids, force: bool = False):
    """job-manager.purge-id for each id: returns (count, inactive jobs remaining)."""
    _check_owner(broker)
    broker.flush()
    conn = broker.kvs.conn
    for jobid in ids:
        state = index.state_of(conn, jobid)
        if state is None:
            raise FluxLiteError("id not found", errno=ENOENT)
        if state != INACTIVE:
            raise FluxLiteError("cannot purge active job", errno=EINVAL)
    unique = list(dict.fromkeys(ids))
    if force:
        remove(broker, unique)
        broker.log("job-manager", "debug", f"purged {len(unique)} inactive jobs")
    return len(ids), inactive_count(conn)


def configured_limits(config: dict):
    """(age_limit, num_limit) from job-manager.inactive-*-limit, -1 when unset."""
    jm = config.get("job-manager") or {}
    age = jm.get("inactive-age-limit")
    num = jm.get("inactive-num-limit", UNLIMITED)
    if age is not None:
        age = fsd.parse_config(age) if isinstance(age, str) else float(age)
    else:
        age = UNLIMITED
    return age, num


def auto(broker) -> int:
    """Purge what the configured limits make eligible (end of every command)."""
    age_limit, num_limit = configured_limits(broker.config)
    if age_limit == UNLIMITED and num_limit == UNLIMITED:
        return 0
    ids = eligible(broker.kvs.conn, broker.now, age_limit, num_limit)
    if ids:
        remove(broker, ids)
        broker.log("job-manager", "debug", f"purged {len(ids)} inactive jobs")
    return len(ids)
