"""The event bus replays what a late subscriber missed and forgets finished turns."""

from __future__ import annotations

import asyncio

from hub.adapter import TurnEvent
from hub.turns.events import EventBus


async def collect(bus: EventBus, turn: str) -> list[TurnEvent]:
    return [event async for event in bus.subscribe(turn)]


async def test_late_and_early_subscribers_see_every_event() -> None:
    bus = EventBus()
    bus.open("t1")
    bus.publish("t1", TurnEvent("text", "Hel"))
    early = asyncio.create_task(collect(bus, "t1"))
    await asyncio.sleep(0)
    bus.publish("t1", TurnEvent("text", "lo"))
    bus.publish("t1", TurnEvent("done"))
    late = await collect(bus, "t1")
    assert [e.text for e in await early] == ["Hel", "lo", ""]
    assert late == await early
    bus.publish("t1", TurnEvent("text", "ignored after done"))
    assert await collect(bus, "t1") == late


async def test_unknown_turn_yields_nothing_and_retry_starts_fresh() -> None:
    bus = EventBus()
    assert await collect(bus, "nope") == []
    bus.open("t")
    bus.publish("t", TurnEvent("error", "model down"))
    bus.open("t")  # the retry of the same turn
    bus.publish("t", TurnEvent("text", "answer"))
    bus.publish("t", TurnEvent("done"))
    assert [e.type for e in await collect(bus, "t")] == ["text", "done"]


def test_finished_turns_are_forgotten_after_a_while() -> None:
    bus = EventBus()
    for i in range(300):
        bus.open(f"t{i}")
        bus.publish(f"t{i}", TurnEvent("done"))
    assert not bus.knows("t0")
    assert bus.knows("t299")
