"""Named queues (RFC 33) and `flux-lite queue`, checked against Flux 0.88's
recorded behaviour: messages, orders, exit codes."""

import json

import pytest

RUN1 = "--setattr=exec.test.run_duration=1s"
RUN300 = "--setattr=exec.test.run_duration=300s"

PROPS = """
resource:
  config:
    - hosts: "node[0-3]"
      cores: "0-1"
    - hosts: "node[0-1]"
      properties: [debug]
    - hosts: "node[2-3]"
      properties: [batch]
queues:
  debug:
    requires: [debug]
  batch:
    requires: [batch]
"""


# `resource list` of PROPS with every node free
IDLE_DEBUG_BATCH = [
    "     STATE QUEUE NNODES NCORES NGPUS NODELIST",
    "      free debug      2      4     0 node[0-1]",
    "      free batch      2      4     0 node[2-3]",
    " allocated debug      0      0     0 ",
    " allocated batch      0      0     0 ",
    "      down debug      0      0     0 ",
    "      down batch      0      0     0 "]


@pytest.fixture
def fluxq(flux_factory):
    return flux_factory(config=PROPS)


# the EN/ST glyphs as flux queue list prints them, coloured even through a pipe
ON = "\033[01;32m \u2714\033[0;0m"
NO = "\033[01;31m \u2717\033[0;0m"
PAUSED = "\033[01;33m \u23f8\033[0;0m"


def lines(text):
    return text.splitlines()


# -- the anonymous queue ------------------------------------------------------------


def test_anonymous_queue_list_and_status(flux):
    assert lines(flux.out("queue", "list")) == [
        " EN ST TDEFAULT   TLIMIT     NNODES     NCORES      NGPUS",
        f" {ON} {ON}      inf      inf        0-4        0-8        0-0",
    ]
    assert flux.out("queue", "list", "-n") == f" {ON} {ON}      inf      inf        0-4        0-8        0-0\n"
    fmt = "{queue},{queuem},{submission},{scheduling},{enabled},{started},{enabled.ascii},{started.ascii}"
    assert lines(flux.out("queue", "list", "-o", fmt)) == [
        "QUEUE,QUEUE,SUBMIT,SCHED,EN,ST,EN,ST", ",,enabled,started,\u2714,\u2714,y,y"]
    assert flux.out("queue", "status") == "Job submission is enabled\nScheduling is started\n"
    assert lines(flux.out("queue", "status", "-v"))[2:] == [
        "0 alloc requests queued", "0 alloc requests pending to scheduler", "0 running jobs"]


def test_anonymous_queue_unknown_names(flux):
    r = flux.fails("queue", "list", "-q", "batch")
    assert r.stderr == "flux-lite queue: ERROR: No such queue: batch\n"
    assert flux.fails("queue", "status", "batch").stderr.endswith("ERROR: status: 'batch' is not a valid queue\n")
    # stop's errors carry the RPC's name, as Flux's do
    assert flux.fails("queue", "stop", "batch").stderr.endswith("ERROR: start: 'batch' is not a valid queue\n")
    r = flux.fails("queue", "disable", "-m", "no such queue", "batch")
    assert r.stderr.endswith("ERROR: enable: 'batch' is not a valid queue\n")
    assert flux.fails("submit", "-q", "x", "true").stderr.endswith("ERROR: 'x' is not a valid queue\n")
    assert flux.fails("submit", "-q", "default", "true").stderr.endswith("'default' is not a valid queue\n")
    assert flux.out("jobs", "-a", "-n") == ""


def test_stopped_anonymous_queue_keeps_jobs_in_sched(flux):
    assert flux.out("queue", "stop", "-m", "maintenance window") == "Scheduling is stopped: maintenance window\n"
    assert flux.out("queue", "status") == "Job submission is enabled\nScheduling is stopped: maintenance window\n"
    assert lines(flux.out("queue", "list", "-o", "{queue}|{submission}|{scheduling}|{enabled.ascii}|{started.ascii}")) \
        == ["QUEUE|SUBMIT|SCHED|EN|ST", "|enabled|stopped|y|n"]
    jobid = flux.submit(RUN1, "true")
    assert flux.state(jobid) == "SCHED"
    assert flux.eventlog(jobid) == ["submit", "validate", "depend", "priority"]
    assert flux.out("queue", "idle", "-t", "1s") == "1 jobs\n"
    assert flux.fails("queue", "drain", "-t", "0.5s").stderr.endswith("ERROR: drain: timeout\n")
    assert flux.out("queue", "start") == "Scheduling is started\n"
    assert flux.state(jobid) == "RUN"
    assert lines(flux.out("queue", "status", "-v"))[2:] == [
        "0 alloc requests queued", "0 alloc requests pending to scheduler", "1 running jobs"]
    flux("queue", "drain")
    assert flux.state(jobid) == "INACTIVE"
    assert flux.out("queue", "idle", "-t", "10s") == "0 jobs\n"
    assert flux.out("queue", "idle", "--quiet") == ""


def test_idle_timeout_with_running_job(flux):
    flux.submit(RUN300, "true")
    assert flux.fails("queue", "idle", "-t", "0.5s").stderr.endswith("ERROR: idle: timeout\n")
    assert flux.fails("queue", "drain", "--timeout=bad").stderr.endswith(
        "ERROR: invalid Flux standard duration\n")


