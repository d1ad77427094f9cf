"""CLI tests of `resource list|status|drain|undrain` and their interplay with
sched-simple (formats as Flux 0.88 prints them).
"""


import pytest

GUEST = {"FLUX_HANDLE_USERID": "1234"}

LIST_HEADER = "     STATE NNODES NCORES NGPUS NODELIST"


def rl(flux, state, fmt):
    return flux.out("resource", "list", "-s", state, "-no", fmt).strip()


def alloc_summary(flux, jobid):
    for e in flux.events(jobid):
        if e["name"] == "alloc":
            return e["context"]["annotations"]["sched"]["resource_summary"]
    return None


def err(r):
    return r.stderr.strip()


# ----------------------------------------------------------------- formats


def test_resource_list_default_format(flux):
    # as Flux 0.88 prints it (hosts there were vm,vm,vm,vm; here node[0-3])
    assert flux.out("resource", "list").splitlines() == [
        LIST_HEADER,
        "      free      4      8     0 node[0-3]",
        " allocated      0      0     0 ",
        "      down      0      0     0 ",
    ]
    flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    assert flux.out("resource", "list").splitlines() == [
        LIST_HEADER,
        "      free      3      6     0 node[1-3]",
        " allocated      1      2     0 node0",
        "      down      0      0     0 ",
    ]
    flux.advance("60s")
    assert flux.out("resource", "list").splitlines()[1] == "      free      4      8     0 node[0-3]"


def test_resource_status_default_format(flux):
    # as Flux 0.88 prints it
    assert flux.out("resource", "status").splitlines() == [
        "       STATEUP NNODES NODELIST",
        "       avail \u2714      4 node[0-3]",
    ]


def test_resource_status_keeps_reasons_apart_that_an_expanded_column_truncates(flux):
    # as Flux's Deduplicator: a +: field is compared whole (t2354-resource-status)
    flux("resource", "drain", "-f", "0-3", "xxxxxxxx")
    flux("resource", "drain", "-f", "0", "xxxxxxxxyy")
    expanded = flux.out("resource", "status", "-no", "{state:>12} {ranks:>6} +:{reason:<5.5+}")
    assert expanded == flux.out("resource", "status", "-no", "{state:>12} {ranks:>6} {reason:<10}") == (
        "     drained      0 xxxxxxxxyy\n     drained    1-3 xxxxxxxx  \n")
    # a plain truncated field still combines what it prints alike
    truncated = flux.out("resource", "status", "-no", "{state:>12} {ranks:>6} {reason:<5.5+}")
    assert truncated == "     drained    0-3 xxxx+\n"


def test_resource_list_fields_and_states(flux):
    assert rl(flux, "all", "{nnodes} {ncores} {ngpus} {ranks} {nodelist} {rlist}") == \
        "4 8 0 0-3 node[0-3] rank[0-3]/core[0-1]"
    assert rl(flux, "up", "{rlist}") == "rank[0-3]/core[0-1]"
    assert rl(flux, "down", "{nnodes} {ncores}") == "0 0"
    assert rl(flux, "allocated", "{rlist}") == ""
    out = flux.out("resource", "list", "-s", "up,down", "-no", "{state} {ncores}").splitlines()
    assert out == ["up 8", "down 0"]
    r = flux.fails("resource", "list", "-s", "bogus")
    assert "bogus" in r.stderr


def test_resource_list_gpus(flux_factory):
    flux = flux_factory("--test-size=2", "--test-cores=4", "--test-gpus=2")
    assert rl(flux, "free", "{nnodes} {ncores} {ngpus} {rlist}") == "2 8 4 rank[0-1]/core[0-3],gpu[0-1]"
    jobid = flux.submit("-n1", "-g1", "sleep", "inf")
    assert "gpu" in alloc_summary(flux, jobid)
    assert rl(flux, "allocated", "{ncores} {ngpus}") == "1 1"


def test_from_sched_agrees_with_job_manager(flux):
    flux.submit("-N2", "sleep", "inf")
    flux.submit("-n3", "sleep", "inf")
    for state in ("free", "allocated", "down"):
        assert rl(flux, state, "{rlist}") == \
            flux.out("resource", "list", "--from-sched", "-s", state, "-no", "{rlist}").strip()


# ------------------------------------------------------------- drain interplay


@pytest.fixture
def flux24(flux_factory):
    return flux_factory("--test-size=2", "--test-cores=4")


def test_drain_interplay(flux24):
    f = flux24
    assert any("ready:" in line and line.endswith("rank[0-1]/core[0-3]") for line in f.dmesg())
    assert rl(f, "free", "{rlist}") == "rank[0-1]/core[0-3]"
    assert rl(f, "up", "{nnodes} {ncores}") == "2 8"
    assert rl(f, "down", "{nnodes}") == "0"
    f("resource", "drain", "0")
    assert rl(f, "up", "{rlist}") == "rank1/core[0-3]"
    assert rl(f, "down", "{rlist}") == "rank0/core[0-3]"
    first = f.submit("-n1", "sleep", "inf")
    assert alloc_summary(f, first) == "rank1/core0"
    assert rl(f, "free", "{rlist}") == "rank1/core[1-3]"
    # allocated+down still counts as allocated
    f("resource", "drain", "1")
    assert rl(f, "down", "{rlist}") == "rank[0-1]/core[0-3]"
    assert rl(f, "up", "{ncores}") == "0"
    assert rl(f, "allocated", "{rlist}") == "rank1/core0"
    assert f.state(first) == "RUN"
    second = f.submit("-n1", "sleep", "inf")
    r = f.fails("job", "wait-event", "-t", "0.25", second, "alloc")
    assert err(r).endswith("wait-event timeout on event 'alloc'")
    f("resource", "undrain", "0")
    assert alloc_summary(f, second) == "rank0/core0"
    assert rl(f, "allocated", "{rlist} {nnodes} {ncores}") == "rank[0-1]/core0 2 2"


