"""The instance log (`flux dmesg`): rows of the ``dmesg`` table, oldest first."""

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
