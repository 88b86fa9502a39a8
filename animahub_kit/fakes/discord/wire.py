"""The HTTP plumbing around every REST call of the fake Discord, and its JSON answers.

Replies carry exactly ``Content-Type: application/json`` (discord.py compares the header
verbatim) and the ``X-RateLimit-*`` headers Discord sends. Every call under ``/api/v10`` is
recorded; one whose token is not a bot's gets 401; an injected 429 also has ``Via`` (without
it discord.py takes a 429 for a Cloudflare ban and gives up at once), ``Retry-After`` and the
JSON body ``{"message", "retry_after", "global"}``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from animahub_kit.fakes.discord.objects import JSON
from animahub_kit.fakes.discord.state import DiscordState, Recorded
from animahub_kit.fakes.faults import RateLimit

API = "/api/v10"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# the parsed JSON body: an object, an array or None (`RequestKey("body", Any)` would give
# mypy a key that no annotated read accepts)
BODY = web.RequestKey[Any]("body")
# the bot user the Authorization header names; unset on the routes that carry their token
# in the URL (interactions, webhooks) when no bot's token came with them
BOT = web.RequestKey("bot", JSON)

_SENDS = frozenset(
    {
        ("POST", API + "/channels/{channel_id}/messages"),
        ("PATCH", API + "/channels/{channel_id}/messages/{message_id}"),
    }
)


def reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response whose Content-Type is exactly `application/json`."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=all_headers)


def error(status: int, message: str, code: int = 0) -> web.Response:
    return reply({"message": message, "code": code}, status)


@dataclass
class _RateLimit:
    times: int
    retry_after: float


class Wire:
    """The middleware every request passes: it records the call, then answers 401, an
    injected 429 or a fault in place of the handler, or adds the bucket headers to its
    answer."""

    def __init__(self, state: DiscordState) -> None:
        self._state = state
        self._rate_limits: dict[tuple[str, str], _RateLimit] = {}

    def rate_limit(self, method: str, route: str, times: int, retry_after: float) -> None:
        """Answer the next `times` calls of a route (e.g. "/channels/{channel_id}/messages")
        with 429 and this retry_after."""
        self._rate_limits[(method, API + route)] = _RateLimit(times, retry_after)

    def requests_to(self, method: str, route: str) -> list[Recorded]:
        return [r for r in self._state.requests if r.method == method and r.route == API + route]

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API):
            return await handler(request)
        route = request.match_info.route.resource
        pattern = route.canonical if route is not None else request.path
        body = await _read_body(request)
        token = request.headers.get("Authorization", "").removeprefix("Bot ") or None
        record = Recorded(request.method, request.path, pattern, 0, body, token)
        self._state.requests.append(record)
        response = await self._guarded(request, handler, pattern, token)
        record.status = response.status
        return response

    async def _guarded(
        self, request: web.Request, handler: Handler, pattern: str, token: str | None
    ) -> web.StreamResponse:
        bots = self._state.bots
        token_in_url = "/interactions/" in pattern or "/webhooks/" in pattern
        if not token_in_url and token not in bots:
            return error(401, "401: Unauthorized", 0)
        bot = bots.get(token or "")
        if bot is not None:
            request[BOT] = bot
        limit = self._rate_limits.get((request.method, pattern))
        if limit is not None and limit.times > 0:
            limit.times -= 1
            return _too_many(limit.retry_after)
        injected = self._injected(request, pattern)
        if injected is not None:
            return injected
        response = await handler(request)
        if isinstance(response, web.Response):
            response.headers.update(_bucket_headers())
        return response

    def _injected(self, request: web.Request, pattern: str) -> web.Response | None:
        """What the fault policy makes of a post or an edit: Discord's 429 (with the
        headers and body discord.py reads) or a 5xx; None to carry it out."""
        faults = self._state.faults
        if faults is None or (request.method, pattern) not in _SENDS:
            return None
        channel = request.match_info.get("channel_id", "")
        route = f"{request.method} {pattern}"
        fault = faults.decide("discord", channel, route, scope=route)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            return _too_many(fault.retry_after or 1.0)
        return error(fault.status, "Service Unavailable" if fault.status == 503 else "Error")


async def _read_body(request: web.Request) -> Any:
    """JSON bodies, and `payload_json` of multipart ones (discord.py sends files that way)."""
    body: Any = None
    if request.content_type == "application/json":
        raw = await request.read()
        body = json.loads(raw) if raw else None
    elif request.content_type.startswith("multipart/"):
        form = await request.post()
        payload = form.get("payload_json")
        body = json.loads(str(payload)) if payload is not None else None
    request[BODY] = body
    return body


def _bucket_headers() -> dict[str, str]:
    return {
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "4",
        "X-RateLimit-Reset": f"{time.time() + 1:.3f}",
        "X-RateLimit-Reset-After": "1.000",
        "X-RateLimit-Bucket": "fake-bucket",
    }


def _too_many(retry_after: float) -> web.Response:
    return reply(
        {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
        429,
        {
            "Retry-After": str(max(1, math.ceil(retry_after))),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
            "X-RateLimit-Reset-After": f"{retry_after:.3f}",
            "X-RateLimit-Bucket": "fake-bucket",
            "X-RateLimit-Scope": "user",
            "Via": "1.1 google",
        },
    )
