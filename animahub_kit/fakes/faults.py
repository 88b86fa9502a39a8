"""Fault injection shared by the fake platforms' send handlers: one policy, consulted per send.

A fake that has a `faults` policy asks it before carrying out a send (a post, an edit, a
reply, a push): `decide(channel)` answers None (carry it out), a `RateLimit` (answer 429
with this retry-after, in the platform's own format) or a `ServerError` (answer this 5xx;
nothing is sent). Every attempt is recorded with its time, channel and outcome, so a test
can check afterwards, on the recorded times, that every retry after a 429 came no earlier
than the retry-after allowed (`early_retries`). The clock is `time.monotonic` of the
process the fakes run in, the same clock the attempts are stamped with.

`Storm` is the policy of the storm suite: from `start()`, a share of the sends answered 429
for `rate_limit_s`, then `bursts` windows of `burst_s` in which every send is a 5xx,
separated by `gap_s` of calm; after that nothing is refused. Which sends get a 429 is drawn
from a seeded random generator, so a run can be repeated.
"""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

Outcome = Literal["ok", "429", "5xx"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    retry_after: float | None  # seconds; None: the platform names no wait (LINE)


@dataclass(frozen=True, slots=True)
class ServerError:
    status: int = 503


Fault = RateLimit | ServerError


@dataclass(frozen=True, slots=True)
class Attempt:
    at: float  # time.monotonic() when the fake received it
    platform: str
    channel: str  # where it was to go: Slack/Discord channel, Telegram chat, LINE chat
    method: str
    outcome: Outcome
    retry_after: float | None = None  # with a 429
    scope: str = ""  # the platform's rate-limit bucket within the channel ("": all of it)


@dataclass(frozen=True, slots=True)
class EarlyRetry:
    """An attempt to a channel that came before the retry-after of its last 429 ran out."""

    refused: Attempt  # the 429
    next: Attempt  # the attempt that came too soon
    early_by: float  # seconds


class FaultPolicy(Protocol):
    def decide(
        self,
        platform: str,
        channel: str,
        method: str,
        *,
        whole_seconds: bool = False,
        names_wait: bool = True,
        scope: str = "",
    ) -> Fault | None:
        """`whole_seconds`: the platform states retry-after in whole seconds (Slack's
        header, Telegram's `retry_after`), so the wait is rounded up; `names_wait=False`:
        its 429 carries no retry-after at all (LINE); `scope`: what a 429 holds back within
        the channel (Slack: the method; Discord: the route's bucket; Telegram: the chat)."""
        ...


class Recorder:
    """Every send attempt the fakes saw, thread-safe (fakes may run in another thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: list[Attempt] = []

    def record(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts.append(attempt)

    @property
    def attempts(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for a in self.attempts if a.outcome == outcome)

    def early_retries(self, tolerance_s: float = 0.0) -> list[EarlyRetry]:
        """Per platform, channel and rate-limit scope: after each 429, the next attempt
        there must come at least `retry_after` later (minus `tolerance_s`)."""
        found: list[EarlyRetry] = []
        last_refusal: dict[tuple[str, str, str], Attempt] = {}
        for attempt in sorted(self.attempts, key=lambda a: a.at):
            key = (attempt.platform, attempt.channel, attempt.scope)
            refused = last_refusal.pop(key, None)
            if refused is not None and refused.retry_after is not None:
                allowed = refused.at + refused.retry_after - tolerance_s
                if attempt.at < allowed:
                    found.append(EarlyRetry(refused, attempt, allowed - attempt.at))
            if attempt.outcome == "429":
                last_refusal[key] = attempt
        return found


@dataclass
class Storm:
    """429s to a share of the sends for a while, then bursts of 5xx, then calm."""

    rate_limit_share: float = 0.5
    rate_limit_s: float = 60.0
    retry_after_s: tuple[float, float] = (0.5, 2.0)  # drawn uniformly per 429
    bursts: int = 3
    burst_s: float = 4.0
    gap_s: float = 4.0
    server_error: int = 503
    seed: int = 15
    recorder: Recorder = field(default_factory=Recorder)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._started: float | None = None

    def start(self) -> None:
        with self._lock:
            self._started = time.monotonic()

    @property
    def length_s(self) -> float:
        """From start to the end of the last burst."""
        return self.rate_limit_s + self.bursts * (self.gap_s + self.burst_s)

    def over(self) -> bool:
        started = self._started
        return started is not None and time.monotonic() - started >= self.length_s

    def _phase(self, elapsed: float) -> Literal["calm", "429", "5xx"]:
        if elapsed < 0:
            return "calm"
        if elapsed < self.rate_limit_s:
            return "429"
        after = elapsed - self.rate_limit_s
        period = self.gap_s + self.burst_s
        if after >= self.bursts * period:
            return "calm"
        return "5xx" if after % period >= self.gap_s else "calm"

    def decide(
        self,
        platform: str,
        channel: str,
        method: str,
        *,
        whole_seconds: bool = False,
        names_wait: bool = True,
        scope: str = "",
    ) -> Fault | None:
        now = time.monotonic()
        with self._lock:
            phase = "calm" if self._started is None else self._phase(now - self._started)
            fault: Fault | None = None
            if phase == "429" and self._random.random() < self.rate_limit_share:
                low, high = self.retry_after_s
                wait = round(self._random.uniform(low, high), 3)
                if whole_seconds:
                    wait = float(math.ceil(wait))
                fault = RateLimit(wait if names_wait else None)
            elif phase == "5xx":
                fault = ServerError(self.server_error)
        outcome: Outcome = (
            "ok" if fault is None else "429" if isinstance(fault, RateLimit) else "5xx"
        )
        retry_after = fault.retry_after if isinstance(fault, RateLimit) else None
        self.recorder.record(Attempt(now, platform, channel, method, outcome, retry_after, scope))
        return fault


class Calm:
    """A policy that refuses nothing and records every attempt (a baseline run)."""

    def __init__(self) -> None:
        self.recorder = Recorder()

    def decide(
        self,
        platform: str,
        channel: str,
        method: str,
        *,
        whole_seconds: bool = False,
        names_wait: bool = True,
        scope: str = "",
    ) -> Fault | None:
        self.recorder.record(
            Attempt(time.monotonic(), platform, channel, method, "ok", scope=scope)
        )
        return None
