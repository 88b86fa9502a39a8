"""Migration 0015 (issue 47): a delivery sent before the upgrade gets the try that sent it
counted, as the outbox counts it now; the others keep their count. Upgraded from 0014
with data in it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from hub.store.db import Database
from tests.store.test_migration_0013 import _upgrade

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _delivery(conn: sa.Connection, row_id: str, status: str, attempts: int) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO delivery (id, idempotency_key, address, channel_key, address_kind, "
            "text, kind, anima, status, attempts, next_attempt_at, chunks, message_ids, "
            "created_at) VALUES (:id, :id, 'web:local/c', 'web:local/c', 'dm', 'hi', 'reply', "
            "'aria', :status, :attempts, :at, '[]', '[]', :at)"
        ),
        {"id": row_id, "status": status, "attempts": attempts, "at": AT},
    )


def test_sent_deliveries_count_the_try_that_sent_them(database_url: str) -> None:
    db = Database(database_url)
    try:
        _upgrade(db, "0014")
        with db.engine.begin() as conn:
            _delivery(conn, "at-once", "sent", 0)
            _delivery(conn, "after-two", "sent", 2)
            _delivery(conn, "waiting", "pending", 1)
            _delivery(conn, "gave-up", "failed", 8)
        _upgrade(db, "0015")
        with db.engine.begin() as conn:
            rows = conn.execute(sa.text("SELECT id, attempts FROM delivery")).all()
        assert dict((row[0], row[1]) for row in rows) == {
            "at-once": 1,
            "after-two": 3,
            "waiting": 1,
            "gave-up": 8,
        }
    finally:
        db.engine.dispose()
