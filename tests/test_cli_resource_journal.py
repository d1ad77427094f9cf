"""resource undrain -f/-u/REASON, resource reload, resource eventlog (the resource journal).

Expected events and words follow flux-core's resource module (drain.c,
inventory.c, monitor.c) and t2311/t2355/t2310.
"""

import json
import re

import pytest

from conftest import Flux


def kvs_events(flux):
    return [json.loads(line) for line in flux.out("kvs", "get", "resource.eventlog").splitlines() if line]


def test_undrain_modes(flux):
    flux("resource", "drain", "1", "bad")
    result = flux.fails("resource", "undrain", "1-2")
    assert result.stderr == "flux-lite resource: ERROR: rank 2 not drained\n"
    result = flux.fails("resource", "undrain", "2-3")
    assert result.stderr == "flux-lite resource: ERROR: ranks 2-3 not drained\n"
    flux("resource", "undrain", "--force", "1-2")
    assert kvs_events(flux)[-1]["context"] == {"idset": "1-2", "nodelist": "node[1-2]", "overwrite": 1}
    flux("resource", "undrain", "--force", "0-1")  # nothing drained: no error with --force
    flux("resource", "drain", "1")
    flux("resource", "undrain", "-ff", "1-2", "reason", "for", "undrain")
    assert kvs_events(flux)[-1]["context"] == {"idset": "1-2", "nodelist": "node[1-2]", "overwrite": 2,
                                               "reason": "reason for undrain"}
    flux("resource", "undrain", "-u", "3")
    assert kvs_events(flux)[-1]["context"]["overwrite"] == 0
    result = flux.fails("resource", "undrain", "-f", "-u", "3")
    assert result.stderr == "flux-lite resource: ERROR: Only one of --force and --update may be specified\n"
    assert flux.out("resource", "status", "-no", "{state} {ranks}") == "avail 0-3\n"


def test_reload(flux, tmp_path):
    R = tmp_path / "R"
    R.write_text(flux.out("R", "encode", "-r", "0-1", "-c", "0-1", "-H", "fake[0-1]"))
    result = flux.fails("resource", "reload", R)
    assert result.stderr == "flux-lite resource: ERROR: resources are busy (unload scheduler?)\n"
    flux("module", "remove", "sched-simple")
    flux("resource", "reload", R)
    assert kvs_events(flux)[-1]["name"] == "resource-define"
    assert kvs_events(flux)[-1]["context"] == {"method": "reload"}
    flux("module", "load", "sched-simple")
    assert flux.out("resource", "list", "-no", "{state} {nnodes} {ncores} {nodelist}") == (
        "free 2 4 fake[0-1]\nallocated 0 0 \ndown 0 0 \n")
    flux("module", "remove", "sched-simple")
    # the size is the brokers' number: 4 here, even after R had 2 ranks
    R.write_text(flux.out("R", "encode", "-r", "0-3", "-g", "0", "-H", "fake[0-3]"))
    flux("resource", "reload", R)
    R.write_text(flux.out("R", "encode", "-r", "0-4"))
    result = flux.fails("resource", "reload", R)
    assert result.stderr == ("flux-lite resource: ERROR: resource object contains ranks execeeding "
                             "size=4 (override with -f))\n")
    result = flux.fails("resource", "reload", tmp_path / "noexist")
    assert result.stderr == (f"flux-lite resource: ERROR: {tmp_path}/noexist:-1 unable to open "
                             f"{tmp_path}/noexist: No such file or directory\n")
    (tmp_path / "empty").mkdir()
    result = flux.fails("resource", "reload", "-x", tmp_path / "empty")
    assert result.stderr == (f"flux-lite resource: ERROR: {tmp_path}/empty: invalid directory: "
                             "no XML input files found\n")
    xml = tmp_path / "xml"
    xml.mkdir()
    for rank in (0, 1):
        (xml / f"{rank}.xml").write_text('<topology><object type="Machine">'
                                         + '<object type="Core"/>' * 3 + '</object></topology>')
    flux("resource", "reload", "-x", xml)
    assert flux.out("R", "decode", "--short", input=flux.out("kvs", "get", "resource.R")) == "rank[0-1]/core[0-2]\n"


