"""The `pgrep` listing: jobs selected by name pattern or id range, as
flux-pgrep and flux-pkill select them.

An expression is a regular expression searched in the job name (``name:``
prefix optional), or ``A..B``, an inclusive range of job ids in any encoding.
Rows are the `jobs` listing's rows; the named formats are flux-pgrep's.
"""

import re

from flux_lite import job_list
from flux_lite.errors import FluxLiteError
from flux_lite.formats.jobid import decode
from flux_lite.listing import Listing
from flux_lite.listing import jobs as jobs_listing

FORMATS = {  # flux-pgrep's: its full, long and deps are flux-jobs' default, long and deps
    "default": ("Default flux-pgrep format string", "{id.f58}"),
    "full": ("full flux-pgrep format string", jobs_listing.DEFAULT_FORMAT),
    "long": ("Extended flux-pgrep format string", jobs_listing.FORMATS["long"][1]),
    "deps": jobs_listing.FORMATS["deps"],
}

PGREP = Listing("flux-pgrep", FORMATS, jobs_listing.HEADINGS, heading_fallback=jobs_listing.heading_fallback)


class ExpressionError(FluxLiteError):
    """A bad pattern or range: flux-pgrep's `expression error`, exit 2."""


class Matcher:
    """The jobs one or more expressions select (a name regex and/or an id range)."""

    def __init__(self, expressions):
        self.regex = None
        self.ids = None
        for arg in expressions:
            if ":" not in arg and ".." in arg:
                try:
                    self.ids = [decode(part) for part in arg.split("..")]
                    continue
                except ValueError:
                    pass  # not ids: a pattern after all
            if self.regex is not None:
                raise ExpressionError("expression error: Only one pattern can be provided")
            if arg.startswith("name:"):
                arg = arg[5:]
            try:
                self.regex = re.compile(arg)
            except re.error as exc:
                raise ExpressionError(f"expression error: {exc}") from None

    def match(self, rec: dict) -> bool:
        if self.regex is not None and not self.regex.search(rec.get("name") or ""):
            return False
        if self.ids is not None and not self.ids[0] <= rec["id"] <= self.ids[1]:
            return False
        return True


def select(broker, expressions, userid=None, states=None, results=0, queues=None,
           max_entries: int = 1000, count: int = 99999):
    """Job records matching the expressions, in `jobs` order: the first
    max_entries jobs are searched, the first count matches returned."""
    matcher = Matcher(expressions)
    if states is None:
        states = job_list.PENDING | job_list.RUNNING
    out = []
    rows = job_list.iter_rows(broker, userid=userid, states=states, results=results, queues=queues)
    for searched, rec in enumerate(rows):
        if searched >= max_entries > 0:
            break
        if matcher.match(rec):
            out.append(rec)
            if len(out) >= count:
                break
    return out
