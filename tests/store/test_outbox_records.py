"""The outbox's stored rows: the idempotency key is unique in the database, counts and
listings show what failed, and the Delivery dataclass matches the table."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import func, select

from hub.adapter import PermanentDeliveryError
from hub.delivery.deliveries import DELIVERY_FIELDS
from hub.messages import Address
from hub.store.db import Database
from hub.store.models import AuditEntry, DeliveryRow
from tests.store.outbox_helpers import THERE, FakeAdapter, FakeClock, add_delivery, make_outbox


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


def test_the_delivery_dataclass_has_exactly_the_table_columns() -> None:
    # The outbox reads and writes rows through `Delivery`; a column added to one and not the
    # other would be silently dropped or fail only at the first send.
    assert set(DELIVERY_FIELDS) == set(DeliveryRow.__table__.columns.keys())  # type: ignore[attr-defined]
