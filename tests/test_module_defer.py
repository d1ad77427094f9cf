"""module.debug's deferred delivery (t2305-sched-slow): while the scheduler
module is deferred, the messages the job manager sends it are held with the
instance's state; releasing it delivers them in order. Waits poll instead of
giving up, since another command may release it."""

import errno
import sqlite3

import pytest

from flux_lite.instance import Instance


def defer(pyflux, flag, name="sched-simple"):
    return pyflux.Flux().rpc("module.debug", {"name": name, "defer": flag}).get()


def held(flux):
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite")
    try:
        row = conn.execute("SELECT value FROM kvs WHERE key = 'broker.deferred'").fetchone()
    finally:
        conn.close()
    return row


def test_a_job_waits_for_its_alloc_until_the_scheduler_is_released(flux, pyflux):
    assert defer(pyflux, True) is None
    jobid = flux.out("submit", "-N1", "--flags=debug", "--wait-event=debug.alloc-request", "true").strip()
    flux.advance("1h")
    assert flux.state(jobid) == "SCHED"
    names = [line.split()[1] for line in flux.out("job", "eventlog", jobid).splitlines()]
    assert names[-1] == "debug.alloc-request" and "alloc" not in names
    assert held(flux) is not None
    defer(pyflux, False)
    assert flux.state(jobid) in ("RUN", "CLEANUP", "INACTIVE")
    flux("job", "wait-event", jobid, "clean")
    assert held(flux) is None  # nothing held: the record is gone


def test_a_job_canceled_while_deferred_gets_through_cleanup(flux, pyflux):
    jobid = flux.out("submit", "-N1", "--wait-event=alloc", "sleep", "3600").strip()
    defer(pyflux, True)
    flux("cancel", jobid)
    flux("job", "wait-event", jobid, "clean")
    # the scheduler has not heard of the free yet: its pool still holds the node
    assert flux.out("resource", "list", "--from-sched", "-s", "allocated", "-no", "{nnodes}") == "1\n"
    defer(pyflux, False)
    assert flux.out("resource", "list", "--from-sched", "-s", "allocated", "-no", "{nnodes}") == "0\n"
    assert flux.out("sched", "check") == "sched check: ok\n"


def test_messages_are_delivered_in_order(flux, pyflux):
    defer(pyflux, True)
    first = flux.submit("-N4", "-n4", "sleep", "inf")
    second = flux.submit("-N1", "sleep", "inf")
    flux("cancel", first)
    defer(pyflux, False)
    # first's alloc, then its cancel, reach the scheduler before second's request
    assert flux.state(first) == "INACTIVE"
    assert flux.state(second) == "RUN"


def test_a_reload_drops_what_was_held_and_hello_asks_again(flux, pyflux):
    defer(pyflux, True)
    jobid = flux.submit("-N1", "sleep", "inf")
    flux("sched", "reload")
    assert held(flux) is None
    assert flux.state(jobid) == "RUN"


def test_a_wait_polls_while_a_module_is_deferred(flux, pyflux):
    defer(pyflux, True)
    inst = Instance.open(flux.state_dir)
    polls = []

    def check(broker):
        polls.append(1)
        return "done" if len(polls) > 3 else None

    try:
        # under the virtual clock, with nothing left to happen, this would stall
        assert inst.wait(check, poll=0) == "done"
    finally:
        inst.close()


@pytest.mark.parametrize("payload,code", [({"name": "nosuch", "defer": True}, errno.ENOENT),
                                          ({"name": "resource", "defer": True}, errno.EINVAL),
                                          ({"name": "sched-simple", "defer": 1}, errno.EPROTO),
                                          ({"defer": True}, errno.EPROTO)])
def test_module_debug_errors(pyflux, payload, code):
    with pytest.raises(OSError) as exc:
        pyflux.Flux().rpc("module.debug", payload).get()
    assert exc.value.errno == code


def test_module_debug_without_defer_is_an_empty_answer(pyflux):
    assert pyflux.Flux().rpc("module.debug", {"name": "sched-simple"}).get() is None


def test_the_record_is_an_instance_key(flux, pyflux):
    r = flux.fails("kvs", "put", "broker.deferred=1")
    assert "refusing to overwrite an instance key" in r.stderr
    defer(pyflux, True)
    conn = sqlite3.connect(flux.state_dir + "/kvs.sqlite", isolation_level=None)
    conn.execute("UPDATE kvs SET value = '[1]' WHERE key = 'broker.deferred'")
    conn.close()
    r = flux.fails("submit", "true")
    assert "damaged KVS key broker.deferred" in r.stderr and r.stderr.count("\n") == 1
    flux("sched", "reload")  # what repairs it, as the removal drops what was held
    assert flux.state(flux.submit("true")) in ("RUN", "INACTIVE")
