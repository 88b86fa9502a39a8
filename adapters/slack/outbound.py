"""Posting and editing through the Web API, as the right bot.

One shared bot answers for every Anima; an Anima with a token of its own (a Slack app each,
`slack.anima_tokens`) posts as itself. The shared bot signs a message with the Anima's name
(`username`) when its token has `chat:write.customize`, which `auth.test` reports in the
`X-OAuth-Scopes` header. A message can only be edited by the bot that posted it, so the
author of every message posted in this process is remembered for `chat.update`.

Every post can carry a marker in its message metadata (`animahub_post`, a hash of the key it
was posted under): Slack has no idempotency key, so a post whose answer a kill or a dropped
connection lost is found again by reading the conversation with its metadata (`find`).
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.previews import ChannelGate
from adapters.slack.errors import call
from adapters.slack.normalize import Bot, Bots
from hub.adapter import DeliveryError, PermanentDeliveryError
from hub.messages import Address

log = logging.getLogger(__name__)
CUSTOMIZE_SCOPE = "chat:write.customize"
_REMEMBERED = 5_000
MARK_EVENT = "animahub_post"
_SKEW_S = 60.0  # how far Slack's clock may be behind ours when we look for a post
_PAGES = 5  # of 200 messages: more than a conversation gets while a hub restarts


def web_client(token: str | None, api_url: str) -> AsyncWebClient:
    """A Web API client that never retries by itself: the outbox owns retries and must see
    every 429 (the SDK's default handlers would also resend after a dropped connection,
    which can post a message twice)."""
    base = api_url if api_url.endswith("/") else api_url + "/"
    return AsyncWebClient(token=token, base_url=base, retry_handlers=[])


def _scopes(headers: Mapping[str, Any]) -> set[str]:
    for name, value in headers.items():
        if name.lower() == "x-oauth-scopes":
            return {s.strip() for s in str(value).split(",") if s.strip()}
    return set()


@dataclass(frozen=True, slots=True)
class Author:
    anima: str | None  # whose token posted it; None: the shared bot
    client: AsyncWebClient


class Outbound:
    def __init__(self, shared: AsyncWebClient, own: Mapping[str, AsyncWebClient]) -> None:
        self.shared = shared
        self._own = dict(own)
        self._customize = False
        self._authors: OrderedDict[str, Author] = OrderedDict()
        self._gate = ChannelGate()  # a 429 on any send holds the channel's sends
        self.bots = Bots()
        self.team_id = ""

    async def identify(self) -> None:
        """Learn who our bots are (`auth.test` for every token). A bad shared token stops
        the start with Slack's error; a bad Anima token is logged and that Anima is then
        answered by the shared bot."""
        response = await call("auth.test", self.shared.auth_test())
        self.team_id = str(response.get("team_id") or "")
        self.bots.add(Bot(str(response["user_id"]), str(response.get("bot_id") or "")))
        self._customize = CUSTOMIZE_SCOPE in _scopes(response.headers)
        if self._own and not self._customize:
            log.info(
                "the shared Slack bot lacks %s: its replies carry no Anima name", CUSTOMIZE_SCOPE
            )
        for anima, client in list(self._own.items()):
            try:
                own = await call("auth.test", client.auth_test())
            except DeliveryError as exc:
                log.error(
                    "the Slack token of Anima %s does not work (%s); the shared bot answers for it",
                    anima,
                    exc,
                )
                del self._own[anima]
                continue
            self.bots.add(Bot(str(own["user_id"]), str(own.get("bot_id") or ""), anima))

    def _author(self, anima: str | None) -> tuple[Author, str | None]:
        """Who posts for `anima`, and the username the shared bot signs with."""
        if anima and anima in self._own:
            return Author(anima, self._own[anima]), None
        return Author(None, self.shared), (anima if anima and self._customize else None)

    async def post(
        self, address: Address, text: str, anima: str | None, marker: str | None = None
    ) -> str:
        """Post as the Anima's bot; with a `marker`, `find` can find the post again."""
        author, username = self._author(anima)
        request: dict[str, Any] = {"channel": address.channel, "text": text}
        if address.thread:
            request["thread_ts"] = address.thread
        if username:
            request["username"] = username
        if marker:
            request["metadata"] = {
                "event_type": MARK_EVENT,
                "event_payload": {"key": _mark(marker)},
            }
        response = await self._gate.send(
            address.channel,
            lambda: call(
                "chat.postMessage", author.client.chat_postMessage(**request), idempotent=False
            ),
        )
        ts = str(response["ts"])
        self._authors[ts] = author
        while len(self._authors) > _REMEMBERED:
            self._authors.popitem(last=False)
        return ts

    async def update(self, address: Address, ts: str, text: str, anima: str | None = None) -> None:
        """Edit one of our messages with the bot that posted it: remembered, or after a
        restart the bot of `anima` (who wrote it)."""
        author = self._authors.get(ts) or self._author(anima)[0]
        await self._gate.send(
            address.channel,
            lambda: call(
                "chat.update", author.client.chat_update(channel=address.channel, ts=ts, text=text)
            ),
        )

    async def find(
        self, address: Address, marker: str, since: float, anima: str | None
    ) -> str | None:
        """The ts of our post carrying `marker` made after `since` (epoch seconds), or None.

        A transient failure raises (the outbox tries the send again later); a permanent one
        (no history scope, say) is logged and answers None: the caller posts anew."""
        author = self._author(anima)[0]
        wanted = _mark(marker)
        request: dict[str, Any] = {
            "channel": address.channel,
            "oldest": f"{max(0.0, since - _SKEW_S):.6f}",
            "include_all_metadata": True,
            "limit": 200,
        }
        try:
            for _ in range(_PAGES):
                if address.thread:
                    method = "conversations.replies"
                    pending = author.client.conversations_replies(ts=address.thread, **request)
                else:
                    method = "conversations.history"
                    pending = author.client.conversations_history(**request)
                response = await call(method, pending)
                for message in response.get("messages") or []:
                    metadata = message.get("metadata") or {}
                    payload = metadata.get("event_payload") or {}
                    if metadata.get("event_type") == MARK_EVENT and payload.get("key") == wanted:
                        return str(message["ts"])
                cursor = (response.get("response_metadata") or {}).get("next_cursor")
                if not response.get("has_more") or not cursor:
                    return None
                request["cursor"] = cursor
        except PermanentDeliveryError as exc:
            log.warning("cannot look for a lost post in %s (%s): it may show twice", address, exc)
        return None

    async def ephemeral(self, address: Address, user: str, text: str) -> None:
        """A note only `user` sees (a rejected message); best effort, errors are logged."""
        try:
            await call(
                "chat.postEphemeral",
                self.shared.chat_postEphemeral(
                    channel=address.channel, user=user, text=text, thread_ts=address.thread
                ),
            )
        except DeliveryError as exc:
            log.warning("could not tell %s in %s: %s", user, address, exc)


def _mark(key: str) -> str:
    """What a post carries of its key: opaque, since other apps may read metadata."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]
