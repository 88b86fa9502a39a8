"""Supervision of the hub's long-lived parts: nothing dies silently.

Each part (the outbox worker, its senders, the memory access flusher) runs under a
`Supervisor`. A part that raises is logged with its traceback and restarted with capped,
jittered backoff; meanwhile, and until the part says it works again, health is `degraded`
and names the part and why. A part that catches its own errors (a sender whose database
write failed keeps its state and retries) reports them through the same `Part` handle, so
health tells the truth either way.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hub.messages import utcnow
from hub.redaction.redact import redact

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry n (1-based): base·2^(n-1), capped, times a jitter in [0.5, 1]."""

    base_s: float = 1.0
    max_s: float = 300.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.max_s, self.base_s * 2 ** min(attempt - 1, 30))
        return float(ceiling * random.uniform(0.5, 1.0))


@dataclass(frozen=True, slots=True)
class PartStatus:
    ok: bool = True
    reason: str = ""
    since: datetime | None = None  # when it started failing
    restarts: int = 0
    failures: int = 0  # consecutive, since it last worked

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": "running" if self.ok else "failing",
            "reason": self.reason,
            "since": self.since.isoformat() if self.since else None,
            "restarts": self.restarts,
        }


class Part:
    """One supervised part's health handle."""

    def __init__(self, name: str, clock: Clock = utcnow) -> None:
        self.name = name
        self._clock = clock
        self.status = PartStatus()

    def ok(self) -> None:
        """It works (again): called after each successful round of its work."""
        if not self.status.ok:
            log.info("%s works again (after %d failures)", self.name, self.status.failures)
            self.status = PartStatus(restarts=self.status.restarts)

    def failing(self, reason: str) -> int:
        """Record a failure; returns how many in a row, for the caller's backoff."""
        current = self.status
        self.status = replace(
            current,
            ok=False,
            reason=redact(reason)[0],  # shown by health and the dashboard: a database
            # error may quote its parameters, a connection's its URL
            since=current.since if not current.ok else self._clock(),
            failures=current.failures + 1,
        )
        return self.status.failures


Work = Callable[[Part], Awaitable[None]]


class Supervisor:
    def __init__(self, clock: Clock = utcnow, backoff: Backoff | None = None) -> None:
        self._clock = clock
        # At most 10 s between tries: a database back from an outage is found quickly.
        self._backoff = backoff or Backoff(base_s=1.0, max_s=10.0)
        self._parts: dict[str, Part] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def part(self, name: str) -> Part:
        """The health handle of `name`, made on first use."""
        if name not in self._parts:
            self._parts[name] = Part(name, self._clock)
        return self._parts[name]

    def start(self, name: str, work: Work) -> None:
        """Run `work(part)` for the life of the hub, restarting it whenever it raises."""
        self._tasks[name] = asyncio.create_task(self._keep(self.part(name), work), name=name)

    async def _keep(self, part: Part, work: Work) -> None:
        while True:
            try:
                await work(part)
                log.info("%s finished", part.name)
                return
            except Exception as exc:
                # Any error: a part that dies would stop replies or memory writes unseen.
                failures = part.failing(f"{type(exc).__name__}: {exc}")
                delay = self._backoff.delay(failures)
                log.exception("%s failed; restarting it in %.1f s", part.name, delay)
            part.status = replace(part.status, restarts=part.status.restarts + 1)
            await asyncio.sleep(delay)

    async def halt(self, name: str) -> None:
        """Stop one part for good (the rest go on)."""
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def status(self) -> dict[str, PartStatus]:
        return {name: part.status for name, part in self._parts.items()}

    def failing(self) -> list[str]:
        return sorted(name for name, part in self._parts.items() if not part.status.ok)

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
