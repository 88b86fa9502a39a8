"""What a heartbeat looks at: everything since the previous heartbeat, once, at most a day."""

from __future__ import annotations

from datetime import timedelta

from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import AddressKind, DeliveryKind
from hub.schedule.heartbeat import HEARTBEAT_OK
from tests.schedule.conftest import deliveries, say


def fail_a_delivery(hub: Hub, key: str) -> None:
    """A post that could not be addressed, dated by the hub's clock (as a cron's is)."""
    with hub.db.write() as conn:
        hub.outbox.record_failed(
            conn,
            "dm:telegram:42",
            AddressKind.DM,
            "(not written)",
            DeliveryKind.REPORT,
            "kai",
            key,
            "no direct conversation yet",
        )


async def test_a_heartbeat_right_after_another_has_nothing_new_to_say(
    life: Hub, clock: ManualClock
) -> None:
    await say(life, "alice", "kai, the build on main is red again")
    clock.advance(timedelta(minutes=5))
    first = await life.agenda.heartbeat_now("kai")
    assert "1 message(s) from Alice" in first.text
    clock.advance(timedelta(minutes=1))
    again = await life.agenda.heartbeat_now("kai")
    assert again.text == HEARTBEAT_OK and again.what == "heartbeat: nothing to say"
    assert len(deliveries(life, "heartbeat")) == 1


async def test_a_later_heartbeat_does_not_count_again_what_an_earlier_one_reported(
    life: Hub, clock: ManualClock
) -> None:
    await say(life, "alice", "kai, the build on main is red again")
    clock.advance(timedelta(minutes=5))
    await life.agenda.heartbeat_now("kai")
    await say(life, "bob", "kai: I pushed a fix")
    clock.advance(timedelta(minutes=5))
    later = await life.agenda.heartbeat_now("kai")
    assert "1 message(s) from Bob" in later.text and "Alice" not in later.text


async def test_a_heartbeat_after_a_gap_reports_all_since_the_previous_one(
    life: Hub, clock: ManualClock
) -> None:
    """Outside active hours or after downtime, what happened in the gap is still news."""
    quiet = await life.agenda.heartbeat_now("kai")
    assert quiet.text == HEARTBEAT_OK
    previous = clock.now()
    await say(life, "alice", "kai, the deploy failed overnight")
    fail_a_delivery(life, "gap")
    clock.advance(timedelta(hours=3))  # six intervals without a heartbeat
    outcome = await life.agenda.heartbeat_now("kai")
    assert "1 message(s) from Alice" in outcome.text
    assert "1 message(s) of mine that could not be delivered" in outcome.text
    assert f"Since {previous:%Y-%m-%d %H:%M} (UTC)" in outcome.text


async def test_a_heartbeat_after_weeks_looks_back_at_most_a_day(
    life: Hub, clock: ManualClock
) -> None:
    await life.agenda.heartbeat_now("kai")
    clock.advance(timedelta(minutes=1))
    fail_a_delivery(life, "weeks ago")
    clock.advance(timedelta(weeks=3))
    fail_a_delivery(life, "today")
    clock.advance(timedelta(minutes=1))
    outcome = await life.agenda.heartbeat_now("kai")
    assert "1 message(s) of mine that could not be delivered" in outcome.text, outcome.text
    assert f"Since {clock.now() - timedelta(days=1):%Y-%m-%d %H:%M}" in outcome.text


async def test_messages_still_waiting_are_reported_once(life: Hub, clock: ManualClock) -> None:
    life.anima_states.pause("kai", "web:root")
    await say(life, "alice", "kai, are you there?")  # held while kai is paused
    clock.advance(timedelta(minutes=5))
    first = await life.agenda.heartbeat_now("kai")
    assert "1 message(s) still waiting for an answer" in first.text
    clock.advance(timedelta(minutes=30))
    again = await life.agenda.heartbeat_now("kai")
    assert again.text == HEARTBEAT_OK
    assert len(deliveries(life, "heartbeat")) == 1
