"""Discord messages and channels, normalized into the hub's Inbound and Address."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import discord

from hub.messages import Address, AddressKind, Attachment, Inbound, PlatformUser

PLATFORM = "discord"
DM_WORKSPACE = "@me"  # Discord's own name for "no guild" (`/channels/@me/...`)
THREAD_TYPES = frozenset({10, 11, 12})  # announcement, public and private threads
# Snowflakes are at most 20 ASCII digits: int() of a longer run (`<@` + 5,000 digits) raises.
_USER_MENTION = re.compile(r"<@!?([0-9]{1,20})>")
_ROLE_MENTION = re.compile(r"<@&([0-9]{1,20})>")
_CHANNEL_MENTION = re.compile(r"<#([0-9]{1,20})>")
_SNOWFLAKE = re.compile(r"[0-9]{1,20}")
_DROPPED = "\x00"
# A removed bot mention takes its surrounding spaces along, and punctuation right after it
# moves to the word before: "hey <@1>, look" -> "hey, look"; "<@1> kai, hi" -> "kai, hi".
_GAP = re.compile(r"[ \t]*\x00+[ \t]*([,.:;!?]?)[ \t]*")


@dataclass
class Identities:
    """Who the hub is on Discord: the main bot and the per-Anima bots (user id -> Anima)."""

    bot_id: int = 0
    anima_bots: dict[int, str] = field(default_factory=dict)

    def is_own(self, user_id: int) -> bool:
        return user_id == self.bot_id or user_id in self.anima_bots


def address_of(channel: Any, guild_id: int | None) -> Address | None:
    """Where a message lives: a thread is addressed as its parent channel plus the thread.

    None when the channel's kind is unknown (a partial channel that must be fetched)."""
    if isinstance(channel, discord.Thread):
        return Address(PLATFORM, str(channel.guild.id), str(channel.parent_id), str(channel.id))
    if isinstance(channel, discord.DMChannel):
        return Address(PLATFORM, DM_WORKSPACE, str(channel.id), None, AddressKind.DM)
    if isinstance(channel, discord.GroupChannel):
        return Address(PLATFORM, DM_WORKSPACE, str(channel.id), None, AddressKind.GROUP)
    if guild_id is not None and isinstance(channel, discord.abc.GuildChannel):
        return Address(PLATFORM, str(guild_id), str(channel.id))
    return None


def snowflake(value: Any) -> str:
    """A Discord id as text; ValueError for anything else (an address holds it)."""
    text = str(value)
    if isinstance(value, bool) or not _SNOWFLAKE.fullmatch(text):
        raise ValueError(f"not a Discord id: {text[:40]!r}")
    return text


def address_of_raw(channel: Mapping[str, Any], guild_id: str | None) -> Address:
    """The same for a raw channel object (HTTP interactions carry one); KeyError, TypeError
    or ValueError when it is not shaped like Discord's."""
    if not isinstance(channel, Mapping):
        raise TypeError(f"a channel is an object, not {type(channel).__name__}")
    kind = int(channel.get("type", 0))
    channel_id = snowflake(channel["id"])
    guild = snowflake(guild_id) if guild_id else None
    if kind in THREAD_TYPES:
        if guild is None:
            raise ValueError("a thread outside a guild")
        return Address(PLATFORM, guild, snowflake(channel["parent_id"]), channel_id)
    if kind == 1:
        return Address(PLATFORM, DM_WORKSPACE, channel_id, None, AddressKind.DM)
    if kind == 3:
        return Address(PLATFORM, DM_WORKSPACE, channel_id, None, AddressKind.GROUP)
    return Address(PLATFORM, guild or DM_WORKSPACE, channel_id)


def sender_of(user: discord.abc.User) -> PlatformUser:
    return PlatformUser(PLATFORM, str(user.id), user.display_name, user.bot)


def clean_text(message: discord.Message, ids: Identities) -> str:
    """Message text as the hub reads it: the bot's own mention removed, a per-Anima bot's
    mention as `@anima`, other mentions as `@name` / `#channel` instead of raw ids."""
    people = {user.id: user.display_name for user in message.mentions}
    roles = {role.id: role.name for role in message.role_mentions}

    def user(match: re.Match[str]) -> str:
        user_id = int(match[1])
        if user_id == ids.bot_id:
            return _DROPPED
        if user_id in ids.anima_bots:
            return f"@{ids.anima_bots[user_id]}"
        return f"@{people[user_id]}" if user_id in people else match[0]

    def role(match: re.Match[str]) -> str:
        role_id = int(match[1])
        return f"@{roles[role_id]}" if role_id in roles else match[0]

    def channel(match: re.Match[str]) -> str:
        found = message.guild.get_channel_or_thread(int(match[1])) if message.guild else None
        return f"#{found.name}" if found is not None else match[0]

    text = _USER_MENTION.sub(user, message.content)
    text = _ROLE_MENTION.sub(role, text)
    text = _CHANNEL_MENTION.sub(channel, text)
    return tidy(text)


def tidy(text: str) -> str:
    """Close the gaps left by removed mentions."""
    if _DROPPED not in text:
        return text.strip()
    text = _GAP.sub(lambda m: f"{m[1]} " if m[1] else " ", text)
    return text.strip().lstrip(",.:;!?").strip()


def mentioned_animas(message: discord.Message, ids: Identities) -> tuple[str, ...]:
    names = [ids.anima_bots[u.id] for u in message.mentions if u.id in ids.anima_bots]
    return tuple(dict.fromkeys(names))


def attachments_of(message: discord.Message) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(a.filename, a.url, a.content_type or "", a.size) for a in message.attachments
    )


def raw_of(message: discord.Message, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The raw payload when discord.py hands it over (edits), else the fields that matter."""
    if data is not None:
        return dict(data)
    reference = message.reference
    return {
        "id": str(message.id),
        "channel_id": str(message.channel.id),
        "guild_id": str(message.guild.id) if message.guild else None,
        "author": {"id": str(message.author.id), "username": message.author.name},
        "content": message.content,
        "timestamp": message.created_at.isoformat(),
        "message_reference": (
            {"message_id": str(reference.message_id), "channel_id": str(reference.channel_id)}
            if reference is not None
            else None
        ),
        "attachments": [a.to_dict() for a in message.attachments],
    }


def to_inbound(
    message: discord.Message,
    address: Address,
    ids: Identities,
    *,
    addressed: bool,
    edited: Mapping[str, Any] | None = None,
) -> Inbound:
    """`edited` is the raw MESSAGE_UPDATE payload when the message is an edit."""
    event_id = str(message.id)
    edit_of = None
    sent_at = message.created_at
    if edited is not None:
        stamp = str(edited["edited_timestamp"])
        event_id, edit_of = f"{message.id}:edit:{stamp}", str(message.id)
        sent_at = message.edited_at or datetime.now(UTC)
    return Inbound(
        event_id=event_id,
        address=address,
        sender=sender_of(message.author),
        text=clean_text(message, ids),
        mentions=mentioned_animas(message, ids),
        reply_to=str(message.id),
        edit_of=edit_of,
        addressed=addressed,
        attachments=attachments_of(message),
        sent_at=sent_at,
        raw=raw_of(message, edited),
    )
