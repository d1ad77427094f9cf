"""Things the user must hear about once, whichever layer noticed them.

A damaged stored value that was skipped, a read-only state directory: the
library never prints, so it collects such lines here and the CLI prints them
on stderr when the command ends. This module is at the bottom of the layer
map so that any layer may report without knowing who listens.
"""

_NOTICES: list[str] = []
# said once by a command that only reads; one that fails to write says so in its error instead
READ_ONLY_NOTICE = "{} is read-only: showing the last committed state (nothing is saved)"


def notice(msg: str) -> None:
    """Remember msg (once, however often it is noticed)."""
    if msg not in _NOTICES:
        _NOTICES.append(msg)


def take_notices() -> list[str]:
    """The notices so far, in order; forgets them."""
    out = list(_NOTICES)
    _NOTICES.clear()
    return out
