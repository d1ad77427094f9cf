"""The instance log (`flux dmesg`): rows of the ``dmesg`` table, oldest first."""

import json

from flux_lite.stored import LOG, DamagedError

# a logged time the tools can print (1970 .. 9999)
_FIRST, _LAST = 0.0, 253402300799.0


def read(kvs, after: int = 0):
    """(seq, t, name, level, msg) rows logged after seq `after`; a damaged
    row (a bit flip, a stray tool) is DamagedError naming it."""
    rows = kvs.conn.execute(
        "SELECT seq, t, name, level, msg FROM dmesg WHERE seq > ? ORDER BY seq", (after,)).fetchall()
    for seq, t, name, level, msg in rows:
        if not (isinstance(t, (int, float)) and _FIRST <= t <= _LAST
                and isinstance(name, str) and isinstance(level, str) and isinstance(msg, str)):
            raise DamagedError(LOG, f"entry {seq}: {t!r} {name!r} {level!r}")
    return rows


def last_seq(kvs) -> int:
    row = kvs.conn.execute("SELECT max(seq) FROM dmesg").fetchone()
    return row[0] or 0


# a run of at least this many lines logged at one time by one module at one
# level is inserted in one statement (json_each): a reload logs a hello line
# per running job, and row-at-a-time inserts were a tenth of its cost
_RUN = 32


def write(conn, rows) -> None:
    """Append (t, name, level, msg) rows to the log, in order."""
    n = len(rows)
    i = 0
    while i < n:
        t, name, level, _ = rows[i]
        j = i + 1
        while j < n and rows[j][0] == t and rows[j][1] == name and rows[j][2] == level:
            j += 1
        blob = json.dumps([row[3] for row in rows[i:j]], ensure_ascii=False) if j - i >= _RUN else None
        if blob is not None and "\\u" not in blob:
            # (no \u escape: json_each gives each message back as it was)
            conn.execute("INSERT INTO dmesg(t, name, level, msg) SELECT ?, ?, ?, value FROM json_each(?) "
                         "ORDER BY key", (t, name, level, blob))
        else:
            conn.executemany("INSERT INTO dmesg(t, name, level, msg) VALUES (?, ?, ?, ?)", rows[i:j])
        i = j
