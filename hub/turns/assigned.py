"""Inbox rows between hub workers (docs/scale.md, "Ingress and order"): a message routed on
one worker to an Anima another worker holds is *assigned* (its row names the Anima) and left
`received` for the holder, which is told by `NOTIFY inbox` and also finds it by its sweep.
The holder names the rows it routes itself too, before they wait in its lanes: if it stops
or loses the Anima first, the next holder's sweep finds them.

A row found `processing` by the holder of its Anima, and in no lane of the holder, was cut
off on the worker that held the Anima before (it stopped, or lost its lease): it is opened
again, as a restart opens the rows it cut off. A worker that stops on purpose hands its
running rows back first, so a rolling restart does not count against
`max_turn_interruptions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy import Connection, select, text, update
from sqlmodel import col

from hub.store.db import Database
from hub.store.models import InboxItem, InboxStatus
from hub.turns.inbox import OPEN
from hub.turns.mailbox import TurnJob

INBOX = "inbox"  # the NOTIFY channel: its payload names the Anima
_NOTIFY = text("SELECT pg_notify('inbox', :anima)")
_BATCH = 500


class Assigned(NamedTuple):
    id: str
    anima: str
    conversation: str
    person_id: str | None
    status: InboxStatus

    @property
    def job(self) -> TurnJob:
        return TurnJob(self.id, self.anima, self.conversation, self.person_id)


def assign(db: Database, job: TurnJob, tell: bool = True) -> None:
    """Name the row's Anima (and person) for the worker that holds it, and tell that one
    (`tell`: the holder is another worker)."""
    values: dict[str, object] = {"anima": job.anima}
    if job.person_id:
        values["person_id"] = job.person_id
    with db.write() as conn:
        conn.execute(
            update(InboxItem)
            .where(col(InboxItem.id) == job.inbox_id, col(InboxItem.status).in_(OPEN))
            .values(**values)
        )
        if tell and conn.dialect.name == "postgresql":
            conn.execute(_NOTIFY, {"anima": job.anima})


def open_assigned(db: Database) -> list[Assigned]:
    """Every open row that names its Anima, oldest first (what a holder's sweep looks at)."""
    with db.engine.connect() as conn:
        rows = conn.execute(
            select(
                col(InboxItem.id),
                col(InboxItem.anima),
                col(InboxItem.conversation),
                col(InboxItem.person_id),
                col(InboxItem.status),
            )
            .where(col(InboxItem.status).in_(OPEN), col(InboxItem.anima).is_not(None))
            .order_by(col(InboxItem.received_at), col(InboxItem.id))
        ).all()
    return [
        Assigned(r.id, r.anima, r.conversation, r.person_id, InboxStatus(r.status)) for r in rows
    ]


def reopen_cut_off(conn: Connection, inbox_id: str) -> bool:
    """A row another worker was running when it lost the Anima: open again, counted as an
    interruption (as at a restart)."""
    return bool(
        conn.execute(
            update(InboxItem)
            .where(col(InboxItem.id) == inbox_id, col(InboxItem.status) == InboxStatus.PROCESSING)
            .values(status=InboxStatus.RECEIVED, interrupted=InboxItem.interrupted + 1)
        ).rowcount
    )


def hand_back(db: Database, ids: Iterable[str]) -> int:
    """At a stop: rows this worker was running go back to `received`, costing nothing."""
    wanted = list(ids)
    if not wanted:
        return 0
    with db.write() as conn:
        result = conn.execute(
            update(InboxItem)
            .where(col(InboxItem.id).in_(wanted), col(InboxItem.status) == InboxStatus.PROCESSING)
            .values(status=InboxStatus.RECEIVED)
        )
    return int(result.rowcount or 0)


def closed_among(db: Database, ids: list[str]) -> list[str]:
    """Which of the rows `ids` are closed (answered, failed, held, given up on)."""
    closed: list[str] = []
    with db.engine.connect() as conn:
        for at in range(0, len(ids), _BATCH):
            batch = ids[at : at + _BATCH]
            closed += conn.execute(
                select(col(InboxItem.id)).where(
                    col(InboxItem.id).in_(batch), col(InboxItem.status).not_in(OPEN)
                )
            ).scalars()
    return closed
