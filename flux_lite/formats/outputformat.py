"""Flux's output-format mini language (``flux jobs -o``, ``flux resource list
-o``, ``flux housekeeping list -o``).

A format is a Python ``str.format`` string whose fields name attributes of
the items being listed (``{id.f58:>12} {name:<10.10+} {runtime!F:>8h}``).
Flux adds, on top of Python's syntax:

- conversions ``!d`` (epoch float -> datetime; the spec is an strftime
  format, optionally followed by ``::`` and a normal spec), ``!D`` (ISO 8601
  date time, empty for 0), ``!F`` (Flux Standard Duration), ``!H``
  (``H:MM:SS``), ``!P`` (percentage);
- spec suffix ``h``: print ``-`` for "empty" values (``""``, ``0s``, ``0.0``,
  ``0:00:00``, the epoch);
- spec suffix ``+``: when the value is truncated by the precision, its last
  printed character becomes ``+``;
- field prefixes ``?:`` (drop the column if it is empty for every item),
  ``+:`` (widen the column to its longest value and heading), ``?+:`` (both),
  and a leading ``sort:KEY[,-KEY...]`` prefix.

Values are looked up along dotted names: mappings by key, other objects by
attribute. A missing component, or ``None``, yields ``""``.

Errors are FormatError with a one-line message (``Unknown format field: foo``,
``expected '}' before end of string``, ...). Callers add any prefix such as
``Error in user format: ``.
"""

import re
import string
import time
from collections.abc import Mapping
from datetime import datetime, timedelta

from flux_lite.errors import FormatError
from flux_lite.formats.fsd import format_fsd

__all__ = [
    "OutputFormat",
    "fsd",
    "empty_outputs",
    "render",
    "list_formats_help",
    "resolve_format",
    "lookup",
]

SENTINELS = _SENTINELS = ("?+:", "+:", "?:")  # longest first
_SENTINEL_TYPE = {"?:": "filter", "+:": "maxwidth", "?+:": "both"}
_SORT_PREFIX_RE = re.compile(r"sort:([^{\s]+)")


class SortKeyError(FormatError):
    """A sort key that is no field (Flux reports it as it is, not as a format error)."""


def fsd(secs):
    """Format seconds the way flux.util.fsd() does (used by ``!F``).

    Non-numbers raise TypeError, as flux.util.fsd() does.
    """
    if isinstance(secs, str):
        raise TypeError("must be real number, not str")
    return format_fsd(secs)


_EMPTY_CACHE: dict = {}


def empty_outputs():
    """Formatted values that count as empty (``h`` suffix, ``?:`` filter)."""
    key = (time.timezone, time.altzone, time.tzname)
    result = _EMPTY_CACHE.get(key)
    if result is None:
        localepoch = datetime.fromtimestamp(0.0).strftime("%FT%T")
        result = ("", "0s", "0.0", "0:00:00", "1970-01-01T00:00:00", localepoch)
        _EMPTY_CACHE[key] = result
    return result


class _Datetime(datetime):
    """datetime whose format spec is ``STRFTIME[::SPEC]``; the epoch is empty."""

    def __format__(self, fmt):
        timefmt, sep, spec = fmt.partition("::")
        if self == datetime.fromtimestamp(0.0):
            result = ""
        else:
            result = self.strftime(timefmt or "%FT%T")
        # the 'h' suffix must be handled here: this runs after format_field
        if spec.endswith("h"):
            if not result:
                result = "-"
            spec = spec[:-1] + "s"
        if spec:
            return format(result, spec)
        return result


# a column is at most this wide: {id:>999999999} would build a gigabyte per row
MAX_WIDTH = 1000
_NUMBER = re.compile(r"\d+")


