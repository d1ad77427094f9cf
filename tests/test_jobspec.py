"""Tests for the jobspec modules: flux_lite.formats.jobspec (build, load),
jobspec_validate, jj (counts, the common-shape classifier) and the
scheduler's reading of a jobspec (flux_lite.sched.request)."""

import copy
import errno
import json
import random
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import JobspecError
from flux_lite.formats import jj
from flux_lite.formats import jobspec as J
from flux_lite.formats import jobspec_validate as V
from flux_lite.sched import request as R

# `flux job info ƒYpmarK jobspec` from Flux 0.88 (for
# `flux submit -N1 -t 5m --setattr=exec.test.run_duration=60s hostname`)
REF_JOBSPEC = (
    '{"resources": [{"type": "node", "count": 1, "exclusive": true, "with": '
    '[{"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}], '
    '"label": "task"}]}], "tasks": [{"command": ["hostname"], "slot": "task", '
    '"count": {"per_slot": 1}}], "attributes": {"system": {"duration": 300.0, '
    '"cwd": "$WORKDIR", "shell": {"options": {"rlimit": {"cpu": -1, "fsize": -1, '
    '"data": -1, "stack": 8388608, "core": 0, "nofile": 20000, "as": -1, "rss": -1, '
    '"nproc": 96364}}}, "exec": {"test": {"run_duration": "60s"}}}}, "version": 1}'
)


def ref_without_shell():
    js = json.loads(REF_JOBSPEC)
    del js["attributes"]["system"]["shell"]
    return js


def slot_js(**system):
    system.setdefault("duration", 0)
    return {
        "resources": [{"type": "slot", "count": 1, "label": "task",
                       "with": [{"type": "core", "count": 1}]}],
        "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": system},
        "version": 1,
    }


# -- build ------------------------------------------------------------------


def test_build_matches_reference_submit():
    js = J.build(["hostname"], nnodes=1, duration="5m", cwd="$WORKDIR",
                 setattrs=["exec.test.run_duration=60s"])
    assert J.dumps(js) == J.dumps(ref_without_shell())
    # key order is part of the contract (flux job info prints it)
    assert list(js) == ["resources", "tasks", "attributes", "version"]


def test_build_defaults():
    js = J.build(["true"])
    assert js == slot_js()
    assert type(js["attributes"]["system"]["duration"]) is int
    # -t 0 is an explicit float
    assert J.build(["true"], duration=0)["attributes"]["system"]["duration"] == 0.0
    assert type(J.build(["true"], duration=0)["attributes"]["system"]["duration"]) is float
    assert J.build(["true"], duration=90)["attributes"]["system"]["duration"] == 90.0


def test_build_nodes_and_tasks():
    # flux run -N4 -n4: not exclusive
    js = J.build(["hostname"], nnodes=4, ntasks=4)
    assert js["resources"] == [{"type": "node", "count": 4, "with": [
        {"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}],
         "label": "task"}]}]
    assert js["tasks"][0]["count"] == {"per_slot": 1}
    # flux submit -N4 --exclusive
    js = J.build(["true"], nnodes=4, exclusive=True, duration="30m")
    assert js["resources"][0]["exclusive"] is True
    assert js["attributes"]["system"]["duration"] == 1800.0
    # uneven distribution: slots rounded up, tasks counted in total
    js = J.build(["a"], nnodes=2, ntasks=3, cores_per_task=2, gpus_per_task=1)
    assert js["resources"][0]["with"][0]["count"] == 2
    assert js["resources"][0]["with"][0]["with"] == [
        {"type": "core", "count": 2}, {"type": "gpu", "count": 1}]
    assert js["tasks"][0]["count"] == {"total": 3}
    # -n8 without nodes
    js = J.build(["a"], ntasks=8, cores_per_task=2, gpus_per_task=0)
    assert js["resources"] == [{"type": "slot", "count": 8, "with": [
        {"type": "core", "count": 2}], "label": "task"}]


