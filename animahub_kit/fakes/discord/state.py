"""What the fake Discord holds: its people and places, the messages posted, and the record of
everything it was asked and sent. The gateway, the REST handlers and the server all share one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from animahub_kit.fakes.discord import objects
from animahub_kit.fakes.discord.objects import JSON, THREAD_TYPES, iso
from animahub_kit.fakes.faults import FaultPolicy

DISCORD_EPOCH_MS = 1_420_070_400_000


@dataclass
class Recorded:
    method: str
    path: str
    route: str  # the route pattern, e.g. /api/v10/channels/{channel_id}/messages
    status: int
    body: Any
    token: str | None


@dataclass
class FakeMessage:
    data: JSON
    channel_id: str
    author_id: str
    edits: int = 0

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def content(self) -> str:
        return str(self.data["content"])

    @property
    def reply_to(self) -> str | None:
        reference = self.data.get("message_reference")
        return str(reference["message_id"]) if reference else None


@dataclass
class DiscordState:
    bot_token: str = "fake-main-bot-token"
    bot_name: str = "animahub"
    guild_name: str = "Test Guild"
    # False: IDENTIFY with the message-content intent is refused with close code 4014, as
    # Discord does when the privileged intent is not enabled in the developer portal.
    message_content_enabled: bool = True

    requests: list[Recorded] = field(default_factory=list)
    identifies: list[JSON] = field(default_factory=list)
    gateway_queries: list[dict[str, str]] = field(default_factory=list)
    messages: dict[str, FakeMessage] = field(default_factory=dict)
    command_overwrites: list[list[JSON]] = field(default_factory=list)
    interaction_responses: list[JSON] = field(default_factory=list)
    followups: list[JSON] = field(default_factory=list)
    dispatched: list[tuple[str, JSON]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._last_id = 0
        self.app_id = self.snowflake()
        self.guild_id = self.snowflake()
        self.bots: dict[str, JSON] = {}  # token -> bot user
        self.users: dict[str, JSON] = {}  # name -> user
        self.bot = self.add_bot(self.bot_token, self.bot_name)
        self.channels: dict[str, JSON] = {}  # id -> channel object
        for position, name in enumerate(("general", "random")):
            self.add_text_channel(name, position)
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id
        # Consulted before every post and edit (animahub_kit/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # people and places -----------------------------------------------------------------

    def snowflake(self) -> str:
        now = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last_id = max(now, self._last_id + 1)
        return str(self._last_id)

    def add_bot(self, token: str, name: str) -> JSON:
        """A bot user and its token (the main bot, or a per-Anima bot)."""
        user = objects.user(self.snowflake(), name, bot=True)
        user.update(verified=True, mfa_enabled=False, email=None, locale="en-US")
        self.bots[token] = user
        return user

    def user(self, name: str, *, bot: bool = False) -> JSON:
        """A person (or someone else's bot), created on first use."""
        if name not in self.users:
            self.users[name] = objects.user(self.snowflake(), name, bot=bot)
        return self.users[name]

    def add_text_channel(self, name: str, position: int = 0) -> JSON:
        channel = objects.text_channel(self.snowflake(), self.guild_id, name, position)
        self.channels[channel["id"]] = channel
        return channel

    def channel_id(self, name: str) -> str:
        for channel in self.channels.values():
            if channel.get("name") == name and channel["type"] == 0:
                return str(channel["id"])
        raise KeyError(f"no text channel named {name!r}")

    def dm_channel(self, user: JSON) -> str:
        """The DM channel between the main bot and a person, opened on first use."""
        if user["id"] not in self.dm_channels:
            channel = objects.dm_channel(self.snowflake(), user)
            self.channels[channel["id"]] = channel
            self.dm_channels[user["id"]] = channel["id"]
        return self.dm_channels[user["id"]]

    def add_thread(self, message_id: str, owner: JSON, name: str) -> JSON:
        """A public thread started from a message: it has the message's id."""
        parent = self.messages[message_id].channel_id
        thread = objects.thread(message_id, self.guild_id, parent, owner["id"], name)
        self.channels[message_id] = thread
        return thread

    def parent_of(self, channel_id: str) -> str | None:
        """The parent channel of a thread, None for any other channel."""
        channel = self.channels.get(channel_id, {})
        return channel.get("parent_id") if channel.get("type") in THREAD_TYPES else None

    def guild(self, bot: JSON) -> JSON:
        """The test guild as GUILD_CREATE brings it to `bot`."""
        guild_channels = [c for c in self.channels.values() if c.get("guild_id") == self.guild_id]
        owner_id = self.user("owner")["id"]
        return objects.guild(self.guild_id, self.guild_name, owner_id, bot, guild_channels)

    # messages --------------------------------------------------------------------------

    def message_payload(
        self,
        author: JSON,
        channel_id: str,
        content: str,
        *,
        mentions: tuple[JSON, ...] = (),
        attachments: tuple[JSON, ...] = (),
        reference: str | None = None,
    ) -> JSON:
        channel = self.channels[channel_id]
        guild_id = self.guild_id if channel["type"] != 1 else None
        data = objects.message(
            self.snowflake(),
            author,
            channel_id,
            content,
            mentions=mentions,
            attachments=attachments,
            guild_id=guild_id,
        )
        if reference is not None:
            referenced = self.messages.get(reference)
            objects.refer(data, reference, referenced.data if referenced else None)
        return data

    def attachment(self, filename: str, url: str, content_type: str, size: int) -> JSON:
        return objects.attachment(self.snowflake(), filename, url, content_type, size)

    def store(self, message: FakeMessage) -> None:
        self.messages[message.id] = message
        channel = self.channels.get(message.channel_id)
        if channel is not None:
            channel["last_message_id"] = message.id

    def edit(self, message: FakeMessage, content: Any) -> JSON:
        """The message's new content, edited now; its data as MESSAGE_UPDATE carries it."""
        message.data = {**message.data, "content": content, "edited_timestamp": iso()}
        message.edits += 1
        return message.data

    def interaction_payload(
        self, user: JSON, channel_id: str, name: str, options: list[JSON]
    ) -> JSON:
        channel = self.channels[channel_id]
        return objects.interaction(
            self.snowflake(),
            self.snowflake(),
            self.snowflake(),
            app_id=self.app_id,
            guild_id=self.guild_id,
            channel=channel,
            user=user,
            name=name,
            options=options,
        )

    # records ---------------------------------------------------------------------------

    def bot_messages(self) -> list[FakeMessage]:
        bot_ids = {user["id"] for user in self.bots.values()}
        return [m for m in self.messages.values() if m.author_id in bot_ids]

    def intents(self) -> int:
        return int(self.identifies[-1]["intents"]) if self.identifies else 0
