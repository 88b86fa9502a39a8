"""How each platform delivers the same event again, for the redelivery suite.

A `Target` builds a person's message (`prepare`) and delivers copy n of it (`deliver`, n = 0
the first time), the way its platform repeats an event: Slack over HTTP with
`X-Slack-Retry-Num` and over Socket Mode as a new envelope with `retry_attempt`, both for
the `message` and the `app_mention` event of a mention; Discord as the same gateway dispatch;
Telegram as the same update by webhook or by getUpdates; LINE with `isRedelivery` and the
same `webhookEventId`; the web chat with the same `message_id`. `interrupt` is what happens
between the rounds: Slack refreshes the socket, Discord asks the gateway to reconnect.
Messages come from several people, a few each and each in their own chat, so the hub's
inbound pacing (a burst of 10 a person, 30 a channel) never holds them: this is about copies.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from animahub_kit.contract import discord_harness, line_harness, slack_harness, telegram_harness
from animahub_kit.contract.harness import Harness, ScriptedResponder, eventually
from hub.app import Hub
from hub.turns.runtime import Responders
from tests.conftest import add_demo_animas, make_settings, owner_headers
from tests.security.common import deliveries


@dataclass(frozen=True)
class Message:
    text: str
    payload: Any  # what the platform sends for it (an event, an update, a request body)


class Target(Protocol):
    hub: Hub

    def prepare(self, text: str, person: int) -> Message:
        """Person number `person`'s message `text`, in a chat of their own (not sent yet)."""
        ...

    async def deliver(self, message: Message, copy: int) -> int:
        """Deliver `message` (again, for copy > 0); the status it was acknowledged with."""
        ...

    async def interrupt(self) -> None: ...

    def replies(self) -> list[str]: ...


Opener = Callable[[Path], AbstractAsyncContextManager[Target]]


class _Platform:
    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.hub = harness.hub

    async def interrupt(self) -> None:
        return None

    def replies(self) -> list[str]:
        return [p.text for p in self.harness.posted()]


class SlackTarget(_Platform):
    """Both events of a mention (`message`, `app_mention`), each retried by Slack."""

    def __init__(self, harness: slack_harness.SlackHarness) -> None:
        super().__init__(harness)
        self.fake = harness.fake

    def prepare(self, text: str, person: int) -> Message:
        """A mention in the person's own team channel (Slack sends no app_mention in DMs)."""
        who, channel = f"U0P{person}", f"C0TEAM{person}"
        if who not in self.fake.users:
            self.fake.add_user(
                who, f"p{person}", display_name=f"P{person}", real_name=f"P {person}"
            )
            self.fake.add_channel(channel, f"team-{person}", "channel")
        event = self.fake.message_event(who, channel, f"<@U0BOT> {text}")
        bodies = [self.fake.callback(e) for e in (event, self.fake.mention_event(event))]
        return Message(text, bodies)

    async def deliver(self, message: Message, copy: int) -> int:
        statuses = [await self._send(body, copy) for body in message.payload]
        return max(statuses)

    async def _send(self, body: dict[str, Any], copy: int) -> int:
        headers = {"Content-Type": "application/json"}
        if copy:
            headers.update({"X-Slack-Retry-Num": str(copy), "X-Slack-Retry-Reason": "http_timeout"})
        status, _ = await self.fake.post_signed(json.dumps(body), headers)
        return status


class SlackSocketTarget(SlackTarget):
    async def _send(self, body: dict[str, Any], copy: int) -> int:
        envelope = self.fake.push("events_api", body, retry_attempt=copy, retry_reason="timeout")
        await self.fake.ack(envelope)
        return 200  # acknowledged by its envelope id (ack() times out otherwise)

    async def interrupt(self) -> None:
        hellos = self.fake.hellos
        await self.fake.refresh_sockets()
        await eventually(lambda: self.fake.hellos > hellos)


class DiscordTarget(_Platform):
    def __init__(self, harness: discord_harness.DiscordHarness) -> None:
        super().__init__(harness)
        self.fake = harness.fake

    def prepare(self, text: str, person: int) -> Message:
        fake = self.fake
        author = fake.user(f"person{person}")
        return Message(text, fake.message_payload(author, fake.dm_channel(author), text))

    async def deliver(self, message: Message, copy: int) -> int:
        if copy == 0:
            await self.fake.send_message(message.payload)
        else:
            await self.fake.redispatch("MESSAGE_CREATE", message.payload)
        return 200  # the gateway acknowledges nothing; what counts is what the hub did

    async def interrupt(self) -> None:
        """The gateway asks for a reconnect; the session is back once a new message is
        answered over it (the repeats that follow go to the new session)."""
        identified = len(self.fake.identifies)
        await self.fake.reconnect()
        await eventually(lambda: len(self.fake.identifies) > identified)
        await self.harness.dm("bob", "back after the reconnect")
        await eventually(lambda: any("back after the reconnect" in t for t in self.replies()))


