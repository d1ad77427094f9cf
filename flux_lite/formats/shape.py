"""RFC 46 job shapes: ``--resources-shape`` text -> an RFC 14 resources list
(Flux's ``flux.shape.parser.ShapeParser``, with its error messages).

Grammar (whitespace is ignored between tokens)::

    resources : list
    list      : '[' vertex (';' vertex)* ']' | vertex
    vertex    : 'slot' ('=' count)? ('{' label (',' item)* '}')? '/' list
              | type ('=' count)? dict? ('/' list)?
    count     : '[' value ']' | value       (N, N-M[:K[:OP]], N+[:K[:OP]], or an idset: a string)
    dict      : '{' (item (',' item)*)? '}'
    item      : key ':' value | '+' key | '-' key | key       (key 'x' is 'exclusive')

A slot without a label is labelled ``task`` (only when it is the only
slot); a type or key may be quoted. Dictionary values are true, false,
null (any case), numbers, a ``[...]`` array (JSON, single quotes allowed),
a nested dict or a string. The text is read as Flux's lexer reads it: the
characters after ``=`` are a count until one of ``{/;``, a key runs to
``:``, ``,``, ``{`` or ``}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flux_lite.errors import FormatError

__all__ = ["ShapeSyntaxError", "parse"]


class ShapeSyntaxError(FormatError):
    """The shape is not RFC 46 (Flux's message)."""


_TYPE = re.compile(r"""[^={}\[\]/;\s"']+""")
_OPERATOR = re.compile(r":[+*^]")
_IDSET = re.compile(r"[1-9]\d*((?=,)|-[1-9]\d*(?=,))(,[1-9]\d*(-[1-9]\d*)?)*")
_INTEGER = re.compile(r"[1-9]\d*")
_KEY = re.compile(r"(?![+-])[^:,{}]+")
_ARRAY = re.compile(r"\[.*]", re.S)
_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d*)?((e|E)(-|\+)?\d+)?(?=[},])")
_STRING = re.compile(r"[^,{}\[\]]+")
_SPACE = " \t\r\n\f\v"
_LITERALS = ",;:/+-"


class _Tok:
    __slots__ = ("type", "value", "pos")

    def __init__(self, type_: str, value: Any, pos: int) -> None:
        self.type, self.value, self.pos = type_, value, pos


