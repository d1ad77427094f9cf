"""RFC 18 eventlogs: encoding, decoding and ``flux job eventlog`` output.

An eventlog is a sequence of lines, each one compact JSON object
``{"timestamp":T,"name":N,"context":{...}}`` terminated by a newline;
``context`` is omitted when there is none.

JSON is written the way flux-core's jansson writes it, so lines are
byte-identical to real Flux output: compact separators, non-ASCII left
as-is, control characters escaped (``\\u001F`` style, upper-case hex),
and reals printed with ``%.17g`` plus ``.0`` when that looks like an
integer (``600.0``, ``1795978044.3623736``).  ``%.17g`` always
round-trips a double exactly.

Decoding follows ``eventlog_decode()``: an empty string is an empty
eventlog; otherwise there must be at least one newline, every line before
the last newline must be a valid entry (empty lines are invalid) and text
after the last newline (an incomplete entry) is ignored unless
``strict=True``.  JSON that jansson rejects (NaN/Infinity literals,
overflowing reals, lone surrogates) is rejected.

Formatting follows ``src/common/libeventlog/formatter.c``: see
``EventlogFormatter`` and the ``format_*`` helpers.
"""

import json
import math
import re
import time

from flux_lite.errors import EventlogError
from flux_lite.formats import jsontext

__all__ = [
    "dumps",
    "make_entry",
    "encode_entry",
    "decode_entry",
    "decode",
    "entry_fields",
    "context_value_matches",
    "EventlogFormatter",
    "TIMESTAMP_FORMATS",
    "format_text",
    "format_json",
    "format_iso",
    "format_offset",
    "format_human",
    "format_entries",
]

#: accepted timestamp format names (``-T``); "reltime" is an alias of "human"
TIMESTAMP_FORMATS = ("raw", "iso", "offset", "human", "reltime")

_MONTHS = (
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
)

# ANSI colors used by formatter.c
_GREEN = "\x1b[32m"
_BOLD_GREEN = "\x1b[1m\x1b[32m"
_YELLOW = "\x1b[33m"
_BOLD_RED = "\x1b[1m\x1b[31m"
_BLUE = "\x1b[34m"
_MAGENTA = "\x1b[35m"
_GRAY = "\x1b[37m"
_RESET = "\x1b[0m"


# --------------------------------------------------------------------------
# jansson-compatible compact JSON


_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
for _i in range(0x20):
    _ESCAPES.setdefault(chr(_i), "\\u%04X" % _i)
del _i
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def _escape_match(m):
    return _ESCAPES[m.group(0)]


def _dump_string(s):
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise EventlogError("string is not valid Unicode") from None
    return '"' + _NEEDS_ESCAPE.sub(_escape_match, s) + '"'


def _dump_real(f):
    if math.isnan(f) or math.isinf(f):
        raise EventlogError(f"{f!r} cannot be encoded in JSON")
    text = "%.17g" % f
    if "e" in text:
        mant, _, exp = text.partition("e")
        sign = "-" if exp.startswith("-") else ""
        text = mant + "e" + sign + (exp.lstrip("+-").lstrip("0") or "0")
    elif "." not in text:
        text += ".0"
    return text


def _dump(value, out, stack):
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_dump_string(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_dump_real(value))
    elif isinstance(value, dict):
        if id(value) in stack:
            raise EventlogError("circular reference in JSON value")
        stack.add(id(value))
        out.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise EventlogError(f"JSON object key {key!r} is not a string")
            if not first:
                out.append(",")
            first = False
            out.append(_dump_string(key))
            out.append(":")
            _dump(item, out, stack)
        out.append("}")
        stack.discard(id(value))
    elif isinstance(value, (list, tuple)):
        if id(value) in stack:
            raise EventlogError("circular reference in JSON value")
        stack.add(id(value))
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _dump(item, out, stack)
        out.append("]")
        stack.discard(id(value))
    else:
        raise EventlogError(
            f"value of type {type(value).__name__} cannot be encoded in JSON"
        )


