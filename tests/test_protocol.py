"""RFC 27 as a boundary: the protocol module, the broker's requests, and the
layering rules the source must keep (the scheduler-module registry is
tests/test_registry.py's)."""

import ast
import os
import pathlib
import re

import pytest

from flux_lite import protocol as rfc27
from flux_lite.errors import FluxLiteError

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIB = ROOT / "flux_lite"


def _source(path):
    return path.read_text(encoding="utf-8")


def _library_files():
    return sorted(p for p in LIB.rglob("*.py") if p.name != "protocol.py")


def _topic_constants():
    return {name: value for name, value in vars(rfc27).items()
            if re.fullmatch(r"(SCHED|JM)_[A-Z_]+", name) and isinstance(value, str) and "." in value}


# -- payloads and checks ---------------------------------------------------------------------


def test_response_types_are_rfc27s():
    assert (rfc27.SUCCESS, rfc27.ANNOTATE, rfc27.DENY, rfc27.CANCEL) == (0, 1, 2, 3)
    with pytest.raises(ValueError):
        rfc27.alloc_response(1, 4)
    assert rfc27.alloc_response(7, rfc27.DENY, note="x") == {"id": 7, "type": 2, "note": "x"}


def test_free_request_drops_the_scheduling_key_and_copies():
    R = {"version": 1, "execution": {}, "scheduling": {"graph": 1}}
    msg = rfc27.free_request(5, R, final=True)
    assert msg == {"id": 5, "R": {"version": 1, "execution": {}}, "final": True}
    assert "scheduling" in R


@pytest.mark.parametrize("msg, err", [
    ({"mode": "limited", "limit": 0}, "invalid ready limit"),
    ({"mode": "limited", "limit": "8"}, "invalid ready limit"),
    ({"mode": "limited"}, "invalid ready limit"),
    ({"mode": "sometimes"}, "invalid ready mode"),
    ({}, "invalid ready mode"),
])
def test_ready_request_checked_with_eproto(msg, err):
    with pytest.raises(FluxLiteError) as info:
        rfc27.check_ready(msg)
    assert (info.value.errno, str(info.value)) == (rfc27.EPROTO, err)


def test_ready_request_round_trip():
    assert rfc27.check_ready(rfc27.ready_request(rfc27.LIMITED, 8)) == ("limited", 8)
    assert rfc27.check_ready(rfc27.ready_request(rfc27.UNLIMITED)) == ("unlimited", 0)


def test_expiration_request_checks():
    assert rfc27.check_expiration(rfc27.expiration_request(3, 10)) == (3, 10.0)
    with pytest.raises(FluxLiteError) as info:
        rfc27.check_expiration(rfc27.expiration_request(3, -1.0))
    assert (info.value.errno, str(info.value)) == (rfc27.EINVAL, "invalid expiration -1.0")
    with pytest.raises(FluxLiteError) as info:
        rfc27.check_expiration({"id": "x", "expiration": 1.0})
    assert info.value.errno == rfc27.EPROTO


def test_hello_record_carries_free_only_when_partly_released():
    assert "free" not in rfc27.hello_record(1, 16, 0, 0.0, {})
    assert rfc27.hello_record(1, 16, 0, 0.0, {}, free="2-3")["free"] == "2-3"


# -- through the broker ---------------------------------------------------------------------


def _session(flux):
    from flux_lite.instance import Instance

    inst = Instance.open(flux.state_dir)
    return inst, inst.session()


def test_requests_answer_errno_and_message(flux):
    inst, session = _session(flux)
    try:
        with session as broker:
            with pytest.raises(FluxLiteError) as info:
                broker.rpc("sched.no-such-method", {})
            assert info.value.errno == rfc27.ENOSYS
            with pytest.raises(FluxLiteError) as info:
                broker.rpc(rfc27.JM_READY, {"mode": "limited", "limit": -1})
            assert (info.value.errno, str(info.value)) == (rfc27.EPROTO, "invalid ready limit")
            stats = broker.rpc(rfc27.SCHED_STATS, {})
            assert stats["policy"] == "fcfs" and stats["queue-depth"] == 8
            assert broker.rpc(rfc27.SCHED_DEBUG, rfc27.debug_request()) == {"flags": 0}
            assert broker.rpc(rfc27.JM_STATS, {})["active_jobs"] == 0
    finally:
        inst.close()


