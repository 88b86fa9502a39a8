"""The inbox row's life: the one module that moves a row between `InboxStatus` states.

Ingress inserts a row `received`. From there:

    received --claim--> processing --close--> done | failed
    processing --release--> received            (the model was down: retried later, in its lane)
    processing --mark_interrupted--> received   (the hub stopped mid-turn: on the next start)
    received | processing --hold--> held        (its Anima is paused)
    held --release_held--> received             (the Anima resumed)
    received --close--> ignored | unrouted | failed   (dispatch and commands)

`open` rows (received, processing) are what a turn may claim and what recovery resubmits
after a restart; a held row waits for its Anima. A closed row's text is redacted: the
message was answered, and the database keeps no secret the person pasted.

Every method that must share a transaction with a delivery takes the caller's connection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Connection, Row, bindparam, func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from hub.messages import Address, utcnow
from hub.redaction.redact import redact, redact_json
from hub.store.db import Database, scrub_after_commit
from hub.store.models import InboxItem, InboxStatus
from hub.turns.mailbox import TurnJob

OPEN = (InboxStatus.RECEIVED, InboxStatus.PROCESSING)
WAITING = (*OPEN, InboxStatus.HELD)  # not answered yet
CLOSED = (InboxStatus.DONE, InboxStatus.FAILED, InboxStatus.IGNORED, InboxStatus.UNROUTED)
Guard = Callable[[Connection, str], None]  # (the transaction, the Anima): Ownership.guard


class Claimed(NamedTuple):
    """What a turn reads of its inbox row, as the claim returned it: its address parsed
    once, here, from the row's two columns (`address`, `address_kind`)."""

    id: str
    event_id: str
    conversation: str
    address: Address
    channel_key: str
    reply_to: str | None
    sender_key: str
    sender_name: str
    person_id: str | None
    text: str
    attempts: int
    interrupted: int
    attachments: list[dict[str, Any]]
    failing_since: datetime | None


class ConversationBusy(Exception):
    """Another turn of this Anima's conversation is running (on another worker: in one
    process the mailbox lane already keeps them apart). This one waits behind it."""


class HeldRow(NamedTuple):
    """Where the notice for a held message goes."""

    sender_key: str
    channel_key: str
    address: Address
    event_id: str
    reply_to: str | None


_COLUMNS = InboxItem.__table__.c  # type: ignore[attr-defined]
_Read = TypeVar("_Read", Claimed, HeldRow)


def _columns(fields: tuple[str, ...]) -> list[Any]:
    """The columns a row type is read from: its `address` is two, address and its kind."""
    names = [n for f in fields for n in ((f, "address_kind") if f == "address" else (f,))]
    return [_COLUMNS[name] for name in names]


def _read(kind: type[_Read], found: Row[Any]) -> _Read:
    values = found._asdict()
    values["address"] = Address.parse(values["address"], values.pop("address_kind"))
    return kind(**values)


# Built once: every turn claims and closes its row (see bench/README.md for the cost).
_CLAIM = (
    update(InboxItem)
    .where(col(InboxItem.id) == bindparam("row_id"))
    .where(col(InboxItem.status).in_(OPEN))
    .values(
        status=InboxStatus.PROCESSING,
        anima=bindparam("to_anima"),
        person_id=func.coalesce(bindparam("sender_id"), InboxItem.person_id),
    )
    .returning(*_columns(Claimed._fields))
)
_CLOSE = (
    update(InboxItem)
    .where(col(InboxItem.id) == bindparam("row_id"))
    .values(status=bindparam("new_status"), error=bindparam("reason"), finished_at=bindparam("at"))
)
_OPEN_ROW = select(*_columns(Claimed._fields)).where(
    col(InboxItem.id) == bindparam("row_id"), col(InboxItem.status).in_(OPEN)
)
_RAW = select(col(InboxItem.raw)).where(col(InboxItem.id) == bindparam("row_id"))


