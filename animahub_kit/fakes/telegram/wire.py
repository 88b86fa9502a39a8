"""The plumbing of every Bot API call to the fake Telegram, and its answers.

A call is ``/bot<token>/<method>`` with form-encoded bodies (PTB's way: strings as they are,
everything else JSON-encoded), JSON bodies or query parameters, answered with
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code": N, "description": ...}``.
Every call is recorded; a wrong token gets 401 (getMe included); then the faults a test set
(429s, failures, the fault policy) answer before the method does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from animahub_kit.fakes.faults import RateLimit
from animahub_kit.fakes.telegram.objects import JSON, as_int
from animahub_kit.fakes.telegram.state import ApiCall, TelegramState

# A Bot API method: its parameters in, its `result` out (or ApiError).
Method = Callable[[JSON], object]
# getUpdates, which answers by itself (a long poll, its own 409s).
LongPoll = Callable[[JSON], Awaitable[web.Response]]

# Parameters PTB sends JSON-encoded inside a form body.
_JSON_PARAMS = frozenset(
    {
        "reply_parameters",
        "commands",
        "scope",
        "entities",
        "link_preview_options",
        "allowed_updates",
        "reply_markup",
        "offset",
        "limit",
        "timeout",
        "chat_id",
        "message_id",
        "message_thread_id",
        "disable_notification",
        "drop_pending_updates",
        "max_connections",
    }
)
_SENDS = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})


class ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


def error(status: int, description: str, parameters: JSON | None = None) -> web.Response:
    body: JSON = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)


async def dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    transport = request.transport
    if transport is not None:
        transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)


async def params_of(request: web.Request) -> JSON:
    params: JSON = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            params.update(await request.json())
        else:
            params.update({k: v for k, v in (await request.post()).items()})
    for key, value in list(params.items()):
        if key in _JSON_PARAMS and isinstance(value, str):
            with contextlib.suppress(ValueError):
                params[key] = json.loads(value)
    return params


@dataclass
class _Limit:
    remaining: int
    retry_after: float
    chat_id: int | None


@dataclass
class _Failure:
    remaining: int
    status: int
    description: str


class Wire:
    """The handler of ``/bot{token}/{method}``: it records the call, answers 401, an injected
    429 or failure, or a fault, else hands the call to its method (`methods`, getUpdates to
    `long_poll`)."""

    def __init__(
        self, state: TelegramState, methods: dict[str, Method], long_poll: LongPoll
    ) -> None:
        self._state = state
        self._methods = methods
        self._long_poll = long_poll
        self._limits: dict[str, _Limit] = {}
        self._failures: dict[str, _Failure] = {}
        # True: the next sendMessage is carried out, then its connection closed unanswered
        self.drop_next = False

    def rate_limit(
        self, method: str, times: int, retry_after: float, chat_id: int | None = None
    ) -> None:
        """Answer the next `times` calls of `method` (to `chat_id` only, if given) with 429."""
        self._limits[method] = _Limit(times, retry_after, chat_id)

    def fail(self, method: str, status: int, description: str, times: int = 1) -> None:
        self._failures[method] = _Failure(times, status, description)

    async def api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        token = request.match_info["token"]
        params = await params_of(request)
        self._state.calls.append(ApiCall(method, params, token, time.monotonic()))
        if token != self._state.token:
            return error(401, "Unauthorized")
        refused = self._refusal(method, params)
        if refused is not None:
            return refused
        if method == "getUpdates":
            return await self._long_poll(params)
        handler = self._methods.get(method)
        if handler is None:
            return error(404, "Not Found")
        try:
            result = handler(params)
        except ApiError as exc:
            return error(exc.status, exc.description)
        if method == "sendMessage" and self.drop_next:
            self.drop_next = False
            return await dropped(request)
        return web.json_response({"ok": True, "result": result})

    def _refusal(self, method: str, params: JSON) -> web.Response | None:
        limit = self._limits.get(method)
        if limit is not None and limit.remaining > 0:
            chat = params.get("chat_id")
            if limit.chat_id is None or as_int(chat) == limit.chat_id:
                limit.remaining -= 1
                return error(
                    429,
                    f"Too Many Requests: retry after {limit.retry_after:g}",
                    {"retry_after": limit.retry_after},
                )
        failure = self._failures.get(method)
        if failure is not None and failure.remaining > 0:
            failure.remaining -= 1
            return error(failure.status, failure.description)
        return self._injected(method, params)

    def _injected(self, method: str, params: JSON) -> web.Response | None:
        """What the fault policy makes of a send or an edit: Telegram's 429 (a whole number
        of seconds in `parameters.retry_after`) or a 5xx; None to carry it out."""
        faults = self._state.faults
        if faults is None or method not in _SENDS:
            return None
        chat = str(as_int(params.get("chat_id")) or "")
        fault = faults.decide("telegram", chat, method, whole_seconds=True)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            wait = int(fault.retry_after or 1)
            return error(429, f"Too Many Requests: retry after {wait}", {"retry_after": wait})
        reason = "Bad Gateway" if fault.status == 502 else "Internal Server Error"
        return error(fault.status, reason)
