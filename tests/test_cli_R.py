"""flux R (flux-lite R): encode, decode and combine R as flux-core's librlist does.

Expected texts are those of flux-core's t0026-flux-R.t and of librlist's
encoder (key order, "%.17g" times, nodelist of every rank).
"""

import json

import pytest
from click.testing import CliRunner

from flux_lite.cli.main import cli


def as_flux(flux, *args, input=None):
    """Run as `flux` (Flux's program names and C command words)."""
    env = {"FLUX_LITE_STATE_DIR": flux.state_dir}
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, env=env, prog_name="flux",
                              catch_exceptions=False)


def R(flux, *args, input=None):
    result = as_flux(flux, "R", *args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def short(flux, text, *args):
    return R(flux, "decode", "--short", *args, input=text).rstrip("\n")


def test_encode_writes_R_as_librlist_does(flux):
    out = R(flux, "encode", "-r", "0-3", "-c", "0-3", "-g", "0", "-H", "foo[0-3]", "-p", "batch:0-1", "-p", "all")
    assert out == ('{"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0-3", "gpu": "0"}}], '
                   '"starttime": 0.0, "expiration": 0.0, "nodelist": ["foo[0-3]"], '
                   '"properties": {"all": "0-3", "batch": "0-1"}}}\n')
    # a gpu-only rank has no core key; an empty R lists an empty nodelist
    gpus = R(flux, "encode", "-g", "0", "-H", "n0")
    assert json.loads(gpus)["execution"]["R_lite"] == [{"rank": "0", "children": {"gpu": "0"}}]
    assert R(flux, "decode", "--count", "core", input=gpus) == "0\n"
    assert R(flux, "decode", input='{"version": 1, "execution": {"R_lite": {}}}') == (
        '{"version": 1, "execution": {"R_lite": [], "starttime": 0.0, "expiration": 0.0, "nodelist": [""]}}\n')


def test_encode_defaults_and_errors(flux):
    one = R(flux, "encode")
    assert short(flux, one) == "rank0/core0"
    assert R(flux, "decode", "-c", "node", input=one) == "1\n"
    assert R(flux, "decode", "--ranks", input=R(flux, "encode", "--ranks", "0,2")) == "0,2\n"
    assert R(flux, "decode", "-n", input=R(flux, "encode", "--hosts=foo[0-1]")) == "foo[0-1]\n"
    result = as_flux(flux, "R", "encode", "-r", "0-3", "-p", "xx:3-5")
    assert (result.exit_code, result.stderr) == (
        1, "flux-R: failed to assign properties: ranks 4-5 not found in target resource list\n")
    result = as_flux(flux, "R", "encode", "-r", "0-1", "-H", "foo[0-2]")
    assert (result.exit_code, result.stderr) == (1, "flux-R: hostname count in 'foo[0-2]' does not match nranks (2)\n")
    result = as_flux(flux, "R", "encode", "--local", "-c", "0-1")
    assert (result.exit_code, result.stderr) == (1, "flux-R: do not specify --cores or --gpus with --local or --xml\n")


def test_decode_filters(flux):
    assert short(flux, R(flux, "encode", "-r", "0-1023"), "--include", "5-7") == "rank[5-7]/core0"
    assert short(flux, R(flux, "encode", "-r", "1-10"), "--exclude", "5-7") == "rank[1-4,8-10]/core0"
    props = R(flux, "encode", "--hosts=foo[0-1]", "--gpus", "0", "--cores", "0-1", "--property", "xx:0",
              "--property", "yy:1", "--property", "all")
    for constraint, count, nodes in (("all", "2", "foo[0-1]"), ("xx", "1", "foo0"), ("^all", "0", ""),
                                     ("all,yy", "1", "foo1"), ("^yy", "1", "foo0")):
        assert R(flux, "decode", "-c", "node", "--properties", constraint, input=props) == count + "\n"
        assert R(flux, "decode", "--nodelist", "-p", constraint, input=props) == nodes + "\n"


def test_decode_rejects_what_is_not_R(flux):
    for text, message in (("", "Failed to read an R object: '[' or '{' expected near end of file"),
                          ("{}", "Failed to decode R on stdin: Object item not present: version"),
                          ('{"version": 1}', "Failed to decode R on stdin: Object item not present: execution"),
                          ('{"version": 1, "execution": {}}',
                           "Failed to decode R on stdin: Object item not present: R_lite"),
                          ('{"version": 2, "execution": {"R_lite": []}}',
                           "Failed to decode R on stdin: invalid version=2")):
        result = as_flux(flux, "R", "decode", input=text)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"flux-R: {message}\n")


