import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import RsetError
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset
from flux_lite.formats.rset import Rset

REF_R = (
    '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": '
    '{"core": "0-1"}}], "starttime": 1795978044.3859792, "expiration": '
    '1795978344.3859792, "nslots": 1, "nodelist": ["vm"]}}'
)


def R(summary_nodes, **kw):
    """Helper: {rank: (host, cores, gpus)} -> Rset via JSON."""
    R_lite = []
    hosts = []
    for rank in sorted(summary_nodes):
        host, cores, gpus = summary_nodes[rank]
        ch = {"core": cores}
        if gpus:
            ch["gpu"] = gpus
        R_lite.append({"rank": str(rank), "children": ch})
        hosts.append(host)
    ex = {"R_lite": R_lite, "nodelist": hosts}
    ex.update(kw)
    return Rset.from_dict({"version": 1, "execution": ex})


def test_reference_roundtrip_exact():
    rs = Rset.from_json(REF_R)
    assert rs.to_json() == REF_R
    assert json.dumps(rs.to_dict()) == REF_R
    assert rs.summary() == "rank0/core[0-1]"
    assert rs.nslots == 1
    assert rs.starttime == 1795978044.3859792
    assert rs.expiration == 1795978344.3859792
    assert rs.nodelist == Hostlist("vm")
    assert rs.hostname(0) == "vm"
    assert rs.cores(0) == IDset.range(0, 1)
    assert rs.gpus(0) == IDset()
    assert (rs.nnodes, rs.ncores, rs.ngpus) == (1, 2, 0)


def test_instance_R():
    rs = Rset.build([("vm", 2, 0)] * 4)
    assert rs.to_json() == (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": '
        '{"core": "0-1"}}], "starttime": 0.0, "expiration": 0.0, '
        '"nodelist": ["vm,vm,vm,vm"]}}'
    )
    assert rs.summary() == "rank[0-3]/core[0-1]"
    assert Rset.from_json(rs.to_json()) == rs
    nodes = Rset.from_config("node[0-3]", 4, 1, properties={"xx": "0-1"})
    d = nodes.to_dict()
    assert d["execution"]["nodelist"] == ["node[0-3]"]
    assert d["execution"]["R_lite"] == [
        {"rank": "0-3", "children": {"core": "0-3", "gpu": "0"}}
    ]
    assert d["execution"]["properties"] == {"xx": "0-1"}
    assert nodes.summary() == "rank[0-3]/core[0-3],gpu0"


def test_build_variants():
    rs = Rset.build(
        [
            ("a", 4, 0, ("x", "+batch")),
            {"hostname": "b", "ncores": 2, "ngpus": 1, "properties": ["x"]},
            ("c", 4, 0),
        ]
    )
    assert rs.summary() == "rank[0,2]/core[0-3] rank1/core[0-1],gpu0"
    assert rs.ranks_with_property("x") == IDset([0, 1])
    assert rs.ranks_with_property("+batch") == IDset([0])
    assert rs.ranks_with_property("nope") == IDset()
    assert rs.properties_of(0) == ["+batch", "x"]
    ex = rs.to_dict()["execution"]
    assert list(ex) == ["R_lite", "starttime", "expiration", "nodelist", "properties"]
    assert list(ex["properties"]) == ["+batch", "x"]
    assert ex["R_lite"][0]["rank"] == "0,2"
    with pytest.raises(RsetError):
        Rset.build([("a", 1, 0, ("bad|name",))])
    with pytest.raises(RsetError):
        Rset.build([("", 1, 0)])


@pytest.mark.parametrize(
    "nodes,summary",
    [
        ({0: ("n0", "0", "")}, "rank0/core0"),
        ({0: ("n0", "0-1", ""), 1: ("n1", "0-1", "")}, "rank[0-1]/core[0-1]"),
        ({1: ("n1", "1-3", "")}, "rank1/core[1-3]"),
        ({0: ("n0", "0", "0")}, "rank0/core0,gpu0"),
        ({0: ("n0", "0-1", "0-1")}, "rank0/core[0-1],gpu[0-1]"),
        (
            {0: ("n0", "0", ""), 1: ("n1", "1", ""), 2: ("n2", "0", "")},
            "rank[0,2]/core0 rank1/core1",
        ),
        (
            {0: ("n0", "1", ""), 1: ("n1", "0", ""), 2: ("n2", "1", "")},
            "rank[0,2]/core1 rank1/core0",
        ),
    ],
)
def test_summary(nodes, summary):
    rs = R(nodes)
    assert rs.summary() == summary == rs.dumps() == str(rs)


