"""`POST /discord/interactions`: Discord's optional HTTP interactions endpoint.

When an application has an "Interactions Endpoint URL", Discord sends slash commands there
instead of over the gateway, each signed with Ed25519: `X-Signature-Ed25519` over
`X-Signature-Timestamp + body`, checked against the application's public key. A request
with a bad signature, or a timestamp more than five minutes away (a replay), is refused
with 401 before anything is read or stored. Discord checks that the endpoint does this
when the URL is saved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from adapters.discord.commands import EPHEMERAL
from hub.messages import Inbound

log = logging.getLogger(__name__)

PATH = "/discord/interactions"
MAX_AGE_S = 300.0
PING, APPLICATION_COMMAND = 1, 2
PONG, CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE = 1, 4, 5

Parse = Callable[[Mapping[str, Any]], Inbound]  # raises KeyError/TypeError/ValueError
Answer = Callable[[Inbound], Awaitable[str]]  # the command's reply text
FollowUp = Callable[[Mapping[str, Any], str], Awaitable[None]]  # a late reply


class SignatureError(ValueError):
    pass


class InteractionsEndpoint:
    def __init__(
        self,
        public_key: str,
        parse: Parse,
        answer: Answer,
        follow_up: FollowUp,
        *,
        defer_after_s: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = VerifyKey(bytes.fromhex(public_key))
        self._parse = parse
        self._answer = answer
        self._follow_up = follow_up
        self.defer_after_s = defer_after_s  # Discord waits 3 s for the first response
        self._clock = clock
        self._late: set[asyncio.Task[None]] = set()

    def router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_route(PATH, self.handle, methods=["POST"], include_in_schema=False)
        return router

    def verify(self, signature: str, timestamp: str, body: bytes) -> None:
        try:
            sent_at = int(timestamp)  # Discord sends whole seconds
            self._key.verify(timestamp.encode() + body, bytes.fromhex(signature))
        except (ValueError, BadSignatureError) as exc:
            raise SignatureError("invalid request signature") from exc
        if abs(self._clock() - sent_at) > MAX_AGE_S:
            raise SignatureError("request timestamp is more than five minutes old")

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        try:
            self.verify(
                request.headers.get("X-Signature-Ed25519", ""),
                request.headers.get("X-Signature-Timestamp", ""),
                body,
            )
        except SignatureError as exc:
            log.warning("refused a Discord interaction from %s: %s", _peer(request), exc)
            return JSONResponse({"detail": str(exc)}, status_code=401)
        try:
            payload = json.loads(body)
            kind = payload["type"]
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"detail": "malformed interaction"}, status_code=400)
        if kind == PING:
            return JSONResponse({"type": PONG})
        if kind != APPLICATION_COMMAND:
            return JSONResponse({"detail": f"unsupported interaction type {kind}"}, 400)
        return await self._command(payload)

    async def _command(self, payload: Mapping[str, Any]) -> Response:
        try:
            inbound = self._parse(payload)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("malformed Discord interaction: %r", exc)
            return JSONResponse({"detail": "malformed interaction"}, status_code=400)
        task = asyncio.ensure_future(self._answer(inbound))
        done, _ = await asyncio.wait({task}, timeout=self.defer_after_s)
        if task in done:
            content = {"content": task.result(), "flags": EPHEMERAL}
            return JSONResponse({"type": CHANNEL_MESSAGE, "data": content})
        # Answer "thinking…" now and follow up when the hub is done.
        late = asyncio.create_task(self._finish_late(task, payload))
        self._late.add(late)
        late.add_done_callback(self._late.discard)
        return JSONResponse({"type": DEFERRED_CHANNEL_MESSAGE, "data": {"flags": EPHEMERAL}})

    async def _finish_late(self, task: asyncio.Future[str], payload: Mapping[str, Any]) -> None:
        await self._follow_up(payload, await task)

    async def close(self) -> None:
        for task in list(self._late):
            task.cancel()
        await asyncio.gather(*self._late, return_exceptions=True)


def _peer(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"
