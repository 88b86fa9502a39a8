"""A turn's outcome read back from the store, for a subscriber the running turn is not in this
process for (answered before a restart, or never routed)."""

from __future__ import annotations

from sqlmodel import col, select

from hub.adapter import TurnEvent
from hub.messages import DeliveryKind
from hub.store.db import Database
from hub.store.models import DeliveryRow, InboxItem, InboxStatus
from hub.turns.inbox import OPEN


def stored_outcome(db: Database, inbox_id: str) -> list[TurnEvent]:
    with db.session() as session:
        row = session.get(InboxItem, inbox_id)
        sent = session.exec(
            select(DeliveryRow)
            .where(DeliveryRow.inbox_id == inbox_id)
            .order_by(col(DeliveryRow.created_at))
        ).all()
    # A message may have a notice (its answer was delayed, hub/turns/retry.py) before its reply.
    reply = next((d for d in sent if d.kind == DeliveryKind.REPLY), None)
    if reply is not None and row is not None and row.status == InboxStatus.DONE:
        return [TurnEvent("text", reply.text, reply.anima), TurnEvent("done", "", reply.anima)]
    if sent:
        return [TurnEvent("error", sent[-1].text, sent[-1].anima)]
    if row is not None and row.status in OPEN:
        return [TurnEvent("error", "still being answered; the reply will appear here")]
    reason = (row.error if row else None) or "no reply was recorded for this message"
    return [TurnEvent("error", reason)]


def relayed_outcome(db: Database, inbox_id: str) -> list[TurnEvent]:
    """What a turn that runs on another worker has come to (docs/scale.md): its reply or
    its failure once its row is closed, the notice that its answer is delayed while it is
    retried, nothing while it simply runs."""
    with db.session() as session:
        row = session.get(InboxItem, inbox_id)
    if row is None:
        return []
    if row.status not in OPEN:
        return stored_outcome(db, inbox_id)
    if row.attempts and row.failing_since is not None:
        with db.session() as session:
            notice = session.exec(
                select(DeliveryRow.text).where(DeliveryRow.idempotency_key == f"delayed:{row.id}")
            ).first()
        return [TurnEvent("delayed", notice or "", row.anima or "")]
    return []
