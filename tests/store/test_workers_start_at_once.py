"""Workers started at once on an empty PostgreSQL (issue 48): each migrates and opens the
scheduler's job store (APScheduler creates its table at start) without tripping over the
others' CREATE TABLE: the steps are taken one worker at a time (`Database.exclusively`, an
advisory lock around the migration)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from hub.clock import ManualClock
from hub.schedule.scheduler import Fire, Scheduler
from hub.store.db import _HEAD, Database, _revision_of
from tests.conftest import postgres_url
from tests.schedule.test_scheduler import T0

pytestmark = pytest.mark.postgres
WORKERS = 4


async def _never(fire: Fire) -> None:
    raise AssertionError("nothing is due")


async def _open(db: Database) -> None:
    scheduler = Scheduler(db, ManualClock(T0), _never)
    scheduler.open()
    await scheduler.close()


def test_workers_starting_at_once_migrate_and_open_the_job_store_one_at_a_time() -> None:
    url = postgres_url()  # an empty schema
    databases = [Database(url) for _ in range(WORKERS)]
    errors: list[BaseException] = []
    gate = threading.Barrier(WORKERS)

    def start(db: Database) -> None:
        try:
            gate.wait()
            db.migrate()
            gate.wait()  # all migrated: now the job stores race
            asyncio.run(_open(db))
        except BaseException as error:  # noqa: BLE001 (collected for the assertion below)
            errors.append(error)
            gate.abort()

    threads = [threading.Thread(target=start, args=(db,)) for db in databases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert _revision_of(databases[0].engine) == _HEAD
    for db in databases:
        db.dispose()
