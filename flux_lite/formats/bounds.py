"""Bounds on what one parsed document may cost.

YAML aliases make a document's size after parsing unrelated to its length:
563 bytes of nested aliases name a billion strings, which anything walking
the result (validation, json.dumps) would then visit one by one.
"""

MAX_VALUES = 100000
# bytes of YAML one document may have: PyYAML parses well under a MiB a
# second, so a 16 MiB jobspec would keep a command busy for a minute
MAX_YAML = 1 << 20


def count_values(obj, limit: int = MAX_VALUES) -> int:
    """Values in obj, counting each alias expansion; stops (returning
    limit + 1) as soon as there are more than limit. Iterative: no recursion."""
    stack = [obj]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            return seen
        if isinstance(value, dict):
            stack.extend(value.values())
            stack.extend(value.keys())
        elif isinstance(value, (list, tuple, set)):
            stack.extend(value)
    return seen


MAX_DEPTH = 1000  # flow nesting ([ and {) a YAML document may have


def flow_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether text nests [ and { deeper than limit, outside quoted strings.

    PyYAML's parser takes seconds on 10^5 nested brackets (and the depth
    would fail later anyway): this scan is linear and runs first."""
    depth = 0
    quote = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth = max(depth - 1, 0)
        elif ch in "'\"":
            quote = ch
    return False
