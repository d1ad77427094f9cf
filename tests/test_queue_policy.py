"""Per-queue policy (RFC 33): [policy] and [queues.NAME.policy] tables checked
with the messages of Flux 0.88's conf_policy validation, and the job-size and
duration limits enforced at submit and at `update queue=` as Flux's
.limit-job-size and .limit-duration job-manager plugins do."""

import pytest

GUEST = {"FLUX_HANDLE_USERID": "1234"}


# -- configuration: Flux's words ------------------------------------------------------------


@pytest.mark.parametrize("toml,msg", [
    ('policy = 1\n', "error parsing [policy] config table: Expected object, got integer"),
    ('[policy]\nfoo = 1\n', "error parsing [policy] config table: 1 object item(s) left unpacked: foo"),
    ('policy.access.foo = 1.0\n', "error parsing [policy.access] config table: 1 object item(s) left unpacked: foo"),
    ('policy.access.allow-user = 1.0\n',
     "error parsing [policy.access] config table: 'allow-user' must be a string array"),
    ('policy.access.allow-group = 1.0\n',
     "error parsing [policy.access] config table: 'allow-group' must be a string array"),
    ('policy.access.allow-user = [ 1 ]\n',
     "error parsing [policy.access] config table: 'allow-user' must be a string array"),
    ('policy.access.allow-group = [ 1 ]\n',
     "error parsing [policy.access] config table: 'allow-group' must be a string array"),
    ('policy.limits.foo = 1\n', "error parsing [policy.limits] config table: 1 object item(s) left unpacked: foo"),
    ('policy.limits.duration = 3600\n', "error parsing [policy.limits] config table: 'duration' is not a valid FSD"),
    ('policy.limits.duration = "-1h"\n', "error parsing [policy.limits] config table: 'duration' is not a valid FSD"),
    ('policy.limits.job-size = 1\n',
     "error parsing [policy.limits.job-size] config table: Expected object, got integer"),
    ('policy.limits.job-size.foo = 1\n',
     "error parsing [policy.limits.job-size] config table: 1 object item(s) left unpacked: foo"),
    # Flux names these tables without "job-size"
    ('policy.limits.job-size.max.nnodes = -2\n',
     "error parsing [policy.limits.max] config table: values must be >= -1"),
    ('policy.limits.job-size.min.ngpus = -5\n', "error parsing [policy.limits.min] config table: values must be >= -1"),
    ('policy.limits.job-size.max.ncores = "x"\n',
     "error parsing [policy.limits.max] config table: Expected integer, got string"),
    ('policy.limits.job-size.max.ncores = true\n',
     "error parsing [policy.limits.max] config table: Expected integer, got true"),
    ('policy.limits.job-size.min.nnodes = 1.5\n',
     "error parsing [policy.limits.min] config table: Expected integer, got real"),
    ('policy.limits.job-size.min.foo = 1\n',
     "error parsing [policy.limits.min] config table: 1 object item(s) left unpacked: foo"),
    ('policy.jobspec.foo = 1\n', "error parsing [policy.jobspec] config table: 1 object item(s) left unpacked: foo"),
    ('policy.jobspec.defaults.system.duration = "x"\n',
     "error parsing [policy.jobspec] config table: 'defaults.system.duration' is not a valid FSD"),
    ('policy.jobspec.defaults.system.queue = 1\n',
     "error parsing [policy.jobspec] config table: 'defaults.system.queue' is not a string"),
    ('policy.jobspec.defaults.system.foo = 1\n',
     "error parsing [policy.jobspec] config table: 1 object item(s) left unpacked: foo"),
    ('queues = 1\n', "error parsing [queues] config table: not a table"),
    ('[queues.a]\npolicy = 1\n', "error parsing [queues.a.policy] config table: Expected object, got integer"),
    ('[queues.a]\npolicy.limits.job-size.max.nnodes = -3\n',
     "error parsing [queues.a.policy.limits.max] config table: values must be >= -1"),
    ('[queues.a]\npolicy.access.allow-user = "alice"\n',
     "error parsing [queues.a.policy.access] config table: 'allow-user' must be a string array"),
    ('[queues.a]\npolicy.jobspec.defaults.system.queue = "a"\n',
     "error parsing [queues.a] config table: 'policy' must not define a default queue!"),
    ('[queues.a]\nparent = 1\n', "error parsing [queues.a] config table: 'parent' must be a string"),
    ('[queues.a]\nparent = "a"\n', "error parsing [queues.a] config table: parent queue is itself"),
    ('[queues.a]\n[queues.b]\nparent = "a"\n[queues.c]\nparent = "b"\n',
     "error parsing [queues.c] config table: parent queue 'b' is itself a virtual queue"),
    ('[queues.a]\n[queues.b]\nparent = "a"\npolicy.scheduler.x = 1\n',
     "error parsing [queues.b] config table: a virtual queue must not set 'policy.scheduler'"),
    ('[queues.a]\nrequires = ["a b"]\n',
     "error parsing [queues.a] config table: 'requires' must be an array of property strings (RFC 20)"),
    ('[queues.a]\nrequires = ["a|b"]\n',
     "error parsing [queues.a] config table: 'requires' must be an array of property strings (RFC 20)"),
    # each entry's syntax is checked before any parent is looked up
    ('[queues.a]\nparent = "nope"\n[queues.b]\nfoo = 1\n',
     "error parsing [queues.b] config table: 1 object item(s) left unpacked: foo"),
])
def test_bad_policy_configs_refused_with_fluxs_words(flux, toml, msg):
    r = flux.fails("config", "load", input=toml)
    assert r.stderr == f"flux-lite config: ERROR: load: error updating job-ingest: {msg}\n"
    assert flux.out("config", "get") == "{}\n"


