import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import HostlistError
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset

# (input, encoding, count) -- libhostlist's own codec vectors plus more
CODEC = [
    ("foo-1a-2,foo-1a-3", "foo-1a-[2-3]", 2),
    ("foo1,foo2,foo3,fooi", "foo[1-3],fooi", 4),
    ("foo1,fooi,foo2,foo3", "foo1,fooi,foo[2-3]", 4),
    ("fooi,foo1,foo2,foo3", "fooi,foo[1-3]", 4),
    ("fooi,foo1,foo2,foo3,foo5,foo7,foo8", "fooi,foo[1-3,5,7-8]", 7),
    ("1,2,3,4,5,9", "[1-5,9]", 6),
    (",1,2,3,4,5,9", "[1-5,9]", 6),
    (",1,2,3,4,5,9,", "[1-5,9]", 6),
    ("[1-5]", "[1-5]", 5),
    ("foo[1,3]-bar", "foo1-bar,foo3-bar", 2),
    ("[00-03]p", "00p,01p,02p,03p", 4),
    ("p[00-3]p", "p00p,p01p,p02p,p03p", 4),
    ("14636", "14636", 1),
    ("foo12,foo[4,1-2]", "foo[12,4,1-2]", 4),
    ("foo[4,1-2],bar[26-30]", "foo[4,1-2],bar[26-30]", 8),
    ("foo[1-5]", "foo[1-5]", 5),
    ("foo[1,1,2,1]", "foo[1,1-2,1]", 4),
    ("[00-2]", "[00-02]", 3),
    ("node0,node1,node2,node3", "node[0-3]", 4),
    ("node3", "node3", 1),
    ("vm,vm,vm,vm", "vm,vm,vm,vm", 4),
    ("foo1,foo2,foo3,foo5", "foo[1-3,5]", 4),
    (
        "tuolumne1174,tuolumne1747,tuolumne1748,tuolumne1751",
        "tuolumne[1174,1747-1748,1751]",
        4,
    ),
    ("foo9,foo10", "foo[9-10]", 2),
    ("foo09,foo10", "foo[09-10]", 2),
    ("foo8,foo09", "foo[8,09]", 2),
    ("foo1,foo01", "foo[1,01]", 2),
    ("a b\tc", "a,b,c", 3),
    ("", "", 0),
    (
        "mcr[336-359,488-550,553,556,559,561,567,569-571,573-575,578]",
        "mcr[336-359,488-550,553,556,559,561,567,569-571,573-575,578]",
        99,
    ),
]


@pytest.mark.parametrize("text,encoded,count", CODEC)
def test_codec(text, encoded, count):
    hl = Hostlist.parse(text)
    assert str(hl) == encoded
    assert hl.encode() == encoded
    assert len(hl) == count == hl.count()
    assert Hostlist.parse(encoded) == hl


@pytest.mark.parametrize(
    "text,hosts",
    [
        ("foo[1-5]", ["foo1", "foo2", "foo3", "foo4", "foo5"]),
        (
            "foo[0-4]-eth2",
            ["foo0-eth2", "foo1-eth2", "foo2-eth2", "foo3-eth2", "foo4-eth2"],
        ),
        ("[1-3,5-6]", ["1", "2", "3", "5", "6"]),
        ("foo[1,1,2,1]", ["foo1", "foo1", "foo2", "foo1"]),
        ("[00-2]", ["00", "01", "02"]),
        ("foo[08-10]", ["foo08", "foo09", "foo10"]),
        ("foo[1-010]", [f"foo{i}" for i in range(1, 11)]),
        ("a[1-2]b,c", ["a1b", "a2b", "c"]),
        ("", []),
    ],
)
def test_spec_vectors(text, hosts):
    assert list(Hostlist.parse(text)) == hosts


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "foo[]",
        "foo[",
        "foo[1,3",
        "foo[[1,3]",
        "foo]",
        "foo[x-y]",
        "foo[0-1,2--5]",
        "foo[1-]",
        "[",
        "]",
        "foo[3-1]",
        "foo[1,,2]",
        "foo[-1]",
        "foo[0-1048576]",
        "a[1]-[2]",
        "a]b[1]",
        "foo[1, 2]",
    ],
)
def test_invalid(text):
    with pytest.raises(HostlistError) as exc:
        Hostlist.parse(text)
    assert str(exc.value) == f"Invalid hostlist: '{text}'"
    assert isinstance(exc.value, ValueError)