class TelegramTarget(_Platform):
    """The same update again: POSTed to the webhook again, or handed out again by
    getUpdates (as after a poll whose offset was never confirmed)."""

    def __init__(self, harness: telegram_harness.TelegramHarness) -> None:
        super().__init__(harness)
        self.fake = harness.fake
        self._update_ids: dict[str, int] = {}

    def prepare(self, text: str, person: int) -> Message:
        uid = 5000 + person
        if uid not in self.fake.users:
            self.fake.add_user(uid, f"P{person}", f"p{person}")
        message = self.fake.message(uid, uid, text)
        return Message(text, self.fake.update("message", message) if self.webhook else message)

    @property
    def webhook(self) -> bool:
        return bool(self.fake.webhook_url)

    async def deliver(self, message: Message, copy: int) -> int:
        if self.webhook:
            return await self.fake.deliver(message.payload)
        if copy == 0:  # queued for getUpdates (push has no await here: the id is kept at once)
            update = await self.fake.push("message", message.payload)
            self._update_ids[message.text] = int(update["update_id"])
        else:
            await self.fake.redeliver(self._update_ids[message.text])
        return 200  # polling: the offset is the acknowledgement


class LineTarget(_Platform):
    def __init__(self, harness: line_harness.LineHarness) -> None:
        super().__init__(harness)
        self.fake = harness.fake

    def prepare(self, text: str, person: int) -> Message:
        who = line_harness.user_id(f"p{person}")
        if who not in self.fake.users:
            self.fake.add_user(who, f"P{person}")
        return Message(text, self.fake.text_event(who, text))

    async def deliver(self, message: Message, copy: int) -> int:
        event = message.payload
        if copy == 0:
            return (await self.fake.deliver(event)).status
        return (await self.fake.redeliver(event["webhookEventId"])).status


class WebTarget:
    """The web client resending a message with the same `message_id` (after a timeout)."""

    def __init__(self, hub: Hub, http: httpx.AsyncClient) -> None:
        self.hub = hub
        self.http = http
        self._ids = 0

    def prepare(self, text: str, person: int) -> Message:
        self._ids += 1
        body = {"message": text, "conversation_id": f"s{self._ids}", "user": f"p{person}"}
        return Message(text, {**body, "message_id": f"web-{self._ids}-{time.time_ns()}"})

    async def deliver(self, message: Message, copy: int) -> int:
        return (await self.http.post("/api/chat/aria", json=message.payload)).status_code

    async def interrupt(self) -> None:
        return None

    def replies(self) -> list[str]:
        return [d.text for d in deliveries(self.hub)]


@asynccontextmanager
async def slack(tmp_path: Path) -> AsyncIterator[Target]:
    async with slack_harness.open_harness(tmp_path, echo=False) as h:
        yield SlackTarget(h)


@asynccontextmanager
async def slack_socket(tmp_path: Path) -> AsyncIterator[Target]:
    async with slack_harness.open_harness(tmp_path, socket_mode=True, echo=False) as h:
        yield SlackSocketTarget(h)


@asynccontextmanager
async def discord(tmp_path: Path) -> AsyncIterator[Target]:
    async with discord_harness.open_harness(tmp_path) as h:
        yield DiscordTarget(h)


@asynccontextmanager
async def telegram_webhook(tmp_path: Path) -> AsyncIterator[Target]:
    async with telegram_harness.open_harness(tmp_path) as h:
        yield TelegramTarget(h)


@asynccontextmanager
async def telegram_polling(tmp_path: Path) -> AsyncIterator[Target]:
    async with telegram_harness.open_harness(tmp_path, webhook=False) as h:
        yield TelegramTarget(h)


@asynccontextmanager
async def line(tmp_path: Path) -> AsyncIterator[Target]:
    async with line_harness.open_harness(tmp_path) as h:
        yield LineTarget(h)


def web(database_url: str) -> Opener:
    @asynccontextmanager
    async def open_web(tmp_path: Path) -> AsyncIterator[Target]:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        settings = make_settings(
            home,
            hub={"default_anima": "mika", "admins": []},
            memory={"enabled": False},
            scheduler={"enabled": False},
            outbox={"poll_interval_s": 0.05, "backoff_base_s": 0.05},
            storage={"database_url": database_url},
        )
        responder = ScriptedResponder()
        hub = Hub(settings, responders=Responders(responder, responder))
        await hub.start()
        add_demo_animas(hub)
        try:
            from hub.api.server import create_app

            transport = httpx.ASGITransport(app=create_app(hub))
            async with httpx.AsyncClient(
                transport=transport, base_url="http://localhost", headers=owner_headers(home)
            ) as http:
                yield WebTarget(hub, http)
        finally:
            await hub.stop()

    return open_web
