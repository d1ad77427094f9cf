"""Fluxion's resource graph (flux_lite/sched/fluxion_graph.py) through its API."""

import json
from errno import EBUSY, EINVAL, ENODEV, ENOENT

import pytest

from flux_lite.errors import FluxLiteError
from flux_lite.formats.rset import Rset
from flux_lite.sched.fluxion_graph import ResourceGraph, make_policy, node_id

NOW = 1000


def jobspec(nslots=1, cores=1, nnodes=0, duration=0.0, exclusive=False, gpus=0):
    slot_with = [{"type": "core", "count": cores}]
    if gpus:
        slot_with.append({"type": "gpu", "count": gpus})
    res = {"type": "slot", "count": nslots, "label": "task", "with": slot_with}
    if nnodes:
        res = {"type": "node", "count": nnodes, "exclusive": exclusive, "with": [res]}
    return {"version": 1, "resources": [res],
            "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
            "attributes": {"system": {"duration": duration}}}


def graph(hosts=("node0", "node1", "node2", "node3"), cores=4, gpus=0, **options):
    return ResourceGraph.create(Rset.from_config(list(hosts), cores, gpus), options, NOW, 0)


def placed(m):
    """[(rank idset, children)] of a match's R."""
    return [(e["rank"], e["children"]) for e in m.R["execution"]["R_lite"]]


def errno_of(fn, *args, **kw):
    with pytest.raises(FluxLiteError) as info:
        fn(*args, **kw)
    return info.value.errno, str(info.value)


def test_node_id_is_the_hostname_suffix():
    assert [node_id(h) for h in ("sierra3683", "node07", "login", "a1b22")] == [3683, 7, -1, 22]


SIERRA = ("sierra3682", "sierra3179", "sierra3683", "sierra3178")  # ranks 0..3


@pytest.mark.parametrize("policy, expected", [
    # by hostname number, not rank: hinodex takes 3683 (rank 2), then 3682 (rank 0),
    # then a two-node job the remaining two; lonodex the other way round
    ("hinodex", ["2", "0", "1,3"]),
    ("lonodex", ["3", "1", "0,2"]),
])
def test_nodex_policies_place_by_hostname_number_on_whole_nodes(policy, expected):
    g = graph(SIERRA, cores=44, gpus=4, policy=policy)
    ranks = []
    for jobid, spec in enumerate([jobspec(), jobspec(), jobspec(nslots=2, nnodes=2)], 1):
        m = g.match("allocate", jobid, spec, NOW)
        assert m.status == "ALLOCATED"
        (rank, children), = placed(m)
        assert children == {"core": "0-43", "gpu": "0-3"}  # the whole node
        ranks.append(rank)
    assert ranks == expected


def test_lonode_and_hinode_fill_a_node_first_without_taking_it_whole():
    g = graph(SIERRA, policy="lonode")
    assert placed(g.match("allocate", 1, jobspec(nslots=2), NOW)) == [("3", {"core": "0-1"})]
    g = graph(SIERRA, policy="hinode")
    assert placed(g.match("allocate", 1, jobspec(nslots=2), NOW)) == [("2", {"core": "2-3"})]


def test_low_spreads_slots_over_nodes_by_their_cores_ids():
    # not node-centric: every node's core 0 scores alike, so slots spread
    g = graph(policy="low")
    assert placed(g.match("allocate", 1, jobspec(nslots=2), NOW)) == [("0-1", {"core": "0"})]
    assert placed(g.match("allocate", 2, jobspec(nslots=1), NOW)) == [("2", {"core": "0"})]


def test_first_prefers_never_used_nodes_then_the_most_free():
    g = graph(("n0", "n1"), cores=4, policy="first")
    order = [placed(g.match("allocate", j, jobspec(), NOW))[0] for j in range(1, 5)]
    # the highest rank first; then the one never used; then by free cores, highest rank first
    assert order == [("1", {"core": "3"}), ("0", {"core": "3"}), ("1", {"core": "2"}), ("0", {"core": "2"})]


def test_firstnodex_gives_whole_nodes():
    g = graph(("n0", "n1"), cores=4, policy="firstnodex")
    assert placed(g.match("allocate", 1, jobspec(), NOW)) == [("1", {"core": "0-3"})]


def test_custom_policy_and_refused_ones():
    p = make_policy("policy=high node_centric=true node_exclusive=true stop_on_1_matches=true")
    assert (p.high, p.node_centric, p.node_exclusive, p.first) == (True, True, True, True)
    with pytest.raises(ValueError, match=r"^Unknown match policy \(bogus\)! $"):
        make_policy("bogus")
    with pytest.raises(ValueError, match=r"^Unknown match policy \(set_stop_on_1_matches=true policy=low\)! $"):
        make_policy("set_stop_on_1_matches=true policy=low")
    with pytest.raises(ValueError, match=r"^match policy \(locality\) is not supported by flux-lite$"):
        make_policy("locality")


def test_durations_round_up_and_zero_books_the_span():
    g = graph()
    m = g.match("allocate", 1, jobspec(duration=10.2), NOW)
    assert (m.R["execution"]["starttime"], m.R["execution"]["expiration"]) == (1000, 1011)
    assert isinstance(m.R["execution"]["starttime"], int)
    m = g.match("allocate", 2, jobspec(), NOW + 0.7)
    assert m.R["execution"]["expiration"] == NOW + 3153600000  # 100 years from the load
    assert errno_of(g.match, "allocate", 3, jobspec(duration=3153600001.0), NOW)[0] == EINVAL