def test_eventlog(flux, utc):
    flux("resource", "drain", "1", "bad")
    flux("resource", "undrain", "1")
    assert flux.out("resource", "eventlog") == (
        '1767225600.000000 restart ranks="0-3" online="" nodelist="node[0-3]"\n'
        '1767225600.000000 resource-define method="dynamic-discovery"\n'
        '1767225600.000000 online idset="0-3"\n'
        '1767225600.000000 drain idset="1" nodelist="node1" reason="bad" overwrite=0\n'
        '1767225600.000000 undrain idset="1" nodelist="node1" overwrite=0\n')
    # restart and online are the journal's, not the KVS's
    assert [e["name"] for e in kvs_events(flux)] == ["resource-define", "drain", "undrain"]
    assert flux.out("resource", "eventlog", "-f", "json", "--wait=resource-define").splitlines()[-1] == (
        '{"timestamp":1767225600.0,"name":"resource-define","context":{"method":"dynamic-discovery"}}')
    assert flux.out("resource", "eventlog", "-H", "-i", "node2") == (
        '[Jan01 00:00] restart ranks="0-3" online="" nodelist="node[0-3]"\n'
        '[  +0.000000] online idset="0-3"\n')
    assert flux.out("resource", "eventlog", "-w", "drain", "-m", 'idset="1"', "-m", "reason=bad").splitlines()[-1] \
        .endswith('drain idset="1" nodelist="node1" reason="bad" overwrite=0')
    assert flux.out("resource", "eventlog", "--time-format=offset").splitlines()[0].startswith("0.000000 restart")
    for bad, message in (("foo", "invalid targets foo: foo not found in hostlist"),
                         ("42", "invalid targets 42: rank 42 out of range")):
        assert flux.fails("resource", "eventlog", f"--include={bad}").stderr \
            == f"flux-lite resource: ERROR: {message}\n"
    assert flux.fails("resource", "eventlog", "-m", "noequals", code=2).stderr.endswith(
        "invalid KEY=VAL argument: 'noequals' (missing '=')\n")


@pytest.mark.parametrize("timeout", [None, "1s"])
def test_eventlog_wait_for_what_cannot_come(flux, timeout):
    args = ("--timeout", timeout) if timeout else ()
    result = flux.fails("resource", "eventlog", "--wait=drain", "-m", "reason=nonexistent", *args)
    assert result.stderr == ("flux-lite resource: ERROR: timeout\n" if timeout else
                             "flux-lite resource: ERROR: event 'drain' cannot arrive: nothing left to happen under "
                             "the virtual clock (advance it or use --timeout)\n")


def test_module_reload_resource(flux):
    flux("module", "remove", "sched-simple")
    flux("resource", "drain", "0", "testing")
    flux("module", "remove", "resource")
    flux("module", "load", "resource", "noverify", "notruncate")
    # the reloaded module keeps the drain state and posts resource-define method=kvs
    assert [e["name"] for e in kvs_events(flux)] == ["resource-define", "drain", "resource-define"]
    assert kvs_events(flux)[-1]["context"] == {"method": "kvs"}
    # the journal leaves out the resource-define events of earlier loads, as Flux's reslog does
    assert [line.split()[1] for line in flux.out("resource", "eventlog").splitlines()] == [
        "drain", "restart", "resource-define", "online"]
    assert flux.out("resource", "status", "-no", "{state} {ranks}", "-s", "drain") == "draining \ndrained 0\n"
    result = flux.fails("module", "reload", "resource", "badoption")
    assert result.stderr == "flux-lite module: ERROR: resource: unknown option: badoption\n"


@pytest.mark.parametrize("toml, message", [
    ('[resource.verify]\ndefault = "invalid-mode"\n', "verify.default: unknown verify mode 'invalid-mode'"),
    ('[resource.verify]\nmemory = "strict"\n', "verify: unsupported resource type: memory"),
    ('[resource.verify]\ncores = "strict"\n', "verify: unsupported resource type: cores"),
    ('[resource]\nverify = "strict"\n', "verify must be a table or boolean"),
    ('[resource]\nverify = ["core", "gpu"]\n', "verify must be a table or boolean"),
    ('[resource.verify]\ncore = true\n', "verify.core mode must be a string"),
    ('[resource.verify]\ndefault = 1\n', "verify.default mode must be a string"),
    ('[resource]\nhistory = "bad"\n', "invalid history time"),
    ('[resource]\nnoverify = "yes"\n', "error parsing [resource] configuration: Expected true or false, got string"),
])
def test_resource_config_checks(flux, toml, message):
    result = flux.fails("config", "load", input=toml)
    assert result.stderr.endswith(f"{message}\n"), result.stderr


