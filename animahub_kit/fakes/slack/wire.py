"""The fake Slack's Web API wire, ``/api/<method>``: every call read (form-encoded, JSON or
query parameters; the token as ``Authorization: Bearer`` or a ``token`` parameter) and
recorded, then slowed, rate limited (429 + ``Retry-After``), failed or faulted as a test set
it, authenticated (the app-level token for ``apps.connections.open``, a bot's for the rest:
``not_authed`` / ``invalid_auth``), and handed to its method; ``unknown_method`` for the
rest. A bot's answer carries its ``X-OAuth-Scopes``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from animahub_kit.fakes.faults import RateLimit
from animahub_kit.fakes.slack.model import JSON, ApiCall, BotUser
from animahub_kit.fakes.slack.state import SlackState

# a Web API method called with a bot's token, and the methods the app-level token calls
Method = Callable[[BotUser, JSON], JSON]
AppMethod = Callable[[], JSON]

_SENDS = frozenset({"chat.postMessage", "chat.update"})


def reply(body: JSON, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, headers=headers)


@dataclass
class _Limit:
    remaining: int
    retry_after: float


@dataclass
class _Failure:
    remaining: int
    error: str
    status: int


class Wire:
    def __init__(
        self,
        state: SlackState,
        methods: Mapping[str, Method],
        app_methods: Mapping[str, AppMethod],
    ) -> None:
        self._state = state
        self._methods = methods
        self._app_methods = app_methods
        self._limits: dict[str, _Limit] = {}
        self._failures: dict[str, _Failure] = {}
        self._delays: dict[str, float] = {}
        # True: the next chat.postMessage is posted, then its connection closed unanswered
        self.drop_next = False

    # fault injection ------------------------------------------------------------------

    def rate_limit(self, method: str, times: int, retry_after: float) -> None:
        self._limits[method] = _Limit(times, retry_after)

    def fail(self, method: str, error: str, times: int = 1, status: int = 200) -> None:
        self._failures[method] = _Failure(times, error, status)

    def slow(self, method: str, seconds: float) -> None:
        """Answer every call of `method` only after `seconds` (a slow Slack)."""
        self._delays[method] = seconds

    # the route -----------------------------------------------------------------------

    async def api(self, request: web.Request) -> web.Response:
        """`/api/<method>`, any HTTP method."""
        method = request.match_info["method"]
        params, token = await _read(request)
        self._state.calls.append(ApiCall(method, params, token))
        if method in self._delays:
            await asyncio.sleep(self._delays[method])
        refused = self._refused(method, params)
        if refused is not None:
            return refused
        if method in self._app_methods:
            if token != self._state.app_token:
                return reply({"ok": False, "error": "invalid_auth"})
            return reply(self._app_methods[method]())
        handler = self._methods.get(method)
        if handler is None:
            return reply({"ok": False, "error": "unknown_method"})
        bot = self._state.bots.get(token or "")
        if bot is None:
            return reply({"ok": False, "error": "not_authed" if not token else "invalid_auth"})
        headers = {"X-OAuth-Scopes": bot.scopes}
        body = handler(bot, params)
        if method == "chat.postMessage" and self.drop_next and body.get("ok"):
            self.drop_next = False
            return await _dropped(request)
        return reply(body, headers)

    def _refused(self, method: str, params: JSON) -> web.Response | None:
        """The answer a test set for this call in place of the method's: a 429 of
        `rate_limit`, an error of `fail`, or what the fault policy decides."""
        limit = self._limits.get(method)
        if limit is not None and limit.remaining > 0:
            limit.remaining -= 1
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": f"{limit.retry_after:g}"},
            )
        failure = self._failures.get(method)
        if failure is not None and failure.remaining > 0:
            failure.remaining -= 1
            return web.json_response({"ok": False, "error": failure.error}, status=failure.status)
        return self._injected(method, params)

    def _injected(self, method: str, params: JSON) -> web.Response | None:
        """What the fault policy makes of a post or edit: Slack's 429 (Retry-After in whole
        seconds, as Slack sends it) or a 5xx; None to carry it out."""
        faults = self._state.faults
        if faults is None or method not in _SENDS:
            return None
        channel = str(params.get("channel") or "")
        fault = faults.decide("slack", channel, method, whole_seconds=True, scope=method)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            headers = {"Retry-After": f"{fault.retry_after or 1:g}"}
            body = {"ok": False, "error": "ratelimited"}
            return web.json_response(body, status=429, headers=headers)
        body = {"ok": False, "error": "service_unavailable"}
        return web.json_response(body, status=fault.status)


async def _read(request: web.Request) -> tuple[JSON, str | None]:
    """The call's parameters (query, then the JSON or form body) and its token."""
    params: JSON = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            params.update(await request.json())
        else:
            params.update({k: v for k, v in (await request.post()).items()})
    auth = request.headers.get("Authorization", "")
    token = auth[7:] if auth.startswith("Bearer ") else params.pop("token", None)
    params.pop("token", None)
    return params, token


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    if request.transport is not None:
        request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)
