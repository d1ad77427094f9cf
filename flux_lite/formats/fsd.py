"""Flux Standard Duration (RFC 23): parsing and formatting.

Two parsers, because flux-core has two with different edges:

* ``parse()`` -- Python ``flux.util.parse_fsd`` (used by ``flux update``
  and other Python commands): exactly ``inf``/``infinity``/``INF``/
  ``INFINITY`` mean infinity; otherwise an optional ``ms|s|m|h|d`` suffix
  and Python ``float()`` on the rest.  Empty, negative, NaN and infinite
  results are invalid.
* ``parse_config()`` -- C ``fsd_parse_duration`` (config files, module
  arguments, ``exec.test.run_duration``...): ``strtod()`` then an exact
  suffix.  Leading whitespace and ``+`` are accepted, as are exponents,
  hex floats and ``inf``/``infinity`` in any case (without suffix);
  ``""`` is 0.

Two formatters:

* ``format_fsd()`` -- Python ``flux.util.fsd`` (the ``!F`` conversion of
  ``flux jobs`` etc.): ``0.152s``, ``53.92s``, ``29.89m``, ``inf``.
* ``format_c()`` -- C ``fsd_format_duration_ex`` (``1h``, ``1.5m``,
  ``infinity``), precision 2 by default as in the job-manager plugins'
  error messages.

All errors are FSDError("invalid Flux standard duration").
"""

import math
import re

from flux_lite.errors import FSDError

__all__ = ["parse", "parse_config", "format_fsd", "format_c", "MESSAGE"]

MESSAGE = "invalid Flux standard duration"

_C_SPACE = " \t\n\v\f\r"

# flux.util.parse_fsd: suffix split (note: "$" also matches before a
# final newline and "." does not cross newlines, as in Python's re).
_PY_SPLIT = re.compile(r"(.*?)(s|m|h|d|ms)$")
_PY_INF = ("inf", "infinity", "INF", "INFINITY")

# strtod() syntax, matched after leading whitespace.
_STRTOD = re.compile(
    r"""
    (?P<sign>[+-]?)
    (?:
        (?P<hex>0[xX](?=\.?[0-9a-fA-F])
            (?P<hmant>[0-9a-fA-F]*(?:\.[0-9a-fA-F]*)?)
            (?:[pP](?P<hexp>[+-]?[0-9]+))?)
      | (?P<dec>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
      | (?P<inf>[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)
      | (?P<nan>[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)
    )
    """,
    re.VERBOSE,
)

_C_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _error():
    return FSDError(MESSAGE)


def _number(value):
    """Validate an int/float duration given directly (not as text)."""
    value = float(value)
    if math.isnan(value) or value < 0:
        raise _error()
    return value + 0.0  # -0.0 -> 0.0


# --------------------------------------------------------------------------
# Parsers


def parse(text):
    """Parse ``text`` the way Python ``flux.util.parse_fsd`` does.

    Returns seconds as a float (``math.inf`` for the infinity spellings).
    Numbers (int/float) are accepted as seconds if finite and >= 0.
    """
    if isinstance(text, bool):
        raise _error()
    if isinstance(text, (int, float)):
        value = _number(text)
        if math.isinf(value):
            raise _error()
        return value
    if not isinstance(text, str):
        raise _error()
    if text in _PY_INF:
        return math.inf
    match = _PY_SPLIT.match(text)
    try:
        value = float(match.group(1) if match else text)
    except (ValueError, TypeError):
        raise _error() from None
    unit = match.group(2) if match else "s"
    if unit != "s":
        # parse_fsd goes through datetime.timedelta for m/h/d/ms, which
        # rounds to whole microseconds and overflows past 999999999 days.
        from datetime import timedelta

        try:
            if unit == "m":
                delta = timedelta(minutes=value)
            elif unit == "h":
                delta = timedelta(hours=value)
            elif unit == "d":
                delta = timedelta(days=value)
            else:
                delta = timedelta(milliseconds=value)
        except (OverflowError, ValueError):
            raise _error() from None
        seconds = delta.total_seconds()
    else:
        seconds = value
    if seconds < 0 or math.isnan(seconds) or math.isinf(seconds):
        raise _error()
    return seconds + 0.0


