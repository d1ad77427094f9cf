"""Points in time as users type them (flux-core's Python ``parse_datetime``).

One parser for every option that takes a time: ``submit --begin-time`` and
``jobs --since``. It accepts ``now``; ``+FSD`` or ``-FSD`` from now; a date
and/or time in local time, either as strptime forms (``2026-12-24 18:00``,
``2026-12-24T18:00``, ``12/24/2026``) or in words (``15:30``, ``3pm``,
``tomorrow 8am``, ``today noon``, ``midnight``).
"""

from __future__ import annotations

import re

_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([ap]\.?m\.?)?", re.I)
_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_DATETIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M",
                     "%Y-%m-%d", "%m/%d/%Y %H:%M", "%m/%d/%Y")
_TIME_FORMATS = ("%H:%M:%S", "%H:%M")


def parse_datetime(text: str, now: float) -> float:
    """The timestamp `text` names, relative times counted from `now`.

    ValueError('Invalid datetime: "TEXT"') when it names none, or a time no
    calendar can show.
    """
    try:
        return _parse(text, now)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f'Invalid datetime: "{text}"') from None


def _parse(text: str, now: float) -> float:
    from datetime import datetime

    if text == "now":
        return now
    if text[:1] in ("+", "-"):
        from flux_lite.formats.fsd import parse as parse_fsd

        delta = parse_fsd(text[1:])
        ts = now + delta if text[0] == "+" else now - delta
        datetime.fromtimestamp(ts)  # a time a calendar can show
        return ts
    for form in _DATETIME_FORMATS:
        try:
            return datetime.strptime(text, form).astimezone().timestamp()
        except ValueError:
            pass
    base = datetime.fromtimestamp(now)
    for form in _TIME_FORMATS:
        try:
            t = datetime.strptime(text, form).time()
        except ValueError:
            continue
        return datetime.combine(base.date(), t).astimezone().timestamp()
    return _parse_words(text, base)


def _parse_words(text: str, base) -> float:
    """`[today|tomorrow|YYYY-MM-DD] [HH[:MM[:SS]][am|pm]|noon|midnight]`, in any order."""
    from datetime import datetime, timedelta

    words = text.strip().lower().split()
    if not words:
        raise ValueError(text)
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
            day = datetime(int(m_date[1]), int(m_date[2]), int(m_date[3]))
            seen_date = True
        elif m_clock and clock is None and (m_clock[2] or m_clock[4]):
            hour, minute, second = int(m_clock[1]), int(m_clock[2] or 0), int(m_clock[3] or 0)
            ampm = (m_clock[4] or "").replace(".", "")
            if ampm:
                if not 1 <= hour <= 12:
                    raise ValueError(text)
                hour = hour % 12 + (12 if ampm == "pm" else 0)
            if hour > 23 or minute > 59 or second > 59:
                raise ValueError(text)
            clock = (hour, minute, second)
        else:
            raise ValueError(text)
    if clock is not None:
        day = day.replace(hour=clock[0], minute=clock[1], second=clock[2])
    return day.timestamp()
