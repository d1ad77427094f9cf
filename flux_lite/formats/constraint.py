"""RFC 35 constraint queries (``submit --requires``) into RFC 31 constraint objects.

A query is terms joined by ``and`` (or just spaces), ``or`` (also ``|``,
``||``), negated by ``not`` or a leading ``-``, grouped with parentheses.
A term is ``operator:value`` or a bare value, which names properties. The
job operators are ``properties`` (values split at commas), ``host``/``hosts``/
``hostlist`` and ``rank``/``ranks``. Property terms joined by ``and`` merge
into one ``properties`` list, so ``--requires=debug`` gives
``{"properties": ["debug"]}`` exactly as Flux does.
"""

from __future__ import annotations

import re

from flux_lite.errors import FormatError
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset

OPERATORS = {
    None: "properties", "properties": "properties", "property": "properties", "prop": "properties",
    "host": "hostlist", "hosts": "hostlist", "hostlist": "hostlist",
    "rank": "ranks", "ranks": "ranks",
}
_BAD_PROPERTY_CHARS = set("!&'\"`|()")


class ConstraintSyntaxError(FormatError):
    pass


def _tokens(text):
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "()":
            out.append((c, c))
            i += 1
        elif text.startswith("||", i) or text.startswith("&&", i):
            out.append(("or" if c == "|" else "and", text[i:i + 2]))
            i += 2
        elif c == "|":
            out.append(("or", c))
            i += 1
        elif c == "&":
            out.append(("and", c))
            i += 1
        elif c == "-" and (i + 1 < n and not text[i + 1].isspace()):
            out.append(("not", c))
            i += 1
        elif c in "'\"":
            end = text.find(c, i + 1)
            if end < 0:
                raise ConstraintSyntaxError(f"unterminated quote in '{text}'")
            out.append(("term", text[i + 1:end]))
            i = end + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "()|&":
                if text[j] in "'\"":
                    end = text.find(text[j], j + 1)
                    if end < 0:
                        raise ConstraintSyntaxError(f"unterminated quote in '{text}'")
                    j = end + 1
                else:
                    j += 1
            word = text[i:j].replace('"', "").replace("'", "")
            lower = word.lower()
            if lower in ("and", "or", "not"):
                out.append((lower, word))
            else:
                out.append(("term", word))
            i = j
    return out


def _term(word):
    op, colon, value = word.partition(":")
    if not colon:
        op, value = None, word
    if op not in OPERATORS:
        raise ConstraintSyntaxError(f"unknown constraint operator '{op}'")
    if not value:
        raise ConstraintSyntaxError(f"missing value for constraint operator '{op}'")
    name = OPERATORS[op]
    if name == "properties":
        props = [p for p in value.split(",")]
        for p in props:
            bare = p[1:] if p.startswith("^") else p
            if not bare or set(bare) & _BAD_PROPERTY_CHARS or "^" in bare:
                raise ConstraintSyntaxError(f"invalid character in property \"{p}\"")
        return {"properties": props}
    if name == "hostlist":
        try:
            Hostlist.parse(value)
        except FormatError:
            raise ConstraintSyntaxError(f"invalid hostlist '{value}' in {word}") from None
        return {"hostlist": [value]}

    try:
        IDset.parse(value)
    except FormatError:
        raise ConstraintSyntaxError(f"invalid idset '{value}' in {word}") from None
    return {"ranks": [value]}


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self):
        return self.toks[self.pos][0] if self.pos < len(self.toks) else None

    def take(self):
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def parse(self):
        if not self.toks:
            raise ConstraintSyntaxError("empty constraint")
        expr = self.expr_or()
        if self.pos != len(self.toks):
            raise ConstraintSyntaxError(f"unexpected '{self.toks[self.pos][1]}' in '{self.text}'")
        return expr

    def expr_or(self):
        parts = [self.expr_and()]
        while self.peek() == "or":
            self.take()
            parts.append(self.expr_and())
        return parts[0] if len(parts) == 1 else {"or": parts}

    def expr_and(self):
        parts = [self.expr_not()]
        while self.peek() in ("and", "not", "term", "("):
            if self.peek() == "and":
                self.take()
            parts.append(self.expr_not())
        return _combine_and(parts)

    def expr_not(self):
        kind = self.peek()
        if kind == "not":
            self.take()
            return {"not": [self.expr_not()]}
        if kind == "(":
            self.take()
            inner = self.expr_or()
            if self.peek() != ")":
                raise ConstraintSyntaxError(f"missing ')' in '{self.text}'")
            self.take()
            return inner
        if kind == "term":
            return _term(self.take()[1])
        if kind is None:
            raise ConstraintSyntaxError(f"unexpected end of constraint '{self.text}'")
        raise ConstraintSyntaxError(f"unexpected '{self.toks[self.pos][1]}' in '{self.text}'")


