"""The one datetime parser behind --begin-time and jobs --since."""

from datetime import datetime

import pytest

from flux_lite.errors import FluxLiteError

NOW = 1767225600.0  # 2026-01-01 00:00 UTC


def at(**kw):
    return datetime.fromtimestamp(NOW).replace(microsecond=0, **kw).timestamp()


@pytest.mark.parametrize("text, expect", [
    ("now", NOW),
    ("-90s", NOW - 90),
    ("2025-12-24T18:00", datetime(2025, 12, 24, 18, 0).timestamp()),
    ("12/24/2025", datetime(2025, 12, 24).timestamp()),
    ("2025-12-24 18:00", datetime(2025, 12, 24, 18, 0).timestamp()),
])
def test_since_and_begin_time_take_the_same_forms(text, expect):
    from flux_lite.job_list import parse_since
    from flux_lite.job_manager.dependency import parse_datetime

    assert parse_since(text, NOW) == expect
    assert parse_datetime(text, NOW) == expect


def test_since_takes_words_and_begin_time_strptime_forms():
    from flux_lite.job_list import parse_since
    from flux_lite.job_manager.dependency import parse_datetime

    midnight = at(hour=0, minute=0, second=0)
    assert parse_since("midnight", NOW) == midnight
    assert parse_since("today 12am", NOW) == midnight
    assert parse_datetime("2030-01-02T08:15:30", NOW) == datetime(2030, 1, 2, 8, 15, 30).timestamp()
    assert parse_datetime("01/02/2030 08:15", NOW) == datetime(2030, 1, 2, 8, 15).timestamp()


def test_since_falls_back_to_seconds_and_refuses_the_future():
    from flux_lite.job_list import parse_since

    assert parse_since("12", NOW) == 12.0
    with pytest.raises(FluxLiteError, match="appears to be in the future"):
        parse_since("tomorrow", NOW)
    with pytest.raises(FluxLiteError, match="could not convert string to float"):
        parse_since("2030-13-01", NOW)


@pytest.mark.parametrize("text", ["", "bad", "+1x", "+1e20s", "25:00", "2030-13-01T00:00"])
def test_one_error(text):
    from flux_lite.formats.datetimes import parse_datetime

    with pytest.raises(ValueError) as info:
        parse_datetime(text, NOW)
    assert str(info.value) == f'Invalid datetime: "{text}"'