def test_drained_ranks_are_never_chosen(flux24):
    f = flux24
    f("resource", "drain", "0", "maintenance")
    a = f.submit("-n4", "sleep", "inf")
    b = f.submit("-n1", "sleep", "inf")
    assert alloc_summary(f, a) == "rank1/core[0-3]"
    assert f.state(b) == "SCHED"
    f("resource", "undrain", "0")
    assert alloc_summary(f, b).startswith("rank0/")


def test_drain_status_listing_and_errors(flux24):
    f = flux24
    f.submit("-n1", "sleep", "inf")  # rank0/core0
    f("resource", "drain", "node1", "bad", "dimm")  # hostnames are targets too
    assert f.out("resource", "status", "-no", "{state} {nnodes} {nodelist} {reason}").splitlines() == [
        "avail 1 node0 ", "drained 1 node1 bad dimm"]
    f("resource", "drain", "0")
    assert f.out("resource", "status", "-s", "draining", "-no", "{state} {ranks}").strip() == "draining 0"
    drained = f.out("resource", "drain").splitlines()
    assert len(drained) == 3 and "bad dimm" in drained[2]
    r = f.fails("resource", "drain", "7")
    r = f.fails("resource", "drain", "nosuchhost")
    f("resource", "undrain", "0-1")
    r = f.fails("resource", "undrain", "1")
    assert "not drained" in r.stderr
    assert rl(f, "down", "{nnodes}") == "0"


def test_drain_already_drained_needs_force(flux):
    flux("resource", "drain", "1", "first")
    r = flux.fails("resource", "drain", "1", "second")
    assert "rank 1 already drained" in r.stderr
    r = flux.fails("resource", "drain", "1-2", "third")
    assert "rank 1 already drained" in r.stderr
    assert flux.out("resource", "status", "-s", "drained", "-no", "{ranks} {reason}").strip() == "1 first"
    flux("resource", "drain", "-f", "1", "forced")
    assert flux.out("resource", "status", "-s", "drained", "-no", "{ranks} {reason}").strip() == "1 forced"
    flux("resource", "drain", "3")             # no reason yet:
    flux("resource", "drain", "3", "reason")   # adding one is allowed


def test_drain_listing_shows_draining(flux24):
    f = flux24
    f.submit("-n1", "sleep", "inf")  # rank0
    f("resource", "drain", "0", "busy")
    row = f.out("resource", "drain").splitlines()[1]
    assert "draining" in row.split()


def test_drain_requires_owner(flux24):
    r = flux24.fails("resource", "drain", "0", env=GUEST)
    assert "not permitted" in r.stderr.lower()
    flux24("resource", "drain", "0")
    r = flux24.fails("resource", "undrain", "0", env=GUEST)
    assert rl(flux24, "down", "{ranks}") == "0"


def test_drain_survives_scheduler_reload(flux24):
    f = flux24
    f("resource", "drain", "1")
    f("module", "reload", "sched-simple")
    assert rl(f, "down", "{rlist}") == "rank1/core[0-3]"
    jobs = [f.submit("-n1", "sleep", "inf") for _ in range(5)]
    assert {alloc_summary(f, j).split("/")[0] for j in jobs[:4]} == {"rank0"}
    assert f.state(jobs[4]) == "SCHED"


# ------------------------------------------- reload with a drained allocation


def test_reload_with_drained_allocation_then_cancel(flux_factory):
    f = flux_factory("--test-size=1", "--test-cores=2")
    ncores = rl(f, "up", "{ncores}")
    assert ncores == "2"
    first, second = f.out("submit", "--cc=0-1", "-n", ncores, "sleep", "600").split()
    assert f.state(first) == "RUN" and f.state(second) == "SCHED"
    f("resource", "drain", "0")
    f("module", "reload", "sched-simple")
    f("resource", "undrain", "0")
    assert rl(f, "up", "{ncores}") == ncores
    assert f.state(first) == "RUN" and f.state(second) == "SCHED"
    f("cancel", first)
    assert f.out("job", "wait-event", "-t", "100", first, "clean").endswith(" clean\n")
    assert f.out("job", "wait-event", "-t", "100", second, "start").endswith(" start\n")
    assert alloc_summary(f, second) == "rank0/core[0-1]"
    f("cancel", second)
    f("job", "wait-event", "-t", "100", second, "clean")
    assert rl(f, "free", "{rlist}") == "rank0/core[0-1]"
    f("sched", "check")


def test_reload_while_drained_keeps_cores_down_until_undrain(flux_factory):
    f = flux_factory("--test-size=1", "--test-cores=2")
    job = f.submit("-n2", "sleep", "inf")
    f("resource", "drain", "0")
    f("module", "reload", "sched-simple")
    assert rl(f, "allocated", "{rlist}") == "rank0/core[0-1]"
    assert rl(f, "up", "{ncores}") == "0"
    f("cancel", job)
    assert rl(f, "allocated", "{ncores}") == "0"
    assert rl(f, "free", "{ncores}") == "0"  # drained: not free
    waiting = f.submit("-n1", "sleep", "inf")
    assert f.state(waiting) == "SCHED"
    f("resource", "undrain", "0")
    assert f.state(waiting) == "RUN"
