"""RFC 18 eventlogs and `flux job eventlog` formatting ."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import EventlogError, FluxLiteError
from flux_lite.formats import eventlog as E

FAST = settings(max_examples=100, deadline=None)

# as Flux 0.88 prints `flux job eventlog -f json ƒYpmarK`
REF_JSON = """\
{"timestamp":1795978044.3623736,"name":"submit","context":{"userid":0,"urgency":16,"flags":0,"version":1}}
{"timestamp":1795978044.3740308,"name":"validate"}
{"timestamp":1795978044.3853803,"name":"depend"}
{"timestamp":1795978044.3854091,"name":"priority","context":{"priority":16}}
{"timestamp":1795978044.3907039,"name":"alloc","context":{"annotations":{"sched":{"resource_summary":"rank0/core[0-1]"}}}}
{"timestamp":1795978044.3925231,"name":"start"}
"""

# same job, `flux job eventlog ƒYpmarK`
REF_TEXT = """\
1795978044.362374 submit userid=0 urgency=16 flags=0 version=1
1795978044.374031 validate
1795978044.385380 depend
1795978044.385409 priority priority=16
1795978044.390704 alloc annotations={"sched":{"resource_summary":"rank0/core[0-1]"}}
1795978044.392523 start
"""

# same job, `flux job eventlog -H ƒYpmarK` (machine in UTC)
REF_HUMAN = """\
[Nov29 18:47] submit userid=0 urgency=16 flags=0 version=1
[  +0.011657] validate
[  +0.023007] depend
[  +0.023036] priority priority=16
[  +0.028330] alloc annotations={"sched":{"resource_summary":"rank0/core[0-1]"}}
[  +0.030149] start
"""


@pytest.fixture
def tz_plus_5_30(timezone):
    timezone("IST-5:30")


# ----------------------------------------------------------- line format


def test_reference_lines_reencode_byte_for_byte():
    entries = E.decode(REF_JSON)
    assert len(entries) == 6
    out = "".join(
        E.encode_entry(e["timestamp"], e["name"], e.get("context")) for e in entries
    )
    assert out == REF_JSON
    assert [E.format_json(e) for e in entries] == REF_JSON.splitlines()


def test_encode_entry_key_order_and_context():
    line = E.encode_entry(1795978044.3623736, "submit", {"userid": 0, "urgency": 16})
    assert line == (
        '{"timestamp":1795978044.3623736,"name":"submit",'
        '"context":{"userid":0,"urgency":16}}\n'
    )
    assert E.encode_entry(5, "validate") == '{"timestamp":5.0,"name":"validate"}\n'
    assert E.encode_entry(5.5, "start", {}) == '{"timestamp":5.5,"name":"start"}\n'
    assert E.encode_entry(5.5, "start", None) == '{"timestamp":5.5,"name":"start"}\n'


@pytest.mark.parametrize(
    "args",
    [
        (0, "x", None),
        (-1.0, "x", None),
        (math.nan, "x", None),
        (math.inf, "x", None),
        ("1.0", "x", None),
        (True, "x", None),
        (1.0, "", None),
        (1.0, "two words", None),
        (1.0, "tab\there", None),
        (1.0, None, None),
        (1.0, "x", []),
        (1.0, "x", "ctx"),
        (1.0, "x", {1: "non-string key"}),
        (1.0, "x", {"v": math.nan}),
        (1.0, "x", {"v": math.inf}),
        (1.0, "x", {"v": object()}),
        (1.0, "x", {"v": "\ud800"}),
    ],
)
def test_encode_entry_validation(args):
    with pytest.raises(EventlogError):
        E.encode_entry(*args)


def test_jansson_reals():
    assert E.dumps(600.0) == "600.0"
    assert E.dumps(0.0) == "0.0"
    assert E.dumps(-0.0) == "-0.0"
    assert E.dumps(1795978646.5141609) == "1795978646.5141609"
    # %.17g, not the shortest repr (real Flux prints the 17th digit)
    assert E.dumps(1795978044.3854091) == "1795978044.3854091"
    assert repr(1795978044.3854091) == "1795978044.385409"
    assert E.dumps(0.1) == "0.10000000000000001"
    assert E.dumps(1e20) == "1e20"
    assert E.dumps(1e-5) == "1.0000000000000001e-5"
    assert E.dumps(1.5e300) == "1.5000000000000001e300"
    assert E.dumps(1e100) == "1e100"


def test_jansson_strings_and_containers():
    assert E.dumps("a\"b\\c") == '"a\\"b\\\\c"'
    assert E.dumps("\n\t\r\b\f") == '"\\n\\t\\r\\b\\f"'
    assert E.dumps("\x01\x1f\x7f") == '"\\u0001\\u001F\x7f"'
    assert E.dumps("é/ƒ") == '"é/ƒ"'
    assert E.dumps([True, False, None, 1, "x"]) == '[true,false,null,1,"x"]'
    assert E.dumps({"a": {"b": []}, "c": {}}) == '{"a":{"b":[]},"c":{}}'
    assert E.dumps((1, 2)) == "[1,2]"
    loop = []
    loop.append(loop)
    with pytest.raises(EventlogError):
        E.dumps(loop)


# ---------------------------------------------------------------- decode


def test_decode_empty_and_partial():
    assert E.decode("") == []
    line = '{"timestamp":1.5,"name":"a"}'
    assert E.decode(line + "\n") == [{"timestamp": 1.5, "name": "a"}]
    # text after the last newline is an incomplete write and is ignored...
    assert E.decode(line + "\n" + line) == [{"timestamp": 1.5, "name": "a"}]
    # ...unless strict
    with pytest.raises(EventlogError, match="line 2"):
        E.decode(line + "\n" + line, strict=True)
    # but there must be at least one newline
    with pytest.raises(EventlogError):
        E.decode(line)


@pytest.mark.parametrize(
    "text, lineno",
    [
        ('{"timestamp":1,"name":"a"}\n\n', 2),
        ('{"timestamp":1,"name":"a"}\nnot json\n', 2),
        ('{"name":"a"}\n', 1),
        ('{"timestamp":"1","name":"a"}\n', 1),
        ('{"timestamp":true,"name":"a"}\n', 1),
        ('{"timestamp":1}\n', 1),
        ('{"timestamp":1,"name":5}\n', 1),
        ('{"timestamp":1,"name":"a","context":[]}\n', 1),
        ('{"timestamp":1,"name":"a","context":null}\n', 1),
        ('[1,2]\n', 1),
        ('{"timestamp":NaN,"name":"a"}\n', 1),
        ('{"timestamp":1,"name":"a","context":{"x":Infinity}}\n', 1),
        ('{"timestamp":1e999,"name":"a"}\n', 1),
        ('{"timestamp":1,"name":"\\ud800"}\n', 1),
        ('{"timestamp":1,"name":"a"} x\n', 1),
    ],
)
def test_decode_rejects_with_line_number(text, lineno):
    with pytest.raises(EventlogError, match=f"line {lineno}"):
        E.decode(text)


def test_decode_entry():
    e = E.decode_entry('{"timestamp":2,"name":"x","context":{"a":[1]}}\n')
    assert e == {"timestamp": 2, "name": "x", "context": {"a": [1]}}
    assert E.decode_entry('{"timestamp":2,"name":"x"}') == {"timestamp": 2, "name": "x"}
    for bad in ["", "\n", '{"timestamp":2,\n"name":"x"}', "{}", 5]:
        with pytest.raises(EventlogError):
            E.decode_entry(bad)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        E.decode("garbage\n")
    with pytest.raises(FluxLiteError):
        E.decode("garbage\n")


# ------------------------------------------------------------ formatting


def test_format_text_reference():
    entries = E.decode(REF_JSON)
    assert [E.format_text(e) for e in entries] == REF_TEXT.splitlines()


@pytest.mark.parametrize(
    "entry, text",
    [
        (
            {
                "timestamp": 1795978045.027051,
                "name": "exception",
                "context": {"type": "cancel", "severity": 0, "note": "", "userid": 0},
            },
            '1795978045.027051 exception type="cancel" severity=0 note="" userid=0',
        ),
        (
            {"timestamp": 1795978045.027911, "name": "finish", "context": {"status": 15}},
            "1795978045.027911 finish status=15",
        ),
        (
            {
                "timestamp": 1795978045.030453,
                "name": "release",
                "context": {"ranks": "all", "final": True},
            },
            '1795978045.030453 release ranks="all" final=true',
        ),
        (
            {
                "timestamp": 1795978047.116267,
                "name": "jobspec-update",
                "context": {"attributes.system.duration": 600.0},
            },
            "1795978047.116267 jobspec-update attributes.system.duration=600.0",
        ),
        (
            {
                "timestamp": 1795978046.5159934,
                "name": "resource-update",
                "context": {"expiration": 1795978646.5141609},
            },
            "1795978046.515993 resource-update expiration=1795978646.5141609",
        ),
        ({"timestamp": 3, "name": "free", "context": {}}, "3.000000 free"),
    ],
)
def test_format_text_examples(entry, text):
    assert E.format_text(entry) == text


def test_format_human_reference(utc):
    entries = E.decode(REF_JSON)
    assert E.format_human(entries) == REF_HUMAN.splitlines()


def test_format_human_new_minute(utc):
    base = 1795978020.0  # 2026-11-29 18:47:00 UTC
    entries = [
        {"timestamp": base + 1.5, "name": "a"},
        {"timestamp": base + 59.25, "name": "b"},
        {"timestamp": base + 60.5, "name": "c"},
        {"timestamp": base + 61.0, "name": "d"},
        {"timestamp": base + 3 * 86400 + 1000.125, "name": "e"},
        {"timestamp": base + 3 * 86400 + 1000.125 + 123.0, "name": "f"},
    ]
    assert E.format_human(entries) == [
        "[Nov29 18:47] a",
        "[ +57.750000] b",
        "[Nov29 18:48] c",
        "[  +0.500000] d",
        "[Dec02 19:03] e",
        "[Dec02 19:05] f",
    ]


def test_format_human_large_offset_and_fallback(utc):
    fmt = E.EventlogFormatter(timestamp_format="human")
    assert fmt.format_entry({"timestamp": 1795978020.0, "name": "a"}) == "[Nov29 18:47] a"
    # a negative timestamp cannot be converted: raw value in offset style
    assert fmt.format_entry({"timestamp": -1.5, "name": "b"}) == "[  -1.500000] b"


def test_format_iso(utc):
    entry = E.decode(REF_JSON)[0]
    # microseconds are truncated, as formatter.c does: .3623736 -> 362373
    assert E.format_iso(entry) == (
        "2026-11-29T18:47:24.362373Z submit userid=0 urgency=16 flags=0 version=1"
    )


def test_format_iso_timezone_offset(tz_plus_5_30):
    entry = {"timestamp": 1795978044.5, "name": "x"}
    assert E.format_iso(entry) == "2026-11-30T00:17:24.500000+05:30 x"


def test_format_offset():
    entries = E.decode(REF_JSON)
    assert E.format_offset(entries) == [
        "0.000000 submit userid=0 urgency=16 flags=0 version=1",
        "0.011657 validate",
        "0.023007 depend",
        "0.023036 priority priority=16",
        '0.028330 alloc annotations={"sched":{"resource_summary":"rank0/core[0-1]"}}',
        "0.030149 start",
    ]


def test_formatter_options_and_color():
    with pytest.raises(EventlogError):
        E.EventlogFormatter(format="yaml")
    with pytest.raises(EventlogError):
        E.EventlogFormatter(timestamp_format="bogus")
    fmt = E.EventlogFormatter(format="JSON")
    entry = {"timestamp": 1.0, "name": "x", "context": {"a": 1}}
    assert fmt.format_entry(entry) == '{"timestamp":1.0,"name":"x","context":{"a":1}}'
    colored = E.EventlogFormatter(color=True).format_entry(
        {"timestamp": 1.0, "name": "exception", "context": {"a": 1, "b": "s"}}
    )
    assert colored == (
        "\x1b[32m1.000000\x1b[0m \x1b[1m\x1b[31mexception\x1b[0m"
        " \x1b[34ma\x1b[0m=\x1b[37m1\x1b[0m"
        ' \x1b[34mb\x1b[0m=\x1b[35m"s"\x1b[0m'
    )
    assert E.format_entries([entry], timestamp_format="reltime")[0].endswith(" x a=1")


def test_format_rejects_invalid_entries():
    for bad in [{}, {"timestamp": 1}, {"timestamp": 1, "name": "a", "context": 5}, []]:
        with pytest.raises(EventlogError):
            E.format_text(bad)
        with pytest.raises(EventlogError):
            E.format_json(bad)


def test_context_value_matches():
    ctx = {"type": "cancel", "severity": 0, "x": {"a": 1}, "f": 600.0}
    assert E.context_value_matches(ctx, "type", "cancel")
    assert E.context_value_matches(ctx, "type", '"cancel"')
    assert E.context_value_matches(ctx, "severity", "0")
    assert E.context_value_matches(ctx, "x", '{"a":1}')
    assert E.context_value_matches(ctx, "f", "600.0")
    assert not E.context_value_matches(ctx, "f", "600")
    assert not E.context_value_matches(ctx, "missing", "0")
    assert not E.context_value_matches(None, "type", "cancel")


# ------------------------------------------------------------ properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=12,
).filter(lambda s: s.split() == [s])
timestamps = st.floats(min_value=1e-9, max_value=1e12, allow_nan=False)
contexts = st.none() | st.dictionaries(st.text(max_size=6), json_values, max_size=4)


def _no_surrogates(value):
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=60, deadline=None)
@given(timestamps, names, contexts)
def test_encode_decode_roundtrip(ts, name, context):
    if not _no_surrogates(context):
        with pytest.raises(EventlogError):
            E.encode_entry(ts, name, context)
        return
    line = E.encode_entry(ts, name, context)
    assert line.endswith("\n") and line.count("\n") == 1
    entry = E.decode_entry(line)
    assert entry["timestamp"] == ts
    assert entry["name"] == name
    assert list(entry)[:2] == ["timestamp", "name"]
    if context:
        assert entry["context"] == context
        assert list(entry["context"]) == list(context)
    else:
        assert "context" not in entry
    # the line is standard JSON too
    assert json.loads(line) == entry
    assert E.format_json(entry) + "\n" == line


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(timestamps, names, contexts), max_size=4))
def test_eventlog_roundtrip(items):
    items = [i for i in items if _no_surrogates(i[2])]
    text = "".join(E.encode_entry(*i) for i in items)
    entries = E.decode(text)
    assert [(e["timestamp"], e["name"]) for e in entries] == [
        (ts, name) for ts, name, _ in items
    ]
    assert E.decode(text, strict=True) == entries


@FAST
@given(json_values)
def test_dumps_is_valid_json(value):
    if not _no_surrogates(value):
        return
    assert json.loads(E.dumps(value)) == value


@FAST
@given(st.text())
def test_garbage_only_raises_eventlogerror(text):
    for func in (E.decode, E.decode_entry):
        try:
            func(text)
        except EventlogError:
            pass


@FAST
@given(st.text(alphabet='{}[]":,0123456789.e-tnamesporcx \n\\u', max_size=40))
def test_near_json_garbage_only_raises_eventlogerror(text):
    for func in (E.decode, E.decode_entry):
        try:
            result = func(text)
        except EventlogError:
            continue
        assert isinstance(result, (list, dict))


# -- context texts the job manager writes itself -------------------------------------


def _int_values(rng, n):
    pool = [0, 1, -1, 16, 31, 255, 256, 2**31 - 1, 2**32, -(2**63), 2**64 + 7, 10**30]
    return [rng.choice(pool) if rng.random() < 0.5 else rng.randint(-(10**12), 10**12) for _ in range(n)]


def test_int_context_format_is_what_encode_entry_writes():
    """A context of exact ints written from int_context_format's text is the
    line encode_entry writes of the context itself, for every spelling of an
    int (negative, past 64 bits); the job manager's own formats too."""
    import random

    from flux_lite.job_manager import event, exec as exec_, submit

    rng = random.Random(12)
    formats = [(("userid", "urgency", "flags", "version"), submit._SUBMIT_TEXT),
               (("priority",), event._PRIORITY_TEXT), (("status",), exec_._STATUS_TEXT),
               (("a", "b_c", "d-e"), E.int_context_format("a", "b_c", "d-e"))]
    for keys, fmt in formats:
        assert fmt == E.int_context_format(*keys)
        for _ in range(200):
            values = _int_values(rng, len(keys))
            ctx = dict(zip(keys, values))
            ts = rng.choice([1.0, 1795978044.3623736, 1e-7, 1.5e9])
            line = E.encode_entry(ts, "ev", ctx, fmt % tuple(values))
            assert line == E.encode_entry(ts, "ev", ctx)
            assert E.decode(line) == [{"timestamp": ts, "name": "ev", "context": ctx}]


