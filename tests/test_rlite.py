"""The one R_lite decoder (rlite_entries, rlite_ranks), the one rank grouping
(group_ranks), the summary writer and the one reading of ``^name``
(property_terms) in flux_lite/formats/rset.py, and Rset's public
constructors (from_nodes, with_nodes): each against the others and Rset."""

import json
import random

import pytest

from flux_lite.errors import RsetError
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import (
    Rset,
    group_ranks,
    nodes_summary,
    property_terms,
    rlite_entries,
    rlite_nodes,
    rlite_ranks,
    rlite_summary,
    rlite_without,
)


def R(*entries, **execution):
    """An R dict of (rank, core[, gpu]) idset strings."""
    R_lite = []
    for ent in entries:
        children = {"core": ent[1]}
        if len(ent) > 2:
            children["gpu"] = ent[2]
        R_lite.append({"rank": ent[0], "children": children})
    return {"version": 1, "execution": dict(R_lite=R_lite, **execution)}


def ids(text):
    return IDset.parse(text)


def test_entries_as_written_with_gpus():
    r = R(("0-1", "0-3", "0"), ("4,7", "0-1"), ("2", "4-7", "1-2"))
    assert rlite_entries(r) == [(ids("0-1"), ids("0-3"), ids("0")), (ids("4,7"), ids("0-1"), IDset()),
                                (ids("2"), ids("4-7"), ids("1-2"))]


def test_ranks_merged_in_rank_order():
    r = R(("3", "0-1"), ("0-1", "0"), ("3", "2-3", "0"), ("1", "1"))
    got = rlite_ranks(rlite_entries(r))
    assert list(got) == [0, 1, 3]  # ascending, whatever the entry order
    assert got == {0: (ids("0"), IDset()), 1: (ids("0-1"), IDset()), 3: (ids("0-3"), ids("0"))}
    assert rlite_nodes(r) == [(rank, c, g) for rank, (c, g) in got.items()]
    # the same merge Rset makes
    rs = Rset.from_dict(r)
    assert [(rank, c, g) for rank, _h, c, g in rs.nodes()] == rlite_nodes(r)


def test_one_entry_of_many_ranks():
    got = rlite_ranks(rlite_entries(R(("2-4,9", "0-7", "0-1"))))
    assert list(got) == [2, 3, 4, 9]
    assert set(got.values()) == {(ids("0-7"), ids("0-1"))}


