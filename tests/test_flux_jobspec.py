"""flux.job's values: JobID, Jobspec/JobspecV1, validate_jobspec, _utils (flux-lite's `flux` package)."""

import errno

import pytest

from flux_lite import bindings


@pytest.fixture
def job(monkeypatch):
    """flux.job as `flux python` imports it (no instance needed for values)."""
    monkeypatch.syspath_prepend(str(bindings.PATH))
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    import flux.job

    assert flux.job.__file__.startswith(str(bindings.PATH))
    return flux.job


# -- JobID -------------------------------------------------------------------------------------------------


def test_jobid_from_every_encoding(job):
    forms = ["6787342413402046", "0x181d0d4d850fbe", "0018.1d0d.4d85.0fbe", "job.0018.1d0d.4d85.0fbe",
             "fuzzybunny", "ƒuzzybunny", "cake-plume-nepal--neuron-pencil-academy", "👴😱🔚🎮🕙🚩"]
    for form in forms:
        jobid = job.JobID(form)
        assert jobid == 6787342413402046 and isinstance(jobid, int)
        assert jobid.orig == form
        assert repr(jobid) == "JobID(6787342413402046)"
    jobid = job.JobID(6787342413402046)
    assert (jobid.dec, jobid.hex, jobid.dothex, jobid.kvs) == (
        "6787342413402046", "0x181d0d4d850fbe", "0018.1d0d.4d85.0fbe", "job.0018.1d0d.4d85.0fbe")
    assert (jobid.f58, jobid.f58plain, str(jobid)) == ("fuzzybunny", "fuzzybunny", "fuzzybunny")
    assert jobid.words == "cake-plume-nepal--neuron-pencil-academy"
    assert jobid.emoji == "👴😱🔚🎮🕙🚩"
    assert job.JobID(job.JobID("0x10")).orig == "0x10"


def test_jobid_utf8_prefix(job, monkeypatch):
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    assert str(job.JobID(1)) == "ƒ2"
    assert job.JobID(1).f58plain == "f2"


@pytest.mark.parametrize("bad", ["invalid", "-1", "0.0.0", "job.0.0", "fO", "foo-bar-baz--qux-quux-corge", "🦄", ""])
def test_jobid_invalid_is_valueerror(job, bad):
    with pytest.raises(ValueError, match="is not a valid Flux jobid"):
        job.JobID(bad)


def test_id_parse_and_encode_errors(job):
    assert job.id_parse("ƒ2") == 1
    assert job.id_encode(65535, "emoji") == "💁📚"
    assert job.id_encode(1) == "f2"
    with pytest.raises(OSError) as exc:
        job.id_parse("bogus")
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(OSError) as exc:
        job.id_encode(1, "roman")
    assert exc.value.errno == errno.EPROTO


def test_ffi_null_is_a_falsy_sentinel(job):
    assert not job.ffi.NULL
    assert job.ffi.NULL is job.ffi.NULL and job.ffi.NULL != 0


# -- Jobspec / JobspecV1 -----------------------------------------------------------------------------------


def test_from_command_exact_jobspec(job):
    js = job.JobspecV1.from_command(["hostname"], num_tasks=4, num_nodes=2, cores_per_task=2, environment={},
                                    duration="1m", cwd="/tmp", name="h", output="out", label_io=True, queue="batch")
    assert js.dumps() == (
        '{"resources": [{"type": "node", "count": 2, "with": [{"type": "slot", "count": 2, "with": '
        '[{"type": "core", "count": 2}], "label": "task"}]}], "tasks": [{"command": ["hostname"], "slot": "task", '
        '"count": {"per_slot": 1}}], "attributes": {"system": {"duration": 60.0, "environment": {}, "cwd": "/tmp", '
        '"job": {"name": "h"}, "shell": {"options": {"output": {"stdout": {"type": "file", "path": "out", '
        '"label": true}}}}, "queue": "batch"}}, "version": 1}')
    uneven = job.JobspecV1.from_command(["true"], num_tasks=3, num_nodes=2, exclusive=True, environment={})
    assert uneven.resources[0] == {"type": "node", "count": 2, "exclusive": True,
                                   "with": [{"type": "slot", "count": 2, "with": [{"type": "core", "count": 1}],
                                             "label": "task"}]}
    assert uneven.tasks[0]["count"] == {"total": 3}
    assert dict(uneven.resource_counts()) == {"node": 2, "slot": 4, "core": 4}
    assert [r["type"] for r in uneven] == ["node", "slot", "core"]


def test_from_command_errors(job):
    for kwargs, message in (({"num_tasks": 0}, "task count must be a integer >= 1"),
                            ({"cores_per_task": 0}, "cores per task must be an integer >= 1"),
                            ({"num_nodes": 3, "num_tasks": 2}, "node count must not be greater than task count"),
                            ({"exclusive": True}, "exclusive can only be set with a node count"),
                            ({"duration": "1f"}, "invalid Flux standard duration"),
                            ({"environment": "x"}, "environment must be a mapping"),
                            ({"rlimits": True}, "rlimits must be a mapping")):
        with pytest.raises(ValueError, match=message) as exc:
            job.JobspecV1.from_command(["true"], **kwargs)
        assert type(exc.value) is ValueError
    with pytest.raises(TypeError, match="command must be a list of strings"):
        job.JobspecV1.from_command("hostname")


