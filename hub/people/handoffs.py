"""Where you left off (docs/people.md): the handoffs of DM sessions, and offering them once.

When a DM session ends (hub/schedule/sessions.py) the Anima writes a handoff for the person: what
was
discussed, open questions, next steps (`hub/memory/handoff.py`). When the person comes back
in a DM on another platform or conversation, or in the same one after a gap
(`[people] handoff_gap_hours`), the turn is offered the newest one, and it is marked offered
in the transaction that commits that turn: a turn the hub stopped in offers it again when
it runs again, and a turn that committed never offers it twice.

"Offer, don't claim": a handoff is looked up only for its own person (merged ids included)
in a DM; a turn in a channel, or anyone else's turn, neither sees nor uses it up. A newer
handoff of the same person and Anima supersedes the older ones; each expires after
`[people] handoff_days`, and goes when the person is forgotten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from hub.memory.distill import Session
from hub.memory.handoff import HandoffNote
from hub.settings import PeopleSection
from hub.store.db import Database, as_utc
from hub.store.models import Handoff, HandoffStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Offer:
    """A handoff as a turn is offered it."""

    id: int
    where: str  # where it was written: "a direct conversation on telegram"
    ended_at: datetime
    note: HandoffNote

    def lines(self) -> list[str]:
        """The handoff in a few lines, as the offline mode and the model's prompt show it."""
        lines = [
            f"Last time ({self.where}, {self.ended_at:%Y-%m-%d %H:%M} UTC): {self.note.discussed}"
        ]
        if self.note.open_questions:
            lines.append("Still open: " + " ".join(self.note.open_questions))
        if self.note.next_steps:
            lines.append("Next steps: " + " ".join(self.note.next_steps))
        return lines


@dataclass(frozen=True, slots=True)
class HandoffView:
    """A handoff as the API lists it."""

    id: int
    anima: str
    where: str
    ended_at: datetime
    expires_at: datetime
    status: HandoffStatus
    offered_at: datetime | None
    note: HandoffNote


class Handoffs:
    def __init__(
        self,
        db: Database,
        settings: PeopleSection,
        current: Callable[[str], str],
        ids_of: Callable[[str], tuple[str, ...]],
    ) -> None:
        self._db = db
        self._gap = timedelta(hours=settings.handoff_gap_hours)
        self._keep = timedelta(days=settings.handoff_days)
        self._current = current  # a person id, or one merged away -> the person's id now
        self._ids_of = ids_of  # a person's id and the ids merged into it

    def write(self, session: Session, note: HandoffNote, now: datetime) -> bool:
        """Keep the handoff of a DM session that ended (once per session)."""
        if not session.dm or session.person_id is None or note.empty or not session.turns:
            return False
        ended = max(turn.at for turn in session.turns)
        person = self._current(session.person_id)
        row = Handoff(
            person_id=person,
            anima=session.anima,
            conversation=session.conversation,
            where=session.where,
            last_turn_id=session.last_turn_id,
            discussed=note.discussed,
            open_questions=list(note.open_questions),
            next_steps=list(note.next_steps),
            ended_at=ended,
            expires_at=ended + self._keep,
        )
        try:
            with self._db.session() as store:
                store.exec(
                    update(Handoff)
                    .where(col(Handoff.person_id) == person, col(Handoff.anima) == session.anima)
                    .where(col(Handoff.status) == HandoffStatus.WAITING)
                    .values(status=HandoffStatus.SUPERSEDED)
                )
                store.exec(delete(Handoff).where(col(Handoff.expires_at) <= now))
                store.add(row)
        except IntegrityError:  # written before a stop, with its session not yet marked
            return False
        log.info(
            "handoff for %s written (%s)", person, session.where, extra={"anima": session.anima}
        )
        return True

    def offer(self, person_id: str, anima: str, conversation: str, now: datetime) -> Offer | None:
        """The handoff to offer a DM turn of `person_id` in `conversation`, if one is due."""
        with self._db.session() as store:
            row = store.exec(
                self._live(person_id, now).where(
                    Handoff.anima == anima, Handoff.status == HandoffStatus.WAITING
                )
            ).first()
        if row is None or row.id is None:
            return None
        if row.conversation == conversation and now - as_utc(row.ended_at) < self._gap:
            return None  # back in the same conversation soon: it is all still there
        return Offer(row.id, row.where, as_utc(row.ended_at), _note(row))

    @staticmethod
    def offered(conn: Connection, offer: Offer, conversation: str, now: datetime) -> None:
        """In the turn's own transaction: the handoff was offered, never again."""
        conn.execute(
            update(Handoff)
            .where(col(Handoff.id) == offer.id, col(Handoff.status) == HandoffStatus.WAITING)
            .values(status=HandoffStatus.OFFERED, offered_at=now, offered_in=conversation)
        )

    def listing(self, person_id: str, now: datetime) -> list[HandoffView]:
        """The person's handoffs not yet expired, newest first."""
        with self._db.session() as store:
            rows = store.exec(self._live(person_id, now)).all()
        return [
            HandoffView(
                row.id or 0,
                row.anima,
                row.where,
                as_utc(row.ended_at),
                as_utc(row.expires_at),
                row.status,
                as_utc(row.offered_at) if row.offered_at else None,
                _note(row),
            )
            for row in rows
        ]

    def _live(self, person_id: str, now: datetime) -> SelectOfScalar[Handoff]:
        """The person's handoffs (merged ids included) not yet expired, newest first."""
        return (
            select(Handoff)
            .where(col(Handoff.person_id).in_(self._ids_of(person_id)))
            .where(col(Handoff.expires_at) > now)
            .order_by(col(Handoff.ended_at).desc(), col(Handoff.id).desc())
        )

    def forget(self, ids: tuple[str, ...]) -> int:
        with self._db.write() as conn:
            gone = conn.execute(delete(Handoff).where(col(Handoff.person_id).in_(ids)))
        return int(gone.rowcount or 0)


def _note(row: Handoff) -> HandoffNote:
    return HandoffNote(row.discussed, tuple(row.open_questions), tuple(row.next_steps))
