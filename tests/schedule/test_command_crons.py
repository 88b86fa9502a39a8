"""Command crons (`type: command`): where their output goes, and what their log line says."""

from __future__ import annotations

import re
from pathlib import Path

from hub.app import Hub
from hub.clock import ManualClock
from hub.logs import anima_log_path, to_files
from hub.schedule.scheduler import Fire, JobKind
from tests.schedule.conftest import deliveries

STATUS = """## Status
schedule: 0 10 * * *
type: command
/anima status kai
"""
KEY = "cron:kai:status.md:status"


async def run_status_cron(hub: Hub, clock: ManualClock, text: str = STATUS) -> None:
    kai = hub.animas.get("kai")
    assert kai is not None
    (kai.path / "crons" / "status.md").write_text(text)
    await hub.on_tick()
    assert KEY in hub.scheduler.job_ids()
    await hub.agenda.run(Fire(KEY, JobKind.CRON, "kai", clock.now()))


async def test_a_command_cron_without_post_to_posts_to_the_heartbeat_channels(
    life: Hub, clock: ManualClock
) -> None:
    await run_status_cron(life, clock)
    (report,) = deliveries(life, "report")
    assert report.address == "web:local/general"  # kai's [heartbeat] channels
    assert "kai" in report.text and "engineer" in report.text


def cron_lines(home: Path) -> list[str]:
    """The cron's event in kai's log (what `animahub logs kai` shows): its line and the lines
    after it up to the next event's timestamp."""
    lines = anima_log_path(home, "kai").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "cron 'Status'" in line)
    event = [lines[start]]
    for line in lines[start + 1 :]:
        if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line):
            break
        event.append(line)
    return event


async def test_a_posted_command_crons_output_is_one_log_line(
    home: Path, life: Hub, clock: ManualClock
) -> None:
    with to_files(home):
        await run_status_cron(life, clock)
    (line,) = cron_lines(home)  # one event, one line
    assert "cron 'Status' said “kai (engineer: Engineer): running” (+" in line, line
    assert "lines), posted to web:local/general in " in line, line
    (report,) = deliveries(life, "report")
    assert "\nmodel: " in report.text  # the post keeps the whole output


async def test_an_unposted_command_crons_output_is_kept_whole_in_one_log_line(
    home: Path, life: Hub, clock: ManualClock
) -> None:
    kai = life.animas.get("kai")
    assert kai is not None
    toml = kai.path / "anima.toml"
    toml.write_text(toml.read_text().replace('channels = ["web:local/general"]', "channels = []"))
    life.animas.load()
    with to_files(home):
        await run_status_cron(life, clock)
    (line,) = cron_lines(home)
    assert "cron 'Status' said “kai (engineer: Engineer): running\\nmodel: " in line, line
    assert "\\nheartbeat: every 30 min" in line and line.endswith(")"), line
    assert "not posted in " in line
    assert deliveries(life, "report") == []
