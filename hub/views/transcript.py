"""A conversation or channel as people see it: their messages and the Animas' sent replies."""

from __future__ import annotations

from sqlalchemy import CompoundSelect, func, or_, union
from sqlmodel import col, select

from hub.adapter import ConversationEntry, TranscriptEntry
from hub.messages import Address, DeliveryStatus
from hub.redaction.redact import redact
from hub.store.db import Database, as_utc
from hub.store.models import DeliveryRow, InboxItem, InboxStatus
from hub.turns.inbox import WAITING

# What people see of the inbox: all but what no Anima was meant to answer.
_SHOWN_INBOX = (*WAITING, InboxStatus.DONE, InboxStatus.FAILED, InboxStatus.UNROUTED)


def transcript(db: Database, address: Address, limit: int) -> list[TranscriptEntry]:
    """Newest `limit` entries, oldest first. A thread narrows to it; no thread = whole channel."""
    with db.session() as session:
        inbox_q = select(InboxItem).where(col(InboxItem.status).in_(_SHOWN_INBOX))
        # A hub command (`/whoami`) is done without an Anima; its answer went to the sender
        # alone, so the command is not shown to the channel either.
        inbox_q = inbox_q.where(
            or_(col(InboxItem.status) != InboxStatus.DONE, col(InboxItem.anima).is_not(None))
        )
        sent_q = select(DeliveryRow).where(DeliveryRow.status == DeliveryStatus.SENT)
        if address.thread:
            inbox_q = inbox_q.where(InboxItem.conversation == str(address))
            sent_q = sent_q.where(DeliveryRow.address == str(address))
        else:
            inbox_q = inbox_q.where(InboxItem.channel_key == address.channel_key)
            sent_q = sent_q.where(DeliveryRow.channel_key == address.channel_key)
        inbox = session.exec(inbox_q.order_by(col(InboxItem.received_at).desc()).limit(limit))
        sent = session.exec(sent_q.order_by(col(DeliveryRow.created_at).desc()).limit(limit))
        entries = [
            TranscriptEntry(
                id=row.id,
                address=row.address,
                author=row.sender_name or row.sender_key,
                author_kind="person",
                # A row is stored redacted once answered; one still waiting is shown so too.
                text=redact(row.text)[0],
                at=as_utc(row.received_at).isoformat(),
                message_id=row.event_id,
            )
            for row in inbox
        ] + [
            TranscriptEntry(
                id=row.id,
                address=row.address,
                author=row.anima,
                author_kind="anima",
                text=row.text,
                at=as_utc(row.created_at).isoformat(),
                anima=row.anima,
            )
            for row in sent
        ]
    entries.sort(key=lambda e: e.at)
    return entries[-limit:]


def conversations(
    db: Database, address: Address, limit: int, text: str = ""
) -> list[ConversationEntry]:
    """The threads of a channel (in the web chat: one person's conversations with one
    Anima, a thread each), the latest active first, each with its first message; with
    `text`, those in which a person or the Anima said it."""
    last = func.max(InboxItem.received_at)
    threads_q = (
        select(InboxItem.conversation, func.min(InboxItem.received_at), last, func.count())
        .where(InboxItem.channel_key == address.channel_key)
        .where(col(InboxItem.status).in_(_SHOWN_INBOX))
    )
    if needle := text.strip().lower():
        threads_q = threads_q.where(col(InboxItem.conversation).in_(_saying(address, needle)))
    with db.session() as session:
        threads = session.exec(
            threads_q.group_by(col(InboxItem.conversation)).order_by(last.desc()).limit(limit)
        ).all()
        entries = []
        for conversation, first_at, last_at, count in threads:
            thread = conversation.partition("#")[2]
            if not thread:  # the channel itself, not one of its threads
                continue
            first = session.exec(
                select(InboxItem.text)
                .where(InboxItem.conversation == conversation)
                .order_by(col(InboxItem.received_at))
                .limit(1)
            ).first()
            entries.append(
                ConversationEntry(
                    thread,
                    redact(first or "")[0][:200],
                    as_utc(first_at).isoformat(),
                    as_utc(last_at).isoformat(),
                    int(count),
                )
            )
    return entries


def _saying(address: Address, needle: str) -> CompoundSelect[tuple[str]]:
    """The conversations of `address`'s channel in which someone said `needle` (lowercase):
    a person's message, or a reply sent there."""
    said = select(InboxItem.conversation).where(
        InboxItem.channel_key == address.channel_key,
        func.lower(col(InboxItem.text)).contains(needle, autoescape=True),
    )
    answered = select(DeliveryRow.address).where(
        DeliveryRow.channel_key == address.channel_key,
        DeliveryRow.status == DeliveryStatus.SENT,
        func.lower(col(DeliveryRow.text)).contains(needle, autoescape=True),
    )
    return union(said, answered)
