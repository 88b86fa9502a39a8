"""Adapter cursors: a small value per key that survives a restart (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hub.store.cursors import forget_cursor, load_cursor, prune_cursors, save_cursor
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


def test_cursors_are_forgotten_one_by_one_or_by_prefix_and_age(db: Database) -> None:
    old, new = AT - timedelta(days=8), AT
    save_cursor(db, "preview_slack:aa", "1", old)
    save_cursor(db, "preview_slack:bb", "2", new)
    save_cursor(db, "previewXslack:cc", "3", old)  # "_" or "%" in a prefix are not wildcards
    save_cursor(db, "telegram:offset", "4", old)
    assert prune_cursors(db, "preview_slack:", AT - timedelta(days=7)) == 1
    assert load_cursor(db, "preview_slack:aa") is None
    assert load_cursor(db, "preview_slack:bb") == "2"
    assert load_cursor(db, "previewXslack:cc") == "3"
    assert load_cursor(db, "telegram:offset") == "4"
    forget_cursor(db, "preview_slack:bb")
    forget_cursor(db, "preview_slack:bb")  # forgetting what is not there is fine
    assert load_cursor(db, "preview_slack:bb") is None
