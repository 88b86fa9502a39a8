"""A delivery row as the outbox works on it, and the statements that store it.

`Delivery` is a plain dataclass with the `delivery` table's fields: every message makes one,
and building an ORM object costs several times more than sending it. The statements are
built once (`bench/README.md`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, bindparam, exists, insert, or_, update
from sqlmodel import col, select

from hub.messages import Address, DeliveryKind, DeliveryStatus, utcnow
from hub.store.db import Database
from hub.store.models import AuditEntry, DeliveryRow, OutboxClaimRow

_BATCH = 200
_MAX_KEY = 300  # the idempotency key's column width


def bounded_key(key: str) -> str:
    """A delivery key that fits its column: a long one keeps its start and a digest."""
    if len(key) <= _MAX_KEY:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{key[: _MAX_KEY - 17]}~{digest}"


# The outbox saves every chunk it sends. Only while the row is pending: one an admin
# cancelled, or another worker's sender finished, is not written over (`Gone`).
SAVE = (
    update(DeliveryRow)
    .where(
        col(DeliveryRow.id) == bindparam("row_id"),
        col(DeliveryRow.status) == DeliveryStatus.PENDING.value,
    )
    .values(
        status=bindparam("new_status"),
        attempts=bindparam("tries"),
        next_attempt_at=bindparam("retry_at"),
        chunks=bindparam("parts"),  # takes the column's JSON type
        message_ids=bindparam("sent_ids"),
        error=bindparam("reason"),
        sent_at=bindparam("at"),
        sending_since=bindparam("sending"),
    )
)


@dataclass(slots=True)
class Delivery:
    """One outbound message as the outbox works on it; stored as a `delivery` row
    (`DeliveryRow`, same fields). A plain dataclass, because every message makes one and
    loading or building an ORM object costs several times more than sending it."""

    id: str
    idempotency_key: str
    address: str
    channel_key: str
    address_kind: str
    text: str
    kind: DeliveryKind
    anima: str
    inbox_id: str | None = None
    answers: str | None = None  # OutboundChunk.answers: the event id of what it answers
    reply_to: str | None = None  # and that message's platform id
    status: DeliveryStatus = DeliveryStatus.PENDING
    attempts: int = 0
    next_attempt_at: datetime = field(default_factory=utcnow)
    chunks: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    error: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    sent_at: datetime | None = None
    sending_since: datetime | None = None  # a chunk went out then, its id not yet stored


DELIVERY_FIELDS = tuple(f.name for f in fields(Delivery))
INSERT = insert(DeliveryRow)
AUDIT = insert(AuditEntry)
_COLUMNS = tuple(DeliveryRow.__table__.c[name] for name in DELIVERY_FIELDS)  # type: ignore[attr-defined]
# Another sender (another worker's) holds the row's address now: not this outbox's to send.
_HELD_ELSEWHERE = exists().where(
    col(OutboxClaimRow.address) == col(DeliveryRow.address),
    col(OutboxClaimRow.holder) != bindparam("me"),
    col(OutboxClaimRow.expires_at) > bindparam("now"),
)
# What the outbox looks at: the oldest pending deliveries of addresses no one else holds.
DUE = (
    select(*_COLUMNS)
    .where(col(DeliveryRow.status) == DeliveryStatus.PENDING.value, ~_HELD_ELSEWHERE)
    .order_by(col(DeliveryRow.created_at))
    .limit(_BATCH)
)
# What a sender sends, read once it holds the address's claim.
AT_ADDRESS = (
    select(*_COLUMNS)
    .where(
        col(DeliveryRow.status) == DeliveryStatus.PENDING.value,
        col(DeliveryRow.address) == bindparam("where"),
    )
    .order_by(col(DeliveryRow.created_at))
    .limit(_BATCH)
)

# Whether an address has a delivery still to send (HubPort.pending_delivery).
PENDING_AT = (
    select(col(DeliveryRow.id))
    .where(
        col(DeliveryRow.address) == bindparam("where"),
        col(DeliveryRow.status) == DeliveryStatus.PENDING.value,
        or_(col(DeliveryRow.inbox_id).is_(None), col(DeliveryRow.inbox_id) != bindparam("own")),
    )
    .limit(1)
)


_ONE = select(*_COLUMNS).where(col(DeliveryRow.id) == bindparam("row_id"))


def as_values(delivery: Delivery) -> dict[str, object]:
    return {name: getattr(delivery, name) for name in DELIVERY_FIELDS}


def loaded(values: Mapping[Any, Any]) -> Delivery:
    """A delivery as read back: the database hands back plain strings for the enums."""
    row = Delivery(**values)
    row.kind, row.status = DeliveryKind(row.kind), DeliveryStatus(row.status)
    return row


def progress(row: Delivery) -> dict[str, object]:
    return {
        "row_id": row.id,
        "new_status": row.status,
        "tries": row.attempts,
        "retry_at": row.next_attempt_at,
        "parts": row.chunks,
        "sent_ids": row.message_ids,
        "reason": row.error,
        "at": row.sent_at,
        "sending": row.sending_since,
    }


def failure_audit(row: Delivery, error: str, at: datetime) -> dict[str, object]:
    return {
        "at": at,
        "actor": f"anima:{row.anima}",
        "where": row.address,
        "action": "delivery.failed",
        "target": row.id,
        "detail": {"error": error, "kind": row.kind.value},
    }


# an admin's retry and cancel ----------------------------------------------------------


class UnknownDelivery(LookupError):
    """No delivery has this id (the API answers 404)."""


class Gone(LookupError):
    """The delivery a sender holds is no longer pending: an admin cancelled it, or another
    worker's sender finished it. Nothing more is sent or recorded for it."""


