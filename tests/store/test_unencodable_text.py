"""Issue 41, class 11, at the store, on SQLite and PostgreSQL: an inbound holding lone
UTF-16 surrogates (text, names, raw JSON) is stored with U+FFFD; an update kept as failed
is stored without them, and `recent` counts it for health."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hub.inbound import failed_updates
from hub.inbound.ingress import Ingress, storable
from hub.messages import Address, Inbound, PlatformUser
from hub.store.db import Database

LONE = "\ud800"
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def test_an_inbound_with_lone_surrogates_is_stored_with_replacement_characters(
    db: Database,
) -> None:
    dirty = Inbound(
        event_id=f"ev-{LONE}",
        address=Address("telegram", "bot", "1001"),
        sender=PlatformUser("telegram", "1001", f"Al{LONE}ce"),
        text=f"hi {LONE}\udc00 there",
        raw={"message": {"text": f"hi {LONE}", f"k{LONE}": [LONE]}},
    )
    row, duplicate = Ingress(db, max_message_bytes=10_000).accept(storable(dirty))
    assert not duplicate
    assert row.text == "hi \ufffd\ufffd there"
    assert row.sender_name == "Al\ufffdce" and row.event_id == "ev-\ufffd"
    assert row.raw == {"message": {"text": "hi \ufffd", "k\ufffd": ["\ufffd"]}}


def test_an_update_kept_as_failed_is_stored_clean_and_counted_for_a_day(db: Database) -> None:
    error = ValueError(f"cannot take {LONE}")
    raw = {"update_id": 7, "message": {"text": f"x{LONE}"}}
    failed_updates.record(db, NOW - timedelta(days=2), "telegram", "6", error, raw)
    assert failed_updates.recent(db, NOW) == {"count": 0, "latest": None}
    failed_updates.record(db, NOW, "telegram", "7", error, raw)
    shown = failed_updates.recent(db, NOW)
    assert shown["count"] == 1
    assert shown["latest"]["update"] == "7"
    assert shown["latest"]["error"] == "ValueError: cannot take \ufffd"