class _Spec:
    """A format spec split into its parts (Flux adds 'hyphen' and 'truncate')."""

    _RE = re.compile(
        r"(?:(?P<fill>.)?(?P<align>[<>=^]))?"
        r"(?P<sign>[-+ ])?"
        r"(?P<pos_zero>z)?"
        r"(?P<alt>#)?"
        r"(?P<zero_pad>0)?"
        r"(?P<width>\d+)?"
        r"(?P<grouping>[_,])?"
        r"(?:(?P<decimal>\.)(?P<precision>\d+))?"
        r"(?P<type>[bcdeEfFgGnosxX%])?"
        r"(?P<hyphen>h)?"
        r"(?P<truncate>\+)?",
        re.DOTALL,
    )
    _ORDER = (
        "fill",
        "align",
        "sign",
        "pos_zero",
        "alt",
        "zero_pad",
        "width",
        "grouping",
        "decimal",
        "precision",
        "type",
        "hyphen",
        "truncate",
    )

    def __init__(self, spec):
        if "::" in spec:
            spec = spec[spec.find("::") + 2 :]
        match = self._RE.fullmatch(spec)
        parts = match.groupdict() if match else {}
        for name in self._ORDER:
            setattr(self, name, parts.get(name) or "")

    def set_width(self, width):
        self.width = str(width)
        # a string precision narrower than the new width would truncate
        if self.type in ("", "s") and self.precision:
            if int(self.precision) < width:
                self.precision = str(width)

    def __str__(self):
        return "".join(getattr(self, name) for name in self._ORDER)


_MISSING = object()
_SPLIT: dict[str, list] = {}


def lookup(obj, path):
    """Follow a dotted path through mappings/attributes; missing -> ""."""
    value = obj
    parts = _SPLIT.get(path)
    if parts is None:
        parts = _SPLIT[path] = path.split(".")
    for part in parts:
        # dict first: the ABC check of Mapping is slow, and rows are dicts
        if isinstance(value, dict) or isinstance(value, Mapping):
            nxt = value.get(part, _MISSING)
            if nxt is _MISSING:
                nxt = getattr(value, part, _MISSING)
        else:
            try:
                nxt = getattr(value, part, _MISSING)
            except Exception:  # a property that fails counts as missing
                nxt = _MISSING
        if nxt is _MISSING or nxt is None:
            return ""
        value = nxt
    return value


# The ends of what datetime and timedelta can hold. A time or a duration
# stored past them (a guest's `submit -t 1e20`, `update duration=1e308`) is
# shown at the end of the range rather than failing everyone's listing: the
# end of the year 9999 in local time (the UTC end overflows east of UTC).
_LAST_DATETIME = datetime(9999, 12, 31, 23, 59, 59)
_FIRST_DATETIME = datetime(1, 1, 1)
_MAX_TIMEDELTA_SECONDS = 999999999 * 86400 + 86399


def _fromtimestamp(value, cls=datetime):
    """cls.fromtimestamp(value), clamped into the years 1-9999."""
    try:
        return cls.fromtimestamp(value)
    except (OverflowError, ValueError, OSError):
        if not isinstance(value, (int, float)) or value != value:  # not a number, or nan
            raise
        end = _LAST_DATETIME if value > 0 else _FIRST_DATETIME
        return cls(end.year, end.month, end.day, end.hour, end.minute, end.second)


def _convert(value, conv):
    """Apply a conversion the way flux.util.UtilFormatter does."""
    if not conv:
        return value
    orig = str(value)
    if conv == "d":
        try:
            return _fromtimestamp(value, _Datetime)
        except TypeError:
            if orig == "":
                return _Datetime.fromtimestamp(0.0)
            raise
    if conv == "D":
        if not value:
            return ""
        try:
            return _fromtimestamp(value).strftime("%FT%T")
        except TypeError:
            if orig == "":
                return ""
            raise
    if conv == "F":
        try:
            return fsd(value)
        except TypeError:
            if orig == "":
                return ""
            raise
    if conv == "H":
        try:
            if 0 < value < 1:
                value = 1
            return str(timedelta(seconds=min(round(value), _MAX_TIMEDELTA_SECONDS)))
        except TypeError:
            if orig == "":
                return ""
            raise
    if conv == "P":
        if isinstance(value, str):
            if value == "":
                return ""
            raise TypeError(f"can't convert {value!r} to a percentage")
        value = value * 100
        if 0 < value < 1:
            return f"{value:.2f}%"
        return f"{value:.3g}%"
    if conv == "s":
        return str(value)
    if conv == "r":
        return repr(value)
    if conv == "a":
        return ascii(value)
    raise ValueError(f"Unknown conversion specifier {conv}")


# control characters (C0, DEL, C1) and the bidirectional overrides: printed
# raw, a job name could retitle or rewrite the terminal of whoever lists it
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape_char(match):
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Markup(str):
    """Text the program itself produces (terminal colours): printed as is."""


