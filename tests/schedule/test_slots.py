"""Each slot of a scheduled job runs once and a skipped one is recorded (hub/schedule/slots.py),
on SQLite and PostgreSQL. Two workers sharing the slots: tests/store/test_schedule_slots.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from sqlalchemy import select, update
from sqlmodel import col

from hub.clock import ManualClock
from hub.schedule.scheduler import TABLE, Fire, Scheduler
from hub.schedule.slots import KEEP_DONE, PRUNE_EVERY
from hub.store.db import Database
from hub.store.models import ScheduleRun
from tests.schedule.test_scheduler import T0, Recorder, clock, cron, heartbeat

__all__ = ["clock"]  # the fixture


def rows(db: Database) -> list[tuple[str, datetime, str, int, int]]:
    query = select(
        col(ScheduleRun.job_key),
        col(ScheduleRun.slot_at),
        col(ScheduleRun.state),
        col(ScheduleRun.attempts),
        col(ScheduleRun.stands_for),
    ).order_by(col(ScheduleRun.slot_at))
    with db.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]


def set_back(db: Database, key: str, at: datetime) -> None:
    """What a worker that lost the Anima mid-run may still write, as Scheduler._advance
    writes it: an older next run time."""
    stale = AsyncIOScheduler(timezone="UTC")
    stale.add_jobstore(SQLAlchemyJobStore(engine=db.engine, tablename=TABLE), "hub")
    stale.start(paused=True)
    stale.modify_job(key, jobstore="hub", next_run_time=at)
    stale.shutdown(wait=False)


async def test_a_slot_that_ended_is_not_run_again_though_the_store_says_it_is_due(
    db: Database, clock: ManualClock
) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock)])
    first = T0 + timedelta(minutes=30)
    clock.set(first)
    await scheduler.run_due()
    assert rec.at("heartbeat:aria") == [first]

    set_back(db, "heartbeat:aria", first)
    assert scheduler.next_run("heartbeat:aria") == first  # due again, by the store
    await scheduler.run_due()
    assert rec.at("heartbeat:aria") == [first]  # the row says it ran: not again
    assert scheduler.next_run("heartbeat:aria") == first + timedelta(minutes=30)
    assert rows(db) == [("heartbeat:aria", first, "done", 1, 0)]
    await scheduler.close()


async def test_a_slot_left_running_is_run_again_once_and_counted(
    db: Database, clock: ManualClock
) -> None:
    started = asyncio.Event()

    async def hangs(fire: Fire) -> None:
        started.set()
        await asyncio.Event().wait()

    first = Scheduler(db, clock, hangs)
    first.open()
    first.plan([heartbeat(clock)])
    slot = T0 + timedelta(minutes=30)
    clock.set(slot)
    first.tick()
    await started.wait()
    await first.close()  # stopped mid-run
    assert rows(db) == [("heartbeat:aria", slot, "running", 1, 0)]

    rec = Recorder()
    second = Scheduler(db, clock, rec)
    second.open()
    await second.run_due()
    await second.run_due()
    assert rec.at("heartbeat:aria") == [slot]
    assert rows(db) == [("heartbeat:aria", slot, "done", 2, 0)]
    await second.close()


async def test_slots_skipped_after_downtime_or_past_grace_are_recorded(
    db: Database, clock: ManualClock
) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock), cron(9, grace_h=1)])
    clock.set(datetime(2026, 3, 2, 11, 0, tzinfo=UTC))  # down from 08:00 to 11:00
    await scheduler.run_due()

    beats = T0 + timedelta(hours=3)  # 08:30 ... 11:00: six slots, the last one run
    assert rec.at("heartbeat:aria") == [beats]
    assert rec.at("cron:aria:x.md:digest") == []  # 09:00 is two hours late, past its hour
    assert rows(db) == [
        ("cron:aria:x.md:digest", datetime(2026, 3, 2, 9, 0, tzinfo=UTC), "missed", 1, 0),
        ("heartbeat:aria", beats, "done", 1, 5),
    ]
    skipped = scheduler.slots.skipped_since(T0)
    assert skipped["aria"].count == 6 and skipped["aria"].last_at == beats
    assert scheduler.slots.skipped_since(beats + timedelta(seconds=1)) == {}
    await scheduler.close()


async def test_rows_are_kept_for_a_while_then_deleted(db: Database, clock: ManualClock) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock)])
    clock.set(T0 + timedelta(minutes=30))
    await scheduler.run_due()
    with db.write() as conn:  # a failed run is kept as long as a missed one
        conn.execute(update(ScheduleRun).values(state="failed"))
    clock.advance(timedelta(minutes=30))
    await scheduler.run_due()
    assert [row[2] for row in rows(db)] == ["failed", "done"]

    clock.advance(KEEP_DONE + PRUNE_EVERY)
    scheduler.tick()  # prunes before it starts anything
    assert [row[2] for row in rows(db)] == ["failed"]
    await scheduler.close()