class _Lexer:
    """Tokens on demand, in the lexer states Flux's has (count, dictkey,
    dictvalue), keeping its bracket and brace counts for the errors."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.states = ["INITIAL"]
        self.bracket_level = self.brace_level = 0
        self.last_lbracket = self.last_rbracket = self.last_lbrace = self.last_rbrace = 0
        self.slot_count = 0

    def _quoted(self, quote: str) -> _Tok:
        start = self.pos + 1
        end = self.text.find(quote, start)
        if end < 0:
            raise ShapeSyntaxError(f"Unclosed quote {quote} at position {start}")
        self.pos = end + 1
        return _Tok("QSTRING", self.text[start:end], start)

    def _bracket(self, c: str, at: int) -> _Tok | None:
        if c == "{":
            self.brace_level += 1
            self.last_lbrace = at
            self.states.append("dictkey")
            return _Tok("LBRACE", c, at)
        if c == "}":
            self.brace_level -= 1
            self.last_rbrace = at
            if len(self.states) > 1:
                self.states.pop()
            return _Tok("RBRACE", c, at)
        if c == "[":
            self.bracket_level += 1
            self.last_lbracket = at
            return _Tok("LBRACKET", c, at)
        if c == "]":
            self.bracket_level -= 1
            self.last_rbracket = at
            return _Tok("RBRACKET", c, at)
        return None

    def token(self) -> _Tok | None:
        text = self.text
        while True:
            state = self.states[-1]
            while self.pos < len(text) and text[self.pos] in _SPACE:
                self.pos += 1
            if self.pos >= len(text):
                return None
            at = self.pos
            c = text[at]
            if c in "\"'":
                return self._quoted(c)
            if state == "INITIAL":
                m = _TYPE.match(text, at)
                if m:
                    self.pos = m.end()
                    if m.group().lower() == "slot":
                        self.slot_count += 1
                        return _Tok("SLOT", "slot", at)
                    return _Tok("TYPE", m.group(), at)
                if c == "=":
                    self.pos += 1
                    self.states.append("count")
                    continue
            elif state == "count":
                for kind, rx in (("OPERATOR", _OPERATOR), ("IDSET", _IDSET), ("INTEGER", _INTEGER)):
                    m = rx.match(text, at)
                    if m:
                        self.pos = m.end()
                        return _Tok(kind, int(m.group()) if kind == "INTEGER" else m.group(), at)
                if c in "{/;":
                    self.states.pop()
                    continue
            elif state == "dictkey":
                m = _KEY.match(text, at)
                if m:
                    self.pos = m.end()
                    key = m.group()
                    return _Tok("KEY", "exclusive" if key == "x" else key, at)
                if c == ":":
                    self.pos += 1
                    self.states.append("dictvalue")
                    return _Tok(":", c, at)
            elif state == "dictvalue":
                m = _ARRAY.match(text, at)
                if m:
                    self.pos = m.end()
                    self.states.pop()
                    try:
                        return _Tok("ARRAY", json.loads(m.group().replace("'", '"')), at)
                    except ValueError:
                        raise ShapeSyntaxError(f"Illegal character '{c}' at position {at}") from None
                m = _NUMBER.match(text, at)
                if m:
                    self.pos = m.end()
                    v = m.group()
                    try:
                        return _Tok("NUMBER", int(v), at)
                    except ValueError:
                        return _Tok("NUMBER", float(v), at)
                m = _STRING.match(text, at)
                if m:
                    self.pos = m.end()
                    v = m.group()
                    words = {"false": ("FALSE", False), "null": ("NULL", None), "true": ("TRUE", True)}
                    kind, value = words.get(v.lower(), ("STRING", v))
                    return _Tok(kind, value, at)
                if c == ",":
                    self.pos += 1
                    self.states.pop()
                    return _Tok(",", c, at)
                if c == "}":
                    self.pos += 1
                    self.states.pop()
                    tok = self._bracket(c, at)
                    assert tok is not None
                    return tok
            tok = self._bracket(c, at)
            if tok is not None:
                self.pos += 1
                return tok
            if c in _LITERALS:
                self.pos += 1
                return _Tok(c, c, at)
            raise ShapeSyntaxError(f"Illegal character '{c}' at position {at}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lex = _Lexer(text)
        self.tok = self.lex.token()

    def _next(self) -> _Tok | None:
        tok = self.tok
        self.tok = self.lex.token()
        return tok

    def _error(self) -> ShapeSyntaxError:
        lx = self.lex
        tok = self.tok
        if tok is None:
            if lx.bracket_level > 0:
                return ShapeSyntaxError(f"Unclosed bracket in position {lx.last_lbracket}")
            if lx.brace_level > 0:
                return ShapeSyntaxError(f"Unclosed brace in position {lx.last_lbrace}")
            return ShapeSyntaxError(f"Unexpected end of input in '{self.text}'")
        if lx.bracket_level < 0:
            return ShapeSyntaxError(f"Mismatched brackets starting at position {lx.last_rbracket}.")
        if lx.brace_level < 0:
            return ShapeSyntaxError(f"Mismatched braces starting at position {lx.last_rbrace}.")
        return ShapeSyntaxError(f"Invalid token '{tok.value}' at position {tok.pos}")

    def _is(self, *types: str) -> bool:
        return self.tok is not None and self.tok.type in types

    def _expect(self, *types: str) -> _Tok:
        if not self._is(*types):
            raise self._error()
        tok = self._next()
        assert tok is not None
        return tok

    def resources(self) -> list:
        out = self.list_()
        if self.tok is not None:
            raise self._error()
        return out

    def list_(self) -> list:
        if self._is("LBRACKET"):
            self._next()
            out = [self.vertex()]
            while self._is(";"):
                self._next()
                out.append(self.vertex())
            self._expect("RBRACKET")
            return out
        return [self.vertex()]

    def vertex(self) -> dict:
        if self._is("SLOT"):
            v = self.slot()
            self._expect("/")
            v["with"] = self.list_()
            return v
        tok = self._expect("TYPE", "QSTRING")
        v: dict[str, Any] = {"type": tok.value, "count": 1}
        if self._is("LBRACKET", "INTEGER", "IDSET"):
            v["count"] = self.count()
        if self._is("LBRACE"):
            v.update(self.dict_())
        if self._is("/"):
            self._next()
            v["with"] = self.list_()
        return v

    def slot(self) -> dict:
        self._next()
        v: dict[str, Any] = {"type": "slot", "count": 1}
        if self._is("LBRACKET", "INTEGER", "IDSET"):
            v["count"] = self.count()
        if self._is("LBRACE"):
            self._next()
            v["label"] = self.key()
            if self._is(","):
                self._next()
                v.update(self.items())
            self._expect("RBRACE")
            return v
        if self.lex.slot_count > 1:
            raise ShapeSyntaxError("Multiple slots require labels")
        v["label"] = "task"
        return v

    def count(self) -> Any:
        if self._is("LBRACKET"):
            self._next()
            value = self.count_value()
            self._expect("RBRACKET")
            return value
        return self.count_value()

    def count_value(self) -> Any:
        if self._is("IDSET"):
            return self._next().value  # type: ignore[union-attr]
        first = self._expect("INTEGER").value
        parts = [str(first)]
        if self._is("-"):
            self._next()
            parts += ["-", str(self._expect("INTEGER").value)]
        elif self._is("+"):
            self._next()
            parts.append("+")
        else:
            return first
        if self._is(":"):
            self._next()
            parts += [":", str(self._expect("INTEGER").value)]
            if self._is("OPERATOR"):
                parts.append(self._next().value)  # type: ignore[union-attr]
        return "".join(parts)

    def key(self) -> str:
        return self._expect("KEY", "QSTRING").value

    def dict_(self) -> dict:
        self._expect("LBRACE")
        if self._is("RBRACE"):
            self._next()
            return {}
        out = self.items()
        self._expect("RBRACE")
        return out

    def items(self) -> dict:
        out = self.item()
        while self._is(","):
            self._next()
            out.update(self.item())
        return out

    def item(self) -> dict:
        if self._is("-", "+"):
            sign = self._next().type  # type: ignore[union-attr]
            return {self.key(): sign == "+"}
        key = self.key()
        if self._is(":"):
            self._next()
            if self._is("LBRACE"):
                return {key: self.dict_()}
            return {key: self._expect("FALSE", "NULL", "TRUE", "ARRAY", "NUMBER", "STRING", "QSTRING").value}
        return {key: True}


def parse(text: str) -> list:
    """The RFC 14 resources list of an RFC 46 shape (ShapeSyntaxError)."""
    return _Parser(text).resources()
