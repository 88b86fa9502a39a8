"""Cron jobs' keys (stable across edits, following the title) and their triggers
(in the given timezone, weekdays counted as in crontab)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.unit.crons_helpers import GOOD, TZ, parse


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: str = TZ) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz))


def test_the_key_survives_edits_of_schedule_type_and_body_and_follows_the_title() -> None:
    (job,) = parse(GOOD)[0]
    assert job.key == "cron:aria:daily.md:good"
    (edited,) = parse("\n\n## Good\ntype: command\nschedule: 5 5 * * *\n/anima status aria\n")[0]
    assert edited.key == job.key
    (renamed,) = parse(GOOD.replace("## Good", "## Better"))[0]
    assert renamed.key == "cron:aria:daily.md:better"
    (moved,) = parse(GOOD, name="weekly.md")[0]
    assert moved.key == "cron:aria:weekly.md:good"
    (mixed,) = parse(GOOD.replace("## Good", "## Morning  Digest!"))[0]
    assert mixed.key == "cron:aria:daily.md:morning-digest"


def test_a_title_without_letters_still_gets_a_distinct_key() -> None:
    jobs, problems = parse(GOOD.replace("## Good", "## 🚀") + GOOD.replace("## Good", "## 🌙"))
    assert problems == []
    first, second = (j.key for j in jobs)
    assert first.startswith("cron:aria:daily.md:") and first != second
    assert len(first) > len("cron:aria:daily.md:")


def test_the_trigger_fires_in_the_given_timezone() -> None:
    (job,) = parse(GOOD)[0]  # 09:00 every day
    now = at(2026, 3, 2, 10, 0)  # Monday 10:00 in Tokyo: today's run has passed
    assert job.trigger(TZ).get_next_fire_time(None, now) == at(2026, 3, 3, 9, 0)
    utc_next = job.trigger("UTC").get_next_fire_time(None, now)
    assert utc_next == at(2026, 3, 2, 9, 0, tz="UTC")  # 10:00 Tokyo is 01:00 UTC
    assert utc_next.astimezone(ZoneInfo(TZ)) == at(2026, 3, 2, 18, 0)


@pytest.mark.parametrize(
    ("weekdays", "next_day", "weekday"),
    [
        ("1-5", (2026, 3, 2), "Mon"),  # crontab 1-5: Monday to Friday, not Tuesday to Saturday
        ("0", (2026, 3, 1), "Sun"),
        ("7", (2026, 3, 1), "Sun"),
        ("sun", (2026, 3, 1), "Sun"),
        ("fri", (2026, 3, 6), "Fri"),
        ("5-7", (2026, 3, 1), "Sun"),
        ("*/2", (2026, 3, 1), "Sun"),  # 0,2,4,6 = Sun, Tue, Thu, Sat
        ("6", (2026, 3, 7), "Sat"),
    ],
)
def test_weekdays_count_as_in_crontab(
    weekdays: str, next_day: tuple[int, int, int], weekday: str
) -> None:
    (job,) = parse(GOOD.replace("0 9 * * *", f"0 9 * * {weekdays}"))[0]
    now = at(2026, 2, 28, 10, 0)  # a Saturday, after 09:00
    fire = job.trigger(TZ).get_next_fire_time(None, now)
    assert fire == at(*next_day, 9, 0)
    assert fire.strftime("%a") == weekday