def test_disable_anonymous_queue(flux):
    assert flux.out("queue", "disable", "-m", "system upgrade") == \
        "Job submission is disabled: system upgrade\n"
    assert flux.out("queue", "list", "-n", "-o", "{enabled.ascii}{started.ascii}") == "ny\n"
    r = flux.fails("submit", RUN1, "true")
    assert r.stderr == "flux-lite submit: ERROR: job submission is disabled: system upgrade\n"
    assert flux.fails("run", RUN1, "true").stderr.endswith("job submission is disabled: system upgrade\n")
    assert flux.out("queue", "disable") == "Job submission is disabled: disabled by administrator\n"
    assert flux.out("queue", "enable") == "Job submission is enabled\n"
    assert flux.out("queue", "enable", "--quiet") == ""
    assert flux.out("queue", "stop", "--quiet") == ""
    assert flux.out("queue", "start", "-v") == (
        "Scheduling is started\n0 alloc requests queued\n0 alloc requests pending to scheduler\n"
        "0 running jobs\n")
    assert flux.out("queue", "stop", "--all") == "Scheduling is stopped\n"
    assert flux.out("queue", "start", "--all") == "Scheduling is started\n"


def test_list_formats(flux):
    assert flux.out("queue", "list", "-o", "help") == (
        "\nConfigured flux-queue output formats:\n\n"
        "  default      Default flux-queue list format string\n"
        "  policy       flux-queue list with policy limits only\n"
        "  nodes        Show queue status plus all/up/allocated/free nodes\n")
    assert lines(flux.out("queue", "list", "-o", "policy"))[1] == \
        f" {ON} {ON}      inf      inf      0-inf      0-inf      0-inf"
    assert lines(flux.out("queue", "list", "-o", "nodes")) == [
        " EN ST  NODES   NODES:UP NODES:DOWN NODES:ALLOC NODES:FREE",
        f" {ON} {ON}      4          4          0           0          4"]
    assert flux.fails("queue", "list", "-o", "{bogus}").stderr.endswith("ERROR: Unknown format field: bogus\n")
    assert flux.out("queue", "list", "-o", "get-config=policy").startswith(
        '[list.formats.policy]\ndescription = "flux-queue list with policy limits only"\nformat = "?:{queuem:<8.8}')
    assert flux.fails("queue", "list", "-o", "get-config=nope").stderr.endswith(
        "ERROR: --format: No such format nope\n")
    # the default, as flux-queue's config reads it from the environment
    assert flux.out("queue", "list", env={"FLUX_QUEUE_LIST_FORMAT_DEFAULT": "{queue}|{scheduling}"}) == \
        "QUEUE|SCHED\n|started\n"
    assert lines(flux.out("queue", "list", env={"FLUX_QUEUE_LIST_FORMAT_DEFAULT": "nodes"}))[0] == \
        " EN ST  NODES   NODES:UP NODES:DOWN NODES:ALLOC NODES:FREE"
    flux.fails("queue", "bogus", code=2)
    flux.fails("queue", code=2)


# -- named queues -----------------------------------------------------------------------


def test_named_queues_begin_stopped(fluxq):
    assert lines(fluxq.out("queue", "list")) == [
        "QUEUE    EN ST TDEFAULT   TLIMIT     NNODES     NCORES      NGPUS",
        f"debug    {ON} {NO}      inf      inf        0-2        0-4        0-0",
        f"batch    {ON} {NO}      inf      inf        0-2        0-4        0-0",
    ]
    # status walks the job manager's hash: batch before debug
    assert fluxq.out("queue", "status") == (
        "batch: Job submission is enabled\nbatch: Scheduling is stopped\n"
        "debug: Job submission is enabled\ndebug: Scheduling is stopped\n")
    assert fluxq.out("queue", "status", "debug") == (
        "debug: Job submission is enabled\ndebug: Scheduling is stopped\n")
    assert fluxq.fails("queue", "status", "nope").stderr.endswith("status: 'nope' is not a valid queue\n")
    assert lines(fluxq.out("queue", "list", "-q", "debug,batch", "-n"))[1].startswith("batch ")
    assert fluxq.fails("queue", "list", "-q", "nope").stderr.endswith("ERROR: No such queue: nope\n")
    fmt = "{queue},{queuem},{submission},{scheduling},{limits.range.nnodes},{resources.all.nnodes}," \
          "{resources.free.ncores}"
    assert lines(fluxq.out("queue", "list", "-o", fmt))[1:] == [
        "debug,debug,enabled,stopped,0-inf,2,4", "batch,batch,enabled,stopped,0-inf,2,4"]


def test_named_queue_submission_errors(fluxq):
    assert fluxq.fails("submit", RUN1, "true").stderr == "flux-lite submit: ERROR: no queue specified\n"
    assert fluxq.fails("run", RUN1, "true").stderr.endswith("ERROR: no queue specified\n")
    for opt in (["-q", "nope"], ["--queue=nope"]):
        assert fluxq.fails("submit", *opt, RUN1, "true").stderr.endswith(
            "ERROR: Invalid queue 'nope' specified\n")


