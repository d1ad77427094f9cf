"""Points in time as Flux's ``flux.util.parse_datetime`` reads them
(``submit --begin-time``, ``jobs --since``).

``now``; ``+FSD`` / ``-FSD`` from now (Python FSD); anything else goes to the
``parsedatetime`` natural-language parser with days starting at midnight, as
Flux does (``noon``, ``tomorrow``, ``10:00``, ``3pm``, ``2025-01-01 10:00``,
``in 1 hour``, ``next monday``, ...), resolved against the instance clock
rather than the wall clock. Without parsedatetime installed a built-in reader
takes the common forms (clock times, ISO dates, today/tomorrow, noon/midnight,
``in N units``).

Errors are ValueErrors with Flux's words: ``Invalid datetime: "X"`` from the
parser, ``invalid Flux standard duration`` for a bad offset, and Python's own
message for a time no calendar can show (``+inf``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from flux_lite.formats import fsd


def parse(text: str, now: float) -> float:
    """The timestamp text stands for, relative to now (a timestamp)."""
    if text == "now":
        return now
    if text.startswith(("+", "-")):
        delta = fsd.parse(text[1:])  # FSDError (a ValueError): Flux's message
        ts = now + delta if text[0] == "+" else now - delta
        # Flux goes through a datetime: a time a calendar cannot show fails there
        try:
            return datetime.fromtimestamp(ts).astimezone().timestamp()
        except OverflowError as exc:
            raise ValueError(str(exc)) from None
        except OSError as exc:
            raise ValueError(exc.strerror or str(exc)) from None
    try:
        from parsedatetime import Calendar  # what Flux itself uses
    except ImportError:
        return _builtin(text, now)
    import warnings

    with warnings.catch_warnings():
        # parsedatetime announces its 2.0 API on every parse; Flux calls it this way
        warnings.simplefilter("ignore")
        cal = Calendar()
        cal.ptc.StartHour = 0
        source = datetime.fromtimestamp(now).timetuple()
        try:
            fields, status = cal.parse(text, sourceTime=source)
            if status == 0:
                raise ValueError(f'Invalid datetime: "{text}"')
            return datetime(*fields[:6]).astimezone().timestamp()
        except ValueError:
            raise
        except Exception as exc:  # flux submit reports whatever the parser raised, in one line
            raise ValueError(str(exc)) from None


_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([ap]\.?m\.?)?", re.I)
_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_UNITS = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400,
          "week": 604800}


def _builtin(text: str, now: float) -> float:
    """The forms of parsedatetime most used with Flux, for when it is absent."""
    bad = ValueError(f'Invalid datetime: "{text}"')
    base = datetime.fromtimestamp(int(now))
    words = text.strip().lower().split()
    if len(words) == 3 and words[0] == "in" and words[1].isdigit():
        unit = _UNITS.get(words[2].rstrip("s"))
        if unit is None:
            raise bad
        return (base + timedelta(seconds=int(words[1]) * unit)).timestamp()
    day = base.replace(hour=0, minute=0, second=0, microsecond=0)
    clock = None
    seen_date = False
    for word in words:
        m_date = _DATE.fullmatch(word)
        m_clock = _CLOCK.fullmatch(word)
        if word in ("today", "tonight") and not seen_date:
            seen_date = True
        elif word == "tomorrow" and not seen_date:
            day += timedelta(days=1)
            seen_date = True
        elif word in ("noon", "midday") and clock is None:
            clock = (12, 0, 0)
        elif word == "midnight" and clock is None:
            clock = (0, 0, 0)
        elif m_date and not seen_date:
            try:
                day = datetime(int(m_date[1]), int(m_date[2]), int(m_date[3]))
            except ValueError:
                raise bad from None
            seen_date = True
        elif m_clock and clock is None and (m_clock[2] or m_clock[4]):
            hour, minute, second = int(m_clock[1]), int(m_clock[2] or 0), int(m_clock[3] or 0)
            ampm = (m_clock[4] or "").replace(".", "")
            if ampm:
                if not 1 <= hour <= 12:
                    raise bad
                hour = hour % 12 + (12 if ampm == "pm" else 0)
            if hour > 23 or minute > 59 or second > 59:
                raise bad
            clock = (hour, minute, second)
        else:
            raise bad
    if not words:
        raise bad
    if clock is not None:
        day = day.replace(hour=clock[0], minute=clock[1], second=clock[2])
    return day.timestamp()
