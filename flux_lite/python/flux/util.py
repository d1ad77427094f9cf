"""flux.util: Flux's helpers scripts use -- FSD (parse_fsd, fsd), datetimes
(parse_datetime, UtilDatetime), the output-format mini language
(OutputFormat, UtilFormatter, DisplayValue), tree dicts, ColorAction.

Values and conversions are flux_lite.formats' (fsd, when, outputformat); the
classes here give them Flux's names, signatures and behaviour.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import string
import sys
from collections.abc import Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any

from flux_lite.formats import fsd as _fsd
from flux_lite.formats import outputformat as _of
from flux_lite.formats import when as _when

__all__ = [
    "CLIMain",
    "ColorAction",
    "DisplayValue",
    "Fileref",
    "OutputFormat",
    "UtilDatetime",
    "UtilFormatter",
    "del_treedict",
    "empty_outputs",
    "fsd",
    "get_treedict",
    "parse_datetime",
    "parse_fsd",
    "set_treedict",
    "Tree",
]

UtilDatetime = _of.UtilDatetime


def parse_fsd(fsd_string: str) -> float:
    """Seconds in a Flux Standard Duration (ValueError if invalid)."""
    return _fsd.parse(fsd_string)


def fsd(secs: float) -> str:
    """Seconds as a short FSD (``0.152s``, ``53.92s``, ``29.89m``, ``inf``)."""
    return _of.fsd(secs)


def empty_outputs() -> tuple:
    """Formatted values that count as empty (``h`` suffix, ``?:`` prefix)."""
    return _of.empty_outputs()


def parse_datetime(string: str, now: datetime | None = None) -> datetime:
    """A datetime from ``now``, ``+FSD``/``-FSD`` (from now) or natural
    language (``noon tomorrow``, ``2021-06-10 08:00``); ValueError if none."""
    if now is None:
        now = datetime.now().astimezone()
    if string == "now":
        return now
    return datetime.fromtimestamp(_when.parse(string, now.timestamp())).astimezone()


def get_treedict(in_dict: Mapping, key: str, default: Any = None) -> Any:
    """in_dict["a"]["b"]["c"] for key "a.b.c", default if a level is missing."""
    value: Any = in_dict
    for part in key.split("."):
        try:
            value = value[part]
        except (KeyError, TypeError):
            return default
    return value


def set_treedict(in_dict: dict, key: str, val: Any) -> None:
    """in_dict["a"]["b"]["c"] = val for key "a.b.c", creating levels."""
    *path, last = key.split(".")
    for part in path:
        in_dict = in_dict.setdefault(part, {})
    in_dict[last] = val


def del_treedict(in_dict: dict, key: str, remove_empty: bool = False) -> None:
    """del in_dict["a"]["b"]["c"] for key "a.b.c" (KeyError if a level is
    missing); with remove_empty, levels left empty go too."""
    head, dot, rest = key.partition(".")
    if not dot:
        del in_dict[key]
        return
    del_treedict(in_dict[head], rest, remove_empty=remove_empty)
    if remove_empty and isinstance(in_dict[head], Mapping) and not in_dict[head]:
        del in_dict[head]


class ColorAction(argparse.Action):
    """argparse action for ``--color[=WHEN]`` (always, never, auto): no
    argument means always; unused, auto unless NO_COLOR is set (never).
    The value is a ColorWhen string with an ``enabled`` property."""

    class ColorWhen(str):
        @property
        def enabled(self) -> bool:
            if self == "always":
                return True
            if self == "never":
                return False
            return sys.stdout.isatty()

    def __init__(self, option_strings: Any, dest: str, nargs: Any = "?", default: Any = "auto",
                 metavar: Any = "WHEN", help: Any = "Use color; WHEN can be 'never', 'always' or 'auto' (default)",
                 **kwargs: Any) -> None:
        if default == "auto" and os.environ.get("NO_COLOR"):
            default = "never"
        super().__init__(option_strings, dest, nargs=nargs, default=ColorAction.ColorWhen(default),
                         metavar=metavar, help=help, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        when = "always" if values is None else values
        if when not in ("auto", "always", "never"):
            parser.error(f"Invalid argument to --color: '{when}'")
        setattr(namespace, self.dest, ColorAction.ColorWhen(when))


class CLIMain:
    """Run a script's main function as Flux's commands run theirs:
    ``CLIMain(LOGGER)(main)`` sets up logging (level FLUX_PYCLI_LOGLEVEL,
    ``name: LEVEL: message``), logs an exception as one error line
    (an OSError by its strerror and filename, no traceback) and exits 1,
    or with main's own exit code."""

    def __init__(self, logger: Any = None) -> None:
        import logging

        self.logger = logger if logger is not None else logging.getLogger()

    def __call__(self, main_func: Any) -> None:
        import logging
        import traceback

        level = int(os.environ.get("FLUX_PYCLI_LOGLEVEL", logging.INFO))
        logging.basicConfig(level=level, format="%(name)s: %(levelname)s: %(message)s")
        exit_code: Any = 0
        try:
            main_func()
        except SystemExit as exc:
            exit_code = exc
        except Exception as exc:
            exit_code = 1
            message = getattr(exc, "strerror", None) or str(exc)
            if getattr(exc, "filename", None):
                message += f": '{exc.filename}'"
            self.logger.error(message)
            self.logger.debug(traceback.format_exc())
        finally:
            logging.shutdown()
            sys.exit(exit_code)


