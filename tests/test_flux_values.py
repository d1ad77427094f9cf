"""The flux package's value modules: flux.hostlist, flux.idset, flux.constraint.parser,
flux.resource.ResourceSet, flux.util (Flux's API over flux_lite.formats)."""

import errno
import sys

import pytest

from flux_lite import bindings


@pytest.fixture
def fluxpkg(monkeypatch):
    """The flux package importable (values need no instance)."""
    monkeypatch.syspath_prepend(str(bindings.PATH))
    import flux

    assert flux.__file__.startswith(str(bindings.PATH))
    return sys.modules


# -- flux.hostlist -----------------------------------------------------------------


def test_hostlist_is_mutable_and_encodes_as_libhostlist(fluxpkg):
    from flux.hostlist import Hostlist, decode

    hl = Hostlist()
    assert hl.append("foo[0-3]") == 4 and hl.append("foo[7-9]", ["bar0", "bar1"]) == 5
    assert str(hl) == "foo[0-3,7-9],bar[0-1]" and len(hl) == 9
    assert hl[-1] == "bar1" and repr(hl[1:3]) == "Hostlist('foo[1-2]')"
    assert str(hl[[0, 4]]) == "foo[0,7]"
    assert hl.delete("foo[1-2],nothere") == 2 and str(hl) == "foo[0,3,7-9],bar[0-1]"
    assert str(decode("b,a1,a0,b").sort()) == "a[0-1],b,b" and str(decode("b,a1,a0,b").uniq()) == "a[0-1],b"
    cp = hl.copy()
    hl.delete("bar[0-1]")
    assert str(cp) == "foo[0,3,7-9],bar[0-1]" and "bar0" not in hl


def test_hostlist_errors_are_fluxs(fluxpkg):
    from flux.hostlist import Hostlist

    with pytest.raises(ValueError, match=r"^Invalid hostlist: 'foo\['$"):
        Hostlist("foo[")
    with pytest.raises(TypeError):
        Hostlist(["a", 1])
    with pytest.raises(IndexError, match="Hostlist index out of range"):
        Hostlist("a")[1]
    with pytest.raises(TypeError):
        Hostlist("a")["x"]
    hl = Hostlist("foo[0-3]")
    with pytest.raises(FileNotFoundError) as exc:
        hl.find("foo9")
    assert exc.value.errno == errno.ENOENT
    with pytest.raises(FileNotFoundError, match=r"^hosts 'foo\[8-9\]' not found$"):
        hl.index("foo[3,8-9]")
    assert hl.index("foo[3,8-9]", ignore_nomatch=True) == [3]


# -- flux.idset --------------------------------------------------------------------


def test_idset_flags_and_mutation(fluxpkg):
    from flux import idset

    ids = idset.IDset("0-3")
    assert ids.encode(flags=0) == "0,1,2,3" and ids.encode(flags=idset.IDSET_FLAG_BRACKETS) == "[0,1,2,3]"
    ids.set_flags(idset.IDSET_FLAG_RANGE | idset.IDSET_FLAG_BRACKETS)
    assert str(ids) == "[0-3]" and repr(ids) == "IDset('0-3')"
    ids[7] = 1
    ids.clear(1, 2)
    ids += [9]
    assert repr(ids) == "IDset('0,3,7,9')" and ids.next(3) == 7 and ids.next(9) == idset.IDSET_INVALID_ID
    assert idset.IDset().first() == idset.IDSET_INVALID_ID == 2**32 - 2
    assert str(ids.union("10-11") - "0" & "3-10") == "3,7,9-10"


def test_idset_errors_are_fluxs(fluxpkg):
    from flux.idset import IDset

    ids = IDset("0-9")
    with pytest.raises(ValueError, match="negative index passed to IDset.test"):
        ids.test(-1)
    with pytest.raises(TypeError):
        ids["a"]
    with pytest.raises(TypeError):
        ids[0] = 7
    with pytest.raises(ValueError, match=r"^IDset\(\): Invalid argument: foo$"):
        ids.add("foo")
    with pytest.raises(TypeError):
        ids.add(4.0)
    with pytest.raises(TypeError):
        ids.equal("0-9")
    with pytest.raises(ValueError, match="can't set range with 5 > 1"):
        ids.set(5, 1)


# -- flux.constraint.parser --------------------------------------------------------