def test_build_name_cwd_queue():
    js = J.build(["/bin/true"], name="foo", cwd="/tmp", queue="batch", bank="b")
    assert js["attributes"]["system"] == {
        "duration": 0, "cwd": "/tmp", "job": {"name": "foo"}, "queue": "batch", "bank": "b"}
    assert jj.name(js) == "foo"


def test_build_setattr_forms():
    js = J.build(["true"], setattrs=[
        "exec.test.run_duration=0",        # JSON -> integer 0 (reference 02-update)
        "user.x={\"a\": [1]}",
        "attributes.system.y=str",
        "system.z",                         # no '=' -> 1
        ("exec.test.wait_status", 5),       # already-parsed pair
        "w=",                               # empty string stays a string
    ])
    system = js["attributes"]["system"]
    assert system["exec"]["test"] == {"run_duration": 0, "wait_status": 5}
    assert system["y"] == "str" and system["z"] == 1 and system["w"] == ""
    assert js["attributes"]["user"] == {"x": {"a": [1]}}
    assert J.parse_setattr("a=b=c") == ("a", "b=c")
    assert J.parse_setattr("a=1.5") == ("a", 1.5)
    assert J.parse_setattr("a") == ("a", 1)


def test_build_setattr_leading_dot_and_conflicts():
    with pytest.raises(JobspecError, match=r"^Extraneous key \(foo\)$"):
        J.build(["true"], setattrs=[".foo.bar=1"])
    with pytest.raises(JobspecError, match="failed to set attributes.system.duration.x to 1"):
        J.build(["true"], setattrs=["duration.x=1"])
    with pytest.raises(JobspecError, match="attributes.system.duration must be a number"):
        J.build(["true"], setattrs=["duration=\"x\""])


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        (dict(ntasks=-1), "task count must be a integer >= 1"),
        (dict(cores_per_task=-2), "cores per task must be an integer >= 1"),
        (dict(gpus_per_task=-1), "gpus per task must be an integer >= 0"),
        (dict(nnodes=0, ntasks=2), "node count must be an integer >= 1 (if set)"),
        (dict(nnodes=-1), "task count must be a integer >= 1"),
        (dict(nnodes=4, ntasks=2), "node count must not be greater than task count"),
        (dict(exclusive=True), "exclusive can only be set with a node count"),
        (dict(duration="5x"), "invalid Flux standard duration"),
        (dict(duration=-1), "duration must not be negative"),
        (dict(duration="inf"), "duration must be a normal, finite value"),
    ],
)
def test_build_errors(kwargs, msg):
    with pytest.raises(JobspecError) as exc:
        J.build(["true"], **kwargs)
    assert str(exc.value) == msg


def test_build_empty_command():
    with pytest.raises(JobspecError, match="command array cannot have length of zero"):
        J.build([])


# -- validate ---------------------------------------------------------------


def mutate(fn):
    js = slot_js()
    fn(js)
    return js


def setp(path, value):
    def fn(js):
        obj = js
        for part in path[:-1]:
            obj = obj[part]
        obj[path[-1]] = value
    return fn


def delp(path):
    def fn(js):
        obj = js
        for part in path[:-1]:
            obj = obj[part]
        del obj[path[-1]]
    return fn