def dumps(value):
    """Compact JSON of any value, exactly as jansson's
    ``json_dumps(value, JSON_COMPACT|JSON_ENCODE_ANY)`` prints it."""
    out = []
    try:
        _dump(value, out, set())
    except RecursionError:
        raise EventlogError("JSON value is nested too deeply") from None
    return "".join(out)


def _reject_constant(name):
    raise ValueError(f"invalid JSON literal {name}")


def _parse_real(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError("real number overflow")
    return value


def _check_unicode(value):
    if isinstance(value, str):
        value.encode("utf-8")  # raises on lone surrogates
    elif isinstance(value, dict):
        for key, item in value.items():
            key.encode("utf-8")
            _check_unicode(item)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item)


def jansson_loads(text):
    """json.loads() restricted to what jansson accepts: no NaN or Infinity,
    no real number that overflows a double, no lone surrogate escapes
    (ValueError or UnicodeError otherwise)."""
    obj = json.loads(
        text, parse_constant=_reject_constant, parse_float=_parse_real
    )
    if "\\u" in text or "\\U" in text:
        _check_unicode(obj)
    return obj


# --------------------------------------------------------------------------
# Entries


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise EventlogError("eventlog entry name must be a non-empty string")
    if name.split() != [name]:
        raise EventlogError(f"eventlog entry name {name!r} contains whitespace")


def make_entry(timestamp, name, context=None):
    """Validated entry dict with keys timestamp, name[, context].

    ``timestamp`` must be a finite number > 0 (stored as float); ``name`` a
    non-empty string without whitespace; ``context`` None or a dict with
    string keys (an empty dict is dropped, like None).
    """
    if not _is_number(timestamp):
        raise EventlogError("eventlog timestamp must be a number")
    timestamp = float(timestamp)
    if not (timestamp > 0) or math.isinf(timestamp):
        raise EventlogError(f"invalid eventlog timestamp {timestamp!r}")
    _check_name(name)
    entry = {"timestamp": timestamp, "name": name}
    if context is not None:
        if not isinstance(context, dict):
            raise EventlogError("eventlog entry context must be a JSON object")
        if context:
            entry["context"] = context
    return entry


_FLAT = (str, int, bool, type(None))


# json.dumps(..., separators=(",", ":"), ensure_ascii=False), its encoder built once
_COMPACT = jsontext.compact_utf8
# names that passed _check_name (a handful in practice) -> their ',"name":...' text
_GOOD_NAMES: dict = {}
# the last timestamp encoded and its text: the events of one instant share it
_LAST_TS: list = [None, ""]


def _plain(ctx, depth=0):
    """Only what Python's json writes exactly as jansson does: objects of
    printable strings (jansson escapes control chars in upper case; a
    printable string has none, nor lone surrogates), ints, booleans, nulls
    and such objects (an alloc event's annotations), no floats (jansson
    writes them its own way) and no arrays."""
    for k, v in ctx.items():
        if type(k) is not str or not k.isprintable():
            return False
        tv = type(v)
        if tv is str:
            if not v.isprintable():
                return False
        elif tv is dict:
            if depth >= 4 or not _plain(v, depth + 1):
                return False
        elif tv is not int and tv is not bool and v is not None:
            return False
    return True


def int_context_format(*keys):
    """A %-format of a context whose values, under these keys, are all
    ints: ``int_context_format("status") % (0,)`` is ``{"status":0}``, the
    text encode_entry writes of ``{"status": 0}`` (for exact ints only:
    callers check ``type(v) is int``, a bool would be written 1, not true).
    A key that would need escaping is refused (ValueError)."""
    for key in keys:
        if type(key) is not str or not (key.isascii() and key.isprintable()) or "%" in key \
                or _dump_string(key) != '"' + key + '"':
            raise ValueError(f"context key {key!r} needs escaping")
    return "{" + ",".join('"%s":%%d' % key for key in keys) + "}"


def plain_context_text(context):
    """The text encode_entry writes of a constant context (a caller may
    keep it and pass it back as context_text); ValueError for a context
    it would not write with the compact encoder."""
    if type(context) is not dict or not context or not _plain(context):
        raise ValueError("not a plain context")
    return _COMPACT(context)


