"""Each Anima's heartbeat beats at its own stable phase of its interval (hub/schedule/spread.py),
so a
hub with many Animas does not fire every heartbeat in the same second."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.triggers.interval import IntervalTrigger

from hub.app import Hub
from hub.clock import ManualClock
from hub.schedule.scheduler import Fire, JobKind, JobSpec, Scheduler
from hub.schedule.spread import offset, offsets
from hub.store.db import Database
from tests.schedule.conftest import life_settings

ROOT = Path(__file__).resolve().parents[2]
MANY = 300


def next_beats(hub: Hub) -> dict[str, datetime]:
    return {f.anima: f.at for f in hub.scheduler.upcoming() if f.kind is JobKind.HEARTBEAT}


async def many_animas(home: Path, clock: ManualClock) -> Hub:
    hub = Hub(life_settings(home), clock=clock)
    await hub.start()
    for n in range(MANY):
        hub.create_anima(f"copy{n:04d}", "engineer", None)  # every one every 30 minutes
    hub.scheduler.open()
    await hub.on_tick()
    return hub


async def test_many_animas_heartbeats_spread_over_the_interval_and_keep_their_phase(
    home: Path, clock: ManualClock
) -> None:
    hub = await many_animas(home, clock)
    try:
        beats = next_beats(hub)
        interval = timedelta(minutes=30)
        assert len(beats) == MANY
        assert all(clock.now() < at <= clock.now() + interval for at in beats.values())
        # Per minute of the half hour: never above twice the mean (10 a minute here).
        per_minute = Counter(
            int((at - clock.now()) / timedelta(minutes=1)) for at in beats.values()
        )
        mean = MANY / 30
        assert max(per_minute.values()) <= 2 * mean, per_minute.most_common(3)
        assert len(per_minute) == 30  # and every minute of it has some
        # Re-planned later (a changed cron, a new Anima) and after a restart: the same phase,
        # but for the few a newcomer's second pushed on, by a second or so (hub/schedule/spread.py).
        clock.advance(timedelta(minutes=7))
        hub.create_anima("late", "engineer", None)
        await hub.on_tick()
        beats = kept_phases(beats, next_beats(hub))
    finally:
        await hub.stop()
    again = Hub(life_settings(home), clock=clock)
    await again.start()
    try:
        again.scheduler.open()
        await again.on_tick()
        assert {k: v for k, v in next_beats(again).items() if k != "late"} == beats
    finally:
        await again.stop()


def kept_phases(before: dict[str, datetime], after: dict[str, datetime]) -> dict[str, datetime]:
    """`after` without the newcomer, checked against `before`: each beat is where it was, or
    a few seconds on; only a few moved at all."""
    after = {name: at for name, at in after.items() if name in before}
    moved = {name: after[name] - at for name, at in before.items() if after[name] != at}
    assert len(moved) <= 3, moved
    assert all(timedelta(0) < by <= timedelta(seconds=3) for by in moved.values()), moved
    return after


def test_no_second_takes_more_than_twice_the_mean() -> None:
    """The hashed offsets alone are a random draw: with 1,000 names on 5 minutes some second
    held 10 against a mean of 3.3. Placed, none holds more than twice the mean (or two)."""
    names = [f"copy{n:04d}" for n in range(1000)]
    for minutes in (1, 5, 30):
        interval = timedelta(minutes=minutes)
        placed = offsets(names, interval)
        assert sorted(placed) == names
        assert all(timedelta(0) <= at < interval for at in placed.values())
        per_second = Counter(int(at.total_seconds()) for at in placed.values())
        mean = len(names) / interval.total_seconds()
        assert max(per_second.values()) <= max(2, 2 * mean), (minutes, per_second.most_common(2))
        hashed = Counter(int(offset(n, interval).total_seconds()) for n in names)
        if minutes == 5:  # what the spreading is for: the hash alone was above it here
            assert max(hashed.values()) > 2 * mean
        # the same in any order, and most names exactly at their hashed offset
        assert offsets(reversed(names), interval) == placed
        assert sum(placed[n] == offset(n, interval) for n in names) > 0.9 * len(names)


def test_a_newcomer_moves_few_phases_and_those_by_seconds() -> None:
    names = [f"copy{n:04d}" for n in range(1000)]
    interval = timedelta(minutes=5)
    before = offsets(names, interval)
    for newcomer in ("late", "later", "zed"):
        after = offsets([*names, newcomer], interval)
        moved = {n: after[n] - before[n] for n in names if after[n] != before[n]}
        assert len(moved) <= 10, moved
        assert all(timedelta(0) < by <= timedelta(seconds=5) for by in moved.values()), moved


def test_the_offset_is_the_same_in_every_process() -> None:
    """Derived from the name by a fixed hash, not Python's per-process `hash()` or a random
    draw: another process (another hub worker) plans the same phase."""
    interval = timedelta(minutes=30)
    code = (
        "from datetime import timedelta; from hub.schedule.spread import offset; "
        "print(offset('kai', timedelta(minutes=30)).total_seconds())"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert seen == {str(offset("kai", interval).total_seconds())}
    assert timedelta(0) <= offset("kai", interval) < interval
    assert offset("kai", interval) != offset("aria", interval)


async def test_a_heartbeat_planned_before_offsets_moves_onto_its_phase_without_skipping(
    db: Database,
) -> None:
    """A job store written by an older hub holds heartbeats at "one interval from start":
    the first plan moves each onto its phase, and one that was due still runs at once."""
    t0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    clock = ManualClock(t0)
    fires: list[Fire] = []

    async def record(fire: Fire) -> None:
        fires.append(fire)

    old = Scheduler(db, clock, record)
    old.open()
    start = t0 + timedelta(minutes=30)
    old_trigger = IntervalTrigger(minutes=30, start_date=start, timezone="UTC")
    old.plan([JobSpec("heartbeat:kai", JobKind.HEARTBEAT, "kai", old_trigger)])
    await old.close()

    clock.advance(timedelta(minutes=45))  # the old heartbeat fell due while the hub was down
    new = Scheduler(db, clock, record)
    new.open()
    phased = IntervalTrigger(minutes=30, start_date=t0 + timedelta(minutes=11), timezone="UTC")
    new.plan([JobSpec("heartbeat:kai", JobKind.HEARTBEAT, "kai", phased)])
    await new.run_due()
    assert [f.at for f in fires] == [t0 + timedelta(minutes=41)]  # its latest phase time
    assert new.next_run("heartbeat:kai") == t0 + timedelta(minutes=71)
    await new.close()