@pytest.mark.parametrize(
    "change,msg",
    [
        (delp(["tasks"]), "Missing key (tasks)"),
        (setp(["foo"], 1), "Extraneous key (foo)"),
        (setp(["version"], 2), "version must be 1"),
        (setp(["version"], "1"), "version must be 1"),
        (setp(["version"], 1.0), "version must be an integer"),
        (setp(["resources"], {}), "resources must be a sequence"),
        (setp(["tasks"], "x"), "tasks must be a sequence"),
        (setp(["attributes"], []), "attributes must be a mapping"),
        (setp(["resources", 0], 5), "resource must be a mapping"),
        (delp(["resources", 0, "type"]), "type is a required key for resources"),
        (setp(["resources", 0, "type"], 5), "type must be a string"),
        (delp(["resources", 0, "count"]), "count is a required key for resources"),
        (setp(["resources", 0, "count"], 0), "node, slot, or core count must be > 0"),
        (setp(["resources", 0, "count"], 1.5), "count must be an int or mapping"),
        (setp(["resources", 0, "count"], {"max": 3}), "min must be in range"),
        (setp(["resources", 0, "count"], {"min": 3, "max": 2}), "max must be >= min"),
        (setp(["resources", 0, "count"], {"min": 2}),
         "resource count must be an integer for type 'slot' (got 'dict')"),
        (setp(["resources", 0, "count"], "2-4"),
         "resource count must be an integer for type 'slot' (got 'str')"),
        (setp(["resources", 0, "count"], "x"), "count string must be a valid idset or range"),
        (delp(["resources", 0, "label"]), "slots must have labels"),
        (setp(["resources", 0, "label"], 1), "label must be a string"),
        (setp(["resources", 0, "exclusive"], "yes"), "exclusive must be a boolean"),
        (setp(["resources", 0, "with", 0, "count"], -1), "node, slot, or core count must be > 0"),
        (setp(["resources", 0, "with", 0, "count"], "1"),
         "resource count must be an integer for type 'core' (got 'str')"),
        (setp(["resources", 0, "with"], {"a": 1}), "with must be a sequence"),
        (setp(["tasks", 0], []), "task must be a mapping"),
        (delp(["tasks", 0, "command"]), "Missing key (command)"),
        (setp(["tasks", 0, "count"], 1), "count must be a mapping"),
        (setp(["tasks", 0, "count"], {}), "count must have exactly one key set"),
        (setp(["tasks", 0, "count"], {"x": 1}),
         "count per_slot, per_resource, or total must be set"),
        (setp(["tasks", 0, "count"], {"total": 0}), "count total must be > 0"),
        (setp(["tasks", 0, "count"], {"per_slot": "1"}), "count per_slot must be an int"),
        (setp(["tasks", 0, "count"], {"per_resource": 1}), "count per_slot or total must be set"),
        (setp(["tasks", 0, "slot"], 1), "slot must be a string"),
        (setp(["tasks", 0, "command"], []), "command array cannot have length of zero"),
        (setp(["tasks", 0, "command"], "true"), "command must be a list of strings"),
        (setp(["tasks", 0, "command"], ["a", 1]), "command must be a list of strings"),
        (setp(["attributes", "foo"], {}), "Extraneous key (foo)"),
        (delp(["attributes", "system"]), "attributes.system is a required key"),
        (setp(["attributes", "system"], 5), "attributes.system must be a mapping"),
        (delp(["attributes", "system", "duration"]),
         "attributes.system.duration is a required key"),
        (setp(["attributes", "system", "duration"], "5m"),
         "attributes.system.duration must be a number"),
        (setp(["attributes", "system", "duration"], True),
         "attributes.system.duration must be a number"),
        (setp(["attributes", "system", "duration"], -1),
         "attributes.system.duration must not be negative"),
        (setp(["attributes", "system", "dependencies"], {}),
         "attributes.system.dependencies must be a list"),
        (setp(["attributes", "system", "dependencies"], [{"scheme": "after"}]),
         "Missing key (value)"),
        (setp(["attributes", "system", "constraints"], []), "constraints must be a mapping"),
        (setp(["attributes", "system", "constraints"], {"properties": ["a|b"]}),
         "invalid character in property 'a|b'"),
        (setp(["attributes", "system", "constraints"], {"foo": []}),
         "unknown constraint operator 'foo'"),
        (setp(["attributes", "system", "constraints"], {"and": [{"ranks": ["3,1"]}]}),
         "invalid idset '3,1'"),
    ],
)
def test_validate_errors(change, msg):
    with pytest.raises(JobspecError) as exc:
        V.validate(mutate(change))
    assert str(exc.value) == msg


