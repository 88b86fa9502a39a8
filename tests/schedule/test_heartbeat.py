"""Heartbeats and crons on the hub, through the scheduler, the outbox and the real store."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.app import Hub
from hub.clock import ManualClock
from hub.schedule.heartbeat import HEARTBEAT_OK, LOOKBACK_MAX, since
from hub.schedule.scheduler import Fire, JobKind
from tests.schedule.conftest import deliveries, open_life, say, web_address

HALF_HOUR = timedelta(minutes=30)
README = Path(__file__).parents[2] / "README.md"


async def beat(hub: Hub, clock: ManualClock, span: timedelta = HALF_HOUR) -> None:
    clock.advance(span)
    await hub.scheduler.run_due()


async def test_every_anima_gets_its_schedule(life: Hub) -> None:
    keys = life.scheduler.job_ids()
    for name in ("mika", "aria", "kai"):
        assert f"heartbeat:{name}" in keys
    assert not [k for k in keys if k.startswith("daily:")]  # memory is off here


async def test_a_quiet_heartbeat_says_heartbeat_ok_and_posts_nothing(
    life: Hub, clock: ManualClock
) -> None:
    outcome = await life.agenda.heartbeat_now("kai")
    assert outcome.text == HEARTBEAT_OK
    await beat(life, clock)
    assert deliveries(life, "heartbeat") == []


async def test_an_offline_heartbeat_posts_a_factual_digest_to_its_channel(
    life: Hub, clock: ManualClock
) -> None:
    await say(life, "alice", "kai, the build on main is red again")
    await say(life, "bob", "kai: I pushed a fix for the flaky test")
    await beat(life, clock)
    posts = [d for d in deliveries(life, "heartbeat") if d.anima == "kai"]
    assert len(posts) == 1
    post = posts[0]
    assert post.address == "web:local/general"
    assert "2 message(s) from Alice, Bob" in post.text
    assert "I pushed a fix for the flaky test" in post.text
    # Only the Anima that was talked to has something to say.
    assert {d.anima for d in deliveries(life, "heartbeat")} == {"kai"}
    await beat(life, clock)  # nothing new since: quiet again
    assert len(deliveries(life, "heartbeat")) == 1


async def test_a_heartbeat_never_quotes_a_direct_conversation_in_a_channel(
    life: Hub, clock: ManualClock
) -> None:
    await say(life, "alice", "kai, my salary is 91k, keep it quiet", web_address(dm_with="alice"))
    await beat(life, clock)
    (post,) = deliveries(life, "heartbeat")
    assert "salary" not in post.text and "Alice" not in post.text
    assert "1 message(s) in 1 other conversation(s), 1 of them direct" in post.text


async def test_a_paused_anima_skips_its_heartbeat(life: Hub, clock: ManualClock) -> None:
    await say(life, "alice", "kai, anything new?")
    life.anima_states.pause("kai", "web:root")
    await beat(life, clock)
    assert deliveries(life, "heartbeat") == []


async def test_active_hours_are_honoured_in_the_animas_timezone(
    home: Path, clock: ManualClock
) -> None:
    hub = await open_life(home, clock)
    try:
        kai = hub.animas.get("kai")
        assert kai is not None
        local_hour = clock.now().hour  # the demo Animas use the hub's UTC
        closed = f"{(local_hour + 2) % 24:02d}:00-{(local_hour + 3) % 24:02d}:00"
        toml = kai.path / "anima.toml"
        toml.write_text(toml.read_text().replace('active_hours = ""', f'active_hours = "{closed}"'))
        hub.animas.load()
        await say(hub, "alice", "kai, are you there?")
        await beat(hub, clock)
        assert deliveries(hub, "heartbeat") == []
    finally:
        await hub.stop()


async def test_the_same_scheduled_heartbeat_run_twice_posts_once(
    life: Hub, clock: ManualClock
) -> None:
    """A crash after posting but before the job's next time is stored repeats the run at
    the next start: the idempotency key (job + scheduled time) stops a second post."""
    await say(life, "alice", "kai, ping")
    fire = Fire("heartbeat:kai", JobKind.HEARTBEAT, "kai", clock.advance(timedelta(minutes=20)))
    await life.agenda.run(fire)
    await life.agenda.run(fire)
    assert len(deliveries(life, "heartbeat")) == 1


async def test_heartbeat_output_is_recorded_in_the_episode_log(
    home: Path, clock: ManualClock
) -> None:
    hub = await open_life(home, clock, memory={"enabled": True})
    try:
        await say(hub, "alice", "kai, the deploy finished")
        outcome = await hub.agenda.heartbeat_now("kai")
        assert outcome.posted == ("web:local/general",)
        day = clock.now().date().isoformat()
        episodes = (hub.animas.root / "kai" / "episodes" / f"{day}.md").read_text()
        assert "**kai** (heartbeat):" in episodes
    finally:
        await hub.stop()


async def test_a_model_heartbeat_posts_what_the_model_says_or_nothing_on_ok(
    home: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    for answer, expected in (
        ("HEARTBEAT_OK", 0),
        ("Alice's build is still red; I will look at it first thing.", 1),
    ):
        hub = await open_life(
            home / answer[:5], clock, llm={"model": "openai/test", "mock_response": answer}
        )
        try:
            await say(hub, "alice", "kai, the build is red")
            with caplog.at_level(logging.INFO, logger="hub.schedule.agenda"):
                await beat(hub, clock)
            posts = deliveries(hub, "heartbeat")
            assert len(posts) == expected
            # the log says the model and the tokens litellm counted for the mock call
            said = re.search(r"openai/test, ([\d,]+) tokens in, ([\d,]+) out; ", caplog.text)
            assert said is not None and int(said[1].replace(",", "")) > 0, caplog.text
            caplog.clear()
            if posts:
                assert posts[0].text == answer
        finally:
            await hub.stop()


CRONS = """# kai's schedule