def escape_controls(text: str) -> str:
    """text with control characters shown as \\xNN (\\uNNNN for bidi overrides)."""
    if text.isprintable():
        return text
    return _UNSAFE.sub(_escape_char, text)


def _format_field(value, spec):
    """format() plus Flux's 'h' and '+' spec suffixes."""
    if isinstance(value, str) and not value.isprintable() and not isinstance(value, Markup):
        value = escape_controls(value)
    truncate = False
    if spec.endswith("+"):
        truncate = True
        spec = spec[:-1]
    if spec.endswith("h") and not isinstance(value, _Datetime):
        value = "-" if str(value) in empty_outputs() else str(value)
        spec = spec[:-1] + "s"
    result = format(value, spec)
    if truncate and len(result) < len(str(value)):
        result = result[:-1] + "+"
    return result


def _get(row, name):
    """row[name] of a dict row (None and missing read as ""): a row that
    computes its fields on demand (``__missing__``) computes this one."""
    try:
        value = row[name]
    except KeyError:
        return lookup(row, name)
    return "" if value is None else value


def _read(row, head, rest=""):
    """lookup(row, head + "." + rest) of a dict row, its first name read by
    key (see _get)."""
    value = _get(row, head)
    if rest and value != "":
        return lookup(value, rest)
    return value


def _formatter(spec):
    """The function format() applies to a field's value: _format_field(value,
    spec), with the spec's parts worked out once for all rows."""
    truncate = spec.endswith("+")
    inner = spec[:-1] if truncate else spec
    if inner.endswith("h"):
        empty = empty_outputs()
        text_spec = inner[:-1] + "s"

        def hyphen(value):
            if isinstance(value, str) and not value.isprintable() and not isinstance(value, Markup):
                value = escape_controls(value)
            if isinstance(value, _Datetime):
                result = format(value, inner)
            else:
                value = str(value)
                if value in empty:
                    value = "-"
                result = format(value, text_spec)
            if truncate and len(result) < len(str(value)):
                result = result[:-1] + "+"
            return result
        return hyphen
    if truncate:
        def cut(value):
            if isinstance(value, str) and not value.isprintable() and not isinstance(value, Markup):
                value = escape_controls(value)
            result = format(value, inner)
            if len(result) < len(str(value)):
                result = result[:-1] + "+"
            return result
        return cut

    def plain(value):
        if isinstance(value, str) and not value.isprintable() and not isinstance(value, Markup):
            value = escape_controls(value)
        return format(value, spec)
    return plain


def expansion_entries(tokens, headings, no_header, make_spec=None):
    """The fields of a parsed format (text, field, spec, conv) that carry a
    ``?:``, ``+:`` or ``?+:`` sentinel: dicts of index, field, conv, kind
    (filter, maxwidth, both), spec, maxwidth (the spec's width, widened to
    the heading unless no_header) and width (0: the caller widens both by
    the items' values). Shared by both OutputFormat classes."""
    make_spec = make_spec or _Spec
    entries = []
    for index, (text, field, spec, conv) in enumerate(tokens):
        end = next((s for s in _SENTINELS if text.endswith(s)), None)
        if not end:
            continue
        kind = _SENTINEL_TYPE[end]
        parsed = make_spec(spec)
        maxwidth = int(parsed.width) if parsed.width else 0
        if kind in ("maxwidth", "both") and not no_header:
            maxwidth = max(maxwidth, len(headings.get(field, "")))
        entries.append({"index": index, "field": field, "conv": conv, "kind": kind, "spec": parsed,
                        "maxwidth": maxwidth, "width": 0})
    return entries


def collapse_expansions(tokens, entries):
    """The tokens once the entries' widths are known: filter fields empty
    for every item dropped, maxwidth fields given their width, and every
    sentinel removed from the literal text (as Flux removes them all)."""
    tokens = [list(t) for t in tokens]
    remove = set()
    for entry in entries:
        if entry["width"] == 0 and entry["kind"] in ("filter", "both"):
            remove.add(entry["index"])
        elif entry["kind"] in ("maxwidth", "both"):
            entry["spec"].set_width(entry["maxwidth"])
            tokens[entry["index"]][2] = str(entry["spec"])
    tokens = [tok for i, tok in enumerate(tokens) if i not in remove]
    for tok in tokens:
        for sentinel in _SENTINELS:
            tok[0] = tok[0].replace(sentinel, "")
    return tokens


