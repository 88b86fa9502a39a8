"""The offline explanation is given once per person, also when their first messages arrive
at once in two conversations (which run in parallel): the second turn, started while the
first is still answering, does not explain again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from hub.api.server import create_app
from hub.app import Hub
from hub.turns.llm import TurnContext
from hub.turns.offline import OfflineResponder
from hub.turns.runtime import Responders
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers


class HeldOffline:
    """The real offline responder, its first turn held until the second one has begun."""

    def __init__(self) -> None:
        self._offline = OfflineResponder()
        self.began: list[asyncio.Event] = [asyncio.Event(), asyncio.Event()]
        self.intro: list[bool] = []

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        turn = len(self.intro)
        self.intro.append(ctx.offline_intro)
        self.began[min(turn, 1)].set()
        if turn == 0:
            await self.began[1].wait()
        async for piece in self._offline.stream(ctx):
            yield piece


async def test_two_first_messages_at_once_are_explained_once(home: Path) -> None:
    held = HeldOffline()
    settings = make_settings(home, memory={"enabled": False}, scheduler={"enabled": False})
    hub = Hub(settings, responders=Responders(held, held))
    await hub.start()
    add_demo_animas(hub)
    try:
        app = create_app(hub)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://localhost",
            headers=owner_headers(home),
        ) as client:
            first, second = await asyncio.gather(
                chat(client, "aria", message="Hello", conversation_id="s1"),
                chat(client, "kai", message="Hello too", conversation_id="s2"),
            )
    finally:
        await hub.stop()
    assert sorted(held.intro) == [False, True]
    texts = ["".join(e.get("text", "") for e in sse_events(r.text)) for r in (first, second)]
    long_form = "No language model is configured, so I'm answering in offline mode"
    assert sum(long_form in text for text in texts) == 1, texts
