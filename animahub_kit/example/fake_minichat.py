"""A local fake of Minichat that the Minichat adapter's real HTTP client talks to.

It runs in the test's event loop (aiohttp.web on 127.0.0.1, `animahub_kit.fakes.listener`)
and keeps what a test reads back: every request (`calls`) and every message the bot posted
(`messages`). The people's side: `deliver` POSTs a signed event to the hub's webhook, as
Minichat does, `redeliver` sends one again, `forged` sends one with a wrong signature.
Faults: `rate_limit` (429 with Retry-After), a wrong token (401), and
`drop_next_send_response` (the next post is carried out, then the connection is closed
unanswered). Built with a fixed `port`, it can start after the hub (the platform down).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
from dataclasses import dataclass
from typing import Any

import httpx
from aiohttp import web

from animahub_kit.fakes.listener import Listener, Served


def signature(secret: str, body: bytes) -> str:
    """Minichat's signature of a webhook body, written from its docs, not from the adapter's
    code: a mistake there is not repeated here."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    channel: str
    text: str


class FakeMinichat(Served):
    def __init__(self, *, token: str, signing_secret: str, bot_id: str, port: int = 0) -> None:
        self.token = token
        self.signing_secret = signing_secret
        self.bot_id = bot_id
        self.events_url: str | None = None  # the hub's webhook, once it listens
        self.calls: list[str] = []  # "GET /me", "POST /messages"
        self.messages: list[Message] = []
        self._events: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._rate_limited: list[float] = []  # a retry-after for each post still refused
        self._drop_next = False
        self._listener = Listener(port)

    async def start(self) -> FakeMinichat:
        app = web.Application()
        app.router.add_get("/me", self._me)
        app.router.add_post("/messages", self._post)
        await self._listener.serve(app)
        return self

    async def stop(self) -> None:
        await self._listener.close()

    # the bot's side ------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.token}"

    async def _me(self, request: web.Request) -> web.Response:
        self.calls.append("GET /me")
        if not self._authorized(request):
            return web.json_response({"error": "invalid token"}, status=401)
        return web.json_response({"id": self.bot_id})

    async def _post(self, request: web.Request) -> web.Response:
        self.calls.append("POST /messages")
        if not self._authorized(request):
            return web.json_response({"error": "invalid token"}, status=401)
        if self._rate_limited:
            retry_after = self._rate_limited.pop(0)
            headers = {"Retry-After": f"{retry_after:g}"}
            return web.json_response({"error": "rate limited"}, status=429, headers=headers)
        body = await request.json()
        if len(body["text"]) > 2000:
            return web.json_response({"error": "text too long"}, status=400)
        message = Message(f"M{next(self._ids)}", str(body["channel"]), str(body["text"]))
        self.messages.append(message)
        if self._drop_next:  # posted; the answer never reaches the bot
            self._drop_next = False
            if request.transport is not None:
                request.transport.close()
            await asyncio.sleep(0.05)
        return web.json_response({"id": message.id})

    def rate_limit(self, times: int, retry_after: float) -> None:
        self._rate_limited.extend([retry_after] * times)

    def drop_next_send_response(self) -> None:
        self._drop_next = True

    # the people's side ---------------------------------------------------------------------

    def message_event(
        self, user: str, channel: str, text: str, *, dm: bool = False, mention: bool = False
    ) -> dict[str, Any]:
        number = next(self._ids)
        return {
            "id": f"E{number}",
            "channel": {"id": channel, "dm": dm},
            "user": {"id": user, "name": user.title()},
            "message": {"id": f"M{number}", "text": text, "mentions_bot": mention},
        }

    async def deliver(self, event: dict[str, Any]) -> int:
        """POST a signed event to the hub's webhook; the status it answered."""
        self._events[event["id"]] = event
        body = json.dumps(event).encode()
        return await self._post_webhook(body, signature(self.signing_secret, body))

    async def redeliver(self, event_id: str) -> int:
        return await self.deliver(self._events[event_id])

    async def forged(self, event: dict[str, Any]) -> int:
        body = json.dumps(event).encode()
        return await self._post_webhook(body, signature("not-the-secret", body))

    async def _post_webhook(self, body: bytes, signed: str) -> int:
        assert self.events_url is not None, "events_url is not set"
        headers = {"Content-Type": "application/json", "X-Minichat-Signature": signed}
        async with httpx.AsyncClient() as http:
            response = await http.post(self.events_url, content=body, headers=headers)
        return response.status_code
