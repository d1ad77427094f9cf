"""CLI tests of `kvs` (inspecting the namespace, RFC 16 job keys) and `config`
(get, load with validation).
"""

import json

import pytest

GUEST = {"FLUX_HANDLE_USERID": "1234"}
T0 = 1767225600.0


def err(r):
    return r.stderr.strip()


def kvskey(flux, jobid):
    return flux.out("job", "id", "--to=kvs", jobid).strip()


# ----------------------------------------------------------------------- kvs


def test_kvs_ls_top_level(flux):
    # flux kvs ls: names only; -F marks directories with a dot
    top = flux.out("kvs", "ls").split()
    assert "resource" in top and "config" in top
    assert "resource." in flux.out("kvs", "ls", "-F").split() and "config" in flux.out("kvs", "ls", "-F").split()
    assert "job" not in top  # no job yet
    flux.submit("true")
    assert "job" in flux.out("kvs", "ls").split()


def test_kvs_job_directory_uses_dothex_keys(flux):
    jobid = flux.submit("-N1", "-t", "5m", "--setattr=exec.test.run_duration=60s", "hostname")
    key = kvskey(flux, jobid)
    dec = int(flux.out("job", "id", jobid))
    assert key == "job." + ".".join(f"{dec:016x}"[i:i + 4] for i in range(0, 16, 4))
    assert flux.out("kvs", "ls", key).split() == ["J", "R", "eventlog", "jobspec"]
    # the eventlog is the RFC 18 text, byte for byte what job eventlog -f json prints
    assert flux.out("kvs", "get", f"{key}.eventlog") == flux.out("job", "eventlog", "-f", "json", jobid) + "\n"
    assert flux.out("kvs", "eventlog", "get", f"{key}.eventlog") == flux.out("job", "eventlog", jobid)
    assert flux.out("kvs", "eventlog", "get", "-u", f"{key}.eventlog") == \
        flux.out("job", "eventlog", "-f", "json", jobid)
    R = json.loads(flux.out("kvs", "get", f"{key}.R"))
    assert R == json.loads(flux.out("job", "info", jobid, "R"))
    assert json.loads(flux.out("kvs", "get", f"{key}.jobspec")) == \
        json.loads(flux.out("job", "info", jobid, "jobspec"))
    # a pending job has no R yet
    held = flux.submit("--urgency=hold", "true")
    assert flux.out("kvs", "ls", kvskey(flux, held)).split() == ["J", "eventlog", "jobspec"]


def test_kvs_ls_recursive_lists_every_job(flux):
    ids = [flux.submit("true") for _ in range(3)]
    out = flux.out("kvs", "ls", "-1", "-R", "job")
    for jobid in ids:
        assert f"{kvskey(flux, jobid)}:" in out.splitlines()
    assert out.count("\neventlog\n") == 3


def test_kvs_resource_R(flux):
    R = json.loads(flux.out("kvs", "get", "resource.R"))
    assert R["version"] == 1
    assert R["execution"]["R_lite"] == [{"rank": "0-3", "children": {"core": "0-1"}}]
    assert R["execution"]["nodelist"] == ["node[0-3]"]
    assert R["execution"]["starttime"] == T0
    assert R["execution"]["expiration"] == 0.0


def test_kvs_resource_eventlog_records_drains(flux):
    # the resource module defines the resources first thing, as Flux's does
    assert flux.out("kvs", "eventlog", "get", "resource.eventlog").split()[1:] == [
        "resource-define", 'method="dynamic-discovery"']
    flux("resource", "drain", "1", "bad", "fan")
    flux("resource", "undrain", "1")
    lines = flux.out("kvs", "eventlog", "get", "resource.eventlog").splitlines()
    assert [line.split()[1] for line in lines] == ["resource-define", "drain", "undrain"]
    assert 'idset="1"' in lines[1] and 'reason="bad fan"' in lines[1]


def test_kvs_get_errors(flux):
    r = flux.fails("kvs", "get", "nope")
    assert err(r).endswith("nope: No such file or directory")
    flux.submit("true")
    r = flux.fails("kvs", "get", "job")
    assert err(r).endswith("job: Is a directory")
    r = flux.fails("kvs", "eventlog", "get", "resource.R")
    r = flux.fails("kvs", "ls", "nope")
    assert "No such file or directory" in r.stderr