def test_append_diff_intersect_remap_rerank(flux):
    def enc(*args):
        return R(flux, "encode", *args)

    both = enc("-r", "0-1", "-c", "0-1") + enc("-r", "1-2", "-c", "2-3")
    assert short(flux, R(flux, "append", input=both)) == "rank0/core[0-1] rank1/core[0-3] rank2/core[2-3]"
    mixed = enc("-r", "0-1", "-c", "0-1") + enc("-r", "2-3", "-c", "0-1", "-g", "0-1")
    assert short(flux, R(flux, "append", input=mixed)) == "rank[0-1]/core[0-1] rank[2-3]/core[0-1],gpu[0-1]"
    result = as_flux(flux, "R", "append", input=enc("-r", "0-1") + enc("-r", "1-2"))
    assert (result.exit_code, result.stderr) == (
        1, "flux-R: R objects 'rank[0-1]/core0' and 'rank[1-2]/core0' overlap\n")

    assert short(flux, R(flux, "diff", input=enc("-r", "0-1", "-c", "0-1") + enc("-r", "0-1", "-c", "0"))) \
        == "rank[0-1]/core1"
    assert short(flux, R(flux, "intersect", input=enc("-r", "0-3", "-c", "0-1") + enc("-r", "1-5", "-c", "0"))) \
        == "rank[1-3]/core0"
    assert short(flux, R(flux, "intersect", input=enc("-r", "0-3", "-c", "0-1") + enc("-r", "4-5"))) == ""
    result = as_flux(flux, "R", "diff", input=enc())
    assert (result.exit_code, result.stderr) == (1, "flux-R: diff requires at least 2 resource sets\n")

    assert short(flux, R(flux, "remap", input=enc("-r", "5,99,1000", "-c", "2-3"))) == "rank[0-2]/core[0-1]"
    reranked = R(flux, "rerank", "foo[3,2,1,0]", input=enc("-r", "0-3", "-H", "foo[0-3]", "-p", "x:0"))
    assert R(flux, "decode", "--nodelist", input=reranked) == "foo[3,2,1,0]\n"
    assert json.loads(reranked)["execution"]["properties"] == {"x": "3"}  # (properties move with their host)
    result = as_flux(flux, "R", "rerank", "foo[0-2]", input=enc("-r", "0-3", "-H", "foo[0-3]"))
    assert (result.exit_code, result.stderr) == (1, "flux-R: Too few hosts specified (expected 4)\n")


def test_scheduling_key_is_kept(flux):
    orig = json.loads(R(flux, "encode", "-r", "0-3", "-H", "foo[0-3]"))
    orig["scheduling"] = 42
    text = json.dumps(orig)
    for args in (("decode",), ("decode", "--include", "0"), ("decode", "--exclude", "0"), ("remap",)):
        assert json.loads(R(flux, *args, input=text))["scheduling"] == 42, args
    assert json.loads(R(flux, "append", input=text + R(flux, "encode", "-r", "4")))["scheduling"] == 42
    assert json.loads(R(flux, "diff", input=text + R(flux, "encode", "-r", "1")))["scheduling"] == 42
    # nothing left: no scheduling key either
    assert "scheduling" not in json.loads(R(flux, "intersect", input=text + R(flux, "encode", "-r", "9")))
    assert R(flux, "decode", input=text).endswith('"nodelist": ["foo[0-3]"]}, "scheduling": 42}\n')


@pytest.mark.parametrize("second, code, message", [
    (("-r", "1", "-c", "0-3", "-H", "foo1"), 0, ""),
    (("-r", "0", "-c", "0-3", "-H", "foo0"), 1, "flux-R: rank 0 not found in expected ranks\n"),
    (("-r", "1", "-c", "0-3", "-H", "foo12"), 1, "flux-R: rank 1 got hostname 'foo12', expected 'foo1'\n"),
    (("-r", "1", "-c", "0-2", "-H", "foo1"), 1, "flux-R: rank 1 (foo1) missing resources: core3\n"),
    (("-r", "1", "-c", "0-7", "-g", "1", "-H", "foo1"), 0,
     "flux-R: rank 1 (foo1) has extra resources: core[4-7],gpu1\n"),
])
def test_verify(flux, second, code, message):
    expected = R(flux, "encode", "-r", "1-10", "-c", "0-3", "-H", "foo[1-10]")
    result = as_flux(flux, "R", "verify", input=expected + R(flux, "encode", *second))
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", message)


