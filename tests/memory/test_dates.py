"""The span of time a query names (hub/memory/dates.py): explicit forms only, an absolute one
before a relative one, days of the clock's own time zone; and whether a question asks when,
and a text says when (`asks_when`, `tells_when`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from hub.memory.dates import asks_when, named_span, tells_when

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


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("When did Caroline go to the LGBTQ support group?", True),
        ("  when is the deploy", True),
        ("Since when has the build been red?", True),
        ("What year did Jon open his studio?", True),
        ("How long ago was the offsite?", True),
        ("会議はいつですか", True),
        ("何日に出発しますか", True),
        ("你什么时候去北京？", True),
        # "when" inside a question about something else, and "how long" (a duration)
        ("What did Mel do when she got back?", False),
        ("How long did the trip take?", False),
        ("何年も前の話", False),  # "for many years", not "which year"
        ("Where did we meet?", False),
    ],
)
def test_a_question_asking_when_is_told_apart(text: str, asks: bool) -> None:
    assert asks_when(text) is asks


@pytest.mark.parametrize(
    ("text", "tells"),
    [
        ("Yes, last Saturday!", True),
        ("I went to the group yesterday and it was powerful", True),
        ("We moved here 3 years ago", True),
        ("The launch is in June 2023", True),
        ("See you on 12/5", True),
        ("先週、東京に行きました", True),
        ("3月1日に決めた", True),
        ("我们明天见", True),
        # "may" and "march" alone are words; a week or a year alone is how long, not when
        ("I may go to the beach", False),
        ("We decided to march on", False),
        ("It took a week of rest", False),
        ("I love painting sunsets", False),
    ],
)
def test_a_text_saying_when_is_told_apart(text: str, tells: bool) -> None:
    assert tells_when(text) is tells
