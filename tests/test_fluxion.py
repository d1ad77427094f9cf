"""Fluxion's modules (sched-fluxion-resource, -feasibility, -qmanager) through the CLI.

The scenarios follow what flux-sched's own tests check (t1003 queue
policies, t1004 queue-depth and selection_type, t1014 t_estimate, t1021
nodex placement, t1025/t1026 reloads), written here with the expected
values worked out from Fluxion's semantics (see the module docstrings).
"""

import json

import pytest

FLUXION = "sched:\n  policy: fluxion\n"

# t1003's jobs: (cores, time limit), in submit order
T1003 = [(8, "60m"), (10, "60m"), (12, "60m"), (14, "60m"), (16, "60m"), (6, "121m"), (4, "179m"),
         (4, "239m"), (2, "239m"), (2, "299m"), (2, "59m")]


def one_node(flux_factory, extra=""):
    return flux_factory("--test-size=1", "--test-cores=16", config=FLUXION + extra)


def submit_all(flux, jobs):
    return [flux.submit(f"-n{n}", "-t", t, "sleep", "inf") for n, t in jobs]


def running(flux):
    return flux.out("jobs", "-n", "-f", "running", "-o", "{id.f58}").split()


def active(flux):
    return flux.out("jobs", "-n", "-o", "{id.f58}").split()


def sel(flux, jobid):
    return flux.out("jobs", "-n", "-o", "{annotations.sched.selection_type}", jobid).strip()


def annotations(flux, jobid):
    return json.loads(flux.out("jobs", "--json", jobid)).get("annotations", {})


def reload_fluxion(flux, resource_args, qmanager_args):
    """flux-sched's recipe: remove qmanager, reload resource, load qmanager."""
    flux("module", "remove", "sched-fluxion-qmanager")
    flux("module", "reload", "sched-fluxion-resource", *resource_args)
    flux("module", "load", "sched-fluxion-qmanager", *qmanager_args)


# -- modules, config, log -----------------------------------------------------------------


def test_config_loads_the_three_modules(flux_factory):
    flux = one_node(flux_factory)
    rows = [line for line in flux.out("module", "list").splitlines() if "fluxion" in line]
    assert rows == ["sched-fluxion-feasibility    0  R     0     0 feasibility",
                    "sched-fluxion-qmanager       0  R     0     0 sched",
                    "sched-fluxion-resource       0  R     0     0 "]
    log = [line for line in flux.dmesg() if "fluxion" in line or "scheduler:" in line]
    assert log == [
        "broker.debug[0]: insmod sched-fluxion-resource",
        "sched-fluxion-resource.info[0]: version 0.54.0",
        "sched-fluxion-resource.debug[0]: mod_main: resource module starting",
        "sched-fluxion-resource.warning[0]: create_reader: allowlist unsupported",
        "sched-fluxion-resource.debug[0]: resource graph datastore loaded with rv1exec reader",
        "sched-fluxion-resource.info[0]: populate_resource_db: loaded resources from core's resource.acquire",
        "sched-fluxion-resource.debug[0]: resource status changed (rankset=[all] status=DOWN)",
        "sched-fluxion-resource.debug[0]: resource status changed (rankset=[0] status=UP)",
        "sched-fluxion-resource.debug[0]: mod_main: resource graph database loaded",
        "broker.debug[0]: insmod sched-fluxion-feasibility",
        "sched-fluxion-feasibility.info[0]: version 0.54.0",
        "sched-fluxion-feasibility.debug[0]: service registered",
        "sched-fluxion-feasibility.debug[0]: mod_main: feasibility module starting",
        "sched-fluxion-feasibility.debug[0]: mod_main: resource graph database loaded",
        "broker.debug[0]: insmod sched-fluxion-qmanager",
        "sched-fluxion-qmanager.info[0]: version 0.54.0",
        "sched-fluxion-qmanager.debug[0]: service_register",
        "sched-fluxion-qmanager.debug[0]: enforced policy (queue=default): fcfs",
        "sched-fluxion-qmanager.debug[0]: effective queue params (queue=default): default",
        "sched-fluxion-qmanager.debug[0]: effective policy params (queue=default): default",
        "sched-fluxion-qmanager.debug[0]: handshaking with sched-fluxion-resource completed",
        "job-manager.debug[0]: scheduler: hello +partial-ok",
        "job-manager.debug[0]: scheduler: ready unlimited",
        "sched-fluxion-qmanager.debug[0]: handshaking with job-manager completed",
    ]
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))
    assert stats["queues"]["default"]["policy"] == "fcfs"
    assert stats["queues"]["default"]["queue_depth"] == 32
    res = json.loads(flux.out("module", "stats", "sched-fluxion-resource"))
    assert (res["V"], res["E"], res["by_rank"]) == (18, 17, {"0": 17})


