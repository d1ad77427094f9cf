"""flux_lite.forked: a generator run in a second process."""

import os
import time

import pytest

from flux_lite import forked as forkedmod
from flux_lite.archive import ArchiveError
from flux_lite.errors import FluxLiteError

pytestmark = pytest.mark.skipif(not forkedmod.available(), reason="no fork(2) here")


def test_items_come_in_order_from_another_process():
    parent = os.getpid()

    def produce():
        for i in range(2000):
            yield (i, os.getpid())

    with forkedmod.forked(produce, batch=64) as items:
        got = list(items)
    assert [i for i, _ in got] == list(range(2000))
    pids = {pid for _, pid in got}
    assert len(pids) == 1 and parent not in pids


def test_error_in_the_child_is_raised_in_the_parent_as_its_class():
    def produce():
        yield 1
        yield 2
        raise ArchiveError("Truncated tar archive")

    seen = []
    with pytest.raises(ArchiveError, match="^Truncated tar archive$"):
        with forkedmod.forked(produce) as items:
            for item in items:
                seen.append(item)
    assert seen == [1, 2]  # what came before the error was delivered first


def test_other_errors_come_back_as_one_line_not_a_traceback():
    def produce():
        yield {}["missing"]

    with pytest.raises(FluxLiteError) as info, forkedmod.forked(produce) as items:
        list(items)
    assert str(info.value) == "KeyError: 'missing'"


def test_errno_is_kept():
    def produce():
        raise FluxLiteError("Permission denied", errno=1)
        yield  # pragma: no cover

    with pytest.raises(FluxLiteError) as info, forkedmod.forked(produce) as items:
        list(items)
    assert info.value.errno == 1


def test_a_parent_that_stops_early_stops_the_child(tmp_path):
    """The child is bounded by the pipe: it blocks once the parent stops
    reading, and is killed and reaped when the parent's iterator is closed."""
    mark = tmp_path / "progress"

    def produce():
        i = 0
        while True:  # never ends by itself
            i += 1
            (tmp_path / "next").write_text(str(i))
            os.replace(tmp_path / "next", mark)  # (read whole, never half written)
            yield b"%099d" % i  # (distinct objects: pickle would send one repeated object once)

    it = forkedmod.forked(produce, batch=100)
    assert [next(it) for _ in range(10)] == [b"%099d" % i for i in range(1, 11)]
    time.sleep(0.3)  # (the child runs on by itself: a real process, so a real wait)
    made = int(mark.read_text())
    assert 10 <= made < 20000  # blocked on the pipe (and its buffers), not running on
    pid = it.pid
    it.close()  # kills and reaps the child: no zombie, no hang
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_without_fork_the_work_runs_here(monkeypatch):
    monkeypatch.setattr(forkedmod, "available", lambda: False)
    parent = os.getpid()
    with forkedmod.forked(lambda: (os.getpid() for _ in range(3))) as items:
        assert list(items) == [parent] * 3


def test_the_child_works_while_the_parent_does(tmp_path):
    """It starts at once, not when the parent first asks for an item."""
    mark = tmp_path / "started"

    def produce():
        mark.write_text("yes")
        yield 1

    with forkedmod.forked(produce) as items:
        for _ in range(500):  # (until the child has run: a real process)
            if mark.exists():
                break
            time.sleep(0.01)
        assert mark.exists()
        assert list(items) == [1]


def test_worker_answers_requests_in_another_process():
    helper = forkedmod.worker(lambda request: (request * 2, os.getpid()))
    try:
        helper.submit(21)
        helper.submit(4)  # (a second request may wait in line)
        first, second = helper.result(), helper.result()
        assert (first[0], second[0]) == (42, 8)
        assert first[1] == second[1] != os.getpid()
    finally:
        helper.close()


def test_worker_error_comes_back_as_its_class():
    def fn(request):
        raise ArchiveError(f"bad request {request}")

    helper = forkedmod.worker(fn)
    try:
        helper.submit(1)
        with pytest.raises(ArchiveError, match="^bad request 1$"):
            helper.result()
    finally:
        helper.close()


def test_worker_without_fork_answers_here(monkeypatch):
    monkeypatch.setattr(forkedmod, "available", lambda: False)
    helper = forkedmod.worker(lambda request: (request, os.getpid()))
    helper.submit("x")
    assert helper.result() == ("x", os.getpid())
    helper.close()


def test_a_heavy_item_is_sent_at_once():
    """A large item is not held back for a batch (both sides would hold the
    whole batch): the parent gets it while the child goes on."""
    import signal

    def produce():
        yield ("t", b"x" * 4096)
        while True:  # (more would come, slowly)
            time.sleep(1)
            yield ("j", b"")

    def timeout(*_):
        raise AssertionError("the heavy item was held back")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    try:
        with forkedmod.forked(produce, batch=512, heavy=lambda item: item[0] == "t") as items:
            assert next(iter(items)) == ("t", b"x" * 4096)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
