"""The outbox against a scripted fake platform: chunking, resume, backoff, failure, order."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, func, select

from hub.adapter import (
    Adapter,
    Capabilities,
    HubPort,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)
from hub.deliveries import DELIVERY_FIELDS, Delivery, as_utc
from hub.messages import Address, DeliveryKind, DeliveryStatus, OutboundChunk
from hub.outbox import Outbox
from hub.settings import OutboxSection
from hub.store.db import Database
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


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


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


def test_fake_adapter_satisfies_the_protocol() -> None:
    assert isinstance(FakeAdapter(), Adapter)


async def test_long_text_is_split_and_sent_in_order(db: Database, clock: FakeClock) -> None:
    assert len(LONG_TEXT) == 350
    adapter = FakeAdapter()
    outbox = make_outbox(db, adapter, clock)
    seen: list[str] = []
    outbox.on_sent(lambda row: seen.append(row.id))
    row = add_delivery(db, clock, LONG_TEXT)

    assert await outbox.deliver(row) is True

    stored = reload(db, row)
    assert stored.status == DeliveryStatus.SENT.value
    assert len(stored.chunks) >= 4
    assert all(len(chunk) <= 100 for chunk in stored.chunks)
    assert " ".join(stored.chunks).split() == LONG_TEXT.split()  # nothing lost or reordered
    assert adapter.texts() == stored.chunks
    assert [chunk.index for chunk in adapter.sent] == list(range(len(stored.chunks)))
    assert {chunk.count for chunk in adapter.sent} == {len(stored.chunks)}
    assert [chunk.idempotency_key for chunk in adapter.sent] == [
        f"key-1:{i}" for i in range(len(stored.chunks))
    ]
    assert {(c.delivery_id, c.address, c.anima, c.reply_to) for c in adapter.sent} == {
        (row.id, HERE, "aria", "parent-1")
    }
    assert stored.message_ids == [f"msg-{i + 1}" for i in range(len(stored.chunks))]
    assert stored.attempts == 0
    assert stored.error is None
    assert stored.sent_at is not None and as_utc(stored.sent_at) == START
    assert seen == [row.id]


@pytest.mark.parametrize("text", ["", "\n  \n\t"], ids=["empty", "whitespace"])
async def test_a_sent_delivery_always_sent_something(
    db: Database, clock: FakeClock, text: str
) -> None:
    """A reply with nothing to show still reaches the channel (as "…"), never as nothing."""
    adapter = FakeAdapter()
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock, text)

    assert await outbox.deliver(row) is True

    done = reload(db, row)
    assert done.status == DeliveryStatus.SENT.value
    assert adapter.texts() == ["…"]
    assert done.chunks == ["…"]
    assert done.message_ids == ["msg-1"]


async def test_rate_limit_mid_delivery_resumes_at_the_unsent_chunk(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter({3: RateLimited(7.5)})
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock, LONG_TEXT)

    assert await outbox.deliver(row) is False

    waiting = reload(db, row)
    chunks = waiting.chunks
    assert len(chunks) >= 4
    assert waiting.status == DeliveryStatus.PENDING.value
    assert waiting.message_ids == ["msg-1", "msg-2"]
    assert adapter.texts() == chunks[:2]
    assert as_utc(waiting.next_attempt_at) == START + timedelta(seconds=7.5)  # no jitter
    assert waiting.attempts == 0  # a rate limit is not a failed attempt
    assert waiting.error is not None and "rate limited" in waiting.error

    clock.advance(7.5)
    assert await outbox.deliver(waiting) is True

    done = reload(db, row)
    assert done.status == DeliveryStatus.SENT.value
    assert done.chunks == chunks  # split once, never again
    assert [chunk.index for chunk in adapter.sent] == list(range(len(chunks)))
    assert adapter.texts() == chunks
    assert done.message_ids == [f"msg-{i + 1}" for i in range(len(chunks))]
    assert done.attempts == 0
    assert done.error is None


async def test_rate_limit_retry_through_dispatch_waits_for_retry_after(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter({3: RateLimited(30)})
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock, LONG_TEXT)

    outbox.dispatch_due()
    await settle()
    assert len(adapter.sent) == 2

    clock.advance(29)
    outbox.dispatch_due()
    await settle()
    assert len(adapter.sent) == 2  # not due yet

    clock.advance(1)
    outbox.dispatch_due()
    await settle()
    done = reload(db, row)
    assert done.status == DeliveryStatus.SENT.value
    assert adapter.texts() == done.chunks
    assert len(done.message_ids) == len(done.chunks)


async def test_transient_errors_back_off_exponentially_then_fail(
    db: Database, clock: FakeClock
) -> None:
    settings = OutboxSection(max_attempts=3, backoff_base_s=10.0, backoff_max_s=1000.0)
    adapter = FakeAdapter({n: TransientDeliveryError(f"502 bad gateway #{n}") for n in (1, 2, 3)})
    outbox = make_outbox(db, adapter, clock, settings)
    row = add_delivery(db, clock)

    delays: list[float] = []
    for attempt in (1, 2):
        before = clock.now
        assert await outbox.deliver(reload(db, row)) is False
        waiting = reload(db, row)
        assert waiting.status == DeliveryStatus.PENDING.value
        assert waiting.attempts == attempt
        assert waiting.error == f"502 bad gateway #{attempt}"
        delays.append((as_utc(waiting.next_attempt_at) - before).total_seconds())
        clock.set(waiting.next_attempt_at)

    assert 10.0 * 0.8 <= delays[0] <= 10.0 * 1.2
    assert 20.0 * 0.8 <= delays[1] <= 20.0 * 1.2
    assert 2 * 0.8 / 1.2 <= delays[1] / delays[0] <= 2 * 1.2 / 0.8

    assert await outbox.deliver(reload(db, row)) is True
    failed = reload(db, row)
    assert failed.status == DeliveryStatus.FAILED.value
    assert failed.attempts == 3
    assert failed.error is not None
    assert "502 bad gateway #3" in failed.error
    assert "3 attempts" in failed.error
    assert adapter.sent == []
    [audit] = audits(db)
    assert audit.action == "delivery.failed"
    assert audit.target == row.id
    assert audit.actor == "anima:aria"
    assert audit.where == str(HERE)
    assert audit.detail["error"] == failed.error


async def test_backoff_is_capped_at_backoff_max(db: Database, clock: FakeClock) -> None:
    settings = OutboxSection(max_attempts=5, backoff_base_s=10.0, backoff_max_s=15.0)
    adapter = FakeAdapter({n: TransientDeliveryError("down") for n in (1, 2, 3)})
    outbox = make_outbox(db, adapter, clock, settings)
    row = add_delivery(db, clock)

    delays: list[float] = []
    for _ in range(3):
        before = clock.now
        assert await outbox.deliver(reload(db, row)) is False
        waiting = reload(db, row)
        delays.append((as_utc(waiting.next_attempt_at) - before).total_seconds())
        clock.set(waiting.next_attempt_at)
    assert 8.0 <= delays[0] <= 12.0
    assert all(15.0 * 0.8 <= delay <= 15.0 * 1.2 for delay in delays[1:])


async def test_permanent_error_fails_at_once(db: Database, clock: FakeClock) -> None:
    adapter = FakeAdapter({1: PermanentDeliveryError("channel_not_found")})
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock)

    assert await outbox.deliver(row) is True

    failed = reload(db, row)
    assert failed.status == DeliveryStatus.FAILED.value
    assert failed.error == "channel_not_found"
    assert adapter.calls == 1
    [audit] = audits(db)
    assert audit.action == "delivery.failed"
    assert audit.target == row.id

    outbox.dispatch_due()  # a failed delivery is never picked up again
    await settle()
    assert adapter.calls == 1


async def test_runtime_error_from_the_adapter_is_transient(db: Database, clock: FakeClock) -> None:
    adapter = FakeAdapter({1: RuntimeError("socket closed")})
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock)

    assert await outbox.deliver(row) is False  # not raised

    waiting = reload(db, row)
    assert waiting.status == DeliveryStatus.PENDING.value
    assert waiting.attempts == 1
    assert waiting.error is not None and "RuntimeError" in waiting.error
    assert "socket closed" in waiting.error
    delay = (as_utc(waiting.next_attempt_at) - START).total_seconds()
    assert 8.0 <= delay <= 12.0
    assert audits(db) == []

    clock.set(waiting.next_attempt_at)
    assert await outbox.deliver(waiting) is True
    assert reload(db, row).status == DeliveryStatus.SENT.value
    assert adapter.texts() == ["hello"]


async def test_delivery_without_an_adapter_fails_clearly(db: Database, clock: FakeClock) -> None:
    adapter = FakeAdapter()
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock, address=Address("nochat", "W1", "C1"))

    assert await outbox.deliver(row) is True

    failed = reload(db, row)
    assert failed.status == DeliveryStatus.FAILED.value
    assert failed.error is not None and "no adapter" in failed.error
    assert adapter.calls == 0
    [audit] = audits(db)
    assert audit.action == "delivery.failed"
    assert audit.target == row.id


def test_same_idempotency_key_is_refused_by_the_database(db: Database, clock: FakeClock) -> None:
    add_delivery(db, clock, text="first", key="reply:inbox-1")
    with pytest.raises(IntegrityError):
        add_delivery(db, clock, text="second", key="reply:inbox-1", order=1)
    with db.session() as session:
        rows = session.exec(select(DeliveryRow)).all()
    assert [row.text for row in rows] == ["first"]


async def test_counts_and_listing_show_failed_deliveries(db: Database, clock: FakeClock) -> None:
    adapter = FakeAdapter({2: PermanentDeliveryError("gone"), 3: PermanentDeliveryError("gone")})
    outbox = make_outbox(db, adapter, clock)
    sent = add_delivery(db, clock, key="k-sent", order=0)
    first_failed = add_delivery(db, clock, key="k-f1", address=THERE, order=1)
    second_failed = add_delivery(
        db, clock, key="k-f2", address=Address("fake", "W1", "C3"), order=2
    )
    pending = add_delivery(db, clock, key="k-pending", address=Address("fake", "W1", "C4"), order=3)

    for row in (sent, first_failed, second_failed):
        assert await outbox.deliver(row) is True

    assert outbox.counts() == {"sent": 1, "failed": 2, "pending": 1}
    listed = outbox.listing(status="failed", limit=10)
    assert [row.id for row in listed] == [second_failed.id, first_failed.id]  # newest first
    assert all(row.status == "failed" and row.error == "gone" for row in listed)
    assert [row.id for row in outbox.listing(status=None, limit=10)] == [
        pending.id,
        second_failed.id,
        first_failed.id,
        sent.id,
    ]
    assert [row.id for row in outbox.listing(status="failed", limit=1)] == [second_failed.id]
    with db.session() as session:
        assert session.exec(select(func.count()).select_from(AuditEntry)).one() == 2


async def test_deliveries_to_one_address_keep_creation_order(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter({1: TransientDeliveryError("timeout")})
    outbox = make_outbox(db, adapter, clock)
    first = add_delivery(db, clock, "first", key="k1", order=0)
    elsewhere = add_delivery(db, clock, "elsewhere", key="k2", address=THERE, order=1)
    second = add_delivery(db, clock, "second", key="k3", order=2)

    outbox.dispatch_due()
    await settle()
    # the first delivery is waiting for its retry; the second must not overtake it, while
    # another address is not held up
    assert adapter.texts() == ["elsewhere"]
    assert reload(db, second).status == DeliveryStatus.PENDING.value
    retry_at = as_utc(reload(db, first).next_attempt_at)
    assert retry_at > clock.now

    clock.advance(1)  # the second is due, the first is not
    outbox.dispatch_due()
    await settle()
    assert adapter.texts() == ["elsewhere"]

    third = add_delivery(db, clock, "third", key="k4", order=3)
    clock.set(retry_at)
    outbox.dispatch_due()
    await settle()
    assert adapter.texts() == ["elsewhere", "first", "second", "third"]
    for row in (first, elsewhere, second, third):
        assert reload(db, row).status == DeliveryStatus.SENT.value


async def test_dispatch_sends_each_due_delivery_once(db: Database, clock: FakeClock) -> None:
    adapter = FakeAdapter()
    outbox = make_outbox(db, adapter, clock)
    rows = [add_delivery(db, clock, f"m{i}", key=f"k{i}", order=i) for i in range(5)]

    outbox.dispatch_due()
    outbox.dispatch_due()  # a second call while the first is still draining starts nothing
    await settle()
    outbox.dispatch_due()
    await settle()

    assert adapter.texts() == [f"m{i}" for i in range(5)]
    assert outbox.counts() == {"sent": 5}
    assert all(reload(db, row).message_ids for row in rows)


def test_the_delivery_dataclass_has_exactly_the_table_columns() -> None:
    # The outbox reads and writes rows through `Delivery`; a column added to one and not the
    # other would be silently dropped or fail only at the first send.
    assert set(DELIVERY_FIELDS) == set(DeliveryRow.__table__.columns.keys())  # type: ignore[attr-defined]


# --- platforms not started, unknown outcomes, batches ------------------------------------


async def test_deliveries_to_a_platform_that_has_not_started_wait_without_attempts(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter()
    up = {"fake": False}
    outbox = Outbox(db, {"fake": adapter}, SETTINGS, clock=clock, ready=lambda p: up[p])
    row = add_delivery(db, clock)
    outbox.dispatch_due()
    await settle()
    assert adapter.calls == 0
    waiting = reload(db, row)
    assert (waiting.status, waiting.attempts) == (DeliveryStatus.PENDING.value, 0)
    up["fake"] = True
    outbox.dispatch_due()
    await settle()
    assert adapter.texts() == ["hello"]
    assert reload(db, row).status == DeliveryStatus.SENT.value


async def test_an_unknown_outcome_is_failed_visibly_and_never_sent_again(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter({2: OutcomeUnknown("read timeout after the request was sent")})
    outbox = make_outbox(db, adapter, clock)
    row = add_delivery(db, clock, LONG_TEXT)

    assert await outbox.deliver(row) is True

    failed = reload(db, row)
    assert failed.status == DeliveryStatus.FAILED.value
    assert failed.error is not None and failed.error.startswith("outcome unknown, not repeated")
    assert failed.message_ids == ["msg-1"]  # what was confirmed stays recorded
    clock.advance(10_000)
    outbox.dispatch_due()
    await settle()
    assert adapter.calls == 2  # no third call: the unknown chunk is not resent
    assert [a.action for a in audits(db)] == ["delivery.failed"]


class BatchAdapter(FakeAdapter):
    """Takes up to three chunks a call, as LINE's reply takes five."""

    capabilities = Capabilities(max_text=100, batch=3)

    def __init__(self, failures: dict[int, BaseException] | None = None) -> None:
        super().__init__(failures)
        self.batches: list[list[int]] = []

    async def send_batch(self, chunks: Sequence[OutboundChunk]) -> list[str]:
        self.calls += 1
        failure = self.failures.pop(self.calls, None)
        if failure is not None:
            raise failure
        self.batches.append([chunk.index for chunk in chunks])
        self.sent.extend(chunks)
        return [f"msg-{chunk.index + 1}" for chunk in chunks]


async def test_a_batching_adapter_gets_its_chunks_in_batches_all_or_none(
    db: Database, clock: FakeClock
) -> None:
    adapter = BatchAdapter({2: TransientDeliveryError("503")})
    outbox = Outbox(db, {"fake": adapter}, SETTINGS, clock=clock)
    row = add_delivery(db, clock, LONG_TEXT)

    assert await outbox.deliver(row) is False  # the second batch failed: retried later
    partial = reload(db, row)
    assert partial.message_ids == ["msg-1", "msg-2", "msg-3"]
    clock.advance(SETTINGS.backoff_max_s)
    assert await outbox.deliver(partial) is True

    done = reload(db, row)
    count = len(done.chunks)
    assert count >= 4
    assert adapter.batches == [[0, 1, 2], [3, 4, 5][: count - 3]]
    assert done.message_ids == [f"msg-{i + 1}" for i in range(count)]
    assert adapter.texts() == done.chunks