def test_reserve_finds_the_earliest_window_on_specific_cores():
    g = graph(("n0",), cores=4, policy="low")
    g.match("allocate", 1, jobspec(nslots=3, duration=100), NOW)
    m = g.match("allocate_orelse_reserve", 2, jobspec(nslots=2, duration=50), NOW)
    assert (m.status, m.at) == ("RESERVED", 1100)
    # one core is free now and stays free until the reservation: a job fits
    # there now however long it runs (the reservation takes cores 0-1)
    m = g.match("allocate_orelse_reserve", 3, jobspec(nslots=1, duration=5000), NOW)
    assert (m.status, m.at, placed(m)) == ("ALLOCATED", 1000, [("0", {"core": "3"})])
    assert g.info(2) == ("RESERVED", 1100, 0.0)
    assert g.cancel_reservations() == [2]
    assert errno_of(g.info, 2) == (ENOENT, "No such file or directory")


def test_busy_unsatisfiable_and_without_allocating():
    g = graph(("n0",), cores=4)
    g.match("allocate", 1, jobspec(nslots=4), NOW)
    assert errno_of(g.match, "allocate", 2, jobspec(), NOW)[0] == EBUSY
    assert errno_of(g.match, "allocate_with_satisfiability", 2, jobspec(nslots=5), NOW) == \
        (ENODEV, "Unsatisfiable request")
    assert errno_of(g.match, "satisfiability", 2, jobspec(nslots=5), NOW)[0] == ENODEV
    assert g.match("satisfiability", 2, jobspec(nslots=4), NOW).status == "MATCHED"
    g.cancel(1)
    m = g.match("without_allocating", 7, jobspec(), NOW)
    assert (m.jobid, m.status) == (-1, "MATCHED")
    assert g.jobs == {}


def test_down_nodes_are_left_out_and_unsatisfiable_beyond_the_up_ones():
    g = graph(("n0", "n1"), cores=2)
    g.set_status("/cluster0/n1", "down")
    assert g.status_of("/cluster0/n1/core0") == "down"
    assert errno_of(g.match, "allocate_with_satisfiability", 1, jobspec(nnodes=2, nslots=2), NOW)[0] == ENODEV
    g.set_status("/cluster0/n1", "up")
    assert g.match("allocate", 1, jobspec(nnodes=2, nslots=2), NOW).status == "ALLOCATED"
    assert errno_of(g.set_status, "/cluster0/n9", "down") == \
        (ENOENT, "could not find path '/cluster0/n9' in resource graph")
    assert errno_of(g.set_status, "/cluster0/n1", "sideways") == (EINVAL, "unrecognized status 'sideways'")


def test_update_books_R_same_R_again_is_fine_another_is_not():
    g = graph()
    R = g.match("allocate", 1, jobspec(nnodes=2, nslots=2, duration=60), NOW).R
    g.cancel(1)
    assert g.update(5, R, NOW).status == "ALLOCATED"
    assert g.info(5) == ("ALLOCATED", 1000, 0.0)
    assert g.update(5, json.loads(json.dumps(R)), NOW).status == "ALLOCATED"
    other = g.make_R({3: (1, 0)}, 1000, 1060)
    assert errno_of(g.update, 5, other, NOW)[0] == EINVAL
    # the same cores for another job overlap: refused
    assert errno_of(g.update, 6, R, NOW)[0] == EINVAL


def test_partial_cancel_then_the_rest():
    g = graph()
    R = g.match("allocate", 1, jobspec(nnodes=2, nslots=2), NOW).R
    first = g.make_R({int(R["execution"]["R_lite"][0]["rank"].split(",")[0][0]): (1, 0)}, 0, 0)
    assert g.partial_cancel(1, first) is False
    assert g.partial_cancel(1, R) is True
    assert errno_of(g.partial_cancel, 1, R)[0] == ENOENT


def test_properties_params_and_state_round_trip():
    g = graph(policy="lonodex", **{"load-allowlist": "node,core,gpu"})
    g.set_property("/cluster0/node1", "perf_class", "3")
    assert g.get_property("/cluster0/node1", "perf_class") == "3"
    assert g.properties_of("/cluster0/node1") == {"perf_class": "3"}
    g.remove_property("/cluster0/node1", "perf_class")
    assert g.get_property("/cluster0/node1", "perf_class") is None
    assert g.params() == {"load-format": "rv1exec", "load-allowlist": "node,core,gpu", "policy": "lonodex",
                          "match-format": "rv1_nosched", "subsystems": "containment", "reserve-vtx-vec": 0,
                          "prune-filters": "ALL:core,ALL:node", "update-interval": 0, "traverser": "simple"}
    g.match("allocate_orelse_reserve", 1, jobspec(nnodes=4, nslots=4, duration=30), NOW)
    g.match("allocate_orelse_reserve", 2, jobspec(nnodes=4, nslots=4, duration=30), NOW)
    g2 = ResourceGraph.from_state(json.loads(json.dumps(g.to_state())))
    assert g2.info(2) == ("RESERVED", 1030, 0.0)
    assert g2.paths()[:3] == ["/cluster0", "/cluster0/node0", "/cluster0/node0/core0"]
    assert g2.vertex("/cluster0/node1/core2").uniq_id == 1 + 5 + 1 + 2
    stats = g2.stats()
    assert (stats["V"], stats["E"], stats["by_rank"]) == (21, 20, {"[0-3]": 5})
