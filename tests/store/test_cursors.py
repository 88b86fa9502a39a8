"""Adapter cursors: a small value per key that survives a restart (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime

from hub.store.cursors import load_cursor, save_cursor
from hub.store.db import Database

AT = datetime(2031, 1, 1, tzinfo=UTC)


def test_a_cursor_is_saved_overwritten_and_read_back_after_reopening(db: Database) -> None:
    assert load_cursor(db, "telegram:offset") is None
    save_cursor(db, "telegram:offset", "1001", AT)
    save_cursor(db, "telegram:offset", "1002", AT)
    save_cursor(db, "other:key", "x", AT)
    reopened = Database(str(db.engine.url.render_as_string(hide_password=False)))
    try:
        assert load_cursor(reopened, "telegram:offset") == "1002"
        assert load_cursor(reopened, "other:key") == "x"
    finally:
        reopened.dispose()
