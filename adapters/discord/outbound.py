"""What the Discord adapter sends: outbox chunks, streamed previews, and which bot sends them.

A reply is previewed while it is written (adapters/streaming.py): posted once as a reply
to the triggering message, then edited. When the outbox sends the reply's first chunk, the
preview is claimed and edited into the final text instead of posting a second message.
An Anima with its own bot token posts (and so previews and edits) as that bot, except in
DMs: a DM channel belongs to the main bot, and no other bot can post in it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Generic, TypeVar

from adapters.discord import rest
from adapters.discord.render import render
from adapters.discord.rest import RestBot
from adapters.previews import ChannelGate
from adapters.streaming import EditStreamer, PreviewHub
from hub.adapter import (
    PermanentDeliveryError,
    TransientDeliveryError,
)
from hub.messages import Address, AddressKind, DeliveryKind, OutboundChunk

log = logging.getLogger(__name__)

_REMEMBER = 10_000  # recent message ids kept for edits and reply detection
_PREVIEWED = (DeliveryKind.REPLY, DeliveryKind.NOTICE)
K = TypeVar("K")
V = TypeVar("V")


class Recent(OrderedDict[K, V], Generic[K, V]):
    """A dict that forgets its oldest entries beyond `limit`."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class Outbound:
    def __init__(self, max_text: int) -> None:
        self.main: RestBot | None = None
        self.anima_bots: dict[str, RestBot] = {}
        self._posted_by: Recent[int, RestBot] = Recent(_REMEMBER)  # our messages
        self._written_by: Recent[int, str] = Recent(_REMEMBER)  # ... and their Animas
        self._threads: Recent[int, bool] = Recent(_REMEMBER)  # threads we posted in
        self._streamer = EditStreamer("discord", self._post_preview, self.edit, render, max_text)
        # One send to a channel at a time: a 429 that discord.py answers itself (it sleeps
        # the retry-after inside the call) holds our other sends to the channel meanwhile.
        self._gate = ChannelGate()

    def open(self, hub: PreviewHub) -> None:
        self._streamer.open(hub)

    def follow(self, inbox_id: str, address: Address, key: str) -> None:
        """Preview the reply to an inbound whose event id (the reply's `answers`) is `key`."""
        self._streamer.follow(inbox_id, address, key=key)

    def is_ours(self, message_id: int) -> bool:
        return message_id in self._posted_by

    def anima_of(self, message_id: int) -> str | None:
        """The Anima that wrote one of our recent messages (forgotten after a restart)."""
        return self._written_by.get(message_id)

    def posted_in(self, thread_id: int) -> bool:
        return thread_id in self._threads

    async def close(self) -> None:
        await self._streamer.close()

    # sending ---------------------------------------------------------------------------

    async def send(self, chunk: OutboundChunk) -> str:
        channel_id = target(chunk.address)
        preview = None
        if chunk.index == 0 and chunk.kind in _PREVIEWED and chunk.answers is not None:
            # The preview stays in the book after this edit: a resend edits it again.
            preview = await self._streamer.claim(chunk.answers, chunk.address)
            if preview is not None:
                preview_id = int(preview.message_id)
                bot = self._posted_by.get(preview_id) or self.bot_for(chunk.address, preview.anima)
                try:
                    await self._gate.send(
                        str(channel_id), lambda: rest.edit(bot, channel_id, preview_id, chunk.text)
                    )
                except PermanentDeliveryError as exc:  # deleted meanwhile: post it anew
                    log.warning("could not edit preview %s (%s); posting it", preview_id, exc)
                    self._streamer.drop(chunk.answers)
                else:
                    self._written_by[preview_id] = chunk.anima
                    return str(preview_id)
        first_reply = chunk.index == 0 and chunk.kind is DeliveryKind.REPLY
        reply_to = snowflake(chunk.reply_to) if first_reply else None
        # A reply with no preview in the book posts with its preview's nonce: a preview
        # posted just before a kill, its id never saved, is what Discord answers then (it
        # checks nonces for a few minutes), and it is edited into the reply.
        lost = first_reply and preview is None
        key = f"preview:{chunk.answers}" if lost else chunk.idempotency_key
        bot = self.bot_for(chunk.address, chunk.anima)
        posted = await self._gate.send(
            str(channel_id),
            lambda: rest.post(
                bot, channel_id, chunk.text, reply_to=reply_to, nonce=rest.nonce_for(key)
            ),
        )
        if posted.text != chunk.text:  # that lost preview: it becomes the reply
            message_id = int(posted.id)
            await self._gate.send(
                str(channel_id), lambda: rest.edit(bot, channel_id, message_id, chunk.text)
            )
        self._posted(posted.id, bot, chunk.address, chunk.anima)
        return posted.id

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        """Edit one of our messages, with the bot that posted it (only it may)."""
        known = snowflake(message_id)
        if known is None:
            raise PermanentDeliveryError(f"not a Discord message id: {message_id!r}")
        bot = self._posted_by.get(known) or self.main_bot()
        channel_id = target(address)
        await self._gate.send(str(channel_id), lambda: rest.edit(bot, channel_id, known, text))

    async def _post_preview(
        self, address: Address, text: str, key: str | None, anima: str | None
    ) -> str:
        """A preview quotes the message it answers: Discord's event id for a message is the
        message's id (an edit's is not, and quotes nothing)."""
        bot = self.bot_for(address, anima)
        channel_id = target(address)
        posted = await self._gate.send(
            str(channel_id),
            lambda: rest.post(
                bot,
                channel_id,
                text,
                reply_to=snowflake(key),
                nonce=rest.nonce_for(f"preview:{key}"),
            ),
        )
        self._posted(posted.id, bot, address, anima)
        return posted.id

    def bot_for(self, address: Address, anima: str | None) -> RestBot:
        if anima and address.kind is not AddressKind.DM and anima in self.anima_bots:
            return self.anima_bots[anima]
        return self.main_bot()

    def main_bot(self) -> RestBot:
        if self.main is None:
            raise TransientDeliveryError("the Discord adapter is not running")
        return self.main

    def _posted(self, message_id: str, bot: RestBot, address: Address, anima: str | None) -> None:
        self._posted_by[int(message_id)] = bot
        if anima:
            self._written_by[int(message_id)] = anima
        if address.thread:
            self._threads[int(address.thread)] = True


def target(address: Address) -> int:
    """The channel a message goes to: the thread if there is one."""
    return int(address.thread or address.channel)


def snowflake(value: str | None) -> int | None:
    """A Discord message id, or None for keys that are not one (e.g. `interaction:…`)."""
    return int(value) if value is not None and value.isdigit() else None