def test_coupling_remove_resource_stops_qmanager_and_the_reload_recipe(flux_factory):
    flux = one_node(flux_factory)
    job = flux.submit("-n4", "sleep", "inf")
    flux("module", "remove", "sched-fluxion-resource")
    names = [line.split()[0] for line in flux.out("module", "list").splitlines()[1:]]
    assert "sched-fluxion-qmanager" not in names and "sched-fluxion-resource" not in names
    assert flux.dmesg()[-5:] == [
        "sched-fluxion-qmanager.err[0]: update_on_resource_response: exiting due to "
        "sched-fluxion-resource.notify failure",
        "broker.debug[0]: rmmod sched-fluxion-qmanager",
        "broker.debug[0]: module sched-fluxion-qmanager exited",
        "broker.debug[0]: rmmod sched-fluxion-resource",
        "broker.debug[0]: module sched-fluxion-resource exited",
    ]
    # qmanager needs the resource module
    result = flux.fails("module", "load", "sched-fluxion-qmanager")
    assert "sched-fluxion-resource is not loaded" in result.stderr
    flux("module", "load", "sched-fluxion-resource")
    flux("module", "load", "sched-fluxion-qmanager")
    assert f"sched-fluxion-qmanager.debug[0]: requeue success (queue=default id={int(flux.out('job', 'id', job))})" \
        in flux.dmesg()
    assert running(flux) == [job]
    # remove qmanager -> reload resource -> load qmanager
    reload_fluxion(flux, [], [])
    assert running(flux) == [job]
    assert flux.submit("-n12", "sleep", "inf") in running(flux)


def test_module_arguments_win_over_the_table_and_params_are_raw(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: hybrid\n"
                                  "  queue-params:\n    max-queue-depth: 1000000\n    queue-depth: 8192\n"
                                  "    foo: 1234\n"
                                  "  policy-params: max-reservation-depth=100000,reservation-depth=64\n"
                                  "sched-fluxion-resource:\n  match-policy: lonodex\n  reserve-vtx-vec: 200000\n"
                                  "  prune-filters: ALL:core,ALL:gpu\n")
    from flux_lite.instance import Instance

    def params(topic):
        with Instance.open(flux.state_dir).session() as broker:
            return broker.rpc(topic, {})["params"]

    assert params("sched-fluxion-qmanager.params") == {
        "queue-policy": "hybrid", "queue-params": "max-queue-depth=1000000,queue-depth=8192,foo=1234",
        "policy-params": "max-reservation-depth=100000,reservation-depth=64",
        "default": {"queue-policy": "hybrid", "queue-params": "max-queue-depth=1000000,queue-depth=8192,foo=1234",
                    "policy-params": "max-reservation-depth=100000,reservation-depth=64"}}
    # an unset option is null (real Fluxion 0.54: tests/data/fluxion/ion-resource-1.txt)
    assert params("sched-fluxion-resource.params") == {
        "load-file": None, "load-format": "rv1exec", "load-allowlist": "node,core,gpu", "policy": "lonodex",
        "match-format": "rv1_nosched", "subsystems": "containment", "reserve-vtx-vec": 200000,
        "prune-filters": "ALL:core,ALL:gpu", "update-interval": 0, "traverser": "simple"}
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]["default"]
    assert (stats["policy"], stats["queue_depth"]) == ("hybrid", 8192)
    flux("module", "reload", "sched-fluxion-qmanager", "queue-policy=easy", "queue-params=queue-depth=5")
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]["default"]
    assert (stats["policy"], stats["queue_depth"], stats["queue_parameters"]) == ("easy", 5, {"queue-depth": "5"})