def _parse(fmt):
    try:
        return [[s or "" for s in tok] for tok in string.Formatter().parse(fmt)]
    except ValueError as exc:
        raise FormatError(str(exc)) from None


def _sort_value(value):
    """Sort key: unset ("" / "-" / None) < numbers < other strings."""
    if value is None or value == "" or value == "-":
        return (0, 0)
    if isinstance(value, (bool, int, float)):
        return (1, float(value))
    try:
        return (1, float(value))
    except (TypeError, ValueError):
        pass
    try:
        return (1, float(str(value)))
    except (TypeError, ValueError):
        return (2, str(value))


class OutputFormat:
    """A parsed Flux output format.

    Args:
        fmt: the format string.
        headings: field name -> column heading; also the list of valid fields.
        prepend: optional dotted prefix added to every field when looking up
            values (``prepend="job."`` reads ``{name}`` from ``item.job.name``).
        heading_fallback: optional callable(field) -> heading or None, asked
            for fields missing from ``headings`` (e.g. flux-jobs' free-form
            ``annotations.*``); a non-None answer makes the field valid.

    As in Flux, format()/header() of an unfiltered object print the ``?:``
    and ``+:`` sentinels literally: call filter(items) (or lines()) first.
    """

    def __init__(self, fmt, headings, prepend=None, heading_fallback=None):
        self.headings = dict(headings)
        self.prepend = prepend or ""
        self.heading_fallback = heading_fallback
        tokens = _parse(fmt)
        self.sort_keys = []
        self._sort_space = True
        if tokens and tokens[0][0].startswith("sort:"):
            match = _SORT_PREFIX_RE.match(tokens[0][0])
            if match:
                keys = match.group(1)
                rest = tokens[0][0][len("sort:") + len(keys) :]
                fmt = fmt[len("sort:") + len(keys) :]
                self._sort_space = fmt.startswith(" ")
                if self._sort_space:
                    rest = rest[1:]
                    fmt = fmt[1:]
                tokens[0][0] = rest
                self.set_sort_keys(keys)
        self.fmt = fmt
        self.tokens = tokens
        for _, field, spec, _ in tokens:
            for number in _NUMBER.findall(spec or ""):
                if len(number) > 4 or int(number) > MAX_WIDTH:
                    raise FormatError(f"field width or precision {number} is larger than {MAX_WIDTH}")
            if field and field not in self.headings:
                heading = heading_fallback(field) if heading_fallback else None
                if heading is None:
                    raise FormatError("Unknown format field: " + field)
                self.headings[field] = heading

    @classmethod
    def _from_tokens(cls, parent, tokens):
        new = cls.__new__(cls)
        new.headings = parent.headings
        new.prepend = parent.prepend
        new.heading_fallback = parent.heading_fallback
        new.sort_keys = list(parent.sort_keys)
        new._sort_space = parent._sort_space
        new.tokens = tokens
        new.fmt = "".join(_token_str(*tok) for tok in tokens)
        return new

    @property
    def fields(self):
        """Field names used by the format, including sort keys."""
        result = [field for _, field, _, _ in self.tokens if field]
        for key, _ in self.sort_keys:
            if key not in result:
                result.append(key)
        return result

    def get_format(self, include_sort_prefix=False):
        """The format string (after any filter()), optionally with sort:."""
        prefix = ""
        if include_sort_prefix and self.sort_keys:
            keys = ",".join(f"-{k}" if rev else k for k, rev in self.sort_keys)
            prefix = "sort:" + keys + (" " if self._sort_space else "")
        return prefix + self.fmt

    # -- sorting ---------------------------------------------------------

    def set_sort_keys(self, keys):
        """Set sort keys from ``key1,-key2`` (``-`` reverses)."""
        self.sort_keys = []
        for key in keys.split(","):
            key = key.strip()
            if not key:
                continue
            reverse = key.startswith("-")
            if reverse:
                key = key[1:]
            if key not in self.headings:
                raise SortKeyError("Invalid sort key: " + key)
            self.sort_keys.append((key, reverse))

    def sort_items(self, items):
        """Return items sorted by the sort keys (stable; unchanged if none)."""
        items = list(items)
        for key, reverse in reversed(self.sort_keys):
            path = self.prepend + key
            items.sort(key=lambda it: _sort_value(lookup(it, path)), reverse=reverse)
        return items

    # -- formatting ------------------------------------------------------

    def _value(self, obj, field, conv):
        path = self.prepend + field
        try:
            value = _read(obj, *path.split(".", 1)) if isinstance(obj, dict) else lookup(obj, path)
            return _convert(value, conv)
        except (TypeError, ValueError, OverflowError, OSError) as exc:
            raise FormatError(str(exc)) from None

    def _steps(self):
        """The tokens as format() walks them: (text, lookup path or None,
        whether the path is one name, conversion, the value's formatter).
        Built once per format."""
        cached = self.__dict__.get("_steps_cache")
        if cached is None or cached[0] is not self.tokens:
            steps = []
            for text, field, spec, conv in self.tokens:
                path = self.prepend + field if field else None
                # a dotted path: its first name read as a single one, the rest by lookup()
                head, _, rest = (path or "").partition(".")
                steps.append((text, path, head, rest, conv, _formatter(spec)))
            cached = self.__dict__["_steps_cache"] = (self.tokens, steps)
        return cached[1]

    def format(self, obj):
        """Format one item (a listing's line: a row that is a dict is read
        by key -- a dict that computes its fields on demand computes only
        those printed -- anything else through lookup())."""
        out = []
        is_dict = isinstance(obj, dict)
        for text, path, head, rest, conv, formatter in self._steps():
            out.append(text)
            if path is None:
                continue
            try:
                if not is_dict:
                    value = lookup(obj, path)
                elif rest:
                    value = _read(obj, head, rest)
                else:  # _get(obj, head), inline: most fields are single names
                    try:
                        value = obj[head]
                    except KeyError:
                        value = lookup(obj, head)
                    if value is None:
                        value = ""
                if conv:
                    value = _convert(value, conv)
            except (TypeError, ValueError, OverflowError, OSError) as exc:
                raise FormatError(str(exc)) from None
            try:
                out.append(formatter(value))
            except (TypeError, ValueError) as exc:
                raise FormatError(str(exc)) from None
        return "".join(out)

    def header(self):
        """The heading row: headings with each field's alignment and width."""
        out = []
        for text, field, spec, _ in self.tokens:
            out.append(text)
            if not field:
                continue
            parsed = _Spec(spec)
            try:
                out.append(format(self.headings[field], parsed.align + parsed.width))
            except (TypeError, ValueError) as exc:
                raise FormatError(str(exc)) from None
        return "".join(out)

    def dedup_format(self, except_fields):
        """The format that tells alike items apart, as Flux's Deduplicator
        makes it: without except_fields (the literal text before one goes
        too when it is only whitespace or a sentinel), and each ``+:`` field
        bare (``+:{reason:<5.5+}`` -> ``{reason}``): items that differ in a
        value an expanded column would have truncated stay apart."""
        tokens = []
        for text, field, spec, conv in self.tokens:
            if field in except_fields:
                if text.strip() not in ("", "+:", "?:", "?+:"):
                    tokens.append([text, "", "", ""])
                continue
            if text.endswith("+:"):
                text, spec = "", ""
            tokens.append([text, field, spec, conv])
        return self._from_tokens(self, tokens)

    def filter(self, items, no_header=False):
        """Return a new OutputFormat with ``?:`` columns that are empty for all
        items removed, ``+:`` columns widened to their longest value (and
        heading unless no_header), and the sentinels removed."""
        items = list(items)
        entries = expansion_entries(self.tokens, self.headings, no_header)
        if not entries:
            return self._from_tokens(self, [list(t) for t in self.tokens])

        empty = empty_outputs()
        for item in items:
            for entry in entries:
                if not entry["field"]:
                    continue
                value = self._value(item, entry["field"], entry["conv"])
                try:
                    result = _format_field(value, "")
                except (TypeError, ValueError) as exc:
                    raise FormatError(str(exc)) from None
                width = 0 if result in empty else len(result)
                entry["maxwidth"] = max(entry["maxwidth"], width)
                entry["width"] = max(entry["width"], width)

        tokens = collapse_expansions(self.tokens, entries)
        return self._from_tokens(self, tokens)

    def lines(self, items, no_header=False, width=-1, progress=None):
        """filter + sort + optional header + one line per item.

        Lines that are empty or whitespace only are skipped (as Flux does).
        With width > 0, longer lines are cut to width-1 chars plus ``+``.
        progress(done, total), when given, is called every 500 items and at the end.
        """
        items = list(items)
        fmt = self.filter(items, no_header=no_header)
        items = self.sort_items(items)
        result = []

        def cut(line):
            if width > 0 and len(line) > width:
                return line[: width - 1] + "+"
            return line

        if not no_header:
            result.append(cut(fmt.header()))
        total = len(items)
        for done, item in enumerate(items, 1):
            if progress is not None and done % 500 == 0:
                progress(done, total)
            line = fmt.format(item)
            if not line or line.isspace():
                continue
            result.append(cut(line))
        if progress is not None:
            progress(total, total)
        return result


