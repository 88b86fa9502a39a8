"""A sent delivery shows the tries it took (issue 47): the try that sent it counts, so a
delivery sent at once shows 1, never 0, and one sent after two failures 3. A try the
platform rate-limited is not counted: it waits for retry-after and uses no attempt up."""

from __future__ import annotations

from hub.adapter import RateLimited, TransientDeliveryError
from hub.api.routes import DeliveryOut
from hub.messages import DeliveryStatus
from hub.settings import OutboxSection
from hub.store.db import Database
from tests.store.outbox_helpers import (
    LONG_TEXT,
    FakeAdapter,
    FakeClock,
    add_delivery,
    make_outbox,
    reload,
)


async def test_a_delivery_sent_at_once_took_one_attempt(db: Database, clock: FakeClock) -> None:
    outbox = make_outbox(db, FakeAdapter(), clock)
    row = add_delivery(db, clock, LONG_TEXT)  # several chunks: still one try
    assert await outbox.deliver(row) is True
    sent = reload(db, row)
    assert (sent.status, sent.attempts) == (DeliveryStatus.SENT.value, 1)
    assert DeliveryOut.of(sent).attempts == 1  # what the API, CLI and dashboard show


async def test_a_delivery_sent_after_two_failures_took_three(
    db: Database, clock: FakeClock
) -> None:
    settings = OutboxSection(max_attempts=5, backoff_base_s=1.0, backoff_max_s=10.0)
    adapter = FakeAdapter({n: TransientDeliveryError(f"502 #{n}") for n in (1, 2)})
    outbox = make_outbox(db, adapter, clock, settings)
    row = add_delivery(db, clock)
    for _ in range(2):
        assert await outbox.deliver(reload(db, row)) is False
        clock.set(reload(db, row).next_attempt_at)
    assert await outbox.deliver(reload(db, row)) is True
    sent = reload(db, row)
    assert (sent.status, sent.attempts, sent.error) == (DeliveryStatus.SENT.value, 3, None)


async def test_a_rate_limited_try_is_not_an_attempt(db: Database, clock: FakeClock) -> None:
    outbox = make_outbox(db, FakeAdapter({1: RateLimited(5)}), clock)
    row = add_delivery(db, clock)
    assert await outbox.deliver(row) is False
    assert reload(db, row).attempts == 0
    clock.advance(5)
    assert await outbox.deliver(reload(db, row)) is True
    assert reload(db, row).attempts == 1
