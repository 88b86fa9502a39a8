"""Each slot of a scheduled job runs once, across restarts and workers (docs/scale.md,
"Schedules without a leader").

Every worker ticks the same job store (hub/schedule/scheduler.py) and starts the due jobs of
the Animas it holds. Before a run, its slot (the job and its scheduled time) is claimed by a
`schedule_run` row, in a transaction that also passes the ownership guard; the run's end is
recorded the same way. So:

- a slot already done, failed or recorded missed is never run again, whichever worker sees
  it due next (the job store's next run time is only a hint: a worker that lost the Anima
  may still write it back, and the row settles it);
- a slot left `running` (its worker crashed, was stopped, or lost the Anima mid-run) is run
  again by the Anima's holder, as a crash mid-run always was (posts keep idempotency keys
  with the slot in them, so the outbox sends each once); the old run's end is refused;
- a slot skipped is a row too: `missed` (a cron past its grace), or `stands_for` on the run
  that coalesced it after downtime. Nothing is skipped silently.

Rows are kept `KEEP_DONE` (done) and `KEEP_MISSED` (missed, failed) and then deleted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import and_, case, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from hub.clock import Clock
from hub.store.db import Database
from hub.store.models import ScheduleRun
from hub.store.ownership import Fenced, Ownership

log = logging.getLogger(__name__)

RUNNING, DONE, FAILED, MISSED = "running", "done", "failed", "missed"
KEEP_DONE = timedelta(days=2)
KEEP_MISSED = timedelta(days=30)
PRUNE_EVERY = timedelta(minutes=10)


class Claim(Enum):
    RUN = "run"  # this worker runs the slot now
    ENDED = "ended"  # the slot has ended (run, failed or missed): nothing to do
    ELSEWHERE = "elsewhere"  # not this worker's Anima now: its holder sees to the slot


@dataclass(frozen=True, slots=True)
class Slot:
    """One scheduled time of one job."""

    key: str
    anima: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Skipped:
    """Slots an Anima's jobs did not run: recorded missed, or stood in for by a later run."""

    anima: str
    count: int
    last_at: datetime


class Slots:
    def __init__(self, db: Database, ownership: Ownership, me: str, clock: Clock) -> None:
        self._db = db
        self._ownership = ownership
        self._me = me
        self._clock = clock
        self._pruned_at: datetime | None = None
        self.refused = 0  # ends of runs refused: the slot had been taken over meanwhile

    def claim(self, slot: Slot, stands_for: int = 0) -> Claim:
        """Whether this worker runs `slot` now (a new slot, or one left running by a run
        that never ended), or the slot has ended, or it is not this worker's to run."""
        now = self._clock.now()
        try:
            with self._db.write() as conn:
                self._ownership.guard(conn, slot.anima)
                found = conn.execute(
                    select(col(ScheduleRun.state)).where(_is(slot)).with_for_update()
                ).first()
                if found is None:
                    row = _row(slot, RUNNING, self._me, now, stands_for=stands_for)
                    conn.execute(insert(ScheduleRun).values(**row))
                    return Claim.RUN
                if found[0] != RUNNING:
                    return Claim.ENDED
                taken = {"worker": self._me, "started_at": now}
                conn.execute(
                    update(ScheduleRun)
                    .where(_is(slot))
                    .values(attempts=col(ScheduleRun.attempts) + 1, **taken)
                )
                log.info("%s at %s: run again (it never ended)", slot.key, slot.at.isoformat())
                return Claim.RUN
        except (Fenced, IntegrityError):
            return Claim.ELSEWHERE  # not this worker's Anima now, or claimed meanwhile

    def end(self, slot: Slot, ok: bool, note: str = "") -> bool:
        """Record the run's end; False (refused) when the slot was taken over meanwhile."""
        ended = {"state": DONE if ok else FAILED, "note": note, "finished_at": self._clock.now()}
        try:
            with self._db.write() as conn:
                self._ownership.guard(conn, slot.anima)
                mine = and_(
                    _is(slot),
                    col(ScheduleRun.worker) == self._me,
                    col(ScheduleRun.state) == RUNNING,
                )
                if conn.execute(update(ScheduleRun).where(mine).values(**ended)).rowcount:
                    return True
        except Fenced:
            pass
        self.refused += 1
        log.warning("%s at %s: ended elsewhere (taken over)", slot.key, slot.at.isoformat())
        return False

    def missed(self, slot: Slot, why: str) -> None:
        """Record a slot that will not run (kept once: a second record is ignored)."""
        now = self._clock.now()
        row = _row(slot, MISSED, self._me, now, note=why, finished_at=now)
        try:
            with self._db.write() as conn:
                self._ownership.guard(conn, slot.anima)
                if conn.execute(select(col(ScheduleRun.state)).where(_is(slot))).first() is None:
                    conn.execute(insert(ScheduleRun).values(**row))
        except (Fenced, IntegrityError):
            pass  # recorded by whoever holds the Anima now

    def skipped_since(self, since: datetime) -> dict[str, Skipped]:
        """Per Anima: the slots recorded missed, and those stood in for, since `since`."""
        counted = func.sum(
            col(ScheduleRun.stands_for) + case((col(ScheduleRun.state) == MISSED, 1), else_=0)
        )
        query = (
            select(col(ScheduleRun.anima), counted, func.max(col(ScheduleRun.slot_at)))
            .where(
                col(ScheduleRun.slot_at) >= since,
                or_(col(ScheduleRun.state) == MISSED, col(ScheduleRun.stands_for) > 0),
            )
            .group_by(col(ScheduleRun.anima))
        )
        with self._db.engine.connect() as conn:
            return {
                anima: Skipped(anima, int(count), last)
                for anima, count, last in conn.execute(query)
            }

    def prune(self) -> int:
        """Delete rows past keeping, at most once every `PRUNE_EVERY`; how many went."""
        now = self._clock.now()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY:
            return 0
        self._pruned_at = now
        old = or_(
            and_(col(ScheduleRun.state) == DONE, col(ScheduleRun.slot_at) < now - KEEP_DONE),
            col(ScheduleRun.slot_at) < now - KEEP_MISSED,
        )
        with self._db.write() as conn:
            return int(conn.execute(delete(ScheduleRun).where(old)).rowcount)


def _is(slot: Slot) -> Any:
    return and_(col(ScheduleRun.job_key) == slot.key, col(ScheduleRun.slot_at) == slot.at)


def _row(slot: Slot, state: str, me: str, now: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "job_key": slot.key,
        "slot_at": slot.at,
        "anima": slot.anima,
        "state": state,
        "worker": me,
        "started_at": now,
        **extra,
    }
