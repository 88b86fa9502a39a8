"""The audit log read back: who did what, where, latest first (`GET /api/audit`).

Entries are written where the action happens (commands, the API, the outbox, admission);
this module only reads them.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlmodel import col, select

from hub.store.db import Database
from hub.store.models import AuditEntry


def entries(db: Database, limit: int, action: str = "") -> list[AuditEntry]:
    """The latest `limit` entries; `action` narrows to it and its family (`delivery` is
    `delivery.failed`, `delivery.retry`, …; `anima.pause` is that action alone)."""
    query = select(AuditEntry).order_by(col(AuditEntry.id).desc()).limit(limit)
    if action:
        family = action.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ".%"
        query = query.where(
            or_(col(AuditEntry.action) == action, col(AuditEntry.action).like(family, "\\"))
        )
    with db.session() as session:
        return list(session.exec(query).all())
