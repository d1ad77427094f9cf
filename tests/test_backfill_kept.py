"""sched-backfill keeps its last pass between commands (sched.state "pass"):
a submit, a cancel or an update of a queued job continues it instead of
replanning the whole queue. These tests hold it to what a full replan
would do, and check that such commands read only what they touch."""

import json
import random
import sqlite3

import pytest

from flux_lite.sched import backfill
from test_read_cost import _count_rows

POLICY_CONF = {p: f"sched:\n  policy: {p}\n" for p in ("easy", "hybrid", "conservative")}
FMT = ("{id.f58} {state} {duration} {annotations.sched.t_estimate} {annotations.sched.reason_pending} "
       "{annotations.sched.selection_type} {annotations.sched.backfill} {annotations.sched.resource_summary}")


def _no_kept_pass(monkeypatch):
    """Every command plans afresh: the kept pass is never restored."""
    monkeypatch.setattr(backfill.BackfillScheduler, "load_extra", lambda self, state: None)


def _counting_restores(monkeypatch):
    """[passes restored, arrivals placed by continuing a pass, of which ahead
    of the last job it placed]."""
    counts = [0, 0, 0]
    real_restore, real_accepts = backfill._Pass.restore.__func__, backfill._Pass.accepts

    def restore(cls, *args):
        p = real_restore(cls, *args)
        counts[0] += p is not None
        return p

    def accepts(self, new):
        ok = real_accepts(self, new)
        counts[1] += ok and bool(new)
        counts[2] += ok and bool(new) and self.last_key is not None and new[0].sort_key() < self.last_key
        return ok
    monkeypatch.setattr(backfill._Pass, "restore", classmethod(restore))
    monkeypatch.setattr(backfill._Pass, "accepts", accepts)
    return counts


def _pending(flux):
    return flux.out("jobs", "-n", "-c", "0", "-f", "pending", "-o", "{id.f58}").split()


@pytest.mark.parametrize("policy", ["easy", "hybrid", "conservative"])
@pytest.mark.parametrize("seed", range(4))
def test_kept_pass_decides_as_a_full_replan(flux_factory, monkeypatch, policy, seed):
    """The same random day (submits, cancels, duration and urgency updates,
    time passing) on two instances, one planning afresh at every command:
    every job's events and annotations are the same, step by step."""
    conf = POLICY_CONF[policy]
    if policy == "hybrid":
        conf += "  reservation-depth: 2\n"
    kept = flux_factory("--test-size=4", "--test-cores=4", config=conf, name="kept")
    fresh = flux_factory("--test-size=4", "--test-cores=4", config=conf, name="fresh")
    rng = random.Random(seed)
    counts = [0, 0, 0]

    def both(*argv):
        with monkeypatch.context() as m:
            c = _counting_restores(m)
            a = kept(*argv, check=False)
        for i, n in enumerate(c):
            counts[i] += n
        with monkeypatch.context() as m:
            _no_kept_pass(m)
            b = fresh(*argv, check=False)
        assert (a.exit_code, a.stdout, a.stderr) == (b.exit_code, b.stdout, b.stderr), argv
        return a

    for _ in range(45):
        pending = _pending(kept)
        op = rng.random()
        if op < 0.4 or not pending:
            args = [f"-n{rng.choice([1, 1, 2, 3, 4, 6])}"] if rng.random() < 0.8 else [f"-N{rng.choice([1, 2])}"]
            if rng.random() < 0.9:
                args += ["-t", f"{rng.choice([5, 10, 20, 30, 60])}m"]
            args += ["-S", f"exec.test.run_duration={rng.choice([2, 5, 9, 15, 40])}m"]
            if rng.random() < 0.2:
                args += ["--cc", f"1-{rng.randint(2, 4)}", "--quiet"]
            both("submit", *args, "true")
        elif op < 0.52:
            both("cancel", rng.choice(pending))
        elif op < 0.75:
            both("update", rng.choice(pending), f"duration=+{rng.choice([1, 5, 15])}m")
        elif op < 0.8:
            both("job", "urgency", rng.choice(pending), str(rng.choice([10, 16, 20])))
        elif op < 0.83:
            both("resource", "drain", str(rng.randint(0, 3)), "maintenance")
        elif op < 0.86:
            both("resource", "undrain", "0-3")
        else:
            both("clock", "advance", f"{rng.choice([1, 3, 7])}m")
        assert kept.out("jobs", "-a", "-o", FMT) == fresh.out("jobs", "-a", "-o", FMT)
    both("clock", "advance", "10h")
    for line in kept.out("jobs", "-a", "-n", "-o", "{id.f58}").split():
        assert kept.out("job", "eventlog", line) == fresh.out("job", "eventlog", line)
    # the kept pass was used, not just present (and for easy and hybrid
    # also for jobs queued again behind the reservations)
    assert counts[0] > 5 and counts[1] > 5 and (counts[2] > 0 or policy == "conservative"), counts