class WrongState(ValueError):
    """The delivery is not in a state this can be done from (the API answers 409)."""


@dataclass(frozen=True, slots=True)
class Action:
    """Who does it to a delivery, from where, when: its audit entry."""

    actor: str
    where: str
    at: datetime


def reopen(db: Database, delivery_id: str, action: Action) -> Delivery:
    """A failed delivery back to pending, due now, with all its attempts again; audited. It
    resumes at its first unsent chunk, and one it may have sent already is looked for first
    (`sending_since` stays)."""
    with db.write() as conn:
        row = _one(conn, delivery_id)
        if row.status is not DeliveryStatus.FAILED:
            raise WrongState(
                f"delivery {delivery_id} is {row.status}: only a failed one is retried"
            )
        try:
            Address.parse(row.address, row.address_kind)
        except ValueError:
            # record_failed's post to a target that could not be resolved: sending it again
            # cannot help, the target (a cron's post_to, the heartbeat channels) must change.
            raise WrongState(
                f"delivery {delivery_id} was never addressed ({row.address!r} could not be "
                "resolved): fix the target instead"
            ) from None
        _move(conn, row, {"attempts": 0, "next_attempt_at": action.at}, DeliveryStatus.PENDING)
        row.status, row.attempts, row.next_attempt_at = DeliveryStatus.PENDING, 0, action.at
        conn.execute(AUDIT, [_audit(row, action, "delivery.retry", {"error": row.error or ""})])
    return row


def cancel(db: Database, delivery_id: str, action: Action) -> tuple[Delivery, DeliveryStatus]:
    """A pending or failed delivery is cancelled: never sent (what is sent stays sent).
    The row, and the status it had."""
    with db.write() as conn:
        row = _one(conn, delivery_id)
        if row.status not in (DeliveryStatus.PENDING, DeliveryStatus.FAILED):
            raise WrongState(
                f"delivery {delivery_id} is {row.status}: only a pending or failed one is cancelled"
            )
        was = row.status
        # A chunk marked as going out by a sender that still holds the address may be on
        # the platform already: refused, whichever worker's sender it is.
        held = _held(row, action.at)
        if row.sending_since is not None and conn.execute(select(held)).scalar():
            raise WrongState(f"delivery {delivery_id} is being sent right now; look again")
        in_flight = and_(col(DeliveryRow.sending_since).is_not(None), held)
        _move(conn, row, {}, DeliveryStatus.CANCELLED, ~in_flight)
        row.status = DeliveryStatus.CANCELLED
        detail = {"was": was.value, "chunks_sent": len(row.message_ids)}
        conn.execute(AUDIT, [_audit(row, action, "delivery.cancel", detail)])
    return row, was


def _one(conn: Connection, delivery_id: str) -> Delivery:
    values = conn.execute(_ONE, {"row_id": delivery_id}).mappings().first()
    if values is None:
        raise UnknownDelivery(f"no delivery {delivery_id!r}")
    return loaded(values)


def _held(row: Delivery, now: datetime) -> ColumnElement[bool]:
    """A sender holds the delivery's address now (hub/delivery/claims.py)."""
    return exists().where(
        col(OutboxClaimRow.address) == row.address, col(OutboxClaimRow.expires_at) > now
    )


def _move(
    conn: Connection,
    row: Delivery,
    values: dict[str, object],
    to: DeliveryStatus,
    *also: ColumnElement[bool],
) -> None:
    """Change the row's status from what it was read as, or refuse: another request (or the
    sender) changed it in between."""
    moved = conn.execute(
        update(DeliveryRow)
        .where(col(DeliveryRow.id) == row.id, col(DeliveryRow.status) == row.status.value, *also)
        .values(status=to, **values)
    ).rowcount
    if not moved:
        raise WrongState(f"delivery {row.id} changed meanwhile; look again")


def _audit(
    row: Delivery, action: Action, what: str, detail: dict[str, object]
) -> dict[str, object]:
    return {
        "at": action.at,
        "actor": action.actor,
        "where": action.where,
        "action": what,
        "target": row.id,
        "detail": {"address": row.address, "anima": row.anima, "kind": row.kind.value, **detail},
    }