def test_validate_accepts_what_flux_ingest_accepts():
    V.validate(json.loads(REF_JOBSPEC))
    V.validate(slot_js(foo={"bar": 1}, constraints={"and": [{"properties": ["x"]}]}))
    # no shape checks by default: a bare core (the scheduler will deny it)
    js = slot_js()
    js["resources"] = [{"type": "core", "count": 1}]
    V.validate(js)
    js["resources"] = []
    js["tasks"] = []
    V.validate(js)


@pytest.mark.parametrize(
    "change,msg",
    [
        (setp(["resources"], [{"type": "core", "count": 1}]), "unknown resource vertex type"),
        (setp(["resources", 0, "foo"], "x"), "slot vertex: 1 object item(s) left unpacked: foo"),
        (setp(["resources", 0, "with"], []), "slot with array must have 1-2 elements"),
        (setp(["resources", 0, "with"], [{"type": "gpu", "count": 1}]),
         "slot with must contain a core vertex"),
        (setp(["resources", 0, "with"], [{"type": "memory", "count": 1}]),
         "slot with type must be core or gpu"),
        (setp(["tasks", 0, "slot"], "other"),
         "tasks slot 'other' does not match slot label 'task'"),
        (setp(["tasks", 0, "attributes"], {}),
         "tasks section: 1 object item(s) left unpacked: attributes"),
        (setp(["attributes", "user"], {}), "if present, attributes.user must contain values"),
        (setp(["attributes", "system", "environment"], []),
         "attributes.system.environment must be a dictionary"),
        (lambda js: js["tasks"].append(copy.deepcopy(js["tasks"][0])),
         "tasks must contain exactly one task"),
        (lambda js: js["resources"].append(copy.deepcopy(js["resources"][0])),
         "resources must contain exactly one vertex"),
    ],
)
def test_validate_strict(change, msg):
    js = mutate(change)
    with pytest.raises(JobspecError) as exc:
        V.validate(js, strict=True)
    assert str(exc.value) == msg


def test_validate_strict_node():
    V.validate(json.loads(REF_JOBSPEC), strict=True)
    js = J.build(["a"], nnodes=2, ntasks=3, gpus_per_task=1)
    V.validate(js, strict=True)
    js["resources"][0]["with"].append(copy.deepcopy(js["resources"][0]["with"][0]))
    with pytest.raises(JobspecError, match="^node with array must have 1 elements$"):
        V.validate(js, strict=True)


# -- loads ------------------------------------------------------------------

YAML_JOBSPEC = """\
version: 1
resources:
  - type: slot
    count: 2
    label: default
    with:
      - type: core
        count: 2
tasks:
  - command: [ "app", "--x" ]
    slot: default
    count:
      per_slot: 1
attributes:
  system:
    duration: 3600.
"""


def test_loads_json_and_yaml():
    assert J.loads(REF_JOBSPEC) == json.loads(REF_JOBSPEC)
    assert J.loads(REF_JOBSPEC.encode()) == json.loads(REF_JOBSPEC)
    js = J.loads(YAML_JOBSPEC, strict=True)
    assert js["attributes"]["system"]["duration"] == 3600.0
    assert jj.name(js) == "app"
    assert jj.ntasks(js) == 2


