"""job-manager.raiseall: raise an exception on every matching job (cancel --all)."""

from flux_lite.job_manager.job import PENDING, RUNNING


def raise_all(broker, user=None, states=None, dry_run=False, note=None, etype="cancel", severity=0):
    """Returns (count, errors) as Flux's raiseall does."""
    from flux_lite import access, users
    from flux_lite.job_list import parse_filter

    ident = broker.instance.identity
    userid = ident.userid if user is None else users.userid(user)
    access.check_raise(ident, userid)
    mask = PENDING | RUNNING
    if states:
        mask, _results = parse_filter(states)
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
        broker.run()
    return len(targets), errors
