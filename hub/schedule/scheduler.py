"""Heartbeats, crons and consolidation on a schedule that survives restarts (DESIGN §2).

APScheduler keeps the jobs: its SQLAlchemy job store on the hub database holds each job's
trigger (in the Anima's timezone) and its next run time, so a restart continues where the
last run stopped. APScheduler's own timer is not used (the scheduler is started paused):
`tick()` asks the job store for due jobs by the injectable `Clock`, so tests run months of
schedule in seconds, and every job kind gets the catch-up rule it needs:

- heartbeat, weekly, monthly: coalesced. After downtime a job runs once, for its latest
  missed time, not once per missed time.
- daily consolidation: not coalesced. Each missed day is consolidated, oldest first.
- crons: coalesced, with a one-hour misfire grace: a 09:00 digest is still sent at 09:40,
  but not at 15:00; a skipped run is logged in the Anima's log, never dropped silently.

A run's next time is stored only after the run finishes, so a crash mid-run repeats the run
at the next start instead of losing it. Repeating is safe: consolidation is idempotent and
every posted message's idempotency key carries the job and its scheduled time, so the outbox
sends it once. Each slot is claimed by a row before it runs (hub/schedule/slots.py), so a
slot that ended is never run twice, by this worker or another, and every slot skipped
(coalesced, or past its grace) is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.interval import IntervalTrigger

from hub.clock import Clock
from hub.schedule.slots import Claim, Slot, Slots
from hub.store.db import Database
from hub.store.ownership import Ownership, SoleOwner

log = logging.getLogger(__name__)
TABLE = "scheduler_job"
_STORE = "hub"
# How many missed run times one tick catches up for a job (days of daily consolidation).
_MAX_CATCH_UP = 62


class JobKind(StrEnum):
    HEARTBEAT = "heartbeat"
    CRON = "cron"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


COALESCED = {JobKind.HEARTBEAT, JobKind.CRON, JobKind.WEEKLY, JobKind.MONTHLY}


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job the hub wants scheduled; `key` is its id in the job store."""

    key: str
    kind: JobKind
    anima: str
    trigger: BaseTrigger
    grace: timedelta | None = None  # None: a late run always happens


@dataclass(frozen=True, slots=True)
class Fire:
    """One run of a job, for its scheduled time `at` (UTC)."""

    key: str
    kind: JobKind
    anima: str
    at: datetime


Runner = Callable[[Fire], Awaitable[None]]


def _not_run_by_apscheduler(*args: Any) -> None:
    """APScheduler stores a callable per job; ours are run by `Scheduler.tick`, by kind."""
    raise RuntimeError("scheduler jobs run through hub.schedule.scheduler.Scheduler.tick")