def test_job_of_stopped_queue_waits_then_runs_on_its_nodes(fluxq):
    jobid = fluxq.submit("-q", "debug", RUN300, "true")
    assert fluxq.out("jobs", "-no", "{queue} {state}", jobid) == "debug SCHED\n"
    assert lines(fluxq.out("jobs"))[0].split()[:2] == ["JOBID", "QUEUE"]
    system = json.loads(fluxq.out("job", "info", jobid, "jobspec"))["attributes"]["system"]
    assert system["queue"] == "debug" and system["constraints"] == {"properties": ["debug"]}
    r = fluxq.fails("queue", "start")
    assert r.stderr.endswith("ERROR: Named queues are defined. Specify queues or use --all.\n")
    assert fluxq.fails("queue", "start", "nope").stderr.endswith("ERROR: start: 'nope' is not a valid queue\n")
    assert fluxq.out("queue", "start", "debug") == "debug: Scheduling is started\n"
    assert fluxq.out("jobs", "-no", "{state} {ranks}", jobid) == "RUN 0\n"
    assert fluxq.out("queue", "start", "--all") == "batch: Scheduling is started\ndebug: Scheduling is started\n"
    batch = fluxq.submit("-q", "batch", RUN300, "true")
    assert fluxq.out("jobs", "-no", "{ranks}", batch) == "2\n"
    R = json.loads(fluxq.out("job", "info", batch, "R"))
    assert R["execution"]["properties"] == {"batch": "2"}


def test_stop_cancels_pending_requests_and_start_resends(fluxq):
    fluxq("queue", "start", "--all")
    fluxq.submit("-q", "debug", "-N2", RUN300, "true")
    blocked = fluxq.submit("-q", "debug", "-N2", RUN300, "true")
    assert fluxq.state(blocked) == "SCHED"
    assert lines(fluxq.out("queue", "status", "-v"))[4:] == [
        "0 alloc requests queued", "1 alloc requests pending to scheduler", "1 running jobs"]
    assert fluxq.out("queue", "stop", "--all", "-m", "all stopped") == (
        "batch: Scheduling is stopped: all stopped\ndebug: Scheduling is stopped: all stopped\n")
    assert lines(fluxq.out("queue", "status", "-v"))[4:] == [
        "0 alloc requests queued", "0 alloc requests pending to scheduler", "1 running jobs"]
    fluxq("queue", "start", "--all")
    assert lines(fluxq.out("queue", "status", "-v"))[4:] == [
        "0 alloc requests queued", "1 alloc requests pending to scheduler", "1 running jobs"]


def test_disable_named_queue(fluxq):
    fluxq("queue", "start", "--all")
    assert fluxq.out("queue", "disable", "-m", "debug nodes being replaced", "debug") == \
        "debug: Job submission is disabled: debug nodes being replaced\n"
    assert fluxq.fails("submit", "-q", "debug", RUN1, "true").stderr.endswith(
        "ERROR: job submission to debug is disabled: debug nodes being replaced\n")
    fluxq.submit("-q", "batch", RUN1, "true")
    assert fluxq.fails("queue", "disable").stderr.endswith(
        "ERROR: enable: Use --all to apply this command to all queues\n")
    assert fluxq.out("queue", "disable", "--all") == (
        "batch: Job submission is disabled: disabled by administrator\n"
        "debug: Job submission is disabled: disabled by administrator\n")
    assert fluxq.out("queue", "enable", "--all") == (
        "batch: Job submission is enabled\ndebug: Job submission is enabled\n")
    assert fluxq.out("queue", "disable", "-v", "debug") == (
        "batch: Job submission is enabled\ndebug: Job submission is disabled: disabled by administrator\n")


def test_queue_state_persists_across_sched_reload(fluxq):
    fluxq("queue", "start", "batch")
    fluxq("queue", "stop", "-m", "why not", "batch")
    fluxq("queue", "start", "debug")
    fluxq("sched", "reload", "--policy=easy")
    assert fluxq.out("queue", "status") == (
        "batch: Job submission is enabled\nbatch: Scheduling is stopped: why not\n"
        "debug: Job submission is enabled\ndebug: Scheduling is started\n")
    state = json.loads(fluxq.out("kvs", "get", "job-manager.queue"))
    assert state["version"] == 1
    assert {"name": "batch", "enable": True, "start": False, "stop_reason": "why not"} in state["queue"]


def test_scheduler_offline_reads_as_stopped(fluxq):
    fluxq("queue", "start", "--all")
    fluxq("module", "remove", "sched-simple")
    assert "debug: Scheduling is stopped: Scheduler is offline\n" in fluxq.out("queue", "status")


def test_guest_cannot_stop_a_queue(fluxq):
    import os

    guest = {"FLUX_HANDLE_USERID": str(os.getuid() + 1)}
    r = fluxq.fails("queue", "start", "--all", env=guest)
    assert r.stderr.endswith("ERROR: start: Request requires owner credentials\n")


# -- virtual queues, default queue, limits ---------------------------------------------------


VQ = PROPS + """
  expedite:
    parent: batch
    policy:
      limits:
        duration: 1h
"""