@pytest.mark.parametrize("toml", [
    '[policy.access]\nallow-user = [ "alice", "bob" ]\nallow-group = [ "smurfs" ]\n',
    '[policy.limits]\nduration = "4h"\njob-size.max.nnodes = 8\njob-size.max.ngpus = 4\n'
    '[queues.debug.policy.limits]\nduration = "30m"\njob-size.max.ngpus = -1\n[queues.batch]\n',
    '[policy.scheduler]\nanything = "goes"\n',
    '[queues.a]\nrequires = ["x^y", "z@w"]\n',
])
def test_good_policy_configs_accepted(flux, toml):
    flux("config", "load", input=toml)
    assert flux.out("config", "get") != "{}\n"


# -- job-size limits -------------------------------------------------------------------------


SIZES = """
[policy.limits.job-size.max]
nnodes = 2
ncores = 4
[policy.limits.job-size.min]
ncores = 2
[queues.batch.policy.limits.job-size.max]
nnodes = -1
[queues.small.policy.limits.job-size.max]
nnodes = 1
[queues.tiny]
parent = "small"
[queues.tiny.policy.limits]
job-size.max.ncores = 2
duration = "1h"
"""


@pytest.fixture
def fsize(flux_factory, tmp_path):
    path = tmp_path / "sizes.toml"
    path.write_text(SIZES)
    flux = flux_factory("--test-size=4", "--test-cores=2", "-c", str(path), name="sizes")
    flux("queue", "start", "--all")
    return flux


@pytest.mark.parametrize("args,msg", [
    # a queue's -1 lifts the general limit; its other keys still apply
    (["-q", "batch", "-n5"], "requested ncores (5) exceeds policy limit of 4 for queue batch"),
    (["-q", "batch", "-n1"], "requested ncores (1) is under policy limit of 2 for queue batch"),
    (["-q", "small", "-N2", "-n2"], "requested nnodes (2) exceeds policy limit of 1 for queue small"),
    # a virtual queue inherits its parent's keys and overrides its own
    (["-q", "tiny", "-t", "1m", "-N2", "-n2"], "requested nnodes (2) exceeds policy limit of 1 for queue tiny"),
    (["-q", "tiny", "-t", "1m", "-n3"], "requested ncores (3) exceeds policy limit of 2 for queue tiny"),
    (["-q", "tiny", "-t", "1m", "-n1"], "requested ncores (1) is under policy limit of 2 for queue tiny"),
    # job-size is checked before duration, as Flux's plugins are ordered
    (["-q", "tiny", "-n3"], "requested ncores (3) exceeds policy limit of 2 for queue tiny"),
    (["-q", "tiny", "-n2"], "requested duration (unlimited) exceeds policy limit of 1h for queue tiny"),
    # cores count slots times cores per slot (over all nodes)
    (["-q", "batch", "-n3", "-c2"], "requested ncores (6) exceeds policy limit of 4 for queue batch"),
])
def test_job_size_limits_at_submit(fsize, args, msg):
    r = fsize.fails("submit", *args, "sleep", "inf")
    assert r.stderr == f"flux-lite submit: ERROR: {msg}\n"
    r = fsize.fails("run", *args, "true")
    assert r.stderr == f"flux-lite run: ERROR: {msg}\n"
    assert fsize.out("jobs", "-a", "-no", "{id}") == ""