def _queue(flux_factory, policy, n=300):
    flux = flux_factory("--test-size=4", "--test-cores=4", config=POLICY_CONF[policy])
    flux.submit("-N4", "--exclusive", "-t", "1h", "-S", "exec.test.run_duration=1h", "true")
    flux("submit", f"--cc=1-{n}", "--quiet", "-n1", "-t", "10m", "true")
    pending = _pending(flux)
    assert len(pending) == n
    return flux, pending


@pytest.mark.parametrize("policy", ["easy", "hybrid"])
@pytest.mark.parametrize("argv", [
    ("submit", "-n1", "-t", "5m", "true"),
    ("cancel", "{last}"),
    ("cancel", "{middle}"),
    ("update", "{last}", "duration=+1m"),
    ("update", "{middle}", "duration=+1m"),
], ids=lambda a: " ".join(a))
def test_queue_commands_read_only_what_they_touch(flux_factory, monkeypatch, policy, argv):
    """300 jobs queued behind a reservation: a submit, a cancel or an update
    of one of them continues the kept pass, reading tens of rows, not the
    queue (a full replan reads every queued job's row)."""
    flux, pending = _queue(flux_factory, policy)
    # (the middle job is behind the reservations: easy reserves 1, hybrid 64)
    subst = {"{last}": pending[-1], "{middle}": pending[150]}
    before = flux.out("jobs", "-a", "-o", FMT)
    rows = _count_rows(monkeypatch)
    flux(*[subst.get(a, a) for a in argv])
    assert rows[0] <= 150, rows[0]
    monkeypatch.undo()
    after = flux.out("jobs", "-a", "-o", FMT)
    # ... and the plan is what a replan from scratch gives
    _no_kept_pass(monkeypatch)
    flux("sched", "reload", f"--policy={policy}")
    assert flux.out("jobs", "-a", "-o", FMT) == after != before


@pytest.mark.parametrize("damage", [
    '"x"', '{"now": "x"}', '{"planner": true, "reservations": [[1, 2, 3, "9:ff:0"]]}', "[]",
    '{"now": 0, "inst": 0, "depth": 1, "last_key": [0, 0], "reserved_key": null, '
    '"nreserved": 5, "first_reserved": null, "planner": true, "reservations": [[1, 1e30, null, "0:ff:0"]]}'])
def test_damaged_kept_pass_means_a_full_replan(flux_factory, damage):
    """The kept pass is a cache: anything odd in it is ignored, the command
    plans afresh, and decides as an undamaged instance does."""
    outs = []
    for name in ("damaged", "intact"):
        flux = flux_factory("--test-size=4", "--test-cores=4", config=POLICY_CONF["easy"], name=name)
        flux.submit("-N4", "--exclusive", "-t", "1h", "-S", "exec.test.run_duration=1h", "true")
        flux("submit", "--cc=1-5", "--quiet", "-n1", "-t", "10m", "true")
        if name == "damaged":
            state = json.loads(flux.out("kvs", "get", "sched.state"))
            assert "pass" in state
            del state["pass"]
            # a hostile edit (kvs put refuses the scheduler's key)
            conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
            assert conn.execute("UPDATE kvs SET value = ? WHERE key = 'sched.state'",
                                (json.dumps(state)[:-1] + f', "pass": {damage}}}',)).rowcount == 1
            conn.close()
        flux("cancel", _pending(flux)[-1])
        flux("submit", "-n1", "-t", "10m", "true")
        flux("clock", "advance", "2h")
        outs.append(flux.out("jobs", "-a", "-o", FMT))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("limit", ["MAX_KEPT_RESERVATIONS", "MAX_KEPT_PARTS"])
def test_big_plans_are_not_kept(flux_factory, monkeypatch, limit):
    """A plan with more reservations (or reserved rank entries) than the
    bound is not written to sched.state at every command: the next
    command replans, with the same outcome."""
    monkeypatch.setattr(backfill._Pass, limit, 1)
    flux = flux_factory("--test-size=4", "--test-cores=4", config=POLICY_CONF["conservative"])
    flux.submit("-N4", "--exclusive", "-t", "1h", "-S", "exec.test.run_duration=1h", "true")
    flux.submit("-N1", "-t", "10m", "true")
    assert "pass" in json.loads(flux.out("kvs", "get", "sched.state"))  # one reservation, one rank
    flux.submit("-N2", "-t", "10m", "true")
    assert "pass" not in json.loads(flux.out("kvs", "get", "sched.state"))
    # both start when the blocker ends
    assert flux.out("jobs", "-n", "-f", "pending", "-o", "{annotations.sched.t_estimate}").split() == \
        ["1767229200.0"] * 2
