"""Listings: the tables `jobs`, `resource list`, `resource status` and
`housekeeping list` print, and the ones to come (queue list, jobs --stats,
pgrep).

A listing is a set of rows (``Row``: fields by key or by attribute, so that
format fields such as ``{id.f58}`` or ``{pending.nnodes}`` resolve) and a
``Listing``: its named formats, column headings and ``-o help`` text. Rows are
built from what the services return (job-list records, resource sets,
housekeeping allocations); the commands only add options and printing
(flux_lite.cli.listing).

This layer lives in the library, not in cli/, because the library may format
strings (it never prints): shell completion labels jobs with make_info's
status, the workload summary counts results from the same rows, and a script
can render a listing without click. It imports nothing heavy at load time.
"""

import copy
import glob
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flux_lite import config as configmod
from flux_lite.errors import ConfigError
from flux_lite.formats import outputformat
from flux_lite.formats.submitopts import dict_merge, xdg_searchpath


class AltField(str):
    """A glyph that also has an ASCII spelling ({enabled.ascii}, {up.ascii})."""

    ascii: str

    def __new__(cls, text: str, ascii_text: str) -> "AltField":
        obj = super().__new__(cls, text)
        obj.ascii = ascii_text
        return obj


class Row(dict):
    """One listed item; a missing field reads as an AttributeError (printed empty)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Listing:
    """A listing's presentation: named formats, headings and the -o help text.

    formats maps a name to (description, format string); "default" is used
    unless -o names another or gives a format string.
    """

    def __init__(self, progname: str, formats: dict, headings: dict,
                 heading_fallback: Callable[[str], str | None] | None = None,
                 user_format_errors: bool = True) -> None:
        self.progname = progname
        self.formats = formats
        self.headings = headings
        self.heading_fallback = heading_fallback
        # flux-jobs and flux-housekeeping say "Error in user format: ..." of a
        # bad format; flux-resource and flux-queue give the error plainly
        self.user_format_errors = user_format_errors

    @property
    def default(self) -> str:
        return self.formats["default"][1]

    def configured(self, environ: Mapping[str, str]) -> "Listing":
        """This listing with the named formats of the user's configuration, as
        Flux's tools read it: NAME.toml|json|yaml (NAME: flux-jobs,
        flux-resource...) in each XDG config directory, the system's
        ($XDG_CONFIG_DIRS, /etc/xdg) first, $XDG_CONFIG_HOME (~/.config)
        last and winning; a subcommand's formats in its table
        ([list.formats.NAME]). Builtin formats cannot be overridden; a bad
        file is a ValueError naming it."""
        name, _, sub = self.progname.partition(" ")
        merged: dict = {}
        for path in reversed(xdg_searchpath(environ)):
            for file in sorted(glob.glob(os.path.join(glob.escape(path), f"{name}.*"))):
                ext = os.path.splitext(file)[1]
                if ext not in (".toml", ".json", ".yaml"):
                    continue
                try:
                    with open(file, encoding="utf-8") as f:
                        text = f.read()
                    conf = configmod.load_text(text, source=file, fmt=ext[1:], check=False)
                except (OSError, UnicodeDecodeError) as exc:
                    raise ValueError(f"{file}: {exc}") from None
                except ConfigError as exc:
                    raise ValueError(str(exc) if str(exc).startswith(file) else f"{file}: {exc}") from None
                table = conf.get(sub) if sub else conf
                if isinstance(table, dict) and "formats" in table:
                    self._check_formats(file, table["formats"])
                merged = dict_merge(merged, conf)
        table = merged.get(sub, {}) if sub else merged
        formats = table.get("formats") if isinstance(table, dict) else None
        if not formats:
            return self
        listing = copy.copy(self)
        listing.formats = {**self.formats, **{k: (v.get("description"), v["format"]) for k, v in formats.items()}}
        return listing

    def _check_formats(self, file: str, formats: Any) -> None:
        if not isinstance(formats, dict):
            raise ValueError(f"{file}: the 'formats' key must be a mapping")
        for name, entry in formats.items():
            if name in self.formats:
                raise ValueError(f"{file}: override of builtin format '{name}' not permitted")
            if not isinstance(entry, dict):
                raise ValueError(f"{file}: 'formats.{name}' must be a mapping")
            if "format" not in entry:
                raise ValueError(f"{file}: formats.{name}: required key 'format' missing")
            if not isinstance(entry["format"], str):
                raise ValueError(f"{file}: formats.{name}: 'format' key must be a string")

    def format_string(self, name: str, env: Mapping[str, str] | None = None) -> str:
        """-o NAME: a format string (it has a brace) or a named format;
        env's PROG[_SUB]_FORMAT_DEFAULT may stand for `default`. An unknown
        name raises FormatError (a ValueError), as Flux's UtilConfig does."""
        return outputformat.resolve_format(self.formats, name, self.progname.replace(" ", "-"), env)

    @property
    def subtable(self) -> str | None:
        """The config subtable of a subcommand's formats (`list` of flux-resource list)."""
        parts = self.progname.split(" ", 1)
        return parts[1] if len(parts) > 1 else None

    def fields(self, fmt: str) -> list[str]:
        """The fields format fmt names (what the rows must provide); a bad
        format raises FormatError (a ValueError)."""
        return outputformat.OutputFormat(fmt, self.headings, heading_fallback=self.heading_fallback).fields

    def help(self) -> str:
        """What `-o help` prints."""
        # the heading names the command, not the subcommand
        return outputformat.list_formats_help(self.formats, self.progname.split(" ")[0])

    def lines(self, fmt: str, rows: Iterable, no_header: bool = False,
              merge: Callable[[Any, list], Iterable] | None = None,
              progress: Callable[[int, int], None] | None = None, sort: str | None = None,
              width: int = -1) -> list[str]:
        """The output lines of rows in format fmt (header first unless no_header).

        merge(rows, fields), when given, may combine rows once the format's
        fields are known (housekeeping list merges rows that print alike).
        A bad format raises FormatError (a ValueError). progress(done, total)
        is called every few hundred rows. sort (``key,-key``) replaces the
        format's ``sort:`` keys; a line longer than width (> 0) is cut to
        width - 1 characters and a ``+``.
        """
        formatter = outputformat.OutputFormat(fmt, self.headings, heading_fallback=self.heading_fallback)
        if sort:
            formatter.set_sort_keys(sort)
        if merge is not None:
            rows = merge(rows, formatter.fields)
        return formatter.lines(rows, no_header=no_header, progress=progress, width=width)
