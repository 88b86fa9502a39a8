"""Catching up on what was said while the bot was not connected.

A new gateway session does not replay the events it missed (only a RESUME of the same
session does), so a message sent while the hub was down, or dispatched to a hub that died
before storing it, would never reach the hub. The adapter therefore keeps, per channel, the
id of the last message it handed to the hub (`Seen`, one cursor in the hub's database, saved
only once the message is stored). When a new session is READY it reads each known channel's
history after that id over REST, oldest first, and hands those messages to the hub exactly
like live ones; the hub's dedup (the message id is the event id) keeps a message it had
already stored from being answered twice.

Live messages wait while the catch-up runs (`ChannelOrder.hold`), and every message of a
channel goes through the channel's lock in the order discord.py dispatched it, so a channel's
messages reach the hub in order and its cursor never moves past a message not yet stored.

A channel is known once a message of it has been seen, and every guild text channel is known
from the session's guilds: one seen for the first time starts at its latest message (the
history from before the hub joined is not answered). A DM channel the hub never saw a
message in cannot be known: Discord lists no bot's DM channels, so a first DM sent while the
hub is down is lost, a limit of the platform.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import discord

from hub.adapter import HubPort

log = logging.getLogger(__name__)
CURSOR = "channels"  # JSON {channel id: id of the last message handed to the hub}
MAX_PER_CHANNEL = 500  # messages read back per channel and session, oldest first


class Seen:
    """The last message handed to the hub, per channel, kept in the hub's cursor table."""

    def __init__(self, hub: HubPort) -> None:
        self._hub = hub
        raw = hub.load_cursor(CURSOR)
        loaded = json.loads(raw) if raw else {}
        self._last: dict[int, int] = {int(k): int(v) for k, v in loaded.items()}

    def last(self, channel_id: int) -> int | None:
        return self._last.get(channel_id)

    def channels(self) -> list[int]:
        return list(self._last)

    def mark(self, channel_id: int, message_id: int) -> None:
        if message_id <= self._last.get(channel_id, 0):
            return
        self._last[channel_id] = message_id
        self._hub.save_cursor(CURSOR, json.dumps({str(k): str(v) for k, v in self._last.items()}))

    def start_at(self, channel_id: int, message_id: int | None) -> None:
        """A channel seen for the first time starts at its latest message (or its start)."""
        if channel_id not in self._last:
            self.mark(channel_id, message_id or 0)


class ChannelOrder:
    """One lock per channel, taken in dispatch order, and a gate closed during catch-up."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._open = asyncio.Event()
        self._open.set()

    def hold(self) -> None:
        """Close the gate: live messages wait until `release` (called synchronously on
        READY, before discord.py dispatches any message of the new session)."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def wait_open(self) -> None:
        await self._open.wait()

    @asynccontextmanager
    async def turn(self, channel_id: int) -> AsyncIterator[None]:
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            yield


# Hands one message to the hub under its channel's lock and moves the channel's cursor.
Take = Callable[[discord.Message], Awaitable[None]]


async def catch_up(client: discord.Client, seen: Seen, order: ChannelOrder, take: Take) -> int:
    """Hand the hub every message it missed in every known channel; then open the gate.
    Returns how many messages were read back."""
    try:
        await client.wait_until_ready()  # the guilds' channels are in discord.py's cache
        for channel in _guild_channels(client.guilds):
            seen.start_at(channel.id, channel.last_message_id)
        total = 0
        for channel_id in seen.channels():
            total += await _read_back(client, channel_id, seen, take)
        if total:
            log.info("Discord: read back %d messages missed while offline", total)
        return total
    finally:
        order.release()


async def _read_back(client: discord.Client, channel_id: int, seen: Seen, take: Take) -> int:
    last = seen.last(channel_id)
    channel: Any = client.get_channel(channel_id)
    count = 0
    try:
        if channel is None:
            channel = await client.fetch_channel(channel_id)
        after = discord.Object(id=last) if last else None
        async for message in channel.history(limit=MAX_PER_CHANNEL, after=after, oldest_first=True):
            await take(message)
            count += 1
    except discord.HTTPException as exc:  # the channel is gone, or no access to it now
        log.warning("Discord: could not read back channel %s: %s", channel_id, exc)
    if count == MAX_PER_CHANNEL:
        log.warning("Discord: more than %d missed messages in %s", count, channel_id)
    return count


def _guild_channels(guilds: Iterable[discord.Guild]) -> list[Any]:
    return [channel for guild in guilds for channel in (*guild.text_channels, *guild.threads)]
