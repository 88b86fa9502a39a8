"""The one source of time for everything scheduled, so tests can run months in seconds."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when a test advances it."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware start time")
        self._now = start.astimezone(UTC)
        self._moved = asyncio.Event()

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> datetime:
        self._now += delta
        self._moved.set()
        return self._now

    def set(self, moment: datetime) -> datetime:
        return self.advance(moment.astimezone(UTC) - self._now)

    async def sleep(self, seconds: float) -> None:
        # A scheduler loop on a manual clock waits for the test to move time.
        self._moved.clear()
        await self._moved.wait()
