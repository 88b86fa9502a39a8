"""The contract harness for LINE: a real hub with the LINE adapter, its real line-bot-sdk
talking to animahub_kit/fakes/line_server.py.

The hub's FastAPI app is served over real HTTP by uvicorn in the test's loop, and the fake
POSTs signed webhooks to its `/webhooks/line`, as LINE does. People are LINE users; the
contract's channels are LINE groups. What the bot sent is read from the fake's record of
reply and push requests (one `Posted` per message object). LINE has no threads, edits,
message references or signed timestamps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from adapters.line import LineAdapter
from animahub_kit.contract.harness import (
    ContractPlatform,
    Posted,
    ScriptedResponder,
    Sent,
    eventually,
    free_port,
    harness_settings,
    start_hub,
)
from animahub_kit.contract.server import HubServer
from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.line_server import JSON, FakeLine
from hub.adapter import AdapterFactory
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import Address, AddressKind

CHANNEL_SECRET = "contract-channel-secret"
ACCESS_TOKEN = "contract-channel-access-token"
BOT_USER = "U" + "b07" * 10 + "bb"
PEOPLE = {"alice": "Alice Liddell", "bob": "Bob Builder", "carol": "Carol Danvers"}
CHANNELS = {"general": "C" + "9e" * 16, "random": "C" + "7a" * 16}
WRONG_CREDENTIALS: dict[str, Any] = {"access_token": "not-the-token"}


def user_id(user: str) -> str:
    return "U" + user.encode().hex().ljust(32, "0")[:32]


class LineHarness:
    platform = "line"
    max_text = 5000
    replies_by_reference = False

    def __init__(self, fake: FakeLine, hub: Hub, responder: ScriptedResponder, url: str) -> None:
        self.fake = fake
        self.hub = hub
        self.responder = responder
        self.hub_url = url
        self._events: dict[str, JSON] = {}  # webhookEventId -> event

    @property
    def adapter(self) -> LineAdapter:
        adapter = self.hub.adapters["line"]
        assert isinstance(adapter, LineAdapter)
        return adapter

    async def platform_up(self) -> None:
        """Start the fake LINE on the port the hub was configured with."""
        if not self.fake.running:
            await self.fake.start()

    # Harness protocol -------------------------------------------------------------------

    def reply_thread(self, sent: Sent) -> str | None:
        return None

    def user_key(self, user: str) -> str:
        return f"line:{user_id(user)}"

    async def dm(self, user: str, text: str) -> Sent:
        return await self._speak(self.fake.text_event(user_id(user), text))

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        mention: bool = False,
        thread: str | None = None,
    ) -> Sent:
        assert thread is None, "LINE has no threads"
        event = self.fake.text_event(
            user_id(user), text, chat=CHANNELS[channel], mention_bot=mention
        )
        return await self._speak(event)

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        raise AssertionError("LINE delivers no edits of a person's message")

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        raise AssertionError("a LINE message is text or a file, never both")

    async def redeliver(self, sent: Sent) -> None:
        delivery = await self.fake.redeliver(sent.event_id)
        assert delivery.status == 200, delivery

    async def forged(self) -> int:
        event = self.fake.text_event(user_id("mallory"), "forged", chat=CHANNELS["general"])
        return (await self.fake.forged(event)).status

    async def stale(self) -> int:
        raise AssertionError("LINE's signature carries no timestamp to be stale")

    def posted(self) -> list[Posted]:
        return [Posted(m.id, m.to, m.text, None, None, 0) for m in self.fake.messages]

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        self.fake.rate_limit(times, retry_after)

    def post_requests(self) -> int:
        return len(self.fake.calls_to("reply")) + len(self.fake.calls_to("push"))

    def set_faults(self, policy: FaultPolicy | None) -> None:
        self.fake.faults = policy

    def drop_next_send_response(self) -> None:
        self.fake.drop_next_send_response()

    def auth_attempts(self) -> int:
        return len(self.fake.calls_to("info"))

    def address(self, channel: str) -> Address:
        return Address("line", BOT_USER, CHANNELS[channel], None, AddressKind.GROUP)

    def attachment_url(self, url: str) -> str:
        return url  # never asked: a LINE message carries no caption (no "captions" feature)

    # helpers ----------------------------------------------------------------------------

    async def _speak(self, event: JSON) -> Sent:
        delivery = await self.fake.deliver(event)
        assert delivery.status == 200, delivery
        source = event["source"]
        chat = source.get("groupId") or source.get("roomId") or source["userId"]
        self._events[event["webhookEventId"]] = event
        return Sent(event["webhookEventId"], event["message"]["id"], chat, None)


def populate(fake: FakeLine) -> None:
    for user, name in PEOPLE.items():
        fake.add_user(user_id(user), name)
    fake.add_user(user_id("mallory"), "Mallory")
    members = [user_id(user) for user in (*PEOPLE, "mallory")]
    for group in CHANNELS.values():
        fake.add_group(group, members)


@contextlib.asynccontextmanager
async def open_harness(
    tmp_path: Path,
    *,
    platform_down: bool = False,
    access_token: str = ACCESS_TOKEN,
    reply_token_ttl_s: float = 60.0,
    responder: ScriptedResponder | None = None,
    factory: AdapterFactory = LineAdapter,
) -> AsyncIterator[LineHarness]:
    """`platform_down`: the fake is not running when the hub starts (`platform_up` later);
    `access_token`: what the hub is configured with (a wrong one gets 401); `factory`
    builds the adapter (with other reply-token or profile lifetimes, a test clock)."""
    fake = FakeLine(
        channel_secret=CHANNEL_SECRET,
        access_token=ACCESS_TOKEN,
        bot_user_id=BOT_USER,
        port=free_port(),
        reply_token_ttl_s=reply_token_ttl_s,
    )
    populate(fake)
    if not platform_down:
        await fake.start()
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    section: dict[str, Any] = {
        "enabled": True,
        "channel_secret": CHANNEL_SECRET,
        "channel_access_token": access_token,
        "api_url": fake.url,
        "data_api_url": fake.url,
    }
    responder = responder or ScriptedResponder()
    hub: Hub | None = None
    server: HubServer | None = None
    try:
        hub = await start_hub(harness_settings(home, line=section), "line", factory, responder)
        server = HubServer(create_app(hub))
        await server.start()
        fake.webhook_url = f"{server.url}/webhooks/line"
        harness = LineHarness(fake, hub, responder, server.url)
        if not platform_down and access_token == ACCESS_TOKEN:
            await eventually(lambda: harness.adapter.bot_user_id == BOT_USER)
        yield harness
    finally:
        if server is not None:
            await server.stop()
        if hub is not None:
            await hub.stop()
        await fake.stop()


# What the contract runs on this platform with (plugin.py says what each feature means).
PLATFORM = ContractPlatform(open_harness, frozenset({"mention_routing"}), WRONG_CREDENTIALS)
