"""The Messaging API through line-bot-sdk's asyncio client, failures translated into the
outbox's vocabulary (hub/adapter.py).

* 429 is `RateLimited` (LINE sends no Retry-After; one second unless it does), except the
  monthly quota ("You have reached your monthly limit."), which no wait fixes before the
  month turns: `PermanentDeliveryError`, so the delivery is `failed` and visible.
* 401 and 403 (the token revoked, the bot blocked or removed) and other 4xx are permanent.
* A 5xx to a reply is `ReplyUnanswered`: LINE says the message may have been delivered, and
  replies take no retry key; the adapter tries the same reply token again (adapter.py),
  which LINE carries out at most once. A reply whose answer never came (a dropped
  connection, a read timeout) is `OutcomeUnknown`. A push can always be repeated: it
  carries `X-Line-Retry-Key`, LINE executes a key once and answers a repeat 409, which is
  read as "already sent". So a push without an answer is a `TransientDeliveryError` that the
  outbox retries with the same key.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import aiohttp
from linebot.v3.messaging import (
    ApiException,
    AsyncApiClient,
    AsyncMessagingApi,
    Configuration,
    PushMessageRequest,
    ReplyMessageRequest,
    ShowLoadingAnimationRequest,
    TextMessage,
)

from hub.adapter import (
    DeliveryError,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)

log = logging.getLogger(__name__)
QUOTA_TEXT = "monthly limit"
DEFAULT_RETRY_AFTER_S = 1.0
REQUEST_TIMEOUT_S = 20.0
LOOKUP_TIMEOUT_S = 3.0  # profile lookups and the loading animation, on the webhook's path


class ReplyTokenInvalid(DeliveryError):
    """LINE refused the reply token (used, expired, or not for this chat): nothing was sent."""


class ReplyUnanswered(DeliveryError):
    """LINE answered a reply with a 5xx: it may or may not have been delivered."""


class NothingSent(DeliveryError):
    """The request did not reach LINE (a refused connection): sending again is safe."""


def _body(exc: ApiException) -> dict[str, Any]:
    raw = exc.body
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {"message": str(raw)}
    return data if isinstance(data, dict) else {}


def _header(exc: ApiException, name: str) -> str | None:
    headers = exc.headers or {}
    for key, value in headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _retry_after(exc: ApiException) -> float:
    value = _header(exc, "Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else DEFAULT_RETRY_AFTER_S
    except ValueError:
        return DEFAULT_RETRY_AFTER_S


def api_error(what: str, exc: ApiException) -> DeliveryError:
    """An HTTP error answer of LINE as the outbox's DeliveryError."""
    status = int(exc.status or 0)
    message = str(_body(exc).get("message") or exc.reason or "")
    detail = f"LINE {what}: {status} {message}".strip()
    if status == 429:
        if QUOTA_TEXT in message.lower():
            return PermanentDeliveryError(f"{detail} (the channel's monthly message quota)")
        return RateLimited(_retry_after(exc), detail)
    if status == 400 and "reply token" in message.lower():
        return ReplyTokenInvalid(detail)
    if status >= 500:
        return TransientDeliveryError(detail)
    return PermanentDeliveryError(detail)


def _sent_ids(data: Any, count: int, fallback: str) -> list[str]:
    sent = getattr(data, "sent_messages", None) or []
    ids = [str(getattr(m, "id", "") or "") for m in sent]
    if len(ids) == count and all(ids):
        return ids
    return [f"{fallback}:{i}" for i in range(count)]


def _messages(texts: Sequence[str]) -> list[TextMessage]:
    return [TextMessage(text=text) for text in texts]


