"""Bounds on what one parsed document may cost.

YAML aliases make a document's size after parsing unrelated to its length:
563 bytes of nested aliases name a billion strings, which anything walking
the result (validation, json.dumps) would then visit one by one.
"""

MAX_VALUES = 100000


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