def test_constructor_errors_are_flux_types(job):
    slot = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
    task = {"command": ["app"], "slot": "task", "count": {"per_slot": 1}}
    system = {"system": {"duration": 0}}
    cases = [(([slot], [dict(task, command="app")], system), TypeError, "command must be a list of strings"),
             (([dict(slot, count=1.5)], [task], system), TypeError, "count must be an int or mapping"),
             (([dict(slot, count=0)], [task], system), ValueError, "node, slot, or core count must be > 0"),
             (([dict(slot, count="x")], [task], system), ValueError, "count string must be a valid idset or range"),
             (([slot], [task], {}), ValueError, "attributes.system is a required key"),
             (([slot], [task], {"system": {}}), ValueError, "attributes.system.duration is a required key"),
             (({}, [task], system), TypeError, "resources must be a sequence")]
    for args, kind, message in cases:
        with pytest.raises(kind, match=message) as exc:
            job.JobspecV1(*args)
        assert type(exc.value) is kind
    with pytest.raises(ValueError, match="version must be 1"):
        job.JobspecV1([slot], [task], system, version=2)
    assert job.Jobspec([], [], {}, 2).version == 2  # the canonical class takes any version


def test_yaml_stream_and_validate_jobspec(job, tmp_path):
    text = ("version: 1\nresources:\n  - type: slot\n    count: 1\n    label: task\n    with:\n"
            "      - type: core\n        count: 1\ntasks:\n  - command: [app]\n    slot: task\n"
            "    count: {per_slot: 1}\nattributes:\n  system:\n    duration: 0\n")
    js = job.JobspecV1.from_yaml_stream(text)
    assert list(js.jobspec) == ["resources", "tasks", "attributes", "version"]
    path = tmp_path / "js.yaml"
    path.write_text(text)
    assert job.Jobspec.from_yaml_file(str(path)).jobspec == js.jobspec
    ok, obj = job.validate_jobspec(js.dumps())
    assert ok is True and isinstance(obj, job.JobspecV1) and obj.jobspec == js.jobspec
    assert job.validate_jobspec(js)[1].jobspec == js.jobspec
    with pytest.raises(ValueError, match=r"Extraneous key \(extra\)"):
        job.JobspecV1.from_yaml_stream(text + "extra: 1\n")
    with pytest.raises(ValueError, match=r"Missing key \(attributes\)"):
        job.validate_jobspec('{"version": 1, "resources": [], "tasks": []}')
    with pytest.raises(OSError) as exc:
        job.validate_jobspec(job.ffi.NULL)
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        job.validate_jobspec(42)


def test_attributes_and_properties(job):
    js = job.JobspecV1.from_command(["app"], environment={})
    js.setattr("cow", 1)
    js.setattr("user.dog", 2)
    js.setattr("attributes.goat", 3)
    assert js.attributes == {"system": {"duration": 0, "environment": {}, "cow": 1}, "user": {"dog": 2}, "goat": 3}
    assert js.getattr("attributes.system.cow") == js.getattr("cow") == 1
    with pytest.raises(KeyError):
        js.getattr("missing")
    with pytest.raises(TypeError, match="failed to set attributes.system.cow.x to 1"):
        js.setattr("cow.x", 1)
    for value, seconds in ((90, 90.0), ("1.5m", 90.0), (__import__("datetime").timedelta(seconds=5), 5.0)):
        js.duration = value
        assert js.duration == seconds
    with pytest.raises(ValueError, match="duration must not be negative"):
        js.duration = -1
    with pytest.raises(TypeError, match="duration must be an int, float, string, or timedelta"):
        js.duration = []
    with pytest.raises(TypeError, match="queue must be a string"):
        js.queue = 1
    js.stdout = "o.txt"
    js.stdin = "i.txt"
    assert (js.output, js.input, js.error) == ("o.txt", "i.txt", None)
    js.unbuffered = True
    js.unbuffered = False
    assert js.getattr("shell.options") == {"output": {"stdout": {"type": "file", "path": "o.txt"}},
                                           "input": {"stdin": {"type": "file", "path": "i.txt"}}}
    js.add_file("data.json", {"a": 1})
    js.add_file("script", "#!/bin/sh\ntrue\n", perms=0o700)
    assert js.getattr("files") == {"data.json": {"mode": 0o100600, "data": {"a": 1}},
                                   "script": {"mode": 0o100700, "data": "#!/bin/sh\ntrue\n", "encoding": "utf-8"}}
    with pytest.raises(ValueError, match=r"Extraneous key \(goat\)"):  # setattr does not check: the constructor does
        eval(repr(js), {"JobspecV1": job.JobspecV1})
    del js.attributes["goat"]
    assert eval(repr(js), {"JobspecV1": job.JobspecV1}).jobspec == js.jobspec