def test_empty():
    rs = Rset()
    assert rs.is_empty() and not rs and rs.summary() == ""
    assert rs.ranks == IDset()
    assert rs.to_dict() == {
        "version": 1,
        "execution": {"R_lite": [], "starttime": 0.0, "expiration": 0.0},
    }
    empty = Rset.from_dict({"version": 1, "execution": {"R_lite": []}})
    assert empty.is_empty()


def test_scheduling_and_properties_kept():
    obj = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-3", "children": {"core": "0-1"}}],
            "nodelist": ["vm,vm,vm,vm"],
            "properties": {"xx": "0-1", "+batch": "0-3"},
        },
        "scheduling": {"test": "data"},
    }
    rs = Rset.from_dict(obj)
    d = rs.to_dict()
    assert d["scheduling"] == {"test": "data"}
    assert list(d) == ["version", "execution", "scheduling"]
    assert d["execution"]["properties"] == {"+batch": "0-3", "xx": "0-1"}
    part = rs.copy_ranks("2-3")
    assert part.to_dict()["execution"]["properties"] == {"+batch": "2-3"}
    assert "properties" not in part.without_local_properties().to_dict()["execution"]
    assert rs.without_local_properties().properties == {"xx": IDset.range(0, 1)}


BAD = [
    ("[]", "R must be a JSON object"),
    ("{", "invalid R JSON"),
    ('{"execution": {}}', "version is required"),
    ('{"version": 2, "execution": {"R_lite": []}}', "invalid version=2"),
    ('{"version": "1", "execution": {"R_lite": []}}', "version must be an integer"),
    ('{"version": true, "execution": {"R_lite": []}}', "version must be an integer"),
    ('{"version": 1}', "execution is required"),
    ('{"version": 1, "execution": []}', "execution must be an object"),
    ('{"version": 1, "execution": {}}', "R_lite is required"),
    ('{"version": 1, "execution": {"R_lite": {}}}', "R_lite must be an array"),
    ('{"version": 1, "execution": {"R_lite": [1]}}', "R_lite[0] must be an object"),
    (
        '{"version": 1, "execution": {"R_lite": [{"children": {"core": "0"}}]}}',
        "R_lite[0].rank",
    ),
    ('{"version": 1, "execution": {"R_lite": [{"rank": "0"}]}}', "children"),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {}}]}}',
        "children.core",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", '
        '"children": {"core": "0", "gpu": 1}}]}}',
        "children.gpu",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "01", "children": {"core": "0"}}]}}',
        "error parsing range '01'",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "3,1"}}]}}',
        "range '1' is out of order",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}, '
        '{"rank": "0", "children": {"core": "0"}}]}}',
        "duplicate",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0"}}], '
        '"nodelist": ["vm"]}}',
        "nodelist has 1 host(s) but R_lite has 2 rank(s)",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"nodelist": ["foo["]}}',
        "Invalid hostlist: 'foo['",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"nodelist": "vm"}}',
        "nodelist must be an array",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"properties": {"a": "1"}}}',
        "rank 1 not found in target resource list",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"properties": {"a": "1-2"}}}',
        "ranks 1-2 not found in target resource list",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"properties": {"a": 0}}}',
        "properties value '0' not a string",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}], '
        '"properties": {"a": "x"}}}',
        "invalid idset 'x' specified for property \"a\"",
    ),
    (
        '{"version": 1, "execution": {"R_lite": [], "starttime": "now"}}',
        "starttime must be a number",
    ),
    ('{"version": 1, "execution": {"R_lite": [], "nslots": 1.5}}', "nslots"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_invalid(text, message):
    with pytest.raises(RsetError) as exc:
        Rset.from_json(text)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize("ch", list("!&'\"^`|()"))
def test_invalid_property_chars(ch):
    name = f"a{ch}b"
    obj = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0", "children": {"core": "0"}}],
            "properties": {name: "0"},
        },
    }
    with pytest.raises(RsetError, match="invalid character"):
        Rset.from_dict(obj)


def test_no_nodelist():
    rs = Rset.from_dict(
        {"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0"}}]}}
    )
    assert not rs.has_nodelist
    assert "nodelist" not in rs.to_dict()["execution"]
    assert rs.hostname(1) == "rank1"


def test_duplicate_rank_entries_merge():
    rs = Rset.from_dict(
        {
            "version": 1,
            "execution": {
                "R_lite": [
                    {"rank": "0", "children": {"core": "0-1"}},
                    {"rank": "0", "children": {"core": "2-3", "gpu": "0"}},
                ]
            },
        }
    )
    assert rs.summary() == "rank0/core[0-3],gpu0"