@pytest.mark.parametrize("table, args, message", [
    ("sched-fluxion-qmanager:\n  bogus: 1\n", [], "Unknown option (bogus)."),
    ("sched-fluxion-qmanager:\n  queues: a b\n", [], "'queues' key not supported, use RFC33 format instead"),
    ("sched-fluxion-qmanager:\n  queue-params: queue-depth=-1\n", [], "queue-depth=-1: Invalid argument"),
    ("sched-fluxion-qmanager:\n  queue-params: queue-depth=0\n", [],
     "queue-depth=0: Numerical result out of range"),
    ("", ["queue-policy-per-queue=nosuch:easy"], "Unknown queue (nosuch)."),
])
def test_qmanager_load_failures(flux_factory, table, args, message):
    flux = flux_factory("--test-size=1", "--test-cores=4", config=table)
    flux("module", "remove", "sched-simple")
    flux("module", "load", "sched-fluxion-resource")
    result = flux.fails("module", "load", "sched-fluxion-qmanager", *args)
    assert result.stderr == f"flux-lite module: ERROR: sched-fluxion-qmanager: {message}\n"
    assert "sched-fluxion-qmanager" not in flux.out("module", "list")


def test_unknown_queue_policy_is_tolerated_as_fluxion_does(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: fifo\n")
    assert "sched-fluxion-qmanager.debug[0]: process_config_file: Unknown queuing policy (fifo)! Using default." \
        in flux.dmesg()
    assert json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]["default"]["policy"] \
        == "fcfs"


@pytest.mark.parametrize("args, message", [
    (["policy=bogus"], "Unknown match policy (bogus)! "),
    (["match-policy=locality"], "match policy (locality) is not supported by flux-lite"),
    (["traverser=fancy"], "Unknown traverser policy (fancy)! "),
    (["nosuch=1"], "Unknown option (nosuch)."),
])
def test_resource_load_failures(flux_factory, args, message):
    flux = flux_factory("--test-size=1", "--test-cores=4")
    flux("module", "remove", "sched-simple")
    result = flux.fails("module", "load", "sched-fluxion-resource", *args)
    assert result.stderr == f"flux-lite module: ERROR: {message}\n"


def test_resource_module_cannot_load_beside_another_scheduler(flux):
    result = flux.fails("module", "load", "sched-fluxion-resource")
    assert "resource.acquire is held by sched-simple" in result.stderr


# -- what the admin sees -------------------------------------------------------------------------


