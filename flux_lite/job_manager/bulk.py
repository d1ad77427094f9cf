"""job-manager.raiseall: raise an exception on every matching job (cancel --all)."""

from errno import EPROTO

from flux_lite import access, users
from flux_lite.errors import FluxLiteError
from flux_lite.job_manager.job import DEPEND, PENDING, PRIORITY, RUN, RUNNING, SCHED

# the states raiseall targets (flux-cancel's --states words)
STATES = {"depend": DEPEND, "priority": PRIORITY, "sched": SCHED, "run": RUN,
          "pending": PENDING, "running": RUNNING, "active": PENDING | RUNNING}


def parse_states(states) -> int:
    """-S STATES (a comma list, or several): the state mask to target."""
    if isinstance(states, str):
        states = [states]
    mask = 0
    for word in ",".join(states).split(","):
        try:
            mask |= STATES[word.lower()]
        except KeyError:
            raise FluxLiteError(f"Invalid state {word} specified") from None
    return mask


_ANY = object()


def raise_all(broker, user=None, states=None, dry_run=False, note=None, etype="cancel", severity=0,
              userid=_ANY):
    """Returns (count, errors) as Flux's raiseall does. user: a name, uid or
    "all" (default: the requester); or userid, resolved (None: every user).
    states: words (see parse_states) or a state mask."""
    ident = broker.instance.identity
    if userid is _ANY:
        userid = ident.userid if user is None else users.userid(user)
    mask = states if isinstance(states, int) else parse_states(states) if states else PENDING | RUNNING
    if not isinstance(severity, int) or not 0 <= severity <= 7:
        raise FluxLiteError("invalid exception severity", errno=EPROTO)
    if not etype or any(c.isspace() for c in etype) or "=" in etype:
        raise FluxLiteError("invalid exception type", errno=EPROTO)
    access.check_raise(ident, userid)
    jm = broker.jm
    targets = [j for j in sorted(jm.jobs.values(), key=lambda j: j.id)
               if j.state & mask and (userid is None or j.userid == userid)]
    errors = 0
    for job in targets:
        if dry_run:
            continue
        if job.state & 32:  # already in CLEANUP: the exception changes nothing
            continue
        jm.raise_exception(job, etype, severity, note or "", userid=ident.userid)
    # as Flux's raiseall, every job has its exception before the scheduler
    # hears of any freed resources: a pending job never starts mid-cancel
    broker.run()
    return len(targets), errors
