"""Schedules without a leader (hub/schedule/slots.py) on the real PostgreSQL: two workers'
schedulers share one job store; the one that lost an Anima mid-run has the run's end
refused, and the new holder runs the slot once more, then never again."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlmodel import col

from hub.clock import ManualClock
from hub.schedule.scheduler import Fire, Scheduler
from hub.store.db import Database
from hub.store.models import ScheduleRun
from hub.store.ownership import Partitions
from tests.schedule.test_scheduler import T0, Recorder, heartbeat
from tests.store.test_ownership import lapse, worker

pytestmark = pytest.mark.postgres


async def test_the_worker_that_lost_an_anima_mid_run_is_refused_and_the_holder_runs_it(
    pg: Database,
) -> None:
    clock = ManualClock(T0)
    release = asyncio.Event()
    started = asyncio.Event()

    async def slow(fire: Fire) -> None:
        started.set()
        await release.wait()  # paused mid-run (SIGSTOP, a long model call)

    a_parts: Partitions = worker(pg, "a")
    a_parts.step()
    a = Scheduler(pg, clock, slow, ownership=a_parts)
    a.open()
    a.plan([heartbeat(clock)])
    slot = T0 + timedelta(minutes=30)
    clock.set(slot)
    [a_run] = a.tick()
    await started.wait()

    lapse(pg, "a")  # a stopped renewing: b takes every partition
    b_parts = worker(pg, "b")
    b_parts.step()
    rec = Recorder()
    b = Scheduler(pg, clock, rec, ownership=b_parts)
    b.open()
    b.plan([heartbeat(clock)])
    await b.run_due()
    assert rec.at("heartbeat:aria") == [slot]  # the slot a never ended, run by its holder

    release.set()
    await a_run  # a wakes up and tries to record the end
    assert a.slots.refused == 1 and a_parts.refused >= 1
    await b.run_due()
    assert rec.at("heartbeat:aria") == [slot]  # once by b, not again
    with pg.engine.connect() as conn:
        row = conn.execute(
            select(col(ScheduleRun.state), col(ScheduleRun.worker), col(ScheduleRun.attempts))
        ).one()
    assert tuple(row) == ("done", b_parts.me, 2)
    assert b.next_run("heartbeat:aria") == slot + timedelta(minutes=30)

    clock.advance(timedelta(minutes=30))
    a_runs = Recorder()
    a_late = Scheduler(pg, clock, a_runs, ownership=a_parts)  # a, still not holding aria
    a_late.open()
    await a_late.run_due()  # refused: and it leaves the job due for the holder
    assert a_runs.fires == [] and a_late.next_run("heartbeat:aria") == clock.now()
    await b.run_due()
    assert rec.at("heartbeat:aria")[-1] == clock.now()
    for scheduler in (a, a_late, b):
        await scheduler.close()


async def test_a_worker_that_sees_it_lost_an_anima_stops_its_run(pg: Database) -> None:
    clock = ManualClock(T0)
    started = asyncio.Event()

    async def hangs(fire: Fire) -> None:
        started.set()
        await asyncio.Event().wait()

    a_parts = worker(pg, "a")
    a_parts.step()
    a = Scheduler(pg, clock, hangs, ownership=a_parts)
    a.open()
    a.plan([heartbeat(clock)])
    clock.set(T0 + timedelta(minutes=30))
    [a_run] = a.tick()
    await started.wait()
    lapse(pg, "a")
    worker(pg, "b").step()
    a.let_go()
    assert not a_run.done()  # a's own view: it still holds aria until its next round
    _gained, lost = a_parts.step()
    assert lost and not a_parts.holds("aria")
    a.let_go()
    await asyncio.wait_for(asyncio.gather(a_run, return_exceptions=True), 10)
    assert a_run.cancelled() and a.running == 0
    await a.close()