def test_nest_and_batch_commands(job):
    js = job.JobspecV1.from_batch_command("#!/bin/sh\nhostname\n", "myscript", num_slots=2, conf={"a": 1},
                                          environment={})
    assert js.tasks[0]["command"] == ["flux", "broker", "-c{{tmpdir}}/conf.json", "{{tmpdir}}/script"]
    assert js.getattr("shell.options") == {"per-resource": {"type": "node"}, "mpi": "none", "exit-timeout": "none"}
    assert js.getattr("job.name") == "myscript"
    with pytest.raises(ValueError, match="myscript does not appear to start with '#!'"):
        job.JobspecV1.from_batch_command("hostname\n", "myscript")
    batch = job.JobspecV1.from_batch(content="echo hi\n", wrap=True, nodes=2, time_limit="2h")
    assert batch.resources[0]["exclusive"] is True and batch.duration == 7200.0
    assert batch.output == "flux-{{id}}.out" and batch.getattr("job.name") == "batch"


def test_apply_options(job, tmp_path, monkeypatch):
    monkeypatch.setenv("FLUXLITE_T", "x")
    js = job.JobspecV1.from_command(["app"], environment={})
    rules = tmp_path / "env"
    rules.write_text("B=$FLUXLITE_T-b\n")
    js.apply_options(env=["-*", "FLUXLITE_*", "A=${FLUXLITE_T}1", "R={{rank}}", f"^{rules}"],
                     rlimit=["-*", "nofile=10"], signal="@30s", taskmap="cyclic", dependency="afterok:f1234?x=2",
                     requires=["gpu", "host:n[0-1]"],
                     shell_options={"verbose": 1}, time_limit="10m", attributes={".user.tag": "t", "job.name": "n"},
                     add_file=["notes=line1\\nline2"])
    system = js.attributes["system"]
    assert system["environment"] == {"FLUXLITE_T": "x", "A": "x1", "B": "x-b"}
    assert system["shell"]["options"] == {"env-expand": {"R": "{{rank}}"}, "rlimit": {"nofile": 10},
                                          "signal": {"signum": 10, "timeleft": 30.0},
                                          "taskmap": {"scheme": "cyclic", "value": ""}, "verbose": 1}
    assert system["dependencies"] == [{"scheme": "afterok", "value": "f1234", "x": 2}]
    assert system["constraints"] == {"and": [{"properties": ["gpu"]}, {"hostlist": ["n[0-1]"]}]}
    assert system["duration"] == 600.0 and system["job"] == {"name": "n"} and js.attributes["user"] == {"tag": "t"}
    assert system["files"]["notes"]["data"] == "line1\nline2"
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        js.apply_options(typo=1)
    with pytest.raises(ValueError, match="--env: Variable 'NOPE_NOT_SET' not found"):
        js.apply_options(env=["X=$NOPE_NOT_SET"])
    with pytest.raises(ValueError, match="--signal=BOGUS: signal 'BOGUS' is invalid"):
        js.apply_options(signal="BOGUS")
    with pytest.raises(ValueError, match="--requires="):
        js.apply_options(requires=["("])


# -- _utils --------------------------------------------------------------------------------------------------


def test_batchconfig_and_decode_signal(job, tmp_path):
    from flux.job._utils import decode_signal

    bc = job.BatchConfig()
    assert bc.config is None
    bc.update("resource.noverify=true").update("[sched]\nname = 'x'\n").update('{"a": {"b": [1]}}\n')
    assert bc.config == {"resource": {"noverify": True}, "sched": {"name": "x"}, "a": {"b": [1]}}
    assert bc.get("a.b") == [1] and bc.get("a.c", 0) == 0
    with pytest.raises(ValueError, match="failed to parse multiline as TOML or JSON"):
        bc.update("{\n")
    with pytest.raises(ValueError, match="must end in|named config 'nosuch' not found"):
        bc.update("nosuch")
    (tmp_path / "c.json").write_text('{"x": 1}')
    assert job.BatchConfig().update(str(tmp_path / "c.json")).config == {"x": 1}
    assert [decode_signal(v) for v in (9, "9", "SIGTERM", "HUP")] == [9, 9, 15, 1]
    with pytest.raises(ValueError, match="signal 'NOPE' is invalid"):
        decode_signal("NOPE")


def test_per_resource(job):
    js = job.JobspecV1.per_resource(["app"], ncores=4, nnodes=2, per_resource_type="node", per_resource_count=2,
                                    environment={})
    assert js.resources == [{"type": "node", "count": 2, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "core", "count": 2}], "label": "task"}]}]
    assert js.getattr("shell.options.per-resource") == {"type": "node", "count": 2}
    for kwargs, message in (({"ncores": 3, "nnodes": 2}, "number of cores must be evenly divisible by node count"),
                            ({"nnodes": 2}, "Specifying nnodes also requires ncores or exclusive"),
                            ({"ncores": 2, "per_resource_type": "node"},
                             "must specify a per_resource_count with per_resource_type"),
                            ({}, "must specify node or core count with per_resource")):
        with pytest.raises(ValueError, match=message):
            job.JobspecV1.per_resource(["app"], **kwargs)
