"""What the LINE tests ask of the hub: inbox rows and the bot's posts."""

from __future__ import annotations

from sqlmodel import select

from animahub_kit.contract.harness import Posted, eventually
from animahub_kit.contract.line_harness import LineHarness
from hub.store.models import InboxItem


def inbox_count(h: LineHarness) -> int:
    with h.hub.db.session() as session:
        return len(session.exec(select(InboxItem.id)).all())


def inbox_row(h: LineHarness, event_id: str) -> InboxItem | None:
    with h.hub.db.session() as session:
        return session.exec(
            select(InboxItem).where(InboxItem.platform == "line", InboxItem.event_id == event_id)
        ).first()


async def settled_row(h: LineHarness, sent: object) -> InboxItem:
    event_id = str(getattr(sent, "event_id", sent))

    def finished() -> InboxItem | None:
        row = inbox_row(h, event_id)
        return row if row is not None and row.status not in ("received", "processing") else None

    row: InboxItem = await eventually(finished)
    return row


async def reply_to(h: LineHarness, needle: str) -> Posted:
    posted: Posted = await eventually(
        lambda: next((p for p in h.posted() if needle in p.text), None)
    )
    return posted
