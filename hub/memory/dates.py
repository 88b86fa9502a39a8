"""The span of time a query names, if it names one: "on 1 February, 2023", "in June 2023",
"last Saturday", "2023年2月1日". Recall lifts what was said within it (`lift_within`).

Strict on purpose: only explicit forms count, and a form that is also a word ("may", "march")
counts only with a day or a year beside it, or after "in". dateparser's `search_dates` was
tried and read "What may Caroline do next?" as May and "we" as a date, and "before April
10, 2023" as three dates (April, the 10th, 2023), none of them that day; a wrong span lifts
the wrong memories, so no span is better than a guessed one.

Days are those of `now`'s time zone (the hub's clock). An absolute form wins over a relative
one ("last weekend before April 10, 2023" is about April 2023, not about this week).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta, tzinfo
from functools import lru_cache

Span = tuple[datetime, datetime]  # [start, end)

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAYS = {name.lower(): n for n, name in enumerate(calendar.day_name)}
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"

# Each pattern's groups say what it names: a day (day, month, year), a month, or a year.
_ABSOLUTE = [
    re.compile(rf"\b{_YEAR}-(?P<mnum>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}(?: of)? {_MONTH},? {_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH} {_DAY},? {_YEAR}\b", re.IGNORECASE),
    re.compile(rf"{_YEAR}\s*年\s*(?P<mnum>1[0-2]|0?[1-9])\s*月\s*(?P<day>[0-3]?\d)\s*日"),
    re.compile(rf"{_YEAR}\s*年\s*(?P<mnum>1[0-2]|0?[1-9])\s*月"),
    re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b(?:in|of|during|since) {_YEAR}\b", re.IGNORECASE),
]
# Without a year: the last such day or month up to now.
_YEARLESS = [
    re.compile(rf"\b(?:on|since) {_DAY}(?: of)? {_MONTH}\b", re.IGNORECASE),
    re.compile(rf"\b(?:on|since) {_MONTH} {_DAY}\b(?!,? \d)", re.IGNORECASE),
    re.compile(r"(?<!年)(?P<mnum>1[0-2]|0?[1-9])\s*月\s*(?P<day>[0-3]?\d)\s*日"),
    re.compile(rf"\b(?:in|during) {_MONTH}\b(?!,? \d)", re.IGNORECASE),
]
_CJK_WORDS = {
    "昨日": "yesterday", "昨天": "yesterday", "今日": "today", "今天": "today",
    "先週": "last week", "上周": "last week", "上週": "last week", "今週": "this week",
    "本周": "this week", "先月": "last month", "上个月": "last month", "上個月": "last month",
    "今月": "this month", "本月": "this month", "去年": "last year", "今年": "this year",
}  # fmt: skip
_RELATIVE = re.compile(
    r"\b(?P<word>yesterday|today|tonight|this morning|this week|last week|last weekend|"
    r"last month|this month|last year|this year|last (?P<weekday>"
    + "|".join(_WEEKDAYS)
    + r"))\b|(?P<cjk>"
    + "|".join(_CJK_WORDS)
    + ")",
    re.IGNORECASE,
)


def named_span(text: str, now: datetime) -> Span | None:
    """The span of time `text` names, if any (see the module docstring)."""
    tz = now.tzinfo
    for pattern in _ABSOLUTE:
        if (found := pattern.search(text)) is not None and (span := _absolute(found, tz)):
            return span
    for pattern in _YEARLESS:
        if (found := pattern.search(text)) is not None and (span := _yearless(found, now)):
            return span
    if (found := _RELATIVE.search(text)) is not None:
        return _relative(found, now)
    return None


def _month_of(found: re.Match[str]) -> int | None:
    groups = found.groupdict()
    if groups.get("mnum"):
        return int(groups["mnum"])
    name = groups.get("month")
    return _MONTHS.get(name.lower().rstrip(".")) if name else None


def _absolute(found: re.Match[str], tz: tzinfo | None) -> Span | None:
    year = int(found["year"])
    month = _month_of(found)
    if month is None:
        return _days(date(year, 1, 1), date(year + 1, 1, 1), tz)
    if found.groupdict().get("day") is None:
        return _month_span(year, month, tz)
    return _day_span(year, month, int(found["day"]), tz)


def _yearless(found: re.Match[str], now: datetime) -> Span | None:
    month = _month_of(found)
    if month is None:
        return None
    today = now.date()
    year = today.year if month <= today.month else today.year - 1
    if found.groupdict().get("day") is None:
        return _month_span(year, month, now.tzinfo)
    day = int(found["day"])
    if (month, day) > (today.month, today.day) and month == today.month:
        year -= 1  # later this month has not happened yet
    return _day_span(year, month, day, now.tzinfo)


def _relative(found: re.Match[str], now: datetime) -> Span:
    word = (found["word"] or _CJK_WORDS[found["cjk"]]).lower()
    today, tz = now.date(), now.tzinfo
    monday = today - timedelta(days=today.weekday())
    if found["weekday"]:
        back = (today.weekday() - _WEEKDAYS[found["weekday"].lower()]) % 7 or 7
        return _days(today - timedelta(days=back), today - timedelta(days=back - 1), tz)
    first = today.replace(day=1)
    previous_first = (first - timedelta(days=1)).replace(day=1)
    spans = {
        "yesterday": (today - timedelta(days=1), today),
        "today": (today, today + timedelta(days=1)),
        "tonight": (today, today + timedelta(days=1)),
        "this morning": (today, today + timedelta(days=1)),
        "this week": (monday, today + timedelta(days=1)),
        "last week": (monday - timedelta(days=7), monday),
        "last weekend": (monday - timedelta(days=2), monday),
        "this month": (first, today + timedelta(days=1)),
        "last month": (previous_first, first),
        "this year": (date(today.year, 1, 1), today + timedelta(days=1)),
        "last year": (date(today.year - 1, 1, 1), date(today.year, 1, 1)),
    }
    return _days(*spans[word], tz)


def _day_span(year: int, month: int, day: int, tz: tzinfo | None) -> Span | None:
    try:
        start = date(year, month, day)
    except ValueError:  # "31 February": no day at all
        return None
    return _days(start, start + timedelta(days=1), tz)


def _month_span(year: int, month: int, tz: tzinfo | None) -> Span:
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return _days(date(year, month, 1), end, tz)


def _days(first: date, end: date, tz: tzinfo | None) -> Span:
    return datetime.combine(first, time(), tz), datetime.combine(end, time(), tz)


# A question asking when: recall lifts what says when (`lift_when`). Anchored at the start,
# as "What did Mel do when she got back?" asks what, not when.
_ASKS_WHEN = re.compile(
    r"^\W*(?:(?:since|until|till) )?when\b|^\W*what (?:year|month|day|date|time)\b|"
    r"^\W*how long ago\b|いつ|(?:何時|何日|何曜日|何年|何月)(?!も)|"
    r"什么时候|甚麼時候|什麼時候|何时|哪天|哪一天|几号|幾號|哪年",
    re.IGNORECASE,
)
# Month names and abbreviations that are also words or names ("I may", "to mar", Jan, Jun),
# so alone they do not say when.
_MONTHS_ALSO_WORDS = frozenset({"may", "mar", "march", "jun", "jan", "sep"})
# Words and forms that say when something happened. Not a month that is also a word, nor
# "week" or "year" without "last" or "next", which say how long, not when.
_TELLS_WHEN = re.compile(
    r"\b(?:yesterday|today|tomorrow|tonight|ago|last|next|weekend|"
    + "|".join(_WEEKDAYS)
    + "|"
    + "|".join(m for m in _MONTHS if m not in _MONTHS_ALSO_WORDS)
    + r"|(?:19|20)\d\d|\d{1,2}/\d{1,2})\b|\d\s*[日月]|"
    + "|".join(_CJK_WORDS)
    + r"|明日|明天|来週|下周|下週|来月|下个月|下個月|来年|明年|週末|周末|前に|以前|之前"
)


def asks_when(text: str) -> bool:
    """Whether `text` is a question about when something happened or will."""
    return _ASKS_WHEN.search(text) is not None


@lru_cache(maxsize=4096)  # recall asks it of the same stored sections, search after search
def tells_when(text: str) -> bool:
    """Whether `text` says when something happened or will ("last Saturday", "in June
    2023", "3 days ago", "先週")."""
    # Lowered here rather than matched with IGNORECASE, which made the search 2-4 times
    # slower; recall asks this of every candidate when the query asks when.
    return _TELLS_WHEN.search(text.lower()) is not None