def _combine_and(parts):
    if len(parts) == 1:
        return parts[0]
    props = []
    others = []
    for p in parts:
        if list(p) == ["properties"]:
            props.extend(x for x in p["properties"] if x not in props)
        else:
            others.append(p)
    if props:
        others.insert(0, {"properties": props})
    return others[0] if len(others) == 1 else {"and": others}


def parse(text: str) -> dict:
    """An RFC 31 constraint object from an RFC 35 query; ConstraintSyntaxError if bad."""
    if not isinstance(text, str):
        raise ConstraintSyntaxError("constraint must be a string")
    return _Parser(text).parse()


def hostnames(constraint):
    """Every host name a constraint's hostlist terms mention."""
    out = []
    if isinstance(constraint, dict):
        for op, arg in constraint.items():
            if op == "hostlist" and isinstance(arg, list):
                for h in arg:
                    if isinstance(h, str):
                        out.extend(Hostlist.parse(h))
            elif op in ("and", "or", "not") and isinstance(arg, list):
                for sub in arg:
                    out.extend(hostnames(sub))
    return out


# -- RFC 35 queries in general: Flux's ConstraintParser (flux.constraint.parser) ---------------
#
# The grammar Flux's yacc parser gives: `or` binds loosest, then `and` (also
# two terms side by side), `not`, and `-` (which negates one term only). As in
# yacc, an `or` already read is closed by a term that follows it without an
# operator ("a|b c" is "(a|b) c"), but not by `not` or `-`, which bind
# tighter. A term is [operator:]value; quotes only delimit text, and a term
# ending in ':' takes the next text as its value (op:'a quoted string').

_QUERY_LEXEMES = (
    ("NEGATE", r"-"),
    ("NOT", r"not\b"),
    ("AND", r"&{1,2}|and\b"),
    ("OR", r"\|{1,2}|or\b"),
    ("LPAREN", r"\("),
    ("RPAREN", r"\)"),
    ("TOKEN", r"[^()|&\s\"']+"),
    ("QUOTE", r"'|\""),
)
_QUERY_RE = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _QUERY_LEXEMES))
_QUERY_SPACE = " \t\r\n\f\v"
# yacc precedence levels of the tokens (others: 0) and of the rules
_LEVEL = {"OR": 1, "AND": 2, "NOT": 3, "NEGATE": 4}
_STARTS = ("TOKEN", "NOT", "NEGATE", "LPAREN")
_INVALID_OPERATOR = re.compile(r"[^\w.+@-]")


