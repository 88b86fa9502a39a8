"""Slack events and slash commands into the hub's `Inbound` (hub/messages.py).

Identity of a message: `<channel>:<ts>` of the event. A message and the `app_mention` Slack
sends for the same message share it, and so does every redelivery (HTTP retries, Socket Mode
reconnects), so the hub's (platform, event_id) dedup answers each message once. An edit is a
`message_changed` event with a ts of its own, so it is a new event whose redelivery dedups too.

Where it lives: a channel message's address carries a thread, its own ts when it is top-level,
because replies go in a thread under it and the follow-ups there are one conversation. DMs are
answered in the DM, so their address has no thread unless the person wrote in one.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from adapters.slack.directory import CHANNEL_TYPES, Directory
from hub.messages import Address, AddressKind, Attachment, Command, Inbound, PlatformUser

PLATFORM = "slack"

# Subtypes that are someone saying something; the rest (joins, topic changes, deletions,
# thread bookkeeping) are not messages to keep or answer.
_SPOKEN = frozenset({None, "file_share", "thread_broadcast", "me_message", "bot_message"})
_TOKEN = re.compile(r"<([^<>]*)>|&(amp|lt|gt);")
_USER_REF = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")
_ENTITY = {"amp": "&", "lt": "<", "gt": ">"}

InThread = Callable[[Address], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class Bot:
    """One of our own Slack bot users: the shared bot (anima None) or an Anima's own app."""

    user_id: str
    bot_id: str
    anima: str | None = None


@dataclass
class Bots:
    by_user: dict[str, Bot] = field(default_factory=dict)
    bot_ids: set[str] = field(default_factory=set)

    def add(self, bot: Bot) -> None:
        self.by_user[bot.user_id] = bot
        if bot.bot_id:
            self.bot_ids.add(bot.bot_id)

    def is_ours(self, message: Mapping[str, Any]) -> bool:
        return message.get("user") in self.by_user or message.get("bot_id") in self.bot_ids


@dataclass(frozen=True, slots=True)
class Converted:
    text: str
    animas: tuple[str, ...]  # Animas whose own bot user was mentioned
    bot_mentioned: bool  # any of our bots was mentioned


def _unescape(text: str) -> str:
    return re.sub(r"&(amp|lt|gt);", lambda m: _ENTITY[m.group(1)], text)


def mentioned_users(text: str) -> list[str]:
    return list(dict.fromkeys(_USER_REF.findall(text)))


def to_commonmark(text: str, names: Mapping[str, str], bots: Bots) -> Converted:
    """Slack's message text into CommonMark: our shared bot's mention is dropped (it is not
    part of what was said), an Anima's bot becomes `@name`, people become `@Display Name`,
    `<url|label>` a markdown link, channels `#name`, and `&amp;` `&lt;` `&gt;` plain text."""
    animas: list[str] = []
    mentioned = False

    def replace(match: re.Match[str]) -> str:
        nonlocal mentioned
        if match.group(2):
            return _ENTITY[match.group(2)]
        target, _, label = (_unescape(part) for part in match.group(1).partition("|"))
        if target.startswith("@"):
            user_id = target[1:]
            bot = bots.by_user.get(user_id)
            if bot is not None:
                mentioned = True
                if bot.anima is None:
                    return "\0"  # removed below, with the space around it
                animas.append(bot.anima)
                return f"@{bot.anima}"
            return "@" + (names.get(user_id) or label or user_id)
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!"):
            if label:
                return label
            command = target[1:].split("^", 1)[0]
            return f"@{command}" if command in ("here", "channel", "everyone") else ""
        if label and label != target:
            return f"[{label}]({target})"
        return target.removeprefix("mailto:") if target.startswith("mailto:") else target

    converted = _TOKEN.sub(replace, text)
    converted = re.sub(r"[ \t]*\0[ \t]*", " ", converted).replace("\0", "")
    return Converted(converted.strip(), tuple(dict.fromkeys(animas)), mentioned)