def test_constraint_parser_follows_fluxs_grammar(fluxpkg):
    from flux.constraint.parser import ConstraintParser, ConstraintSyntaxError

    class P(ConstraintParser):
        operator_map = {None: "t", "h": "host"}
        split_values = {"t": ","}
        combined_terms = {"t"}

    p = P()
    assert p.parse("a,b c") == {"t": ["a", "b", "c"]}
    # a term after an `or` without an operator closes the `or`, as yacc's precedence does
    assert p.parse("a|b h:x") == {"and": [{"or": [{"t": ["a"]}, {"t": ["b"]}]}, {"host": ["x"]}]}
    assert p.parse("a|b&h:x") == {"or": [{"t": ["a"]}, {"and": [{"t": ["b"]}, {"host": ["x"]}]}]}
    assert p.parse("not a h:x") == {"and": [{"not": [{"t": ["a"]}]}, {"host": ["x"]}]}
    assert p.parse("h:'a b'") == {"host": ["a b"]}
    for bad, message in (("(a", "Unclosed parenthesis in position 0"),
                         ("a:", "Missing argument to token 'a:'"),
                         ("-(a)", "Invalid token '(' at position 1"),
                         ("x'y", "Unclosed quote \"'\" at position 2"),
                         ("a,b:c", "invalid character ',' in operator 'a,b:'"),
                         # the quoted text is read (as yacc's lookahead) before the term before it fails
                         ("a,b:c 'd", "invalid character ',' in operator 'a,b:'"),
                         ("a 'd", "Unclosed quote \"'\" at position 3")):
        with pytest.raises(ConstraintSyntaxError) as exc:
            p.parse(bad)
        assert str(exc.value) == message
    with pytest.raises(ConstraintSyntaxError, match='Missing required operator in "foo"'):
        ConstraintParser().parse("foo")


# -- flux.resource.ResourceSet -----------------------------------------------------

R4 = {"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": {"core": "0-3", "gpu": "0"}}],
                                  "starttime": 0, "expiration": 0, "nodelist": ["fluke[0-3]"]}}


