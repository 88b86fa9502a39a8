"""What the test_crons_* modules share: the timezone, a minimal good cron section, and
`parse`, which reads a crons/*.md text as aria's crons/daily.md."""

from __future__ import annotations

from pathlib import Path

from hub.schedule.crons import CronJob, CronProblem, parse_cron_text

TZ = "Asia/Tokyo"

GOOD = """\
## Good
schedule: 0 9 * * *
type: llm
Say good morning.
"""


def parse(text: str, name: str = "daily.md") -> tuple[list[CronJob], list[CronProblem]]:
    return parse_cron_text("aria", Path("/data/animas/aria/crons") / name, text, TZ)