def test_kvs_put_and_get(flux):
    flux("kvs", "put", "test.a=1", 'test.b={"x":[1,2]}')
    assert flux.out("kvs", "get", "test.a") == "1\n"
    assert json.loads(flux.out("kvs", "get", "test.b")) == {"x": [1, 2]}
    assert flux.out("kvs", "ls", "test").split() == ["a", "b"]
    flux("kvs", "put", "test.a=2")
    assert flux.out("kvs", "get", "test.a") == "2\n"
    r = flux.fails("kvs", "put", "test.c=3", env=GUEST)
    assert "not permitted" in r.stderr.lower()
    flux.fails("kvs", "get", "test.c")


def test_kvs_put_string_round_trips(flux):
    flux("kvs", "put", "test.s=hello")
    assert flux.out("kvs", "get", "test.s") == "hello\n"


def test_kvs_put_is_atomic(flux):
    flux.fails("kvs", "put", "test.ok=1", "bad..key=2")
    flux.fails("kvs", "get", "test.ok")


# -------------------------------------------------------------------- config


CONFIG = """\
policy:
  limits:
    duration: 1h
sched:
  queue-depth: 4
"""


@pytest.fixture
def fluxc(flux_factory):
    return flux_factory("--test-size=2", "--test-cores=2", config=CONFIG)


def test_config_get_empty(flux):
    assert flux.out("config", "get") == "{}\n"


def test_config_get(fluxc):
    assert json.loads(fluxc.out("config", "get")) == {"policy": {"limits": {"duration": "1h"}},
                                                      "sched": {"queue-depth": 4}}
    assert fluxc.out("config", "get", "sched") == '{"queue-depth":4}\n'
    assert fluxc.out("config", "get", "sched.queue-depth") == "4\n"
    fluxc.fails("config", "get", "nope")
    # the config is in effect
    assert "sched-simple.info[0]: ready: queue-depth=4 log-level=info" in "\n".join(fluxc.dmesg())
    r = fluxc.fails("submit", "-t", "2h", "true")
    assert err(r).endswith("requested duration (2h) exceeds policy limit of 1h")


def test_config_get_strings_and_missing_keys_as_flux(fluxc):
    assert fluxc.out("config", "get", "policy.limits.duration") == "1h\n"
    r = fluxc.fails("config", "get", "policy.nope")
    assert err(r).endswith("policy.nope is not set")


def test_config_load_replaces_config(fluxc, tmp_path):
    fluxc("config", "load", input="policy:\n  limits:\n    duration: 2h\n")
    assert json.loads(fluxc.out("config", "get")) == {"policy": {"limits": {"duration": "2h"}}}
    fluxc.submit("-t", "2h", "true")
    path = tmp_path / "new.yaml"
    path.write_text("policy:\n  limits:\n    duration: 30m\n")
    fluxc("config", "load", str(path))
    fluxc.fails("submit", "-t", "1h", "true")


@pytest.mark.parametrize("text,name", [
    ("policy:\n  limits:\n    durationx: 1h\n", "durationx"),
    ("bogus: 1\n", "bogus"),
    ("sched:\n  queue-depth: 0\n", "sched.queue-depth"),
    ("sched:\n  policy: lifo\n", "sched.policy"),
    ("policy:\n  limits:\n    duration: forever\n", "[policy.limits] config table: 'duration' is not a valid FSD"),
    ("job-manager:\n  housekeeping:\n    nope: 1\n", "nope"),
])
def test_config_load_bad_key_refused_by_name(fluxc, text, name):
    before = fluxc.out("config", "get")
    r = fluxc.fails("config", "load", input=text)
    assert name in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert fluxc.out("config", "get") == before
    r = fluxc.fails("submit", "-t", "2h", "true")  # old limit still applies


def test_config_load_bad_yaml_refused(fluxc):
    before = fluxc.out("config", "get")
    r = fluxc.fails("config", "load", input="policy: [\n")
    assert len(r.stderr.splitlines()) == 1
    assert fluxc.out("config", "get") == before


def test_config_load_resource_change_refused(fluxc):
    before = fluxc.out("config", "get")
    r = fluxc.fails("config", "load",
                    input='resource:\n  config:\n    - hosts: "x[0-1]"\n      cores: 2\n' + CONFIG)
    assert "resource" in r.stderr
    assert fluxc.out("config", "get") == before
    assert fluxc.out("resource", "list", "-s", "all", "-no", "{nodelist}").strip() == "node[0-1]"


def test_config_load_requires_owner(fluxc):
    before = fluxc.out("config", "get")
    r = fluxc.fails("config", "load", input=CONFIG.replace("1h", "2h"), env=GUEST)
    assert "not permitted" in r.stderr.lower()
    assert fluxc.out("config", "get") == before