@pytest.mark.parametrize("r,message", [
    ("not a dict", "R must be a JSON object"),
    ({"execution": {}}, "R: version is required"),
    ({"version": True, "execution": {}}, "R: version must be an integer"),
    ({"version": 2, "execution": {}}, "invalid version=2"),
    ({"version": 1}, "R: execution is required"),
    ({"version": 1, "execution": []}, "R: execution must be an object"),
    ({"version": 1, "execution": {}}, "R: execution.R_lite is required"),
    ({"version": 1, "execution": {"R_lite": {}}}, "R: R_lite must be an array"),
    ({"version": 1, "execution": {"R_lite": ["x"]}}, "R: R_lite[0] must be an object"),
    (R(("0", "0"), (1, "0")), "R: R_lite[1].rank must be an idset string"),
    ({"version": 1, "execution": {"R_lite": [{"rank": "0", "children": "core"}]}},
     "R: R_lite[0].children must be an object"),
    ({"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"gpu": "0"}}]}},
     "R: R_lite[0].children.core must be an idset string"),
    (R(("0", "0", 1)), "R: R_lite[0].children.gpu must be an idset string"),
    (R(("0", "3-1")), "R: R_lite[0]: error parsing range '3-1'"),
    (R(("x", "0")), "R: R_lite[0]: error parsing range 'x'"),
])
def test_malformed_R_one_message_everywhere(r, message):
    """The decoder's error is the one Rset, rlite_nodes and rlite_without give."""
    with pytest.raises(RsetError) as exc:
        rlite_entries(r)
    assert str(exc.value) == message
    for read in (Rset.from_dict, rlite_nodes, lambda r: rlite_without(r, IDset())):
        with pytest.raises(RsetError) as exc:
            read(r)
        assert str(exc.value) == message


def test_duplicate_resources_name_the_entry():
    r = R(("0-2", "0-1"), ("5", "0"), ("2", "1-2"))
    with pytest.raises(RsetError, match=r"^R: R_lite\[2\]: rank 2 has duplicate resources$"):
        rlite_ranks(rlite_entries(r))
    with pytest.raises(RsetError, match=r"R_lite\[2\]: rank 2 has duplicate resources"):
        rlite_nodes(r)
    # gpus count too; disjoint cores and gpus of one rank merge
    with pytest.raises(RsetError, match="rank 0 has duplicate"):
        rlite_nodes(R(("0", "0", "1"), ("0", "1", "1")))
    assert rlite_nodes(R(("0", "0", "1"), ("0", "1", "0"))) == [(0, ids("0-1"), ids("0-1"))]


def test_group_ranks_lists_and_masks():
    a, b = (ids("0-3"), IDset()), (ids("4-7"), ids("0"))
    nodes = [(0, *a), (1, *b), (2, *a), (5, *a), (6, *b)]
    groups = group_ranks(nodes)
    assert list(groups) == [a, b]  # by lowest rank
    assert groups == {a: [0, 2, 5], b: [1, 6]}
    assert group_ranks(nodes, as_mask=True) == {a: 0b100101, b: 0b1000010}
    # bitmasks stand for id sets alike (what the pool groups by)
    assert group_ranks([(0, 0b11, 0), (1, 0b1100, 0), (2, 0b11, 0)], True) == {(0b11, 0): 0b101, (0b1100, 0): 0b10}


def test_groups_are_what_to_dict_writes():
    rnd = random.Random(5)
    for _ in range(200):
        nodes = {}
        for rank in sorted(rnd.sample(range(40), rnd.randint(1, 12))):
            nodes[rank] = (f"n{rank}", rnd.choice([ids("0-3"), ids("0-1"), ids("2,5")]),
                           rnd.choice([IDset(), ids("0"), ids("0-1")]))
        rs = Rset.from_nodes(nodes)
        expect = [(IDset(ranks), c, g)
                  for (c, g), ranks in group_ranks((r, c, g) for r, (_h, c, g) in nodes.items()).items()]
        written = [(ids(e["rank"]), ids(e["children"]["core"]), ids(e["children"].get("gpu", "")))
                   for e in rs.to_dict()["execution"]["R_lite"]]
        assert written == expect
        assert rs.summary() == rlite_summary(expect)
        shuffled = [(r, c, g) for r, (_h, c, g) in nodes.items()]
        rnd.shuffle(shuffled)
        assert nodes_summary(shuffled) == rs.summary()
        # and R_lite decodes back to the same nodes
        assert rlite_nodes(rs.to_dict()) == [(r, c, g) for r, (_h, c, g) in nodes.items()]


def test_summary_format():
    assert rlite_summary([(ids("0-1"), ids("0-3"), IDset())]) == "rank[0-1]/core[0-3]"
    assert rlite_summary([(ids("2"), ids("1"), ids("0")), (ids("4,6"), ids("0"), IDset())]) == \
        "rank2/core1,gpu0 rank[4,6]/core0"


def test_property_terms():
    assert property_terms(["a", "^b", "c", "^d"]) == (["a", "c"], ["b", "d"])
    assert property_terms([]) == ([], [])
    with pytest.raises(RsetError, match="^property constraint must be a string$"):
        property_terms(["a", 3])


def test_property_negation_in_constraints():
    rs = Rset.build([("n0", 1, 0, ("a", "b")), ("n1", 1, 0, ("a",)), ("n2", 1, 0, ("b",)), ("n3", 1, 0)])
    cases = {("a",): "0-1", ("^a",): "2-3", ("a", "^b"): "1", ("^b", "a"): "1", ("^a", "^b"): "3",
             ("nosuch",): "", ("^nosuch",): "0-3", ("b", "^a"): "2"}
    for props, want in cases.items():
        assert str(rs.ranks_matching({"properties": list(props)})) == want, props
    with pytest.raises(RsetError, match="property constraint must be a string"):
        rs.ranks_matching({"properties": ["a", None]})


def test_from_nodes_keywords():
    nodes = {1: ("n1", ids("0-3"), ids("0")), 4: ("n4", ids("0-3"), ids("0"))}
    rs = Rset.from_nodes(nodes, properties={"p": ids("4")}, starttime=5.0, expiration=10.0, nslots=2,
                         scheduling={"x": 1})
    d = rs.to_dict()
    assert d == {"version": 1, "scheduling": {"x": 1},
                 "execution": {"R_lite": [{"rank": "1,4", "children": {"core": "0-3", "gpu": "0"}}],
                               "starttime": 5.0, "expiration": 10.0, "nslots": 2, "nodelist": ["n[1,4]"],
                               "properties": {"p": "4"}}}
    assert Rset.from_dict(json.loads(json.dumps(d))) == rs
    bare = Rset.from_nodes(nodes, has_nodelist=False)
    assert "nodelist" not in bare.to_dict()["execution"]
    assert (bare.starttime, bare.expiration, bare.nslots, bare.scheduling, bare.properties) == (0.0, 0.0, 0, None, {})
    # groups and nodelist text a caller has are taken as given
    given = Rset.from_nodes(nodes, groups=[(ids("1,4"), ids("0-3"), ids("0"))], nodelist_text="n[1,4]")
    assert given.summary() == "rank[1,4]/core[0-3],gpu0" and given.to_dict() == Rset.from_nodes(nodes).to_dict()
    with pytest.raises(TypeError):
        Rset.from_nodes(nodes, {}, 5.0)  # keywords only


def test_with_nodes_restricts_properties_keeps_the_rest():
    rs = Rset.build([("n0", 2, 0, ("a",)), ("n1", 2, 1, ("b",))], starttime=3.0, expiration=9.0)
    one = rs.with_nodes({1: ("n1", ids("1"), IDset())})
    assert one.properties == {"b": ids("1")}
    assert (one.starttime, one.expiration, one.summary()) == (3.0, 9.0, "rank1/core1")
    other = rs.with_nodes({0: ("n0", ids("0-1"), IDset())}, expiration=0.0, nslots=4)
    assert (other.starttime, other.expiration, other.nslots, other.properties) == (3.0, 0.0, 4, {"a": ids("0")})


def test_rlite_without():
    r = R(("0-3", "0-1", "0"), ("5-6", "0"), starttime=1.0, expiration=2.0, nodelist=["n[0-3,5-6]"])
    assert rlite_without(r, ids("1,5-6")) == {"version": 1, "execution": {
        "R_lite": [{"rank": "0,2-3", "children": {"core": "0-1", "gpu": "0"}}], "starttime": 1.0, "expiration": 2.0}}
