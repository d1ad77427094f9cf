"""The instance log (`flux dmesg`): rows of the ``dmesg`` table, oldest first."""


def read(kvs, after: int = 0):
    """(seq, t, name, level, msg) rows logged after seq `after`."""
    return kvs.conn.execute(
        "SELECT seq, t, name, level, msg FROM dmesg WHERE seq > ? ORDER BY seq", (after,)).fetchall()


def last_seq(kvs) -> int:
    row = kvs.conn.execute("SELECT max(seq) FROM dmesg").fetchone()
    return row[0] or 0
