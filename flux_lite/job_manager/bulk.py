"""job-manager.raiseall: raise an exception on every matching job (cancel --all)."""

from flux_lite.errors import FluxLiteError
from flux_lite.job_manager.job import PENDING, RUNNING


def raise_all(broker, user=None, states=None, dry_run=False, note=None, etype="cancel", severity=0):
    """Returns (count, errors) as Flux's raiseall does."""
    import pwd

    from flux_lite.job_list import parse_filter

    ident = broker.instance.identity
    if user is None:
        userid = ident.userid
    elif user == "all":
        userid = None
    else:
        try:
            userid = int(user)
        except ValueError:
            try:
                userid = pwd.getpwnam(user).pw_uid
            except KeyError:
                raise FluxLiteError(f"Invalid user {user} specified") from None
    if not ident.is_owner and userid != ident.userid:
        raise FluxLiteError("guests can only raise exceptions on their own jobs")
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
