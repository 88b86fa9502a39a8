"""The contract harness for Slack: a real hub with the Slack adapter, its real slack-bolt and
slack-sdk talking to animahub_kit/fakes/slack_server.py.

The hub's FastAPI app is served over real HTTP by uvicorn in the test's event loop, and the
fake POSTs signed Events API callbacks to its `/slack/events`, as Slack does (or, with
`socket_mode=True`, pushes them over a Socket Mode WebSocket instead). The fake also echoes
the bots' own posts back as events, as Slack does, so every case also checks that the hub
never answers itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from adapters.slack import SlackAdapter
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
from animahub_kit.fakes.slack_server import FakeSlack
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import Address, AddressKind

BOT_TOKEN = "xoxb-shared-bot"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
SIGNING_SECRET = "contract-signing-secret"
APP_TOKEN = "xapp-1-contract"
PEOPLE = {"alice": "Alice Liddell", "bob": "Bob Builder", "carol": "Carol Danvers"}
CHANNELS = {"general": "C0GENERAL", "random": "C0RANDOM"}
WRONG_CREDENTIALS: dict[str, Any] = {"bot_token": "xoxb-not-the-bot-token"}


def user_id(user: str) -> str:
    return f"U0{user.upper()}"


def dm_channel(user: str) -> str:
    return f"D0{user.upper()}"


class SlackHarness:
    platform = "slack"
    max_text = 3900
    replies_by_reference = False

    def __init__(
        self, fake: FakeSlack, hub: Hub, responder: ScriptedResponder, hub_url: str
    ) -> None:
        self.fake = fake
        self.hub = hub
        self.responder = responder
        self.hub_url = hub_url  # the hub's HTTP server (its /slack/events and /api)
        self._events: dict[str, list[str]] = {}  # Sent.event_id -> Slack event ids
        self._originals: dict[str, dict[str, Any]] = {}  # Sent.event_id -> message event

    # Harness protocol -------------------------------------------------------------------

    def reply_thread(self, sent: Sent) -> str | None:
        if sent.channel.startswith("D"):
            return sent.thread
        return sent.thread or sent.message_id

    def user_key(self, user: str) -> str:
        return f"slack:{user_id(user)}"

    async def dm(self, user: str, text: str) -> Sent:
        event = self.fake.message_event(user_id(user), dm_channel(user), text)
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
        if mention:
            text = f"<@{BOT_USER}> {text}"
        event = self.fake.message_event(user_id(user), CHANNELS[channel], text, thread_ts=thread)
        return await self._speak(event, mention=mention)

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        original = self._originals[sent.event_id]
        if original["text"].startswith(f"<@{BOT_USER}>"):
            text = f"<@{BOT_USER}> {text}"
        event = self.fake.edit_event(original, text)
        delivery = await self.fake.deliver(event)
        assert delivery.status == 200, delivery
        edited = Sent(f"{sent.channel}:{event['ts']}", sent.message_id, sent.channel, sent.thread)
        self._events[edited.event_id] = [delivery.event_id]
        return edited

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        files = [
            {
                "id": "F0REPORT",
                "name": filename,
                "title": filename,
                "mimetype": "application/pdf",
                "filetype": "pdf",
                "size": 12345,
                "url_private": url,
            }
        ]
        event = self.fake.message_event(
            user_id(user), CHANNELS[channel], f"<@{BOT_USER}> {text}", files=files
        )
        return await self._speak(event, mention=True)

    async def redeliver(self, sent: Sent) -> None:
        for event_id in self._events[sent.event_id]:
            delivery = await self.fake.redeliver(event_id)
            assert delivery.status == 200, delivery  # a retry is acknowledged like the first

    async def forged(self) -> int:
        event = self.fake.message_event(user_id("mallory"), CHANNELS["general"], "forged")
        return await self.fake.forged(event)

    async def stale(self) -> int:
        event = self.fake.message_event(user_id("mallory"), CHANNELS["general"], "replayed")
        return await self.fake.stale(event)

    def posted(self) -> list[Posted]:
        return [
            Posted(m.ts, m.channel, m.text, m.thread_ts, None, m.updates)
            for m in self.fake.bot_messages()
        ]

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        self.fake.rate_limit("chat.postMessage", times, retry_after)

    def post_requests(self) -> int:
        return len(self.fake.calls_of("chat.postMessage"))

    def set_faults(self, policy: FaultPolicy | None) -> None:
        self.fake.faults = policy

    def drop_next_send_response(self) -> None:
        self.fake.drop_next_send_response()

    def auth_attempts(self) -> int:
        return len(self.fake.calls_of("auth.test"))

    async def platform_up(self) -> None:
        if not self.fake.running:
            await self.fake.start()

    def address(self, channel: str) -> Address:
        return Address("slack", self.fake.team_id, CHANNELS[channel], None, AddressKind.CHANNEL)

    def attachment_url(self, url: str) -> str:
        return url

    # helpers ----------------------------------------------------------------------------

    async def _speak(self, event: dict[str, Any], *, mention: bool = False) -> Sent:
        """Deliver a message as Slack does: the `message` event, and for a mention of the
        bot also the `app_mention` event for the same message."""
        events = [event, self.fake.mention_event(event)] if mention else [event]
        ids = []
        for each in events:
            delivery = await self.fake.deliver(each)
            assert delivery.status == 200, delivery
            ids.append(delivery.event_id)
        sent = Sent(
            f"{event['channel']}:{event['ts']}",
            event["ts"],
            event["channel"],
            event.get("thread_ts"),
        )
        self._events[sent.event_id] = ids
        self._originals[sent.event_id] = event
        return sent


def populate(fake: FakeSlack) -> None:
    fake.add_bot(BOT_TOKEN, BOT_USER, BOT_ID, "animahub")
    for user, name in PEOPLE.items():
        fake.add_user(user_id(user), user, display_name=name.split()[0], real_name=name)
        fake.add_channel(dm_channel(user), kind="im")
    for name, channel in CHANNELS.items():
        fake.add_channel(channel, name, "channel")


@contextlib.asynccontextmanager
async def open_harness(
    tmp_path: Path,
    *,
    socket_mode: bool = False,
    anima_tokens: dict[str, str] | None = None,
    echo: bool = True,
    setup: Callable[[FakeSlack], None] | None = None,
    platform_down: bool = False,
    bot_token: str = BOT_TOKEN,
) -> AsyncIterator[SlackHarness]:
    """`setup` changes the fake workspace before the hub starts (more bots, scopes);
    `platform_down`: the fake is not running when the hub starts (`platform_up` later);
    `bot_token`: what the hub is configured with (one the fake does not know: invalid_auth)."""
    fake = FakeSlack(signing_secret=SIGNING_SECRET, app_token=APP_TOKEN, port=free_port())
    if not platform_down:
        await fake.start()
    populate(fake)
    if setup is not None:
        setup(fake)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    slack: dict[str, Any] = {
        "enabled": True,
        "bot_token": bot_token,
        "signing_secret": SIGNING_SECRET,
        "api_url": fake.api_url,
        "anima_tokens": anima_tokens or {},
    }
    if socket_mode:
        slack["app_token"] = APP_TOKEN
    responder = ScriptedResponder()
    hub: Hub | None = None
    server: HubServer | None = None
    try:
        hub = await start_hub(harness_settings(home, slack=slack), "slack", SlackAdapter, responder)
        server = HubServer(create_app(hub))
        await server.start()
        if not socket_mode:
            fake.events_url = f"{server.url}/slack/events"
        elif not platform_down and bot_token == BOT_TOKEN:
            await eventually(lambda: fake.hellos > 0)
        fake.echo_bot_messages = echo
        yield SlackHarness(fake, hub, responder, server.url)
    finally:
        fake.echo_bot_messages = False
        if server is not None:
            await server.stop()
        if hub is not None:
            await hub.stop()
        await fake.stop()


# What the contract runs on this platform with (plugin.py says what each feature means).
PLATFORM = ContractPlatform(
    open_harness,
    frozenset({"edits", "threads", "streaming", "replay_window", "mention_routing", "captions"}),
    WRONG_CREDENTIALS,
)