def test_resource_verify_config_loads(flux):
    for toml in ('[resource.verify]\ncore = "allow-missing"\ngpu = "ignore"\n', "[resource]\nverify = true\n",
                 '[resource]\nnoverify = true\nhistory = "1d"\njournal-max = 10\n'):
        flux("config", "load", input=toml)
        flux("module", "reload", "resource")
    assert flux.out("resource", "status", "-no", "{state} {ranks}") == "avail 0-3\n"


def _reason(flux):
    return flux.out("resource", "drain", "-no", "{ranks} {reason}")


@pytest.mark.parametrize("toml, reason", [
    # without [resource.verify]: cores may be more than R says, gpus unchecked, hostname strict
    ("", "0 rank 0 (node0) missing resources: core[2-1047]\n"),
    ('[resource.verify]\ncore = "allow-missing"\ngpu = "ignore"\n', ""),
    ("[resource]\nverify = true\n", "0 rank 0 (node0) missing resources: core[2-1047],gpu[0-127]\n"),
    ("[resource.verify]\n", "0 rank 0 (node0) missing resources: core[2-1047],gpu[0-127]\n"),
    ("[resource]\nverify = false\n", ""),
    ('[resource]\nnoverify = true\n[resource.verify]\ndefault = "strict"\n', ""),
    ('[resource.verify]\ndefault = "ignore"\ngpu = "strict"\n', "0 rank 0 (node0) missing resources: gpu[0-127]\n"),
    ('[resource.verify]\ncore = "allow-extra"\ngpu = "allow-missing"\n',
     "0 rank 0 (node0) missing resources: core[2-1047]\n"),
])
def test_module_load_verifies_rank0_against_R(flux, toml, reason):
    # Flux's resource module checks its node's resources against R when it
    # loads and drains itself on a mismatch (t2318); flux-lite's nodes have
    # the resources the instance was created with (here 2 cores, no gpu)
    R = flux.out("R", "encode", "-r", "0-3", "-c", "0-1047", "-g", "0-127", "-H", "node[0-3]")
    flux("kvs", "put", f"resource.R={R}")
    flux("config", "load", input=toml)
    flux("module", "reload", "-f", "resource")
    assert _reason(flux) == reason
    if reason:
        # the drain is posted before the module defines R; the log says why
        assert [e["name"] for e in kvs_events(flux)[-2:]] == ["drain", "resource-define"]
        assert kvs_events(flux)[-2]["context"] == {"idset": "0", "nodelist": "node0", "reason": reason[2:-1]}
        assert f"resource.err[0]: draining: {reason[2:-1]}" in flux.out("dmesg")
    # the module argument noverify skips the check
    flux("resource", "undrain", "-f", "0")
    flux("module", "reload", "-f", "resource", "noverify")
    assert _reason(flux) == ""


def test_module_load_verify_hostname_and_extra(flux):
    R = json.loads(flux.out("kvs", "get", "resource.R"))
    R["execution"]["nodelist"] = ["wronghost,node[1-3]"]
    flux("kvs", "put", f"resource.R={json.dumps(R)}")
    flux("module", "reload", "resource")
    assert _reason(flux) == "0 rank 0 got hostname 'node0', expected 'wronghost'\n"
    # a rank drained already keeps its reason, the event is posted all the same
    flux("config", "load", input='[resource.verify]\nhostname = "strict"\ncore = "strict"\n')
    flux("module", "reload", "resource")
    assert [e["name"] for e in kvs_events(flux)[-2:]] == ["drain", "resource-define"]
    assert _reason(flux) == "0 rank 0 got hostname 'node0', expected 'wronghost'\n"
    flux("resource", "undrain", "0")
    flux("config", "load", input='[resource.verify]\nhostname = "ignore"\n')
    flux("module", "reload", "resource")
    assert _reason(flux) == ""
    # fewer cores in R than the node has: extra resources, drained only when strict or allow-missing
    R = flux.out("R", "encode", "-r", "0-3", "-c", "0", "-H", "node[0-3]")
    flux("kvs", "put", f"resource.R={R}")
    for mode, reason in (("strict", "0 rank 0 (node0) has extra resources: core1\n"), ("allow-extra", ""),
                         ("allow-missing", "0 rank 0 (node0) has extra resources: core1\n"), ("ignore", "")):
        flux("config", "load", input=f'[resource.verify]\ncore = "{mode}"\n')
        flux("module", "reload", "resource")
        assert _reason(flux) == reason, mode
        flux("resource", "undrain", "-f", "0")


