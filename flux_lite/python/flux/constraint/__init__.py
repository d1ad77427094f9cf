"""flux.constraint: RFC 35 constraint query parsing (see flux.constraint.parser)."""
