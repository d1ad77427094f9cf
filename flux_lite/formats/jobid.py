"""Flux job IDs: RFC 19 FLUIDs and every string form flux-core accepts.

A job ID is an unsigned 64-bit integer laid out as
``[timestamp:40 | generator:14 | sequence:10]`` (most significant first).

Encodings (``encode(id, to)``, names case-insensitive): ``dec``, ``hex``,
``dothex``, ``kvs``, ``words`` (mnemonicode), ``f58``, ``f58plain`` and
``emoji``.  ``decode()`` follows flux-core's ``flux_job_id_parse()`` /
``fluid_parse()`` detection order:

1. leading whitespace is skipped, then a ``job.`` prefix is dropped;
2. a ``.`` anywhere means dothex (``%4x.%4x.%4x.%4x``, nothing after);
3. else a ``-`` anywhere means mnemonicode words (must give 8 bytes);
4. else a leading ``ƒ`` or ``f`` means F58 (1-12 base58 digits);
5. else a leading emoji means base-576 emoji;
6. else ``0x`` means hexadecimal, otherwise decimal (``strtoull`` syntax,
   trailing whitespace allowed, overflow rejected).

Deliberate differences from the C code: values that do not fit in 64 bits
are rejected for F58 and emoji (C silently wraps), and NUL characters are
rejected (C would stop reading at them).

Stdlib only; importing this module does no work beyond defining constants.
"""

import os
from errno import EINVAL, EPROTO

from flux_lite.errors import JobIDError

__all__ = [
    "MAX_JOBID",
    "ENCODINGS",
    "fluid",
    "fluid_timestamp",
    "fluid_generator",
    "fluid_sequence",
    "encode",
    "decode",
    "parse_jobid_arg",
    "is_valid",
    "f58",
    "f58plain",
    "f58_prefix",
    "utf8_locale",
    "dothex",
    "kvs_key",
    "kvs_namespace",
    "words",
    "emoji",
]

MAX_JOBID = (1 << 64) - 1

_TS_BITS = 40
_GEN_BITS = 14
_SEQ_BITS = 10
_TS_SHIFT = _GEN_BITS + _SEQ_BITS

#: encoding names accepted by encode() (lower case)
ENCODINGS = ("dec", "hex", "dothex", "kvs", "words", "f58", "f58plain", "emoji")


# C isspace() in the C locale
_C_SPACE = " \t\n\v\f\r"

_B58_DIGITS = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_VALUE = {c: i for i, c in enumerate(_B58_DIGITS)}
_F58_MAX_DIGITS = 12
_F58_UTF8_PREFIX = "\u0192"  # ƒ

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_DEC_DIGITS = frozenset("0123456789")
_ASCII_LETTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

_MN_BASE = 1626  # number of regular mnemonicode words
_MN_REMAINDER = 7  # extra words used only for 24-bit remainders
_MN_WORDBUF = 24  # longest word prefix the C decoder looks at

_cache: dict = {}


def _check_id(jobid):
    if isinstance(jobid, bool) or not isinstance(jobid, int):
        raise JobIDError(f"job id must be an integer, not {jobid!r}")
    if jobid < 0 or jobid > MAX_JOBID:
        raise JobIDError(f"job id {jobid} is out of range")
    return jobid


# --------------------------------------------------------------------------
# FLUID layout


