"""Session boundaries: a conversation idle long enough has its new turns summarized, and a
DM's person gets a handoff of it (hub/people/handoffs.py).

Each turn is already in the episode log as it happens; the session summary adds the shape
of the whole exchange (who, what about, what was decided) as one episode, which is what
daily consolidation and later recall work best from. `session_mark` remembers, per
conversation and Anima, the last turn a summary covered, so nothing is summarized twice.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import col, select

from hub.memory.consolidation import Consolidator, Session, SessionTurn
from hub.memory.recall import RecallScope
from hub.messages import Address, AddressKind
from hub.people.handoffs import Handoffs
from hub.store.db import Database, as_utc
from hub.store.models import InboxItem, SessionMark, Turn
from hub.turns.episodes import describe

log = logging.getLogger(__name__)
# Conversations quiet for longer than this are not looked at again (their marks stay).
_LOOKBACK = timedelta(days=2)


async def close_idle_sessions(
    db: Database,
    consolidator: Consolidator,
    now: datetime,
    idle: timedelta,
    handoffs: Handoffs | None = None,
) -> int:
    """Summarize every conversation idle for `idle` with turns no summary covers yet."""
    closed = 0
    for conversation, anima, last_id in _idle(db, now, idle):
        await asyncio.sleep(0)  # paced: after a pause there may be dozens to summarise
        session = _session(db, conversation, anima, last_id)
        if session is None:
            continue
        report = await consolidator.session(session, now)
        if handoffs is not None and session.dm:
            handoffs.write(session, await consolidator.distiller(anima).handoff(session), now)
        with db.session() as store:
            mark = store.get(SessionMark, (conversation, anima)) or SessionMark(
                conversation=conversation, anima=anima
            )
            mark.last_turn_id, mark.at = session.last_turn_id, now
            store.add(mark)
        log.info("session %s closed: %s", conversation, report.summary(), extra={"anima": anima})
        closed += 1
    return closed


def _idle(db: Database, now: datetime, idle: timedelta) -> list[tuple[str, str, int]]:
    with db.session() as store:
        latest = store.exec(
            select(Turn.conversation, Turn.anima, func.max(Turn.id), func.max(Turn.created_at))
            .where(col(Turn.created_at) > now - _LOOKBACK)
            .group_by(col(Turn.conversation), col(Turn.anima))
        ).all()
        marks = {(m.conversation, m.anima): m.last_turn_id for m in store.exec(select(SessionMark))}
    cutoff = now - idle
    return [
        (conversation, anima, last_id)
        for conversation, anima, last_id, last_at in latest
        if last_at is not None
        and last_id is not None
        and as_utc(last_at) <= cutoff  # SQLite hands back naive UTC
        and last_id > marks.get((conversation, anima), 0)
    ]


def _session(db: Database, conversation: str, anima: str, last_id: int) -> Session | None:
    with db.session() as store:
        mark = store.get(SessionMark, (conversation, anima))
        after = mark.last_turn_id if mark else 0
        turns = store.exec(
            select(Turn)
            .where(Turn.conversation == conversation, Turn.anima == anima)
            .where(col(Turn.id) > after, col(Turn.id) <= last_id)
            .order_by(col(Turn.id))
        ).all()
        first_inbox = next((t.inbox_id for t in turns if t.inbox_id), None)
        inbox = store.get(InboxItem, first_inbox) if first_inbox else None
    if not turns or inbox is None:
        return None
    address = Address.parse(inbox.address, inbox.address_kind)
    person = next((t.person_id for t in turns if t.person_id), None)
    scope = RecallScope(anima, person, inbox.channel_key, address.kind is AddressKind.DM)
    return Session(
        anima=anima,
        conversation=conversation,
        channel_key=inbox.channel_key,
        where=describe(address),
        person_id=person,
        scope=scope.scope_of_new_item(),
        turns=[SessionTurn(t.role, t.author, t.text, as_utc(t.created_at)) for t in turns],
        last_turn_id=last_id,
        dm=address.kind is AddressKind.DM,
    )
