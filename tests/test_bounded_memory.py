"""Memory is bounded by what a command holds at once, not by what it touches.

A catch-up (`clock advance`) through many job completions and a burst of
submissions hold a batch of jobs at a time: the finished jobs' rows and the
KVS's buffered eventlog appends and puts are written into the command's
transaction every batch. These tests shrink the batch and count what is
held while jobs go through, and check the result is the same as with one
batch for everything.
"""

import pytest

from flux_lite import broker as brokermod
from flux_lite import kvs as kvsmod
from flux_lite.job_manager import index as indexmod
from flux_lite.job_manager import submit as submitmod

BATCH = 8
NJOBS = 120


def _track_held(monkeypatch):
    """Record the most finished jobs held by the job index, and the most
    KVS values buffered, at every event post."""
    seen = {"finished": 0, "buffered": 0}
    orig_deactivate = indexmod.JobIndex.deactivate
    orig_append = kvsmod.KVS.append

    def deactivate(self, job):
        orig_deactivate(self, job)
        seen["finished"] = max(seen["finished"], self.finished_held())

    def append(self, key, line):
        orig_append(self, key, line)
        seen["buffered"] = max(seen["buffered"], len(self._appends) + len(self._puts))

    monkeypatch.setattr(indexmod.JobIndex, "deactivate", deactivate)
    monkeypatch.setattr(kvsmod.KVS, "append", append)
    return seen


def _run(flux, monkeypatch, batch):
    monkeypatch.setattr(brokermod, "FLUSH_BATCH", batch)
    monkeypatch.setattr(submitmod, "FLUSH_BATCH", batch)
    seen = _track_held(monkeypatch)
    flux("submit", f"--cc=1-{NJOBS}", "-n1", "-S", "exec.test.run_duration=1s", "--quiet", "true")
    submitted = dict(seen)
    seen.update(finished=0, buffered=0)
    flux.advance("1h")
    listing = flux.out("jobs", "-a", "-c", str(NJOBS + 10), "-o",
                       "{id} {state} {result} {t_submit} {t_run} {t_inactive} {nodelist}")
    return submitted, dict(seen), listing


def test_submit_burst_and_catch_up_hold_a_batch(flux, monkeypatch):
    submitted, advanced, listing = _run(flux, monkeypatch, BATCH)
    assert len(listing.splitlines()) == NJOBS + 1
    assert all(" INACTIVE COMPLETED " in line for line in listing.splitlines()[1:])
    # the burst buffers at most a batch of jobs' values (a job: J, jobspec, 2-4 eventlogs)
    assert submitted["buffered"] <= 5 * (BATCH + 1), submitted
    # the catch-up: finished jobs in memory stay under a batch (plus those
    # finishing at one instant: 8 cores, so at most 8 end together)
    assert advanced["finished"] <= BATCH + 8, advanced
    assert advanced["buffered"] <= 5 * (BATCH + 8) + 16, advanced


def test_batches_change_nothing(flux_factory, monkeypatch):
    """The state after batched writes is the state after one write at the end."""
    small = _run(flux_factory("--test-size=4", "--test-cores=2", name="small"), monkeypatch, BATCH)[2]
    monkeypatch.undo()
    whole = _run(flux_factory("--test-size=4", "--test-cores=2", name="whole"), monkeypatch, 10**9)[2]
    assert small == whole


@pytest.mark.parametrize("batch", [BATCH])
def test_without_batches_memory_grows(flux, monkeypatch, batch):
    """The counter itself sees growth when nothing is written before the end
    (so the bounds above can fail)."""
    _, advanced, _ = _run(flux, monkeypatch, 10**9)
    assert advanced["finished"] > 5 * batch
