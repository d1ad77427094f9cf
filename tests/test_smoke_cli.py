def test_submit_runs_to_completion(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority", "alloc", "start"]
    flux.advance("60s")
    assert flux.eventlog(jobid)[-5:] == ["start", "finish", "release", "free", "clean"]
    assert flux.out("jobs", "-a", "-no", "{status} {returncode}", jobid).strip() == "COMPLETED 0"
