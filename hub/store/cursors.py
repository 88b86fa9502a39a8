"""Adapters' cursors: small values kept across restarts (`HubPort.load_cursor`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlmodel import col

from hub.store.db import Database
from hub.store.models import AdapterCursor


def load_cursor(db: Database, key: str) -> str | None:
    with db.session() as session:
        row = session.get(AdapterCursor, key)
        return row.value if row is not None else None


def save_cursor(db: Database, key: str, value: str, at: datetime) -> None:
    with db.session() as session:
        row = session.get(AdapterCursor, key)
        if row is None:
            session.add(AdapterCursor(key=key, value=value, updated_at=at))
        else:
            row.value = value
            row.updated_at = at


def forget_cursor(db: Database, key: str) -> None:
    with db.write() as conn:
        conn.execute(delete(AdapterCursor).where(col(AdapterCursor.key) == key))


def prune_cursors(db: Database, prefix: str, before: datetime) -> int:
    """Delete the cursors under `prefix` last saved before `before`; how many went."""
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with db.write() as conn:
        result = conn.execute(
            delete(AdapterCursor).where(
                col(AdapterCursor.key).like(pattern, escape="\\"),
                col(AdapterCursor.updated_at) < before,
            )
        )
    return int(result.rowcount or 0)
