"""Posting and editing through the Bot API (python-telegram-bot), paced and with errors in
the outbox's vocabulary (hub/adapter.py).

* HTML first; when Telegram rejects the entities (400 "can't parse entities") the same
  chunk is sent again as plain text (its visible text, no parse_mode), so a rendering slip
  costs formatting, never the message.
* 429 gives `RateLimited(parameters.retry_after)`, and that chat is held until then: the
  next send to it waits without asking Telegram again. Other chats are not held.
* Pacing of our own messages (Telegram allows about one message a second per chat and 20 a
  minute per group): a short wait is slept here, a longer one is `RateLimited`, so the
  outbox reschedules instead of holding its sender.
* Errors: 400/403 (chat gone, bot blocked or removed, message rejected) are permanent; a
  network error before anything was sent (connect) is transient; a read timeout or a
  connection dropped after the request went out is `OutcomeUnknown`: the message may exist,
  and Telegram has no idempotency key, so it is not sent again.
* A reply being written is shown without posting anything (`show_writing`): as a draft in a
  private chat (`sendMessageDraft`), as "typing…" in a group. A posted preview could not be
  found again after a kill (Telegram has no way to list a bot's messages), so it could be
  left beside the reply; a draft cannot.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import time
import warnings
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from telegram import Bot, LinkPreviewOptions, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

from adapters.previews import ChannelGate
from adapters.telegram.render import balance, to_plain
from hub.adapter import (
    DeliveryError,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)
from hub.messages import Address, AddressKind

log = logging.getLogger(__name__)
T = TypeVar("T")
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_UNPARSEABLE = "can't parse entities"
_NOT_MODIFIED = "message is not modified"
_SLEEP_AT_MOST_S = 1.5
_REMEMBERED = 10_000
_TYPING_EVERY_S = 4.0  # Telegram shows "typing…" for 5 s


def retry_after_s(exc: RetryAfter) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)


def delivery_error(method: str, exc: TelegramError) -> DeliveryError:
    """A Bot API failure as the outbox sees it."""
    if isinstance(exc, RetryAfter):
        return RateLimited(retry_after_s(exc), f"{method}: {exc}")
    if isinstance(exc, BadRequest | Forbidden | InvalidToken | ChatMigrated):
        return PermanentDeliveryError(f"{method}: {exc}")
    if isinstance(exc, TimedOut | NetworkError):
        if isinstance(exc.__cause__, _NOT_SENT):
            return TransientDeliveryError(f"{method}: {exc} (nothing was sent)")
        if isinstance(exc, TimedOut) or isinstance(exc.__cause__, httpx.TransportError):
            return OutcomeUnknown(f"{method}: no answer from Telegram ({exc}); not resent")
        return TransientDeliveryError(f"{method}: {exc}")  # a 5xx answer: nothing was done
    return TransientDeliveryError(f"{method}: {exc}")


class Pacer:
    """When the next message to a chat may go: Telegram's flood limits, and its 429s."""

    def __init__(self, chat_interval_s: float, group_per_minute: int) -> None:
        self._interval = chat_interval_s
        self._per_minute = max(1, group_per_minute)
        self._last: dict[str, float] = {}
        self._minute: dict[str, deque[float]] = {}
        self._held: dict[str, float] = {}  # chat -> until (a 429 for it)

    def wait_s(self, chat: str, group: bool) -> float:
        now = time.monotonic()
        wait = max(0.0, self._held.get(chat, 0.0) - now)
        wait = max(wait, self._last.get(chat, -1e9) + self._interval - now)
        if group:
            window = self._minute.setdefault(chat, deque())
            while window and window[0] <= now - 60.0:
                window.popleft()
            if len(window) >= self._per_minute:
                wait = max(wait, window[0] + 60.0 - now)
        return wait

    def sent(self, chat: str, group: bool) -> None:
        now = time.monotonic()
        self._last[chat] = now
        if group:
            self._minute.setdefault(chat, deque()).append(now)

    def hold(self, chat: str, seconds: float) -> None:
        self._held[chat] = max(self._held.get(chat, 0.0), time.monotonic() + seconds)


