"""The instance log's table (flux_lite.log): lines are stored in order and
exactly as logged, whether a run of them goes in one statement or row by row."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite import log
from flux_lite.schema import TABLES


class _KVS:
    def __init__(self, conn):
        self.conn = conn


def _conn():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(TABLES)
    return conn


def _roundtrip(rows):
    conn = _conn()
    log.write(conn, rows)
    return [tuple(r[1:]) for r in log.read(_KVS(conn))], conn


@pytest.mark.parametrize("msg", ["hello: ƒSntWaS: rank1807/core2", 'quote " and \\ backslash', "tab\tnew\nline",
                                 "literal \\u00e9 escape", "nul \x00 byte", "\x1b[31mcolor", "é ü 中 🙂", ""])
def test_a_long_run_keeps_every_message_as_it_was(msg):
    rows = [(1.5, "sched-simple", "info", f"{msg} {i}") for i in range(100)]
    got, _ = _roundtrip(rows)
    assert got == rows


def test_runs_and_single_lines_keep_their_order_and_sequence():
    rows = ([(1.0, "job-manager", "debug", "scheduler: hello")]
            + [(1.0, "sched-simple", "info", f"hello: {i}") for i in range(log._RUN + 5)]
            + [(1.0, "sched-simple", "debug", "x"), (2.0, "sched-simple", "info", "later")]
            + [(2.0, "sched-simple", "info", f"more {i}") for i in range(log._RUN * 2)])
    got, conn = _roundtrip(rows)
    assert got == rows
    seqs = [r[0] for r in conn.execute("SELECT seq FROM dmesg ORDER BY seq")]
    assert seqs == list(range(1, len(rows) + 1))
    log.write(conn, rows[:3])
    assert log.last_seq(_KVS(conn)) == len(rows) + 3


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0]), st.sampled_from(["a", "b"]), st.sampled_from(["info", "err"]),
                          st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)),
                max_size=120),
       st.integers(1, 40))
def test_any_lines_come_back_as_logged(rows, repeat):
    rows = [row for row in rows for _ in range(repeat if row[1] == "a" else 1)]
    got, _ = _roundtrip(rows)
    assert got == rows
