"""The fake Notion's wire: every request recorded (:class:`ApiCall`), refused when its token
is wrong, its `Notion-Version` missing or its body not a JSON object, and answered with
Notion's error object or the answer and a request id; the faults a test set (`rate_limit`,
`faults`, `fail_next`, `drop_next_response`) are decided here too."""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy, RateLimit
from animahub_kit.fakes.notion.model import JSON

Kind = Literal["pages.create", "pages.update", "pages.update_markdown", "data_sources.query"]

AUTH_MESSAGE = "API token is invalid."
VERSION_MESSAGE = (
    "Notion-Version header failed validation: Notion-Version header should be defined, "
    "instead was undefined."
)
RATE_MESSAGE = "You have been rate limited. Please try again in a few minutes."
_SERVER_ERRORS = {500: "internal_server_error", 503: "service_unavailable", 504: "gateway_timeout"}
_SERVER_MESSAGES = {
    "internal_server_error": "Unexpected error occurred.",
    "service_unavailable": "Notion is unavailable, please try again later.",
    "gateway_timeout": "Timed out while trying to complete this request.",
}
_RECORDED_HEADERS = ("Authorization", "Notion-Version", "Content-Type", "User-Agent")


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    body: JSON | None
    headers: dict[str, str]  # Authorization, Notion-Version, Content-Type, User-Agent
    status: int = 0  # filled in when answered; 0: no answer (dropped)


@dataclass
class Limit:
    remaining: int
    retry_after: float


class Wire:
    def __init__(self, token: str, fault_queries: bool) -> None:
        self.token = token
        self.fault_queries = fault_queries
        self.calls: list[ApiCall] = []
        self.notion_versions: set[str] = set()
        self.limits: list[Limit] = []
        self.failing: list[tuple[int, bool]] = []  # (status, carried out), in order
        self.drops: list[Kind] = []
        # Consulted for every write (animahub_kit/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    def record(self, request: web.Request, body: JSON | None) -> int:
        headers = {k: request.headers[k] for k in _RECORDED_HEADERS if k in request.headers}
        self.calls.append(ApiCall(request.method, request.path, body, headers))
        version = request.headers.get("Notion-Version")
        if version:
            self.notion_versions.add(version)
        return len(self.calls) - 1

    def answer(self, index: int, body: JSON, status: int = 200, **headers: str) -> web.Response:
        call = self.calls[index]
        self.calls[index] = ApiCall(call.method, call.path, call.body, call.headers, status)
        request_id = str(uuid.uuid4())
        return web.json_response(
            {**body, "request_id": request_id},
            status=status,
            headers={"x-notion-request-id": request_id, **headers},
        )

    def error(
        self, index: int, status: int, code: str, message: str, **headers: str
    ) -> web.Response:
        body = {"object": "error", "status": status, "code": code, "message": message}
        return self.answer(index, body, status, **headers)

    async def begin(self, request: web.Request) -> tuple[int, JSON, web.Response | None]:
        """Record the request; refuse a wrong token, a missing version, a body not JSON."""
        raw = await request.read() if request.can_read_body else b""
        parsed: Any = None
        malformed = False
        if raw:
            try:
                parsed = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                malformed = True
        body = parsed if isinstance(parsed, dict) else None
        index = self.record(request, body)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return index, {}, self.error(index, 401, "unauthorized", AUTH_MESSAGE)
        if not request.headers.get("Notion-Version"):
            return index, {}, self.error(index, 400, "missing_version", VERSION_MESSAGE)
        if malformed:
            return index, {}, self.error(index, 400, "invalid_json", "Error parsing JSON body.")
        if raw and body is None:
            shown = json.dumps(parsed)
            message = f"body failed validation: body should be an object, instead was `{shown}`."
            return index, {}, self.error(index, 400, "validation_error", message)
        return index, body or {}, None

    async def unknown(self, request: web.Request) -> web.Response:
        """Any path or method the fake does not serve."""
        index, _, refused = await self.begin(request)
        if refused is not None:
            return refused
        return self.error(index, 400, "invalid_request_url", "Invalid request URL.")

    def refusal(self, index: int, kind: Kind, channel: str) -> web.Response | None:
        """A 429 or 5xx decided before the request is looked at (rate_limit, faults)."""
        if kind == "data_sources.query" and not self.fault_queries:
            return None
        for limit in self.limits:
            if limit.remaining > 0:
                limit.remaining -= 1
                return self._rate_limited(index, limit.retry_after)
        if self.faults is None:
            return None
        fault = self.faults.decide("notion", channel, kind, whole_seconds=True)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            return self._rate_limited(index, fault.retry_after)
        return self._server_error(index, fault.status)

    def _rate_limited(self, index: int, retry_after: float | None) -> web.Response:
        extra = {} if retry_after is None else {"Retry-After": str(math.ceil(retry_after))}
        return self.error(index, 429, "rate_limited", RATE_MESSAGE, **extra)

    def _server_error(self, index: int, status: int) -> web.Response:
        code = _SERVER_ERRORS.get(status, "internal_server_error")
        return self.error(index, status, code, _SERVER_MESSAGES[code])

    async def finish(
        self, index: int, kind: Kind, request: web.Request, act: Callable[[], JSON]
    ) -> web.Response:
        """Carry out a valid write: fail_next first, then the write, then maybe drop."""
        if (kind != "data_sources.query" or self.fault_queries) and self.failing:
            status, carried_out = self.failing.pop(0)
            if carried_out:
                act()
            return self._server_error(index, status)
        answer = act()
        if kind in self.drops:
            self.drops.remove(kind)
            return await _dropped(request)
        return self.answer(index, answer)


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    transport = request.transport
    if transport is not None:
        transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)