class Inbox:
    def __init__(self, db: Database, clock: Callable[[], datetime] = utcnow) -> None:
        self._db = db
        self._clock = clock

    # turns --------------------------------------------------------------------------------

    def claim(self, job: TurnJob, guard: Guard | None = None) -> Claimed | None:
        """Claim the row for one attempt of its turn; None when it is not open any more
        (answered, held or given up on). ConversationBusy when another turn of the same
        Anima and conversation is running: the database's index says so. `guard` runs
        first in the same transaction (hub/store/ownership.py: it raises Fenced when this
        worker no longer holds the Anima)."""
        values = {"row_id": job.inbox_id, "to_anima": job.anima, "sender_id": job.person_id or None}
        try:
            with self._db.write() as conn:
                if guard is not None:
                    guard(conn, job.anima)
                found = conn.execute(_CLAIM, values).first()
        except IntegrityError as exc:
            raise ConversationBusy(job.conversation) from exc
        return _read(Claimed, found) if found is not None else None

    def release(self, conn: Connection, inbox_id: str, error: str, since: datetime) -> None:
        """Give a claimed row back for a later attempt, in the caller's transaction: this one
        failed (the model was unavailable) and counts towards `runtime.max_turn_attempts`;
        `since`: when this spell of failures began (`runtime.model_retry_for_s` counts from
        it). The row stays open, so a restart picks it up with its attempts."""
        conn.execute(
            update(InboxItem)
            # Only an open row: one a pause held meanwhile stays held.
            .where(col(InboxItem.id) == inbox_id, col(InboxItem.status).in_(OPEN))
            .values(
                status=InboxStatus.RECEIVED,
                error=error,
                attempts=InboxItem.attempts + 1,
                failing_since=since,
            )
        )

    def still_open(self, inbox_id: str) -> Claimed | None:
        """The row as a claim reads it, if it is still open; None once it is closed or held
        (a turn that crashed after its commit: answered; or given up on)."""
        with self._db.engine.connect() as conn:
            found = conn.execute(_OPEN_ROW, {"row_id": inbox_id}).first()
        return _read(Claimed, found) if found is not None else None

    def close(
        self,
        conn: Connection,
        inbox_id: str,
        status: InboxStatus,
        *,
        text: str,
        error: str | None = None,
    ) -> None:
        """Finish a row in the caller's transaction; `text` is the row's message, stored
        redacted from now on (with the platform payload it came in) if it held a secret."""
        if status not in CLOSED:
            raise ValueError(f"{status} is not a closing state")
        conn.execute(
            _CLOSE, {"row_id": inbox_id, "new_status": status, "reason": error, "at": self._clock()}
        )
        clean, kinds = redact(text)
        if kinds:
            raw = conn.execute(_RAW, {"row_id": inbox_id}).scalar_one()
            conn.execute(
                update(InboxItem)
                .where(col(InboxItem.id) == inbox_id)
                .values(text=clean, raw=redact_json(raw))
            )
            scrub_after_commit(conn)

    def close_now(
        self,
        row: InboxItem,
        status: InboxStatus,
        error: str | None,
        *,
        anima: str | None = None,
        person_id: str | None = None,
    ) -> None:
        """Finish a row in a transaction of its own, recording who it was from and for."""
        row.status, row.anima, row.person_id, row.error = status, anima, person_id, error
        with self._db.write() as conn:
            # An UPDATE by id: a row fresh from ingress is in no session, and adding it to one
            # would INSERT it a second time (and hit the unique event id).
            conn.execute(
                update(InboxItem)
                .where(col(InboxItem.id) == row.id)
                .values(anima=anima, person_id=person_id)
            )
            self.close(conn, row.id, status, text=row.text, error=error)

    # paused Animas ------------------------------------------------------------------------

    def hold(self, conn: Connection, job: TurnJob, notice: str) -> HeldRow | None:
        """Hold an open row for its paused Anima; None when it is not open."""
        changes: dict[str, object] = {
            "status": InboxStatus.HELD,
            "anima": job.anima,
            "error": notice,
        }
        if job.person_id:
            changes["person_id"] = job.person_id
        found = conn.execute(
            update(InboxItem)
            .where(col(InboxItem.id) == job.inbox_id, col(InboxItem.status).in_(OPEN))
            .values(**changes)
            .returning(*_columns(HeldRow._fields))
        ).first()
        return _read(HeldRow, found) if found is not None else None

    def release_held(self, conn: Connection, anima: str) -> list[TurnJob]:
        """Open every row held for `anima` again; their jobs, oldest first."""
        released = conn.execute(
            update(InboxItem)
            .where(col(InboxItem.anima) == anima, col(InboxItem.status) == InboxStatus.HELD)
            .values(status=InboxStatus.RECEIVED, error=None)
            .returning(
                col(InboxItem.id),
                col(InboxItem.conversation),
                col(InboxItem.person_id),
                col(InboxItem.received_at),
            )
        ).all()
        ordered = sorted(released, key=lambda r: (r.received_at, r.id))
        return [TurnJob(r.id, anima, r.conversation, r.person_id) for r in ordered]

    # recovery and counts ------------------------------------------------------------------

    def mark_interrupted(self) -> int:
        """At start-up, before any turn runs: rows still `processing` were cut off by the
        previous run's end. A crash is not the turn's failure, so it costs no attempt; it
        is counted apart, so that a message whose turn kills the hub each time is given up
        on (`runtime.max_turn_interruptions`) instead of killing it forever."""
        with self._db.write() as conn:
            result = conn.execute(
                update(InboxItem)
                .where(col(InboxItem.status) == InboxStatus.PROCESSING)
                .values(status=InboxStatus.RECEIVED, interrupted=InboxItem.interrupted + 1)
            )
        return int(result.rowcount or 0)

    def unfinished(self) -> Sequence[InboxItem]:
        """Open rows a previous run accepted but did not finish, oldest first."""
        with self._db.session() as session:
            return session.exec(
                select(InboxItem)
                .where(col(InboxItem.status).in_(OPEN))
                .order_by(col(InboxItem.received_at))
            ).all()

    def get(self, inbox_id: str) -> InboxItem | None:
        with self._db.session() as session:
            return session.get(InboxItem, inbox_id)