def test_resource_set_reads_and_writes_R(fluxpkg):
    import json

    from flux.hostlist import Hostlist
    from flux.idset import IDset
    from flux.resource import ResourceSet

    rset = ResourceSet(json.dumps(R4))
    assert (str(rset), rset.ncores, rset.ngpus, rset.nnodes) == ("rank[0-3]/core[0-3],gpu0", 16, 4, 4)
    assert isinstance(rset.nodelist, Hostlist) and isinstance(rset.ranks, IDset)
    assert rset.host_ranks("fluke[3,1]") == [3, 1]
    rset.set_property("big", "2-3")
    rset.expiration = 100.0
    assert json.loads(rset.encode()) == {"version": 1, "execution": {
        "R_lite": [{"rank": "0-3", "children": {"core": "0-3", "gpu": "0"}}], "starttime": 0.0, "expiration": 100.0,
        "nodelist": ["fluke[0-3]"], "properties": {"big": "2-3"}}}
    # a rank may have gpus and no cores (as librlist reads R)
    gpus = ResourceSet({"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"gpu": "1"}}]}})
    assert str(rset.copy_ranks(0) | gpus) == "rank0/core[0-3],gpu[0-1]"


def test_resource_set_operations_are_fluxs(fluxpkg):
    import json

    from flux.resource import ResourceSet

    rset = ResourceSet(R4)
    rset.state = "up"
    part = rset.copy_ranks("1-2")
    assert part.state == "up" and str(rset - part) == "rank[0,3]/core[0-3],gpu0"
    assert str(rset.copy().remove_ranks("0-2")) == "rank3/core[0-3],gpu0" and rset.nnodes == 4
    small = ResourceSet(R4).remove_ranks("2-3").set_property("a", "1")
    extra = ResourceSet(R4).copy_ranks("1-2").set_property("b")
    # add: properties come only with the ranks added
    assert json.loads(small.add(extra).get_properties()) == {"a": "1", "b": "2"}
    assert str(rset.copy_constraint({"and": [{"ranks": "0-2"}, {"not": [{"hostlist": "fluke1"}]}]})) \
        == "rank[0,2]/core[0-3],gpu0"
    for bad in ({"foo": []}, {"not": []}, {"properties": [1]}):
        with pytest.raises(ValueError):
            rset.copy_constraint(bad)
    with pytest.raises(ValueError):
        rset.set_property("a^b")
    with pytest.raises(ValueError):
        rset.set_property("a", "7")
    with pytest.raises(TypeError):
        ResourceSet(1)
    with pytest.raises(ValueError, match="R version 2 not supported"):
        ResourceSet({"version": 2})
    with pytest.raises(KeyError):
        ResourceSet({})


# -- flux.util ---------------------------------------------------------------------


def test_util_fsd_and_datetimes(fluxpkg):
    from datetime import datetime

    from flux.util import UtilDatetime, fsd, parse_datetime, parse_fsd

    assert (parse_fsd("1.5m"), parse_fsd("inf"), fsd(90), fsd(0.0005)) == (90.0, float("inf"), "1.5m", "0s")
    with pytest.raises(ValueError, match="invalid Flux standard duration"):
        parse_fsd("1x")
    now = datetime(2021, 6, 10, 8, 0, 0)
    assert parse_datetime("now", now) is now
    assert parse_datetime("+1h", now).timestamp() == now.timestamp() + 3600
    assert parse_datetime("noon tomorrow", now) == datetime(2021, 6, 11, 12).astimezone()
    with pytest.raises(ValueError, match='Invalid datetime: "blursday"'):
        parse_datetime("blursday", now)
    assert f"{UtilDatetime(2021, 6, 10, 8):%b%d %R::>12}" == " Jun10 08:00"
    assert f"{UtilDatetime.fromtimestamp(0.0):::<3h}" == "-  "


class _Row:
    def __init__(self, name, n, t):
        self.name, self.n, self.t = name, n, t


def test_util_output_format_is_fluxs(fluxpkg, capsys):
    from flux.util import OutputFormat, del_treedict, get_treedict, set_treedict

    headings = {"name": "NAME", "n": "N", "t": "TIME"}
    fmt = OutputFormat("sort:-n ?:{name:<6} +:{n:>2} {t!F:>6h}", headings=headings)
    assert fmt.get_format() == "sort:-n ?:{0.name:<6} +:{0.n:>2} {0.t!F:>6h}"
    assert fmt.header_format() == "?:{name:<6} +:{n:>2} {t:>6}"
    rows = [_Row("", 3, 0.0), _Row("", 100, 90.0), _Row("", "", 1.5)]
    # the empty ?: column goes with its prefix, the text before the next field stays (as in Flux)
    assert fmt.filter(rows) == "sort:-n  {n:>3} {t!F:>6h}"
    fmt.print_items(rows)
    assert capsys.readouterr().out == "   N   TIME\n 100   1.5m\n   3      -\n     1.500s\n"
    assert [r.n for r in rows] == [100, 3, ""]  # sorted in place, unset last when reversed
    assert fmt.copy(except_fields=["name"], nullify_expansion=True).get_format_prepended("") \
        == "sort:-n {n} {t!F:>6h}"
    with pytest.raises(ValueError, match="Unknown format field: x"):
        OutputFormat("{x}", headings=headings)
    d: dict = {}
    set_treedict(d, "a.b.c", 1)
    assert get_treedict(d, "a.b.c") == 1 and get_treedict(d, "a.x.c", 7) == 7
    del_treedict(d, "a.b.c", remove_empty=True)
    assert d == {}


def test_util_climain_logs_an_error_line_and_exits(fluxpkg, tmp_path):
    import subprocess

    script = tmp_path / "s.py"
    script.write_text("import logging, flux.util\n"
                      "def main():\n    open('/nonexistent/x')\n"
                      "flux.util.CLIMain(logging.getLogger('drain-report'))(main)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": str(bindings.PATH), "PATH": "/usr/bin:/bin"})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "drain-report: ERROR: No such file or directory: '/nonexistent/x'\n"


def test_util_tree_and_fileref(fluxpkg, capsys, tmp_path):
    import stat

    from flux.util import Fileref, Tree

    root = Tree("job", combine_children=True)
    shell = root.append("shell", prefix="0")
    shell.append("sleep")
    shell.append("sleep")
    root.append("shell", prefix="0")
    root.append_tree(Tree("broker"))
    root.render(style="ascii", truncate=False)
    # (a prefix comes before the tree's lines: pstree's pids)
    assert capsys.readouterr().out == "job\n0 |-- 2*[shell]\n|   `-- 2*[sleep]\n`-- broker\n"
    root.render(level=1, skip_root=True, style="compact")
    assert capsys.readouterr().out == "0 2*[shell]\n\u2514\u25002*[sleep]\nbroker\n"
    path = tmp_path / "f"
    path.write_bytes(b"\xff\x00")
    path.chmod(0o640)
    assert Fileref(str(path)) == {"mode": stat.S_IFREG | 0o640, "size": 2, "data": "/wA=", "encoding": "base64"}
    assert Fileref({"a": 1}, perms=0o700) == {"mode": stat.S_IFREG | 0o700, "data": {"a": 1}}
    with pytest.raises(ValueError, match="invalid encoding: hex"):
        Fileref("00", encoding="hex")
