"""Hints between hub workers over LISTEN/NOTIFY (hub/store/listen.py), on the real
PostgreSQL: a change on one worker reaches another's cache at once, also when the
listening connection was cut during the change (the listener comes back and treats
everything as changed), and an added delivery wakes another worker's outbox."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from animahub_kit.contract.harness import eventually
from hub.commands.state import AnimaStates
from hub.delivery.outbox import Outbox
from hub.settings import OutboxSection
from hub.store.db import Database
from hub.store.listen import HUB_CHANGES, OUTBOX, Listener
from hub.store.versions import Versions
from hub.supervise import Backoff, Supervisor
from hub.turns.inbox import Inbox
from tests.store.outbox_helpers import FakeClock, add_delivery

pytestmark = pytest.mark.postgres


@pytest.fixture
async def supervisor() -> AsyncIterator[Supervisor]:
    running = Supervisor(backoff=Backoff(base_s=0.05, max_s=0.2))
    yield running
    await running.stop()


def states(db: Database, versions: Versions) -> AnimaStates:
    return AnimaStates(db, Inbox(db), Outbox(db, {}, OutboxSection()), versions=versions)


async def test_a_pause_is_heard_at_once_and_after_the_connection_was_cut(
    pg: Database, supervisor: Supervisor
) -> None:
    here = states(pg, Versions(pg))
    other = Database(pg.url)
    try:
        versions = Versions(other, max_age_s=3600.0)  # only a hint makes it look again
        there = states(other, versions)
        assert not there.is_paused("aria")
        listener = Listener(pg.url, {HUB_CHANGES: lambda _: versions.hint()}, versions.hint)
        supervisor.start("listener", listener.run)
        await eventually(lambda: listener.backend_pid)

        here.pause("aria", "admin")
        await eventually(lambda: there.is_paused("aria"))

        # Cut the listening connection, and change something while no one listens.
        cut = listener.backend_pid
        with pg.engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": cut})
        here.resume("aria", "admin")
        await eventually(lambda: listener.backend_pid not in (None, cut))
        await eventually(lambda: not there.is_paused("aria"))
        assert supervisor.status()["listener"].restarts >= 1
    finally:
        other.dispose()


async def test_an_added_delivery_wakes_the_other_workers_outbox(
    pg: Database, supervisor: Supervisor
) -> None:
    woken: list[str] = []
    listener = Listener(pg.url, {OUTBOX: woken.append}, lambda: None)
    supervisor.start("listener", listener.run)
    await eventually(lambda: listener.backend_pid)
    add_delivery(pg, FakeClock(), "hello", "k-listen")
    await eventually(lambda: woken)
