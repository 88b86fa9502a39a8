"""Platforms: starts every adapter under supervision and keeps what state each one is in.

A platform that cannot be reached never stops the hub (DESIGN §4): its adapter's `start` is
retried with capped, jittered exponential backoff while everything else runs; a platform
that refuses the credentials is reported `unauthorized` and not retried, since only a
person fixing the token can help. Each failure is one log line naming the platform and the
reason. Adapters report a connection lost or regained after start through `HubPort.report`.
The outbox asks `ready()` before sending, so replies wait for a platform that has not
started instead of burning their attempts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hub.adapter import (
    Adapter,
    HubPort,
    PlatformState,
    PlatformUnauthorized,
    PlatformUnavailable,
)
from hub.messages import utcnow
from hub.redaction.redact import redact
from hub.supervise import Backoff

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class PlatformStatus:
    state: PlatformState
    reason: str = ""
    since: datetime | None = None  # when it came to this state (down: the first failed try)
    next_retry_at: datetime | None = None
    failures: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "reason": self.reason,
            "since": self.since.isoformat() if self.since else None,
            "next_retry_at": self.next_retry_at.isoformat() if self.next_retry_at else None,
            "failures": self.failures,
        }


class Platforms:
    def __init__(
        self,
        adapters: Mapping[str, Adapter],
        backoff: Backoff | None = None,
        clock: Clock = utcnow,
        first_attempt_s: float = 10.0,
    ) -> None:
        self._adapters = adapters
        self._backoff = backoff or Backoff()
        self._clock = clock
        # How long hub start waits for a platform before leaving it to connect meanwhile.
        self._first_attempt_s = first_attempt_s
        self._status = {name: PlatformStatus(PlatformState.STOPPED) for name in adapters}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._started: set[str] = set()
        self._listeners: list[Callable[[str, PlatformState], None]] = []

    def on_change(self, listener: Callable[[str, PlatformState], None]) -> None:
        self._listeners.append(listener)

    async def start(self, hub: HubPort) -> None:
        """Start every adapter; wait a little for each, never for one that stays down."""
        tried = {name: asyncio.Event() for name in self._adapters}
        for name, adapter in self._adapters.items():
            self._tasks[name] = asyncio.create_task(
                self._keep_starting(name, adapter, hub, tried[name]), name=f"platform-{name}"
            )
        waits = [asyncio.create_task(event.wait()) for event in tried.values()]
        if waits:
            await asyncio.wait(waits, timeout=self._first_attempt_s)
            for wait in waits:
                wait.cancel()

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        for name in list(self._started):
            await self._adapters[name].stop()
            self._set(name, PlatformState.STOPPED)
        self._started.clear()

    def ready(self, platform: str) -> bool:
        """Whether sends may be tried: the adapter started, and its credentials hold. A
        connection an adapter reports lost after start (a Socket Mode or polling session)
        does not stop sending, which goes over the platform's own HTTP API."""
        status = self._status.get(platform)
        return platform in self._started and (
            status is not None and status.state is not PlatformState.UNAUTHORIZED
        )

    def status(self) -> dict[str, PlatformStatus]:
        return dict(self._status)

    def report(self, platform: str, state: PlatformState, reason: str = "") -> None:
        """An adapter's own word on its connection, after a successful start."""
        if platform not in self._status:
            log.warning("state reported for unknown platform %r", platform)
            return
        before = self._status[platform]
        if before.state is state and before.reason == redact(reason)[0]:
            return
        if state is PlatformState.UP:
            log.info("%s is connected again", platform)
        else:
            log.warning("%s is %s: %s", platform, state.value, reason or "no reason given")
        failures = before.failures + 1 if state is PlatformState.DOWN else 0
        self._set(platform, state, reason, failures=failures)

    async def _keep_starting(
        self, name: str, adapter: Adapter, hub: HubPort, tried: asyncio.Event
    ) -> None:
        failures = 0
        self._set(name, PlatformState.STARTING)
        while True:
            # A retry leaves it down: `since` stays when it went down, not the latest try.
            try:
                await adapter.start(hub)
            except PlatformUnauthorized as exc:
                log.error("%s refused the credentials: %s (not retried)", name, exc.reason)
                self._set(name, PlatformState.UNAUTHORIZED, exc.reason, failures=failures + 1)
                tried.set()
                return
            except PlatformUnavailable as exc:
                reason = exc.reason
            except Exception as exc:
                log.exception("%s raised while starting", name)
                reason = f"{type(exc).__name__}: {exc}"
            else:
                self._started.add(name)
                log.info("%s is connected", name)
                self._set(name, PlatformState.UP)
                tried.set()
                return
            failures += 1
            delay = self._backoff.delay(failures)
            retry_at = self._clock() + timedelta(seconds=delay)
            log.warning("%s; retrying in %.1fs", _down(name, reason, failures), delay)
            self._set(name, PlatformState.DOWN, reason, retry_at, failures)
            tried.set()
            await asyncio.sleep(delay)

    def _set(
        self,
        name: str,
        state: PlatformState,
        reason: str = "",
        retry_at: datetime | None = None,
        failures: int = 0,
    ) -> None:
        before = self._status.get(name)
        since = before.since if before is not None and before.state is state else self._clock()
        # A platform's error may echo the credential it refused: status, health and the
        # dashboard show the reason, so it is kept redacted (the token by its fingerprint).
        reason = redact(reason)[0]
        self._status[name] = PlatformStatus(state, reason, since, retry_at, failures)
        for listener in self._listeners:
            listener(name, state)


def _down(platform: str, reason: str, failures: int) -> str:
    """The log line of a failed start: a retry's names its count, so two tries that fail
    alike are not taken for one failure logged twice."""
    if failures == 1:
        return f"{platform} is down: {reason}"
    return f"{platform} is still down (try {failures} failed): {reason}"