class Scheduler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        runner: Runner,
        max_parallel: int = 4,
        ownership: Ownership | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        # Which Animas' jobs this worker runs (docs/scale.md): the others stay due in the
        # shared job store for the worker that does.
        self._ownership: Ownership = ownership or SoleOwner()
        self._runner = runner
        self._store = SQLAlchemyJobStore(engine=db.engine, tablename=TABLE)
        self._aps = AsyncIOScheduler(timezone="UTC")
        self._aps.add_jobstore(self._store, _STORE)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._running_for: dict[str, str] = {}  # job id: its Anima
        self._closed = False
        # Paces catch-up: after a pause fifty heartbeats may be due at once, and running
        # them all together would starve the rest of the hub (chat turns, health).
        self._parallel = asyncio.Semaphore(max_parallel)
        self.slots = Slots(db, self._ownership, self._ownership.me, clock)

    # lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        """Attach to the job store (creating its table); no job runs until `tick`."""
        if not self._aps.running:
            # Its job store creates its table at start: workers starting at once take turns.
            with self._db.exclusively("scheduler job store"):
                self._aps.start(paused=True)

    async def every(
        self, tick_s: float, on_tick: Callable[[], Awaitable[None]], worked: Callable[[], None]
    ) -> None:
        """Tick forever; the hub runs this under its `Supervisor`, which restarts it if the
        job store fails (the database is gone) and reports it meanwhile."""
        while True:
            try:
                await on_tick()
            except Exception:
                # Planning or closing sessions failed (a bad file, a full disk): logged with
                # its traceback; the jobs already planned keep running.
                log.exception("scheduler tick failed")
            self.tick()
            worked()
            await self._clock.sleep(tick_s)

    async def close(self) -> None:
        # The tick loop may tick again before the hub stops it: a run started now would
        # call a model whose workers are stopping, and record a failure for a heartbeat
        # that the next start runs anyway.
        self._closed = True
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()
        if self._aps.running:
            self._aps.shutdown(wait=False)

    # jobs ------------------------------------------------------------------------------

    def plan(self, specs: Iterable[JobSpec]) -> None:
        """Make the stored jobs exactly `specs`. A job whose trigger is unchanged keeps its
        stored next run time, so a restart catches up on what it missed."""
        wanted = {spec.key: spec for spec in specs}
        stored = {job.id: job for job in self._aps.get_jobs(jobstore=_STORE)}
        for key in stored.keys() - wanted.keys():
            self._aps.remove_job(key, jobstore=_STORE)
        now = self._clock.now()
        for key, spec in wanted.items():
            job = stored.get(key)
            if job is not None and _same_trigger(job.trigger, spec.trigger):
                continue
            first = _first_time(spec.trigger, job, now)
            self._aps.add_job(
                _not_run_by_apscheduler,
                trigger=spec.trigger,
                id=key,
                jobstore=_STORE,
                args=(spec.kind.value, spec.anima),
                coalesce=spec.kind in COALESCED,
                misfire_grace_time=int(spec.grace.total_seconds()) if spec.grace else None,
                replace_existing=True,
                next_run_time=first,
            )

    def next_run(self, key: str) -> datetime | None:
        job = self._aps.get_job(key, jobstore=_STORE)
        return job.next_run_time if job is not None else None

    def job_ids(self) -> list[str]:
        return sorted(job.id for job in self._aps.get_jobs(jobstore=_STORE))

    @property
    def running(self) -> int:
        """How many runs are under way (started, not finished)."""
        return len(self._running)

    def upcoming(self) -> list[Fire]:
        """Every planned job's next run (UTC), soonest first."""
        runs = [
            Fire(job.id, JobKind(job.args[0]), str(job.args[1]), job.next_run_time.astimezone(UTC))
            for job in self._aps.get_jobs(jobstore=_STORE)
            if job.next_run_time is not None
        ]
        return sorted(runs, key=lambda fire: (fire.at, fire.key))

    # running ---------------------------------------------------------------------------

    def tick(self) -> list[asyncio.Task[None]]:
        """Start every due job that is not still running; return the started runs."""
        now = self._clock.now()
        started: list[asyncio.Task[None]] = []
        if self._closed:
            return started
        self.slots.prune()
        for job in self._store.get_due_jobs(now):
            if job.id in self._running or not self._ownership.holds(str(job.args[1])):
                continue
            task = asyncio.create_task(self._run(job, now), name=f"job {job.id}")
            self._running[job.id] = task
            self._running_for[job.id] = str(job.args[1])
            started.append(task)
        return started

    def let_go(self) -> None:
        """Stop the runs of Animas this worker no longer holds: their holder runs the slot
        again (hub/schedule/slots.py), and this worker's end of it would be refused."""
        for key, task in list(self._running.items()):
            if not self._ownership.holds(self._running_for[key]):
                task.cancel()

    async def run_due(self) -> None:
        """Run everything due now, to completion (tests and `--once` style callers)."""
        await asyncio.gather(*self.tick())

    async def _run(self, job: Job, now: datetime) -> None:
        kind, anima = JobKind(job.args[0]), str(job.args[1])
        try:
            times = _run_times(job, now, None if job.coalesce else _MAX_CATCH_UP)
            stands_for = 0
            if job.coalesce and times:
                stands_for, times = len(times) - 1, times[-1:]
            settled = True
            for at in times:
                fire = Fire(job.id, kind, anima, at)
                late = (now - at).total_seconds()
                grace = job.misfire_grace_time
                if grace is not None and late > float(grace):
                    why = f"{late:.0f} s late, past its grace of {grace} s"
                    log.warning(
                        "skipped %s due at %s: %s",
                        job.id,
                        at.isoformat(),
                        why,
                        extra={"anima": anima},
                    )
                    self.slots.missed(Slot(job.id, anima, at), why)
                    continue
                settled = await self._run_one(fire, stands_for) and settled
            if settled:  # else the Anima moved to another worker mid-run: its holder goes on
                self._advance(job, times[-1] if times else now, now)
        finally:
            self._running.pop(job.id, None)
            self._running_for.pop(job.id, None)

    async def _run_one(self, fire: Fire, stands_for: int = 0) -> bool:
        """Run one slot unless it has ended already; False when its end was refused."""
        slot = Slot(fire.key, fire.anima, fire.at)
        async with self._parallel:
            claim = self.slots.claim(slot, stands_for)
            if claim is not Claim.RUN:
                return claim is Claim.ENDED
            try:
                await self._runner(fire)
            except Exception as error:
                # One failing run (a bug, a full disk) must not stop the schedule or retry
                # in a hot loop: it is logged with its traceback in the Anima's log, and the
                # job moves on to its next time.
                log.exception(
                    "%s failed at %s", fire.key, fire.at.isoformat(), extra={"anima": fire.anima}
                )
                return self.slots.end(slot, ok=False, note=type(error).__name__)
            return self.slots.end(slot, ok=True)

    def _advance(self, job: Job, last: datetime, now: datetime) -> None:
        following = job.trigger.get_next_fire_time(last, now)
        if self._aps.get_job(job.id, jobstore=_STORE) is None:
            return  # removed (its Anima or cron went away) while it ran
        if following is None:
            self._aps.remove_job(job.id, jobstore=_STORE)
        else:
            self._aps.modify_job(job.id, jobstore=_STORE, next_run_time=following)