def test_operations():
    base = Rset.build([(f"n{i}", 4, 1, ("p",) if i % 2 else ()) for i in range(4)])
    assert base.copy_ranks("1-2").summary() == "rank[1-2]/core[0-3],gpu0"
    assert base.copy_ranks([3]).nodelist == Hostlist("n3")
    assert base.remove_ranks(IDset([0, 1])).ranks == IDset([2, 3])
    assert base.remove_ranks("").ranks == base.ranks
    assert base.copy_ranks("0-1").ranks_with_property("p") == IDset([1])
    job = R({1: ("n1", "0-1", ""), 2: ("n2", "3", "0")})
    left = base.difference(job)
    assert left.summary() == "rank[0,3]/core[0-3],gpu0 rank1/core[2-3],gpu0 rank2/core[0-2]"
    assert (base - job) == left
    assert left.union(job).same_resources(base)
    assert (left | job).same_resources(base)
    assert base.intersection(job).same_resources(job)
    assert (base & job).summary() == job.summary()
    assert left.ranks_with_property("p") == IDset([1, 3])
    # ranks with nothing left are dropped
    only = R({0: ("n0", "0-3", "0")})
    assert (base - only).ranks == IDset([1, 2, 3])
    timed = job.with_times(10.5, 20.5)
    assert (timed.starttime, timed.expiration) == (10.5, 20.5)
    assert job.starttime == 0.0  # immutable
    assert timed.with_expiration(0).expiration == 0.0
    assert job.with_nslots(3).to_dict()["execution"]["nslots"] == 3
    assert job.with_scheduling({"a": 1}).to_dict()["scheduling"] == {"a": 1}
    with pytest.raises(RsetError):
        base.cores(9)
    assert base.ranks_of_hosts("n[1-2]") == IDset([1, 2])
    assert 2 in base and 7 not in base and len(base) == 4


def test_constraints():
    rs = Rset.build(
        [("a0", 1, 0, ("x",)), ("a1", 1, 0, ("x", "y")), ("a2", 1, 0, ("y",)), ("a3", 1, 0)]
    )
    assert rs.ranks_matching(None) == rs.ranks
    assert rs.ranks_matching({}) == rs.ranks
    assert rs.ranks_matching({"properties": ["x"]}) == IDset([0, 1])
    assert rs.ranks_matching({"properties": ["x", "y"]}) == IDset([1])
    assert rs.ranks_matching({"properties": ["^x"]}) == IDset([2, 3])
    assert rs.ranks_matching({"hostlist": ["a[0,3]"]}) == IDset([0, 3])
    assert rs.ranks_matching({"ranks": ["2-9"]}) == IDset([2, 3])
    assert rs.ranks_matching(
        {"or": [{"properties": ["x"]}, {"ranks": ["3"]}]}
    ) == IDset([0, 1, 3])
    assert rs.ranks_matching(
        {"and": [{"properties": ["y"]}, {"not": [{"properties": ["x"]}]}]}
    ) == IDset([2])
    assert rs.ranks_matching('{"properties": ["y"]}') == IDset([1, 2])
    assert rs.copy_constraint({"properties": ["y"]}).summary() == "rank[1-2]/core0"
    with pytest.raises(RsetError):
        rs.ranks_matching({"bogus": 1})
    with pytest.raises(RsetError):
        rs.ranks_matching({"not": []})


node = st.tuples(
    st.sets(st.integers(0, 7), min_size=1, max_size=8),
    st.sets(st.integers(0, 2), max_size=3),
)
rsets = st.dictionaries(st.integers(0, 12), node, max_size=8)


def make(d, hosts=True):
    R_lite = []
    for rank in sorted(d):
        cores, gpus = d[rank]
        ch = {"core": str(IDset(cores))}
        if gpus:
            ch["gpu"] = str(IDset(gpus))
        R_lite.append({"rank": str(rank), "children": ch})
    ex = {"R_lite": R_lite}
    if hosts:
        ex["nodelist"] = [f"h{r}" for r in sorted(d)]
    return Rset.from_dict({"version": 1, "execution": ex})


def model(rs):
    return {r: (set(c), set(g)) for r, _, c, g in rs.nodes()}


@given(rsets)
@settings(max_examples=40, deadline=None)
def test_roundtrip_json(d):
    rs = make(d)
    again = Rset.from_json(rs.to_json())
    assert again == rs
    assert model(again) == {r: (set(c), set(g)) for r, (c, g) in d.items()}
    assert again.nodelist == Hostlist.from_hosts([f"h{r}" for r in sorted(d)])
    # R_lite groups identical children, ordered by lowest rank
    firsts = [IDset.parse(e["rank"]).first() for e in rs.to_dict()["execution"]["R_lite"]]
    assert firsts == sorted(firsts)
    assert rs.ncores == sum(len(c) for c, _ in d.values())