def _strtod(text):
    """C strtod(): (value, index just past the number).

    With no conversion the value is 0.0 and the index is 0 (the start of
    the string, before any whitespace), as strtod sets endptr.
    """
    start = len(text) - len(text.lstrip(_C_SPACE))
    m = _STRTOD.match(text, start)
    if m is None:
        return 0.0, 0
    negative = m.group("sign") == "-"
    if m.group("hex") is not None:
        mant = m.group("hmant")
        exp = m.group("hexp") or "0"
        try:
            value = float.fromhex("0x" + mant + "p" + exp)
        except OverflowError:
            value = math.inf
    elif m.group("dec") is not None:
        value = float(m.group("dec"))
    elif m.group("inf") is not None:
        value = math.inf
    else:
        value = math.nan
    return (-value if negative else value), m.end()


def parse_config(text):
    """Parse ``text`` the way C ``fsd_parse_duration`` does.

    Returns seconds as a float (``math.inf`` for infinity).  An int or
    float is accepted as seconds (NaN and negatives rejected).
    """
    if isinstance(text, bool):
        raise _error()
    if isinstance(text, (int, float)):
        return _number(text)
    if not isinstance(text, str) or "\0" in text:
        raise _error()
    hit = _CONFIG_PARSED.get(text)
    if hit is not None:
        return hit
    value, end = _strtod(text)
    if math.isnan(value) or value < 0:
        raise _error()
    suffix = text[end:]
    if suffix:
        if math.isinf(value):
            raise _error()
        multiplier = _C_UNITS.get(suffix)
        if multiplier is None:
            raise _error()
        value *= multiplier
    if len(_CONFIG_PARSED) >= _CONFIG_PARSED_SIZE:
        _CONFIG_PARSED.clear()
    value = _CONFIG_PARSED[text] = value + 0.0
    return value


# parse_config's results by text: each started job's exec.test run time is
# read again (validated at submit, read at start, perhaps thousands of
# submits later), and a workload repeats a few of them (a trace replay
# has up to about ten thousand distinct run times)
_CONFIG_PARSED: dict = {}
_CONFIG_PARSED_SIZE = 16384


# --------------------------------------------------------------------------
# Formatters


def format_fsd(seconds):
    """Python ``flux.util.fsd()``: the ``!F`` conversion of ``flux jobs``.

    ``inf`` for infinity; below 1 ms (negatives included) ``0s``; below
    10 s ``%.03fs``; then ``%.4g`` with ``s``, ``m``, ``h`` or ``d``.
    """
    secs = float(seconds)
    if math.isinf(secs):
        return "inf"
    if secs < 1.0e-3:
        return "0s"
    if secs < 10.0:
        return "%.03fs" % secs
    if secs < 60.0:
        return "%.4gs" % secs
    if secs < 3600.0:
        return "%.4gm" % (secs / 60.0)
    if secs < 86400.0:
        return "%.4gh" % (secs / 3600.0)
    return "%.4gd" % (secs / 86400.0)


def format_c(seconds, precision=2):
    """C ``fsd_format_duration_ex(seconds, precision)``.

    ``infinity`` for infinity; nonzero values below 0.1 s in ``ms``;
    otherwise the largest unit of ``s``, ``m``, ``h``, ``d`` that keeps
    the value >= 1, printed with ``%.<precision>g``.  NaN and negative
    durations raise FSDError.  (flux-core's plain ``fsd_format_duration``
    uses precision 6.)
    """
    if isinstance(precision, bool) or not isinstance(precision, int):
        raise TypeError("precision must be an int")
    if precision < 0:
        precision = 6  # C printf treats a negative precision as omitted
    if isinstance(seconds, bool):
        raise _error()
    try:
        d = float(seconds)
    except (TypeError, ValueError):
        raise _error() from None
    if math.isinf(d):
        return "infinity"
    if math.isnan(d) or d < 0:
        raise _error()
    if d < 0.1 and d != 0.0:
        return "%.*gms" % (precision, d * 1000.0)
    if d < 60.0:
        return "%.*gs" % (precision, d)
    if d < 3600.0:
        return "%.*gm" % (precision, d / 60.0)
    if d < 86400.0:
        return "%.*gh" % (precision, d / 3600.0)
    return "%.*gd" % (precision, d / 86400.0)