def test_job_size_limits_allow_what_fits(fsize):
    assert fsize.state(fsize.submit("-q", "batch", "-N3", "-n3", "sleep", "inf")) == "RUN"
    assert fsize.state(fsize.submit("-q", "small", "-n2", "sleep", "inf")) == "RUN"
    assert fsize.state(fsize.submit("-q", "tiny", "-t", "1h", "-n2", "sleep", "inf")) != "INACTIVE"


def test_job_size_limit_at_update_queue(fsize):
    jobid = fsize.submit("-q", "batch", "-N2", "-n2", "--urgency=hold", "sleep", "inf")
    before = fsize.out("job", "eventlog", jobid)
    r = fsize.fails("update", jobid, "queue=small")
    assert r.stderr == "flux-lite update: ERROR: requested nnodes (2) exceeds policy limit of 1 for queue small\n"
    assert fsize.out("job", "eventlog", jobid) == before
    fsize("update", jobid, "queue=batch", check=False)
    one = fsize.submit("-q", "batch", "-n2", "--urgency=hold", "sleep", "inf")
    fsize("update", one, "queue=small")
    assert fsize.out("jobs", "-no", "{queue}", one) == "small\n"


def test_general_job_size_limit_without_queues(flux_factory, tmp_path):
    path = tmp_path / "g.toml"
    path.write_text("[policy.limits.job-size.max]\nnnodes = 1\n[policy.limits.job-size.min]\nngpus = 1\n")
    flux = flux_factory("--test-size=2", "--test-gpus=1", "-c", str(path), name="g")
    assert flux.fails("submit", "-N2", "-n2", "-g1", "sleep", "inf").stderr == \
        "flux-lite submit: ERROR: requested nnodes (2) exceeds policy limit of 1\n"
    assert flux.fails("submit", "-n1", "sleep", "inf").stderr == \
        "flux-lite submit: ERROR: requested ngpus (0) is under policy limit of 1\n"
    assert flux.state(flux.submit("-n1", "-g1", "sleep", "inf")) == "RUN"


def test_job_size_limits_follow_config_load(flux):
    assert flux.state(flux.submit("-N3", "-n3", "sleep", "inf")) == "RUN"
    flux("config", "load", input="[policy.limits.job-size.max]\nnnodes = 2\n")
    assert flux.fails("submit", "-N3", "-n3", "sleep", "inf").stderr == \
        "flux-lite submit: ERROR: requested nnodes (3) exceeds policy limit of 2\n"
    flux("config", "load", input="")
    assert flux.state(flux.submit("-N3", "-n3", "sleep", "inf")) != "INACTIVE"


def test_queue_list_shows_inherited_limits(fsize):
    out = fsize.out("queue", "list", "-o",
                    "{queue} {limits.min.ncores} {limits.max.ncores} {limits.max.nnodes} {limits.timelimit!F}")
    assert out.splitlines() == [
        "QUEUE MINCORES MAXCORES MAXNODES TLIMIT",
        "batch 2 4 inf inf",
        "small 2 4 1 inf",
        "tiny 2 2 1 1h",
    ]


def test_virtual_queue_inherits_parent_duration_limit(flux_factory, tmp_path):
    path = tmp_path / "vq.toml"
    path.write_text('[queues.batch.policy.limits]\nduration = "1h"\n[queues.exp]\nparent = "batch"\n'
                    '[queues.free]\nparent = "batch"\npolicy.limits.duration = "0"\n')
    flux = flux_factory("-c", str(path), name="vq")
    assert flux.fails("submit", "-q", "exp", "-t", "2h", "sleep", "inf").stderr == \
        "flux-lite submit: ERROR: requested duration (2h) exceeds policy limit of 1h for queue exp\n"
    # "0" is unlimited, overriding the parent's limit
    assert flux.submit("-q", "free", "-t", "2h", "sleep", "inf")


# -- access ----------------------------------------------------------------------------------


def test_policy_access_is_validated_but_not_enforced(flux_factory, tmp_path):
    # Flux 0.88's job manager parses [policy.access] but no plugin of flux-core
    # acts on it (enforcement belongs to flux-accounting): a guest not listed
    # still submits, to the queue and after `update queue=`.
    path = tmp_path / "acc.toml"
    path.write_text('[access]\nallow-guest-user = true\n'
                    '[queues.a.policy.access]\nallow-user = ["alice"]\nallow-group = ["smurfs"]\n[queues.b]\n')
    flux = flux_factory("-c", str(path), name="acc")
    jobid = flux.submit("-q", "b", "--urgency=hold", "true", env=GUEST)
    flux("update", jobid, "queue=a", env=GUEST)
    assert flux.out("jobs", "-no", "{queue} {userid}", jobid) == "a 1234\n"
    assert flux.submit("-q", "a", "true", env=GUEST)