def _escape(text):
    return text.replace("{", "{{").replace("}", "}}")


def _token_str(text, field, spec, conv):
    out = _escape(text)
    if field:
        out += "{" + field + ("!" + conv if conv else "") + (":" + spec if spec else "") + "}"
    return out


def without_fields(fmt: str, fields) -> str:
    """Format string fmt less `fields`, as Flux's OutputFormat.get_format
    (except_fields=...) drops them (how the `{color_up}`/`{color_off}` fields
    go when color is off): the literal text just before such a field goes with
    it when it is only whitespace or a sentinel (``?:``, ``+:``, ``?+:``). A
    bad format is returned unchanged, for the listing to report."""
    try:
        tokens = _parse(fmt)
    except ValueError:
        return fmt
    out = []
    for text, field, spec, conv in tokens:
        if field in fields:
            if text.strip() not in ("", "+:", "?:", "?+:"):
                out.append(_escape(text))
            continue
        out.append(_token_str(text, field, spec, conv))
    return "".join(out)


def render(fmt, headings, items, no_header=False, width=-1, heading_fallback=None):
    """Parse fmt and return the output lines (header first unless no_header)."""
    formatter = OutputFormat(fmt, headings, heading_fallback=heading_fallback)
    return formatter.lines(items, no_header=no_header, width=width)


