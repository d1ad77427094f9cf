"""The real clock: events are stamped when they were due, not when the next
command happened to run. The wall clock is moved by hand (nothing sleeps)."""

import json

import pytest

from conftest import Flux


class Wall:
    """A wall clock the test moves: flux_lite.instance.wall_time."""

    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def real(tmp_path, monkeypatch):
    from flux_lite import instance

    wall = Wall(1796100000.0)
    monkeypatch.setattr(instance, "wall_time", wall)
    flux = Flux(tmp_path / "state")
    flux("start", "--test-size=2", "--test-cores=2", "--clock=real")
    flux.wall = wall
    return flux


def _stamps(flux, jobid):
    return {e["name"]: e["timestamp"] for e in flux.events(jobid)}


def test_a_job_finishes_when_it_was_due_however_late_the_next_command(real):
    t0 = real.wall.t
    real.wall.t = t0 + 1
    jobid = real.submit("-S", "exec.test.run_duration=3s", "true")
    start = _stamps(real, jobid)["start"]
    assert start == t0 + 1
    real.wall.t = t0 + 100  # the next command comes long after the job ended
    stamps = _stamps(real, jobid)
    assert stamps["finish"] == start + 3
    assert stamps["clean"] == start + 3
    # the runtime jobs prints is the simulated one, not the time until this command
    assert real.out("jobs", "-no", "{runtime:.1f} {status}", jobid) == "3.0 COMPLETED\n"


def test_a_time_limit_expires_at_expiration(real):
    t0 = real.wall.t
    jobid = real.submit("-t", "10s", "-S", "exec.test.run_duration=1h", "true")
    real.wall.t = t0 + 3600  # an hour later
    events = real.events(jobid)
    exc = next(e for e in events if e["name"] == "exception")
    assert exc["timestamp"] == t0 + 10
    assert exc["context"]["type"] == "timeout"
    assert real.out("jobs", "-no", "{runtime:.1f} {status}", jobid) == "10.0 TIMEOUT\n"


def test_a_job_queued_behind_another_starts_when_the_first_ended(real):
    t0 = real.wall.t
    first = real.submit("-N2", "-x", "-S", "exec.test.run_duration=5s", "true")
    second = real.submit("-N2", "-x", "-S", "exec.test.run_duration=5s", "true")
    real.wall.t = t0 + 60
    assert _stamps(real, second)["start"] == t0 + 5
    assert _stamps(real, second)["finish"] == t0 + 10
    assert _stamps(real, first)["finish"] == t0 + 5


def test_a_running_job_runtime_is_the_wall_time_since_it_started(real):
    t0 = real.wall.t
    jobid = real.submit("-S", "exec.test.run_duration=1h", "true")
    real.wall.t = t0 + 42
    assert real.out("jobs", "-no", "{runtime:.1f} {status}", jobid) == "42.0 RUN\n"
    # and what the next writing command does is stamped at its own time
    real("cancel", jobid)
    exc = next(e for e in real.events(jobid) if e["name"] == "exception")
    assert exc["timestamp"] == t0 + 42


def test_job_info_and_dmesg_times_follow_the_due_times(real):
    t0 = real.wall.t
    jobid = real.submit("-S", "exec.test.run_duration=2s", "true")
    real.wall.t = t0 + 500
    real("jobs", "-a")
    status = json.loads(real.out("job", "status", "--json", jobid))
    assert status["t_cleanup"] - status["t_run"] == pytest.approx(2.0)
