"""A turn no one asked for (a heartbeat, a cron, a task) is thought in the context a person's
turn is (hub/turns/context.py): the same Anima, role and all, and the same rule when memory
fails, that a failing index costs the turn its recall, not its answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hub.app import Hub
from hub.clock import ManualClock
from hub.turns.llm import TurnContext
from hub.turns.offline import OfflineResponder
from hub.turns.runtime import Responders
from tests.conftest import add_demo_animas
from tests.schedule.conftest import deliveries, life_settings, say

ANSWER = "The build on main is red; I am on it."


class Recorder:
    """A model that answers every turn the same and keeps the context it was given."""

    def __init__(self) -> None:
        self.seen: list[TurnContext] = []

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        self.seen.append(ctx)
        yield ANSWER


async def open_hub(home: Path, clock: ManualClock, model: Recorder, **sections: Any) -> Hub:
    settings = life_settings(home, llm={"model": "fake/recorder", "workers": 0}, **sections)
    hub = Hub(settings, responders=Responders(model, OfflineResponder()), clock=clock)
    await hub.start()
    add_demo_animas(hub)
    return hub


async def test_a_heartbeat_is_thought_as_the_anima_its_role_says(
    home: Path, clock: ManualClock
) -> None:
    model = Recorder()
    hub = await open_hub(home, clock, model)
    try:
        await say(hub, "alice", "kai, the build is red")
        await hub.agenda.heartbeat_now("kai")
    finally:
        await hub.stop()
    turn, beat = model.seen
    role = hub.animas.roles["engineer"]
    assert (beat.anima, beat.anima_title, beat.anima_summary) == ("kai", role.title, role.summary)
    assert (turn.anima_title, turn.anima_summary) == (beat.anima_title, beat.anima_summary)
    assert beat.identity == turn.identity and beat.model == turn.model


# The index on qdrant-client's local mode (":memory:"), which has no payload indexes to make.
@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
async def test_a_failing_index_costs_a_heartbeat_its_recall_not_its_answer(
    home: Path, clock: ManualClock
) -> None:
    model = Recorder()
    hub = await open_hub(home, clock, model, memory={"enabled": True, "qdrant_url": ":memory:"})
    try:
        await say(hub, "alice", "kai, the build is red")
        assert hub.memory is not None
        # The Qdrant the index was on is gone: every search now raises (RuntimeError).
        hub.memory.index.close()
        await say(hub, "bob", "kai, is it still red?")  # a person's turn answers regardless
        outcome = await hub.agenda.heartbeat_now("kai")
        assert outcome.posted == ("web:local/general",)
        assert [d.text for d in deliveries(hub, "heartbeat")] == [ANSWER]
        assert model.seen[-1].recalled == ""
    finally:
        await hub.stop()
