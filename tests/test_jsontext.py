"""flux_lite.formats.jsontext writes exactly what json.dumps writes."""

import json
import random

import pytest

from flux_lite.formats import jsontext

SPELLINGS = [
    (jsontext.dumps, {}),
    (jsontext.compact, {"separators": (",", ":")}),
    (jsontext.compact_utf8, {"separators": (",", ":"), "ensure_ascii": False}),
]


def _value(rng, depth=0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.randrange(-10**20, 10**20)
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, 1e300, 1767225600.123, float("nan"), float("inf"), 1 / 3])
    if kind == 2:
        return "".join(rng.choice('ab"\\\n\t\u00e9\u2028\U0001f600\x01/') for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return rng.randrange(100)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    keys = [_value(rng, 4) if rng.random() < 0.2 else str(rng.randrange(50)) for _ in range(rng.randrange(5))]
    return {k: _value(rng, depth + 1) for k in keys if not isinstance(k, (list, tuple))}


@pytest.mark.parametrize("encode,kw", SPELLINGS)
def test_same_text_as_json_dumps(encode, kw):
    rng = random.Random(5)
    for _ in range(3000):
        value = _value(rng)
        assert encode(value) == json.dumps(value, **kw)


@pytest.mark.parametrize("encode,kw", SPELLINGS)
def test_same_errors_and_no_trace_of_them(encode, kw):
    loop: list = []
    loop.append(loop)
    bad = {"a": {"x": 1}, "b": object()}
    for value, exc in ((loop, ValueError), (bad, TypeError)):
        with pytest.raises(exc) as got:
            encode(value)
        with pytest.raises(exc) as want:
            json.dumps(value, **kw)
        assert str(got.value) == str(want.value)
    # what was being encoded when it failed is no "circular reference" afterwards
    del bad["b"]
    assert encode([bad, bad]) == json.dumps([bad, bad], **kw)