def test_virtual_queue_follows_its_parent(flux_factory):
    flux = flux_factory(config=VQ)
    assert lines(flux.out("queue", "list"))[0] == \
        "QUEUE    PARENT   EN ST TDEFAULT   TLIMIT     NNODES     NCORES      NGPUS"
    assert flux.out("queue", "start", "--all") == (
        "debug: Scheduling is started\nbatch: Scheduling is started\nexpedite: Scheduling is started\n")
    assert flux.out("queue", "stop", "batch") == "batch: Scheduling is stopped\n"
    assert lines(flux.out("queue", "list"))[3] == \
        f"expedite batch    {ON} {PAUSED}      inf       1h        0-2        0-4        0-0"
    assert "expedite: Scheduling is stopped: parent queue 'batch' is stopped\n" in flux.out("queue", "status")
    assert flux.out("queue", "list", "-q", "expedite", "-no", "{scheduling}") == "stopped (parent)\n"
    assert flux.fails("submit", "-q", "expedite", RUN1, "true").stderr.endswith(
        "ERROR: requested duration (unlimited) exceeds policy limit of 1h for queue expedite\n")
    jobid = flux.submit("-q", "expedite", "-t", "30m", RUN1, "true")
    assert flux.state(jobid) == "SCHED"
    flux("queue", "start", "batch")
    assert flux.out("jobs", "-no", "{queue} {ranks}", jobid) == "expedite 2\n"
    flux("job", "wait-event", jobid, "clean")
    # resource list names the queues that own nodes: not the virtual one...
    assert lines(flux.out("resource", "list")) == IDLE_DEBUG_BATCH
    # ...unless asked for it: -q names the queues shown, on their resources
    assert lines(flux.out("resource", "list", "-q", "debug,expedite")) == [
        "     STATE QUEUE    NNODES NCORES NGPUS NODELIST",
        "      free debug         2      4     0 node[0-1]",
        "      free expedite      2      4     0 node[2-3]",
        " allocated debug         0      0     0 ",
        " allocated expedite      0      0     0 ",
        "      down debug         0      0     0 ",
        "      down expedite      0      0     0 "]
    assert flux.out("resource", "info", "-q", "expedite", "-q", "debug") == "4 Nodes, 8 Cores, 0 GPUs\n"


DEFAULT = """
resource:
  config:
    - hosts: "node[0-3]"
      cores: 2
    - hosts: "node[0-1]"
      properties: [debug]
    - hosts: "node[2-3]"
      properties: [batch]
queues:
  debug:
    requires: [debug]
    policy:
      limits:
        duration: 1h
  batch:
    requires: [batch]
policy:
  jobspec:
    defaults:
      system:
        queue: batch
"""


def test_default_queue_and_duration_limit(flux_factory):
    flux = flux_factory(config=DEFAULT)
    assert lines(flux.out("queue", "list"))[1:] == [
        f"debug    {ON} {NO}      inf       1h        0-2        0-4        0-0",
        f"batch*   {ON} {NO}      inf      inf        0-2        0-4        0-0"]
    fmt = "{queuem} {queue} {defaults.timelimit} {limits.timelimit} {defaults.timelimit!F} {limits.timelimit!F}"
    assert lines(flux.out("queue", "list", "-o", fmt))[1:] == [
        "debug debug inf 3600.0 inf 1h", "batch* batch inf inf inf inf"]
    flux("queue", "start", "--all")
    jobid = flux.submit(RUN1, "true")
    system = json.loads(flux.out("job", "info", jobid, "jobspec"))["attributes"]["system"]
    assert list(system)[-2:] == ["queue", "constraints"]
    assert system["queue"] == "batch" and system["constraints"] == {"properties": ["batch"]}
    for args, asked in ((["-t", "2h"], "2h"), ([], "unlimited"), (["-t", "0"], "unlimited")):
        r = flux.fails("submit", "-q", "debug", *args, RUN1, "true")
        assert r.stderr.endswith(f"ERROR: requested duration ({asked}) exceeds policy limit of 1h for queue debug\n")
    flux.submit("-q", "debug", "-t", "1h", RUN1, "true")
    flux.submit("-q", "batch", "-t", "100d", RUN1, "true")


def test_update_queue_with_duration_limit(flux_factory):
    flux = flux_factory(config=DEFAULT)
    held = flux.submit("--urgency=hold", "-t", "3h", RUN1, "true")
    r = flux.fails("update", held, "queue=debug")
    assert r.stderr.endswith("ERROR: requested duration (3h) exceeds policy limit of 1h for queue debug\n")
    flux("update", held, "queue=debug", "duration=30m")
    ev = flux.events(held)[-2:]
    assert ev[0]["name"] == "jobspec-update"
    assert list(ev[0]["context"].items()) == [
        ("attributes.system.queue", "debug"), ("attributes.system.duration", 1800.0),
        ("attributes.system.constraints", {"properties": ["debug"]})]
    assert ev[1] == {"timestamp": ev[0]["timestamp"], "name": "priority", "context": {"priority": 0}}


def test_update_queue_errors_and_events(fluxq):
    fluxq("queue", "start", "--all")
    held = fluxq.submit("-q", "debug", "--urgency=hold", RUN1, "true")
    fluxq("update", held, "queue=batch")
    assert fluxq.fails("update", held, "queue=batch").stderr.endswith(
        "ERROR: job queue is already set to batch\n")
    assert fluxq.fails("update", held, "queue=nope").stderr.endswith("ERROR: 'nope' is not a valid queue\n")
    fluxq("update", held, "queue=debug")
    assert fluxq.out("update", "--dry-run", held, "queue=debug") == '{"attributes.system.queue": "debug"}\n'
    updates = [e["context"] for e in fluxq.events(held) if e["name"] == "jobspec-update"]
    assert updates == [
        {"attributes.system.queue": "batch", "attributes.system.constraints": {"properties": ["batch"]}},
        {"attributes.system.queue": "debug", "attributes.system.constraints": {"properties": ["debug"]}}]
    assert fluxq.eventlog(held)[-4:] == ["jobspec-update", "priority", "jobspec-update", "priority"]
    running = fluxq.submit("-q", "debug", RUN300, "true")
    assert fluxq.fails("update", running, "queue=batch").stderr.endswith(
        "ERROR: update of queue for running job not supported\n")
    fluxq("queue", "disable", "-m", "x", "batch")
    assert fluxq.fails("update", held, "queue=batch").stderr.endswith("ERROR: queue batch is currently disabled\n")


