"""The span of time a query names (hub/memory/dates.py): explicit forms only, an absolute one
before a relative one, days of the clock's own time zone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from hub.memory.dates import named_span

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)  # a Thursday


def days(text: str, now: datetime = NOW) -> tuple[date, date] | None:
    span = named_span(text, now)
    return None if span is None else (span[0].date(), span[1].date())


@pytest.mark.parametrize(
    ("text", "first", "end"),
    [
        ("What did Gina find for her store on 1 February, 2023?", "2023-02-01", "2023-02-02"),
        ("Who came to dinner on May 3, 2023?", "2023-05-03", "2023-05-04"),
        ("What did she do on the 5th of March, 2023?", "2023-03-05", "2023-03-06"),
        ("What did we ship on 2026-11-30?", "2026-11-30", "2026-12-01"),
        ("What was Jolene doing in June 2023?", "2023-06-01", "2023-07-01"),
        ("The Dec. 2025 review", "2025-12-01", "2026-01-01"),
        ("How often did she go to the beach in 2023?", "2023-01-01", "2024-01-01"),
        ("2023年2月1日に何を買った？", "2023-02-01", "2023-02-02"),
        ("2024年7月の出張", "2024-07-01", "2024-08-01"),
        # an absolute day wins over a relative phrase beside it
        ("What did Maria do last weekend before April 10, 2023?", "2023-04-10", "2023-04-11"),
        # without a year: the last such day or month up to now
        ("What happened in May?", "2026-05-01", "2026-06-01"),
        ("the call on 1 December", "2026-12-01", "2026-12-02"),
        ("the party on 24 December", "2025-12-24", "2025-12-25"),
        ("3月1日の打ち合わせ", "2026-03-01", "2026-03-02"),
        # relative to now
        ("What did we decide yesterday?", "2026-12-02", "2026-12-03"),
        ("What did we decide last Saturday?", "2026-11-28", "2026-11-29"),
        ("Anything from last Thursday?", "2026-11-26", "2026-11-27"),  # not today
        ("what we said last week", "2026-11-23", "2026-11-30"),
        ("over last weekend", "2026-11-28", "2026-11-30"),
        ("the plan from last month", "2026-11-01", "2026-12-01"),
        ("先週の会議", "2026-11-23", "2026-11-30"),
        ("昨天的决定", "2026-12-02", "2026-12-03"),
    ],
)
def test_a_query_naming_a_time_names_its_span(text: str, first: str, end: str) -> None:
    assert days(text) == (date.fromisoformat(first), date.fromisoformat(end))


@pytest.mark.parametrize(
    "text",
    [
        "What may Caroline do next?",  # "may" alone is a word
        "We decided to march on",
        "What did John's team win at the end of the season?",
        "Room 2023 is booked",  # a number that could be a year, with nothing saying so
        "We met 31 February",  # no such day, and no year to fall back to
    ],
)
def test_a_query_naming_no_time_names_no_span(text: str) -> None:
    assert named_span(text, NOW) is None


def test_days_are_those_of_the_clocks_time_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    span = named_span("on 1 February, 2023", NOW.astimezone(tokyo))
    assert span is not None
    assert span[0] == datetime(2023, 2, 1, tzinfo=tokyo)
    assert span[1] - span[0] == timedelta(days=1)