def _same_trigger(stored: BaseTrigger, wanted: BaseTrigger) -> bool:
    """Whether a stored job already has the wanted trigger. An interval's start is its
    phase (hub/schedule/spread.py), so it counts: a heartbeat planned before offsets existed (at
    "one interval from now") is re-planned once, onto its own phase."""
    if str(stored) != str(wanted):
        return False
    if isinstance(stored, IntervalTrigger) and isinstance(wanted, IntervalTrigger):
        return bool(stored.start_date == wanted.start_date)
    return True


def _first_time(trigger: BaseTrigger, stored: Job | None, now: datetime) -> datetime | None:
    """A new or changed job's first run time. An interval job that was already due (missed
    while the hub was down, then re-planned onto a new phase) runs now, at its latest time
    on the new phase, rather than skipping what it missed until its next time."""
    first: datetime | None = trigger.get_next_fire_time(None, now)
    due = stored is not None and stored.next_run_time is not None and stored.next_run_time <= now
    if due and first is not None and isinstance(trigger, IntervalTrigger) and first > now:
        interval: timedelta = trigger.interval
        return first - interval
    return first


def _run_times(job: Job, now: datetime, limit: int | None) -> list[datetime]:
    """The scheduled times from the stored next run time up to now, oldest first."""
    times: list[datetime] = []
    at: datetime | None = job.next_run_time
    while at is not None and at <= now and (limit is None or len(times) < limit):
        times.append(at)
        at = job.trigger.get_next_fire_time(at, now)
        if times and at == times[-1]:
            break
    return times
