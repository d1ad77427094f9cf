"""JSON text as ``json.dumps`` writes it, with the encoder built once.

``json.dumps`` (and ``JSONEncoder.encode``) builds a new C encoder object
for every call; for the small values the engine encodes per event and per
job (eventlog contexts, R, jobspecs, index rows) that costs as much as the
encoding. ``encoder()`` returns a function that writes exactly the same text
with one C encoder made up front.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _std
from typing import Any

from flux_lite.errors import FormatError

_PROBE = {"a": [1, 1.5, -0.0, 1e300, "\u00e9\n\"", True, None, {"b": {}}], "": []}


def encoder(separators: tuple[str, str] = (", ", ": "), ensure_ascii: bool = True) -> Callable[[Any], str]:
    """``lambda o: json.dumps(o, separators=separators, ensure_ascii=ensure_ascii)``
    (same text, same errors: a circular value raises ValueError)."""
    base = json.JSONEncoder(separators=separators, ensure_ascii=ensure_ascii)
    make = getattr(_std, "c_make_encoder", None)
    if make is None:  # (no C accelerator: nothing to gain)
        return base.encode
    string = _std.encode_basestring_ascii if ensure_ascii else _std.encode_basestring
    markers: dict = {}
    try:
        c_encode = make(markers, base.default, string, None, separators[1], separators[0], False, False, True)
    except TypeError:  # (another signature: use the standard path)
        return base.encode
    join = "".join

    def encode(o: Any) -> str:
        if isinstance(o, str):
            return string(o)
        try:
            return join(c_encode(o, 0))
        except BaseException:
            markers.clear()  # (what a failed encoding left of its circularity check)
            raise

    try:
        ok = encode(_PROBE) == base.encode(_PROBE)
    except Exception:
        ok = False
    return encode if ok else base.encode


# json.dumps(o) and json.dumps(o, separators=(",", ":")), the spellings the engine stores
dumps = encoder()
compact = encoder((",", ":"))
# compact, non-ASCII kept (jansson's JSON_COMPACT, as Flux writes eventlogs)
compact_utf8 = encoder((",", ":"), ensure_ascii=False)


class JSONFileError(FormatError):
    """A JSON file that could not be read, as jansson's json_load_file
    reports it: the error text and its line (-1: the file could not be
    opened); parse says the text is no JSON (the others are about the file)."""

    def __init__(self, text: str, line: int, parse: bool = False) -> None:
        super().__init__(text)
        self.text = text
        self.line = line
        self.parse = parse


def load_file(path: str) -> Any:
    """The value of the JSON file at path (JSONFileError when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise JSONFileError(f"unable to open {path}: {exc.strerror}", -1) from None
    except UnicodeDecodeError:
        raise JSONFileError("unable to decode byte as UTF-8", 1) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(exc.msg, exc.lineno, parse=True) from None