def encode_entry(timestamp, name, context=None, context_text=None):
    """One eventlog line (newline-terminated) for the given fields.

    context_text: the context's text, when the caller has it and it is
    what this function would write of the context (an int_context_format
    text of exact ints, or plain_context_text's of a constant context)."""
    name_text = _GOOD_NAMES.get(name) if type(name) is str else None
    if type(timestamp) is float and 0 < timestamp < math.inf and name_text is not None \
            and (context is None or type(context) is dict):
        # the common case (the job manager's own posts), checked as make_entry does
        ctx = context or None
    else:
        entry = make_entry(timestamp, name, context)
        name_text = _GOOD_NAMES[name] = ',"name":' + _dump_string(name)
        timestamp = entry["timestamp"]
        ctx = entry.get("context")
        context_text = None
    if ctx is None:
        context_text = None
    elif context_text is None and not _plain(ctx):
        entry = {"timestamp": timestamp, "name": name, "context": ctx}
        return dumps(entry) + "\n"
    # fast path (most events): only the timestamp needs jansson's real format
    last = _LAST_TS
    if timestamp != last[0] or type(timestamp) is not type(last[0]):
        last[0], last[1] = timestamp, _dump_real(timestamp)
    line = '{"timestamp":' + last[1] + name_text
    if context_text is not None:
        line += ',"context":' + context_text
    elif ctx is not None:
        line += ',"context":' + _COMPACT(ctx)
    return line + "}\n"


def entry_fields(entry):
    """(timestamp, name, context-or-None) of a decoded entry.

    Same checks as ``eventlog_entry_parse()``: timestamp a number, name a
    string, context an object if present.
    """
    if not isinstance(entry, dict):
        raise EventlogError("eventlog entry must be a JSON object")
    timestamp = entry.get("timestamp")
    name = entry.get("name")
    context = entry.get("context")
    if not _is_number(timestamp):
        raise EventlogError("eventlog entry has no numeric timestamp")
    if not isinstance(name, str):
        raise EventlogError("eventlog entry has no name")
    if context is not None and not isinstance(context, dict):
        raise EventlogError("eventlog entry context is not an object")
    if "context" in entry and context is None:
        raise EventlogError("eventlog entry context is not an object")
    return float(timestamp), name, context


