"""A hub on a manual clock, with its schedule driven by the test, and ways to talk to it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from animahub_kit.contract.harness import eventually
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.store.models import DeliveryRow, InboxItem
from tests.conftest import add_demo_animas, make_settings


def life_settings(home: Path, **sections: Any) -> Any:
    base: dict[str, Any] = {
        "hub": {"default_anima": "mika", "admins": ["web:root"]},
        "memory": {"enabled": False},
        # The test drives the schedule (hub.schedule.scheduler.run_due), not a background loop.
        "scheduler": {"enabled": False},
        "outbox": {"poll_interval_s": 0.05},
    }
    base.update(sections)
    return make_settings(home, **base)


async def open_life(home: Path, clock: ManualClock, **sections: Any) -> Hub:
    hub = Hub(life_settings(home, **sections), clock=clock)
    await hub.start()
    add_demo_animas(hub)
    hub.scheduler.open()
    await hub.on_tick()
    return hub


@pytest.fixture
def clock() -> ManualClock:
    # Real "now", so rows the hub dates itself (inbox receipt) agree with the clock.
    return ManualClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
async def life(home: Path, clock: ManualClock) -> AsyncIterator[Hub]:
    hub = await open_life(home, clock)
    try:
        yield hub
    finally:
        await hub.stop()


def web_address(channel: str = "general", dm_with: str | None = None) -> Address:
    if dm_with is not None:
        return Address("web", "local", f"dm:kai:{dm_with}", "s1", AddressKind.DM)
    return Address("web", "local", channel, None, AddressKind.CHANNEL)


async def say(hub: Hub, user: str, text: str, address: Address | None = None) -> InboxItem:
    """Send a web message and wait until the hub has answered it. Each message takes a
    second of the hub's (manual) clock, as real messages are never simultaneous."""
    if isinstance(hub.clock, ManualClock):
        hub.clock.advance(timedelta(seconds=1))
    inbound = Inbound(
        event_id=str(uuid.uuid4()),
        address=address or web_address(),
        sender=PlatformUser("web", user, user.title()),
        text=text,
        sent_at=hub.clock.now(),
    )
    receipt = await hub.port.receive(inbound)

    def answered() -> InboxItem | None:
        with hub.db.session() as session:
            row = session.get(InboxItem, receipt.inbox_id)
        return row if row is not None and row.status in ("done", "failed", "held") else None

    # The first turn waits for a model worker to import litellm (seconds on a busy machine).
    row: InboxItem = await eventually(answered, timeout_s=60.0)
    return row


def deliveries(hub: Hub, kind: str) -> list[DeliveryRow]:
    with hub.db.session() as session:
        return list(
            session.exec(
                select(DeliveryRow)
                .where(DeliveryRow.kind == kind)
                .order_by(col(DeliveryRow.created_at))
            ).all()
        )
