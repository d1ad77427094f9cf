"""flux.resource's services: resource.status, resource.sched-status, sched.resource-status."""

import errno

import pytest


def test_resource_status_payload_is_the_resource_modules(pyflux, flux):
    flux("resource", "drain", "1-2", "bad fan")
    flux.advance("10s")
    flux("resource", "drain", "3", "psu")
    h = pyflux.Flux()
    st = h.rpc("resource.status").get()
    assert sorted(st) == ["R", "drain", "exclude", "offline", "online", "torpid"]
    assert st["online"] == "0-3" and st["offline"] == "" and st["exclude"] == "" and st["torpid"] == ""
    start = st["R"]["execution"]["starttime"]
    assert st["drain"] == {"1-2": {"timestamp": start, "reason": "bad fan"},
                           "3": {"timestamp": start + 10, "reason": "psu"}}
    assert st["R"]["execution"]["R_lite"] == [{"rank": "0-3", "children": {"core": "0-1"}}]


def test_sched_status_sets(pyflux, flux):
    flux("resource", "drain", "3", "psu")
    flux.submit("-N2", "sleep", "100")
    h = pyflux.Flux()
    sets = h.rpc("resource.sched-status").get()
    assert [r["rank"] for r in sets["allocated"]["execution"]["R_lite"]] == ["0-1"]
    assert [r["rank"] for r in sets["down"]["execution"]["R_lite"]] == ["3"]
    assert [r["rank"] for r in sets["all"]["execution"]["R_lite"]] == ["0-3"]
    assert h.rpc("sched.resource-status").get() == sets
    flux("module", "remove", "sched-simple")
    with pytest.raises(OSError) as info:
        h.rpc("sched.resource-status").get()
    assert info.value.errno == errno.ENOSYS


def test_queue_status_and_config(pyflux, flux):
    h = pyflux.Flux()
    assert h.rpc("job-manager.queue-status", {}).get() == {"enable": True, "start": True}
    conf = {"queues": {"batch": {}, "debug": {}}, "policy": {"jobspec": {"defaults": {"system": {"queue": "batch"}}}}}
    h.rpc("config.load", conf).get()
    assert h.rpc("config.get").get()["queues"] == {"batch": {}, "debug": {}}
    # named queues start stopped, as in Flux
    assert h.rpc("job-manager.queue-status", {"name": "debug"}).get() == {"enable": True, "start": False}
    with pytest.raises(OSError) as info:
        h.rpc("job-manager.queue-status", {}).get()
    assert (info.value.errno, info.value.strerror) == (errno.EINVAL, "a named queue is required")
    with pytest.raises(OSError) as info:
        h.rpc("job-manager.queue-status", {"name": "nope"}).get()
    assert info.value.errno == errno.EINVAL
    with pytest.raises(OSError) as info:
        h.rpc("config.load", {"queues": {"x": {"bogus": 1}}}).get()
    assert (info.value.errno, info.value.strerror) == (
        errno.EINVAL, "error parsing [queues.x] config table: 1 object item(s) left unpacked: bogus")
    assert h.rpc("config.get").get()["queues"] == {"batch": {}, "debug": {}}


def test_a_guest_reads_the_config_but_does_not_load_one(pyflux, flux, monkeypatch):
    monkeypatch.setenv("FLUX_HANDLE_USERID", "1234")
    h = pyflux.Flux()
    assert h.rpc("config.get").get() == {}
    with pytest.raises(OSError) as info:
        h.rpc("config.load", {"queues": {"batch": {}}}).get()
    assert (info.value.errno, info.value.strerror) == (errno.EPERM,
                                                      "Operation not permitted: config load is for the instance owner")
    assert h.rpc("resource.status").get()["online"] == "0-3"


def test_resource_list_status_and_queue_list(pyflux, flux):
    import importlib
    import math

    resource = importlib.import_module("flux.resource")
    queue = importlib.import_module("flux.queue")
    flux("resource", "drain", "3", "psu")
    flux.submit("-N2", "sleep", "100")
    h = pyflux.Flux()
    rl = resource.resource_list(h).get()
    assert isinstance(rl, resource.SchedResourceList)
    counts = {s: (rl[s].nnodes, rl[s].ncores, str(rl[s].nodelist)) for s in ("all", "up", "down", "allocated", "free")}
    assert counts == {"all": (4, 8, "node[0-3]"), "up": (3, 6, "node[0-2]"), "down": (1, 2, "node3"),
                      "allocated": (2, 4, "node[0-1]"), "free": (1, 2, "node2")}
    st = resource.resource_status(h).get()
    assert (str(st.drained), str(st.draining), str(st.avail), str(st.allocated)) == ("3", "", "0-2", "0-1")
    [info] = st.drain_info
    assert (str(info.ranks), info.reason) == ("3", "psu") and st.get_drain_info(3) == info
    st.filter("node[0-1]")
    assert (str(st.all), str(st.drained)) == ("0-1", "")
    [q] = list(queue.QueueList(h))
    assert (q.name, q.enabled, q.started, q.is_default) == ("", True, True, True)
    assert (q.limits.duration, q.limits.max.nnodes, q.limits.min.nnodes, q.defaults.duration) == (
        math.inf, math.inf, 0, math.inf)
    assert (q.resources.all.nnodes, q.resources.free.nnodes) == (4, 1)


def test_monitor_waitup_answers_for_the_online_count(pyflux, flux):
    import errno

    h = pyflux.Flux()
    assert h.rpc("resource.monitor-waitup", {"up": 4}).get() is None
    with pytest.raises(OSError) as exc:
        h.rpc("resource.monitor-waitup", {"up": 2}).get()
    assert exc.value.errno == errno.ETIMEDOUT and "can never be" in exc.value.strerror
    for bad in ({"up": 5}, {"up": -1}):
        with pytest.raises(OSError) as exc:
            h.rpc("resource.monitor-waitup", bad).get()
        assert (exc.value.errno, exc.value.strerror) == (errno.EPROTO, "up value is out of range")


def test_drain_and_undrain_requests(pyflux, flux):
    import errno

    h = pyflux.Flux()
    assert h.rpc("resource.drain", {"targets": "1-2", "reason": "fan"}).get() is None
    assert flux.out("resource", "status", "-no", "{state} {ranks} {reason}", "-s", "drained") == "drained 1-2 fan\n"
    with pytest.raises(OSError) as exc:
        h.rpc("resource.undrain", {"targets": "0", "mode": "foo"}).get()
    assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, "invalid undrain mode 'foo' specified")
    with pytest.raises(OSError) as exc:
        h.rpc("resource.undrain", {"targets": "0"}).get()
    assert exc.value.strerror == "rank 0 not drained"
    assert h.rpc("resource.undrain", {"targets": "1"}).get() is None
    assert flux.out("resource", "status", "-no", "{ranks}", "-s", "drained") == "2\n"
    with pytest.raises(OSError) as exc:
        h.rpc("resource.drain", {"targets": 3}).get()
    assert exc.value.errno == errno.EPROTO
