"""Command crons (`type: command`): where their output goes, and what their log line says."""

from __future__ import annotations

from hub.app import Hub
from hub.clock import ManualClock
from hub.scheduler import Fire, JobKind
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