def test_loads_errors():
    with pytest.raises(JobspecError) as exc:
        J.loads("version: 1\nresources:\n  - type: [slot\n  count: 1\n")
    assert str(exc.value).startswith("jobspec: line 4: ")
    with pytest.raises(JobspecError, match=r"^invalid jobspec: jobspec must be a mapping$"):
        J.loads("- 1\n- 2\n")
    with pytest.raises(JobspecError, match=r"^invalid jobspec: jobspec must be a mapping$"):
        J.loads("")
    with pytest.raises(JobspecError, match=r"^invalid jobspec: Missing key \(attributes\)$"):
        J.loads('{"version": 1, "resources": [], "tasks": []}')
    with pytest.raises(JobspecError, match=r"^invalid jobspec: unknown resource vertex type$"):
        J.loads(json.dumps(slot_js() | {"resources": [{"type": "core", "count": 1}]}),
                strict=True)
    with pytest.raises(JobspecError, match="^invalid jobspec: "):
        J.loads(YAML_JOBSPEC.replace("3600.", "2001-01-01"))
    with pytest.raises(JobspecError):
        J.loads(b"\xff\xfe")


# -- accessors ----------------------------------------------------------------


def test_accessors_reference():
    js = json.loads(REF_JOBSPEC)
    assert J.duration(js) == 300.0
    assert jj.name(js) == "hostname"
    assert jj.ntasks(js) == 1
    assert jj.nnodes_requested(js) == 1
    assert jj.ncores(js) is None  # exclusive node request: known after alloc
    assert J.run_duration(js) == 60.0


def test_accessors_counts():
    js = J.build(["/usr/bin/x"], nnodes=2, ntasks=3, cores_per_task=2)
    assert (jj.ntasks(js), jj.nnodes_requested(js), jj.ncores(js)) == (3, 2, 8)
    js = J.build(["dir/"], ntasks=4, cores_per_task=2)
    assert (jj.ntasks(js), jj.nnodes_requested(js), jj.ncores(js)) == (4, 0, 8)
    assert jj.name(js) == "dir/"
    assert jj.name(J.build(["/usr/bin/x"])) == "x"
    js["attributes"]["system"]["shell"] = {"options": {"per-resource": {"type": "core",
                                                                        "count": 2}}}
    assert jj.ntasks(js) == 16
    js = J.build(["x"], nnodes=3)
    js["attributes"]["system"]["shell"] = {"options": {"per-resource": {"type": "node",
                                                                        "count": 2}}}
    assert jj.ntasks(js) == 6
    assert J.duration(slot_js(duration=5)) == 5.0


def test_jj_errors():
    js = slot_js()
    js["resources"] = [{"type": "core", "count": 1}]
    with pytest.raises(JobspecError, match="^Unable to determine slot count$"):
        jj.ntasks(js)
    js["resources"] = [{"type": "slot", "count": 1, "label": "x"}]
    with pytest.raises(JobspecError, match="^Unable to determine slot size$"):
        jj.nnodes_requested(js)
    del js["attributes"]["system"]
    with pytest.raises(JobspecError,
                       match="^at top level: getting duration: Object item not found: system$"):
        jj.ntasks(js)


@pytest.mark.parametrize(
    "test,expected",
    [
        (None, None),
        ({"run_duration": "60s"}, 60.0),
        ({"run_duration": "1ms"}, 0.001),
        ({"run_duration": "0s"}, 0.0),
        ({"run_duration": "0.2s"}, 0.2),
        ({"run_duration": "10m"}, 600.0),
        ({"run_duration": " 1.5"}, 1.5),
        ({"run_duration": ""}, 0.0),
        ({"run_duration": "bogus"}, 300.0),  # unparseable: falls back to duration
        ({"run_duration": "infd"}, 300.0),
        ({}, 300.0),
    ],
)
def test_run_duration(test, expected):
    js = slot_js(duration=300.0)
    if test is not None:
        js["attributes"]["system"]["exec"] = {"test": test}
    assert J.run_duration(js) == expected


def test_run_duration_integer_fails_like_flux():
    # Flux 0.88: --setattr=exec.test.run_duration=0
    js = J.build(["true"], setattrs=["exec.test.run_duration=0"])
    with pytest.raises(JobspecError) as exc:
        J.run_duration(js)
    assert str(exc.value) == "failed to initialize testconf: No such file or directory"


