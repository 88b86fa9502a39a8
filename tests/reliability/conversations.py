"""The conversations of a load, one class per platform, each speaking as people do there
and delivering as the platform does when the bot is down or did not acknowledge:

* web chat: the client resends with the same `message_id` until the hub accepts it;
* Slack (Socket Mode): an envelope not acknowledged is sent again with `retry_attempt`
  (FakeSlack.deliver_until_acked, Slack's three retries on a compressed schedule);
* Telegram (long polling): an update stays queued until getUpdates confirms its offset;
* LINE: a webhook not answered 2xx is redelivered with `isRedelivery`
  (FakeLine.deliver_until_accepted);
* Discord: a message goes to the gateway sessions open at that moment and to the channel's
  history, nothing more: a new session does not replay it (the adapter must catch up).

Slack and LINE do not promise the order of their redeliveries, and the web client waits for
each answer, so those conversations send their next message once the previous one was
accepted; Telegram and Discord keep a channel's order themselves, so theirs do not wait.

Every message carries a tag (`q03m007`: conversation 3, message 7) that its reply names
(the offline reply quotes the message it answers before anything else), and `replies()`
reads what the bot posted in the conversation from the fake platform's record (the web
chat's: the hub's transcript), oldest first, with whether each reply references the
message it answers where the platform has a way to (Slack thread, Discord message
reference, Telegram reply).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from tests.reliability.world import SLACK_BOT_USER, World
from tests.sizes import FULL

TAG = re.compile(r"\bq\d{2}m\d{3}\b")
# Slack retries at once, after a minute and after five: its own schedule at full size, three
# times faster at the CI size.
SLACK_RETRIES_S = (0.0, 60.0, 300.0) if FULL else (0.0, 20.0, 100.0)
# LINE publishes no schedule; it redelivers for a while: here for about two minutes, or ten
# at full size (a crash loop on a busy machine keeps the hub away for minutes).
LINE_RETRIES_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0) + ((120.0,) * 4 if FULL else ())
WEB_RETRY_S = 0.3


def tag(conversation: int, index: int) -> str:
    return f"q{conversation:02d}m{index:03d}"


@dataclass
class Sent:
    tag: str
    platform_id: str = ""  # the platform's id of the message (what a reply references)


@dataclass(frozen=True)
class Reply:
    text: str
    references: str | None  # the platform id it references, where the platform has one

    def tag(self) -> str | None:
        """The message it answers: the offline reply quotes it first (a follow-up then
        lists earlier messages of the conversation)."""
        found = TAG.search(self.text)
        return found.group(0) if found else None


class Conversation(Protocol):
    platform: str
    name: str
    waits_for_ack: bool
    sent: list[Sent]

    async def send(self, tag: str, text: str) -> Sent: ...

    async def replies(self) -> list[Reply]: ...


@dataclass
class WebDM:
    world: World
    hub_url: str
    user: str
    name: str = ""
    platform: str = "web"
    waits_for_ack: bool = True
    sent: list[Sent] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # the owner's key, naming `user`

    async def send(self, tag: str, text: str) -> Sent:
        body = {"message": text, "conversation_id": self.name, "user": self.user, "message_id": tag}
        await _until_accepted(f"{self.hub_url}/api/chat/aria", body, self.owner, stream=True)
        return _note(self, Sent(tag, tag))

    async def replies(self) -> list[Reply]:
        params = {"conversation_id": self.name, "user": self.user, "limit": 1000}
        data = await _get(f"{self.hub_url}/api/chat/aria/history", params, self.owner)
        return [Reply(m["text"], None) for m in data["messages"] if m["author_kind"] == "anima"]


@dataclass
class WebChannel:
    world: World
    hub_url: str
    user: str
    name: str = ""
    platform: str = "web"
    waits_for_ack: bool = True
    sent: list[Sent] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # the owner's key, naming `user`

    async def send(self, tag: str, text: str) -> Sent:
        body = {"text": f"@aria {text}", "user": self.user, "message_id": tag}
        await _until_accepted(f"{self.hub_url}/api/channels/{self.name}/posts", body, self.owner)
        return _note(self, Sent(tag, tag))

    async def replies(self) -> list[Reply]:
        posts = f"{self.hub_url}/api/channels/{self.name}/posts"
        data = await _get(posts, {"limit": 1000}, self.owner)
        return [Reply(m["text"], None) for m in data["posts"] if m["author_kind"] == "anima"]


@dataclass
class SlackDM:
    world: World
    user: str
    name: str = ""
    platform: str = "slack"
    waits_for_ack: bool = True
    sent: list[Sent] = field(default_factory=list)
    lost: int = 0

    def __post_init__(self) -> None:
        self.world.slack.add_user(self.user, self.user.lower())
        self.world.slack.add_channel(self.name, kind="im")

    async def send(self, tag: str, text: str) -> Sent:
        event = self.world.slack.message_event(self.user, self.name, text)
        self.lost += not await _slack(self.world, event)
        return _note(self, Sent(tag, str(event["ts"])))

    async def replies(self) -> list[Reply]:
        return [Reply(m.text, None) for m in self.world.slack.messages if m.channel == self.name]


@dataclass
class SlackThread:
    """A mention in a channel, answered in a thread under it, the person going on there."""

    world: World
    user: str
    name: str = ""
    platform: str = "slack"
    waits_for_ack: bool = True
    sent: list[Sent] = field(default_factory=list)
    root: str | None = None
    lost: int = 0

    def __post_init__(self) -> None:
        self.world.slack.add_user(self.user, self.user.lower())
        self.world.slack.add_channel(self.name, self.name.lower(), "channel")

    async def send(self, tag: str, text: str) -> Sent:
        fake = self.world.slack
        event = fake.message_event(
            self.user, self.name, f"<@{SLACK_BOT_USER}> {text}", thread_ts=self.root
        )
        self.root = self.root or str(event["ts"])
        delivered = await _slack(self.world, event)
        delivered |= await _slack(self.world, fake.mention_event(event))  # Slack sends both
        self.lost += not delivered
        return _note(self, Sent(tag, str(event["ts"])))

    async def replies(self) -> list[Reply]:
        return [
            Reply(m.text, m.thread_ts) for m in self.world.slack.messages if m.channel == self.name
        ]


@dataclass
class DiscordChat:
    """A DM (`channel=None`) or a channel of the guild with the bot mentioned."""

    world: World
    user: str
    name: str = ""
    channel: str | None = None
    platform: str = "discord"
    waits_for_ack: bool = False
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self.world.discord
        person = fake.user(self.user)
        if self.channel is None:
            self.channel = fake.dm_channel(person)
        else:
            self.channel = str(fake.add_text_channel(self.channel)["id"])

    async def send(self, tag: str, text: str) -> Sent:
        fake = self.world.discord
        assert self.channel is not None
        person = fake.user(self.user)
        if fake.channels[self.channel]["type"] == 1:
            data = fake.message_payload(person, self.channel, text)
        else:
            mention = f"<@{fake.bot['id']}> {text}"
            data = fake.message_payload(person, self.channel, mention, mentions=(fake.bot,))
        await fake.send_message(data)
        return _note(self, Sent(tag, str(data["id"])))

    async def replies(self) -> list[Reply]:
        mine = [m for m in self.world.discord.bot_messages() if m.channel_id == self.channel]
        return [Reply(m.content, m.reply_to) for m in sorted(mine, key=lambda m: int(m.id))]


@dataclass
class TelegramChat:
    """A private chat (`group=None`) or a group where the bot is mentioned."""

    world: World
    user: int
    name: str = ""
    group: int | None = None
    platform: str = "telegram"
    waits_for_ack: bool = False
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self.world.telegram
        fake.add_user(self.user, self.name.capitalize(), username=self.name)
        if self.group is not None:
            fake.add_chat(self.group, "group", f"group {self.name}")

    @property
    def chat(self) -> int:
        return self.user if self.group is None else self.group

    async def send(self, tag: str, text: str) -> Sent:
        fake = self.world.telegram
        if self.group is not None:
            text = f"@{fake.bot['username']} {text}"
        message = fake.message(self.user, self.chat, text)
        await fake.push("message", message)
        return _note(self, Sent(tag, str(message["message_id"])))

    async def replies(self) -> list[Reply]:
        return [
            Reply(m.text, None if m.reply_to is None else str(m.reply_to))
            for m in self.world.telegram.messages
            if m.chat_id == self.chat
        ]


@dataclass
class LineChat:
    """A 1:1 chat (`group=None`) or a group where the bot is mentioned."""

    world: World
    user: str
    name: str = ""
    group: str | None = None
    platform: str = "line"
    waits_for_ack: bool = True
    sent: list[Sent] = field(default_factory=list)
    lost: int = 0

    def __post_init__(self) -> None:
        fake = self.world.line
        fake.add_user(self.user, self.name.capitalize())
        if self.group is not None:
            fake.add_group(self.group, [self.user])

    async def send(self, tag: str, text: str) -> Sent:
        fake = self.world.line
        event = fake.text_event(self.user, text, chat=self.group, mention_bot=bool(self.group))
        delivery = await fake.deliver_until_accepted(event, retry_delays_s=LINE_RETRIES_S)
        if not 200 <= delivery.status < 300:
            self.lost += 1  # LINE gave up: the platform lost it, not the hub
        return _note(self, Sent(tag, str(event["message"]["id"])))

    async def replies(self) -> list[Reply]:
        chat = self.group or self.user
        return [Reply(m.text, None) for m in self.world.line.messages if m.to == chat]


def _note(conversation: Conversation, sent: Sent) -> Sent:
    conversation.sent.append(sent)
    return sent


async def _slack(world: World, event: dict[str, Any]) -> bool:
    """False when Slack gave up: no acknowledgement in any of its retries."""
    delivery = await world.slack.deliver_until_acked(event, retry_delays_s=SLACK_RETRIES_S)
    return delivery.status == 200


async def _until_accepted(
    url: str, body: dict[str, Any], owner: dict[str, str], *, stream: bool = False
) -> None:
    """POST until the hub answers 2xx, as the chat page resends a message it saw fail."""
    async with httpx.AsyncClient(timeout=30, headers=owner) as http:
        while True:
            try:
                if stream:  # the reply streams as SSE; accepted once the headers came
                    async with http.stream("POST", url, json=body) as response:
                        status = response.status_code
                else:
                    status = (await http.post(url, json=body)).status_code
            except httpx.TransportError:
                status = 0
            if 200 <= status < 300:
                return
            if status not in (0, 502, 503):
                raise AssertionError(f"{url} refused {body}: {status}")
            await asyncio.sleep(WEB_RETRY_S)


async def _get(url: str, params: dict[str, Any], owner: dict[str, str]) -> Any:
    async with httpx.AsyncClient(timeout=30, headers=owner) as http:
        response = await http.get(url, params=params)
        response.raise_for_status()
        return response.json()
