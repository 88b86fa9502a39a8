"""Posting and editing over Discord's REST API through discord.py's HTTPClient, per bot token.

Rate limits: discord.py paces requests by the `X-RateLimit-*` buckets and, on a 429, sleeps
`retry_after` and tries again (up to five tries) inside the one call. A 429 creates no
message, so those short in-call retries can neither lose nor double one. Everything beyond
that belongs to the outbox: with `max_ratelimit_timeout` discord.py raises `RateLimited`
instead of sleeping longer than `SDK_WAIT_LIMIT_S` (its documented floor, 30 s), and when
it gives up after five 429s it raises `HTTPException(429)`; both become the hub's
`RateLimited(retry_after)`, so the delivery is stored with its retry time and resent later.

Every post carries a nonce derived from the chunk's idempotency key with `enforce_nonce`:
Discord answers a repeated post (after a timeout, a 5xx retry or an outbox retry) with the
message it already created instead of a second one. Discord checks nonces for the past few
minutes only, so a post that was written but never answered (the connection dropped, the
answer was cut off or late) is asked again here at once, with the same nonce, to learn the
message id; when those tries get no answer either, the post is `OutcomeUnknown` and the
outbox does not send it again minutes later, when the nonce no longer protects it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp
import discord
from discord.http import HTTPClient, handle_message_parameters

from hub.adapter import (
    DeliveryError,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)

log = logging.getLogger(__name__)

SDK_WAIT_LIMIT_S = 30.0  # discord.py's minimum for max_ratelimit_timeout
_NONCE_CHARS = 25  # Discord's limit for a string nonce
# Replies may ping the person they answer; text an Anima writes never pings anyone else.
REPLY_MENTIONS = discord.AllowedMentions(
    everyone=False, users=False, roles=False, replied_user=True
)
SDK_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError, asyncio.TimeoutError)
# Raised while connecting: the request never left, so nothing can have been created.
_UNSENT = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
UNANSWERED_TRIES = 3  # a post whose answer was lost: asked again with its nonce this often
UNANSWERED_PAUSE_S = 0.5


@dataclass(frozen=True, slots=True)
class RestBot:
    """One bot identity on the REST API: its HTTP client and its user."""

    http: HTTPClient
    user_id: int
    name: str


async def login(token: str, label: str) -> RestBot:
    """A REST-only client for a bot token (no gateway connection): `GET /users/@me`."""
    http = HTTPClient(asyncio.get_running_loop(), max_ratelimit_timeout=SDK_WAIT_LIMIT_S)
    try:
        data = await http.static_login(token)
    except discord.LoginFailure as exc:
        await http.close()
        raise RuntimeError(f"Discord rejected the bot token of {label}: {exc}") from exc
    except SDK_ERRORS:
        await http.close()
        raise
    return RestBot(http, int(data["id"]), str(data["username"]))


def nonce_for(key: str) -> str:
    """A nonce that is the same for every attempt to send the same chunk."""
    return hashlib.sha256(key.encode()).hexdigest()[:_NONCE_CHARS]


@dataclass(frozen=True, slots=True)
class Posted:
    """What Discord answered a post with: the message's id and text (with a nonce it had
    seen, the message created before, whatever its text)."""

    id: str
    text: str


async def post(
    bot: RestBot, channel_id: int, text: str, *, reply_to: int | None, nonce: str | None
) -> Posted:
    """Post a message; with `reply_to`, as a reply to that message."""
    reference: Any = discord.utils.MISSING
    if reply_to is not None:
        reference = discord.MessageReference(
            message_id=reply_to, channel_id=channel_id, fail_if_not_exists=False
        ).to_message_reference_dict()
    params = handle_message_parameters(
        content=text, nonce=nonce, allowed_mentions=REPLY_MENTIONS, message_reference=reference
    )
    lost: BaseException | None = None  # an earlier try that may have created the message
    for attempt in range(UNANSWERED_TRIES if nonce is not None else 1):
        if attempt:
            await asyncio.sleep(UNANSWERED_PAUSE_S)
        try:
            data = await bot.http.send_message(channel_id, params=params)
        except SDK_ERRORS as exc:
            if lost is None and not unanswered(exc):
                raise delivery_error(exc) from exc
            lost = lost or exc
            log.warning("a Discord post to %s got no answer: %r", channel_id, exc)
            continue
        # After a lost answer (or a nonce seen before): the message the nonce found.
        return Posted(str(data["id"]), str(data.get("content") or ""))
    raise OutcomeUnknown(
        f"Discord may have posted it: {type(lost).__name__}: {lost}; not sent again"
    ) from lost


async def edit(bot: RestBot, channel_id: int, message_id: int, text: str) -> None:
    params = handle_message_parameters(content=text, allowed_mentions=REPLY_MENTIONS)
    try:
        await bot.http.edit_message(channel_id, message_id, params=params)
    except SDK_ERRORS as exc:
        raise delivery_error(exc) from exc


def unanswered(exc: BaseException) -> bool:
    """Whether the request was written but no answer came (the connection dropped, the
    answer was cut off, a read timed out): Discord may have carried it out."""
    if isinstance(exc, (discord.DiscordException, *_UNSENT)):
        return False
    return isinstance(exc, (aiohttp.ClientError, OSError, asyncio.TimeoutError))


def delivery_error(exc: BaseException) -> DeliveryError:
    """Map what discord.py raised to what the outbox decides by."""
    if isinstance(exc, discord.RateLimited):
        return RateLimited(exc.retry_after, f"Discord rate limit: retry in {exc.retry_after:.1f}s")
    if isinstance(exc, discord.HTTPException):
        if exc.status == 429:
            return RateLimited(_retry_after(exc), f"Discord rate limit: {exc.text or exc}")
        detail = f"Discord answered {exc.status} (code {exc.code}): {exc.text}"
        if exc.status >= 500 or exc.status == 408:
            return TransientDeliveryError(detail)
        return PermanentDeliveryError(detail)  # 400 (50035 invalid form), 401, 403, 404
    if isinstance(exc, discord.DiscordException):
        return PermanentDeliveryError(f"{type(exc).__name__}: {exc}")
    return TransientDeliveryError(f"{type(exc).__name__}: {exc}")  # network, timeout


def _retry_after(exc: discord.HTTPException) -> float:
    """Seconds to wait, from a 429 discord.py gave up on (the body is not kept on the
    exception; the headers are). `X-RateLimit-Reset-After` has decimals, `Retry-After` not."""
    headers = exc.response.headers if exc.response is not None else {}
    for name in ("X-RateLimit-Reset-After", "Retry-After"):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value))
            except ValueError:
                log.warning("unreadable %s header on a Discord 429: %r", name, value)
    return 1.0
