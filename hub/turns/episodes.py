"""A turn's episode: what an Anima's memory keeps of each answered message.

The turn is committed first (the database is the record of what was answered), then its
episode is appended to the day's markdown. A stop between the two would lose the episode,
so at start the last turns are recorded again: appending is idempotent by inbox id
(hub/memory/documents.py), so what was already there is left alone. The event loop runs
one turn's commit and append without a pause between them, so only the last turns can be
in that window.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import col, select

from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService, TurnRecord
from hub.messages import Address, AddressKind
from hub.store.db import Database
from hub.store.models import InboxItem, InboxStatus, Turn

log = logging.getLogger(__name__)
# Offline replies are boilerplate: memory keeps what the person said, not the template.
OFFLINE_NOTE = "_(answered in offline mode)_"
_REPLAYED_TURNS = 32  # far more than can be between commit and append at a stop


@dataclass(frozen=True, slots=True)
class Answered:
    """One answered message, as its episode needs it."""

    anima: str
    inbox_id: str
    person_id: str | None
    person_name: str
    address: Address
    channel_key: str
    said: str
    reply: str  # what memory keeps of the reply (OFFLINE_NOTE for an offline answer)
    at: datetime


def describe(address: Address) -> str:
    if address.kind is AddressKind.DM:
        return f"a direct conversation on {address.platform}"
    return f"#{address.channel} on {address.platform}"


def record(memory: MemoryService, turn: Answered) -> None:
    scope = RecallScope(
        turn.anima, turn.person_id, turn.channel_key, turn.address.kind is AddressKind.DM
    )
    memory.record_turn(
        TurnRecord(
            anima=turn.anima,
            inbox_id=turn.inbox_id,
            person_id=turn.person_id,
            person_name=turn.person_name,
            where=describe(turn.address),
            channel_key=turn.channel_key,
            scope=scope.scope_of_new_item(),
            user_text=turn.said,
            reply=turn.reply,
            at=turn.at,
            # With no model to judge what matters, keep what people say about themselves.
            learn_self_statements=turn.reply == OFFLINE_NOTE,
        )
    )


def replay_recent(db: Database, memory: MemoryService, known: set[str]) -> int:
    """Record the episodes of the last answered turns again (for Animas in `known`); the
    number that were missing and are now written."""
    with db.session() as session:
        recent = session.exec(
            select(Turn).order_by(col(Turn.id).desc()).limit(2 * _REPLAYED_TURNS)
        ).all()
        ids = {t.inbox_id for t in recent if t.inbox_id}
        rows = {
            row.id: row
            for row in session.exec(
                select(InboxItem).where(
                    col(InboxItem.id).in_(ids), col(InboxItem.status) == InboxStatus.DONE
                )
            ).all()
        }
    sides: dict[str, dict[str, Turn]] = {}
    for t in recent:
        if t.inbox_id in rows:
            sides.setdefault(t.inbox_id, {})[t.role] = t
    written = 0
    for inbox_id, pair in sides.items():
        row, user, reply = rows[inbox_id], pair.get("user"), pair.get("assistant")
        if user is None or reply is None or user.anima not in known:
            continue
        if memory.has_episode(user.anima, inbox_id, user.created_at):
            continue
        record(
            memory,
            Answered(
                anima=user.anima,
                inbox_id=inbox_id,
                person_id=user.person_id,
                person_name=user.author,
                address=Address.parse(row.address, row.address_kind),
                channel_key=row.channel_key,
                said=user.text,
                reply=reply.text,
                at=user.created_at,
            ),
        )
        written += 1
    if written:
        log.warning("recorded %d episodes a stop had cut off", written)
    return written
