"""The plumbing of every Messaging API call to the fake LINE, and its answers.

Every request is recorded (with the status it was answered, once it is); a wrong access token
gets 401; before a reply or push is carried out, the faults a test set answer first: an
ordinary 429 (:meth:`Wire.rate_limit`), the monthly-limit 429 on push, the fault policy; then a
body that is no JSON object gets 400 (:meth:`Wire.begin` is that prelude of both). The knobs
for the faults that hit after the checks (a dropped answer, a failing reply) live here too; the
handlers consult them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass

from aiohttp import web

from animahub_kit.fakes.faults import RateLimit
from animahub_kit.fakes.line.objects import JSON, ApiCall
from animahub_kit.fakes.line.state import LineState

QUOTA_MESSAGE = "You have reached your monthly limit."
RATE_MESSAGE = "The API rate limit has been exceeded. Try again later."
AUTH_MESSAGE = (
    "Authentication failed. Confirm that the access token in the authorization header is valid."
)
BAD_BODY_MESSAGE = "The request body has 1 error(s)"


@dataclass
class Limit:
    remaining: int
    retry_after: float | None
    paths: tuple[str, ...]


class Wire:
    def __init__(self, state: LineState) -> None:
        self._state = state
        self.limits: list[Limit] = []
        self.quota_exhausted = False
        self.drop_next = False
        self.failing_replies: list[tuple[int, bool]] = []  # (status, delivered), in order

    # fault injection ---------------------------------------------------------------------

    def rate_limit(
        self, times: int, retry_after: float | None = None, paths: tuple[str, ...] = ()
    ) -> None:
        """Answer the next `times` sends (reply and push, or only `paths`, e.g. ("push",))
        with an ordinary 429. LINE sends no Retry-After; the fake adds one when given."""
        self.limits.append(Limit(times, retry_after, paths or ("reply", "push")))

    # the plumbing ------------------------------------------------------------------------

    def record(self, request: web.Request, body: JSON | None) -> int:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = request.headers.get("Authorization", "")
        self._state.calls.append(ApiCall(request.method, request.path, body, headers))
        return len(self._state.calls) - 1

    def answer(self, index: int, body: JSON, status: int = 200, **headers: str) -> web.Response:
        calls = self._state.calls
        call = calls[index]
        calls[index] = ApiCall(call.method, call.path, call.body, call.headers, status)
        request_id = str(uuid.uuid4())
        return web.json_response(
            body, status=status, headers={"X-Line-Request-Id": request_id, **headers}
        )

    def authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self._state.access_token}"

    def unauthorized(self, index: int, request: web.Request) -> web.Response | None:
        """401 for a wrong access token; None when it is the channel's."""
        if self.authorized(request):
            return None
        return self.answer(index, {"message": AUTH_MESSAGE}, 401)

    async def body(self, request: web.Request) -> JSON | None:
        try:
            data = await request.json()
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    async def begin(self, request: web.Request, kind: str) -> tuple[int, JSON, web.Response | None]:
        """Record a reply or push; refuse it (:meth:`refusal`), then a body that is no JSON
        object (400). The body is {} whenever the request is refused."""
        body = await self.body(request)
        index = self.record(request, body)
        refused = self.refusal(index, request, kind)
        if refused is None and body is None:
            refused = self.answer(index, {"message": BAD_BODY_MESSAGE}, 400)
        return index, body or {}, refused

    def refusal(self, index: int, request: web.Request, kind: str) -> web.Response | None:
        """401, 429 or the quota 429 before anything is sent."""
        if not self.authorized(request):
            return self.answer(index, {"message": AUTH_MESSAGE}, 401)
        for limit in self.limits:
            if limit.remaining > 0 and kind in limit.paths:
                limit.remaining -= 1
                extra = {}
                if limit.retry_after is not None:
                    extra["Retry-After"] = f"{limit.retry_after:g}"
                return self.answer(index, {"message": RATE_MESSAGE}, 429, **extra)
        if kind == "push" and self.quota_exhausted:
            return self.answer(index, {"message": QUOTA_MESSAGE}, 429)
        return self._injected(index, kind)

    def _injected(self, index: int, kind: str) -> web.Response | None:
        """What the fault policy makes of a reply or push: LINE's ordinary 429 (it names no
        wait) or a 5xx; None to carry it out. Nothing is sent either way."""
        faults = self._state.faults
        if faults is None:
            return None
        body = self._state.calls[index].body or {}
        chat = str(body.get("to") or "")
        token = self._state.tokens.get(str(body.get("replyToken") or ""))
        if kind == "reply" and token is not None:
            chat = token.chat
        fault = faults.decide("line", chat, kind, names_wait=False)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return self.answer(index, {"message": RATE_MESSAGE}, 429, **extra)
        return self.answer(index, {"message": "Internal server error"}, fault.status)

    async def dropped(self, index: int, request: web.Request) -> web.Response:
        """The request was accepted; its answer never reaches the caller."""
        self.drop_next = False
        transport = request.transport
        if transport is not None:
            transport.close()
        await asyncio.sleep(0.05)
        return web.Response(status=200)