@given(rsets, rsets)
@settings(max_examples=40, deadline=None)
def test_set_ops_match_model(a, b):
    ra, rb = make(a), make(b)
    diff = {}
    inter = {}
    union = {}
    for r, (c, g) in a.items():
        oc, og = b.get(r, (set(), set()))
        if (c - oc) or (g - og):
            diff[r] = (c - oc, g - og)
        if (c & oc) or (g & og):
            inter[r] = (c & oc, g & og)
    for r in set(a) | set(b):
        c, g = a.get(r, (set(), set()))
        oc, og = b.get(r, (set(), set()))
        union[r] = (c | oc, g | og)
    assert model(ra.difference(rb)) == diff
    assert model(ra.intersection(rb)) == inter
    assert model(ra.union(rb)) == union
    assert ra.difference(rb).union(ra.intersection(rb)).same_resources(ra)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet="0123456789-[],abvm", max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=12,
)


@given(json_values)
@settings(max_examples=60, deadline=None)
def test_garbage_only_rset_error(value):
    try:
        Rset.from_dict(value)
    except RsetError:
        pass


FIELDS = [
    ("version",),
    ("execution",),
    ("execution", "R_lite"),
    ("execution", "R_lite", 0),
    ("execution", "R_lite", 0, "rank"),
    ("execution", "R_lite", 0, "children"),
    ("execution", "R_lite", 0, "children", "core"),
    ("execution", "R_lite", 0, "children", "gpu"),
    ("execution", "nodelist"),
    ("execution", "nodelist", 0),
    ("execution", "properties"),
    ("execution", "properties", "xx"),
    ("execution", "starttime"),
    ("execution", "expiration"),
    ("execution", "nslots"),
]


@given(st.sampled_from(FIELDS), json_values)
@settings(max_examples=80, deadline=None)
def test_mutated_R_only_rset_error(path, value):
    obj = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-1", "children": {"core": "0-3", "gpu": "0"}}],
            "nodelist": ["n[0-1]"],
            "properties": {"xx": "1"},
            "starttime": 1.0,
            "expiration": 2.0,
            "nslots": 2,
        },
    }
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        rs = Rset.from_dict(obj)
    except RsetError as exc:
        assert "\n" not in str(exc)
        return
    assert Rset.from_json(rs.to_json()) == rs


@given(st.text(max_size=40))
@settings(deadline=None)
def test_garbage_json_text(text):
    try:
        Rset.from_json(text)
    except RsetError:
        pass


def test_huge_numbers():
    with pytest.raises(RsetError):
        Rset.from_json('{"version": 1, "execution": {"R_lite": [], "starttime": 1e999}}')
    with pytest.raises(RsetError):
        Rset.from_dict({"version": 1, "execution": {"R_lite": [], "expiration": 10**400}})


def test_written_json_is_what_json_writes():
    """to_json's text, written directly for the plain R a scheduler makes,
    is json.dumps(to_dict()) for random subsets, times, slot counts, GPUs,
    and host names or values that the encoder must take (escapes, non-ASCII,
    properties, scheduling)."""
    import random

    from flux_lite.formats.rset import Rset as R

    rng = random.Random(12)
    names = ["node", "node", "node", "n-1.lab", 'q"uote', "back\\slash", "caf\u00e9", "del\x7f"]
    written = 0
    for _ in range(400):
        prefix = rng.choice(names)
        hosts = [(prefix + str(i), rng.choice([1, 2, 4]), rng.choice([0, 0, 2])) for i in range(6)]
        rs = R.build(hosts)
        rs = rs.copy_ranks(",".join(str(r) for r in sorted(rng.sample(range(6), rng.randint(1, 6)))))
        times = rng.choice([(0.0, 0.0), (1767225600.25, 1767229200.5), (5, 10), (1e300, 1e-7)])
        rs = rs.with_times(*times)
        if rng.random() < 0.3:
            rs = rs.with_nslots(rng.randint(1, 9))
        if rng.random() < 0.1:
            rs = rs.with_properties({"big": str(rs.ranks.first())})
        if rng.random() < 0.1:
            rs = rs.with_scheduling({"graph": [1]})
        text = rs.to_json()
        assert text == json.dumps(rs.to_dict())
        written += rs._written_json() is not None
    assert 100 < written < 400  # (both paths were taken)
