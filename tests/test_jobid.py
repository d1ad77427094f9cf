"""Job ID encodings and parsing."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import FluxLiteError, JobIDError
from flux_lite.formats import jobid as J

MAX = 18446744073709551615

# as flux-core's t2201-job-cmd.t
MAXJOBID_DEC = "18446744073709551615"
MAXJOBID_HEX = "0xffffffffffffffff"
MAXJOBID_KVS = "job.ffff.ffff.ffff.ffff"
MAXJOBID_DOTHEX = "ffff.ffff.ffff.ffff"
MAXJOBID_WORDS = "natural-analyze-verbal--natural-analyze-verbal"
MAXJOBID_F58 = "fjpXCZedGfVQ"
MAXJOBIDS = [
    MAXJOBID_DEC,
    MAXJOBID_HEX,
    MAXJOBID_KVS,
    MAXJOBID_DOTHEX,
    MAXJOBID_WORDS,
    MAXJOBID_F58,
]

MINJOBID_DEC = "0"
MINJOBID_HEX = "0x0"
MINJOBID_KVS = "job.0000.0000.0000.0000"
MINJOBID_DOTHEX = "0000.0000.0000.0000"
MINJOBID_WORDS = "academy-academy-academy--academy-academy-academy"
MINJOBID_F58 = "f1"
MINJOBIDS = [
    MINJOBID_DEC,
    MINJOBID_HEX,
    MINJOBID_KVS,
    MINJOBID_DOTHEX,
    MINJOBID_WORDS,
    MINJOBID_F58,
]

FAST = settings(max_examples=100, deadline=None)


@pytest.fixture
def ascii_f58(monkeypatch):
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")


@pytest.fixture
def utf8_f58(monkeypatch):
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_CTYPE", raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")


# ---------------------------------------------------------------- flux job id


def test_decimal_42():
    assert J.decode("42") == 42
    assert J.encode(42, "dec") == "42"


@pytest.mark.parametrize("text", ["42 ", " 42", "42\n", "\t42\t"])
def test_whitespace_around_decimal(text):
    assert J.decode(text) == 42


@pytest.mark.parametrize("text", MAXJOBIDS)
def test_max_jobid_every_form(text):
    assert J.decode(text) == MAX
    assert J.encode(J.decode(text), "dec") == MAXJOBID_DEC


@pytest.mark.parametrize("text", MINJOBIDS)
def test_min_jobid_every_form(text):
    assert J.decode(text) == 0
    assert J.encode(J.decode(text), "dec") == MINJOBID_DEC


def test_encode_max_min(ascii_f58):
    assert J.encode(MAX, "dec") == MAXJOBID_DEC
    assert J.encode(0, "dec") == MINJOBID_DEC
    assert J.encode(MAX, "words") == MAXJOBID_WORDS
    assert J.encode(0, "words") == MINJOBID_WORDS
    assert J.encode(MAX, "kvs") == MAXJOBID_KVS
    assert J.encode(0, "kvs") == MINJOBID_KVS
    assert J.encode(MAX, "hex") == MAXJOBID_HEX
    assert J.encode(0, "hex") == MINJOBID_HEX
    assert J.encode(MAX, "dothex") == MAXJOBID_DOTHEX
    assert J.encode(0, "dothex") == MINJOBID_DOTHEX
    assert J.encode(MAX, "f58") == MAXJOBID_F58
    assert J.encode(0, "f58") == MINJOBID_F58


def test_f58_multibyte_prefix(utf8_f58):
    assert J.encode(1, "f58") == "ƒ2"
    assert J.encode(0, "f58") == "ƒ1"
    assert J.encode(MAX, "f58") == "ƒjpXCZedGfVQ"
    assert J.f58(1) == "ƒ2"


def test_f58_force_ascii(utf8_f58, monkeypatch):
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    assert J.encode(1, "f58") == "f2"
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "")  # set but empty: still ASCII
    assert J.encode(1, "f58") == "f2"


def test_unknown_encoding_fails():
    with pytest.raises(JobIDError) as exc:
        J.encode(42, "invalid")
    assert exc.value.errno == 71  # EPROTO
    assert "encoding" in str(exc.value).lower()


@pytest.mark.parametrize(
    "text",
    [
        "badstring",
        "job.0000.0000",
        "job.0000.0000.0000.000P",
        "42plusbad",
        "meep",
        "18446744073709551616",
        "bad-words",
    ],
)
def test_bad_input_fails(text):
    with pytest.raises(JobIDError) as exc:
        J.decode(text)
    assert str(exc.value) == f"{text} is not a valid Flux jobid"


def test_namespace():
    assert J.kvs_namespace(1) == "job-1"
    with pytest.raises(JobIDError):
        J.decode("-1")  # `flux job namespace -1` -> exit 1 ("-" means words)


def test_transcript_ypmark(utf8_f58):
    assert J.decode("ƒYpmarK") == 20887633920
    assert J.encode(J.decode("ƒYpmarK"), "dec") == "20887633920"
    assert J.encode(J.decode("ƒYpmarK"), "hex") == "0x4dd000000"
    assert J.encode(J.decode("ƒYpmarK"), "f58plain") == "fYpmarK"
    assert J.decode("0x4dd000000") == 20887633920
    assert J.f58(20887633920) == "ƒYpmarK"


# ------------------------------------------------------------ encoding facts


def test_fluid_layout():
    assert J.fluid(1245) == 20887633920 == 0x4DD000000
    assert J.fluid_timestamp(20887633920) == 1245
    x = J.fluid(123456789, 5, 7)
    assert x == (123456789 << 24) | (5 << 10) | 7
    assert J.fluid_timestamp(x) == 123456789
    assert J.fluid_generator(x) == 5
    assert J.fluid_sequence(x) == 7
    assert J.fluid((1 << 40) - 1, (1 << 14) - 1, (1 << 10) - 1) == MAX
    for bad in [(1 << 40, 0, 0), (0, 1 << 14, 0), (0, 0, 1 << 10), (-1, 0, 0)]:
        with pytest.raises(JobIDError):
            J.fluid(*bad)


def test_table_example(utf8_f58):
    x = 6731191091817518
    assert J.encode(x, "dec") == "6731191091817518"
    assert J.encode(x, "hex") == "0x17e9fb8df16c2e"
    assert J.encode(x, "dothex") == "0017.e9fb.8df1.6c2e"
    assert J.encode(x, "kvs") == "job.0017.e9fb.8df1.6c2e"
    assert J.encode(x, "f58") == "ƒuZZybuNNy"
    assert J.encode(x, "f58plain") == "fuZZybuNNy"


def test_encoding_names_case_insensitive(ascii_f58):
    assert J.encode(255, "HEX") == "0xff"
    assert J.encode(1, "F58") == "f2"
    assert J.encode(1, "F58Plain") == "f2"
    assert J.encode(1, "Dec") == "1"


def test_kvs_keys():
    assert J.kvs_key(1) == "job.0000.0000.0000.0001"
    assert J.kvs_key(0xDEADBEEF, "foo") == "job.0000.0000.dead.beef.foo"
    assert J.kvs_key(20887633920, "eventlog") == "job.0000.0004.dd00.0000.eventlog"
    assert J.kvs_key(1, "guest", "exec.eventlog") == (
        "job.0000.0000.0000.0001.guest.exec.eventlog"
    )
    assert J.dothex(0xDEADBEEF) == "0000.0000.dead.beef"


def test_f123_is_valid_f58():
    # digits "1", "2", "3" have values 0, 1, 2
    assert J.decode("f123") == 0 * 58 * 58 + 1 * 58 + 2
    with pytest.raises(JobIDError):
        J.decode("notajobid")


def test_error_types():
    with pytest.raises(ValueError):
        J.decode("meep")
    with pytest.raises(FluxLiteError):
        J.decode("meep")
    assert J.parse_jobid_arg("f2") == 1
    assert J.is_valid("f2") and not J.is_valid("meep")


@pytest.mark.parametrize("bad", [-1, MAX + 1, 1.0, "1", None, True])
def test_encode_rejects_non_ids(bad):
    with pytest.raises(JobIDError):
        J.encode(bad, "dec")


def test_decode_int_passthrough():
    assert J.decode(5) == 5
    with pytest.raises(JobIDError):
        J.decode(-5)
    with pytest.raises(JobIDError):
        J.decode(None)


# ------------------------------------------------------- locale detection


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"LANG": "C.UTF-8"}, "ƒ"),
        ({"LANG": "en_US.UTF-8"}, "ƒ"),
        ({"LANG": "en_US.utf8"}, "ƒ"),
        ({"LANG": "de_DE.UTF-8@euro"}, "ƒ"),
        ({"LC_ALL": "C", "LANG": "en_US.UTF-8"}, "f"),
        ({"LC_ALL": "", "LC_CTYPE": "en_US.UTF-8", "LANG": "C"}, "ƒ"),
        ({"LC_CTYPE": "POSIX", "LANG": "en_US.UTF-8"}, "f"),
        ({"LANG": "en_US"}, "f"),
        ({"LANG": "en_US.ISO-8859-1"}, "f"),
        ({}, "f"),
        ({"LANG": "C.UTF-8", "FLUX_F58_FORCE_ASCII": "1"}, "f"),
    ],
)
def test_f58_prefix_from_env(monkeypatch, env, expected):
    for var in ("LC_ALL", "LC_CTYPE", "LANG", "FLUX_F58_FORCE_ASCII"):
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert J.f58_prefix() == expected
    assert J.f58_prefix(env) == expected
    assert J.f58(1) == expected + "2"
    assert J.f58plain(1) == "f2"


# ------------------------------------------------ C parser edge behaviour


@pytest.mark.parametrize(
    "text, value",
    [
        ("+42", 42),
        ("  job.  42  ", 42),
        ("job. ", 0),  # fluid_parse quirk: whitespace after job. -> strtoull("")
        ("0x.0.0.0", 0),  # sscanf %4x reads "0x" as 0
        ("+1.+2.+3.+4", 0x0001000200030004),
        ("1. 2.\n3.\t4", 0x0001000200030004),
        ("0x12.0.0.0", 0x0012000000000000),
        ("0.0.0.-1", 0xFFFFFFFF),  # %x of -1 is UINT_MAX, OR-ed in
        ("-1.0.0.0", 0xFFFF000000000000),
        (MINJOBID_WORDS + "-bogus", 0),  # decoding stops at an unknown word
        ("NATURAL-analyze-Verbal--natural-analyze-verbal", MAX),
        ("natural analyze verbal natural analyze verbal-", MAX),
        ("ƒ1", 0),
        ("f" + "1" * 12, 0),
        ("42\v", 42),
    ],
)
def test_c_parser_quirks(text, value):
    assert J.decode(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "job.",
        "f",
        "ƒ",
        "f0",
        "fl",
        "fO",
        "fI",
        "f2 ",  # trailing whitespace only allowed for integers
        "f" + "1" * 13,  # more than 12 base58 digits
        "fjpXCZedGfVR",  # max + 1
        "0x",
        "0x ",
        "0X10",
        "+",
        "0x10000000000000000",
        "1.2.3.4 ",
        "0x123.0.0.0",
        "00000.0.0.0",
        MINJOBID_WORDS + "-academy",  # 7 words
        "academy-academy-academy--academy-academy",  # 5 words
        "ego-academy-academy--academy-academy-academy",  # remainder word
        "yes-yes-yes--yes-yes-yes",
        "42\x00",
        "1e5",
        "١٢",  # non-ASCII digits
    ],
)
def test_c_parser_rejects(text):
    with pytest.raises(JobIDError):
        J.decode(text)


def test_emoji():
    assert J.encode(0, "emoji") == "😃"
    assert J.decode("😃") == 0
    assert J.decode(J.encode(MAX, "emoji")) == MAX
    with pytest.raises(JobIDError):
        J.decode("😃" * 8)


# ------------------------------------------------------------ properties

ids = st.integers(min_value=0, max_value=MAX)


@FAST
@given(ids)
def test_roundtrip_every_encoding(x):
    for kind in J.ENCODINGS:
        assert J.decode(J.encode(x, kind)) == x


@FAST
@given(ids)
def test_roundtrip_both_f58_prefixes(x):
    plain = J.encode(x, "f58plain")
    assert plain.startswith("f") and 2 <= len(plain) <= 12
    assert J.decode(plain) == x
    assert J.decode("ƒ" + plain[1:]) == x


@FAST
@given(ids, st.sampled_from(["dec", "hex"]), st.text(" \t\n\r\v\f", max_size=3))
def test_integer_forms_allow_surrounding_space(x, kind, space):
    assert J.decode(space + J.encode(x, kind) + space) == x


@FAST
@given(ids, st.text(" \t\n", max_size=3))
def test_kvs_and_words_allow_leading_space(x, space):
    assert J.decode(space + J.encode(x, "kvs")) == x
    assert J.decode(space + J.encode(x, "words")) == x


@FAST
@given(ids)
def test_encodings_shape(x):
    assert J.encode(x, "dec") == str(x)
    assert int(J.encode(x, "hex"), 16) == x
    assert len(J.dothex(x)) == 19
    assert J.kvs_key(x) == "job." + J.dothex(x)
    assert len(J.words(x).split("-")) == 7  # w-w-w--w-w-w has one empty part


@FAST
@given(st.text())
def test_garbage_only_raises_jobiderror(text):
    try:
        value = J.decode(text)
    except JobIDError:
        return
    assert 0 <= value <= MAX


@FAST
@given(st.text(alphabet="0123456789abcdefxX.-+ fƒjob", max_size=24))
def test_garbage_near_valid_only_raises_jobiderror(text):
    try:
        value = J.decode(text)
    except JobIDError:
        return
    assert 0 <= value <= MAX


def test_f58_of_ids_named_again_follows_the_locale_and_the_checks(monkeypatch, utf8_f58):
    """A job named again (its digits remembered) still gets the prefix of the
    moment, and bad ids are refused every time, never remembered."""
    ids = [0, 1, 57, 58, 3363, 3364, 20887633920, J.MAX_JOBID] + list(range(10**6, 10**6 + 5000))
    for _ in range(2):
        for i in ids:
            assert J.f58(i) == "ƒ" + J.f58plain(i)[1:]
    assert J.f58(20887633920) == "ƒYpmarK"
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    assert J.f58(20887633920) == "fYpmarK"
    for bad in (True, -1, J.MAX_JOBID + 1, 1.0):
        for _ in range(2):
            with pytest.raises(JobIDError):
                J.f58(bad)


@FAST
@given(ids)
def test_f58_digits_from_a_shared_head_are_the_base58_digits(x):
    """f58 makes all but the last two digits from x // 3364 (kept for the
    ids of a burst): the same as the digits written out one by one."""
    assert J._f58_digits(x) == J._encode_digits(x, J._B58_DIGITS)
    assert J.f58_namer()(x) == J.f58(x)