def test_requests_to_an_unloaded_scheduler_fail_enosys(flux):
    flux("module", "remove", "sched-simple")
    inst, session = _session(flux)
    try:
        with session as broker:
            for topic in (rfc27.SCHED_STATS, rfc27.SCHED_EXPIRATION, rfc27.SCHED_RESOURCE_STATUS):
                with pytest.raises(FluxLiteError) as info:
                    broker.rpc(topic, rfc27.expiration_request(1, 1.0))
                assert info.value.errno == rfc27.ENOSYS
    finally:
        inst.close()


def test_scheduler_raises_scheduler_restart_through_job_manager_raise(flux):
    """A failed hello callback is answered with a job-manager.raise request
    carrying the scheduler's (the instance owner's) credentials."""
    jobid = flux.submit("-n1", "sleep", "inf")
    inst, session = _session(flux)
    try:
        with session as broker:
            # a hello record naming a rank the pool does not have
            real = broker.jm.alloc.hello

            def bad_hello(msg, cred=None):
                records = real(msg, cred)
                records[0]["R"] = {"version": 1, "execution": {"R_lite": [{"rank": "99", "children": {"core": "0"}}],
                                                                "starttime": 0, "expiration": 0}}
                return records

            broker.jm.handlers[rfc27.JM_HELLO] = bad_hello
            from flux_lite.sched import loader

            loader.module_reload(broker)
    finally:
        inst.close()
    events = flux.events(jobid)
    exc = [e for e in events if e["name"] == "exception"]
    assert exc and exc[0]["context"]["type"] == "scheduler-restart"
    assert exc[0]["context"]["note"] == "failed to reallocate R for running job"
    assert exc[0]["context"]["userid"] == os.getuid()


# -- layering rules ----------------------------------------------------------------------------


def _attribute_calls(tree):
    """(receiver text, method) of every call of the form X.m(...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield ast.unparse(node.func.value), node.func.attr


def test_job_manager_and_resources_call_no_scheduler_method():
    files = sorted((LIB / "job_manager").glob("*.py")) + [LIB / "resources.py"]
    for path in files:
        for receiver, method in _attribute_calls(ast.parse(_source(path))):
            assert not re.search(r"(^|\.)(sched|_sched)$", receiver), (path.name, receiver, method)


def test_scheduler_calls_none_of_the_job_managers():
    for path in sorted((LIB / "sched").glob("*.py")):
        text = _source(path)
        assert not re.search(r"\bjm\b|\.jm\.|housekeeping|job_manager", text), path.name


def test_only_the_broker_touches_its_scheduler_slot():
    for path in _library_files():
        if path.name != "broker.py":
            assert not re.search(r"\._sched(_loaded)?\b", _source(path)), path.name


def test_every_topic_has_a_sender_and_a_handler():
    """Each topic constant is named by a handler table and by a sender
    (send/rpc) somewhere outside the protocol module, except sched.prioritize,
    which flux-lite's job manager has no occasion to send (see CONTRIBUTING.md)."""
    texts = {p: _source(p) for p in list(LIB.rglob("*.py")) + list((ROOT / "cli").glob("*.py"))
             if p.name != "protocol.py"}
    for name in _topic_constants():
        senders = [p for p, t in texts.items() if re.search(rf"\.(send|rpc)\(\s*(rfc27|protocol)\.{name}\b", t)
                   or re.search(rf"_tell_sched\(broker, rfc27\.{name}\b", t)]
        handlers = [p for p, t in texts.items() if re.search(rf"(rfc27|protocol)\.{name}\s*:", t)]
        assert handlers, name
        if name != "SCHED_PRIORITIZE":
            assert senders, name


def test_no_bare_alloc_response_types():
    for path in [LIB / "job_manager" / "alloc.py", LIB / "sched" / "base.py"]:
        text = _source(path)
        assert not re.search(r"rtype == \d|respond\([^)]*, \d", text), path.name
