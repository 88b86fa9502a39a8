"""A turn that raises what nobody expected (a bug), through the real hub (issue 42).

Today's failing parts are shown in health and retried; a crashed turn was only logged, its
row left `processing` and health `ok`. Now: health names the crash, the turn is retried in
its lane, and a turn that crashes every time ends `failed` with one notice to its person.
The fault is injected into a collaborator of the turn (the identity lookup), the way a bug
there would surface; the hub answers offline (no model), so nothing else can fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from hub.api.routes import health
from hub.app import Hub
from hub.people.identity import PersonView
from hub.store.models import DeliveryRow, InboxItem
from tests.api.test_model_retry import eventually
from tests.api.test_recovery import inbound
from tests.conftest import started_hub

FAST = {"model_retry_base_s": 0.02, "model_retry_max_s": 0.05, "max_turn_attempts": 3}


@pytest.fixture
async def hub(home: Path, database_url: str) -> AsyncIterator[Hub]:
    started = await started_hub(home, runtime=FAST, storage={"database_url": database_url})
    try:
        yield started
    finally:
        await started.stop()


def crash_lookups(hub: Hub, monkeypatch: pytest.MonkeyPatch, times: int) -> list[dict[str, Any]]:
    """The turn's person lookup raises a KeyError the first `times` times; the health report
    seen by each later lookup (the turn run again) is returned in the list."""
    real = hub.identity.by_id
    seen: list[dict[str, Any]] = []
    calls = 0

    def by_id(person_id: str) -> PersonView:
        nonlocal calls
        calls += 1
        if calls > 1:
            seen.append(health(hub))
        if calls <= times:
            raise KeyError("a bug in the lookup")
        return real(person_id)

    monkeypatch.setattr(hub.identity, "by_id", by_id)
    return seen


def row(hub: Hub, inbox_id: str) -> InboxItem:
    with hub.db.session() as session:
        found = session.get(InboxItem, inbox_id)
    assert found is not None
    return found


def sent_to_person(hub: Hub) -> list[str]:
    with hub.db.session() as session:
        found = session.exec(select(DeliveryRow).order_by(col(DeliveryRow.created_at))).all()
    return [d.idempotency_key.split(":")[0] for d in found]


def finished(hub: Hub, inbox_id: str) -> Callable[[], bool]:
    return lambda: row(hub, inbox_id).status in ("done", "failed")


async def test_a_turn_that_crashes_once_is_answered_once_and_health_showed_it(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = crash_lookups(hub, monkeypatch, times=1)
    receipt = await hub.port.receive(inbound("e1", "hello after a bug"))
    await eventually(finished(hub, receipt.inbox_id))
    assert row(hub, receipt.inbox_id).status == "done"
    assert sent_to_person(hub).count("reply") == 1
    # While it waited for its second attempt, health named the crash.
    report = seen[0]
    assert report["status"] == "degraded" and "turns" in report["problems"]
    assert "KeyError" in report["parts"]["turns"]["reason"]
    assert health(hub)["parts"]["turns"]["state"] == "running"  # the retry worked


async def test_a_turn_that_always_crashes_ends_failed_and_is_explained_once(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    crash_lookups(hub, monkeypatch, times=1_000)
    receipt = await hub.port.receive(inbound("e1", "hello to a bug"))
    await eventually(finished(hub, receipt.inbox_id))
    failed = row(hub, receipt.inbox_id)
    assert failed.status == "failed" and failed.attempts == 2  # the third attempt gave up
    assert "KeyError" in (failed.error or "") and "gave up after 3 attempts" in (failed.error or "")
    # Told once that the answer is delayed, once that it could not be answered; no reply.
    assert sorted(sent_to_person(hub)) == ["delayed", "notice"]
    report = health(hub)
    assert report["failed_turns"]["count"] == 1
    assert report["parts"]["turns"]["state"] == "failing"