class Outbound:
    def __init__(self, bot: Bot, pacer: Pacer) -> None:
        self.bot = bot
        self._pacer = pacer
        self._written: OrderedDict[tuple[int, int], str] = OrderedDict()  # our msg -> Anima
        self._gate = ChannelGate()  # one send to a chat at a time, so the pacer sees each
        self._typing: dict[str, float] = {}  # chat -> when "typing…" was last sent

    def anima_of(self, chat_id: int, message_id: int) -> str | None:
        return self._written.get((chat_id, message_id))

    def remember(self, chat_id: int, message_id: int, anima: str | None) -> None:
        """Note which Anima wrote one of our messages (a reply to it goes to that Anima)."""
        if anima:
            self._written[(chat_id, message_id)] = anima
            while len(self._written) > _REMEMBERED:
                self._written.popitem(last=False)

    async def _paced(self, address: Address, call: Callable[[], Awaitable[T]]) -> T:
        return await self._gate.send(address.channel, lambda: self._paced_now(address, call))

    async def _paced_now(self, address: Address, call: Callable[[], Awaitable[T]]) -> T:
        group = address.kind is not AddressKind.DM
        wait = self._pacer.wait_s(address.channel, group)
        if wait > _SLEEP_AT_MOST_S:
            raise RateLimited(wait, f"pacing messages to Telegram chat {address.channel}")
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            result = await call()
        except RetryAfter as exc:
            self._pacer.hold(address.channel, retry_after_s(exc))
            raise
        self._pacer.sent(address.channel, group)
        return result

    async def post(
        self,
        address: Address,
        html: str,
        *,
        reply_to: int | None = None,
        anima: str | None = None,
        thread: bool = True,
    ) -> str:
        """Send one message (HTML, or its plain text if Telegram refuses the HTML) to the
        address's chat and topic; its message id."""
        chat_id = chat_of(address)
        kwargs: dict[str, Any] = {"link_preview_options": LinkPreviewOptions(is_disabled=True)}
        if thread and address.thread:
            kwargs["message_thread_id"] = int(address.thread)
        if reply_to is not None:
            kwargs["reply_parameters"] = ReplyParameters(reply_to, allow_sending_without_reply=True)

        async def send(text: str, mode: str | None) -> Message:
            return await self.bot.send_message(chat_id, text, parse_mode=mode, **kwargs)

        message = await self._with_fallback(address, "sendMessage", html, send)
        self.remember(chat_id, message.message_id, anima)
        return str(message.message_id)

    async def show_writing(self, address: Address, key: str, html: str) -> None:
        """Show a reply being written: a draft of it in a private chat, "typing…" in a group."""
        chat_id = chat_of(address)
        thread = int(address.thread) if address.thread else None
        if address.kind is not AddressKind.DM:
            now = time.monotonic()
            if now - self._typing.get(address.channel, -_TYPING_EVERY_S) < _TYPING_EVERY_S:
                return
            self._typing[address.channel] = now
            try:
                await self.bot.send_chat_action(
                    chat_id, ChatAction.TYPING, message_thread_id=thread
                )
            except TelegramError as exc:
                raise delivery_error("sendChatAction", exc) from exc
            return
        draft_id = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4]) & 0x7FFFFFFF or 1

        async def draft(text: str, mode: str | None) -> bool:
            return await self.bot.send_message_draft(
                chat_id, draft_id, text, message_thread_id=thread, parse_mode=mode
            )

        await self._with_fallback(address, "sendMessageDraft", html, draft)

    async def edit(self, address: Address, message_id: str, html: str) -> None:
        chat_id = chat_of(address)

        async def edit(text: str, mode: str | None) -> bool:
            await self.bot.edit_message_text(
                text,
                chat_id=chat_id,
                message_id=int(message_id),
                parse_mode=mode,
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
            return True

        try:
            await self._with_fallback(address, "editMessageText", html, edit)
        except PermanentDeliveryError as exc:
            if _NOT_MODIFIED not in str(exc).lower():
                raise  # the same text again is not a failure

    async def _with_fallback(
        self,
        address: Address,
        method: str,
        html: str,
        call: Callable[[str, str | None], Awaitable[T]],
    ) -> T:
        text = balance(html)
        try:
            try:
                return await self._paced(address, lambda: call(text, ParseMode.HTML))
            except BadRequest as exc:
                if _UNPARSEABLE not in str(exc).lower():
                    raise
                log.warning("Telegram refused our HTML (%s); sending it as plain text", exc)
                return await self._paced(address, lambda: call(to_plain(text), None))
        except TelegramError as exc:
            raise delivery_error(method, exc) from exc


def chat_of(address: Address) -> int:
    """The chat id of an address; one that is not a number can never be sent to."""
    try:
        return int(address.channel)
    except ValueError:
        raise PermanentDeliveryError(f"{address.channel!r} is not a Telegram chat id") from None
