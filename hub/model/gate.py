"""How many scheduled model calls run at once, and how a provider's 429 slows them down.

Heartbeats and crons call the model with no one waiting for the answer, so they can wait:
they queue for a slot under `[scheduler] max_model_calls` instead of all asking at once. A
provider's 429 (FailureKind.RATE_LIMITED) slows the schedule rather than failing the run:

- the limit halves (at most once per burst: the calls already in flight when the first 429
  came back were sent at the old limit, so their 429s are the same news), and grows back by
  one slot per limit's worth of calls that succeed (additive increase, as TCP does);
- every scheduled call waits out the provider's `Retry-After` (or `rate_limit_pause_s`)
  before it is sent;
- the run that got the 429 asks again after the pause (`paced`), holding its place: its job
  stays running, so it is neither missed nor started a second time by the scheduler.

After a 429, the calls that waited out the pause also *start* at a paced rate (`pace`: the
agenda sets one and a half times the mean its heartbeats are planned at), until none is
left waiting, and every call does for a minute after it (PACED_AFTER_429): a provider that
just refused is at its limit, and the bursts the plan allows (up to twice the mean in a
second) met in one second with the neighbours' (the hub's own latency varies) are what
tips it over. A slot count alone let them all go at once when the pause ended: with answers
in 0.05 s one slot passes twenty calls a second, and a thousand Animas' heartbeats posted
7-8 in one second against a mean of 3.3 (bench/README.md). Paced, what waited drains at
half the mean besides the schedule's own calls.

`ModelCallGate` is the interface the agenda uses. `LocalGate` keeps the count in this
process; several hub workers on one PostgreSQL would share a cluster-wide gate behind the
same interface (docs/architecture.md: "Scheduled model calls").
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from hub.clock import Clock
from hub.model.client import LLMError, ModelClient, RoundPiece
from hub.model.failure import FailureKind

log = logging.getLogger(__name__)
T = TypeVar("T")
# How many 429s in a row one run waits out before its call fails as any model failure does.
# The pauses are the provider's own Retry-After, so eight of them is minutes, not seconds.
MAX_PACED_TRIES = 8
# For this long after a 429 every scheduled call starts at the paced rate, not only those
# that waited out the pause (bench/README.md, "A thousand Animas on one schedule").
PACED_AFTER_429 = timedelta(minutes=1)


class Call(Protocol):
    """One scheduled model call holding a slot; it says how the call went."""

    def rate_limited(self, retry_after: float | None) -> None: ...

    def succeeded(self) -> None: ...


class ModelCallGate(Protocol):
    def slot(self) -> AbstractAsyncContextManager[Call]:
        """Wait for a free slot (and for any pause after a 429, and for the paced start),
        hold it for one call."""
        ...

    def pace(self, per_s: float | None) -> None:
        """After a 429, start at most `per_s` calls a second, evenly spaced, until no call
        waits (None: as slots allow)."""
        ...


@dataclass(frozen=True, slots=True)
class GateState:
    """What the gate is doing, for health and the benchmark."""

    limit: int
    max_calls: int
    in_flight: int
    waiting: int
    paused_until: datetime | None
    next_start: datetime | None = None  # paced: when the next call may start


class _LocalCall:
    def __init__(self, gate: LocalGate, seq: int) -> None:
        self._gate = gate
        self.seq = seq  # when it was let through: a 429 from an older call is old news

    def rate_limited(self, retry_after: float | None) -> None:
        self._gate.rate_limited(self.seq, retry_after)

    def succeeded(self) -> None:
        self._gate.succeeded()


class LocalGate:
    """The cap for one hub process: at most `limit` calls at once, `limit` ≤ `max_calls`."""

    def __init__(self, max_calls: int, clock: Clock, pause_s: float = 10.0) -> None:
        self._max = max_calls
        self._limit = float(max_calls)
        self._clock = clock
        self._pause = timedelta(seconds=pause_s)
        self._in_flight = 0
        self._waiting = 0
        self._resume_at: datetime | None = None
        self._seq = itertools.count(1)
        self._cut_at = 0  # the sequence number let through when the limit was last cut
        self._last_seq = 0
        self._freed = asyncio.Event()
        self._spacing: timedelta | None = None  # between starts (`pace`)
        self._next_start: datetime | None = None
        self._catching_up = False  # since a 429, until what waited out its pause has started
        self._limited_at: datetime | None = None  # the last 429

    @property
    def state(self) -> GateState:
        return GateState(
            int(self._limit),
            self._max,
            self._in_flight,
            self._waiting,
            self._paused_until(),
            self._paced_until(),
        )

    def pace(self, per_s: float | None) -> None:
        self._spacing = timedelta(seconds=1 / per_s) if per_s else None
        if self._spacing is None:
            self._next_start = None
        self._wake()

    def _paced_until(self) -> datetime | None:
        start = self._next_start
        return start if start is not None and start > self._clock.now() else None

    def _paused_until(self) -> datetime | None:
        resume = self._resume_at
        return resume if resume is not None and resume > self._clock.now() else None

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Call]:
        self._waiting += 1
        try:
            await self._enter()
        finally:
            self._waiting -= 1
        self._last_seq = next(self._seq)
        call = _LocalCall(self, self._last_seq)
        try:
            yield call
        finally:
            self._in_flight -= 1
            self._wake()

    async def _enter(self) -> None:
        while True:
            resume = self._paused_until() or self._paced_until()
            if resume is not None:
                # The clock's sleep: a manual clock in tests moves the pause along.
                await self._clock.sleep((resume - self._clock.now()).total_seconds())
                continue
            if self._in_flight < int(self._limit):
                self._in_flight += 1
                now = self._clock.now()
                if self._spacing is not None and (self._catching_up or self._near_limit(now)):
                    self._next_start = now + self._spacing
                    self._catching_up = self._waiting > 1  # others queued behind this one
                return
            freed = self._freed
            await freed.wait()

    def _near_limit(self, now: datetime) -> bool:
        """Within PACED_AFTER_429 of the last 429: the provider is at its limit, and a
        second the plan fills to twice the mean is what tips it over."""
        return self._limited_at is not None and now - self._limited_at < PACED_AFTER_429

    def _wake(self) -> None:
        # Every waiter re-checks; the first to run takes the slot, the rest wait again.
        freed, self._freed = self._freed, asyncio.Event()
        freed.set()

    def rate_limited(self, seq: int, retry_after: float | None) -> None:
        self._catching_up = True
        self._limited_at = self._clock.now()
        pause = timedelta(seconds=retry_after) if retry_after is not None else self._pause
        resume = self._clock.now() + pause
        if self._resume_at is None or resume > self._resume_at:
            self._resume_at = resume
        if seq > self._cut_at:
            self._limit = max(1.0, self._limit / 2)
            self._cut_at = self._last_seq
            log.warning(
                "the model's provider is rate limiting: scheduled model calls pause %.0f s "
                "and run at most %d at once for now",
                pause.total_seconds(),
                int(self._limit),
            )

    def succeeded(self) -> None:
        if self._limit < self._max:
            self._limit = min(float(self._max), self._limit + 1 / self._limit)
            self._wake()


async def paced(gate: ModelCallGate, call: Callable[[], Awaitable[T]]) -> T:
    """`call()` (one scheduled model call) under the gate. A 429 pauses the schedule and the
    call is made again after the pause, up to MAX_PACED_TRIES times; any other failure, or
    the last 429, is raised as it came."""
    for attempt in range(1, MAX_PACED_TRIES + 1):
        async with gate.slot() as slot:
            try:
                result = await call()
            except LLMError as exc:
                if exc.kind is not FailureKind.RATE_LIMITED:
                    raise
                slot.rate_limited(exc.retry_after)
                if attempt == MAX_PACED_TRIES:
                    raise
                continue
            slot.succeeded()
            return result
    raise AssertionError("unreachable: the last try returns or raises")


class GatedModelClient:
    """A ModelClient whose calls go through the gate: for scheduled work that calls the
    model below a turn (consolidation's distillers, session summaries). Nobody watches
    those calls stream, so a round is collected whole before it is handed on, and a 429,
    which always comes before the first piece, is asked again after the pause."""

    def __init__(self, client: ModelClient, gate: ModelCallGate) -> None:
        self._client = client
        self._gate = gate

    async def warm(self, model: str) -> None:
        await self._client.warm(model)

    async def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]:
        async def whole() -> list[RoundPiece]:
            return [piece async for piece in self._client.stream_round(messages, kwargs)]

        for piece in await paced(self._gate, whole):
            yield piece

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        return await paced(self._gate, lambda: self._client.complete(messages, kwargs))
