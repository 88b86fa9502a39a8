"""Platform updates the hub could not handle (issue 41, class 11).

An update whose normalizing or storing raised (a bug, text nothing can encode, a value the
database refuses) used to be fetched again for ever: Telegram polling stalled for everyone
behind it, and a webhook answered 500 so the platform redelivered it. Now the adapter hands
it here (`HubPort.update_failed`): it is kept as an audit entry `update.failed` (the
platform, its update id, the error, the update's JSON with un-encodable text replaced and
secrets redacted), the adapter moves past it, and health names it for a day
(`/api/system/health` problems and `failed_updates`, `animahub status`). A database that is
away is not such a failure: the update is not acknowledged and comes again
(`hub.adapter.is_transient`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, func, select

from hub.messages import clean_json, clean_text
from hub.redaction.redact import redact, redact_json
from hub.store.db import Database
from hub.store.models import AuditEntry

ACTION = "update.failed"
SHOWN_FOR = timedelta(days=1)  # how long health names a failed update
_KEPT_CHARS = 20_000  # of the update's JSON; a longer one is kept cut


def record(
    db: Database, now: datetime, platform: str, update_id: str, error: BaseException, raw: Any
) -> None:
    update = redact_json(clean_json(raw))
    text = json.dumps(update, ensure_ascii=False, default=str)
    if len(text) > _KEPT_CHARS:
        update = {"cut": text[:_KEPT_CHARS]}
    reason = redact(clean_text(f"{type(error).__name__}: {error}"))[0][:1000]
    with db.session() as session:
        session.add(
            AuditEntry(
                at=now,
                actor=platform,
                where=platform,
                action=ACTION,
                target=clean_text(update_id)[:300],
                detail={"error": reason, "update": update},
            )
        )


def recent(db: Database, now: datetime) -> dict[str, Any]:
    """How many updates failed in the last day, and the latest's platform, id and error."""
    since = now - SHOWN_FOR
    with db.session() as session:
        query = select(AuditEntry).where(AuditEntry.action == ACTION, col(AuditEntry.at) >= since)
        count = session.exec(select(func.count()).select_from(query.subquery())).one()
        latest = session.exec(query.order_by(col(AuditEntry.id).desc()).limit(1)).first()
    if latest is None:
        return {"count": 0, "latest": None}
    return {
        "count": count,
        "latest": {
            "platform": latest.where,
            "update": latest.target,
            "at": latest.at.isoformat(),
            "error": latest.detail.get("error", ""),
        },
    }
