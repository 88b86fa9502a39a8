"""Start-up never waits on catch-up: what fell due while the hub was stopped runs after it
has started, and health says `catching up` until it is done."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx

from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.turns.llm import TurnContext
from hub.turns.offline import OfflineResponder
from hub.turns.runtime import Responders
from tests.conftest import owner_headers
from tests.schedule.conftest import life_settings, open_life, say, web_address


class HeldModel:
    """A model that answers only when the test lets it."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        self.asked.set()
        await self.answer.wait()
        yield "All quiet after the pause."


async def test_missed_heartbeats_run_after_start_and_health_says_catching_up(
    home: Path, clock: ManualClock
) -> None:
    first = await open_life(home, clock)
    await say(first, "alice", "@kai the build is red", web_address())
    await first.stop()
    clock.advance(timedelta(minutes=31))  # a heartbeat fell due while the hub was down

    model = HeldModel()
    settings = life_settings(
        home, scheduler={"enabled": True}, llm={"model": "fake/held", "workers": 0}
    )
    hub = Hub(settings, responders=Responders(model, OfflineResponder()), clock=clock)
    await asyncio.wait_for(hub.start(), 30)  # returns although the heartbeat cannot finish
    try:
        await asyncio.wait_for(model.asked.wait(), 30)  # the catch-up is running
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as client:
            health = (await client.get("/api/system/health")).json()
            assert health["status"] == "catching up"
            model.answer.set()
            await asyncio.wait_for(hub.caught_up(), 60)
            health = (await client.get("/api/system/health")).json()
        assert health["status"] == "ok"
        assert "scheduler" in health["parts"]  # the tick loop runs, supervised, after it
    finally:
        model.answer.set()
        await hub.stop()
