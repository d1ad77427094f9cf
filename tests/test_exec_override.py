"""exec.test.override and `flux job-exec-override` (t2400-job-exec-test):
a test-exec job that starts and finishes when its owner says so, with Flux's
test exec refusals."""

import errno

import pytest

OVERRIDE = "--setattr=system.exec.test.override=1"


def names(flux, jobid):
    return [line.split()[1] for line in flux.out("job", "eventlog", jobid).splitlines()]


def test_start_then_run_duration(flux):
    jobid = flux.submit(OVERRIDE, "--setattr=system.exec.test.run_duration=5s", "true")
    flux.advance("1h")
    assert flux.state(jobid) == "RUN" and "start" not in names(flux, jobid)
    flux("job-exec-override", "start", jobid)
    assert names(flux, jobid)[-1] == "start"
    flux.advance("5s")
    assert flux.state(jobid) == "INACTIVE"
    entries = flux.out("job", "eventlog", jobid).splitlines()
    start = next(float(e.split()[0]) for e in entries if e.split()[1] == "start")
    finish = next(float(e.split()[0]) for e in entries if e.split()[1] == "finish")
    assert finish - start == 5.0
    assert flux.out("jobs", "-no", "{result}", jobid) == "COMPLETED\n"


def test_start_and_finish_with_a_status(flux):
    jobid = flux.submit(OVERRIDE, "true")
    assert flux.fails("job-exec-override", "finish", jobid, "0").stderr == \
        "flux-lite job-exec-override: ERROR: Job not running\n"
    flux("job-exec-override", "start", jobid)
    assert flux.fails("job-exec-override", "start", jobid).stderr == \
        "flux-lite job-exec-override: ERROR: Job already running\n"
    flux.advance("1h")
    assert flux.state(jobid) == "RUN"
    flux("job-exec-override", "finish", jobid, "256")
    assert flux.out("job", "eventlog", jobid).splitlines()[-4].split(None, 1)[1] == "finish status=256"
    assert flux.out("jobs", "-no", "{result}", jobid) == "FAILED\n"


def test_refusals(flux):
    plain = flux.submit("--setattr=system.exec.test.run_duration=0s", "true")
    assert flux.fails("job-exec-override", "start", plain).stderr.endswith(
        "ERROR: Job not in exec override mode\n")
    assert flux.fails("job-exec-override", "start", "1234").stderr.endswith("ERROR: Job not found\n")
    emulated = flux.submit("sleep", "inf")  # not a job of the test execution mode
    assert flux.fails("job-exec-override", "start", emulated).stderr.endswith("ERROR: Job not found\n")
    assert flux.fails("job-exec-override", "start", "bogus", code=2).stderr


def test_only_the_jobs_owner_may(flux):
    jobid = flux.submit(OVERRIDE, "true")
    guest = {"FLUX_HANDLE_USERID": "4242", "FLUX_HANDLE_ROLEMASK": "0x2"}
    r = flux.fails("job-exec-override", "start", jobid, env=guest)
    assert r.stderr.endswith("ERROR: Permission denied\n")


@pytest.mark.parametrize("payload,code", [({}, errno.EPROTO), ({"event": "foo", "jobid": "12"}, errno.EPROTO),
                                          ({"event": "start", "jobid": 12, "status": "x"}, errno.EPROTO)])
def test_request_errors(pyflux, payload, code):
    with pytest.raises(OSError) as exc:
        pyflux.Flux().rpc("job-exec.override", payload).get()
    assert exc.value.errno == code


def test_an_invalid_event_is_refused(pyflux, flux):
    jobid = flux.submit(OVERRIDE, "true")
    dec = int(flux.out("job", "id", "--to=dec", jobid))
    with pytest.raises(OSError) as exc:
        pyflux.Flux().rpc("job-exec.override", {"event": "foo", "jobid": dec}).get()
    assert exc.value.errno == errno.EINVAL and "Invalid event" in str(exc.value)
    assert pyflux.Flux().rpc("job-exec.override", {"event": "start", "jobid": dec}).get() is None
