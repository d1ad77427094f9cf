"""Limits every layer shares (the bottom of the layer map: imports nothing of flux-lite)."""

# 9999-12-31T23:59:59Z: the last time the tools can print (ISO 8601 with a four-digit year)
MAX_TIME = 253402300799.0
