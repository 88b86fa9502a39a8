"""The contract harness for Minichat: a real hub with the Minichat adapter against the fake
(fake_minichat.py), the hub's app served over real HTTP for the fake's webhooks.

It implements the kit's `Harness` protocol (animahub_kit/contract/harness.py) for the
features Minichat has, none of the optional ones: no threads, edits, files or streaming, so
`edit`, `attach` and `stale` are never called (their cases are not generated for it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from animahub_kit.contract.harness import (
    ContractPlatform,
    Posted,
    ScriptedResponder,
    Sent,
    free_port,
    harness_settings,
    start_hub,
)
from animahub_kit.contract.server import HubServer
from animahub_kit.example.fake_minichat import FakeMinichat
from animahub_kit.example.minichat import WEBHOOK_PATH, MinichatAdapter, MinichatSettings
from animahub_kit.fakes.faults import FaultPolicy
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import Address, AddressKind

TOKEN = "minichat-bot-token"
SIGNING_SECRET = "minichat-signing-secret"
BOT_ID = "B0BOT"
CHANNELS = {"general": "C0GENERAL", "random": "C0RANDOM"}
WRONG_CREDENTIALS: dict[str, Any] = {"token": "not-the-token"}


def user_id(user: str) -> str:
    return f"U0{user.upper()}"


def dm_channel(user: str) -> str:
    return f"D0{user.upper()}"


class MinichatHarness:
    platform = "minichat"
    max_text = 2000
    replies_by_reference = False

    def __init__(self, fake: FakeMinichat, hub: Hub, responder: ScriptedResponder) -> None:
        self.fake = fake
        self.hub = hub
        self.responder = responder

    def reply_thread(self, sent: Sent) -> str | None:
        return None  # Minichat has no threads: a reply goes to the channel

    def user_key(self, user: str) -> str:
        return f"minichat:{user_id(user)}"

    async def dm(self, user: str, text: str) -> Sent:
        event = self.fake.message_event(user_id(user), dm_channel(user), text, dm=True)
        return await self._speak(event)

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        mention: bool = False,
        thread: str | None = None,
    ) -> Sent:
        assert thread is None, "Minichat has no threads"
        event = self.fake.message_event(user_id(user), CHANNELS[channel], text, mention=mention)
        return await self._speak(event)

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        raise NotImplementedError("Minichat delivers no edits")

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        raise NotImplementedError("Minichat carries no files")

    async def redeliver(self, sent: Sent) -> None:
        assert await self.fake.redeliver(sent.event_id) == 200

    async def forged(self) -> int:
        return await self.fake.forged(self.fake.message_event("U0MALLORY", "C0GENERAL", "forged"))

    async def stale(self) -> int:
        raise NotImplementedError("Minichat's signature carries no timestamp")

    def posted(self) -> list[Posted]:
        return [Posted(m.id, m.channel, m.text, None, None, 0) for m in self.fake.messages]

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        self.fake.rate_limit(times, retry_after)

    def post_requests(self) -> int:
        return self.fake.calls.count("POST /messages")

    def set_faults(self, policy: FaultPolicy | None) -> None:
        raise NotImplementedError("the Minichat fake has rate_limit only")

    def drop_next_send_response(self) -> None:
        self.fake.drop_next_send_response()

    def auth_attempts(self) -> int:
        return self.fake.calls.count("GET /me")

    async def platform_up(self) -> None:
        if not self.fake.running:
            await self.fake.start()

    def address(self, channel: str) -> Address:
        return Address("minichat", BOT_ID, CHANNELS[channel], None, AddressKind.CHANNEL)

    def attachment_url(self, url: str) -> str:
        return url

    async def _speak(self, event: dict[str, Any]) -> Sent:
        assert await self.fake.deliver(event) == 200
        channel = event["channel"]["id"]
        return Sent(event["id"], event["message"]["id"], channel, None)


@contextlib.asynccontextmanager
async def open_harness(
    tmp_path: Path, *, platform_down: bool = False, token: str = TOKEN
) -> AsyncIterator[MinichatHarness]:
    """`platform_down`: the fake is not running when the hub starts; `token`: what the hub
    is configured with (one the fake refuses: unauthorized)."""
    fake = FakeMinichat(token=TOKEN, signing_secret=SIGNING_SECRET, bot_id=BOT_ID, port=free_port())
    if not platform_down:
        await fake.start()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    section = {
        "enabled": True,
        "token": token,
        "signing_secret": SIGNING_SECRET,
        "api_url": fake.url,
    }
    # The adapter is not installed as an entry point: its settings model is named here.
    settings = harness_settings(home, models={"minichat": MinichatSettings}, minichat=section)
    responder = ScriptedResponder()
    hub: Hub | None = None
    server: HubServer | None = None
    try:
        hub = await start_hub(settings, "minichat", MinichatAdapter, responder)
        server = HubServer(create_app(hub))
        await server.start()
        fake.events_url = f"{server.url}{WEBHOOK_PATH}"
        yield MinichatHarness(fake, hub, responder)
    finally:
        if server is not None:
            await server.stop()
        if hub is not None:
            await hub.stop()
        await fake.stop()


# What the contract runs on Minichat with: none of the optional features.
PLATFORM = ContractPlatform(open_harness, frozenset(), WRONG_CREDENTIALS)