def test_flux_message_for_housekeeping():
    with pytest.raises(HostlistError, match=r"^Invalid hostlist: 'foo\['$"):
        Hostlist.parse("foo[")


def test_from_list_and_sequence():
    hl = Hostlist(["foo1", "foo2", "bar[1-2]"])
    assert str(hl) == "foo[1-2],bar[1-2]"
    assert len(hl) == 4
    assert hl[0] == "foo1" and hl[-1] == "bar2"
    assert hl[1:3] == ["foo2", "bar1"]
    with pytest.raises(IndexError):
        hl[4]
    assert "bar2" in hl and "bar3" not in hl
    assert hl.index("bar1") == 2
    with pytest.raises(HostlistError):
        hl.index("nope")
    assert hl.expand() == ["foo1", "foo2", "bar1", "bar2"]
    assert Hostlist(hl) == hl
    assert hl != Hostlist("foo[1-2]")
    assert hl != ["foo1"]
    assert repr(hl) == "Hostlist('foo[1-2],bar[1-2]')"
    assert pickle.loads(pickle.dumps(hl)) == hl
    assert {hl: 1}[Hostlist.parse("foo1,foo2,bar1,bar2")] == 1
    assert str(Hostlist("foo[1-2]") + "foo3") == "foo[1-3]"
    assert str(Hostlist("foo[1-2]") + Hostlist("foo[1-2]")) == "foo[1-2,1-2]"
    assert not Hostlist() and Hostlist("a")
    with pytest.raises(TypeError):
        Hostlist([1])
    with pytest.raises(HostlistError):
        Hostlist(["ok", "bad["])


def test_from_hosts():
    hl = Hostlist.from_hosts(["node0", "node1", "node2", "node3"])
    assert str(hl) == "node[0-3]"
    assert str(Hostlist.from_hosts(["vm"] * 4)) == "vm,vm,vm,vm"
    with pytest.raises(HostlistError):
        Hostlist.from_hosts(["a,b"])
    with pytest.raises(HostlistError):
        Hostlist.from_hosts([""])


def test_ranks_of():
    hl = Hostlist.parse("vm,vm,vm,vm")
    assert hl.ranks_of("vm") == IDset.range(0, 3)
    nodes = Hostlist.parse("node[0-7]")
    assert nodes.ranks_of("node[1-2,5]") == IDset([1, 2, 5])
    assert nodes.ranks_of(["node7", "node0"]) == IDset([0, 7])
    with pytest.raises(HostlistError, match="node9"):
        nodes.ranks_of("node9")
    assert nodes.ranks_of("node[7-9]", strict=False) == IDset([7])
    assert hl.count("vm") == 4
    assert Hostlist.parse("a,b,a,c").uniq() == Hostlist.parse("a,b,c")


prefixes = st.sampled_from(["", "a", "node", "foo-1a-", "x1y", "n"])
host = st.one_of(
    st.builds(
        lambda p, n, w: f"{p}{n:0{w}d}",
        prefixes,
        st.integers(0, 120),
        st.integers(0, 4),
    ),
    st.sampled_from(["vm", "fooi", "a-b", "node1-eth0", "x.y"]),
)


@given(st.lists(host, max_size=25))
@settings(max_examples=60, deadline=None)
def test_roundtrip_hosts(hosts):
    hl = Hostlist.from_hosts(hosts)
    assert list(hl) == hosts
    assert list(Hostlist.parse(str(hl))) == hosts
    assert list(Hostlist(hosts)) == hosts
    assert str(Hostlist(hosts)) == str(hl)
    assert len(hl) == len(hosts)


@given(st.lists(host, max_size=10), st.lists(host, max_size=10))
@settings(max_examples=60, deadline=None)
def test_concat(a, b):
    assert list(Hostlist.from_hosts(a) + Hostlist.from_hosts(b)) == a + b


@given(st.text(alphabet="ab01-9[],", max_size=25))
@settings(max_examples=150, deadline=None)
def test_garbage_near_grammar(text):
    try:
        hl = Hostlist.parse(text)
    except HostlistError:
        return
    assert list(Hostlist.parse(str(hl))) == list(hl)


@given(st.text(max_size=20))
@settings(deadline=None)
def test_garbage_only_hostlist_error(text):
    try:
        hl = Hostlist.parse(text)
    except HostlistError:
        return
    str(hl)
    list(hl)