def test_set_property(flux):
    out = R(flux, "set-property", "xx:0", "yy:1", input=R(flux, "set-property", "all",
                                                           input=R(flux, "encode", "-r", "0-1", "-H", "foo[0-1]")))
    assert json.loads(out)["execution"]["properties"] == {"all": "0-1", "xx": "0", "yy": "1"}
    result = as_flux(flux, "R", "set-property", "foo:1-2", input=R(flux, "encode", "-r", "0-1"))
    assert (result.exit_code, result.stderr) == (
        1, "flux-R: failed to assign properties: rank 2 not found in target resource list\n")


def test_parse_config(flux, tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    conf.mkdir()
    toml = conf / "resource.toml"
    toml.write_text('[[resource.config]]\nhosts = "foo[0-2]"\ncores = "0-1"\n'
                    '[[resource.config]]\nhosts = "foo2"\ngpus = "0"\n'
                    '[[resource.config]]\nhosts = "foo0"\nproperties = ["login"]\n')
    assert R(flux, "parse-config", conf) == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}, '
        '{"rank": "2", "children": {"core": "0-1", "gpu": "0"}}], "starttime": 0.0, "expiration": 0.0, '
        '"nodelist": ["foo[0-2]"], "properties": {"login": "0"}}}\n')
    for text, message in (
        ('[[resource.config]]\n', "Config file error: config[0]: Object item not present: hosts"),
        ('[resource]\nnoverify = true\n', "Config file error: resource.config or resource.path must be defined"),
        ('[[resource.config]]\nhosts = "foo"\ncores = "0-1"\n[[resource.config]]\nhosts = ""\ncores = "0-3"\n',
         "Config file error: config[1]: empty hostlist specified"),
        ('[[resource.config]]\nhosts = "foo[p]"\ncores = "0-1"\n',
         "Config file error: config[0]: invalid hostlist 'foo[p]'"),
        ('[[resource.config]]\nhosts = "foo0"\ncores = "0-"\n',
         "Config file error: config[0]: invalid idset cores='0-'"),
        ('[[resource.config]]\nhosts = "foo0"\ngpus = "2,1"\n',
         "Config file error: config[0]: invalid idset gpus='2,1'"),
        ('[[resource.config]]\nhosts = "foo[0-10]"\ncores = "0-1"\n[[resource.config]]\nhosts = "foo11"\n',
         "Config file error: resource.config: foo11 assigned no resources"),
        ('[[resource.config]]\nhosts = "foo11"\ncores = "0-3"\njunk = 5\n',
         "Config file error: config[0]: 1 object item(s) left unpacked: junk"),
        ('[[resource.config]]\nhosts = "foo1"\ncores = "0"\nproperties = ["de^bug"]\n',
         'Config file error: config[0]: invalid property ""de^bug""'),
        ('[[resource.config]]\nhosts = "foo1"\ncores = "0"\nproperties = [1]\n',
         'Config file error: config[0]: invalid property "1"'),
        ('[[resource.config]]\nhosts = "foo1"\ncores = "0"\nproperties = "foo"\n',
         "Config file error: config[0]: properties must be an array"),
    ):
        toml.write_text(text)
        result = as_flux(flux, "R", "parse-config", conf)
        assert (result.exit_code, result.stderr) == (1, f"flux-R: {message}\n"), text
    monkeypatch.chdir(tmp_path)
    toml.write_text('resource.path = "R.path"\n')
    (tmp_path / "R.path").write_text(R(flux, "encode", "-r", "0-1"))
    assert short(flux, R(flux, "parse-config", conf)) == "rank[0-1]/core0"
    (tmp_path / "R.path").unlink()
    result = as_flux(flux, "R", "parse-config", conf)
    assert (result.exit_code, result.stderr) == (
        1, "flux-R: R.path: unable to open R.path: No such file or directory\n")
    (tmp_path / "sched.json").write_text('{"sched": true}')
    toml.write_text('resource.scheduling = "sched.json"\n[[resource.config]]\nhosts = "foo"\ncores = "0"\n')
    assert json.loads(R(flux, "parse-config", conf))["scheduling"] == {"sched": True}


def test_encode_xml(flux, tmp_path):
    xml = tmp_path / "topo.xml"
    xml.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<topology><object type="Machine">'
        + '<object type="Core"><object type="PU"/></object>' * 4
        + '<object type="PCIDev"><object type="OSDev" name="cuda0"><info name="Backend" value="CUDA"/></object>'
          '<object type="OSDev" name="opencl0d0"><info name="Backend" value="OpenCL"/></object></object>'
        + '<object type="PCIDev"><object type="OSDev" name="cuda1"><info name="Backend" value="CUDA"/></object>'
          '</object></object></topology>\n')
    assert short(flux, R(flux, "encode", "--xml", xml, "-r", "0-1")) == "rank[0-1]/core[0-3],gpu[0-1]"