def test_module_load_undrains_excluded(flux):
    flux("resource", "drain", "0", "bad")
    flux("config", "load", input='[resource]\nexclude = "0"\n')
    flux("module", "reload", "resource", "noverify")
    assert [(e["name"], e["context"]) for e in kvs_events(flux)[-2:]] == [
        ("undrain", {"idset": "0", "nodelist": "node0"}), ("resource-define", {"method": "kvs"})]
    assert flux.out("resource", "status", "-no", "{state} {ranks}") == "avail 1-3\nexclude 0\n"


def test_resource_eventlog_put_by_the_owner_is_replayed_at_module_load(flux_factory, tmp_path):
    # Flux's tests rewrite resource.eventlog (`kvs put --raw`), then load the
    # resource module: it replays the drains, by host name when the event has one
    flux = flux_factory("--test-size=4", "--test-hosts=fake[0-3]")
    legacy = (
        '{"timestamp":1713905772.5,"name":"resource-init","context":{"restart":true,"drain":{},"online":"",'
        '"exclude":""}}\n'
        '{"timestamp":1713906350.9,"name":"drain","context":{"idset":"2","reason":"smurfs","overwrite":0}}\n'
        '{"timestamp":1713906369.9,"name":"resource-init","context":{"restart":true,"drain":{"2":'
        '{"timestamp":1713906351.0,"reason":"underwear"}},"online":"","exclude":""}}\n')
    flux("kvs", "put", "--raw", "resource.eventlog=-", input=legacy)
    flux("module", "remove", "resource")
    # (as t2311 does: the checkpoint the removal wrote is newer than these events)
    flux("kvs", "unlink", "-f", "checkpoint.resource")
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-n", "-o", "{ranks} {reason}") == "2 underwear\n"
    # hosts win over ranks; unknown ones are left out
    remapped = ('{"timestamp":1713906350.9,"name":"drain","context":{"idset":"0-1","nodelist":"fake[1-2],fake42",'
                '"reason":"uvula","overwrite":0}}\n')
    flux("kvs", "put", "--raw", "resource.eventlog=-", input=remapped)
    flux("kvs", "unlink", "-f", "checkpoint.resource")
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-n", "-o", "{ranks} {nodelist} {reason}") == "1-2 fake[1-2] uvula\n"
    # the module goes on appending to it as an eventlog
    flux("resource", "undrain", "1")
    assert [line.split()[1] for line in flux.out("kvs", "eventlog", "get", "resource.eventlog").splitlines()] == [
        "drain", "resource-define", "undrain"]
    # a malformed entry fails the load; the owner may remove the eventlog
    flux("kvs", "put", "--raw", "resource.eventlog=-", input="{}\n")
    assert flux.fails("module", "load", "resource", "noverify").stderr.startswith(
        "flux-lite module: ERROR: damaged KVS key resource.eventlog")
    flux("kvs", "unlink", "resource.eventlog")
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-n") == ""


def test_module_remove_checkpoints_drain_state(flux):
    # Flux's resource module writes checkpoint.resource when it unloads:
    # ranks grouped by (whole second) drain time and reason, "" for no reason
    flux("resource", "drain", "1", "r1")
    flux("resource", "drain", "2-3", "r23")
    flux("resource", "drain", "0")
    flux.advance("10s")
    flux("module", "remove", "resource")
    ckpt = json.loads(flux.out("kvs", "get", "checkpoint.resource"))
    now = ckpt["timestamp"]
    stamp = float(round(now - 10))
    assert ckpt["drain_state"] == {
        "0": {"timestamp": stamp, "reason": "", "nodelist": "node0"},
        "1": {"timestamp": stamp, "reason": "r1", "nodelist": "node1"},
        "2-3": {"timestamp": stamp, "reason": "r23", "nodelist": "node[2-3]"}}
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}") == "0 \n1 r1\n2-3 r23\n"
    # the default history (90 days) keeps the drain events
    assert [e["name"] for e in kvs_events(flux)].count("drain") == 3


@pytest.mark.parametrize("history, args, drains", [
    ('"0"', (), 0), ('"inf"', (), 3), ('"0"', ("notruncate",), 3), ('"5s"', (), 1)])