def test_apply_updates():
    js = json.loads(REF_JOBSPEC)
    new = J.apply_updates(js, {"attributes.system.duration": 600.0,
                               "attributes.system.job.name": "foo"})
    assert js == json.loads(REF_JOBSPEC)  # original untouched
    assert new["attributes"]["system"]["duration"] == 600.0
    assert new["attributes"]["system"]["job"] == {"name": "foo"}
    assert jj.name(new) == "foo"
    assert J.apply_updates(js, {}) == js
    new = J.apply_updates(js, {"tasks": [{"command": ["x"], "slot": "task",
                                          "count": {"total": 2}}]})
    assert jj.ntasks(new) == 2
    with pytest.raises(JobspecError) as exc:
        J.apply_updates(js, {"resources.x": "y"})
    assert str(exc.value) == "update: Cannot allocate memory"
    assert exc.value.errno == errno.ENOMEM
    with pytest.raises(JobspecError) as exc:
        J.apply_updates(js, {"attributes..x": 1})
    assert str(exc.value) == "update: Invalid argument"
    assert exc.value.errno == errno.EINVAL


# -- resource_request ---------------------------------------------------------


def test_resource_request_shapes():
    rr = R.resource_request(json.loads(REF_JOBSPEC))
    assert rr == {"nnodes": 1, "slots_per_node": 1, "nslots": 1, "slot_size": 1,
                  "gpu_per_slot": 0, "exclusive": True, "duration": 300.0,
                  "constraint": None, "constraints": []}
    rr = R.resource_request(J.build(["a"], nnodes=2, ntasks=6, cores_per_task=2,
                                    gpus_per_task=1))
    assert (rr["nnodes"], rr["slots_per_node"], rr["nslots"], rr["slot_size"],
            rr["gpu_per_slot"], rr["exclusive"], rr["duration"]) == (2, 3, 6, 2, 1, False, 0.0)
    rr = R.resource_request(J.build(["a"], ntasks=3))
    assert (rr["nnodes"], rr["slots_per_node"], rr["nslots"]) == (0, 0, 3)
    # exclusive slot-only request: one slot per node
    js = J.build(["a"], ntasks=3)
    js["resources"][0]["exclusive"] = True
    rr = R.resource_request(js)
    assert (rr["nnodes"], rr["slots_per_node"], rr["nslots"], rr["exclusive"]) == (3, 1, 3, True)
    js = slot_js(constraints={"and": [{"properties": ["a", "b"]}, {"not": [{"properties": ["c"]}]}],
                              "properties": ["d"]})
    rr = R.resource_request(js)
    assert rr["constraints"] == ["a", "b", "d"]
    assert rr["constraint"] == js["attributes"]["system"]["constraints"]


def test_resource_request_ranges():
    js = slot_js()
    js["resources"][0]["count"] = {"min": 2, "max": 4}
    assert R.resource_request(js)["nslots"] == 2
    js["resources"][0]["count"] = "3-5"
    assert R.resource_request(js)["nslots"] == 3
    for discrete in ("1,7-9", {"min": 2, "max": 8, "operator": "*", "operand": 2}, "2-8:2:*"):
        js["resources"][0]["count"] = discrete
        with pytest.raises(R.DiscreteCountError) as exc:
            R.resource_request(js)
        assert str(exc.value) == (
            "slot count specifies discrete valid values that this scheduler "
            "does not support; use a simple min-max range instead")
    js = J.build(["a"], nnodes=2)
    js["resources"][0]["count"] = "2,4"
    with pytest.raises(JobspecError, match="^node count specifies discrete"):
        R.resource_request(js)