@pytest.mark.parametrize("key", ['a"b', "a\\b", "a\nb", "é", "a%d", 1, None])
def test_int_context_format_refuses_keys_needing_escapes(key):
    with pytest.raises(ValueError):
        E.int_context_format("ok", key)


def test_plain_context_text_is_what_encode_entry_writes():
    from flux_lite.job_manager import exec as exec_

    for ctx in ({"ranks": "all", "final": True}, {"a": None, "b": {"c": "d é"}, "e": -3}):
        text = E.plain_context_text(ctx)
        assert E.encode_entry(2.5, "x", ctx, text) == E.encode_entry(2.5, "x", ctx)
    assert exec_._RELEASE_ALL_TEXT == '{"ranks":"all","final":true}'
    for bad in ({"t": 1.5}, {"l": [1]}, {"s": "a\x01"}, {}, None, [("a", 1)]):
        with pytest.raises(ValueError):
            E.plain_context_text(bad)


def test_the_job_managers_contexts_are_written_as_encode_entry_writes_them(tmp_path):
    """Every line of jobs run through submit, priority, finish and release
    (a wait status, an urgency, a cancel: SIGTERM) re-encodes to itself,
    and its context is the job's own values."""
    from flux_lite import workload
    from flux_lite.formats.jobid import kvs_key
    from flux_lite.instance import Instance

    inst = Instance.create(tmp_path / "s", size=1, cores=2, clock="virtual")
    try:
        with inst.session() as broker:
            jm = broker.jm
            js = workload.jobspec_for(workload.TraceJob(1, 0.0, 30, 1, 600, -1, -1))
            js["attributes"]["system"]["exec"]["test"]["wait_status"] = 256
            done = jm.submit(js, urgency=7)
            long = jm.submit(workload.jobspec_for(workload.TraceJob(2, 0.0, 900, 1, 600, -1, -1)), flags=4)
            broker.advance_to(broker.now + 60)
            jm.request_raise(long, 0, "cancel")
            broker.run()
            logs = {jobid: broker.kvs.get(kvs_key(jobid, "eventlog")) for jobid in (done, long)}
    finally:
        inst.close()
    contexts = {}
    for jobid, text in logs.items():
        for line in text.splitlines(keepends=True):
            (entry,) = E.decode(line)
            assert E.encode_entry(entry["timestamp"], entry["name"], entry.get("context")) == line
            contexts[jobid, entry["name"]] = entry.get("context")
    owner = inst.owner
    assert contexts[done, "submit"] == {"userid": owner, "urgency": 7, "flags": 0, "version": 1}
    assert contexts[long, "submit"] == {"userid": owner, "urgency": 16, "flags": 4, "version": 1}
    assert contexts[done, "priority"] == {"priority": 7}
    assert contexts[done, "finish"] == {"status": 256}
    assert contexts[long, "finish"] == {"status": 15}
    assert contexts[done, "release"] == contexts[long, "release"] == {"ranks": "all", "final": True}
