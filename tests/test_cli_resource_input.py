"""resource list/info/R/status: --from-stdin, --config-file, -i/--include, --skip-empty, and Flux's lines.

Inputs and expected outputs follow flux-core's t2350-resource-list.t and
t2351-resource-status-input.t (t/flux-resource/{list,status}).
"""

import json

FORMAT = "{state:>10} {properties:<10} {nnodes:>6} {ncores:>8} {ngpus:>8}"

R_ALL = {"version": 1, "execution": {"R_lite": [{"rank": "0-4", "children": {"core": "0-3"}}],
                                     "starttime": 0, "expiration": 0, "nodelist": ["pi[3,0-2,4]"],
                                     "properties": {"8g": "0-2"}}}
NORMAL_NEW = json.dumps({"all": R_ALL, "allocated": None, "down": None})

FLUKE_CONFIG = {"queues": {"batch": {"requires": ["batch"]}, "debug": {"requires": ["debug"]}}}
FLUKE = json.dumps({
    "all": {"version": 1, "execution": {"R_lite": [{"rank": "0-9", "children": {"core": "0-3"}}],
                                        "nodelist": ["fluke[3-12]"],
                                        "properties": {"batch": "0-6", "debug": "7-9"}}},
    "allocated": {"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0-1"}}],
                                              "nodelist": ["fluke4"], "properties": {"batch": "1"}}},
    "down": {"version": 1, "execution": {"R_lite": [{"rank": "5,9", "children": {"core": "0-3"}}],
                                         "nodelist": ["fluke[8,12]"], "properties": {"batch": "5", "debug": "9"}}},
})


def test_list_from_stdin(flux):
    assert flux.out("resource", "list", "-o", FORMAT, "--from-stdin", input=NORMAL_NEW) == (
        "     STATE PROPERTIES NNODES   NCORES    NGPUS\n"
        "      free 8g              3       12        0\n"
        "      free                 2        8        0\n"
        " allocated                 0        0        0\n"
        "      down                 0        0        0\n")
    assert flux.out("resource", "list", "-o", FORMAT, "--skip-empty", "--from-stdin", input=NORMAL_NEW) == (
        "     STATE PROPERTIES NNODES   NCORES    NGPUS\n"
        "      free 8g              3       12        0\n"
        "      free                 2        8        0\n")
    assert flux.out("resource", "info", "--from-stdin", input=NORMAL_NEW) == "5 Nodes, 20 Cores, 0 GPUs\n"
    assert flux.out("resource", "R", "--from-stdin", input=NORMAL_NEW) == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0-4", "children": {"core": "0-3"}}], "starttime": 0.0, '
        '"expiration": 0.0, "nodelist": ["pi[3,0-2,4]"], "properties": {"8g": "0-2"}}}\n')
    assert flux.out("resource", "R", "--from-stdin", "-s", "down", input=NORMAL_NEW) == (
        '{"version": 1, "execution": {"R_lite": [], "starttime": 0.0, "expiration": 0.0}}\n')


def test_list_include(flux):
    # by default --include skips empty lines
    assert flux.out("resource", "list", "-s", "all", "-ni", "0", "--from-stdin", input=NORMAL_NEW) == (
        "       all 8g              1      4     0 pi3\n")
    # two fields, neither state nor a property: one line
    out = flux.out("resource", "list", "-s", "all", "-o", "{nnodes} {ranks}", "-ni", "0,3", "--from-stdin",
                   "--no-skip-empty", input=NORMAL_NEW)
    assert out == "2 0,3\n"
    assert flux.out("resource", "list", "-s", "all", "-o", "{nnodes} {nodelist}", "-ni", "pi[0,3]", "--from-stdin",
                    input=NORMAL_NEW) == "2 pi[3,0]\n"
    # a host the instance does not have is ignored
    assert flux.out("resource", "list", "-s", "all", "-o", "{nnodes} {nodelist}", "-ni", "pi7", "--from-stdin",
                    "--no-skip-empty", input=NORMAL_NEW) == "0 \n"
    assert flux.out("resource", "info", "--from-stdin", "--no-skip-empty", "-i0", input=NORMAL_NEW) \
        == "1 Nodes, 4 Cores, 0 GPUs\n"
    assert json.loads(flux.out("resource", "R", "--from-stdin", "-i0", input=NORMAL_NEW))["execution"]["nodelist"] \
        == ["pi3"]


