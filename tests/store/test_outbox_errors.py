"""The outbox when a send goes wrong: rate limits resume where they stopped, transient
errors back off (capped) and then fail, permanent errors, unknown outcomes and a missing
adapter fail at once, visibly and audited."""

from __future__ import annotations

from datetime import timedelta

from hub.adapter import OutcomeUnknown, PermanentDeliveryError, RateLimited, TransientDeliveryError
from hub.messages import Address, DeliveryStatus
from hub.settings import OutboxSection
from hub.store.db import Database, as_utc
from tests.store.outbox_helpers import (
    HERE,
    LONG_TEXT,
    START,
    FakeAdapter,
    FakeClock,
    add_delivery,
    audits,
    make_outbox,
    reload,
    settle,
)


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
    assert done.attempts == 1  # the try that sent it; the rate-limited one is not counted
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
    assert failed.error == (
        "nochat is not enabled on this hub ([nochat] enabled = true in hub.toml); "
        "retry the delivery once it is"
    )
    assert adapter.calls == 0
    [audit] = audits(db)
    assert audit.action == "delivery.failed"
    assert audit.target == row.id


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