@pytest.mark.parametrize(
    "change,msg",
    [
        (setp(["resources"], []), "jobspec has no resources"),
        (delp(["resources"]), "jobspec has no resources"),
        (delp(["attributes", "system"]), "getting duration: Object item not found: system"),
        (delp(["attributes", "system", "duration"]),
         "getting duration: Object item not found: duration"),
        (setp(["resources"], [{"type": "core", "count": 1}]), "Unable to determine slot count"),
        (setp(["resources"], [{"type": "node", "count": 1}]), "Unable to determine slot count"),
        (setp(["resources", 0, "with"], [{"type": "gpu", "count": 1}]),
         "Unable to determine slot size"),
        (setp(["resources", 0, "count"], 0), "RFC 14 count: integer count must be >= 1, got 0"),
    ],
)
def test_resource_request_errors(change, msg):
    with pytest.raises(JobspecError) as exc:
        R.resource_request(mutate(change))
    assert str(exc.value) == msg


def test_resource_request_version_not_1_skips_duration_check():
    js = slot_js()
    js["version"] = 2
    del js["attributes"]["system"]
    assert R.resource_request(js)["duration"] == 0.0


# -- property tests -----------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False, width=32)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["type", "count", "with", "label", "slot", "command",
                                       "per_slot", "total", "system", "duration", "x"]),
                      children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=60), st.binary(max_size=40)))
def test_garbage_text_only_raises_jobspec_error(text):
    try:
        J.loads(text)
    except JobspecError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["resources", "tasks", "attributes", "version"]), json_values,
       st.booleans())
def test_mutated_jobspec_only_raises_jobspec_error(key, value, strict):
    js = slot_js()
    js[key] = value
    for func in (lambda j: V.validate(j, strict=strict), R.resource_request, jj.ntasks,
                 jj.nnodes_requested, J.run_duration, jj.name):
        try:
            func(copy.deepcopy(js))
        except JobspecError:
            pass
    try:
        J.loads(json.dumps(js), strict=strict)
    except JobspecError:
        pass


@settings(max_examples=60, deadline=None)
@given(json_values)
def test_deep_garbage_resources(value):
    js = slot_js()
    js["resources"] = [{"type": "slot", "count": 1, "label": "task", "with": [value]}]
    for func in (V.validate, R.resource_request, jj.ntasks):
        try:
            func(js)
        except JobspecError:
            pass


# -- the common-shape classifier against the whole check and the jj walk ------------


_ODD_VALUES = [None, True, False, 0, 1, -1, 2, 1.0, 1.5, -0.0, float("nan"), float("inf"), 2**63 - 1, 2**63,
               10**400, "", "x", "slot", [], ["a"], [1], {}, {"per_slot": 1}, ("a",)]


def _common_bases():
    from flux_lite import workload

    bases = [
        J.build(["hostname"], check=False),
        J.build(["a", "b"], ntasks=4, cores_per_task=2, duration=60, check=False),
        J.build(["a"], nnodes=2, ntasks=4, gpus_per_task=1, exclusive=True, check=False),
        J.build(["a"], nnodes=3, check=False),
        J.build(["a"], ntasks=2, name="n", cwd="/tmp", queue="q", bank="b",
                      setattrs=[("user.x", "1"), ("exec.test.run_duration", "5s")], check=False),
        workload.jobspec_for(workload.TraceJob(7, 0.0, 30.0, 12, 600.0, 3, 0.0)),
    ]
    total = J.build(["a"], ntasks=3, check=False)
    total["tasks"][0]["count"] = {"total": 3}
    bases.append(total)
    return bases