## Morning digest
schedule: 0 9 * * *
type: llm
post_to: web:local/general
Summarize what happened yesterday.

## Status to ops
schedule: 0 10 * * *
type: command
post_to: web:local/ops
/anima status kai
"""


async def test_crons_run_on_schedule_and_reload_when_their_file_changes(
    life: Hub, clock: ManualClock
) -> None:
    kai = life.animas.get("kai")
    assert kai is not None
    (kai.path / "crons" / "daily.md").write_text(CRONS)
    await life.on_tick()
    assert "cron:kai:daily.md:morning-digest" in life.scheduler.job_ids()

    for _ in range(24):  # a day, hour by hour
        await beat(life, clock, timedelta(hours=1))
    reports = deliveries(life, "report")
    assert {r.address for r in reports} == {"web:local/general", "web:local/ops"}
    digest = next(r for r in reports if r.address == "web:local/general")
    assert "Summarize what happened yesterday." in digest.text
    status = next(r for r in reports if r.address == "web:local/ops")
    assert "kai" in status.text and "engineer" in status.text

    (kai.path / "crons" / "daily.md").write_text(CRONS.split("## Status")[0])
    await life.on_tick()
    assert "cron:kai:daily.md:status-to-ops" not in life.scheduler.job_ids()


async def test_a_bad_cron_section_is_logged_and_the_others_still_load(
    life: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    kai = life.animas.get("kai")
    assert kai is not None
    bad = CRONS.replace("schedule: 0 10 * * *", "schedule: every morning")
    (kai.path / "crons" / "daily.md").write_text(bad)
    with caplog.at_level(logging.ERROR):
        await life.on_tick()
    assert "daily.md:" in caplog.text and "every morning" in caplog.text
    assert "cron:kai:daily.md:morning-digest" in life.scheduler.job_ids()


def test_the_heartbeat_command_runs_one_now(home: Path) -> None:
    from hub.cli.main import app

    env = {"ANIMAHUB_HOME": str(home), "ANIMAHUB_MEMORY__ENABLED": "false"}
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--demo"], env=env).exit_code == 0
    result = runner.invoke(app, ["heartbeat", "kai"], env=env)
    assert result.exit_code == 0, result.output
    assert "kai: heartbeat: nothing to say" in result.output
    # what the README's command table promises it prints
    row = next(line for line in README.read_text().splitlines() if "`animahub heartbeat" in line)
    assert "heartbeat: nothing to say" in row, row
    # the command ran a hub in its own process; its log still says what happened, in words
    logs = runner.invoke(app, ["logs", "kai"], env=env)
    assert logs.exit_code == 0, logs.output
    assert re.search(r"asked for: heartbeat: nothing to say in [\d.]+ s \(", logs.output), (
        logs.output
    )
    missing = runner.invoke(app, ["heartbeat", "nobody"], env=env)
    assert missing.exit_code == 1
    assert "no Anima named 'nobody'" in missing.output


def test_a_first_heartbeat_that_runs_late_sees_what_it_was_told_before_its_interval() -> None:
    """Its due time fell while the hub was down, so it ran a little more than an interval
    after the message: it still looks back far enough (then back to the last heartbeat)."""
    at = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    interval = timedelta(minutes=30)
    told = at - timedelta(minutes=30, seconds=30)
    assert since(None, at, interval) < told
    assert since(None, at, interval) == at - LOOKBACK_MAX  # never further back than that
    assert since(at - timedelta(minutes=5), at, interval) == at - timedelta(minutes=5)
