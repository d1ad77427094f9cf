"""flux.job's handle API: submit, wait, result, event watches, cancel/kill/raise,
listings, key lookups and stats, over the instance's services."""

import base64
import errno
import json
import signal

import pytest

from flux_lite.formats import jobspec as jobspecmod

GUEST = "1234"
EVENTS = ["submit", "validate", "depend", "priority", "alloc", "start", "finish", "release", "free", "clean"]


def spec(*command, ntasks=1, env=None, **kw):
    js = jobspecmod.build(list(command), ntasks=ntasks, cwd="/tmp", **kw)
    if env is not None:
        js["attributes"]["system"]["environment"] = env
    return json.dumps(js)


def dec(flux, jobid):
    return int(flux.out("job", "id", "--to=dec", str(jobid)))


def f58(flux, jobid):
    return flux.out("job", "id", "--to=f58", str(int(jobid))).strip()


@pytest.fixture
def h(pyflux, flux):
    return pyflux.Flux()


def as_guest(monkeypatch):
    monkeypatch.setenv("FLUX_HANDLE_USERID", GUEST)


# -- submit -------------------------------------------------------------------------------


def test_submit_returns_a_jobid_and_the_job_runs(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("sleep", "5"))
    assert isinstance(jobid, job.JobID) and jobid > 0
    assert flux.eventlog(f58(flux, jobid)) == EVENTS[:6]
    future = job.submit_async(h, spec("true"), urgency=0)
    assert isinstance(future, job.SubmitFuture)
    held = future.get_id()
    assert job.submit_get_id(future) == held
    assert flux.events(f58(flux, held))[0]["context"] == {"userid": 0, "urgency": 0, "flags": 0, "version": 1}
    assert flux.state(f58(flux, held)) == "SCHED"


def test_submit_flags_and_j(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("true", env={"FOO": "BAR"}), waitable=True, debug=True)
    assert flux.events(f58(flux, jobid))[0]["context"]["flags"] == 6
    # J keeps the jobspec as submitted (its environment too), the jobspec does not
    data = job.job_kvs_lookup(h, jobid, keys=["J", "jobspec"])
    payload = json.loads(base64.b64decode(data["J"].split(".")[1]))
    assert payload["attributes"]["system"]["environment"] == {"FOO": "BAR"}
    assert "environment" not in data["jobspec"]["attributes"]["system"]
    # a J signed (mechanism none) by the requester is accepted as it is
    again = job.submit(h, data["J"], pre_signed=True)
    assert job.job_kvs_lookup(h, again, keys=["J"])["J"] == data["J"]


def test_submit_errors(pyflux, flux, h, monkeypatch):
    from flux import job
    from flux.job import ffi

    for call in (lambda: job.submit(ffi.NULL, spec("true")), lambda: job.submit(None, spec("true")),
                 lambda: job.submit(h, ffi.NULL), lambda: job.submit_get_id(ffi.NULL)):
        with pytest.raises(OSError) as exc:
            call()
        assert exc.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        job.submit(h, 0)
    with pytest.raises(OSError) as exc:
        job.submit(h, "{not json")
    assert exc.value.errno == errno.EINVAL and str(exc.value).startswith("[Errno 22] jobspec: invalid JSON")
    with pytest.raises(OSError) as exc:
        job.submit(h, spec("true"), urgency=32)
    assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, "urgency range is [0:31]")
    with pytest.raises(OSError) as exc:
        job.submit(h, json.dumps({"version": 1}))
    assert exc.value.errno == errno.EINVAL
    # a J signed by someone else is refused
    header = base64.b64encode(b"version\0i1\0userid\0i42\0mechanism\0snone\0").decode()
    J = f"{header}.{base64.b64encode(spec('true').encode()).decode()}.none"
    with pytest.raises(OSError) as exc:
        job.submit(h, J, pre_signed=True)
    assert (exc.value.errno, exc.value.strerror) == (errno.EPERM, "signer=42 != requestor=0")
    assert flux.out("jobs", "-a", "-no", "{id}") == ""


def test_guest_submit_rules(pyflux, flux, h, monkeypatch):
    from flux import job

    as_guest(monkeypatch)
    g = pyflux.Flux()
    for kw, text in (({"waitable": True}, "only the instance owner can submit with FLUX_JOB_WAITABLE"),
                     ({"urgency": 17}, "only the instance owner can submit with urgency >16")):
        with pytest.raises(OSError) as exc:
            job.submit(g, spec("true"), **kw)
        assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, text)
    with pytest.raises(OSError) as exc:
        job.submit(g, spec("true"), novalidate=True)
    assert exc.value.errno == errno.EPERM
    jobid = job.submit(g, spec("true"))
    assert flux.events(f58(flux, jobid))[0]["context"]["userid"] == 1234