def test_module_load_truncates_to_history(flux, history, args, drains):
    flux("resource", "drain", "1-2", "old")
    flux.advance("10s")
    flux("resource", "drain", "3", "recent")
    flux.advance("1s")
    flux("config", "load", input=f"[resource]\nhistory = {history}\n")
    flux("module", "reload", "resource", "noverify", *args)
    flux.advance("1s")
    flux("module", "reload", "resource", "noverify", *args)
    # the state survives, the eventlog keeps what is newer than the checkpoint or within history
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}") == "1-2 old\n3 recent\n"
    assert [e["name"] for e in kvs_events(flux)].count("drain") == {0: 0, 3: 2, 1: 1}[drains]


def test_module_load_replays_eventlog_after_checkpoint(flux_factory):
    flux = flux_factory("--test-size=4", "--test-hosts=fake[0-3]")
    flux("resource", "drain", "1", "test_reason_1")
    flux("module", "remove", "resource")
    # events newer than the checkpoint are replayed, hosts before ranks; unknown hosts left out
    flux("kvs", "put", "--raw", "resource.eventlog=-", input=(
        '{"timestamp":4000000000.0,"name":"drain","context":{"idset":"0","nodelist":"fake2",'
        '"reason":"test_reason_2","overwrite":0}}\n'
        '{"timestamp":4000000001.0,"name":"drain","context":{"idset":"0","nodelist":"fake13",'
        '"reason":"test_reason_13","overwrite":0}}\n'
        '{"timestamp":1.0,"name":"drain","context":{"idset":"3","nodelist":"fake3","reason":"old","overwrite":0}}\n'))
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-no", "{nodelist},{reason}") == "fake1,test_reason_1\nfake2,test_reason_2\n"
    flux("module", "remove", "resource")
    # a checkpoint that is not one fails the load; the owner may remove it
    flux("kvs", "put", "checkpoint.resource={\"timestamp\": 1}")
    assert flux.fails("module", "load", "resource", "noverify").stderr.startswith(
        "flux-lite module: ERROR: damaged KVS key checkpoint.resource")
    flux("kvs", "unlink", "checkpoint.resource")
    flux("kvs", "unlink", "resource.eventlog")
    flux("module", "load", "resource", "noverify")
    assert flux.out("resource", "drain", "-n") == ""


def test_journal_monitor_force_up_and_journal_max(flux):
    flux("module", "reload", "resource", "monitor-force-up", "notruncate")
    events = [json.loads(line) for line in flux.out("resource", "eventlog", "-f", "json").splitlines()]
    assert [(e["name"], e["context"]) for e in events] == [
        ("restart", {"ranks": "0-3", "online": "0-3", "nodelist": "node[0-3]"}),
        ("resource-define", {"method": "kvs"})]
    flux("resource", "drain", "0")
    flux("resource", "undrain", "0")
    flux.advance("1s")
    flux("resource", "drain", "1")
    # journal-max: the oldest entries give way to a truncate event stamped as the last of them
    full = [json.loads(line) for line in flux.out("resource", "eventlog", "-f", "json").splitlines()]
    assert len(full) == 5
    flux("config", "load", input="resource.journal-max=3\n")
    events = [json.loads(line) for line in flux.out("resource", "eventlog", "-f", "json").splitlines()]
    assert events == [{"timestamp": full[2]["timestamp"], "name": "truncate"}] + full[3:]
    flux("module", "reload", "resource")
    events = [json.loads(line) for line in flux.out("resource", "eventlog", "-f", "json").splitlines()]
    assert [e["name"] for e in events] == ["truncate", "resource-define", "online"]
    assert events[1]["timestamp"] == events[0]["timestamp"]


