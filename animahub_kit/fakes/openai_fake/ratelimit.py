"""A provider's standing rate limit, and what the fake saw at once.

:class:`StandingLimit` answers 429 (with ``Retry-After``) to every request past a limit that
stays until changed: ``per_second`` requests a second (a token bucket holding ``burst``)
and/or ``max_in_flight`` requests at once. Unlike ``fail_next`` it needs no script: a load
test just runs into it, as into a real provider's limit. Whatever the limit, it counts the
requests in flight and the most ever in flight at once (``peak_in_flight``: what a cap on
calls at once is checked by), and keeps when each accepted request arrived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from animahub_kit.fakes.openai_fake.errors import error_response
from animahub_kit.fakes.openai_fake.script import JSON, Failure

Handler = Callable[[Request], Awaitable[Response]]


class StandingLimit:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.per_second: float | None = None
        self.burst = 1.0
        self.max_in_flight: int | None = None
        self.retry_after: float | None = 1.0
        self._tokens = 0.0
        self._filled_at = time.monotonic()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.refused = 0
        self.accepted_at: list[float] = []  # wall-clock time.time() of each accepted request

    def set(
        self,
        per_second: float | None = None,
        burst: float = 1.0,
        max_in_flight: int | None = None,
        retry_after: float | None = 1.0,
    ) -> None:
        """Refuse past `per_second` (bucket of `burst`) or `max_in_flight`; None: no limit."""
        with self._lock:
            self.per_second, self.burst = per_second, max(1.0, burst)
            self.max_in_flight, self.retry_after = max_in_flight, retry_after
            self._tokens, self._filled_at = self.burst, time.monotonic()

    def enter(self) -> Failure | None:
        """Admit a request (counted in flight until `leave`), or the 429 to answer it with."""
        with self._lock:
            if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
                return self._refuse()
            if self.per_second is not None:
                now = time.monotonic()
                elapsed = now - self._filled_at
                self._tokens = min(self.burst, self._tokens + elapsed * self.per_second)
                self._filled_at = now
                if self._tokens < 1.0:
                    return self._refuse()
                self._tokens -= 1.0
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.accepted_at.append(time.time())
            return None

    def _refuse(self) -> Failure:
        self.refused += 1
        return Failure(429, self.retry_after, "Rate limit reached for requests (fake).")

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def stats(self) -> JSON:
        with self._lock:
            return {
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "refused": self.refused,
                "accepted": len(self.accepted_at),
                "accepted_at": list(self.accepted_at),
            }


def limited(limit: StandingLimit, handler: Handler) -> Handler:
    """`handler` behind the standing limit: refused past it, counted in flight while it runs."""

    async def guarded(request: Request) -> Response:
        refused = limit.enter()
        if refused is not None:
            return error_response(refused)
        try:
            return await handler(request)
        finally:
            limit.leave()

    return guarded


def make_rate_limit_routes(
    limit: StandingLimit, set_latency: Callable[[float], None]
) -> list[Route]:
    async def set_limit(request: Request) -> Response:
        body = await request.json()  # (not chat.json_body: chat imports the state, and this)
        if "latency_s" in body:  # how long each answer takes, for a load test in a process
            set_latency(float(body["latency_s"]))
        limit.set(
            body.get("per_second"),
            float(body.get("burst", 1.0)),
            body.get("max_in_flight"),
            body.get("retry_after", 1.0),
        )
        return JSONResponse({"ok": True})

    async def stats(request: Request) -> Response:
        return JSONResponse(limit.stats())

    return [
        Route("/_control/rate_limit", set_limit, methods=["POST"]),
        Route("/_control/rate_limit_stats", stats, methods=["GET"]),
    ]