# -- wait and result ----------------------------------------------------------------------


def test_wait_advances_the_clock_and_reaps_once(pyflux, flux, h):
    from flux import job

    t0 = flux.now()
    jobid = job.submit(h, spec("sleep", "5"), waitable=True)
    assert job.wait(h, jobid) == (jobid, True, "")
    assert flux.now() == t0 + 5
    with pytest.raises(OSError) as exc:
        job.wait(h, jobid)
    assert exc.value.errno == errno.ECHILD
    with pytest.raises(OSError) as exc:
        job.wait(h)
    assert (exc.value.errno, exc.value.strerror) == (errno.ECHILD, "there are no more waitable jobs")
    failed = job.submit(h, spec("false"), waitable=True)
    status = job.wait_async(h).wait_for(5.0).get_status()
    assert status == (failed, False, "task(s) exited with exit code 1")
    assert isinstance(status, job.JobWaitResult)


def test_wait_for_a_job_nothing_ends_fails_clearly(pyflux, flux, h):
    from flux import job

    t0 = flux.now()
    jobid = job.submit(h, spec("sleep", "inf"), waitable=True)
    with pytest.raises(OSError) as exc:
        job.wait(h, jobid)
    assert exc.value.errno == errno.ETIMEDOUT
    assert exc.value.strerror == "the job cannot end: nothing left to happen under the virtual clock"
    assert flux.now() == t0  # nothing happened, so no time passed
    job.cancel(h, jobid)
    ok, err = job.wait(h, jobid)[1:]
    assert (ok, err) == (False, "Fatal exception type=cancel ")


def test_result_of_any_job(pyflux, flux, h):
    from flux import constants, job

    done = job.submit(h, spec("sleep", "2"))
    canceled = job.submit(h, spec("true"), urgency=0)
    job.cancel(h, canceled, "not now")
    seen = {}
    for jobid in (done, canceled):
        job.result_async(h, jobid).then(lambda f, j: seen.setdefault(j, f.get_info()), jobid)
    h.reactor_run()
    info = seen[done]
    assert (info.id, info.result, info.returncode, info.runtime) == (done, "COMPLETED", 0, 2.0)
    assert info.to_dict()["result"] == "COMPLETED" and info.to_dict()["duration"] == 0.0
    info = seen[canceled]
    assert (info.result_id, info.returncode, info.exception.type, info.exception.note) == (
        constants.FLUX_JOB_RESULT_CANCELED, -128, "cancel", "not now")
    assert job.result(h, canceled).result == "CANCELED"  # as often as asked
    with pytest.raises(FileNotFoundError):
        job.result(h, 123)


# -- event watches ------------------------------------------------------------------------


def test_event_watch_and_wait(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("sleep", "3"))
    events = list(job.event_watch(h, jobid))
    assert [e.name for e in events] == EVENTS
    assert all(isinstance(e, job.EventLogEvent) and isinstance(e.timestamp, float) for e in events)
    assert events[6].context == {"status": 0} and events[6].timestamp == events[0].timestamp + 3
    assert job.event_wait(h, jobid, "start").name == "start"
    with pytest.raises(OSError) as exc:
        job.event_wait(h, jobid, "foo")
    assert (exc.value.errno, exc.value.strerror) == (errno.ENODATA, "eventlog ended before event='foo'")
    # the output eventlog (the job shell's, RFC 24) ends with the job
    out = [e.name for e in job.event_watch(h, jobid, eventlog="guest.output")]
    assert out == ["header", "data", "data"]


def test_event_watch_errors(pyflux, flux, h):
    from flux import job

    with pytest.raises(OSError) as exc:
        list(job.event_watch(h, 123))
    assert exc.value.errno == errno.ENOENT
    with pytest.raises(OSError) as exc:
        job.event_wait(None, 123, "start")
    assert exc.value.errno == errno.EINVAL
    # an event nothing could bring under the virtual clock
    jobid = job.submit(h, spec("sleep", "inf"))
    with pytest.raises(OSError) as exc:
        job.event_wait(h, jobid, "finish")
    assert exc.value.errno == errno.ETIMEDOUT
    assert "nothing left to happen under the virtual clock" in exc.value.strerror
    # a fatal exception before the event
    big = job.submit(h, spec("true", ntasks=100))
    with pytest.raises(job.JobException) as jexc:
        job.event_wait(h, big, "start")
    assert (jexc.value.type, jexc.value.severity) == ("alloc", 0)
    with pytest.raises(OSError) as exc:
        job.event_wait(h, big, "start", raiseJobException=False)
    assert exc.value.errno == errno.ENODATA


