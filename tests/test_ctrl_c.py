"""Ctrl-C while `run` or `submit --wait` waits: as `flux job attach` takes it.

Real signals, delivered in-process by the wait's own poll (the wall clock
and the 2 s window's clock are moved by hand: nothing sleeps). Flux 0.88's
texts are those of flux-core's src/cmd/job/attach.c.
"""

import os
import signal

import pytest

from test_flux_words import as_flux, outcome

ONE_MORE = "one more ctrl-C within 2s to cancel or ctrl-Z to detach\n"


class Script:
    """The wall clock, the window clock, and what each poll of the wait does."""

    def __init__(self, monkeypatch, t0):
        from flux_lite import instance
        from flux_lite.cli import interrupt

        self.wall = t0
        self.mono = 1000.0
        self.polls = 0
        self.actions = {}
        monkeypatch.setattr(instance, "wall_time", lambda: self.wall)
        monkeypatch.setattr(instance, "wall_sleep", self.sleep)
        monkeypatch.setattr(interrupt, "monotonic", lambda: self.mono)

    def sleep(self, seconds):
        self.polls += 1
        assert self.polls < 100, "the wait never ended"
        self.wall += 0.5
        for action in self.actions.get(self.polls, ()):
            action()

    def at(self, poll, *actions):
        self.actions[poll] = actions


def sigint():
    os.kill(os.getpid(), signal.SIGINT)


def sigtstp():
    os.kill(os.getpid(), signal.SIGTSTP)


@pytest.fixture
def real(tmp_path, monkeypatch):
    from conftest import Flux

    script = Script(monkeypatch, 1796100000.0)
    flux = Flux(tmp_path / "state")
    flux("start", "--test-size=2", "--test-cores=2", "--clock=real")
    flux.script = script
    return flux


def _last(flux):
    return flux.out("job", "last").strip()


def test_two_ctrl_c_within_2s_cancel_the_job_run_waits_for(real):
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs in the background
    real.script.at(1, sigint)
    real.script.at(2, lambda: setattr(real.script, "mono", real.script.mono + 1.9), sigint)
    r = real("run", "-S", "exec.test.run_duration=60s", "true", check=False)
    jobid = _last(real)
    assert outcome(r) == (143, "", "flux-lite job: " + ONE_MORE +
                          "flux-lite job: No job output found\n"
                          f"1.000s: job.exception {jobid} type=cancel severity=0 interrupted by ctrl-C\n"
                          "flux-lite job: job shell Terminated\n")
    assert real.out("jobs", "-no", "{status} {exception.note}", jobid) == "CANCELED interrupted by ctrl-C\n"
    # the handler is gone once the command has returned
    assert signal.getsignal(signal.SIGINT) is before


def test_as_flux_the_words_are_flux_jobs(real):
    real.script.at(1, sigint)
    real.script.at(2, sigint)
    r = as_flux(real, "run", "-S", "exec.test.run_duration=60s", "true")
    assert r.exit_code == 143
    assert r.stderr.startswith("flux-job: " + ONE_MORE + "flux-job: No job output found\n")


def test_ctrl_c_more_than_2s_apart_only_warn_and_the_job_runs_on(real):
    real.script.at(1, sigint)
    real.script.at(2, lambda: setattr(real.script, "mono", real.script.mono + 2.5), sigint)
    r = real("run", "-S", "exec.test.run_duration=5s", "true", check=False)
    assert outcome(r) == (0, "", "flux-lite job: " + ONE_MORE + "flux-lite job: " + ONE_MORE +
                          "flux-lite job: No job output found\n")
    assert real.out("jobs", "-no", "{status}", _last(real)) == "COMPLETED\n"


def test_ctrl_c_then_ctrl_z_detaches_and_says_so(real):
    real.script.at(1, sigint)
    real.script.at(2, sigtstp)
    r = real("run", "-S", "exec.test.run_duration=60s", "true", check=False)
    assert outcome(r) == (1, "", "flux-lite job: " + ONE_MORE + "flux-lite job: detaching...\n")
    # detached, not canceled: the job runs on
    assert real.out("jobs", "-no", "{status}", _last(real)) == "RUN\n"
    assert signal.getsignal(signal.SIGTSTP) is signal.SIG_DFL


def test_ctrl_z_outside_the_window_gives_suspension_back(real):
    real.script.at(1, sigint)
    real.script.at(2, lambda: setattr(real.script, "mono", real.script.mono + 3), sigtstp)
    real.script.at(3, sigint)
    real.script.at(4, sigint)
    r = real("run", "-S", "exec.test.run_duration=60s", "true", check=False)
    assert r.exit_code == 143
    assert r.stderr.startswith("flux-lite job: " + ONE_MORE + "flux-lite job: one more ctrl-Z to suspend\n"
                               "flux-lite job: " + ONE_MORE + "flux-lite job: No job output found\n")


def test_submit_wait_cancels_every_job_it_waits_for(real):
    real.script.at(1, sigint)
    real.script.at(2, sigint)
    r = real("submit", "--cc=1-2", "--wait", "-S", "exec.test.run_duration=60s", "true", check=False)
    ids = r.stdout.split()
    assert len(ids) == 2
    assert r.stderr == ("flux-lite submit: " + ONE_MORE +
                        "job.exception: type=cancel severity=0 interrupted by ctrl-C\n" * 2)
    assert r.exit_code == 143
    assert real.out("jobs", "-no", "{status}", *ids) == "CANCELED\nCANCELED\n"


def test_submit_wait_event_on_a_pending_job_canceled_by_ctrl_c(real):
    real.script.at(1, sigint)
    real.script.at(2, sigint)
    r = real("submit", "--wait-event=start", "--urgency=hold", "-S", "exec.test.run_duration=1s", "true",
             check=False)
    # as Flux 0.88 reports a held job canceled during submit --wait-event=start
    assert (r.exit_code, r.stderr) == (1, "flux-lite submit: " + ONE_MORE +
                                       "job.exception: type=cancel severity=0 interrupted by ctrl-C\n")