class UtilFormatter(string.Formatter):
    """string.Formatter with Flux's conversions (!d !D !F !H !P) and spec
    suffixes (``h``: ``-`` for empty values, ``+``: mark truncation)."""

    def convert_field(self, value: Any, conversion: Any) -> Any:
        return _of.convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        return _of.format_field(value, format_spec)


@functools.total_ordering
class DisplayValue:
    """Sort key of a displayed value: unset (None, "", "-") first, then
    numbers (numeric strings and bools too), then other strings."""

    __slots__ = ("value", "_type_order", "_sort_value")

    EMPTY = 0
    NUMERIC = 1
    STRING = 2

    def __init__(self, value: Any) -> None:
        self.value = value
        self._type_order, self._sort_value = _of.sort_value(value)

    def __eq__(self, other: Any) -> bool:
        return (self._type_order, self._sort_value) == (other._type_order, other._sort_value)

    def __lt__(self, other: Any) -> bool:
        return (self._type_order, self._sort_value) < (other._type_order, other._sort_value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DisplayValue({self.value!r}, type_order={self._type_order}, sort_value={self._sort_value!r})"


_SENTINELS = _of.SENTINELS
_SORT_PREFIX = re.compile(r"sort:([^{\s]+)")


class OutputFormat:
    """A parsed Flux output format (``{id:>12} {name:<10.10+} ...``).

    ``headings`` maps each valid field to its column heading (a subclass may
    set it); ``formatter`` is the string.Formatter class used; every field
    is looked up as ``prepend`` + name (``0.name``: an attribute of the
    item). Formats take the ``?:``, ``+:``, ``?+:`` field prefixes and a
    leading ``sort:KEY[,-KEY]``. ValueError for an unknown field.
    """

    formatter: type = UtilFormatter
    headings: Mapping[str, str] = {}
    prepend = "0."
    FormatSpec = _of.FormatSpec

    class HeaderFormatter(UtilFormatter):
        """Headings are looked up by their whole field name."""

        def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
            if field_name in kwargs:
                return kwargs[field_name], None
            return super().get_field(field_name, args, kwargs)

    def __init__(self, fmt: str, headings: Mapping[str, str] | None = None, prepend: str | None = "0.",
                 nullify_expansion_sentinel: bool = False) -> None:
        if headings is not None:
            self.headings = headings
        if prepend is not None:
            self.prepend = prepend
        self.format_list = [[s or "" for s in t] for t in string.Formatter().parse(fmt)]
        self.sort_keys: list[tuple[str, bool]] = []
        self._sort_has_trailing_space = True
        if self.format_list and self.format_list[0][0].startswith("sort:"):
            fmt = self._strip_sort_prefix(fmt)
        if nullify_expansion_sentinel:
            fmt = self.get_format_prepended("", include_sort_prefix=False, nullify_expansion_sentinel=True)
            self.format_list = [[s or "" for s in t] for t in string.Formatter().parse(fmt)]
        self.fmt = fmt
        self.fmt_orig = fmt
        self._fields = [field for _, field, _, _ in self.format_list if field]
        for field in self._fields:
            name = field[2:] if field.startswith("0.") else field
            if name and name not in self.headings:
                raise ValueError("Unknown format field: " + name)
        if self.prepend:
            self.fmt = self.get_format_prepended(self.prepend, include_sort_prefix=False)

    def _strip_sort_prefix(self, fmt: str) -> str:
        text = self.format_list[0][0]
        match = _SORT_PREFIX.match(text)
        if match is None:
            return fmt
        keys = match.group(1)
        self.set_sort_keys(keys)
        cut = len("sort:") + len(keys)
        rest, fmt = text[cut:], fmt[cut:]
        self._sort_has_trailing_space = fmt.startswith(" ")
        if self._sort_has_trailing_space:
            rest, fmt = rest[1:], fmt[1:]
        self.format_list[0][0] = rest
        return fmt

    @property
    def fields(self) -> list[str]:
        """The fields of the format and the sort keys."""
        fields = set(self._fields)
        fields.update(key for key, _ in self.sort_keys)
        return list(fields)

    @staticmethod
    def _calculate_width(width: int) -> int:
        if width == 0:
            try:
                return os.get_terminal_size().columns
            except OSError:
                return -1
        return width

    def _fmt_tuple(self, text: str, field: str, spec: str | None, conv: str | None) -> str:
        if not field:
            return text
        spec = ":" + spec if spec else ""
        conv = "!" + conv if conv else ""
        return f"{text}{{{field}{conv}{spec}}}"

    def header_format(self) -> str:
        """The format of the heading row: each field's alignment and width only."""
        out = []
        for text, field, spec, _ in self.format_list:
            parsed = self.FormatSpec(spec)
            out.append(self._fmt_tuple(text, field, f"{parsed.align}{parsed.width}", None))
        return "".join(out)

    def header(self, width: int = -1) -> str:
        """The heading row (cut to width columns when width > 0; 0: the terminal's)."""
        result = self.HeaderFormatter().format(self.header_format(), **self.headings)
        width = self._calculate_width(width)
        if width > 0 and len(result) > width:
            result = result[: width - 1] + "+"
        return result

    def get_format_prepended(self, prepend: str, except_fields: Any = None, include_sort_prefix: bool = True,
                             nullify_expansion_sentinel: bool = False) -> str:
        """The format with prepend before each field, without except_fields
        (and the blank or sentinel text before them); with
        nullify_expansion_sentinel, ``+:{f:<10.10}`` becomes ``{f}``."""
        except_fields = except_fields or []
        out = []
        for text, field, spec, conv in self.format_list:
            if field in except_fields:
                kept = text.strip()
                if kept and kept not in _SENTINELS:
                    out.append(text)
                continue
            if field and not field.startswith(prepend):
                field = prepend + field
            if nullify_expansion_sentinel and text.endswith("+:"):
                text, spec = "", ""
            out.append(self._fmt_tuple(text, field, spec, conv))
        return (self._sort_prefix() if include_sort_prefix else "") + "".join(out)

    def _sort_prefix(self) -> str:
        if not self.sort_keys:
            return ""
        keys = ",".join(f"-{key}" if reverse else key for key, reverse in self.sort_keys)
        return "sort:" + keys + (" " if self._sort_has_trailing_space else "")

    def get_format(self, orig: bool = False, include_sort_prefix: bool = True) -> str:
        """The format (as given with orig), with its sort: prefix unless told not to."""
        fmt = self.fmt_orig if orig else self.fmt
        return (self._sort_prefix() if include_sort_prefix else "") + fmt

    def copy(self, except_fields: Any = None, nullify_expansion: bool = False) -> OutputFormat:
        """A copy, without except_fields, optionally with ``+:`` fields plain."""
        fmt = self.get_format_prepended("", except_fields, nullify_expansion_sentinel=nullify_expansion)
        return self.__class__(fmt, headings=self.headings, prepend=self.prepend)

    def format(self, obj: Any) -> str:
        """One item formatted."""
        try:
            return self.formatter().format(self.get_format(include_sort_prefix=False), obj)
        except KeyError as exc:
            raise KeyError(f"Invalid format field {exc} for {type(obj)}") from None

    def filter(self, items: Any, no_header: bool = False) -> str:
        """The format with ``?:`` fields empty for every item removed and
        ``+:`` fields widened to their widest value (and heading unless
        no_header), sentinels dropped."""
        entries = _of.expansion_entries(self.format_list, self.headings, no_header, self.FormatSpec)
        for entry in entries:
            entry["fmt"] = self._fmt_tuple("", "0." + entry["field"], None, entry["conv"])
        if not entries:
            return self.get_format(orig=True)
        formatter = self.formatter()
        empty = empty_outputs()
        for item in items:
            for entry in entries:
                result = formatter.format(entry["fmt"], item)
                width = 0 if result in empty else len(result)
                entry["maxwidth"] = max(entry["maxwidth"], width)
                entry["width"] = max(entry["width"], width)
        kept = _of.collapse_expansions(self.format_list, entries)
        return self._sort_prefix() + "".join(self._fmt_tuple(*t) for t in kept)

    def set_sort_keys(self, sort_keys: str) -> None:
        """Sort keys ``key1,-key2`` (``-`` reverses); ValueError for a field
        without a heading."""
        self.sort_keys = []
        for key in sort_keys.split(","):
            key = key.strip()
            if not key:
                continue
            reverse = key.startswith("-")
            if reverse:
                key = key[1:]
            if key not in self.headings:
                raise ValueError("Invalid sort key: " + key)
            self.sort_keys.append((key, reverse))

    def sort_items(self, items: list) -> list:
        """Sort items in place by the sort keys (attributes); returns items."""
        for key, reverse in reversed(self.sort_keys):
            getter = attrgetter(key)
            items.sort(key=lambda item, get=getter: DisplayValue(get(item)), reverse=reverse)
        return items

    def print_items(self, items: Any, no_header: bool = False, width: int = -1, pre: Any = None,
                    post: Any = None) -> None:
        """Print items (a script's output): filtered format, sorted, with a
        heading row unless no_header, lines cut to width when width > 0."""
        if not isinstance(items, list):
            items = list(items)  # (a list is sorted in place, as Flux does)
        formatter = self.__class__(self.filter(items, no_header=no_header), headings=self.headings,
                                   prepend=self.prepend)
        items = self.sort_items(items)
        width = self._calculate_width(width)
        if not no_header:
            print(formatter.header(width=width))  # noqa: T201 (Flux's API: a script's output)
        for item in items:
            line = formatter.format(item)
            if not line or line.isspace():
                continue
            if width > 0 and len(line) > width:
                line = line[: width - 1] + "+"
            if callable(pre):
                pre(item)
            print(line)  # noqa: T201
            if callable(post):
                post(item)


class Fileref(dict):
    """An RFC 37 file object (a dict): ``data`` a dict (JSON content), or
    text already encoded when ``encoding`` ("utf-8" or "base64") is given,
    or else the path of a file, read as utf-8 text when it is, base64
    otherwise (with its size and mode). ``perms``: the mode bits (0600)."""

    def __init__(self, data: Any, perms: int = 0o600, encoding: str | None = None) -> None:
        import stat

        ref: dict = {"mode": perms | stat.S_IFREG}
        if isinstance(data, dict):
            ref["data"] = data
        elif encoding is not None:
            if encoding not in ("base64", "utf-8"):
                raise ValueError(f"invalid encoding: {encoding}")
            ref["data"] = data
            ref["encoding"] = encoding
        else:
            import base64

            st = os.stat(data)
            ref["size"], ref["mode"] = st.st_size, st.st_mode
            with open(data, "rb") as f:
                content = f.read()
            try:
                ref["data"], ref["encoding"] = content.decode("utf-8"), "utf-8"
            except UnicodeError:
                ref["data"], ref["encoding"] = base64.b64encode(content).decode("utf-8"), "base64"
        super().__init__(**ref)


class Tree:
    """A pstree-like tree printed on the console: nodes with a label and an
    optional prefix; with combine_children, like children added (append,
    append_tree of a leaf) are counted once and shown as ``N*[label]``."""

    # (pipe, tee, elbow, blank) of each style
    connector_styles = {
        "ascii": ("|   ", "|-- ", "`-- ", "    "),
        "box": ("\u2502   ", "\u251c\u2500\u2500 ", "\u2514\u2500\u2500 ", "    "),
        "compact": ("\u2502 ", "\u251c\u2500", "\u2514\u2500", "  "),
    }

    def __init__(self, label: str, prefix: str = "", combine_children: bool = False) -> None:
        self.label = label
        self.prefix = prefix + " " if prefix else ""
        self.duplicates: dict = {}
        self.duplicate_count = 1
        self.children: list = []
        self.combine_children = combine_children

    def append(self, label: str, prefix: str = "") -> Tree:
        """A new child (or, combining, the like child already there, counted again)."""
        if not self.combine_children:
            return self.add(label, prefix)
        key = f"{prefix}{label}"
        if key in self.duplicates:
            self.duplicates[key].increment()
        else:
            self.duplicates[key] = self.add(label, prefix, combine_children=True)
        return self.duplicates[key]

    def append_tree(self, tree: Tree) -> Tree:
        """Add a tree as a child (combined with a like leaf when combining)."""
        if not self.combine_children or tree.children:
            self.children.append(tree)
            return tree
        key = f"{tree.prefix}{tree.label}"
        if key in self.duplicates:
            self.duplicates[key].increment()
        else:
            self.children.append(tree)
            self.duplicates[key] = tree
        return self.duplicates[key]

    def add(self, label: str, prefix: str = "", combine_children: bool = False) -> Tree:
        """A new child, never combined."""
        tree = Tree(label, prefix=prefix, combine_children=combine_children)
        self.children.append(tree)
        return tree

    def increment(self) -> None:
        self.duplicate_count += 1

    def _lines(self, style: str, max_level: int | None, limit: int | None, indent: str = "", connector: str = "",
               children_indent: str = "", depth: int = 0):
        """This node's line (indent, connector, label) and its children's,
        whose lines start with children_indent."""
        if max_level is not None and depth > max_level:
            return
        label = f"{self.duplicate_count}*[{self.label}]" if self.duplicate_count > 1 else self.label
        line = f"{self.prefix}{indent}{connector}{label}"
        if limit and len(line) > limit:
            line = line[: limit - 1] + "+"
        yield line
        pipe, tee, elbow, blank = self.connector_styles[style]
        for i, child in enumerate(self.children):
            last = i == len(self.children) - 1
            yield from child._lines(style, max_level, limit, children_indent, elbow if last else tee,
                                    children_indent + (blank if last else pipe), depth + 1)

    def render(self, style: str = "box", level: int | None = None, skip_root: bool = False,
               truncate: bool = True) -> None:
        """Print the tree: ``style`` box, ascii or compact; ``level`` the
        depth to stop at; ``truncate`` cuts lines at the terminal width
        (132 columns when there is none)."""
        if skip_root:
            for child in self.children:
                child.render(style=style, level=level, truncate=truncate)
            return
        import shutil

        limit = shutil.get_terminal_size((132, 25)).columns if truncate else None
        for line in self._lines(style, level, limit):
            print(line)  # noqa: T201 (Flux's API: a script's output)
