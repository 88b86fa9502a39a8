"""The scheduler on an injected clock: timing, timezones, restarts, catch-up and crashes.

Jobs live in APScheduler's SQLAlchemy job store on the hub database (SQLite and PostgreSQL);
a "restart" is a new Scheduler on the same database.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from hub.clock import ManualClock
from hub.schedule.scheduler import Fire, JobKind, JobSpec, Scheduler
from hub.store.db import Database

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # a Monday


class Recorder:
    def __init__(self) -> None:
        self.fires: list[Fire] = []
        self.fail_next = 0

    async def __call__(self, fire: Fire) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("boom")
        self.fires.append(fire)

    def at(self, key: str) -> list[datetime]:
        return [f.at for f in self.fires if f.key == key]


def heartbeat(clock: ManualClock, minutes: int = 30) -> JobSpec:
    # A fixed phase, the same at every plan, as the agenda's are (hub/schedule/spread.py).
    start = T0 + timedelta(minutes=minutes)
    trigger = IntervalTrigger(minutes=minutes, start_date=start, timezone="UTC")
    return JobSpec("heartbeat:aria", JobKind.HEARTBEAT, "aria", trigger)


def daily(tz: str = "UTC") -> JobSpec:
    return JobSpec("daily:aria", JobKind.DAILY, "aria", CronTrigger(hour=0, timezone=tz))


def cron(expr_hour: int, grace_h: float = 1) -> JobSpec:
    trigger = CronTrigger(hour=expr_hour, minute=0, timezone="UTC")
    return JobSpec("cron:aria:x.md:digest", JobKind.CRON, "aria", trigger, timedelta(hours=grace_h))


async def run_for(
    scheduler: Scheduler, clock: ManualClock, span: timedelta, step: timedelta
) -> None:
    end = clock.now() + span
    while clock.now() < end:
        clock.advance(step)
        await scheduler.run_due()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


async def test_an_interval_job_fires_every_interval_on_the_clock(
    db: Database, clock: ManualClock
) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock)])
    await run_for(scheduler, clock, timedelta(hours=24), timedelta(minutes=5))
    times = rec.at("heartbeat:aria")
    assert len(times) == 48
    assert times[0] == T0 + timedelta(minutes=30)
    assert all(b - a == timedelta(minutes=30) for a, b in itertools.pairwise(times))
    await scheduler.close()


async def test_cron_triggers_follow_the_animas_timezone(db: Database, clock: ManualClock) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([daily("Asia/Tokyo")])
    await run_for(scheduler, clock, timedelta(days=2), timedelta(minutes=30))
    # Midnight in Tokyo is 15:00 UTC the day before.
    assert rec.at("daily:aria") == [
        datetime(2026, 3, 2, 15, 0, tzinfo=UTC),
        datetime(2026, 3, 3, 15, 0, tzinfo=UTC),
    ]
    await scheduler.close()


async def test_a_restart_keeps_the_schedule_and_coalesces_missed_heartbeats(
    db: Database, clock: ManualClock
) -> None:
    rec = Recorder()
    first = Scheduler(db, clock, rec)
    first.open()
    first.plan([heartbeat(clock)])
    await run_for(first, clock, timedelta(hours=1), timedelta(minutes=10))
    assert len(rec.at("heartbeat:aria")) == 2
    await first.close()

    clock.advance(timedelta(hours=3, minutes=5))  # the hub is down: six heartbeats missed
    second = Scheduler(db, clock, rec)
    second.open()
    second.plan([heartbeat(clock)])  # same trigger: the stored next run time is kept
    await second.run_due()
    times = rec.at("heartbeat:aria")
    assert len(times) == 3  # one run for all the missed ones, not six
    assert times[-1] == T0 + timedelta(hours=4)  # the latest missed time
    assert second.next_run(heartbeat(clock).key) == T0 + timedelta(hours=4, minutes=30)
    await second.run_due()
    assert len(rec.at("heartbeat:aria")) == 3  # and it does not fire again
    await second.close()


async def test_daily_consolidation_catches_up_every_missed_day_in_order(
    db: Database, clock: ManualClock
) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([daily()])
    clock.advance(timedelta(days=3, hours=2))  # asleep over three midnights
    await scheduler.run_due()
    assert rec.at("daily:aria") == [
        datetime(2026, 3, 3, tzinfo=UTC),
        datetime(2026, 3, 4, tzinfo=UTC),
        datetime(2026, 3, 5, tzinfo=UTC),
    ]
    await scheduler.close()


async def test_a_cron_missed_beyond_its_grace_is_skipped_and_logged(
    db: Database, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([cron(9)])
    clock.set(datetime(2026, 3, 2, 9, 40, tzinfo=UTC))  # 40 minutes late: within grace
    await scheduler.run_due()
    assert rec.at("cron:aria:x.md:digest") == [datetime(2026, 3, 2, 9, 0, tzinfo=UTC)]
    clock.set(datetime(2026, 3, 3, 15, 0, tzinfo=UTC))  # six hours late: skipped
    with caplog.at_level(logging.WARNING, logger="hub.schedule.scheduler"):
        await scheduler.run_due()
    assert len(rec.at("cron:aria:x.md:digest")) == 1
    assert "skipped cron:aria:x.md:digest due at 2026-03-03T09:00:00+00:00" in caplog.text
    assert scheduler.next_run("cron:aria:x.md:digest") == datetime(2026, 3, 4, 9, tzinfo=UTC)
    await scheduler.close()


async def test_a_run_interrupted_by_a_crash_runs_again_after_restart(
    db: Database, clock: ManualClock
) -> None:
    started = asyncio.Event()

    async def hangs(fire: Fire) -> None:
        started.set()
        await asyncio.Event().wait()  # never finishes: the process dies during it

    first = Scheduler(db, clock, hangs)
    first.open()
    first.plan([daily()])
    clock.set(datetime(2026, 3, 3, 0, 5, tzinfo=UTC))
    first.tick()
    await started.wait()
    await first.close()  # killed mid-run

    rec = Recorder()
    second = Scheduler(db, clock, rec)
    second.open()
    second.plan([daily()])
    await second.run_due()
    assert rec.at("daily:aria") == [datetime(2026, 3, 3, tzinfo=UTC)]  # not lost
    await second.run_due()
    assert len(rec.fires) == 1  # and not doubled
    await second.close()


async def test_a_failing_run_is_logged_and_the_job_moves_on(
    db: Database, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder()
    rec.fail_next = 1
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock)])
    with caplog.at_level(logging.ERROR, logger="hub.schedule.scheduler"):
        await run_for(scheduler, clock, timedelta(hours=1), timedelta(minutes=10))
    assert "heartbeat:aria failed" in caplog.text and "boom" in caplog.text
    assert rec.at("heartbeat:aria") == [T0 + timedelta(hours=1)]
    await scheduler.close()


async def test_plan_adds_changes_and_removes_jobs(db: Database, clock: ManualClock) -> None:
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock), daily()])
    assert scheduler.job_ids() == ["daily:aria", "heartbeat:aria"]
    clock.advance(timedelta(minutes=10))
    scheduler.plan([heartbeat(clock, minutes=60)])  # interval changed, daily gone
    assert scheduler.job_ids() == ["heartbeat:aria"]
    assert scheduler.next_run("heartbeat:aria") == T0 + timedelta(minutes=60)
    await scheduler.close()


async def test_a_closed_scheduler_starts_no_run_although_its_tick_loop_ticks_once_more(
    db: Database, clock: ManualClock
) -> None:
    """The hub stops the tick loop after closing the scheduler (and its model workers): a
    run started in between would fail for want of a model and be recorded as done."""
    rec = Recorder()
    scheduler = Scheduler(db, clock, rec)
    scheduler.open()
    scheduler.plan([heartbeat(clock)])
    await scheduler.close()
    clock.advance(timedelta(minutes=30))
    assert scheduler.tick() == []
    assert rec.fires == []