def test_R_has_integer_times_and_no_forecast_keys(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    a = flux.submit("-n16", "-t", "10.5s", "sleep", "inf")
    b = flux.submit("-n16", "-t", "60s", "sleep", "inf")
    R = json.loads(flux.out("job", "info", a, "R"))
    now = int(flux.now())
    assert (R["execution"]["starttime"], R["execution"]["expiration"]) == (now, now + 11)
    assert '"starttime": %d,' % now in flux.out("job", "info", a, "R")
    assert annotations(flux, b) == {"sched": {"t_estimate": float(now + 11), "selection_type": "reserved"}}
    assert flux.out("jobs", "-n", "-o", "{contextual_info}", b).strip() == "eta:11s"
    assert '"selection_type":"immediate"' in flux.out("job", "eventlog", a)
    flux.advance("11s")
    assert flux.state(b) == "RUN"
    assert 'alloc annotations={"sched":{"selection_type":"reserved"}}' in flux.out("job", "eventlog", b)
    assert annotations(flux, b) == {"sched": {"selection_type": "reserved"}}


def test_sched_expiration_is_enosys_the_plan_keeps_the_old_end(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    a = flux.submit("-n16", "-t", "100s", "sleep", "inf")
    b = flux.submit("-n16", "-t", "60s", "sleep", "inf")
    flux("update", a, "duration=200s")
    # the job's end moved (the job manager proceeds on ENOSYS), the reservation did not
    assert annotations(flux, b)["sched"]["t_estimate"] == float(int(flux.now()) + 100)
    # past the old end the graph holds nothing for the job: the next loop
    # starts b on the same cores (Fluxion double-books; the log says so)
    flux.advance("150s")
    flux.submit("-n1", "-t", "10s", "sleep", "inf")
    assert (flux.state(a), flux.state(b)) == ("RUN", "RUN")
    assert any(line.startswith(f"sched-fluxion-qmanager.err[0]: alloc: {b}: resources still held by a job")
               for line in flux.dmesg())


def test_unsatisfiable_is_denied_with_fluxions_note(flux_factory):
    flux = one_node(flux_factory)
    job = flux.submit("-n17", "sleep", "1")
    assert flux.state(job) == "INACTIVE"
    assert '1767225600.000000 exception type="alloc" severity=0 ' \
           'note="alloc denied due to type=\\"unsatisfiable\\"" userid=0' in flux.out("job", "eventlog", job)
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]["default"]
    assert stats["action_counts"]["rejected"] == 1
    assert stats["scheduled_queues"]["rejected"] == [job]


# -- t1003: which jobs run under each queue policy ------------------------------------------------------


def test_t1003_easy_hybrid_conservative(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    ids = submit_all(flux, T1003)
    # EASY: job 2 reserved at 1h; 6 and 11 backfill (8+6+2 = 16 cores)
    assert set(running(flux)) == {ids[0], ids[5], ids[10]}
    assert [sel(flux, ids[i]) for i in (0, 1, 5, 10)] == ["immediate", "reserved", "backfill", "backfill"]
    flux("cancel", ids[5])
    # 7 and 9 fill the six cores job 6 left
    assert set(running(flux)) == {ids[0], ids[10], ids[6], ids[8]}
    assert len(active(flux)) == 10
    flux("cancel", *active(flux))

    reload_fluxion(flux, ["prune-filters=ALL:core", "subsystems=containment", "policy=low"],
                   ["queue-policy=hybrid", "policy-params=reservation-depth=3"])
    ids = submit_all(flux, T1003)
    # HYBRID depth 3: jobs 2, 3, 4 reserved; only 7 and 11 fit beside them
    assert set(running(flux)) == {ids[0], ids[6], ids[10]}
    assert [sel(flux, ids[i]) for i in (1, 2, 3, 4)] == ["reserved", "reserved", "reserved", ""]
    flux("cancel", ids[6])
    assert set(running(flux)) == {ids[0], ids[10], ids[8]}
    assert len(active(flux)) == 10
    flux("cancel", *active(flux))

    reload_fluxion(flux, ["prune-filters=ALL:core", "subsystems=containment", "policy=high"],
                   ["queue-policy=conservative"])
    order = [0, 1, 2, 4, 3, 5, 6, 7, 8, 9, 10]  # t1003 submits C16 before C14 here
    ids = submit_all(flux, [T1003[i] for i in order])
    assert set(running(flux)) == {ids[0], ids[6], ids[10]}
    assert all(sel(flux, ids[i]) == "reserved" for i in (1, 2, 3, 4, 5, 7, 8, 9))
    flux("cancel", ids[6])
    # conservative: every job holds a reservation, nothing else fits
    assert set(running(flux)) == {ids[0], ids[10]}
    assert len(active(flux)) == 10


# -- t1004: queue-depth=5 ---------------------------------------------------------------------------------


def test_t1004_easy_queue_depth_5(flux_factory):
    flux = one_node(flux_factory)
    reload_fluxion(flux, ["policy=low"], ["queue-policy=easy", "queue-params=queue-depth=5"])
    ids = submit_all(flux, T1003)
    # a loop looks at five pending jobs: 2 is reserved, 3-5 cannot start,
    # 6 backfills; 7.. are beyond the depth while 2-6 are ahead of them
    assert set(running(flux)) == {ids[0], ids[5]}
    flux("cancel", ids[5])
    assert set(running(flux)) == {ids[0], ids[6]}
    flux("cancel", ids[6])
    assert set(running(flux)) == {ids[0], ids[7], ids[8]}
    assert len(active(flux)) == 9
    assert [sel(flux, ids[i]) for i in (0, 5, 6, 7)] == ["immediate", "backfill", "backfill", "backfill"]
    assert sel(flux, ids[1]) == "reserved"
    flux("cancel", ids[0])
    assert flux.state(ids[1]) == "RUN"
    assert sel(flux, ids[1]) == "reserved"


def test_t1004_lost_reservation_clears_both_keys_then_immediate(flux_factory):
    flux = one_node(flux_factory)
    reload_fluxion(flux, ["policy=low"], ["queue-policy=easy", "queue-params=queue-depth=5"])
    squat = flux.submit("-n10", "-t", "60m", "sleep", "inf")
    resv = flux.submit("-n8", "-t", "60m", "sleep", "inf")
    assert sel(flux, resv) == "reserved"
    hi = flux.submit("--urgency=20", "-n8", "-t", "60m", "sleep", "inf")
    assert sel(flux, hi) == "reserved"
    assert annotations(flux, resv) == {}
    flux("cancel", squat)
    assert (flux.state(resv), sel(flux, resv), sel(flux, hi)) == ("RUN", "immediate", "reserved")


def test_t1004_hybrid_queue_depth_5(flux_factory):
    flux = one_node(flux_factory)
    reload_fluxion(flux, ["policy=low"], ["queue-policy=hybrid", "queue-params=queue-depth=5",
                                          "policy-params=reservation-depth=3"])
    ids = submit_all(flux, T1003)
    assert running(flux) == [ids[0]]
    assert sel(flux, ids[0]) == "immediate"
    flux("cancel", ids[0])
    assert flux.state(ids[1]) == "RUN"
    assert sel(flux, ids[1]) == "reserved"


# -- t1014: which pending jobs carry t_estimate ----------------------------------------------------------------


@pytest.mark.parametrize("qmanager_args, estimated, small_runs", [
    (["queue-policy=easy"], [1], True),
    (["queue-policy=hybrid", "policy-params=reservation-depth=2"], [1, 2], True),
    (["queue-policy=conservative"], [1, 2, 3], True),
    ([], [], False),  # fcfs: no reservation, the small job waits behind the blocked one
])
def test_t1014_which_jobs_carry_t_estimate(flux_factory, qmanager_args, estimated, small_runs):
    flux = one_node(flux_factory)
    reload_fluxion(flux, ["prune-filters=ALL:core", "policy=low"], qmanager_args)
    ids = [flux.submit("-n", str(n), "-t", t, "sleep", "inf")
           for n, t in ((8, "360s"), (16, "360s"), (16, "360s"), (16, "360s"), (2, "180s"))]
    now = int(flux.now())
    assert flux.state(ids[4]) == ("RUN" if small_runs else "SCHED")
    have = [i for i, jobid in enumerate(ids) if "t_estimate" in annotations(flux, jobid).get("sched", {})]
    assert have == estimated
    # each reserved 16-core job starts when the one ahead of it ends
    for k, i in enumerate(estimated):
        assert annotations(flux, ids[i])["sched"] == {"t_estimate": float(now + 360 * (k + 1)),
                                                      "selection_type": "reserved"}
    # flux jobs shows eta: for the reserved jobs, nothing for the other pending ones
    pending = [jobid for jobid in ids if flux.state(jobid) == "SCHED"]
    shown = flux.out("jobs", "-n", "-o", "{id.f58} {contextual_info}", *pending).split("\n")
    expected = {ids[i]: f"eta:{6 * (k + 1)}m" for k, i in enumerate(estimated)}
    assert sorted(line.strip() for line in shown if line.strip()) == \
        sorted(f"{jobid} {expected.get(jobid, '')}".strip() for jobid in pending)


# -- t1021: hinodex/lonodex by hostname number --------------------------------------------------------------


@pytest.mark.parametrize("policy, expected", [("hinodex", ["2", "0", "1,3"]), ("lonodex", ["3", "1", "0,2"])])
def test_t1021_nodex_by_hostname_suffix(flux_factory, policy, expected):
    flux = flux_factory(config=FLUXION + "resource:\n  config:\n    - hosts: sierra[3682,3179,3683,3178]\n"
                                         "      cores: 44\n      gpus: 4\n"
                                         f"sched-fluxion-resource:\n  match-policy: {policy}\n")
    jobs = [flux.submit("-n1", "sleep", "inf"), flux.submit("-n1", "sleep", "inf"),
            flux.submit("-N2", "-n2", "sleep", "inf")]
    got = []
    for job in jobs:
        R = json.loads(flux.out("job", "info", job, "R"))
        entries = R["execution"]["R_lite"]
        assert [e["children"] for e in entries] == [{"core": "0-43", "gpu": "0-3"}]
        got.append(entries[0]["rank"])
    assert got == expected
    assert flux.out("resource", "list", "-s", "free", "-no", "{nnodes}").strip() == "0"


# -- reload, hello, partial release (t1007, t1025, t1026) ----------------------------------------------------------


def test_qmanager_reload_keeps_running_and_pending_jobs(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    a = flux.submit("-n16", "-t", "100s", "sleep", "inf")
    b = flux.submit("-n16", "-t", "100s", "sleep", "inf")
    flux("module", "reload", "sched-fluxion-qmanager")
    jobid = int(flux.out("job", "id", a))
    assert f"sched-fluxion-qmanager.debug[0]: requeue success (queue=default id={jobid})" in flux.dmesg()
    assert (flux.state(a), flux.state(b)) == ("RUN", "SCHED")
    assert annotations(flux, b)["sched"]["selection_type"] == "reserved"
    flux.advance("100s")
    assert flux.state(b) == "RUN"


def test_t1025_a_running_job_whose_queue_is_gone_is_killed(flux_factory, tmp_path):
    flux = flux_factory("--test-size=1", "--test-cores=4",
                        config=FLUXION + "queues:\n  testqueue: {}\n")
    flux("queue", "start", "--all")
    job = flux.submit("-q", "testqueue", "-n1", "sleep", "inf")
    assert flux.state(job) == "RUN"
    conf = tmp_path / "new.yaml"
    conf.write_text(FLUXION)
    flux("config", "load", str(conf))
    flux("module", "reload", "sched-fluxion-qmanager")
    log = flux.dmesg()
    jobid = int(flux.out("job", "id", job))
    assert f"sched-fluxion-qmanager.err[0]: jobmanager_hello_cb: unknown queue name (id={jobid} queue=testqueue)" \
        in log
    assert f"sched-fluxion-qmanager.info[0]: raising fatal exception on running job id={job}" in log
    events = flux.events(job)
    exc = [e for e in events if e["name"] == "exception"]
    assert exc[0]["context"] == {"type": "scheduler-restart", "severity": 0,
                                 "note": "failed to reallocate R for running job", "userid": 0}


def test_t1026_housekeeping_allocation_survives_a_reload_of_both_modules(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=4",
                        config=FLUXION + "job-manager:\n  housekeeping:\n    command: [sleep, '100']\n"
                                         "    release-after: 0s\n    rank-durations:\n      '0': 5s\n"
                                         "      '1': 100s\n")
    job = flux.submit("-N2", "-n2", "-t", "10s", "true")
    flux.advance("6s")
    # node 0 is back, node 1 still in housekeeping
    assert flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}").strip() == "1"
    flux("module", "remove", "sched-fluxion-qmanager")
    flux("module", "reload", "sched-fluxion-resource")
    flux("module", "load", "sched-fluxion-qmanager")
    assert flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}").strip() == "1"
    big = flux.submit("-N2", "-n8", "sleep", "inf")
    assert flux.state(big) == "SCHED"
    flux("housekeeping", "kill", "--all")
    # the node is back: the waiting job takes both
    assert flux.out("resource", "list", "-s", "allocated", "-no", "{nnodes}").strip() == "2"
    assert flux.state(big) == "RUN"
    assert flux.state(job) == "INACTIVE"


# -- completion ---------------------------------------------------------------------------------------------


def test_completion_knows_fluxions_modules_arguments_and_policy(flux):
    from test_completion import values

    mods = values(["flux-lite", "module", "load", "sched-fluxion-"], flux.state_dir)
    assert sorted(mods) == ["sched-fluxion-feasibility", "sched-fluxion-qmanager", "sched-fluxion-resource"]
    assert values(["flux-lite", "module", "load", "sched-fluxion-resource", "match-policy=hi"],
                  flux.state_dir) == ["match-policy=high", "match-policy=hinode", "match-policy=hinodex"]
    assert values(["flux-lite", "module", "load", "sched-fluxion-qmanager", "queue-policy=c"],
                  flux.state_dir) == ["queue-policy=conservative"]
    assert "fluxion" in values(["flux-lite", "sched", "reload", "--policy", ""], flux.state_dir)


# -- queues: RFC 33 parents, per-queue policies, pending order ------------------------------------------------


def test_t1033_a_virtual_queue_is_scheduled_in_its_parent(flux_factory):
    flux = flux_factory("--test-size=1", "--test-cores=4",
                        config=FLUXION + "queues:\n  batch: {}\n  vq:\n    parent: batch\n"
                                         "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    flux("queue", "start", "--all")
    a = flux.submit("-q", "batch", "-n4", "-t", "100s", "sleep", "inf")
    b = flux.submit("-q", "vq", "-n4", "-t", "100s", "sleep", "inf")
    c = flux.submit("-q", "batch", "-n4", "-t", "100s", "sleep", "inf")
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]
    assert list(stats) == ["batch"]
    assert stats["batch"]["scheduled_queues"]["running"] == [a]
    assert stats["batch"]["pending_queues"]["pending"] == [b, c]
    assert sel(flux, b) == "reserved" and sel(flux, c) == ""


def test_per_queue_policies(flux_factory):
    flux = flux_factory("--test-size=1", "--test-cores=4",
                        config=FLUXION + "queues:\n  batch: {}\n  debug: {}\n"
                                         "sched-fluxion-qmanager:\n  queue-policy: easy\n"
                                         "  queue-policy-per-queue: 'debug:fcfs'\n"
                                         "  queue-params-per-queue: 'debug:queue-depth=4'\n")
    stats = json.loads(flux.out("module", "stats", "sched-fluxion-qmanager"))["queues"]
    assert {name: (q["policy"], q["queue_depth"]) for name, q in stats.items()} == \
        {"batch": ("easy", 32), "debug": ("fcfs", 4)}


def test_pending_order_is_priority_then_submit_time(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    flux.submit("-n16", "-t", "100s", "sleep", "inf")
    low = flux.submit("-n16", "-t", "100s", "sleep", "inf")
    high = flux.submit("--urgency=20", "-n16", "-t", "100s", "sleep", "inf")
    # the urgent job takes the one reservation, the other loses it (both keys cleared)
    assert sel(flux, high) == "reserved" and annotations(flux, low) == {}
    flux.advance("100s")
    assert (flux.state(high), flux.state(low)) == ("RUN", "SCHED")
    assert sel(flux, low) == "reserved"


# -- replay ------------------------------------------------------------------------------------------------------


def test_replay_under_fluxion(flux):
    from pathlib import Path

    trace = str(Path(__file__).parent / "data" / "kth-sp2-first400.swf")
    native = json.loads(flux.out("replay", "--json", "--policy=fcfs", trace))
    fcfs = json.loads(flux.out("replay", "--json", "--scheduler=fluxion", "--policy=fcfs", trace))
    # one core per node: Fluxion's strict order is flux-lite's fcfs, job for job
    assert fcfs["policy"] == "fluxion-fcfs/first"
    assert fcfs["wait_mean"] == native["wait_mean"] == 9634.36
    easy = json.loads(flux.out("replay", "--json", "--scheduler=fluxion", "--policy=easy",
                               "--match-policy=lonodex", trace))
    assert (easy["policy"], easy["wait_mean"], easy["results"]) == \
        ("fluxion-easy/lonodex", 2790.72, {"COMPLETED": 394, "TIMEOUT": 6})
    r = flux.fails("replay", "--match-policy=low", trace, code=2)
    assert "--match-policy needs --scheduler=fluxion" in r.stderr
    r = flux.fails("replay", "--scheduler=fluxion", "--policy=fifo", trace, code=2)
    assert "Fluxion's queue policies are fcfs, easy, hybrid, conservative, not fifo" in r.stderr


def test_t1007_info_after_reloading_either_or_both_modules(flux_factory):
    """Running jobs are ALLOCATED in the graph after every reload, pending
    ones (fcfs: never reserved) unknown to it."""
    from errno import ENOENT

    from flux_lite.errors import FluxLiteError
    from flux_lite.instance import Instance

    flux = one_node(flux_factory)
    run = flux.submit("-n16", "sleep", "inf")
    pend = flux.submit("-n16", "sleep", "inf")

    def info(job):
        jobid = int(flux.out("job", "id", job))
        with Instance.open(flux.state_dir).session() as broker:
            try:
                return broker.rpc("sched-fluxion-resource.info", {"jobid": jobid})["status"]
            except FluxLiteError as exc:
                assert exc.errno == ENOENT
                return "ENOENT"

    for reload in (["module", "reload", "sched-fluxion-qmanager"],
                   ["module", "reload", "sched-fluxion-resource"]):
        flux(*reload)
        if reload[-1] == "sched-fluxion-resource":  # its removal stopped qmanager
            flux("module", "load", "sched-fluxion-qmanager")
        assert (info(run), info(pend)) == ("ALLOCATED", "ENOENT")
    assert (flux.state(run), flux.state(pend)) == ("RUN", "SCHED")


def test_instance_expiration_ends_the_graph(flux_factory):
    flux = flux_factory("--test-size=1", "--test-cores=4", config=FLUXION + "instance:\n  expiration: 3m\n")
    t0 = int(flux.now())
    a = flux.submit("-n1", "sleep", "inf")
    # no duration: the rest of the graph's span, which ends with the instance
    assert json.loads(flux.out("job", "info", a, "R"))["execution"]["expiration"] == t0 + 180
    flux("config", "load", input="sched:\n  policy: fluxion\ninstance:\n  expiration: 8m\n")
    assert f"sched-fluxion-resource.info[0]: resource expiration updated to {t0 + 480:.2f}" in flux.dmesg()
    b = flux.submit("-n1", "sleep", "inf")
    assert json.loads(flux.out("job", "info", b, "R"))["execution"]["expiration"] == t0 + 480


def test_t1011_drained_nodes_make_a_request_unsatisfiable(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=4", config=FLUXION)
    running_job = flux.submit("-N1", "-n4", "sleep", "inf")
    flux("resource", "drain", "1")
    assert "sched-fluxion-resource.debug[0]: resource status changed (rankset=[1] status=DOWN)" in flux.dmesg()
    # with rank 1 down the graph can never give two nodes: denied, not kept waiting
    job = flux.submit("-N2", "-n2", "sleep", "inf")
    assert flux.state(job) == "INACTIVE"
    assert 'note="alloc denied due to type=\\"unsatisfiable\\""' in flux.out("job", "eventlog", job)
    flux("resource", "undrain", "1")
    assert flux.dmesg()[-1] == "sched-fluxion-resource.debug[0]: resource status changed (rankset=[1] status=UP)"
    assert flux.state(flux.submit("-N1", "-n4", "sleep", "inf")) == "RUN"
    assert flux.state(running_job) == "RUN"


def test_resource_module_requests(flux_factory):
    """sched-fluxion-resource.* as a command reaches them (the graph's API underneath)."""
    from flux_lite.instance import Instance

    flux = flux_factory("--test-size=2", "--test-cores=2", config=FLUXION)
    job = flux.submit("-N1", "-n2", "sleep", "inf")
    flux("resource", "drain", "0")
    with Instance.open(flux.state_dir).session() as broker:
        status = broker.rpc("sched-fluxion-resource.status", {})
        assert [e["rank"] for e in status["all"]["execution"]["R_lite"]] == ["0-1"]
        assert [e["rank"] for e in status["down"]["execution"]["R_lite"]] == ["0"]
        assert [e["rank"] for e in status["allocated"]["execution"]["R_lite"]] == ["1"]
        broker.rpc("sched-fluxion-resource.set_property",
                   {"sp_resource_path": "/cluster0/node1", "sp_keyval": "perf_class=2"})
    with Instance.open(flux.state_dir).session() as broker:  # kept between commands
        assert broker.rpc("sched-fluxion-resource.get_property",
                          {"gp_resource_path": "/cluster0/node1", "gp_key": "perf_class"}) == {"values": ["2"]}
        jobid = int(flux.out("job", "id", job))
        assert broker.rpc("sched-fluxion-resource.info", {"jobid": jobid})["status"] == "ALLOCATED"


def test_tables_are_read_at_load_only(flux_factory):
    flux = one_node(flux_factory, "sched-fluxion-qmanager:\n  queue-policy: easy\n")
    flux("config", "load", input="sched:\n  policy: fluxion\nsched-fluxion-qmanager:\n  queue-policy: hybrid\n")
    policy = "sched-fluxion-qmanager -p queues.default.policy".split()
    assert flux.out("module", "stats", *policy[1:], policy[0]).strip() == '"easy"'
    flux("module", "reload", "sched-fluxion-qmanager")
    assert flux.out("module", "stats", *policy[1:], policy[0]).strip() == '"hybrid"'