def _sent_at(ts: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except (TypeError, ValueError, OverflowError, OSError):  # not a time this platform has
        return datetime.now(UTC)


def attachments(message: Mapping[str, Any]) -> tuple[Attachment, ...]:
    found = []
    for item in message.get("files") or ():
        if not isinstance(item, dict):
            continue
        size = item.get("size")
        found.append(
            Attachment(
                name=str(item.get("name") or item.get("title") or item.get("id") or "file"),
                url=str(item.get("url_private") or item.get("permalink") or ""),
                content_type=str(item.get("mimetype") or ""),
                size=size if isinstance(size, int) else None,
            )
        )
    return tuple(found)


def command_kind(channel_name: str) -> AddressKind:
    if channel_name == "directmessage":
        return AddressKind.DM
    if channel_name.startswith("mpdm-"):
        return AddressKind.GROUP
    return AddressKind.CHANNEL


class Normalizer:
    def __init__(self, directory: Directory, bots: Bots) -> None:
        self._directory = directory
        self._bots = bots

    async def message(
        self, event: Mapping[str, Any], team_id: str, in_thread: InThread
    ) -> Inbound | None:
        """The Inbound for a `message` or `app_mention` event, or None when it is not one
        to keep: our own bots' messages, joins and other bookkeeping, unchanged 'edits'."""
        subtype = event.get("subtype")
        channel = str(event.get("channel") or "")
        if not channel or not event.get("ts"):
            return None
        if subtype == "message_changed":
            message = event.get("message") or {}
            previous = event.get("previous_message") or {}
            if not isinstance(message, dict) or self._bots.is_ours(message):
                return None
            if previous and previous.get("text") == message.get("text"):
                return None  # an unfurl or thread bookkeeping, not a new text
            edit_of: str | None = str(message.get("ts") or "")
        elif subtype in _SPOKEN:
            message, edit_of = dict(event), None
            if self._bots.is_ours(message):
                return None  # our own post coming back: never answer ourselves
        else:
            return None
        if message.get("subtype") not in _SPOKEN:
            return None
        kind = CHANNEL_TYPES.get(str(event.get("channel_type") or ""))
        if kind is None:
            kind = await self._directory.kind(channel)
        ts = str(message.get("ts") or event["ts"])
        thread = message.get("thread_ts")
        if kind is not AddressKind.DM and not thread:
            thread = ts
        address = Address(PLATFORM, team_id, channel, str(thread) if thread else None, kind)
        sender = await self._sender(message)
        raw_text = str(message.get("text") or "")
        names = {u: await self._directory.user_name(u) for u in mentioned_users(raw_text)}
        converted = to_commonmark(raw_text, names, self._bots)
        addressed = kind is AddressKind.DM or converted.bot_mentioned
        is_reply = message.get("thread_ts") not in (None, ts)
        if not addressed and is_reply:
            addressed = message.get("parent_user_id") in self._bots.by_user or await in_thread(
                address
            )
        return Inbound(
            event_id=f"{channel}:{event['ts']}",
            address=address,
            sender=sender,
            text=converted.text,
            mentions=converted.animas,
            reply_to=ts,
            edit_of=edit_of,
            addressed=addressed,
            attachments=attachments(message),
            sent_at=_sent_at(str(event["ts"])),
            raw=dict(event),
        )

    async def _sender(self, message: Mapping[str, Any]) -> PlatformUser:
        user = message.get("user")
        if not user:  # an integration posting without a user (subtype bot_message)
            bot_id = str(message.get("bot_id") or "unknown")
            profile = message.get("bot_profile")  # an object, when it is Slack's
            label = profile.get("name") if isinstance(profile, dict) else None
            name = message.get("username") or label or bot_id
            return PlatformUser(PLATFORM, bot_id, str(name), is_bot=True)
        name = await self._directory.user_name(str(user))
        return PlatformUser(PLATFORM, str(user), name, is_bot=bool(message.get("bot_id")))

    async def command(self, payload: Mapping[str, Any]) -> Inbound:
        """A slash command (`/anima bind aria`) as the hub's Inbound, with its parsed form."""
        name = str(payload.get("command") or "").lstrip("/")
        text = str(payload.get("text") or "").strip()
        user = str(payload.get("user_id") or "")
        display = await self._directory.user_name(user) or str(payload.get("user_name") or "")
        kind = command_kind(str(payload.get("channel_name") or ""))
        address = Address(
            PLATFORM,
            str(payload.get("team_id") or ""),
            str(payload.get("channel_id") or ""),
            None,
            kind,
        )
        return Inbound(
            event_id=f"cmd:{payload.get('trigger_id')}",
            address=address,
            sender=PlatformUser(PLATFORM, user, display),
            text=f"/{name} {text}".strip(),
            command=Command(name, tuple(text.split())),  # as hub/slash.py splits
            raw={k: v for k, v in payload.items() if k not in ("token", "response_url")},
        )