class Outbound:
    """One channel's Messaging API client, opened by `open` in the running loop."""

    def __init__(self, access_token: str, api_url: str) -> None:
        self._config = Configuration(host=api_url.rstrip("/"), access_token=access_token)
        self._client: AsyncApiClient | None = None
        self._api: AsyncMessagingApi | None = None

    def open(self) -> None:
        if self._client is None:
            self._client = AsyncApiClient(self._config)
            self._api = AsyncMessagingApi(self._client)

    async def close(self) -> None:
        client, self._client, self._api = self._client, None, None
        if client is not None:
            await client.close()

    @property
    def api(self) -> AsyncMessagingApi:
        if self._api is None:
            raise TransientDeliveryError("the LINE client is not open (the adapter is stopped)")
        return self._api

    async def bot_user_id(self) -> str:
        """`GET /v2/bot/info`; raises what the SDK raises (the adapter's start translates)."""
        info = await self.api.get_bot_info(_request_timeout=REQUEST_TIMEOUT_S)
        return str(info.user_id)

    async def reply(self, token: str, texts: Sequence[str]) -> list[str]:
        """Up to five messages on one reply token (free of quota)."""
        request = ReplyMessageRequest(replyToken=token, messages=_messages(texts))
        try:
            data = await self.api.reply_message(request, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as exc:
            error = api_error("reply", exc)
            if isinstance(error, TransientDeliveryError):  # a 5xx: it may have been sent
                raise ReplyUnanswered(f"{error}; the reply may have been delivered") from exc
            raise error from exc
        except aiohttp.ClientConnectorError as exc:
            raise NothingSent(f"LINE reply: cannot connect: {exc}") from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise OutcomeUnknown(
                f"LINE reply: no answer ({type(exc).__name__}: {exc}); it may have been delivered"
            ) from exc
        return _sent_ids(data, len(texts), f"reply:{token}")

    async def push(self, to: str, texts: Sequence[str], retry_key: str) -> list[str]:
        """Up to five messages to a user, group or room (each push counts against the
        channel's monthly quota); a repeat of an accepted `retry_key` sends nothing."""
        request = PushMessageRequest(to=to, messages=_messages(texts))
        try:
            data = await self.api.push_message(
                request, x_line_retry_key=retry_key, _request_timeout=REQUEST_TIMEOUT_S
            )
        except ApiException as exc:
            if exc.status == 409:  # this retry key was accepted before: already sent
                log.info("LINE push %s was accepted before; not sent again", retry_key)
                return _accepted_ids(exc, len(texts), retry_key)
            raise api_error("push", exc) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TransientDeliveryError(
                f"LINE push: {type(exc).__name__}: {exc} (retried with the same retry key)"
            ) from exc
        return _sent_ids(data, len(texts), f"push:{retry_key}")

    async def display_name(self, kind: str, chat: str, user: str) -> str:
        """The user's display name: from the group's or room's member profile in a group or
        room (works without friendship), else the user profile. Raises the SDK's errors."""
        api, timeout = self.api, LOOKUP_TIMEOUT_S
        if kind == "group":
            profile: Any = await api.get_group_member_profile(chat, user, _request_timeout=timeout)
        elif kind == "room":
            profile = await api.get_room_member_profile(chat, user, _request_timeout=timeout)
        else:
            profile = await api.get_profile(user, _request_timeout=timeout)
        return str(profile.display_name or "")

    async def show_loading(self, user: str, seconds: int) -> None:
        """The typing-style animation in a 1:1 chat; it ends when the bot's message arrives."""
        request = ShowLoadingAnimationRequest(chatId=user, loadingSeconds=seconds)
        await self.api.show_loading_animation(request, _request_timeout=LOOKUP_TIMEOUT_S)


def _accepted_ids(exc: ApiException, count: int, retry_key: str) -> list[str]:
    sent = _body(exc).get("sentMessages") or []
    ids = [str(m.get("id") or "") for m in sent if isinstance(m, dict)]
    if len(ids) == count and all(ids):
        return ids
    request_id = _header(exc, "X-Line-Accepted-Request-Id") or retry_key
    return [f"accepted:{request_id}:{i}" for i in range(count)]
