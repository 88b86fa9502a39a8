"""The Telegram platform: one bot through python-telegram-bot's `Bot` (docs/platforms/telegram.md).

Updates arrive by long polling (`getUpdates`) unless `telegram.public_url` is set; then by
webhook at `POST /webhooks/telegram`, registered with `setWebhook` and its secret at start.
Each update is normalized (normalize.py) and handed to the hub in order; replies leave
through the outbox, rendered to Telegram HTML (render.py) and chunked at 4,096 characters, in
the chat and forum topic they answer. While an Anima writes, the reply is previewed by
posting once and editing it (adapters/streaming.py); the first chunk then edits the preview.

Polling keeps the offset in the hub (`HubPort.save_cursor`), saved only once the hub has
stored the updates before it: after a restart nothing is lost (unconfirmed updates come
again) and nothing is answered twice (what was stored is deduplicated by its message key).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from telegram import Bot, BotCommand, Update
from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from adapters.streaming import EditStreamer
from adapters.telegram import commands, files
from adapters.telegram.normalize import Me, to_inbound, to_message_id
from adapters.telegram.outbound import Outbound, Pacer, retry_after_s
from adapters.telegram.render import MAX_TEXT, to_html
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.shape import update_problem
from adapters.telegram.unreadable import UNREADABLE, Unreadable, fetch_one_by_one
from adapters.telegram.webhook import WEBHOOK_PATH, router
from hub.adapter import (
    AttachmentUnavailable,
    Capabilities,
    ConnectionHold,
    FetchedFile,
    HubPort,
    MarkdownDialect,
    MessageTooLarge,
    PermanentDeliveryError,
    PlatformState,
    PlatformUnauthorized,
    PlatformUnavailable,
    TransientDeliveryError,
    handle_or_keep,
)
from hub.messages import Address, AddressKind, DeliveryKind, Inbound, OutboundChunk

if TYPE_CHECKING:
    from fastapi import APIRouter

log = logging.getLogger(__name__)
NAME = "telegram"
CURSOR = "telegram:offset"
ALLOWED_UPDATES = ("message", "edited_message")
_PREVIEWED = (DeliveryKind.REPLY, DeliveryKind.NOTICE)
_BACKOFF_S = (1.0, 60.0)  # poll failures: first delay, cap


class TelegramAdapter:
    name = NAME
    capabilities = Capabilities(
        max_text=MAX_TEXT,
        dialect=MarkdownDialect.TELEGRAM_HTML,
        edits=True,
        threads=True,
        reactions=False,
        slash_commands=True,
    )

    def __init__(self, settings: TelegramSettings) -> None:
        if settings.bot_token is None:
            raise ValueError("telegram.bot_token is not set")
        self._settings = settings
        self._token = settings.bot_token.get_secret_value()
        secret = settings.webhook_secret
        self._secret = secret.get_secret_value() if secret is not None else ""
        self._webhook = bool(settings.public_url)
        self._hub: HubPort | None = None
        self._bot: Bot | None = None
        self._outbound: Outbound | None = None
        self._me: Me | None = None
        self._poller: asyncio.Task[None] | None = None
        self._order = asyncio.Lock()  # updates reach the hub one at a time, in order
        # Drafts and "typing…", never a posted preview (adapters/telegram/outbound.py); a
        # preview an earlier version posted is still in the book and edited into its reply.
        self._streamer = EditStreamer(
            NAME, None, None, self.render, MAX_TEXT, ephemeral=self._writing
        )
        self.poll_backoff_s = _BACKOFF_S  # after a failed poll: first delay, cap

    # lifecycle -------------------------------------------------------------------------

    def _new_bot(self) -> Bot:
        base = self._settings.api_url.rstrip("/")
        return Bot(
            self._token,
            base_url=f"{base}/bot",
            base_file_url=f"{base}/file/bot",
            request=HTTPXRequest(connection_pool_size=8, read_timeout=15.0),
            get_updates_request=HTTPXRequest(connection_pool_size=1),
        )

    async def start(self, hub: HubPort) -> None:
        bot = self._new_bot()
        try:
            await bot.initialize()  # getMe
            assert bot.username is not None  # a bot always has one
            await self._announce(bot)
        except InvalidToken as exc:
            await bot.shutdown()
            raise PlatformUnauthorized(f"Telegram refused the bot token: {exc}") from exc
        except TelegramError as exc:
            await bot.shutdown()
            raise PlatformUnavailable(f"Telegram Bot API unreachable: {exc}") from exc
        self._bot, self._hub = bot, hub
        self._me = Me(bot.id, bot.username)
        self._outbound = Outbound(
            bot, Pacer(self._settings.chat_interval_s, self._settings.group_per_minute)
        )
        self._streamer.open(hub)
        if not self._webhook:
            self._poller = asyncio.create_task(self._poll(bot, hub), name="telegram-poll")
        log.info(
            "Telegram bot @%s (%s) receives updates by %s",
            bot.username,
            bot.id,
            "webhook" if self._webhook else "long polling",
        )

    async def _announce(self, bot: Bot) -> None:
        """Register the commands, and the webhook or its absence (polling needs none)."""
        await bot.set_my_commands([BotCommand(name, text) for name, text in commands.MENU])
        if self._webhook:
            url = self._settings.public_url.rstrip("/") + WEBHOOK_PATH
            await bot.set_webhook(
                url, secret_token=self._secret, allowed_updates=list(ALLOWED_UPDATES)
            )
        else:
            await bot.delete_webhook(drop_pending_updates=False)

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        await self._streamer.close()
        if self._bot is not None:
            await self._bot.shutdown()
        self._poller = self._bot = self._outbound = self._hub = None

    # polling ---------------------------------------------------------------------------

    async def _poll(self, bot: Bot, hub: HubPort) -> None:
        """Long-poll while this hub holds the bot's poll: one poller per bot, or Telegram
        answers 409 to both (with several hub workers the hold is a lease, and a new holder
        starts a poll timeout after taking it over: hub/store/connections.py)."""
        hold = hub.connection(f"telegram:{bot.id}", quiet_s=self._settings.poll_timeout_s + 5.0)
        try:
            while True:
                await hold.acquire()
                if not await self._poll_while(bot, hub, hold):
                    return
                log.warning("Telegram: this hub no longer holds the poll of @%s", bot.username)
        finally:
            await hold.release()

    async def _poll_while(self, bot: Bot, hub: HubPort, hold: ConnectionHold) -> bool:
        """Poll until the hold is lost (True: wait for it again) or the token is refused."""
        saved = hub.load_cursor(CURSOR)  # read now: the previous holder may have moved it
        offset = int(saved) if saved and saved.lstrip("-").isdigit() else None
        failures = 0
        while hold.held():
            updates: Sequence[Update | Unreadable]
            try:
                updates = await bot.get_updates(
                    offset=offset,
                    timeout=self._settings.poll_timeout_s,
                    allowed_updates=list(ALLOWED_UPDATES),
                )
            except InvalidToken as exc:
                log.error("Telegram revoked the bot token (%s); polling stops", exc)
                hub.report(NAME, PlatformState.UNAUTHORIZED, str(exc))
                return False
            except RetryAfter as exc:
                await asyncio.sleep(retry_after_s(exc))
                continue
            except TelegramError as exc:
                failures += 1
                await self._poll_failed(hub, exc, failures)
                continue
            except UNREADABLE as exc:  # PTB could not read one of the batch: each on its own
                log.warning("Telegram sent an update PTB cannot read (%r); reading one by one", exc)
                updates = await fetch_one_by_one(bot, offset, list(ALLOWED_UPDATES))
            if failures:
                log.info("Telegram polling is back after %d failed attempts", failures)
                hub.report(NAME, PlatformState.UP)
                failures = 0
            for update in updates:
                if isinstance(update, Unreadable):
                    hub.update_failed(NAME, str(update.update_id), update.error, update.raw)
                    hub.save_cursor(CURSOR, str(update.update_id + 1))
                    offset = update.update_id + 1
                    continue
                try:
                    # Stored by the hub (or kept as failed) before the offset moves on.
                    await self.take(update)
                    hub.save_cursor(CURSOR, str(update.update_id + 1))
                except Exception as exc:
                    # The hub could not take it for now (its database is gone): polling must
                    # not die. Logged, reported, and the same update fetched again.
                    failures += 1
                    log.exception("Telegram update %d was not stored", update.update_id)
                    await self._poll_failed(hub, exc, failures)
                    break
                offset = update.update_id + 1
        return True

    async def _poll_failed(self, hub: HubPort, exc: Exception, failures: int) -> None:
        first, cap = self.poll_backoff_s
        delay = min(cap, first * 2 ** min(failures - 1, 10))
        if isinstance(exc, Conflict):
            reason = (
                "409 Conflict: another program is polling with this bot token (or a webhook "
                "is set); only one may receive its updates"
            )
        elif isinstance(exc, TelegramError):
            reason = f"getUpdates failed: {exc}"
        else:
            reason = f"an update could not be stored: {type(exc).__name__}: {exc}"
        # The hub logs the first report of an outage (one line); repeats are only debug.
        log.debug("Telegram %s (attempt %d); next poll in %.1f s", reason, failures, delay)
        hub.report(NAME, PlatformState.DOWN, reason)
        await asyncio.sleep(delay)

    # inbound ---------------------------------------------------------------------------

    async def take(self, update: Update) -> None:
        """`handle`, but an update the hub cannot handle is kept as failed and skipped
        (hub.adapter.handle_or_keep): only a transient failure raises."""
        if self._hub is None:
            raise RuntimeError("the Telegram adapter is not running")
        await handle_or_keep(
            self._hub, NAME, str(update.update_id), update.to_dict, self.handle(update)
        )

    async def handle(self, update: Update) -> None:
        """One update into the hub; returns once it is stored (or known to be a duplicate)."""
        hub, me, outbound = self._hub, self._me, self._outbound
        if hub is None or me is None or outbound is None:
            raise RuntimeError("the Telegram adapter is not running")
        inbound = to_inbound(update, me, outbound.anima_of)
        if inbound is None:
            return
        async with self._order:
            try:
                receipt = await hub.receive(inbound)
            except MessageTooLarge as exc:
                log.warning("Telegram message %s refused: %s", inbound.event_id, exc)
                await self._tell(inbound, exc.notice)
                return
        if receipt.duplicate:
            log.debug("Telegram message %s seen before", inbound.event_id)
            return
        if inbound.command is not None:
            await self._answer_command(inbound, receipt.reply)
        elif inbound.edit_of is None and not inbound.sender.is_bot:
            self._streamer.follow(receipt.inbox_id, inbound.address, inbound.event_id)

    async def _answer_command(self, inbound: Inbound, reply: str | None) -> None:
        text = commands.answer(inbound, reply)
        if self._outbound is not None:
            await commands.deliver(self._outbound, inbound, to_html(text))

    async def _tell(self, inbound: Inbound, text: str) -> None:
        if self._outbound is None:
            return
        try:
            await self._outbound.post(
                inbound.address, to_html(text), reply_to=to_message_id(inbound.reply_to)
            )
        except PermanentDeliveryError as exc:
            log.warning("could not tell %s: %s", inbound.address, exc)

    def routers(self) -> Sequence[APIRouter]:
        if not self._webhook:
            return []
        return [router(self)]

    def check_secret(self, given: str | None) -> bool:
        return bool(self._secret) and hmac.compare_digest(
            (given or "").encode(), self._secret.encode()
        )

    def parse_update(self, body: bytes) -> Update | None:
        if self._bot is None:
            return None
        try:
            data = json.loads(body)
        except ValueError:
            return None
        malformed = update_problem(data)
        if malformed is not None:
            log.warning("refused a Telegram webhook body: %s", malformed)
            return None
        try:
            return Update.de_json(data, self._bot)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # PTB's parser on an object of the right type but not Telegram's fields
            # (a `from` without `first_name`): not an update either.
            log.warning("refused a Telegram webhook body: %r", exc)
            return None

    @property
    def running(self) -> bool:
        return self._hub is not None

    async def fetch(self, url: str, max_bytes: int) -> FetchedFile:
        """A file someone attached, when an Anima asks for it (files.py)."""
        if self._bot is None:
            raise AttachmentUnavailable("the Telegram adapter is not running")
        return await files.fetch(self._bot, url, max_bytes)

    # outbound --------------------------------------------------------------------------

    def render(self, markdown: str) -> str:
        return to_html(markdown)

    def _out(self) -> Outbound:
        if self._outbound is None:
            raise TransientDeliveryError("the Telegram adapter is not running")
        return self._outbound

    async def send(self, chunk: OutboundChunk) -> str:
        outbound = self._out()
        key = chunk.answers
        if chunk.index == 0 and chunk.kind in _PREVIEWED and key:
            # The preview stays in the book after this edit: a resend edits it again.
            preview = await self._streamer.claim(key, chunk.address)
            if preview is not None:
                message_id = preview.message_id
                try:
                    await outbound.edit(chunk.address, message_id, chunk.text)
                except PermanentDeliveryError as exc:  # deleted meanwhile: post it anew
                    log.warning("preview %s cannot be edited (%s); posting it", message_id, exc)
                    self._streamer.drop(key)
                else:
                    outbound.remember(int(chunk.address.channel), int(message_id), chunk.anima)
                    return message_id
        if chunk.maybe_sent_since is not None:
            # Telegram cannot be asked what a bot posted: sent again, it may show twice.
            log.warning(
                "delivery %s may have been sent before the stop; sending it again",
                chunk.delivery_id,
            )
        reply_to = None
        if chunk.index == 0 and chunk.kind is DeliveryKind.REPLY:
            reply_to = _reference(chunk.address, chunk.reply_to)
        return await outbound.post(chunk.address, chunk.text, reply_to=reply_to, anima=chunk.anima)

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        await self._out().edit(address, message_id, text)

    async def _writing(self, address: Address, key: str, text: str) -> None:
        await self._out().show_writing(address, key, text)


def _reference(address: Address, reply_to: str | None) -> int | None:
    """In groups a reply quotes the message it answers; in a private chat it needs not."""
    if address.kind is AddressKind.DM:
        return None
    return to_message_id(reply_to)