def _format_entry(entry):
    """(description, format) tuple or {"description":..., "format":...}."""
    if isinstance(entry, Mapping):
        return entry.get("description"), entry.get("format")
    if isinstance(entry, str):
        return None, entry
    description, fmt = entry
    return description, fmt


def list_formats_help(formats, progname):
    """Text printed by ``-o help`` (ends with a newline)."""
    out = [f"\nConfigured {progname} output formats:\n\n"]
    for name, entry in formats.items():
        description, _ = _format_entry(entry)
        line = f"  {name:<12}"
        if description is not None:
            line += f" {description}"
        out.append(line + "\n")
    return "".join(out)


def resolve_format(formats, name, progname=None, env=None):
    """Turn ``-o ARG`` into a format string, like UtilConfig.get_format_string.

    ARG containing ``{`` is a format already; ``default`` may be overridden by
    ``env["<PROGNAME>_FORMAT_DEFAULT"]`` (progname upper-cased, ``-`` -> ``_``);
    an unknown name raises FormatError
    ``--format: No such format NAME (Did you mean '{NAME}'?)``.
    ``help`` is not handled here (see list_formats_help).
    """
    if "{" in name:
        return name
    if name == "default" and env is not None and progname:
        var = progname.upper().replace("-", "_") + "_FORMAT_DEFAULT"
        value = env.get(var)
        if value is not None and "{" in value:
            return value
        if value is not None:
            name = value
    if name in formats:
        return _format_entry(formats[name])[1]
    suggestion = re.sub(r"\w+", r"{\g<0>}", name)
    raise FormatError(f"--format: No such format {name} (Did you mean '{suggestion}'?)")


# -- the pieces flux.util (Flux's OutputFormat API, in the flux package) builds on --

#: datetime of the !d conversion (Flux's name)
UtilDatetime = _Datetime
#: a format spec split into Flux's parts (fill, align, ..., hyphen, truncate)
FormatSpec = _Spec


def convert_field(value, conv):
    """A value under conversion conv (d, D, F, H, P, s, r, a), as Flux's
    UtilFormatter converts it; ValueError for an unknown conversion."""
    return _convert(value, conv)


def format_field(value, spec):
    """format(value, spec) with Flux's ``h`` and ``+`` spec suffixes."""
    return _format_field(value, spec)


def sort_value(value):
    """(order, value) sort key: unset ("", "-", None) 0, numbers (numeric
    strings too) 1, other strings 2 (Flux's DisplayValue)."""
    return _sort_value(value)