def fluid(timestamp_ms, generator=0, sequence=0):
    """Build a FLUID: (timestamp_ms << 24) | (generator << 10) | sequence.

    ``timestamp_ms`` counts milliseconds since the instance epoch.
    """
    if (type(timestamp_ms) is int and type(generator) is int and type(sequence) is int
            and 0 <= timestamp_ms < 1 << _TS_BITS and 0 <= generator < 1 << _GEN_BITS
            and 0 <= sequence < 1 << _SEQ_BITS):
        return (timestamp_ms << _TS_SHIFT) | (generator << _SEQ_BITS) | sequence  # (the usual case)
    for name, value, bits in (
        ("timestamp", timestamp_ms, _TS_BITS),
        ("generator", generator, _GEN_BITS),
        ("sequence", sequence, _SEQ_BITS),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise JobIDError(f"FLUID {name} must be an integer")
        if value < 0 or value >= (1 << bits):
            raise JobIDError(f"FLUID {name} {value} does not fit in {bits} bits")
    return (timestamp_ms << _TS_SHIFT) | (generator << _SEQ_BITS) | sequence


def fluid_timestamp(jobid):
    """Timestamp field (ms since the instance epoch) of a FLUID."""
    return _check_id(jobid) >> _TS_SHIFT


def fluid_generator(jobid):
    """Generator id field of a FLUID."""
    return (_check_id(jobid) >> _SEQ_BITS) & ((1 << _GEN_BITS) - 1)


def fluid_sequence(jobid):
    """Sequence field of a FLUID."""
    return _check_id(jobid) & ((1 << _SEQ_BITS) - 1)


# --------------------------------------------------------------------------
# Locale and the F58 prefix


def utf8_locale(environ=None):
    """True if the locale named by the environment has a UTF-8 codeset.

    Mirrors what ``setlocale(LC_ALL, "")`` then ``nl_langinfo(CODESET)``
    would give: the first non-empty of LC_ALL, LC_CTYPE, LANG names the
    locale; its codeset (after ``.``, before ``@``) must be UTF-8/utf8.
    ``C.UTF-8`` counts.  Whether the locale is installed is not checked.
    """
    env = os.environ if environ is None else environ
    name = ""
    for var in ("LC_ALL", "LC_CTYPE", "LANG"):
        name = env.get(var) or ""
        if name:
            break
    if not name:
        return False
    _, dot, codeset = name.partition(".")
    if not dot:
        return False
    codeset = codeset.partition("@")[0]
    return codeset.lower().replace("-", "").replace("_", "") == "utf8"


def f58_prefix(environ=None):
    """The F58 prefix flux-core would print now: "ƒ" or "f".

    Re-reads the environment on every call (it is only a few lookups):
    "ƒ" when the locale is UTF-8 and FLUX_F58_FORCE_ASCII is not set
    (set to anything, even empty, forces "f").
    """
    if environ is None:
        # os.environ's lookups encode every key: read the raw mapping instead
        # and remember the answer for this exact set of values
        raw = getattr(os.environ, "_data", None)
        if isinstance(raw, dict):
            key = (raw.get(b"FLUX_F58_FORCE_ASCII"), raw.get(b"LC_ALL"), raw.get(b"LC_CTYPE"), raw.get(b"LANG"))
            hit = _PREFIX_CACHE.get(key)
            if hit is None:
                hit = _PREFIX_CACHE[key] = _f58_prefix(os.environ)
            return hit
    return _f58_prefix(os.environ if environ is None else environ)


_PREFIX_CACHE: dict = {}


def _f58_prefix(env):
    if "FLUX_F58_FORCE_ASCII" in env:
        return "f"
    return _F58_UTF8_PREFIX if utf8_locale(env) else "f"


# --------------------------------------------------------------------------
# Encoders


def _encode_digits(value, digits):
    """value in base len(digits), most significant digit first (the inverse of
    _decode_digits): f58 and the emoji form."""
    if value == 0:
        return digits[0]
    base = len(digits)
    out = []
    while value:
        value, rem = divmod(value, base)
        out.append(digits[rem])
    return "".join(reversed(out))


_B58_PAIRS = [a + b for a in _B58_DIGITS for b in _B58_DIGITS]


def _b58(jobid):
    """_encode_digits(jobid, _B58_DIGITS), two digits per step (58**2 =
    3364): half the divisions (hello logs thousands of ids); inner pairs
    keep their leading zero digit, the most significant part does not."""
    if jobid < 58:
        return _B58_DIGITS[jobid]
    pairs = _B58_PAIRS
    out = []
    while jobid >= 3364:
        jobid, rem = divmod(jobid, 3364)
        out.append(pairs[rem])
    out.append(pairs[jobid] if jobid >= 58 else _B58_DIGITS[jobid])
    return "".join(reversed(out))


def f58(jobid):
    """F58 form with the locale-dependent prefix, e.g. ``ƒYpmarK``."""
    return f58_prefix() + _f58_digits(jobid)


def f58_namer():
    """f58 with the prefix read once: a loop naming thousands of jobs."""
    prefix = f58_prefix()
    return lambda jobid: prefix + _f58_digits(jobid)


def _f58_digits(jobid):
    """_b58(jobid) of a valid id: all but its last two digits are those of
    jobid // 3364, which the jobs of a burst share (made once: a hello
    names thousands of jobs)."""
    if type(jobid) is int and 3364 <= jobid <= MAX_JOBID:
        high, low = divmod(jobid, 3364)
        head = _F58_HEADS.get(high)
        if head is None:
            if len(_F58_HEADS) >= 4096:
                _F58_HEADS.clear()
            head = _F58_HEADS[high] = _b58(high)
        return head + _B58_PAIRS[low]
    return _b58(_check_id(jobid))


# jobid // 3364 -> its base58 digits (see _f58_digits)
_F58_HEADS: dict = {}


def f58plain(jobid):
    """F58 form that always uses the ASCII ``f`` prefix."""
    return "f" + _b58(_check_id(jobid))


def dothex(jobid):
    """``XXXX.XXXX.XXXX.XXXX`` (four 16-bit groups, lower-case hex)."""
    h = "%016x" % _check_id(jobid)
    return f"{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"


_JOB_DIRS: dict = {}  # job id -> its KVS directory (a job's keys are made a few times)


def kvs_key(jobid, *subkeys):
    """KVS directory of a job, e.g. ``job.0000.0004.b200.0000``.

    Extra arguments are appended as dotted path components:
    ``kvs_key(id, "eventlog")`` -> ``job.0000.0004.b200.0000.eventlog``.
    """
    key = _JOB_DIRS.get(jobid) if type(jobid) is int else None
    if key is None:
        key = "job." + dothex(jobid)
        if len(_JOB_DIRS) >= 4096:
            _JOB_DIRS.clear()
        _JOB_DIRS[jobid] = key
    for sub in subkeys:
        if not isinstance(sub, str) or not sub:
            raise JobIDError(f"invalid KVS subkey {sub!r}")
        key += "." + sub
    return key



def jobid_of_key(key: str) -> int | None:
    """The job id a job.XXXX.XXXX.XXXX.XXXX.* KVS key belongs to, else None."""
    if not key.startswith("job."):
        return None
    parts = key.split(".")
    if len(parts) < 5 or not all(len(p) == 4 for p in parts[1:5]):
        return None
    try:
        return int("".join(parts[1:5]), 16)
    except ValueError:
        return None


def kvs_namespace(jobid):
    """Name of a job's guest KVS namespace: ``job-<decimal id>``."""
    return "job-%d" % _check_id(jobid)


def _mn_words():
    words = _cache.get("words")
    if words is None:
        words = _MN_WORDS_TEXT.split()
        if len(words) != _MN_BASE + _MN_REMAINDER:  # pragma: no cover
            raise RuntimeError("mnemonicode word list is corrupt")
        _cache["words"] = words
    return words


def _mn_index():
    index = _cache.get("mn_index")
    if index is None:
        index = {w: i + 1 for i, w in enumerate(_mn_words())}
        _cache["mn_index"] = index
    return index


def words(jobid):
    """Mnemonicode of the id's 8 little-endian bytes: ``w-w-w--w-w-w``."""
    x = _check_id(jobid)
    wl = _mn_words()
    out = []
    for group in (x & 0xFFFFFFFF, x >> 32):
        out.append(wl[group % _MN_BASE])
        out.append(wl[(group // _MN_BASE) % _MN_BASE])
        out.append(wl[(group // (_MN_BASE * _MN_BASE)) % _MN_BASE])
    return "-".join(out[:3]) + "--" + "-".join(out[3:])


def _emoji_index():
    index = _cache.get("emoji_index")
    if index is None:
        index = {c: i for i, c in enumerate(_EMOJI_TEXT)}
        _cache["emoji_index"] = index
    return index


def emoji(jobid):
    """Base-576 emoji form (most significant digit first)."""
    return _encode_digits(_check_id(jobid), _EMOJI_TEXT)


def encode(jobid, to="f58"):
    """Encode ``jobid`` in the form named by ``to`` (case-insensitive).

    Unknown names raise JobIDError (errno EPROTO, as flux-core does).
    """
    if not isinstance(to, str):
        raise JobIDError(f"Unknown encoding {to!r}", errno=EPROTO)  # as flux_job_id_encode() sets it
    kind = to.lower()
    if kind == "dec":
        return str(_check_id(jobid))
    if kind == "hex":
        return "0x%x" % _check_id(jobid)
    if kind == "dothex":
        return dothex(jobid)
    if kind == "kvs":
        return "job." + dothex(jobid)
    if kind == "words":
        return words(jobid)
    if kind == "f58":
        return f58(jobid)
    if kind == "f58plain":
        return f58plain(jobid)
    if kind == "emoji":
        return emoji(jobid)
    raise JobIDError(f"Unknown encoding '{to}'", errno=EPROTO)  # as flux_job_id_encode() sets it


# --------------------------------------------------------------------------
# Decoders (each returns an int or None for "not valid")


def _scan_hex_field(s, pos):
    """One sscanf ``%4x`` conversion starting at ``pos``.

    Skips whitespace (not counted in the width), then reads at most four
    characters: an optional sign, an optional 0x/0X, hex digits.  Returns
    (value as a C unsigned int, new position) or None if no digit was read.
    """
    n = len(s)
    while pos < n and s[pos] in _C_SPACE:
        pos += 1
    width = 4
    neg = False
    if pos < n and s[pos] in "+-":
        neg = s[pos] == "-"
        pos += 1
        width -= 1
    if (
        width >= 2
        and pos + 1 < n
        and s[pos] == "0"
        and s[pos + 1] in "xX"
    ):
        if width >= 3 and pos + 2 < n and s[pos + 2] in _HEX_DIGITS:
            pos += 2
            width -= 2
        else:
            # "0x" not followed by a usable digit: glibc consumes the
            # "0x" and converts 0 (the "0" counts as the digit read).
            return 0, pos + 2
    start = pos
    while width and pos < n and s[pos] in _HEX_DIGITS:
        pos += 1
        width -= 1
    if pos == start:
        return None
    value = int(s[start:pos], 16)
    if neg:
        value = -value
    return value & 0xFFFFFFFF, pos


def _decode_dothex(s):
    fields = []
    pos = 0
    for i in range(4):
        if i:
            if pos >= len(s) or s[pos] != ".":
                return None
            pos += 1
        r = _scan_hex_field(s, pos)
        if r is None:
            return None
        value, pos = r
        fields.append(value)
    if pos != len(s):
        return None
    b0, b1, b2, b3 = fields
    return ((b0 << 48) | (b1 << 32) | (b2 << 16) | b3) & MAX_JOBID


def _mn_tokens(s):
    """Word indices as mn_next_word_index() finds them (stops at an unknown)."""
    index = _mn_index()
    n = len(s)
    pos = 0
    while True:
        while pos < n and s[pos] not in _ASCII_LETTERS:
            pos += 1
        start = pos
        while pos < n and s[pos] in _ASCII_LETTERS:
            pos += 1
        if pos == start:
            return
        word = s[start:pos][:_MN_WORDBUF].lower()
        idx = index.get(word)
        if idx is None:
            return
        yield idx


def _decode_words(s):
    """mn_decode() into an 8-byte buffer; valid only if exactly 8 bytes."""
    size = 8
    dest = bytearray(size)
    offset = 0
    base = _MN_BASE
    for idx in _mn_tokens(s):
        if idx > base and offset % 4 != 2:
            return None  # 24-bit remainder word in the wrong place
        if offset == size:
            return None  # more words than bytes
        group = offset & ~3
        x = int.from_bytes(dest[group : group + 4], "little")
        idx -= 1
        phase = offset % 4
        if phase == 3:
            return None  # data after a 24-bit remainder
        if phase == 2:
            if idx >= base:
                x += (idx - base) * base * base
                offset += 1
            else:
                if idx >= 1625 or (idx == 1624 and x > 1312671):
                    return None  # unused word combination
                x += idx * base * base
                offset += 2
        elif phase == 1:
            x += idx * base
            offset += 1
        else:
            x = idx
            offset += 1
        dest[group : group + 4] = (x & 0xFFFFFFFF).to_bytes(4, "little")
    # A full decode of 8 bytes always ends on a group boundary, where the
    # C end-of-input check has nothing more to verify.
    if offset != size:
        return None
    return int.from_bytes(dest, "little")


def _decode_digits(digits, values, base):
    """Most-significant-first digits in `base` (values: char -> digit); None if invalid."""
    value = 0
    for c in digits:
        d = values.get(c)
        if d is None:
            return None
        value = value * base + d
    return value if value <= MAX_JOBID else None


def _decode_f58(s):
    digits = s[1:]
    if not digits or len(digits) > _F58_MAX_DIGITS:
        return None
    return _decode_digits(digits, _B58_VALUE, 58)


def _decode_emoji(s):
    if len(s) > 7:
        return None
    return _decode_digits(s, _emoji_index(), 576)


def _decode_integer(s):
    """strtoull() (base 16 after "0x", else 10) + trailing-space check.

    Only called for strings without "-" (those were taken as words), so
    the negative-number wraparound of strtoull() cannot happen here.
    """
    n = len(s)
    pos = 0
    if s.startswith("0x"):
        digits = _HEX_DIGITS
        base = 16
        pos = 2
    else:
        digits = _DEC_DIGITS
        base = 10
        if s[0] == "+":
            pos = 1
    start = pos
    while pos < n and s[pos] in digits:
        pos += 1
    if pos == start or s[pos:].strip(_C_SPACE):
        return None
    value = int(s[start:pos], base)
    return value if value <= MAX_JOBID else None


def _decode(text):
    if "\0" in text:
        return None
    s = text.lstrip(_C_SPACE)
    if s.startswith("job."):
        s = s[4:]
        if not s:
            return None
        s = s.lstrip(_C_SPACE)
        if not s:
            # C quirk: fluid_parse() rejects "" but skips whitespace only
            # after that check, so "job. " reaches strtoull("") -> 0.
            return 0
    if not s:
        return None
    if "." in s:
        return _decode_dothex(s)
    if "-" in s:
        return _decode_words(s)
    if s[0] == "f" or s[0] == _F58_UTF8_PREFIX:
        return _decode_f58(s)
    if s[0] >= "\U0001f000":
        return _decode_emoji(s)
    return _decode_integer(s)


def decode(text):
    """Parse any job id form flux-core accepts; return the integer id.

    Integers in range are returned unchanged.  Anything else that is not a
    valid id raises JobIDError("<text> is not a valid Flux jobid").
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if 0 <= text <= MAX_JOBID:
            return text
        raise JobIDError(f"{text} is not a valid Flux jobid", errno=EINVAL)
    if not isinstance(text, str):
        raise JobIDError(f"{text!r} is not a valid Flux jobid", errno=EINVAL)
    value = _decode(text)
    if value is None:
        raise JobIDError(f"{text} is not a valid Flux jobid", errno=EINVAL)
    return WideJobID(value) if value > MAX_STORED else value


# SQLite integers are signed 64-bit: an id above this is valid syntax but no
# job can have it. Decoded as WideJobID, an int that SQLite stores as text
# (adapter in flux_lite.kvs), so every lookup finds nothing instead of failing.
MAX_STORED = 2**63 - 1


class WideJobID(int):
    __slots__ = ()


def parse_jobid_arg(text):
    """Same as decode(); the name the CLI uses for JOBID arguments."""
    return decode(text)


def is_valid(text):
    """True if decode(text) would succeed."""
    try:
        decode(text)
    except JobIDError:
        return False
    return True


# --------------------------------------------------------------------------
# Data: the mnemonicode word list (Oren Tirosh, word list version 0.7;
# 1626 words + 7 words for 24-bit remainders) and the 576 emoji digits of
# RFC 19's base-576 encoding, in flux-core's order.

_MN_WORDS_TEXT = (
    "academy acrobat active actor adam admiral adrian africa agenda agent airline "
    "airport aladdin alarm alaska albert albino album alcohol alex algebra alibi "
    "alice alien alpha alpine amadeus amanda amazon amber america amigo analog "
    "anatomy angel animal antenna antonio apollo april archive arctic arizona "
    "arnold aroma arthur artist asia aspect aspirin athena athlete atlas audio "
    "august austria axiom aztec balance ballad banana bandit banjo barcode baron "
    "basic battery belgium berlin bermuda bernard bikini binary bingo biology "
    "block blonde bonus boris boston boxer brandy bravo brazil bronze brown bruce "
    "bruno burger burma cabinet cactus cafe cairo cake calypso camel camera "
    "campus canada canal cannon canoe cantina canvas canyon capital caramel "
    "caravan carbon cargo carlo carol carpet cartel casino castle castro catalog "
    "caviar cecilia cement center century ceramic chamber chance change chaos "
    "charlie charm charter chef chemist cherry chess chicago chicken chief china "
    "cigar cinema circus citizen city clara classic claudia clean client climax "
    "clinic clock club cobra coconut cola collect colombo colony color combat "
    "comedy comet command compact company complex concept concert connect consul "
    "contact context contour control convert copy corner corona correct cosmos "
    "couple courage cowboy craft crash credit cricket critic crown crystal cuba "
    "culture dallas dance daniel david decade decimal deliver delta deluxe demand "
    "demo denmark derby design detect develop diagram dialog diamond diana diego "
    "diesel diet digital dilemma diploma direct disco disney distant doctor "
    "dollar dominic domino donald dragon drama dublin duet dynamic east ecology "
    "economy edgar egypt elastic elegant element elite elvis email energy engine "
    "english episode equator escort ethnic europe everest evident exact example "
    "exit exotic export express extra fabric factor falcon family fantasy fashion "
    "fiber fiction fidel fiesta figure film filter final finance finish finland "
    "flash florida flower fluid flute focus ford forest formal format formula "
    "fortune forum fragile france frank friend frozen future gabriel galaxy "
    "gallery gamma garage garden garlic gemini general genetic genius germany "
    "global gloria golf gondola gong good gordon gorilla grand granite graph "
    "green group guide guitar guru hand happy harbor harmony harvard havana "
    "hawaii helena hello henry hilton history horizon hotel human humor icon idea "
    "igloo igor image impact import index india indigo input insect instant iris "
    "italian jacket jacob jaguar janet japan jargon jazz jeep john joker jordan "
    "jumbo june jungle junior jupiter karate karma kayak kermit kilo king koala "
    "korea labor lady lagoon laptop laser latin lava lecture left legal lemon "
    "level lexicon liberal libra limbo limit linda linear lion liquid liter "
    "little llama lobby lobster local logic logo lola london lotus lucas lunar "
    "machine macro madam madonna madrid maestro magic magnet magnum major mama "
    "mambo manager mango manila marco marina market mars martin marvin master "
    "matrix maximum media medical mega melody melon memo mental mentor menu "
    "mercury message metal meteor meter method metro mexico miami micro million "
    "mineral minimum minus minute miracle mirage miranda mister mixer mobile "
    "model modem modern modular moment monaco monica monitor mono monster montana "
    "morgan motel motif motor mozart multi museum music mustang natural neon "
    "nepal neptune nerve neutral nevada news ninja nirvana normal nova novel "
    "nuclear numeric nylon oasis object observe ocean octopus olivia olympic "
    "omega opera optic optimal orange orbit organic orient origin orlando oscar "
    "oxford oxygen ozone pablo pacific pagoda palace pamela panama panda panel "
    "panic paradox pardon paris parker parking parody partner passage passive "
    "pasta pastel patent patriot patrol patron pegasus pelican penguin pepper "
    "percent perfect perfume period permit person peru phone photo piano picasso "
    "picnic picture pigment pilgrim pilot pirate pixel pizza planet plasma "
    "plaster plastic plaza pocket poem poetic poker polaris police politic polo "
    "polygon pony popcorn popular postage postal precise prefix premium present "
    "price prince printer prism private product profile program project protect "
    "proton public pulse puma pyramid queen radar radio random rapid rebel record "
    "recycle reflex reform regard regular relax report reptile reverse ricardo "
    "ringo ritual robert robot rocket rodeo romeo royal russian safari salad "
    "salami salmon salon salute samba sandra santana sardine school screen script "
    "second secret section segment select seminar senator senior sensor serial "
    "service sheriff shock sierra signal silicon silver similar simon single "
    "siren slogan social soda solar solid solo sonic soviet special speed spiral "
    "spirit sport static station status stereo stone stop street strong student "
    "studio style subject sultan super susan sushi suzuki switch symbol system "
    "tactic tahiti talent tango tarzan taxi telex tempo tennis texas textile "
    "theory thermos tiger titanic tokyo tomato topic tornado toronto torpedo "
    "total totem tourist tractor traffic transit trapeze travel tribal trick "
    "trident trilogy tripod tropic trumpet tulip tuna turbo twist ultra uniform "
    "union uranium vacuum valid vampire vanilla vatican velvet ventura venus "
    "vertigo veteran victor video vienna viking village vincent violet violin "
    "virtual virus visa vision visitor visual vitamin viva vocal vodka volcano "
    "voltage volume voyage water weekend welcome western window winter wizard "
    "wolf world xray yankee yoga yogurt yoyo zebra zero zigzag zipper zodiac zoom "
    "abraham action address alabama alfred almond ammonia analyze annual answer "
    "apple arena armada arsenal atlanta atomic avenue average bagel baker ballet "
    "bambino bamboo barbara basket bazaar benefit bicycle bishop blitz bonjour "
    "bottle bridge british brother brush budget cabaret cadet candle capitan "
    "capsule career cartoon channel chapter cheese circle cobalt cockpit college "
    "compass comrade condor crimson cyclone darwin declare degree delete delphi "
    "denver desert divide dolby domain domingo double drink driver eagle earth "
    "echo eclipse editor educate edward effect electra emerald emotion empire "
    "empty escape eternal evening exhibit expand explore extreme ferrari first "
    "flag folio forget forward freedom fresh friday fuji galileo garcia genesis "
    "gold gravity habitat hamlet harlem helium holiday house hunter ibiza iceberg "
    "imagine infant isotope jackson jamaica jasmine java jessica judo kitchen "
    "lazarus letter license lithium loyal lucky magenta mailbox manual marble "
    "mary maxwell mayor milk monarch monday money morning mother mystery native "
    "nectar nelson network next nikita nobel nobody nominal norway nothing number "
    "october office oliver opinion option order outside package pancake pandora "
    "panther papa patient pattern pedro pencil people phantom philips pioneer "
    "pluto podium portal potato prize process protein proxy pump pupil python "
    "quality quarter quiet rabbit radical radius rainbow ralph ramirez ravioli "
    "raymond respect respond result resume retro richard right risk river roger "
    "roman rondo sabrina salary salsa sample samuel saturn savage scarlet scoop "
    "scorpio scratch scroll sector serpent shadow shampoo sharon sharp short "
    "shrink silence silk simple slang smart smoke snake society sonar sonata "
    "soprano source sparta sphere spider sponsor spring acid adios agatha alamo "
    "alert almanac aloha andrea anita arcade aurora avalon baby baggage balloon "
    "bank basil begin biscuit blue bombay brain brenda brigade cable carmen cello "
    "celtic chariot chrome citrus civil cloud common compare cool copper coral "
    "crater cubic cupid cycle depend door dream dynasty edison edition enigma "
    "equal eric event evita exodus extend famous farmer food fossil frog fruit "
    "geneva gentle george giant gilbert gossip gram greek grille hammer harvest "
    "hazard heaven herbert heroic hexagon husband immune inca inch initial isabel "
    "ivory jason jerome joel joshua journal judge juliet jump justice kimono "
    "kinetic leonid lima maze medusa member memphis michael miguel milan mile "
    "miller mimic mimosa mission monkey moral moses mouse nancy natasha nebula "
    "nickel nina noise orchid oregano origami orinoco orion othello paper paprika "
    "prelude prepare pretend profit promise provide puzzle remote repair reply "
    "rival riviera robin rose rover rudolf saga sahara scholar shelter ship shoe "
    "sigma sister sleep smile spain spark split spray square stadium star storm "
    "story strange stretch stuart subway sugar sulfur summer survive sweet swim "
    "table taboo target teacher telecom temple tibet ticket tina today toga tommy "
    "tower trivial tunnel turtle twin uncle unicorn unique update valery vega "
    "version voodoo warning william wonder year yellow young absent absorb accent "
    "alfonso alias ambient andy anvil appear apropos archer ariel armor arrow "
    "austin avatar axis baboon bahama bali balsa bazooka beach beast beatles "
    "beauty before benny betty between beyond billy bison blast bless bogart "
    "bonanza book border brave bread break broken bucket buenos buffalo bundle "
    "button buzzer byte caesar camilla canary candid carrot cave chant child "
    "choice chris cipher clarion clark clever cliff clone conan conduct congo "
    "content costume cotton cover crack current danube data decide desire detail "
    "dexter dinner dispute donor druid drum easy eddie enjoy enrico epoxy erosion "
    "except exile explain fame fast father felix field fiona fire fish flame flex "
    "flipper float flood floor forbid forever fractal frame freddie front fuel "
    "gallop game garbo gate gibson ginger giraffe gizmo glass goblin gopher grace "
    "gray gregory grid griffin ground guest gustav gyro hair halt harris heart "
    "heavy herman hippie hobby honey hope horse hostel hydro imitate info ingrid "
    "inside invent invest invite iron ivan james jester jimmy join joseph juice "
    "julius july justin kansas karl kevin kiwi ladder lake laura learn legacy "
    "legend lesson life light list locate lopez lorenzo love lunch malta mammal "
    "margo marion mask match mayday meaning mercy middle mike mirror modest morph "
    "morris nadia nato navy needle neuron never newton nice night nissan nitro "
    "nixon north oberon octavia ohio olga open opus orca oval owner page paint "
    "palma parade parent parole paul peace pearl perform phoenix phrase pierre "
    "pinball place plate plato plume pogo point polite polka poncho powder prague "
    "press presto pretty prime promo quasi quest quick quiz quota race rachel "
    "raja ranger region remark rent reward rhino ribbon rider road rodent round "
    "rubber ruby rufus sabine saddle sailor saint salt satire scale scuba season "
    "secure shake shallow shannon shave shelf sherman shine shirt side sinatra "
    "sincere size slalom slow small snow sofia song sound south speech spell "
    "spend spoon stage stamp stand state stella stick sting stock store sunday "
    "sunset support sweden swing tape think thomas tictac time toast tobacco "
    "tonight torch torso touch toyota trade tribune trinity triton truck trust "
    "type under unit urban urgent user value vendor venice verona vibrate virgo "
    "visible vista vital voice vortex waiter watch wave weather wedding wheel "
    "whiskey wisdom deal null nurse quebec reserve reunion roof singer verbal "
    "amen ego fax jet job rio ski yes "
)

_EMOJI_TEXT = (
    "😃😄😁😆😅😂😉😊😍😘😚😋😜😝😏😒😌😔😪😷😵😲😳😨"
    "😰😥😢😭😱😖😣😞😓😩😫😤😡😠👿💀💩👹👺👻👽👾😺😸"
    "😹😻😼😽🙀😿😾🙈🙉🙊💌💘💝💖💗💓💞💕💟💔💛💚💙💜"
    "💋💯💢💥💫💦💨💬💤👋👌👈👉👆👇👍👎👊👏🙌👐🙏💅💪"
    "👂👃👀👅👄👶👦👧👱👨👩👴👵🙍🙎🙅🙆💁🙋🙇👮💂👷👸"
    "👳👲👰👼🎅💆💇🚶🏃💃👯🏂🏄🏊🛀👫💏💑👪👤👣🐵🐒🐶"
    "🐩🐺🐱🐯🐴🐎🐮🐷🐗🐽🐑🐫🐘🐭🐹🐰🐻🐨🐼🐾🐔🐣🐤🐥"
    "🐦🐧🐸🐢🐍🐲🐳🐬🐟🐠🐡🐙🐚🐌🐛🐜🐝🐞💐🌸💮🌹🌺🌻"
    "🌼🌷🌱🌴🌵🌾🌿🍀🍁🍂🍃🍄🍇🍈🍉🍊🍌🍍🍎🍏🍑🍒🍓🍅"
    "🍆🌽🌰🍞🍖🍗🍔🍟🍕🍳🍲🍱🍘🍙🍚🍛🍜🍝🍠🍢🍣🍤🍥🍡"
    "🍦🍧🍨🍩🍪🎂🍰🍫🍬🍭🍮🍯🍵🍶🍷🍸🍹🍺🍻🍴🔪🌏🗾🌋"
    "🗻🏠🏡🏢🏣🏥🏦🏨🏩🏪🏫🏬🏭🏯🏰💒🗼🗽🌁🌃🌄🌅🌆🌇"
    "🌉🎠🎡🎢💈🎪🚃🚄🚅🚇🚉🚌🚑🚒🚓🚕🚗🚙🚚🚲🚏🚨🚥🚧"
    "🚤🚢💺🚀🕛🕐🕑🕒🕓🕔🕕🕖🕗🕘🕙🕚🌑🌓🌔🌕🌙🌛🌟🌠"
    "🌌🌀🌈🌂🔥💧🌊🎃🎄🎆🎇🎈🎉🎊🎋🎍🎎🎏🎐🎑🎀🎁🎫🏆"
    "🏀🏈🎾🎳🎣🎽🎿🎯🔫🎱🔮🎮🎰🎲🃏🀄🎴🎭🎨👓👔👕👖👗"
    "👘👙👚👛👜👝🎒👞👟👠👡👢👑👒🎩🎓💄💍💎🔊📢📣🔔🎼"
    "🎵🎶🎤🎧📻🎷🎸🎹🎺🎻📱📲📞📟📠🔋🔌💻💽💾💿📀🎥🎬"
    "📺📷📹📼🔍🔎💡🔦🏮📔📕📖📗📘📙📚📓📒📃📜📄📰📑🔖"
    "💰💴💵💸💳💹📧📨📩📤📥📦📫📪📮📝💼📁📂📅📆📇📈📉"
    "📊📋📌📍📎📏📐🔒🔓🔏🔐🔑🔨💣🔧🔩🔗📡💉💊🚪🚽🚬🗿"
    "🏧🚹🚺🚻🚼🚾🚫🚭🔞🔃🔙🔚🔛🔜🔝🔯🔼🔽🎦📶📳📴💱💲"
    "🔱📛🔰🔟🔠🔡🔢🔣🔤🆎🆑🆒🆓🆔🆕🆖🆗🆘🆙🆚🈁🈶🈯🉐"
    "🈹🈚🈲🉑🈸🈴🈳🈺🈵🔴🔵🔶🔷🔸🔹🔺🔻💠🔘🔳🔲🏁🚩🎌"
)