def test_update_queue_of_job_with_extra_constraints_names_current_queue(fluxq):
    held = fluxq.submit("-q", "batch", "--urgency=hold", "--setattr=system.constraints.ranks=[\"2\"]",
                        RUN1, "true")
    r = fluxq.fails("update", held, "queue=debug")
    assert r.stderr.endswith("ERROR: job appears to have non-queue constraints, unable to update queue to batch\n")


def test_update_moves_pending_job_between_queues(fluxq):
    fluxq("queue", "start", "--all")
    fluxq.submit("-q", "debug", "-N2", RUN300, "true")
    waiting = fluxq.submit("-q", "debug", "-N2", RUN300, "true")
    assert fluxq.state(waiting) == "SCHED"
    fluxq("update", waiting, "queue=batch")
    assert fluxq.out("jobs", "-no", "{queue} {state} {nodelist}", waiting) == "batch RUN node[2-3]\n"


def test_no_queues_update_refused(flux):
    jobid = flux.submit("--urgency=hold", "true")
    assert flux.fails("update", jobid, "queue=batch").stderr.endswith("ERROR: 'batch' is not a valid queue\n")


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize("text,msg", [
    ("queues:\n  debug:\n    requires: debug\n",
     "error parsing [queues.debug] config table: 'requires' must be an array of property strings (RFC 20)"),
    ("queues:\n  debug:\n    requires: [1]\n",
     "error parsing [queues.debug] config table: 'requires' must be an array of property strings (RFC 20)"),
    ("queues:\n  debug: 1\n", "error parsing [queues.debug] config table: Expected object, got integer"),
    ("queues:\n  debug:\n    policy:\n      limits:\n        duration: xyz\n",
     "error parsing [queues.debug.policy.limits] config table: 'duration' is not a valid FSD"),
    ("queues:\n  debug: {}\n  x:\n    parent: debug\n    requires: [a]\n",
     "error parsing [queues.x] config table: a virtual queue must not set 'requires'"),
    ("queues:\n  debug: {}\npolicy:\n  jobspec:\n    defaults:\n      system:\n        queue: nope\n",
     "the [policy] config table defines a default queue nope that is not in [queues] table"),
    ("queues:\n  debug:\n    foo: 1\n",
     "error parsing [queues.debug] config table: 1 object item(s) left unpacked: foo"),
    ("queues:\n  x:\n    parent: nope\n",
     "error parsing [queues.x] config table: parent queue 'nope' is not configured"),
])
def test_bad_queue_configs_refused(flux, text, msg):
    r = flux.fails("config", "load", input=text)
    # config.load names the module that refused the table, as Flux's does
    assert r.stderr == f"flux-lite config: ERROR: load: error updating job-ingest: {msg}\n"
    assert flux.out("config", "get") == "{}\n"


def test_config_load_adds_and_removes_queues(flux):
    flux("config", "load", input="queues:\n  a: {}\n  b: {}\n")
    assert flux.out("config", "get", "queues") == '{"a":{},"b":{}}\n'
    assert lines(flux.out("queue", "list", "-o", "{queue} {enabled.ascii}{started.ascii}"))[1:] == ["a yn", "b yn"]
    assert flux.out("queue", "start", "--all") == "a: Scheduling is started\nb: Scheduling is started\n"
    big = flux.submit("-q", "a", "-N4", RUN300, "true")
    small = flux.submit("-q", "b", "-N1", RUN1, "true")
    assert flux.state(big) == "RUN" and flux.state(small) == "SCHED"
    flux("cancel", big)
    flux("job", "wait-event", small, "clean")
    flux("config", "load", input="")
    assert flux.out("queue", "list", "-n", "-o", "{queue}|{started.ascii}") == "|y\n"
    assert flux.fails("submit", "-q", "a", RUN1, "true").stderr.endswith("ERROR: 'a' is not a valid queue\n")
    assert flux.out("jobs", "-a", "-no", "{queue}") == "b\na\n"


def test_zhashx_order_matches_flux():
    from flux_lite.config import zhashx_order

    assert zhashx_order(["debug", "batch"]) == ["batch", "debug"]
    assert zhashx_order(["a", "b"]) == ["a", "b"]
    assert zhashx_order(["debug", "batch", "expedite"]) == ["debug", "batch", "expedite"]


# -- constraints (--requires, RFC 31/35) ----------------------------------------------------


