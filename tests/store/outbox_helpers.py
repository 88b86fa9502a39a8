"""The outbox's test doubles, shared by the test_outbox_* modules (and tests/unit/test_supervise):
a settable clock, a scripted fake platform, and helpers to add, reload and audit deliveries."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlmodel import col, select

from hub.adapter import Capabilities, HubPort
from hub.delivery.deliveries import DELIVERY_FIELDS, Delivery
from hub.delivery.outbox import Outbox
from hub.messages import Address, DeliveryKind, OutboundChunk
from hub.settings import OutboxSection
from hub.store.db import Database, as_utc
from hub.store.models import AuditEntry, DeliveryRow

START = datetime(2031, 1, 1, 12, 0, tzinfo=UTC)
HERE = Address("fake", "W1", "C1")
THERE = Address("fake", "W1", "C2")
SETTINGS = OutboxSection(max_attempts=4, backoff_base_s=10.0, backoff_max_s=1000.0)
LONG_TEXT = " ".join(f"word{i:03d}" for i in range(44))[:350]  # 350 characters, many spaces


class FakeClock:
    """A mutable clock the outbox reads instead of the wall clock."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def set(self, moment: datetime) -> None:
        self.now = as_utc(moment)


class FakeAdapter:
    """A platform stand-in: records each chunk it sends, fails on the calls it is told to."""

    name = "fake"
    capabilities = Capabilities(max_text=100)

    def __init__(self, failures: dict[int, BaseException] | None = None) -> None:
        self.failures = dict(failures or {})  # 1-based call number -> what to raise
        self.calls = 0
        self.sent: list[OutboundChunk] = []

    async def start(self, hub: HubPort) -> None:
        return None

    async def stop(self) -> None:
        return None

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, chunk: OutboundChunk) -> str:
        self.calls += 1
        failure = self.failures.pop(self.calls, None)
        if failure is not None:
            raise failure
        self.sent.append(chunk)
        return f"msg-{len(self.sent)}"

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        return None

    def routers(self) -> Sequence[Any]:
        return []

    def texts(self) -> list[str]:
        return [chunk.text for chunk in self.sent]


def make_outbox(
    db: Database, adapter: FakeAdapter, clock: FakeClock, settings: OutboxSection = SETTINGS
) -> Outbox:
    return Outbox(db, {"fake": adapter}, settings, clock=clock)


def add_delivery(
    db: Database,
    clock: FakeClock,
    text: str = "hello",
    key: str = "key-1",
    address: Address = HERE,
    order: int = 0,
) -> Delivery:
    """A pending delivery, due now, created `order` microseconds after the clock's now."""
    row = Delivery(
        id=str(uuid.uuid4()),
        idempotency_key=key,
        address=str(address),
        channel_key=address.channel_key,
        address_kind=address.kind.value,
        text=text,
        kind=DeliveryKind.REPLY,
        anima="aria",
        answers="event-1",
        reply_to="parent-1",
        created_at=clock.now + timedelta(microseconds=order),
        next_attempt_at=clock.now,
    )
    with db.write() as conn:
        conn.execute(insert(DeliveryRow), [{n: getattr(row, n) for n in DELIVERY_FIELDS}])
    return row


def reload(db: Database, row: Delivery) -> Delivery:
    """The delivery as stored now (its row, in the outbox's own shape)."""
    with db.session() as session:
        fresh = session.get(DeliveryRow, row.id)
    assert fresh is not None
    return Delivery(**{name: getattr(fresh, name) for name in DELIVERY_FIELDS})


def audits(db: Database) -> list[AuditEntry]:
    with db.session() as session:
        return list(session.exec(select(AuditEntry).order_by(col(AuditEntry.id))).all())


async def settle() -> None:
    """Let every task the outbox started run to its end."""
    current = asyncio.current_task()
    for _ in range(50):
        pending = [task for task in asyncio.all_tasks() if task is not current]
        if not pending:
            return
        await asyncio.gather(*pending)
    raise AssertionError("outbox tasks did not finish")
