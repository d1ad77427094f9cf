"""Progress on a terminal: large `jobs -a`, reloads and `clock advance` draw a
bar on stderr when it is a TTY, and print nothing extra when piped.

The TTY check is forced (is_tty patched) and the size thresholds lowered, so
a handful of jobs is "large"; the library only calls the callbacks it is given.
"""

import pytest

import flux_lite.cli.output as output
from flux_lite.sched import base as sched_base


@pytest.fixture
def tty(monkeypatch):
    monkeypatch.setattr(output, "is_tty", lambda stream=None: True)


@pytest.fixture
def jobs12(flux, monkeypatch):
    flux("submit", "--cc=1-12", "--setattr=exec.test.run_duration=1s", "true")
    flux.advance("1m")
    flux("submit", "--cc=1-3", "sleep", "inf")
    return flux


def test_large_jobs_a_shows_progress_on_a_tty(jobs12, monkeypatch):
    monkeypatch.setattr(output, "JOBS_PROGRESS_MIN", 5)
    piped = jobs12("jobs", "-a", "-n", "-o", "{id.f58} {status}")
    monkeypatch.setattr(output, "is_tty", lambda stream=None: True)
    # (NO_COLOR: on a terminal flux-jobs would also color the inactive jobs' lines)
    result = jobs12("jobs", "-a", "-n", "-o", "{id.f58} {status}", env={"NO_COLOR": "1"})
    assert "listing jobs" in result.stderr and "100%" in result.stderr
    # the listing itself is what a pipe gets, printed after the bar is gone
    assert result.stdout == piped.stdout and len(result.stdout.splitlines()) == 15


def test_jobs_progress_is_silent_when_piped(jobs12, monkeypatch):
    monkeypatch.setattr(output, "JOBS_PROGRESS_MIN", 5)
    result = jobs12("jobs", "-a")
    assert result.stderr == ""
    assert len(result.stdout.splitlines()) == 16


def test_small_jobs_listing_draws_no_bar(jobs12, tty):
    result = jobs12("jobs", "-a", env={"NO_COLOR": "1"})
    assert result.stderr == "" and len(result.stdout.splitlines()) == 16


def test_jobs_progress_counts_every_stage(jobs12, monkeypatch):
    """The library's callbacks: query counts on the index, then the rows are
    built and rendered; every stage ends at its total."""
    import flux_lite.job_list as job_list
    from flux_lite.formats import outputformat

    monkeypatch.setattr(output, "is_tty", lambda stream=None: True)
    monkeypatch.setattr(output, "JOBS_PROGRESS_MIN", 5)
    calls = []
    real_query, real_lines = job_list.query, outputformat.OutputFormat.lines

    def query(*args, progress=None, **kw):
        def spy(done, total):
            calls.append(("query", done, total))
            progress(done, total)
        return real_query(*args, progress=spy, **kw)

    def lines(self, items, progress=None, **kw):
        def spy(done, total):
            calls.append(("lines", done, total))
            progress(done, total)
        return real_lines(self, items, progress=spy, **kw)

    monkeypatch.setattr(job_list, "query", query)
    monkeypatch.setattr(outputformat.OutputFormat, "lines", lines)
    jobs12("jobs", "-a", "-c", "10")
    assert calls[0] == ("query", 0, 10)  # 15 jobs, capped by --count
    assert ("query", 10, 10) in calls and calls[-1] == ("lines", 10, 10)


def test_query_progress_total_matches_the_rows(jobs12):
    """job_list.query's total is counted on the index with the same filters."""
    from flux_lite import job_list
    from flux_lite.instance import Instance
    from flux_lite.job_manager.job import INACTIVE, PENDING, RUNNING

    inst = Instance.open(jobs12.state_dir)
    calls = []
    with inst.read_session() as broker:
        for states in (PENDING | RUNNING, INACTIVE, PENDING | RUNNING | INACTIVE):
            calls.clear()
            rows = job_list.query(broker, userid=None, states=states, max_entries=0,
                                  progress=lambda d, t: calls.append((d, t)))
            assert calls[0] == (0, len(rows)) and calls[-1] == (len(rows), len(rows)), states
        calls.clear()
        rows = job_list.query(broker, userid=None, states=0, results=job_list.COMPLETED, max_entries=0,
                              progress=lambda d, t: calls.append((d, t)))
        assert len(rows) == 12 and calls[0] == (0, 12)


def test_clock_advance_shows_progress_on_a_tty(flux, tty):
    assert "advancing clock" in flux("clock", "advance", "2h").stderr
    # short advances finish at once: no bar
    assert flux("clock", "advance", "10s").stderr == ""


def test_clock_advance_progress_is_silent_when_piped(flux):
    result = flux("clock", "advance", "2h")
    assert result.stderr == "" and result.stdout.strip()


@pytest.mark.parametrize("command", [("sched", "reload"), ("module", "reload", "sched-simple")])
def test_reload_shows_progress_on_a_tty(flux, tty, monkeypatch, command):
    flux("submit", "--cc=1-6", "sleep", "inf")
    monkeypatch.setattr(sched_base, "HELLO_PROGRESS_EVERY", 2)
    monkeypatch.setattr(output, "PROGRESS_MIN", 4)
    result = flux(*command)
    assert "hello" in result.stderr and "6/6" in result.stderr


def test_reload_progress_is_silent_when_piped(flux, monkeypatch):
    flux("submit", "--cc=1-6", "sleep", "inf")
    monkeypatch.setattr(sched_base, "HELLO_PROGRESS_EVERY", 2)
    monkeypatch.setattr(output, "PROGRESS_MIN", 4)
    assert flux("sched", "reload").stderr == ""
