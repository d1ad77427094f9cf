"""RFC 46 job shapes (formats/shape.py, --resources-shape) and
--resources-json: the resources Flux's shape parser gives, its error
messages, and the jobspecs submit builds with them."""

import json

import pytest

from flux_lite.formats.shape import ShapeSyntaxError, parse


def C(type_, count=1, **kw):
    return {"type": type_, "count": count, **kw}


@pytest.mark.parametrize("text, resources", [
    ("slot=1/node=1/[core=8;gpu=1]",
     [C("slot", label="task", **{"with": [C("node", **{"with": [C("core", 8), C("gpu")]})]})]),
    ("node/slot=8/[core=15;gpu=1]",
     [C("node", **{"with": [C("slot", 8, label="task", **{"with": [C("core", 15), C("gpu")]})]})]),
    ("slot=1/numa{x}", [C("slot", label="task", **{"with": [C("numa", exclusive=True)]})]),
    ("node=2-4/slot{foo}/core", [C("node", "2-4", **{"with": [C("slot", label="foo", **{"with": [C("core")]})]})]),
    ("node=2+:2:*/slot/core=[3]",
     [C("node", "2+:2:*", **{"with": [C("slot", label="task", **{"with": [C("core", 3)]})]})]),
    ("node=1,2,4/slot/core", [C("node", "1,2,4", **{"with": [C("slot", label="task", **{"with": [C("core")]})]})]),
    ("[slot{a}/core;slot{b}/gpu]",
     [C("slot", label="a", **{"with": [C("core")]}), C("slot", label="b", **{"with": [C("gpu")]})]),
    ("node{x,+foo,-bar,baz:1,q:'s t',arr:[1,'a'],n:null,t:TRUE,d:{e:1.5}}/slot/core",
     [C("node", exclusive=True, foo=True, bar=False, baz=1, q="s t", arr=[1, "a"], n=None, t=True, d={"e": 1.5},
        **{"with": [C("slot", label="task", **{"with": [C("core")]})]})]),
    ('"node a"=2/slot/core', [C("node a", 2, **{"with": [C("slot", label="task", **{"with": [C("core")]})]})]),
    ("node  =  2 / slot / core = 4", [C("node", 2, **{"with": [C("slot", label="task", **{"with": [C("core", 4)]})]})]),
    ("node/slot=2{lbl,x}/core",
     [C("node", **{"with": [C("slot", 2, label="lbl", exclusive=True, **{"with": [C("core")]})]})]),
])
def test_shapes(text, resources):
    assert parse(text) == resources


# (each message as Flux 0.88's ShapeParser gives it for the same text)
@pytest.mark.parametrize("text, message", [
    ("slot=1/node=1[", "Invalid token '[' at position 13"),
    ("slot{a}/core;slot{b}/gpu", "Invalid token ';' at position 12"),
    ("[slot/core;slot/gpu]", "Multiple slots require labels"),
    ("node=0/slot/core", "Illegal character '0' at position 5"),
    ("node/slot/core}", "Mismatched braces starting at position 14."),
    ("node/slot/[core", "Unclosed bracket in position 10"),
    ("node/slot/{core", "Invalid token '{' at position 10"),
    ("slot", "Unexpected end of input in 'slot'"),
    ("core=1-", "Unexpected end of input in 'core=1-'"),
    ("node{q:'abc", "Unclosed quote ' at position 8"),
])
def test_shape_errors(text, message):
    with pytest.raises(ShapeSyntaxError) as exc:
        parse(text)
    assert str(exc.value) == message


def test_submit_dry_run_replaces_the_resources(flux):
    js = json.loads(flux.out("submit", "--dry-run", "-n4", "-c2", "--resources-shape=slot=1/node=1/core=4",
                             "sleep", "inf"))
    assert js["resources"] == [C("slot", label="task", **{"with": [C("node", **{"with": [C("core", 4)]})]})]
    assert js["tasks"] == [{"command": ["sleep", "inf"], "slot": "task", "count": {"per_slot": 1}}]


def test_resources_json_file(flux, tmp_path):
    res = [C("node", **{"with": [C("slot", label="task", **{"with": [C("core", 2)]})]})]
    doc = tmp_path / "js.json"
    doc.write_text(json.dumps({"resources": res}))
    js = json.loads(flux.out("run", "--dry-run", f"--resources-json={doc}", "true"))
    assert js["resources"] == res
    doc.write_text(json.dumps(res))
    job = flux.submit(f"--resources-json={doc}", "sleep", "inf")
    assert json.loads(flux.out("job", "info", job, "R"))["execution"]["R_lite"] == [
        {"rank": "0", "children": {"core": "0-1"}}]


def test_shape_errors_on_the_command_line(flux):
    r = flux.fails("submit", "--resources-shape=slot=1/node=1[", "true")
    assert r.stderr == "flux-lite submit: ERROR: Invalid token '[' at position 13\n"
    r = flux.fails("submit", "--resources-shape=slot/core", "--resources-json=x.json", "true")
    assert r.stderr == ("flux-lite submit: ERROR: `--resources-shape` and `--resources-json` are mutually "
                        "exclusive arguments. Use only one.\n")
    assert flux.out("jobs", "-an") == ""


def test_shape_jobs_on_rv1pool(flux):
    # slot above node: Rv1Pool reads it as nodes of the slot count
    job = flux.submit("--resources-shape=slot=1/node=1/core=2", "sleep", "inf")
    assert json.loads(flux.out("job", "info", job, "R"))["execution"]["R_lite"] == [
        {"rank": "0", "children": {"core": "0-1"}}]