def test_list_queues_from_config_file(flux, tmp_path):
    conf = tmp_path / "fluke.config"
    conf.write_text(json.dumps(FLUKE_CONFIG))
    args = ("--from-stdin", f"--config-file={conf}")
    assert flux.out("resource", "list", "-o", "{state} {queue} {nnodes}", *args, input=FLUKE) == (
        "STATE QUEUE NNODES\n"
        "free batch 6\n"
        "free debug 2\n"
        "allocated batch 1\n"
        "down batch 1\n"
        "down debug 1\n")
    assert flux.out("resource", "info", "--queue=debug", *args, input=FLUKE) == "3 Nodes, 12 Cores, 0 GPUs\n"
    assert "batch" not in flux.out("resource", "R", "--queue=debug", *args, input=FLUKE)
    result = flux.fails("resource", "list", "--queue=foo", *args, input=FLUKE)
    assert result.stderr.endswith("ERROR: --queue: foo: no such queue\n")
    conf.write_text(json.dumps({"queues": {"batch": {"requires": ["batch"]}, "expedite": {"parent": "notaqueue"}}}))
    result = flux.fails("resource", "list", "--queue=expedite", *args, input=FLUKE)
    assert result.stderr.endswith("ERROR: --queue: queue 'expedite': parent queue 'notaqueue' is not configured\n")


def test_list_one_field_is_one_line(flux):
    doc = {"all": {"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0-3"}}],
                                               "nodelist": ["asp,asp,asp,asp"],
                                               "properties": {"foo": "2-3", "xx": "1-2"}}},
           "allocated": {"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0"}}],
                                                     "nodelist": ["asp"], "properties": {"xx": "1"}}},
           "down": {"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0-3"}}],
                                                "nodelist": ["asp"], "properties": {"xx": "1"}}}}
    assert flux.out("resource", "list", "-no", "{properties}", "--from-stdin", input=json.dumps(doc)) == "foo,xx\n"
    assert flux.out("resource", "list", "-no", "{properties:>5.5+}", "--from-stdin", input=json.dumps(doc)) \
        == "foo,+\n"


DRAIN = json.dumps({
    "R": {"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0-3"}}],
                                      "nodelist": ["foo[1-4]"]}},
    "drain": {"0": {"reason": "bad node", "timestamp": 1607544031.1368911},
              "1": {"reason": "testing drain", "timestamp": 1607544037.2190773}},
    "exclude": "", "torpid": "", "offline": "", "online": "0-3"})


def test_status_from_stdin(flux, utc):
    fmt = "{state:>10} {nnodes:>6} {ranks:<15} {nodelist}"
    assert flux.out("resource", "status", "-o", fmt, "--from-stdin", input=DRAIN) == (
        "     STATE NNODES RANKS           NODELIST\n"
        "     avail      2 2-3             foo[3-4]\n"
        "   drained      2 0-1             foo[1-2]\n")
    assert flux.out("resource", "status", "-n", "-s", "drain", "--from-stdin", "--skip-empty",
                    "-o", "{timestamp!d:%F::<12} {state:>8} {nnodes}", input=DRAIN) == "2020-12-09    drained 2\n"
    assert flux.out("resource", "status", "--include=foo[1,3]", "--from-stdin", "-no", "{nodelist}",
                    input=DRAIN) == "foo[1,3]\n"
    assert flux.out("resource", "status", "--include=1,3", "--from-stdin", "-no", "{nnodes}", input=DRAIN) == "2\n"
    assert flux.out("resource", "status", "--include=foo7", "--from-stdin", "-no", "{nodelist}", input=DRAIN) == ""
    # a rank both excluded and drained counts in both, as Flux's combined lines count it
    example = json.loads(DRAIN)
    example.update(exclude="0", offline="1", online="0,2-3")
    assert flux.out("resource", "status", "--from-stdin", "-o", "{status:>8} {nnodes}",
                    input=json.dumps(example)) == "  STATUS NNODES\n  online 4\n offline 1\n"
    assert flux.out("resource", "status", "--from-stdin", "-o", "{up.ascii:>2} {nnodes}",
                    input=json.dumps(example)) == "UP NNODES\n y 4\n n 1\n"
    assert flux.out("resource", "status", "--from-stdin", "-o", "{state}", input="") == "STATE\n"
