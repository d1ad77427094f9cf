"""flux.constraint.parser: Flux's ConstraintParser, an RFC 35 query parser
whose subclasses set ``operator_map``, ``split_values`` and ``combined_terms``.

The grammar and its errors are flux_lite.formats.constraint.QueryParser's.
"""

from __future__ import annotations

from typing import Any

from flux_lite.formats.constraint import ConstraintSyntaxError, QueryParser

__all__ = ["ConstraintParser", "ConstraintSyntaxError"]


class ConstraintParser(QueryParser):
    """Parse an RFC 35 constraint query into an RFC 31 object (a dict)."""

    operator_map: dict = {}
    split_values: dict = {}
    combined_terms: set = set()

    def __init__(self, lexer: Any = None, optimize: bool = True, debug: bool = False, write_tables: bool = False,
                 **kw_args: Any) -> None:
        # (Flux's arguments configure its yacc tables: there are none here)
        self.query: str | None = None

    def parse(self, query: str, **kw_args: Any) -> dict:
        self.query = query
        return super().parse(query)
