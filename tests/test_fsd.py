"""Flux Standard Duration parsing and formatting ."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import FluxLiteError, FSDError
from flux_lite.formats import fsd

FAST = settings(max_examples=100, deadline=None)

# core:src/common/libutil/test/fsd.c (RFC 23 vectors)
RFC23 = [
    ("2ms", 0.002),
    ("0.1s", 0.1),
    ("30", 30.0),
    ("1.2h", 4320.0),
    ("5m", 300.0),
    ("0s", 0.0),
    ("5d", 432000.0),
    ("inf", math.inf),
    ("INF", math.inf),
    ("infinity", math.inf),
]


# ------------------------------------------------------------ C parser


@pytest.mark.parametrize("text, value", RFC23)
def test_c_parser_rfc23_vectors(text, value):
    assert fsd.parse_config(text) == pytest.approx(value)


@pytest.mark.parametrize(
    "text, value",
    [
        ("0", 0.0),
        ("0ms", 0.0),
        ("0m", 0.0),
        ("0h", 0.0),
        ("0d", 0.0),
        ("500ms", 0.5),
        ("0.2ms", 0.0002),
        ("0.5", 0.5),
        ("0.5s", 0.5),
        ("0.5m", 30.0),
        ("0.5h", 1800.0),
        ("1.0d", 86400.0),
        # quirks of strtod()
        ("", 0.0),
        ("  5m", 300.0),
        ("+5s", 5.0),
        ("+.5s", 0.5),
        ("1e3", 1000.0),
        ("1e3ms", 1.0),
        ("0x10", 16.0),
        ("0x1p3m", 480.0),
        ("INFINITY", math.inf),
        ("Infinity", math.inf),
        ("iNf", math.inf),
        ("s", 0.0),  # no number: 0 with suffix "s"
        ("1e400", math.inf),  # overflow -> HUGE_VAL, accepted as infinity
        ("-0", 0.0),
    ],
)
def test_c_parser_accepts(text, value):
    assert fsd.parse_config(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "-1.",
        "1.0f",
        "1.0sec",
        "NaNs",
        "infinites",
        "infd",
        "infs",
        "nan",
        "NAN(1)",
        "-5m",
        " ",
        "5m ",
        "5 m",
        "1e",
        "0x",
        "1e400s",
        "5M",
        "5\x00",
        "1_0",
        "x",
    ],
)
def test_c_parser_rejects(text):
    with pytest.raises(FSDError) as exc:
        fsd.parse_config(text)
    assert str(exc.value) == "invalid Flux standard duration"


def test_c_parser_numbers():
    assert fsd.parse_config(5) == 5.0
    assert isinstance(fsd.parse_config(5), float)
    assert fsd.parse_config(2.5) == 2.5
    assert fsd.parse_config(math.inf) == math.inf
    for bad in (-1, math.nan, True, None, [1]):
        with pytest.raises(FSDError):
            fsd.parse_config(bad)


# ------------------------------------------------------- Python parser


@pytest.mark.parametrize("text, value", RFC23)
def test_python_parser_rfc23_vectors(text, value):
    assert fsd.parse(text) == pytest.approx(value)


@pytest.mark.parametrize(
    "text, value",
    [
        ("INFINITY", math.inf),
        ("10", 10.0),
        ("1.5h", 5400.0),
        ("0.2ms", 0.0002),
        ("500ms", 0.5),
        ("10m", 600.0),
        ("+5m", 300.0),  # float() accepts the sign
        (" 5 m", 300.0),  # float() strips spaces
        ("5m\n", 300.0),  # "$" matches before a final newline
        ("1e3", 1000.0),
        ("0.0000001ms", 0.0),  # timedelta rounds to microseconds
    ],
)
def test_python_parser_accepts(text, value):
    assert fsd.parse(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Inf",  # only the four exact spellings mean infinity
        "Infinity",
        "infs",
        "-1",
        "-5m",
        "nan",
        "nans",
        "1e400",
        "1e10d",  # timedelta overflow
        "5x",
        "1.0sec",
        "5\nm",
        "m",
    ],
)
def test_python_parser_rejects(text):
    with pytest.raises(FSDError) as exc:
        fsd.parse(text)
    assert str(exc.value) == "invalid Flux standard duration"


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        fsd.parse("bogus")
    with pytest.raises(FluxLiteError):
        fsd.parse_config("bogus")


def test_python_parser_numbers():
    assert fsd.parse(60) == 60.0
    with pytest.raises(FSDError):
        fsd.parse(math.inf)
    with pytest.raises(FSDError):
        fsd.parse(-1)


# ---------------------------------------------------------- formatters


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.152, "0.152s"),  # the TIME column of Flux 0.88's flux jobs
        (0.636, "0.636s"),
        (0.202, "0.202s"),
        (53.92, "53.92s"),
        (29.89 * 60, "29.89m"),  # eta:29.89m
        (9.981 * 60, "9.981m"),
        (300.0, "5m"),
        (1.098602294921875, "1.099s"),
        (0.0, "0s"),
        (0.0009, "0s"),
        (-5.0, "0s"),
        (0.001, "0.001s"),
        (9.9994, "9.999s"),
        (10.0, "10s"),
        (59.99, "59.99s"),
        (3600.0, "1h"),
        (7200.0, "2h"),
        (86400.0 * 3, "3d"),
        (math.inf, "inf"),
    ],
)
def test_format_fsd(seconds, text):
    assert fsd.format_fsd(seconds) == text


@pytest.mark.parametrize(
    "seconds, precision, text",
    [
        (3600, 2, "1h"),
        (90, 2, "1.5m"),
        (120, 2, "2m"),
        (60, 2, "1m"),
        (0, 2, "0s"),
        (0.05, 2, "50ms"),
        (math.inf, 2, "infinity"),
        # core:src/common/libutil/test/fsd.c (precision 6)
        (0.001, 6, "1ms"),
        (0.01, 6, "10ms"),
        (5.0, 6, "5s"),
        (5.1, 6, "5.1s"),
        (62.0, 6, "1.03333m"),
        (3600.0, 6, "1h"),
        (4500.0, 6, "1.25h"),
        (86400.0, 6, "1d"),
        (103680.0, 6, "1.2d"),
        (62.0, 1, "1m"),
    ],
)
def test_format_c(seconds, precision, text):
    assert fsd.format_c(seconds, precision) == text


def test_format_c_default_precision_and_errors():
    assert fsd.format_c(5400) == "1.5h"
    for bad in (-1.0, math.nan):
        with pytest.raises(FSDError):
            fsd.format_c(bad)


# ------------------------------------------------------------ properties

durations = st.floats(min_value=0.0, max_value=1e12, allow_nan=False)


@FAST
@given(durations)
def test_both_parsers_read_plain_numbers(x):
    assert fsd.parse_config(repr(x)) == x
    assert fsd.parse(repr(x)) == x


@FAST
@given(st.floats(min_value=0.0, max_value=1e6), st.sampled_from(["s", "m", "h", "d"]))
def test_parsers_agree_on_simple_suffixes(x, unit):
    text = "%.3f%s" % (x, unit)
    a = fsd.parse_config(text)
    b = fsd.parse(text)
    assert a == pytest.approx(b, rel=1e-9, abs=1e-6)


@FAST
@given(durations)
def test_format_fsd_parses_back(x):
    text = fsd.format_fsd(x)
    back = fsd.parse(text)
    if x < 1e-3:
        assert back == 0.0
    else:
        assert back == pytest.approx(x, rel=1e-3, abs=5e-4)


@FAST
@given(durations, st.integers(min_value=1, max_value=17))
def test_format_c_parses_back(x, precision):
    text = fsd.format_c(x, precision)
    back = fsd.parse_config(text)
    assert back == pytest.approx(x, rel=max(10.0 ** (1 - precision), 1e-12))


@FAST
@given(st.text())
def test_garbage_only_raises_fsderror(text):
    for parser in (fsd.parse, fsd.parse_config):
        try:
            value = parser(text)
        except FSDError:
            continue
        assert value >= 0 and not math.isnan(value)


@FAST
@given(st.text(alphabet="0123456789.eE+-xXpPinfatyINFATYsmhd _\t", max_size=10))
def test_near_valid_garbage_only_raises_fsderror(text):
    for parser in (fsd.parse, fsd.parse_config):
        try:
            value = parser(text)
        except FSDError:
            continue
        assert value >= 0 and not math.isnan(value)


# -- one parser: every FSD the library reads goes through flux_lite.formats.fsd ----------


@settings(max_examples=300)
@given(st.one_of(
    st.sampled_from(["1e10d", "1e8d", "5m", "inf", "0x10s", " 5m", "1e400", "2.5h", "-1s", "nan", ""]),
    st.from_regex(r"[0-9e.x+ -]{0,6}(ms|s|m|h|d)?", fullmatch=True),
))
def test_jobspec_uses_the_one_parser(text):
    """Jobspec.duration parses as flux.util.parse_fsd (so 1e10d is invalid, as
    Flux's timedelta overflows); exec.test.run_duration as libutil's C parser
    (there 1e10d is 8.64e14 s)."""
    from flux_lite.formats import jobspec

    try:
        expected = fsd.parse(text)
    except FSDError:
        with pytest.raises(FluxLiteError, match="invalid Flux standard duration"):
            jobspec.build(["true"], duration=text)
    else:
        if math.isinf(expected):  # parsed, then refused as Jobspec.duration refuses it
            with pytest.raises(FluxLiteError, match="finite"):
                jobspec.build(["true"], duration=text)
        else:
            assert jobspec.build(["true"], duration=text)["attributes"]["system"]["duration"] == expected
    js = jobspec.build(["true"], duration=60)
    js["attributes"]["system"]["exec"] = {"test": {"run_duration": text}}
    try:
        assert jobspec.run_duration(js) == fsd.parse_config(text)
    except FSDError:
        assert jobspec.run_duration(js) == 60.0


def test_1e10d():
    with pytest.raises(FSDError):
        fsd.parse("1e10d")
    assert fsd.parse_config("1e10d") == 1e10 * 86400