def test_event_watch_future(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("sleep", "3"))
    future = job.event_watch_async(h, jobid)
    assert isinstance(future, job.JobEventWatchFuture)
    assert future.get_event(autoreset=False).name == "submit"
    assert future.get_event(autoreset=False).name == "submit"
    future.reset()
    assert future.get_event().name == "validate"
    names = []

    def cb(f):
        event = f.get_event()
        names.append(event.name)
        if event.name == "start":
            f.cancel(stop=True)

    future.then(cb)
    h.reactor_run()
    assert names == ["depend", "priority", "alloc", "start"]
    future = job.event_watch_async(h, jobid)
    future.get_event()
    future.cancel()
    assert future.get_event() is None


# -- cancel, raise, kill, urgency --------------------------------------------------------


def test_cancel_raise_kill(pyflux, flux, h):
    from flux import job

    running = job.submit(h, spec("sleep", "100"))
    job.event_wait(h, running, "start")
    job.kill(h, running, signum=signal.SIGKILL)
    finish = job.event_wait(h, running, "finish")
    assert finish.context == {"status": (128 + 9) << 8}  # the shell exits 128+signal
    pending = job.submit(h, spec("true"), urgency=0)
    with pytest.raises(OSError) as exc:
        job.kill(h, pending)
    assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, "job is not running")
    job.job_raise(h, pending, "test", severity=1, note="just so")
    job.raise_(h, pending, "mine", 0)
    excs = [e for e in flux.events(f58(flux, pending)) if e["name"] == "exception"]
    assert [e["context"] for e in excs] == [
        {"type": "test", "severity": 1, "note": "just so", "userid": 0},
        {"type": "mine", "severity": 0, "note": "", "userid": 0},
    ]
    for call in (job.kill, job.cancel):
        with pytest.raises(ValueError):
            call(h, "abc")
        with pytest.raises(OSError):
            call(h, 123)


def test_set_urgency(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("true"), urgency=0)
    assert job.set_urgency(h, jobid, 16) == 0
    assert flux.state(f58(flux, jobid)) == "INACTIVE"
    with pytest.raises(OSError) as exc:
        job.set_urgency(h, jobid, 1)
    assert exc.value.errno == errno.EINVAL


def test_guest_job_requests(pyflux, flux, h, monkeypatch):
    from flux import job

    mine = job.submit(h, spec("sleep", "100"))
    as_guest(monkeypatch)
    g = pyflux.Flux()
    for call, text in ((lambda: job.cancel(g, mine), "guests can only raise exceptions on their own jobs"),
                       (lambda: job.kill(g, mine), "guests may only send signals to their own jobs"),
                       (lambda: job.job_kvs_lookup(g, mine), "access is restricted to job/instance owner"),
                       (lambda: list(job.event_watch(g, mine)), "access is restricted to job/instance owner"),
                       (lambda: job.wait(g, mine), "Operation not permitted: job wait is for the instance owner")):
        with pytest.raises(PermissionError) as exc:
            call()
        assert exc.value.strerror == text
    theirs = job.submit(g, spec("true"), urgency=0)
    with pytest.raises(OSError) as exc:
        job.set_urgency(g, theirs, 17)
    assert (exc.value.errno, exc.value.strerror) == (errno.EPERM, "guests can only adjust urgency <= default")
    job.cancel(g, theirs)
    assert flux.out("jobs", "-a", "-no", "{status}", f58(flux, theirs)).strip() == "CANCELED"
    # the guest lists everyone's jobs, as job-list serves them
    assert sorted(j.userid for j in job.JobList(g, user="all").jobs()) == [0, 1234]


# -- listings ----------------------------------------------------------------------------