class _QueryLexer:
    """Tokens (kind, value, position) of a query, read one at a time."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.parens = 0
        self.last_lparen = 0
        self.last_rparen = 0
        self.pending: tuple | None = None
        self.unclosed: tuple | None = None

    def _token(self, value: str, pos: int) -> tuple | None:
        if self.pending is not None:
            value = self.pending[1] + value
            pos = self.pending[2]
            self.pending = None
        elif value.endswith(":"):
            self.pending = ("TOKEN", value, pos)
            return None
        return ("TOKEN", value, pos)

    def next(self) -> tuple | None:
        text = self.text
        while True:
            while self.pos < len(text) and text[self.pos] in _QUERY_SPACE:
                self.pos += 1
            if self.pos >= len(text):
                if self.unclosed is not None:
                    quote, pos = self.unclosed
                    raise ConstraintSyntaxError(f"Unclosed quote {_quoted(quote)} at position {pos}")
                if self.pending is not None:
                    raise ConstraintSyntaxError(f"Missing argument to token '{self.pending[1]}'")
                return None
            m = _QUERY_RE.match(text, self.pos)
            if m is None:
                raise ConstraintSyntaxError(f"Illegal character '{text[self.pos]}' at position {self.pos}")
            kind, start = m.lastgroup, self.pos
            self.pos = m.end()
            if kind == "QUOTE":
                quote = m.group()
                end = text.find(quote, self.pos)
                if end < 0:
                    # the text after the quote is a token still; the error comes at the end
                    self.unclosed = (quote, self.pos)
                    end = len(text)
                inner, self.pos = text[self.pos:end], end + 1
                if inner:
                    tok = self._token(inner, start + 1)
                    if tok is not None:
                        return tok
                continue
            if kind == "TOKEN":
                tok = self._token(m.group(), start)
                if tok is None:
                    continue
                return tok
            if kind == "LPAREN":
                self.parens += 1
                self.last_lparen = start
            elif kind == "RPAREN":
                self.parens -= 1
                self.last_rparen = start
            return (kind, m.group(), start)


def _quoted(quote: str) -> str:
    return "\"'\"" if quote == "'" else "'\"'"


class QueryParser:
    """An RFC 35 query parser: ``parse(query)`` gives the RFC 31 object.

    Class attributes (Flux's ConstraintParser's): ``operator_map`` maps
    operator names to the names written (``None``: the operator of a bare
    term; without it every term needs one), ``split_values`` maps an
    operator to the string its values are split at, ``combined_terms`` the
    operators whose values merge when joined by ``and``.
    Errors: ConstraintSyntaxError with Flux's words.
    """

    operator_map: dict = {}
    split_values: dict = {}
    combined_terms: set = set()

    def parse(self, query: str) -> dict:
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, not {type(query).__name__}")
        self._query = query
        self._lexer = _QueryLexer(query)
        self._look = self._lexer.next()
        result = self._expression(-1, True)
        if self._look is not None:
            self._error()
        return result

    # -- the grammar ----------------------------------------------------------

    def _take(self) -> tuple:
        tok = self._look
        self._look = self._lexer.next()
        return tok  # type: ignore[return-value]

    def _error(self):
        tok = self._look
        if tok is None:
            if self._lexer.parens > 0:
                raise ConstraintSyntaxError(f"Unclosed parenthesis in position {self._lexer.last_lparen}")
            raise ConstraintSyntaxError(f"Unexpected end of input in '{self._query}'")
        if self._lexer.parens < 0:
            raise ConstraintSyntaxError(f"Mismatched parentheses starting at position {self._lexer.last_rparen}.")
        raise ConstraintSyntaxError(f"Invalid token '{tok[1]}' at position {tok[2]}")

    def _expression(self, level: int, left_assoc: bool) -> dict:
        """An expression as the operand of a rule of `level`: yacc reduces
        that rule when the next token's level is below it (or equal, for a
        left-associative rule), and shifts otherwise."""
        left = self._unary()
        while self._look is not None:
            kind = self._look[0]
            if kind not in ("OR", "AND") and kind not in _STARTS:
                break
            tok_level = _LEVEL.get(kind, 0)
            if tok_level < level or (tok_level == level and left_assoc):
                break
            if kind == "OR":
                self._take()
                right = self._expression(_LEVEL["OR"], True)
                if "or" in left:
                    left["or"].append(right)
                else:
                    left = {"or": [left, right]}
            else:
                if kind == "AND":
                    self._take()
                right = self._expression(_LEVEL["AND"], True)
                left = self._combine(left, right)
        return left

    def _unary(self) -> dict:
        tok = self._look
        if tok is None:
            self._error()
        kind = tok[0]  # type: ignore[index]
        if kind == "NOT":
            self._take()
            return {"not": [self._expression(_LEVEL["NOT"], False)]}
        if kind == "NEGATE":
            self._take()
            if self._look is None or self._look[0] != "TOKEN":
                self._error()
            return {"not": [self._token()]}
        if kind == "LPAREN":
            self._take()
            inner = self._expression(-1, True)
            if self._look is None or self._look[0] != "RPAREN":
                self._error()
            self._take()
            return inner
        if kind == "TOKEN":
            return self._token()
        self._error()
        raise AssertionError  # (not reached: _error raises)

    def _token(self) -> dict:
        # yacc reads the next token before it reduces this one: a lexer
        # error there comes before this term's own
        return self._term(self._take()[1])

    def _combine(self, p1: dict, p2: dict) -> dict:
        entries = [p1, p2]
        if "and" in p1:
            p1["and"].append(p2)
            entries = [p1]
        combined: dict = {}
        terms = []
        for entry in entries:
            key = next(iter(entry))
            if key not in self.combined_terms:
                terms.append(entry)
            elif key not in combined:
                combined[key] = entry[key]
                terms.append(entry)
            else:
                combined[key].extend(entry[key])
        return terms[0] if len(terms) == 1 else {"and": terms}

    def _term(self, word: str) -> dict:
        op, colon, value = word.partition(":")
        if not colon:
            if None not in self.operator_map:
                raise ConstraintSyntaxError(f'Missing required operator in "{word}"')
            op, value = self.operator_map[None], word
        elif op in self.operator_map:
            op = self.operator_map[op]
        bad = _INVALID_OPERATOR.search(op)
        if bad:
            raise ConstraintSyntaxError(f"invalid character '{bad[0]}' in operator '{op}:'")
        if op in self.split_values:
            return {op: value.split(self.split_values[op])}
        return {op: [value]}