@pytest.mark.parametrize("query,expected", [
    ("debug", {"properties": ["debug"]}),
    ("debug,batch", {"properties": ["debug", "batch"]}),
    ("debug and batch", {"properties": ["debug", "batch"]}),
    ("host:node3", {"hostlist": ["node3"]}),
    ("rank:2", {"ranks": ["2"]}),
    ("rank:2 or rank:3", {"or": [{"ranks": ["2"]}, {"ranks": ["3"]}]}),
    ("-debug", {"not": [{"properties": ["debug"]}]}),
    ("not (host:node0 | host:node1)", {"not": [{"or": [{"hostlist": ["node0"]}, {"hostlist": ["node1"]}]}]}),
    ("batch host:node[2-3]", {"and": [{"properties": ["batch"]}, {"hostlist": ["node[2-3]"]}]}),
])
def test_requires_parses_rfc35(query, expected):
    from flux_lite.formats import constraint

    assert constraint.parse(query) == expected


@pytest.mark.parametrize("query", ["", "(a|b", "foo:bar", "rank:x", "a|", "host:node[", "a)"])
def test_requires_syntax_errors(flux, query):
    r = flux.fails("submit", f"--requires={query}", "true")
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("flux-lite submit: ERROR: ")


def test_requires_unknown_host_refused_at_submit(flux):
    r = flux.fails("run", "--requires=host:nosuchhost", RUN1, "true")
    assert r.stderr == "flux-lite run: ERROR: host constraint contains invalid hosts: host 'nosuchhost' not found\n"
    assert flux.out("jobs", "-a", "-n") == ""


@pytest.mark.parametrize("policy", ["fcfs", "easy", "hybrid", "conservative"])
def test_constraints_place_jobs_on_matching_nodes(flux, policy):
    flux("sched", "reload", f"--policy={policy}")
    on3 = flux.submit("--requires=host:node3", RUN300, "true")
    on2 = flux.submit("--requires=rank:2", RUN300, "true")
    not01 = flux.submit("-N1", "--requires=-rank:0-2", RUN300, "true")
    assert flux.out("jobs", "-no", "{nodelist}", on3, on2) == "node3\nnode2\n"
    assert flux.state(not01) == "SCHED"  # node3 is busy; nothing else qualifies
    flux("cancel", on3)
    assert flux.out("jobs", "-no", "{state} {nodelist}", not01) == "RUN node3\n"


@pytest.mark.parametrize("policy", ["fcfs", "easy", "hybrid", "conservative"])
def test_queue_constraints_under_every_policy(flux_factory, policy):
    flux = flux_factory(config=PROPS)
    flux("sched", "reload", f"--policy={policy}")
    flux("queue", "start", "--all")
    debug = [flux.submit("-q", "debug", "-t", "1m", RUN300, "true") for _ in range(5)]
    batch = [flux.submit("-q", "batch", "-t", "1m", RUN300, "true") for _ in range(5)]
    placed = flux.out("jobs", "-a", "-no", "{queue} {state} {nodelist}", *debug, *batch).splitlines()
    assert placed[:4] == [f"debug RUN node{n}" for n in (0, 1, 0, 1)]
    assert placed[4] == "debug SCHED "
    if policy == "fcfs":
        # sched-simple is one FIFO for all queues: the blocked debug job holds up batch
        assert placed[5:] == ["batch SCHED "] * 5
        flux("cancel", debug[0])
        placed = flux.out("jobs", "-a", "-no", "{queue} {state} {nodelist}", *debug, *batch).splitlines()
        assert placed[4] == "debug RUN node0"
    assert placed[5:9] == [f"batch RUN node{n}" for n in (2, 3, 2, 3)]
    assert placed[9] == "batch SCHED "


def test_infeasible_request_fails_as_recorded(fluxq):
    fluxq("queue", "start", "--all")
    three = fluxq.submit("-q", "debug", "-N3", RUN1, "true")
    both = fluxq.submit("-q", "batch", "--requires=debug", RUN1, "true")
    assert fluxq.out("jobs", "-no", "{status} {exception.note}", three, both) == (
        "FAILED unsatisfiable request: need 3 exclusive node(s), only 2 eligible\n"
        "FAILED unsatisfiable request: need 1 slot(s) of 1 core(s), only 0 such slot(s) available "
        "(total cores: 0)\n")
    assert json.loads(fluxq.out("job", "info", both, "jobspec"))["attributes"]["system"]["constraints"] == \
        {"properties": ["debug", "batch"]}


def test_jobs_queue_filter(flux_factory):
    flux = flux_factory(config=VQ)
    a = flux.submit("-q", "debug", RUN1, "true")
    b = flux.submit("-q", "batch", RUN1, "true")
    c = flux.submit("-q", "expedite", "-t", "30m", RUN1, "true")
    assert flux.out("jobs", "-q", "debug", "-no", "{id.f58}") == f"{a}\n"
    assert flux.out("jobs", "--queue=batch", "-no", "{id.f58} {queue}") == f"{b} batch\n{c} expedite\n"
    assert flux.out("jobs", "-q", "debug,expedite", "-no", "{id.f58}") == f"{a}\n{c}\n"
    # an unknown queue lists nothing, and no QUEUE column
    assert flux.out("jobs", "-q", "nope") == "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO\n"