def test_job_list(pyflux, flux, h):
    from flux import constants, job

    a = job.submit(h, spec("sleep", "0", name="a"))
    b = job.submit(h, spec("sleep", "10", name="b"))
    c = job.submit(h, spec("true", name="c"), urgency=0)
    jobs = job.job_list(h).get_jobs()
    assert [j["id"] for j in jobs] == [c, b, a]  # pending, running, inactive
    assert jobs[1] == {
        "id": b, "userid": 0, "urgency": 16, "priority": 16, "t_submit": flux.now(), "t_depend": flux.now(),
        "t_priority": flux.now(), "t_sched": flux.now(), "t_run": flux.now(), "state": constants.FLUX_JOB_STATE_RUN,
        "name": "b", "cwd": "/tmp", "ntasks": 1, "ncores": 1, "duration": 0.0, "nnodes": 1, "ranks": "0",
        "nodelist": "node0", "expiration": 0.0, "annotations": {"sched": {"resource_summary": "rank0/core0"}},
    }
    assert job.job_list(h, attrs=["name"]).get_jobs()[0] == {"id": c, "name": "c"}
    inactive = job.job_list_inactive(h, attrs=["result", "success"]).get_jobs()
    assert inactive == [{"id": a, "result": 1, "success": True}]
    assert [j.name for j in job.job_list(h, constraint={"name": ["b", "c"]}).get_jobinfos()] == ["c", "b"]
    assert [j.id for j in job.JobList(h, filters=["pending", "completed"]).jobs()] == [c, a]
    assert job.JobList(h, filters=["running"]).jobs()[0].nodelist == "node0"
    with pytest.raises(ValueError):
        job.JobList(h, filters=["nosuch"])
    info = job.job_list_id(h, a).get_jobinfo()
    assert (info.id, info.state, info.result, info.returncode) == (a, "INACTIVE", "COMPLETED", 0)
    with pytest.raises(FileNotFoundError):
        job.job_list_id(h, 123).get_job()
    listed = job.JobList(h, ids=[a, 123])
    assert [j.id for j in listed.jobs()] == [a]
    assert listed.errors == ["JobID 123 unknown"]
    assert job.get_job(h, 123) is None
    assert job.get_job(h, b)["state"] == "RUN"
    with pytest.raises(OSError) as exc:
        job.job_list(h, attrs=["bogus"]).get_jobs()
    assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, "bogus is not a valid attribute")
    with pytest.raises(OSError) as exc:
        job.job_list(h, constraint={"bogus": [1]}).get_jobs()
    assert (exc.value.errno, exc.value.strerror) == (errno.EPROTO, "unknown constraint operator: bogus")
    assert "dependencies" in h.rpc("job-list.list-attrs").get()["attrs"]


def test_job_stats(pyflux, flux, h):
    from flux import job
    from flux.job.stats import JobStats

    job.submit(h, spec("true"))
    job.submit(h, spec("false"))
    job.cancel(h, job.submit(h, spec("true"), urgency=0))
    job.submit(h, spec("sleep", "10"))
    stats = JobStats(h)
    assert (stats.active, stats.inactive) == (-1, -1)
    stats.update()
    assert stats.inactive == -1
    h.reactor_run()
    counts = {k: getattr(stats, k) for k in (*JobStats.states, *JobStats.stats, *JobStats.derived_stats)}
    assert counts == {"depend": 0, "priority": 0, "sched": 0, "run": 1, "cleanup": 0, "inactive": 3, "total": 4,
                      "successful": 1, "failed": 2, "timeout": 0, "canceled": 1, "inactive_purged": 0,
                      "pending": 0, "running": 1, "active": 1}


# -- key lookups -------------------------------------------------------------------------


def test_kvs_lookup_current_base_original(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("sleep", "50", env={"FOO": "BAR"}), urgency=0)
    h.rpc("job-manager.update", {"id": jobid, "updates": {"attributes.system.duration": 100.0}}).get()
    assert h.rpc("job-manager.urgency", {"id": jobid, "urgency": 16}).get() == {"old_urgency": 0}
    job.event_wait(h, jobid, "start")
    h.rpc("job-manager.update", {"id": jobid, "updates": {"attributes.system.duration": 200.0}}).get()
    current = job.job_kvs_lookup(h, jobid, keys=["jobspec", "R"])
    base = job.job_kvs_lookup(h, jobid, keys=["jobspec", "R"], base=True)
    assert current["jobspec"]["attributes"]["system"]["duration"] == 200.0
    assert base["jobspec"]["attributes"]["system"]["duration"] == 0
    start = current["R"]["execution"]["starttime"]
    assert (base["R"]["execution"]["expiration"], current["R"]["execution"]["expiration"]) == (start + 100,
                                                                                               start + 200)
    raw = job.job_kvs_lookup(h, jobid, keys=["R"], decode=False)
    assert isinstance(raw["R"], str) and json.loads(raw["R"]) == current["R"]
    original = job.job_kvs_lookup(h, jobid, original=True)
    assert set(original) == {"id", "jobspec"}
    assert original["jobspec"]["attributes"]["system"]["environment"] == {"FOO": "BAR"}
    data = job.job_info_lookup(h, jobid, keys=["eventlog"]).get()
    assert data["eventlog"].splitlines()[0].startswith('{"timestamp":')
    assert job.job_kvs_lookup(h, 123) is None
    assert job.job_kvs_lookup(h, jobid, keys=["foo"]) is None
    with pytest.raises(FileNotFoundError) as exc:
        job.job_info_lookup(h, jobid, keys=["foo"]).get()
    assert exc.value.strerror == "foo: key not found"
    lookup = job.JobKVSLookup(h, [jobid, 123], keys=["R"])
    assert [d["id"] for d in lookup.data()] == [jobid]
    assert lookup.errors == ["JobID 123 unknown"]


