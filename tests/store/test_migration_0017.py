"""Migration 0017 (issue 42): a delivery's `reply_to` held the event id it answers, which
adapters split back into a platform message id. Now `answers` holds the event id and
`reply_to` the answered message's platform id, taken from its inbox row. Upgraded from 0016
with data in it."""

from __future__ import annotations

import sqlalchemy as sa

from hub.store.db import Database
from tests.store.test_migration_0013 import AT, _inbox, _upgrade


def _delivery(conn: sa.Connection, row_id: str, inbox_id: str | None, reply_to: str | None) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO delivery (id, idempotency_key, address, channel_key, address_kind, "
            "text, kind, anima, inbox_id, reply_to, status, attempts, next_attempt_at, chunks, "
            "message_ids, created_at) VALUES (:id, :id, 'telegram:1/-100', 'telegram:1/-100', "
            "'group', 'hi', 'reply', 'aria', :inbox, :reply_to, 'pending', 0, :at, '[]', '[]', "
            ":at)"
        ),
        {"id": row_id, "inbox": inbox_id, "reply_to": reply_to, "at": AT},
    )


def test_the_event_id_moves_to_answers_and_reply_to_becomes_the_message_id(
    database_url: str,
) -> None:
    db = Database(database_url)
    try:
        _upgrade(db, "0016")
        with db.engine.begin() as conn:
            _inbox(conn, "in-1", "telegram:7", "-100:42:edit:1700000000")
            conn.execute(sa.text("UPDATE inbox SET reply_to = '42' WHERE id = 'in-1'"))
            _delivery(conn, "reply", "in-1", "-100:42:edit:1700000000")
            _delivery(conn, "heartbeat", None, None)
        _upgrade(db, "0017")
        with db.engine.begin() as conn:
            rows = conn.execute(sa.text("SELECT id, answers, reply_to FROM delivery")).all()
        assert {row[0]: (row[1], row[2]) for row in rows} == {
            "reply": ("-100:42:edit:1700000000", "42"),
            "heartbeat": (None, None),
        }
    finally:
        db.engine.dispose()