def test_resource_list_by_queue(fluxq):
    assert lines(fluxq.out("resource", "list")) == IDLE_DEBUG_BATCH
    assert lines(fluxq.out("resource", "list", "-o", "{state} {properties} {nnodes} {ncores} {ranks} {nodelist}")) \
        == ["STATE PROPERTIES NNODES NCORES RANKS NODELIST", "free debug 2 4 0-1 node[0-1]",
            "free batch 2 4 2-3 node[2-3]", "allocated  0 0  ", "down  0 0  "]
    assert lines(fluxq.out("resource", "list", "-o", "rlist"))[:2] == [
        "     STATE QUEUE NNODES NCORES +NGPUS LIST",
        "      free debug      2      4 +    0 rank[0-1]/core[0-1]"]
    assert lines(fluxq.out("resource", "list", "-q", "debug")) == [
        "     STATE QUEUE NNODES NCORES NGPUS NODELIST",
        "      free debug      2      4     0 node[0-1]",
        " allocated debug      0      0     0 ",
        "      down debug      0      0     0 "]
    assert fluxq.fails("resource", "list", "-q", "nope").stderr.endswith("ERROR: --queue: nope: no such queue\n")
    assert fluxq.out("resource", "info") == "4 Nodes, 8 Cores, 0 GPUs\n"
    assert fluxq.out("resource", "info", "-q", "debug") == "2 Nodes, 4 Cores, 0 GPUs\n"
    # no state or property in the format: the states asked for make one line (Flux's uniq fields)
    assert fluxq.out("resource", "info", "-s", "free,down") == "4 Nodes, 8 Cores, 0 GPUs\n"
    fluxq("queue", "start", "--all")
    fluxq.submit("-q", "batch", RUN300, "true")
    assert lines(fluxq.out("resource", "list"))[2:4] == [
        "      free batch      2      3     0 node[2-3]", " allocated batch      1      1     0 node2"]


def test_resource_list_queues_without_requires_share_lines(flux):
    flux("config", "load", input="queues:\n  a: {}\n  b: {}\n")
    assert lines(flux.out("resource", "list")) == [
        "     STATE QUEUE NNODES NCORES NGPUS NODELIST",
        "      free a,b        4      8     0 node[0-3]",
        " allocated a          0      0     0 ",
        " allocated b          0      0     0 ",
        "      down a          0      0     0 ",
        "      down b          0      0     0 "]
    # -q a: the same nodes, named by the queue asked for only
    assert lines(flux.out("resource", "list", "-q", "a"))[1:] == [
        "      free a          4      8     0 node[0-3]",
        " allocated a          0      0     0 ",
        "      down a          0      0     0 "]


def test_resource_config_entries_add_properties(flux_factory, tmp_path):
    flux = flux_factory(config="resource:\n  config:\n    - hosts: vm\n      cores: 0-1\n      properties: [debug]\n")
    assert lines(flux.out("resource", "list")) == [
        "     STATE PROPERTIES NNODES NCORES NGPUS NODELIST",
        "      free debug           1      2     0 vm",
        " allocated                 0      0     0 ",
        "      down                 0      0     0 "]
    from flux_lite.errors import ConfigError
    from flux_lite.resources import build_instance_R

    # as Flux's librlist: an id given twice for a host is an error...
    with pytest.raises(ConfigError) as exc:
        build_instance_R({"resource": {"config": [{"hosts": "node[0-1]", "cores": 2},
                                                   {"hosts": "node1", "cores": 4}]}})
    assert str(exc.value) == "error parsing [resource.config] array: Unable to add rnode: File exists"
    # ...other ids add up, and are kept as given
    R = build_instance_R({"resource": {"config": [{"hosts": "node[0-1]", "cores": "0-1"},
                                                  {"hosts": "node1", "cores": "2-3", "gpus": "0"},
                                                  {"hosts": "node2", "cores": "4-5"}]}})
    assert R["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0-1"}},
                                        {"rank": "1", "children": {"core": "0-3", "gpu": "0"}},
                                        {"rank": "2", "children": {"core": "4-5"}}]


def test_config_load_of_queues_moves_pending_requests(flux):
    flux.submit("-N4", RUN300, "true")
    blocked = flux.submit("-N4", RUN300, "true")
    assert lines(flux.out("queue", "status", "-v"))[2:] == [
        "0 alloc requests queued", "1 alloc requests pending to scheduler", "1 running jobs"]
    flux("config", "load", input="queues:\n  a: {}\n")
    # the job has no queue: nothing may be scheduled for it now
    assert lines(flux.out("queue", "status", "-v"))[2:] == [
        "0 alloc requests queued", "0 alloc requests pending to scheduler", "1 running jobs"]
    flux("config", "load", input="")
    assert lines(flux.out("queue", "status", "-v"))[2:] == [
        "0 alloc requests queued", "1 alloc requests pending to scheduler", "1 running jobs"]
    assert flux.state(blocked) == "SCHED"


def blocked_head_and_infeasible_jobs(fluxq):
    """The recorded scene: a debug -N2 job blocked at the head of sched-simple's
    FIFO (ranks 0 and 2 busy), then two jobs that can never run."""
    fluxq("queue", "start", "--all")
    fluxq.submit("-q", "debug", RUN300, "true")               # rank 0
    fluxq.submit("-q", "batch", RUN300, "true")               # rank 2
    head = fluxq.submit("-q", "debug", "-N2", RUN300, "true")  # blocked: rank 0 is busy
    three = fluxq.submit("-q", "debug", "-N3", RUN1, "true")
    both = fluxq.submit("-q", "batch", "--requires=debug", RUN1, "true")
    return head, three, both


