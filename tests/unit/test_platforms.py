"""Platforms: adapters start under supervision; one that is down never stops the rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from animahub_kit.contract.harness import eventually
from hub.adapter import (
    Caller,
    Capabilities,
    ConnectionHold,
    ConversationEntry,
    HubPort,
    PlatformState,
    PlatformUnauthorized,
    PlatformUnavailable,
    Receipt,
    TranscriptEntry,
    TurnEvent,
)
from hub.delivery.platforms import Platforms
from hub.messages import Address, Inbound, OutboundChunk, PlatformUser
from hub.supervise import Backoff


class Flaky:
    """An adapter whose start fails as scripted: each item is raised in turn, then it starts."""

    capabilities = Capabilities(max_text=100)

    def __init__(self, name: str, failures: Sequence[BaseException]) -> None:
        self.name = name
        self._failures = list(failures)
        self.starts = 0
        self.stops = 0

    async def start(self, hub: HubPort) -> None:
        self.starts += 1
        if self._failures:
            raise self._failures.pop(0)

    async def stop(self) -> None:
        self.stops += 1

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, chunk: OutboundChunk) -> str:
        return "1"

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        return None

    def routers(self) -> Sequence[Any]:
        return []


class NoHub:
    async def receive(self, inbound: Inbound) -> Receipt:
        raise AssertionError("not used")

    def connection(self, key: str, quiet_s: float) -> ConnectionHold:
        raise AssertionError("not used")

    async def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]:
        raise AssertionError("not used")
        yield  # pragma: no cover

    def anima_names(self) -> list[str]:
        return []

    def speaker(self, caller: Caller, platform: str, user: str | None) -> PlatformUser:
        raise AssertionError("not used")

    def transcript(self, address: Address, limit: int) -> list[TranscriptEntry]:
        return []

    def conversations(
        self, address: Address, limit: int, text: str = ""
    ) -> list[ConversationEntry]:
        return []

    def report(self, platform: str, state: PlatformState, reason: str = "") -> None:
        return None

    def load_cursor(self, key: str) -> str | None:
        return None

    def save_cursor(self, key: str, value: str) -> None:
        return None

    def update_failed(self, platform: str, update_id: str, error: BaseException, raw: Any) -> None:
        return None

    def forget_cursor(self, key: str) -> None:
        return None

    def prune_cursors(self, prefix: str, older_than_s: float) -> int:
        return 0

    def pending_delivery(self, address: Address, besides: str | None = None) -> bool:
        return False


FAST = Backoff(base_s=0.01, max_s=0.05)


def test_backoff_doubles_is_capped_and_jittered() -> None:
    backoff = Backoff(base_s=1.0, max_s=300.0)
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (5, 16.0), (9, 256.0), (10, 300.0), (80, 300.0)):
        delays = {backoff.delay(attempt) for _ in range(50)}
        assert all(ceiling * 0.5 <= d <= ceiling for d in delays), (attempt, delays)
        assert len(delays) > 1  # jittered: many hubs restarted together do not retry in step


async def test_a_platform_that_is_down_is_retried_until_it_starts_and_the_rest_run() -> None:
    down = Flaky("slack", [PlatformUnavailable("connection refused")] * 3)
    fine = Flaky("web", [])
    platforms = Platforms({"slack": down, "web": fine}, FAST, first_attempt_s=5)
    await platforms.start(NoHub())
    assert platforms.ready("web") and not platforms.ready("slack")
    await eventually(lambda: platforms.ready("slack"))
    assert down.starts == 4
    assert platforms.status()["slack"].state is PlatformState.UP
    await platforms.stop()
    assert (down.stops, fine.stops) == (1, 1)


async def test_a_down_platform_shows_its_reason_and_next_try(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = Flaky("telegram", [PlatformUnavailable("Bot API unreachable")] * 1000)
    platforms = Platforms({"telegram": down}, Backoff(base_s=30, max_s=60), first_attempt_s=5)
    with caplog.at_level(logging.WARNING, "hub.delivery.platforms"):
        await platforms.start(NoHub())  # returns after the first attempt, not the retries
    status = platforms.status()["telegram"]
    assert status.state is PlatformState.DOWN and status.reason == "Bot API unreachable"
    assert status.next_retry_at is not None and status.failures == 1
    assert down.starts == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("telegram is down: Bot API unreachable; retrying in ")
    await platforms.stop()
    assert down.stops == 0  # never started: nothing to stop


async def test_a_platform_stays_down_since_its_first_failure_and_logs_each_try_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = iter(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=n) for n in range(10_000))
    down = Flaky("telegram", [PlatformUnavailable("Bot API unreachable")] * 3)
    platforms = Platforms({"telegram": down}, FAST, clock=lambda: next(ticks))
    with caplog.at_level(logging.WARNING, "hub.delivery.platforms"):
        await platforms.start(NoHub())
        went_down = platforms.status()["telegram"].since
        await eventually(lambda: platforms.status()["telegram"].failures == 3)
        assert platforms.status()["telegram"].since == went_down  # not the latest try's
        await eventually(lambda: platforms.ready("telegram"))
    assert platforms.status()["telegram"].since != went_down  # up since it started
    lines = [r.getMessage().partition("; retrying in ")[0] for r in caplog.records]
    assert lines == [
        "telegram is down: Bot API unreachable",
        "telegram is still down (try 2 failed): Bot API unreachable",
        "telegram is still down (try 3 failed): Bot API unreachable",
    ]
    await platforms.stop()


async def test_refused_credentials_are_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    refused = Flaky("discord", [PlatformUnauthorized("401: Unauthorized")])
    platforms = Platforms({"discord": refused}, FAST)
    with caplog.at_level(logging.ERROR, "hub.delivery.platforms"):
        await platforms.start(NoHub())
        await asyncio.sleep(0.2)  # many backoff periods: a retry would have happened
    assert refused.starts == 1
    status = platforms.status()["discord"]
    assert status.state is PlatformState.UNAUTHORIZED and status.next_retry_at is None
    assert "401: Unauthorized" in status.reason and not platforms.ready("discord")
    assert [r.getMessage() for r in caplog.records] == [
        "discord refused the credentials: 401: Unauthorized (not retried)"
    ]
    await platforms.stop()


async def test_an_unexpected_error_is_logged_with_its_traceback_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    buggy = Flaky("line", [KeyError("user_id")])
    platforms = Platforms({"line": buggy}, FAST)
    with caplog.at_level(logging.WARNING, "hub.delivery.platforms"):
        await platforms.start(NoHub())
        await eventually(lambda: platforms.ready("line"))
    (crash,) = [r for r in caplog.records if r.exc_info]
    assert crash.getMessage() == "line raised while starting"
    await platforms.stop()


async def test_reports_after_start_change_the_state_but_not_readiness() -> None:
    changes: list[tuple[str, PlatformState]] = []
    polling = Flaky("telegram", [])
    platforms = Platforms({"telegram": polling}, FAST)
    platforms.on_change(lambda name, state: changes.append((name, state)))
    await platforms.start(NoHub())
    platforms.report("telegram", PlatformState.DOWN, "409 Conflict: another poller")
    status = platforms.status()["telegram"]
    assert status.state is PlatformState.DOWN and status.reason.startswith("409")
    assert platforms.ready("telegram")  # sending uses the HTTP API, which still works
    platforms.report("telegram", PlatformState.UNAUTHORIZED, "token revoked")
    assert not platforms.ready("telegram")
    platforms.report("telegram", PlatformState.UP)
    assert platforms.ready("telegram")
    assert [s for _, s in changes] == [
        PlatformState.STARTING,
        PlatformState.UP,
        PlatformState.DOWN,
        PlatformState.UNAUTHORIZED,
        PlatformState.UP,
    ]
    await platforms.stop()