def test_start_with_resource_path_verifies_every_rank(flux_factory, tmp_path):
    # [resource] path: R as the file has it (t2315); each broker's resource
    # module checks its node (here the --test-* options) against it at start
    R = tmp_path / "R.json"
    R.write_text('{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1048"}}], '
                 '"starttime": 0.0, "expiration": 0.0, "nodelist": ["node[0-1]"]}}')
    sched = tmp_path / "sched.json"
    sched.write_text('{"test": 1}')
    flux = flux_factory("--test-size=3", "--test-cores=2",
                        config=f"resource:\n  path: {R}\n  scheduling: {sched}\n", name="a")
    assert json.loads(flux.out("kvs", "get", "resource.R")) == {
        "version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1048"}}],
                                    "starttime": 0.0, "expiration": 0.0, "nodelist": ["node[0-1]"]},
        "scheduling": {"test": 1}}
    assert flux.out("resource", "drain", "-no", "{ranks} {reason}") == (
        "0 rank 0 (node0) missing resources: core[2-1048]\n"
        "1 rank 1 (node1) missing resources: core[2-1048]\n")
    # rank 2 is drained too (R has nothing of it to list), under its broker's name
    assert kvs_events(flux)[-1]["context"] == {"idset": "2", "nodelist": "node2",
                                               "reason": "rank 2 not found in expected ranks", "overwrite": 0}
    assert kvs_events(flux)[0] == {"timestamp": kvs_events(flux)[0]["timestamp"], "name": "resource-define",
                                   "context": {"method": "configuration"}}
    # noverify: nothing drained; a file that is not there fails the start with Flux's words
    flux = flux_factory("--test-size=2", config=f"resource:\n  path: {R}\n  noverify: true\n", name="b")
    assert flux.out("resource", "drain", "-n") == ""
    for conf, message in ((f"resource:\n  path: {R}\n  scheduling: {tmp_path}/nosuch\n",
                           f"error loading resource.scheduling: unable to open {tmp_path}/nosuch: "
                           "No such file or directory on line -1"),
                          (f"resource:\n  scheduling: {sched}\n",
                           "resource.scheduling requires resource.path or [resource.config]")):
        (tmp_path / "c.yaml").write_text(conf)
        result = Flux(tmp_path / "c").fails("start", "--clock=virtual", "--config", tmp_path / "c.yaml")
        assert result.stderr.endswith(f"{message}\n"), result.stderr
    (tmp_path / "bad.json").write_text('{"version": 42, "execution": {"R_lite": []}}')
    (tmp_path / "c.yaml").write_text(f"resource:\n  path: {tmp_path}/bad.json\n")
    result = Flux(tmp_path / "c").fails("start", "--clock=virtual", "--config", tmp_path / "c.yaml")
    assert result.stderr.endswith("error parsing R: invalid version=42\n"), result.stderr
    for exclude, message in (("0-4", "exclude set 0-4 is out of range"),
                             ("nosuchhost", "error decoding exclude set nosuchhost: invalid targets: "
                                            "invalid hosts: nosuchhost")):
        (tmp_path / "c.yaml").write_text(f"resource:\n  path: {R}\n  exclude: {exclude}\n")
        result = Flux(tmp_path / "c").fails("start", "--clock=virtual", "--config", tmp_path / "c.yaml")
        assert result.stderr.endswith(f"{message}\n"), result.stderr


def test_start_log_filename(tmp_path):
    # -S log-filename=FILE: the instance log in the broker's log-filename form; a
    # creation the resource module refuses is logged there as its error
    R = tmp_path / "R.json"
    R.write_text('{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1048"}}], '
                 '"nodelist": ["node[0-1]"]}}')
    (tmp_path / "c.yaml").write_text(f"resource:\n  path: {R}\n")
    log = tmp_path / "logfile"
    Flux(tmp_path / "a")("start", "--clock=virtual", "--test-size=3", "--config", tmp_path / "c.yaml",
                         f"-Slog-filename={log}")
    lines = log.read_text().splitlines()
    assert [line.split(" ", 5)[5] for line in lines if "draining" in line] == [
        "resource.err[0]: draining: rank 0 (node0) missing resources: core[4-1048]",
        "resource.err[0]: draining: rank 1 (node1) missing resources: core[4-1048]",
        "resource.err[0]: draining: rank 2 not found in expected ranks"]
    assert re.fullmatch(r"[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d\.\d{6} \S+ \d{4} \S+\.\w+\[0\]: .*", lines[0])
    (tmp_path / "bad.json").write_text('{"version": 42, "execution": {"R_lite": []}}')
    (tmp_path / "c.yaml").write_text(f"resource:\n  path: {tmp_path}/bad.json\n")
    Flux(tmp_path / "b").fails("start", "--clock=virtual", "--config", tmp_path / "c.yaml", f"-Slog-filename={log}")
    assert log.read_text().splitlines()[-1].split(" ", 5)[5] == "resource.err[0]: error parsing R: invalid version=42"
    result = Flux(tmp_path / "c").fails("start", "-Sfoo=1")
    assert result.stderr == ("flux-lite start: ERROR: -S foo=1: the only broker attribute flux-lite sets "
                             "is log-filename=FILE\n")