def test_update_gives_sched_simple_a_pass_without_the_moved_job(fluxq):
    """Recorded: moving the blocked head of sched-simple's FIFO to another
    queue cancels its request; the scheduler's pass before the request comes
    back reaches the jobs behind it (infeasible ones fail, fitting ones start)."""
    head, three, both = blocked_head_and_infeasible_jobs(fluxq)
    small = [fluxq.submit("-q", "batch", RUN300, "true") for _ in range(2)]
    assert [fluxq.state(j) for j in (head, three, both, *small)] == ["SCHED"] * 5
    fluxq("update", head, "queue=batch")
    assert fluxq.out("jobs", "-a", "-no", "{state} {status} {exception.note}", head, three, both, *small) == (
        "SCHED SCHED \n"
        "INACTIVE FAILED unsatisfiable request: need 3 exclusive node(s), only 2 eligible\n"
        "INACTIVE FAILED unsatisfiable request: need 1 slot(s) of 1 core(s), only 0 such slot(s) available "
        "(total cores: 0)\n"
        "RUN RUN \nRUN RUN \n")


def test_stopping_queues_gives_no_pass_between_withdrawn_requests(fluxq):
    """Recorded: `queue stop --all` withdraws every request at once, so the
    infeasible jobs behind a blocked head get no pass (no exception yet);
    after `queue start --all` the head blocks them again."""
    head, three, both = blocked_head_and_infeasible_jobs(fluxq)
    assert fluxq.out("queue", "stop", "-m", "draining for maintenance", "batch") == \
        "batch: Scheduling is stopped: draining for maintenance\n"
    assert fluxq.out("queue", "stop", "--all", "-m", "all stopped") == (
        "batch: Scheduling is stopped: all stopped\ndebug: Scheduling is stopped: all stopped\n")
    assert lines(fluxq.out("queue", "status", "-v"))[4:] == [
        "0 alloc requests queued", "0 alloc requests pending to scheduler", "2 running jobs"]
    fluxq("queue", "start", "--all")
    assert fluxq.out("jobs", "-a", "-no", "{state} {status}", head, three, both) == "SCHED SCHED\n" * 3
    assert fluxq.eventlog(three) == ["submit", "validate", "depend", "priority"]
    assert lines(fluxq.out("queue", "status", "-v"))[4:] == [
        "0 alloc requests queued", "3 alloc requests pending to scheduler", "2 running jobs"]
    fluxq("update", head, "queue=batch")
    assert fluxq.out("jobs", "-a", "-no", "{status} {exception.type}", three, both) == "FAILED alloc\n" * 2


def test_update_queue_asks_the_scheduler_for_feasibility(flux_factory):
    config = PROPS.replace("    - hosts: \"node[2-3]\"\n      properties: [batch]\n",
                           "    - hosts: \"node[2-3]\"\n      properties: [debug]\n    - hosts: \"node3\"\n"
                           "      properties: [batch]\n")
    flux = flux_factory(config=config)
    held = flux.submit("-q", "debug", "-N3", "--urgency=hold", RUN1, "true")
    r = flux.fails("update", held, "queue=batch")
    assert r.stderr.endswith("ERROR: unsatisfiable request: need 3 exclusive node(s), only 1 eligible\n")
    assert flux.eventlog(held)[-1] == "priority"  # nothing was posted
    flux("module", "remove", "sched-simple")
    flux("update", held, "queue=batch")  # no scheduler, nobody to ask


@pytest.mark.parametrize("policy", ["fcfs", "easy", "hybrid", "conservative"])
def test_backfill_stays_within_a_queues_nodes(flux_factory, policy):
    """A job backfills only onto its queue's free nodes, ahead of a blocked
    job of its own queue when it ends before that job's reservation; another
    queue's jobs run on their own nodes (sched-simple: one FIFO, all wait)."""
    flux = flux_factory(config=PROPS)
    flux("sched", "reload", f"--policy={policy}")
    flux("queue", "start", "--all", "--quiet")
    first = flux.submit("-q", "debug", "-n3", "-t", "10m", RUN300, "true")
    whole = flux.submit("-q", "debug", "-n4", "-t", "10m", RUN300, "true")   # waits for first
    short = flux.submit("-q", "debug", "-n1", "-t", "5m", RUN300, "true")    # ends before whole's start
    long_ = flux.submit("-q", "debug", "-n1", "-t", "20m", RUN300, "true")   # would delay whole
    batch = flux.submit("-q", "batch", "-n4", "-t", "1h", RUN300, "true")
    got = flux.out("jobs", "-a", "-no", "{state} {nodelist}", first, whole, short, long_, batch).splitlines()
    assert got[0] == "RUN node[0-1]" and got[1] == "SCHED " and got[3] == "SCHED "
    if policy == "fcfs":
        assert got[2] == "SCHED " and got[4] == "SCHED "
    else:
        assert got[2] in ("RUN node0", "RUN node1") and got[4] == "RUN node[2-3]"


def test_cancel_all_cancels_a_blocked_job_before_it_can_start(fluxq):
    """Recorded: `cancel --all` (job-manager.raiseall) gives every job its
    exception before the scheduler hears of the freed nodes, so the blocked
    debug job ends CANCELED without ever running."""
    head, three, both = blocked_head_and_infeasible_jobs(fluxq)
    assert fluxq("cancel", "--all").stderr == "flux-lite cancel: Canceled 5 jobs (0 errors)\n"
    assert fluxq.out("jobs", "-a", "-no", "{status} {ranks} {exception.type}", head) == "CANCELED  cancel\n"
    assert "alloc" not in fluxq.eventlog(head)
