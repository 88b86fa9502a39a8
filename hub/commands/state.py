"""Paused Animas (`/anima pause`, `/anima resume`) and the messages held while they are.

A message routed to a paused Anima is kept in the inbox held (hub/turns/inbox.py) instead of being
answered; its sender is told once (per pause, per channel) through a notice delivery. The
state and the held rows are in the database, so both survive a restart: recovery only
resubmits open rows, and a held row is not open. Resuming flips the Anima's state and
releases its held rows in one transaction, so a crash right after it leaves rows that
recovery answers, never rows held for a running Anima.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from hub.delivery.outbox import Outbox
from hub.live import LiveFeed
from hub.messages import DeliveryKind, utcnow
from hub.store.db import Database
from hub.store.models import AnimaState, DeliveryRow, InboxItem, InboxStatus
from hub.store.versions import ANIMA_STATE, Stale, Versions
from hub.turns.inbox import Inbox
from hub.turns.mailbox import TurnJob

log = logging.getLogger(__name__)

_PAUSED = select(col(AnimaState.name), col(AnimaState.changed_at)).where(
    col(AnimaState.paused).is_(True)
)


def paused_notice(anima: str) -> str:
    return f"{anima} is paused; your message will be answered when an admin resumes it."


class AnimaStates:
    """Run state of each Anima; no row means running. The scheduler asks `is_paused`.

    Which Animas are paused is also kept in memory, since the runtime asks before every
    turn; a pause or resume on another hub worker makes it stale, and it is read again
    within the versions' bound (hub/store/versions.py).
    """

    def __init__(
        self,
        db: Database,
        inbox: Inbox,
        outbox: Outbox,
        live: LiveFeed | None = None,
        versions: Versions | None = None,
    ) -> None:
        self._db = db
        self._live = live or LiveFeed()
        self._inbox = inbox
        self._outbox = outbox
        self._paused_since: dict[str, datetime] | None = None  # loaded on first use
        self._stale = Stale(versions, ANIMA_STATE)

    def _paused_map(self) -> dict[str, datetime]:
        if self._stale.moved():
            self._paused_since = None
        if self._paused_since is None:
            with self._db.engine.connect() as conn:
                rows = conn.execute(_PAUSED).all()
            self._paused_since = {row.name: row.changed_at for row in rows}
        return self._paused_since

    # state ------------------------------------------------------------------------------

    def get(self, name: str) -> AnimaState | None:
        with self._db.session() as session:
            return session.get(AnimaState, name)

    def is_paused(self, name: str) -> bool:
        return name in self._paused_map()

    def paused(self) -> set[str]:
        return set(self._paused_map())

    def pause(self, name: str, by: str) -> bool:
        """Pause `name`; False when it already was."""
        changed = self._pause_row(name, by)
        self._paused_since = None  # read back: the pause time as stored keys its notices
        if changed:
            self._live.publish("anima", None, name=name, paused=True, by=by)
        return changed

    def _pause_row(self, name: str, by: str) -> bool:
        now = utcnow()
        try:
            with self._db.write() as conn:
                changed = conn.execute(
                    update(AnimaState)
                    .where(col(AnimaState.name) == name, col(AnimaState.paused).is_(False))
                    .values(paused=True, changed_by=by, changed_at=now)
                ).rowcount
                if changed:
                    return True
                known = conn.execute(
                    select(col(AnimaState.name)).where(col(AnimaState.name) == name)
                ).first()
                if known is not None:
                    return False  # paused already
                conn.execute(
                    insert(AnimaState).values(name=name, paused=True, changed_by=by, changed_at=now)
                )
                return True
        except IntegrityError:
            return False  # another hub process inserted the paused row at the same moment

    def resume(self, name: str, by: str) -> tuple[bool, list[TurnJob]]:
        """Resume `name`: whether it was paused, and its held messages (oldest first) for the
        caller to submit. Held rows are released even if it was not paused, so none can be
        left behind."""
        with self._db.write() as conn:
            changed = conn.execute(
                update(AnimaState)
                .where(col(AnimaState.name) == name, col(AnimaState.paused).is_(True))
                .values(paused=False, changed_by=by, changed_at=utcnow())
            ).rowcount
            jobs = self._inbox.release_held(conn, name)
        self._paused_map().pop(name, None)
        if changed:
            self._live.publish("anima", None, name=name, paused=False, by=by)
        return bool(changed), jobs

    def held_count(self, name: str) -> int:
        with self._db.engine.connect() as conn:
            count = conn.execute(
                select(func.count())
                .select_from(InboxItem)
                .where(col(InboxItem.anima) == name, col(InboxItem.status) == InboxStatus.HELD)
            ).scalar()
        return int(count or 0)

    # holding ----------------------------------------------------------------------------

    def hold(self, job: TurnJob) -> str | None:
        """Hold the job's message if its Anima is paused and return the notice; None means
        the turn may run. Given to the runtime, which asks before every turn."""
        paused_at = self._paused_map().get(job.anima)  # asked before every turn: no query
        if paused_at is None:
            return None
        notice = paused_notice(job.anima)
        # Told once per pause, sender and channel: the pause time is part of the key.
        stamp = paused_at.isoformat()
        with self._db.write() as conn:
            row = self._inbox.hold(conn, job, notice)
            if row is None:
                return None  # answered or held already; the runtime's claim will say so
            digest = hashlib.sha256(
                f"{stamp}|{row.sender_key}|{row.channel_key}".encode()
            ).hexdigest()[:24]
            key = f"paused:{job.anima}:{digest}"
            told = conn.execute(
                select(col(DeliveryRow.id)).where(col(DeliveryRow.idempotency_key) == key)
            ).first()
            if told is None:
                # No inbox_id: the row's own answer comes after the resume, and the web
                # chat's stored outcome must find that reply, not this notice.
                self._outbox.enqueue(
                    conn,
                    row.address,
                    notice,
                    DeliveryKind.NOTICE,
                    job.anima,
                    key,
                    answers=row.event_id,
                    reply_to=row.reply_to,
                )
        log.info("held %s: %s is paused", job.inbox_id, job.anima, extra={"anima": job.anima})
        return notice
