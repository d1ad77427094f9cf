"""Job history: each user's submitted jobs, most recent first (`job last`).

Flux keeps this list in its job manager's history plugin and answers
``job-manager.history.get`` with a Python-style slice of it. Here the list is
the jobs index itself, read newest first through its (userid, id) index, so a
purged job leaves the history with its row and a restart rebuilds it from the
eventlogs like the rest of the index.
"""

from flux_lite.errors import FluxLiteError
from flux_lite.job_manager import index as jobindex

SLICE_ERROR = "could not parse python-style slice expression"


def _strtol(text):
    """C strtol on a decimal prefix: (value or None, rest)."""
    i = 0
    n = len(text)
    while i < n and text[i] in " \t\n\v\f\r":
        i += 1
    j = i
    if j < n and text[j] in "+-":
        j += 1
    k = j
    while k < n and text[k].isdigit() and text[k].isascii():
        k += 1
    if k == j:
        return None, text
    return int(text[i:k]), text[k:]


def parse_slice(text: str):
    """'[start:stop:step]' -> (start, stop, step), each None when omitted.

    The grammar of flux-core's slice parser: brackets, at least one colon,
    decimal integers, a nonzero step.
    """
    if ":" not in text or len(text) < 2 or text[0] != "[" or text[-1] != "]":
        raise FluxLiteError(SLICE_ERROR)
    rest = text[1:-1]
    values = []
    for index in range(3):
        value, after = _strtol(rest)
        if value is None:
            if rest[:1] == ":":
                rest = rest[1:]
            elif rest:
                raise FluxLiteError(SLICE_ERROR)
            values.append(None)
            continue
        if after == "":
            rest = ""
        elif after[0] == ":":
            rest = after[1:]
        else:
            raise FluxLiteError(SLICE_ERROR)
        values.append(value)
        if not rest and index < 2:
            values.extend([None] * (2 - index))
            break
    if rest:
        raise FluxLiteError(SLICE_ERROR)
    start, stop, step = values
    if step == 0:
        raise FluxLiteError(SLICE_ERROR)
    return start, stop, step


def slice_indices(spec, length: int):
    """Indices a (start, stop, step) slice selects from a list of length,
    with the slice parser's rules (negative indices count from the end; with
    a negative step, omitted ends mean "from the last" and "through the first")."""
    start, stop, step = spec
    step = 1 if step is None else step
    first = 0 if start is None else start
    end = length if stop is None else stop
    if first < 0:
        first += length
    if end < 0:
        end += length
    if step < 0:
        if start is None:
            first = length - 1
        if stop is None:
            end = -1
    if step > 0:
        if first < 0:  # skip the out-of-range steps at once
            first += -(first // step) * step if first % step == 0 else (-first // step + 1) * step
        return list(range(first, min(end, length), step)) if first < min(end, length) else []
    if first >= length:
        first -= ((first - (length - 1)) + (-step) - 1) // (-step) * (-step)
    lo = max(end, -1)
    return list(range(first, lo, step)) if first > lo else []


def last(conn, userid: int, text: str = "[:1]"):
    """Job ids of userid's history selected by a slice expression, newest first."""
    spec = parse_slice(text)
    start, stop, step = spec
    if (step is None or step > 0) and (start is None or start >= 0) and stop is not None and stop >= 0:
        # a slice from the newest end selects the same whatever the history
        # holds past `stop`: only that much of it is counted (`job last`)
        length = jobindex.user_count(conn, userid, limit=min(stop, 2**62))  # (SQLite's integers)
    else:
        length = jobindex.user_count(conn, userid)
    indices = slice_indices(spec, length)
    if not indices:
        return []
    lo, hi = min(indices), max(indices)
    ids = jobindex.user_ids_newest(conn, userid, hi - lo + 1, lo)
    return [ids[i - lo] for i in indices if i - lo < len(ids)]
