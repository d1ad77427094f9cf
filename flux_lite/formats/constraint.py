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