def test_job_list_constraints(pyflux, flux, h):
    from flux import job

    first = job.submit(h, spec("sleep", "10", ntasks=2, nnodes=2, exclusive=True, name="two"))  # node[0-1]
    flux.advance("5s")
    second = job.submit(h, spec("sleep", "10", name="one"))  # node2
    failed = job.submit(h, spec("false", name="f"))  # node3, ends at once

    def ids(constraint):
        return [j["id"] for j in job.job_list(h, attrs=["id"], constraint=constraint).get_jobs()]

    assert ids({"hostlist": ["node1"]}) == [first]
    assert ids({"hostlist": ["node[2-3]"]}) == [second, failed]
    assert ids({"ranks": ["0,3"]}) == [first, failed]
    assert ids({"t_submit": [f">={flux.now()}"]}) == [second, failed]
    assert ids({"t_submit": [f"<{flux.now()}"]}) == [first]
    assert ids({"not": [{"name": ["one"]}]}) == [first, failed]
    assert ids({"or": [{"name": ["one"]}, {"results": ["failed"]}]}) == [second, failed]
    assert ids({"states": ["running"]}) == [second, first]
    for bad, text in (({"states": ["bogus"]}, "states value invalid"),
                      ({"t_submit": ["soon"]}, "invalid t_submit value 'soon'"),
                      ({"name": "one"}, "name operator value must be an array")):
        with pytest.raises(OSError) as exc:
            ids(bad)
        assert (exc.value.errno, exc.value.strerror) == (errno.EPROTO, text)
    # the older request: userid, states, results
    jobs = h.rpc("job-list.list", {"max_entries": 0, "attrs": ["name"], "userid": 0, "states": 0,
                                   "results": 2}).get()["jobs"]
    assert jobs == [{"id": failed, "name": "f"}]
    jobs = h.rpc("job-list.list-inactive", {"max_entries": 5, "since": 0.0, "attrs": []}).get()["jobs"]
    assert jobs == [{"id": failed}]


def test_job_info_lookup_topic(pyflux, flux, h):
    from flux import constants, job

    jobid = job.submit(h, spec("true"))
    flags = constants.FLUX_JOB_LOOKUP_JSON_DECODE | constants.FLUX_JOB_LOOKUP_CURRENT
    data = h.rpc("job-info.lookup", {"id": jobid, "keys": ["R", "jobspec"], "flags": flags}).get()
    assert set(data) == {"id", "R", "jobspec"} and data["R"]["execution"]["nodelist"] == ["node0"]
    with pytest.raises(OSError) as exc:
        h.rpc("job-info.lookup", {"id": jobid, "keys": ["R"], "flags": 4}).get()
    assert exc.value.errno == errno.EPROTO


def test_guest_eventlogs(pyflux, flux, h):
    from flux import job

    jobid = job.submit(h, spec("sleep", "100"))
    t0 = flux.now()
    assert job.event_wait(h, jobid, "shell.start", eventlog="guest.exec.eventlog").name == "shell.start"
    assert flux.now() == t0
    with pytest.raises(FileNotFoundError) as exc:
        job.event_wait(h, jobid, "x", eventlog="guest.input")
    assert exc.value.strerror == "guest.input: not written: flux-lite runs no job shell"
    held = job.submit(h, spec("true"), urgency=0)
    job.cancel(h, held)
    # a job that never ran has no guest eventlog to watch: the watch ends
    assert list(job.event_watch(h, held, eventlog="guest.exec.eventlog")) == []


def test_job_kvs_directories(pyflux, flux, h):
    import flux.kvs
    from flux import job

    jobid = job.submit(h, spec("true"), waitable=True)
    job.wait(h, jobid)
    for directory in (job.job_kvs(h, jobid), job.job_kvs_guest(h, jobid)):
        assert isinstance(directory, flux.kvs.KVSDir)
        assert flux.kvs.exists(h, directory.path) and flux.kvs.isdir(h, directory.path)
    assert directory.path == f"{job.JobID(jobid).kvs}.guest"
    assert "output" in job.job_kvs_guest(h, jobid)
