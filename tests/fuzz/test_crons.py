"""The cron parser (hub/schedule/crons.py) over any crons/*.md text and any schedule: jobs and
problems, never an exception; a schedule is a trigger or a ScheduleError, and a trigger
fires on the weekdays crontab would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hub.schedule.crons import KINDS, ScheduleError, cron_trigger, parse_cron_text
from hub.settings import check_timezone
from tests.fuzz.strategies import examples, nasty_text

_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_day = st.one_of(st.integers(0, 9).map(str), st.sampled_from([*_DAYS, "Mon", "FRI", "sun7", ""]))
_dow_item = st.one_of(
    _day,
    st.tuples(_day, _day).map("-".join),
    st.tuples(
        st.sampled_from(["*", "1-5", "0-7", "mon-fri", "fri-sun", "5-0", "3"]), st.integers(0, 9)
    ).map(lambda t: f"{t[0]}/{t[1]}"),
    st.just("*"),
)
dow_field = st.lists(_dow_item, min_size=1, max_size=4).map(",".join)
_field = st.one_of(
    st.sampled_from(["*", "0", "59", "60", "*/15", "1-5", "9-17/2", "L", "?", "last", "1,2", "-1"]),
    nasty_text(6).filter(lambda s: s.strip() and not any(c.isspace() for c in s)),
)
schedule = st.one_of(
    st.tuples(_field, _field, _field, _field, st.one_of(_field, dow_field)).map(" ".join),
    st.lists(_field, max_size=7).map(" ".join),
    nasty_text(40),
)
timezone = st.one_of(
    st.sampled_from(["UTC", "Asia/Tokyo", "America/New_York", "Europe/London"]),
    st.sampled_from(["Mars/Olympus", "", "../../etc/passwd", "/etc/localtime", "UTC\x00"]),
    nasty_text(20),
    st.text("abc/", min_size=250, max_size=300),
)


def _crontab_weekdays(field: str) -> set[int] | None:
    """Weekdays (0 = Sunday) a crontab day-of-week field names, as docs/crons.md reads it:
    0-7 or sun-sat, ranges, lists, steps after `*` or a range, `x-sun` ending the week;
    None if crontab refuses it."""

    def day(text: str) -> int | None:
        if text.lower() in _DAYS:
            return _DAYS.index(text.lower())
        return int(text) if text.isdigit() and int(text) <= 7 else None

    days: set[int] = set()
    for item in field.split(","):
        part, slash, step_text = item.partition("/")
        if slash and not (step_text.isdigit() and int(step_text) >= 1):
            return None
        step = int(step_text) if slash else 1
        if part == "*":
            first, last = 0, 7
        elif "-" in part:
            low, _, high = part.partition("-")
            low_day, high_day = day(low), day(high)
            if low_day is None or high_day is None:
                return None
            first, last = low_day, 7 if high_day == 0 and low_day > 0 else high_day
            if last < first:
                return None
        elif slash:
            return None
        else:
            single = day(part)
            if single is None:
                return None
            first = last = single
        days.update(d % 7 for d in range(first, last + 1, step))
    return days


@examples(ci=100, full=10_000)
@given(expression=schedule, zone=st.sampled_from(["UTC", "Asia/Tokyo"]))
@example(expression="0 0 * * 7", zone="UTC")
def test_a_schedule_is_a_trigger_or_a_schedule_error(expression: str, zone: str) -> None:
    try:
        trigger = cron_trigger(expression, zone)
    except ScheduleError as exc:
        assert repr(expression) in str(exc)  # the message quotes what was written
        return
    now = datetime(2025, 1, 1, tzinfo=UTC)
    trigger.get_next_fire_time(None, now)


@examples(ci=100, full=10_000)
@given(field=dow_field)
def test_weekdays_are_the_ones_crontab_names(field: str) -> None:
    expected = _crontab_weekdays(field)
    try:
        trigger = cron_trigger(f"0 12 * * {field}", "UTC")
    except ScheduleError:
        assert expected is None, f"{field!r} is crontab for {sorted(expected)}, but refused"
        return
    assert expected is not None, f"{field!r} is not crontab, but was accepted"
    fired: set[int] = set()
    moment = datetime(2025, 1, 5, tzinfo=UTC)  # a Sunday
    end = moment + timedelta(days=7)
    while (moment := trigger.get_next_fire_time(None, moment)) is not None and moment < end:
        fired.add((moment.weekday() + 1) % 7)  # Python's Monday = 0 as crontab's 1
        moment += timedelta(minutes=1)
    assert fired == expected


@examples(ci=60, full=5_000)
@given(zone=timezone)
def test_a_timezone_is_known_or_a_value_error(zone: str) -> None:
    try:
        assert check_timezone(zone) == zone
    except ValueError as exc:
        assert "unknown timezone" in str(exc)


_LINE = st.one_of(
    nasty_text(30),
    st.sampled_from(
        [
            "## Digest",
            "## Digest",
            "##",
            "## ",
            "  ## Two  ##",
            "# title",
            "```",
            "~~~",
            "````",
            "type: llm",
            "type: command",
            "type: LLM",
            "type: shell",
            "post_to: web:local/general, slack:T1/C2",
            "post_to: dm:telegram:123",
            "post_to: ,",
            "post_to: nowhere",
            "shedule: 0 9 * * *",
            "Type: llm",
            "/anima status aria",
            "/anima 'unclosed",
            "/",
            "/ x",
            "",
            "\ufeff## BOM",
            "schedule: 0 9 1 * 1",
        ]
    ),
    schedule.map("schedule: {}".format),
)
cron_file = st.lists(_LINE, max_size=30).map("\n".join)


@examples(ci=80, full=10_000)
@given(text=cron_file)
@example(text="## A\nschedule: 0 9 * * *\ntype: command\n/anima 'x")
def test_any_cron_file_gives_jobs_and_problems(text: str) -> None:
    path = Path("/data/animas/aria/crons/daily.md")
    jobs, problems = parse_cron_text("aria", path, text, "Asia/Tokyo")
    lines = len(text.splitlines())
    for problem in problems:
        assert 0 <= problem.line <= lines and problem.reason and "\n" not in str(problem)
    keys = [job.key for job in jobs]
    assert len(keys) == len(set(keys)), "two jobs with one key"
    for job in jobs:
        assert job.kind in KINDS and job.schedule and 1 <= job.line <= lines
        assert job.kind != "command" or (job.command is not None and job.body.startswith("/"))
        job.trigger("Asia/Tokyo")


def test_an_unknown_timezone_for_a_file_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown timezone"):
        parse_cron_text("aria", Path("/x/crons/a.md"), "## A\n", "Mars/Olympus")