def _paths(value, path=()):
    """Every (container path, key) inside a J."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield path, i
            yield from _paths(item, path + (i,))


def _mutated(rng, base):
    js = copy.deepcopy(base)
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = list(_paths(js))
        if not paths:
            break
        path, key = rng.choice(paths)
        holder = js
        for step in path:
            holder = holder[step]
        what = rng.random()
        if what < 0.6:
            holder[key] = copy.deepcopy(rng.choice(_ODD_VALUES))
        elif what < 0.8:
            del holder[key]
        elif isinstance(holder, dict):
            holder[rng.choice(["label", "id", "unit", "exclusive", "with", "per_resource", "total", "user",
                               "dependencies", "constraints", "extra", "attributes"])] = \
                copy.deepcopy(rng.choice(_ODD_VALUES))
        else:
            holder.append(copy.deepcopy(rng.choice([holder[key], *_ODD_VALUES])))
    return js


def _verdict(js):
    try:
        V.validate(js)
    except JobspecError as exc:
        return str(exc)
    except Exception as exc:  # (what the whole check does with it, compared below)
        return repr(type(exc))
    return None


def test_common_shape_check_agrees_with_the_whole_check(monkeypatch):
    """validate()'s one look through the classifier passes only jobspecs the
    whole check passes, and validate's verdict (or error) is the whole
    check's, over thousands of jobspecs of the common shapes with values
    broken, keys dropped and added. The classifier took every base and most
    of the good ones that are RFC 25 V1 (strictly valid: no unknown keys)."""
    rng = random.Random(5)
    bases = _common_bases()
    cases = [js for base in bases for js in [base] + [_mutated(rng, base) for _ in range(700)]]
    verdicts = [_verdict(js) for js in cases]
    fast = [jj.common_shape(js) is not None for js in cases]
    monkeypatch.setattr(V, "common_shape", lambda js: None)
    whole = [_verdict(js) for js in cases]
    for js, v, w, f in zip(cases, verdicts, whole, fast):
        assert v == w, js
        assert not f or w is None or not js["attributes"]["system"].keys().isdisjoint(
            {"dependencies", "constraints"}), js
    good = sum(w is None for w in whole)
    assert good > 200 and len(cases) - good > 2000
    assert all(jj.common_shape(base) is not None for base in bases)
    v1 = [f for js, f, w in zip(cases, fast, whole) if w is None and _verdict_strict(js) is None]
    assert sum(v1) > 0.85 * len(v1) and len(v1) > 200


def _verdict_strict(js):
    try:
        V.validate(js, strict=True)
    except Exception as exc:
        return str(exc)
    return None


def test_listing_counts_are_what_the_general_walk_gives(monkeypatch):
    """The listing's (name, ntasks, nnodes, ncores) of a jobspec are the
    same through the classifier as through the general walk, over the
    jobspecs of the check above (shapes with nodes, totals, GPUs, odd
    values); the classifier took the common shapes."""
    from flux_lite.job_manager import index

    rng = random.Random(6)
    cases = [js for base in _common_bases() for js in [base] + [_mutated(rng, base) for _ in range(500)]]
    shell = J.build(["a"], ntasks=2, check=False)
    shell["attributes"]["system"]["shell"] = {"options": {"per-resource": {"type": "core", "count": 2}}}
    cases.append(shell)
    for where in ("task", "count"):  # read-only mappings: the general walk reads them too
        odd = J.build(["a"], ntasks=2, check=False)
        if where == "task":
            odd["tasks"] = [types.MappingProxyType(dict(odd["tasks"][0], count={"total": 5}))]
        else:
            odd["tasks"][0]["count"] = types.MappingProxyType({"total": 5})
        cases.append(odd)
    quick = [jj.common_shape(js) for js in cases]
    fields = [index._jobspec_fields_of(js) for js in cases]
    assert index._jobspec_fields_of(_common_bases()[-1])[1:] == (3, "", 3)  # (tasks counted in total)
    assert index._jobspec_fields_of(_common_bases()[2])[1:] == (4, 2, "")  # (whole nodes: cores known with R)
    monkeypatch.setattr(jj, "common_shape", lambda js: None)
    monkeypatch.setattr(jj, "job_shape", lambda js: None)
    assert [index._jobspec_fields_of(js) for js in cases] == fields
    assert index._jobspec_fields_of(shell)[1] == 4 and quick[-2:] == [None] * 2
    assert [index._jobspec_fields_of(js)[1] for js in cases[-2:]] == [5, 5]
    assert sum(q is not None for q in quick) > 200