def _decode_line(line):
    if not line:
        raise EventlogError("empty line")
    try:
        obj = jansson_loads(line)
    except json.JSONDecodeError as exc:
        raise EventlogError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except (ValueError, UnicodeError, RecursionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EventlogError(f"invalid JSON: {msg}") from None
    entry_fields(obj)
    return obj


def decode_entry(line):
    """Decode one eventlog line (a single trailing newline is optional)."""
    if not isinstance(line, str):
        raise EventlogError("eventlog entry must be a string")
    if line.endswith("\n"):
        line = line[:-1]
    if "\n" in line:
        raise EventlogError("eventlog entry contains a newline")
    try:
        return _decode_line(line)
    except EventlogError as exc:
        raise EventlogError(f"invalid eventlog entry: {exc}") from None


def decode(text, strict=False):
    """Decode a whole eventlog into a list of entry dicts.

    A malformed line raises EventlogError("line N: ...").  Text after the
    last newline is ignored as an incomplete write (as flux-core does),
    or rejected when ``strict`` is true.
    """
    if not isinstance(text, str):
        raise EventlogError("eventlog must be a string")
    if not text:
        return []
    lines = text.split("\n")
    tail = lines.pop()
    if not lines:
        raise EventlogError("line 1: eventlog entry is not newline-terminated")
    if tail and strict:
        raise EventlogError(
            f"line {len(lines) + 1}: eventlog entry is not newline-terminated"
        )
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            entries.append(_decode_line(line))
        except EventlogError as exc:
            raise EventlogError(f"line {number}: {exc}") from None
    return entries


def decode_all(text):
    """decode(text), in one JSON parse for the usual eventlog (whole lines,
    each one JSON object): a replay of a large history decodes millions.
    Anything else (a damaged line, an escape to check) goes through decode,
    so the result and the errors are decode's."""
    if (type(text) is not str or not text.endswith("}\n") or text[0] != "{" or "\\u" in text
            or "\\U" in text or "\n\n" in text):
        return decode(text)
    body = text[:-1]
    nlines = body.count("\n") + 1
    if body.count("}\n{") != nlines - 1:
        return decode(text)  # (a line that does not start with { or end with })
    try:
        entries = json.loads("[" + body.replace("}\n{", "},{") + "]",
                             parse_constant=_reject_constant, parse_float=_parse_real)
    except (ValueError, RecursionError):
        return decode(text)
    # each line one object (an object cut over two lines cannot parse once
    # every line starts with { and ends with }), each a valid entry
    if len(entries) != nlines:
        return decode(text)
    for entry in entries:
        if type(entry) is not dict or type(entry.get("name")) is not str or not _is_number(entry.get("timestamp")) \
                or ("context" in entry and type(entry["context"]) is not dict):
            return decode(text)
    return entries


def context_value_matches(context, key, value):
    """``flux job wait-event -m KEY=VALUE`` test for one context.

    True if ``context[key]``'s compact JSON equals ``value``, or the
    context value is a string equal to ``value``.
    """
    if not isinstance(context, dict) or key not in context:
        return False
    item = context[key]
    try:
        if dumps(item) == value:
            return True
    except EventlogError:
        return False
    return isinstance(item, str) and item == value


# --------------------------------------------------------------------------
# Formatting (flux job eventlog / wait-event output)


def _local_tm(timestamp):
    """localtime() of the truncated timestamp, or None where C fails."""
    if timestamp < 0:
        return None
    try:
        return time.localtime(int(timestamp))
    except (OverflowError, OSError, ValueError):
        return None


def _tzoffset(tm):
    tz = time.strftime("%z", tm)
    if tz == "+0000":
        return "Z"
    if len(tz) == 5 and tz[0] in "+-":
        return tz[:3] + ":" + tz[3:]
    return tz


class EventlogFormatter:
    """Stateful formatter equivalent to flux-core's eventlog_formatter.

    ``format`` is "text" or "json"; ``timestamp_format`` one of raw, iso,
    offset, human (alias reltime).  ``format_entry()`` returns the line
    without its newline.  Human and offset timestamps depend on earlier
    entries; call ``reset()`` to start over.
    """

    def __init__(self, format="text", timestamp_format="raw", color=False):
        fmt = str(format).lower()
        if fmt not in ("text", "json"):
            raise EventlogError(f"invalid format type '{format}'")
        tsfmt = str(timestamp_format).lower()
        if tsfmt not in TIMESTAMP_FORMATS:
            raise EventlogError(f"invalid time-format type '{timestamp_format}'")
        self.json = fmt == "json"
        self.timestamp_format = "human" if tsfmt == "reltime" else tsfmt
        self.color = bool(color)
        self.reset()

    def reset(self):
        """Forget the first timestamp and the last minute seen."""
        self.t0 = 0.0
        self._last_tm = None
        self._last_ts = 0.0

    def update_t0(self, timestamp):
        """Record the offset origin if none is set yet (as C does)."""
        if self.t0 == 0.0:
            self.t0 = float(timestamp)

    def _c(self, code):
        return code if self.color else ""

    def _reset(self):
        return _RESET if self.color else ""

    def _human(self, ts):
        tm = _local_tm(ts)
        if tm is None:
            return "%s[%+11.6f]%s" % (self._c(_GREEN), ts, self._reset())
        minute = (tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min)
        if minute == self._last_tm:
            return "%s[%+11.6f]%s" % (
                self._c(_GREEN),
                ts - self._last_ts,
                self._reset(),
            )
        self._last_tm = minute
        self._last_ts = ts
        return "%s[%s%02d %02d:%02d]%s" % (
            self._c(_BOLD_GREEN),
            _MONTHS[tm.tm_mon - 1],
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            self._reset(),
        )

    def _iso(self, ts):
        sec = int(ts)
        usec = int((ts - sec) * 1e6) % (1 << 64)
        try:
            tm = time.localtime(sec)
        except (OverflowError, OSError, ValueError):
            raise EventlogError(f"localtime({ts:f}): value out of range") from None
        return "%s%s.%06d%s%s" % (
            self._c(_GREEN),
            time.strftime("%Y-%m-%dT%H:%M:%S", tm),
            usec,
            _tzoffset(tm),
            self._reset(),
        )

    def timestamp(self, ts):
        """The timestamp column for ``ts`` (updates human/offset state)."""
        kind = self.timestamp_format
        if kind == "raw":
            return "%s%f%s" % (self._c(_GREEN), ts, self._reset())
        if kind == "human":
            return self._human(ts)
        if kind == "iso":
            return self._iso(ts)
        self.update_t0(ts)
        return "%s%f%s" % (self._c(_GREEN), ts - self.t0, self._reset())

    def format_entry(self, entry):
        """Format one decoded entry (dict) as a line without newline.

        JSON escapes the C0 controls; for a terminal the other characters
        that can rewrite it (DEL, C1, bidirectional overrides: a guest's
        exception note) are escaped too, as JSON \\uXXXX, so the line still
        reads back to the same values."""
        return escape_display(self._format_entry(entry))

    def _format_entry(self, entry):
        ts, name, context = entry_fields(entry)
        if self.json:
            return dumps(entry)
        if self.color:
            name_color = _BOLD_RED if name == "exception" else _YELLOW
        else:
            name_color = ""
        parts = [self.timestamp(ts), " ", name_color, name, self._reset()]
        if context:
            for key, value in context.items():
                color = _GRAY if _is_number(value) else _MAGENTA
                parts.append(
                    " %s%s%s=%s%s%s"
                    % (
                        self._c(_BLUE),
                        key,
                        self._reset(),
                        self._c(color),
                        dumps(value),
                        self._reset(),
                    )
                )
        return "".join(parts)

    def format_entries(self, entries):
        """Format several entries in order (state carries across them)."""
        return [self.format_entry(e) for e in entries]


_DISPLAY_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_display(line: str) -> str:
    """line with DEL, C1 controls and bidirectional overrides as JSON \\uXXXX."""
    if line.isprintable():
        return line
    return _DISPLAY_UNSAFE.sub(lambda m: "\\u%04X" % ord(m.group()), line)


def format_text(entry):
    """Default ``flux job eventlog`` line: ``%f name key=json ...``."""
    return EventlogFormatter().format_entry(entry)


def format_json(entry):
    """``flux job eventlog -f json`` line: the compact entry, no newline
    (the stored line exactly; display_json escapes it for a terminal)."""
    entry_fields(entry)
    return dumps(entry)


def display_json(entry):
    """format_json for a terminal, escaped as format_entry is."""
    return escape_display(format_json(entry))


def format_iso(entry):
    """``-T iso`` line: local time ``YYYY-MM-DDTHH:MM:SS.uuuuuu`` + zone
    (``Z`` for UTC, else ``+HH:MM``); microseconds are truncated."""
    return EventlogFormatter(timestamp_format="iso").format_entry(entry)


def format_offset(entries):
    """``-T offset`` lines: seconds since the first entry, ``%f``."""
    return EventlogFormatter(timestamp_format="offset").format_entries(entries)


def format_human(entries, color=False):
    """``-H`` lines: ``[Mon DD HH:MM]`` (no space: ``[Nov29 18:47]``) at
    each new local minute, then ``[%+11.6f]`` seconds since that line."""
    fmt = EventlogFormatter(timestamp_format="human", color=color)
    return fmt.format_entries(entries)


def format_entries(entries, format="text", timestamp_format="raw", color=False):
    """Format a list of entries as ``flux job eventlog`` would."""
    fmt = EventlogFormatter(format, timestamp_format, color)
    return fmt.format_entries(entries)
