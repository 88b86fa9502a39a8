"""The outbox sending to a scripted fake platform: chunking, per-address order, one send
per due delivery, platforms not yet started, and batching adapters."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hub.adapter import Adapter, Capabilities, TransientDeliveryError
from hub.delivery.outbox import Outbox
from hub.messages import DeliveryStatus, OutboundChunk
from hub.store.db import Database, as_utc
from tests.store.outbox_helpers import (
    HERE,
    LONG_TEXT,
    SETTINGS,
    START,
    THERE,
    FakeAdapter,
    FakeClock,
    add_delivery,
    make_outbox,
    reload,
    settle,
)


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
    assert {(c.delivery_id, c.address, c.anima, c.answers, c.reply_to) for c in adapter.sent} == {
        (row.id, HERE, "aria", "event-1", "parent-1")
    }
    assert stored.message_ids == [f"msg-{i + 1}" for i in range(len(stored.chunks))]
    assert stored.attempts == 1  # the try that sent it
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
