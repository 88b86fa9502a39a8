"""Nothing dies silently: supervised parts restart and say so, and a database fault under
the outbox or a turn loses nothing and doubles nothing once the database is back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlmodel import select

from hub.app import Hub
from hub.delivery.outbox import Outbox
from hub.messages import Address, DeliveryKind, DeliveryStatus, Inbound, PlatformUser
from hub.store.db import Database
from hub.store.models import DeliveryRow, InboxItem, InboxStatus
from hub.supervise import Backoff, Part, Supervisor
from tests.store.outbox_helpers import SETTINGS, FakeAdapter, FakeClock

HERE = Address("fake", "W1", "C1")
QUICK = Backoff(base_s=0.01, max_s=0.05)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def until(predicate: Callable[[], bool], within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


@contextlib.contextmanager
def table_gone(db: Database, table: str) -> Iterator[None]:
    """A real database fault: every statement on `table` fails until it is back."""
    with db.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} RENAME TO {table}_gone"))
    try:
        yield
    finally:
        with db.engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {table}_gone RENAME TO {table}"))


# the supervisor ---------------------------------------------------------------------


async def test_a_part_that_raises_is_logged_restarted_and_reported_until_it_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    supervisor = Supervisor(backoff=QUICK)
    runs: list[int] = []
    healthy = asyncio.Event()

    async def flaky(part: Part) -> None:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError(f"boom {len(runs)}")
        part.ok()
        healthy.set()
        await asyncio.Event().wait()

    with caplog.at_level(logging.ERROR, logger="hub.supervise"):
        supervisor.start("flaky", flaky)
        await until(lambda: supervisor.status()["flaky"].restarts == 2 and len(runs) == 2)
        status = supervisor.status()["flaky"]
        if not healthy.is_set():
            assert not status.ok and status.reason == "RuntimeError: boom 2"
            assert supervisor.failing() == ["flaky"]
        await asyncio.wait_for(healthy.wait(), 10)
    assert supervisor.status()["flaky"].ok and supervisor.failing() == []
    assert supervisor.status()["flaky"].restarts == 2
    crashes = [r for r in caplog.records if "flaky failed" in r.getMessage()]
    assert len(crashes) == 2 and all(r.exc_info for r in crashes)  # with the traceback
    await supervisor.stop()


async def test_a_part_reports_failures_it_handles_itself() -> None:
    part = Supervisor().part("senders")
    assert part.failing("disk full") == 1 and part.failing("disk full") == 2
    since = part.status.since
    assert not part.status.ok and since is not None
    part.ok()
    assert part.status.ok and part.status.failures == 0 and part.status.since is None


# the outbox -------------------------------------------------------------------------


async def enqueue(db: Database, outbox: Outbox, text_: str, key: str) -> str:
    with db.write() as conn:
        row = outbox.enqueue(conn, HERE, text_, DeliveryKind.REPLY, "aria", key)
    return str(row.id)


def status_of(db: Database, delivery_id: str) -> DeliveryStatus:
    with db.session() as session:
        row = session.get(DeliveryRow, delivery_id)
    assert row is not None
    return row.status


async def test_the_outbox_worker_survives_a_database_fault_and_then_sends(
    db: Database, clock: FakeClock
) -> None:
    adapter = FakeAdapter()
    outbox = Outbox(db, {"fake": adapter}, SETTINGS, clock=clock)
    supervisor = Supervisor(backoff=QUICK)
    with table_gone(db, "delivery"):
        supervisor.start("outbox", outbox.run)
        await until(lambda: supervisor.failing() == ["outbox"])
        assert "delivery" in supervisor.status()["outbox"].reason
    delivery_id = await enqueue(db, outbox, "after the fault", "k1")
    await until(lambda: status_of(db, delivery_id) is DeliveryStatus.SENT)
    await until(lambda: supervisor.failing() == [])
    assert adapter.texts() == ["after the fault"]
    assert supervisor.status()["outbox"].restarts >= 1
    await supervisor.stop()
    await outbox.close()


class GoneWhileSending(FakeAdapter):
    """Takes the delivery table away while a chunk is on its way: the send succeeds, the
    record of it cannot be written until the table is back."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self.fault: contextlib.ExitStack | None = None

    async def send(self, chunk: Any) -> str:
        message_id = await super().send(chunk)
        if self.fault is None:
            self.fault = contextlib.ExitStack()
            self.fault.enter_context(table_gone(self.db, "delivery"))
        return message_id


async def test_a_sender_whose_record_fails_holds_it_and_never_sends_twice(
    db: Database, clock: FakeClock
) -> None:
    adapter = GoneWhileSending(db)
    part = Part("outbox senders", clock)
    outbox = Outbox(db, {"fake": adapter}, SETTINGS, clock=clock, senders=part)
    first = await enqueue(db, outbox, "one", "k1")
    second = await enqueue(db, outbox, "two", "k2")
    outbox.dispatch_due()
    await until(lambda: not part.status.ok)  # the first is sent, its record refused
    assert "the database refused a write" in part.status.reason
    await asyncio.sleep(0.3)
    assert adapter.texts() == ["one"]  # held: nothing more goes to that address meanwhile
    assert adapter.fault is not None
    adapter.fault.close()  # the database is back
    await until(lambda: status_of(db, second) is DeliveryStatus.SENT)
    assert status_of(db, first) is DeliveryStatus.SENT
    assert adapter.texts() == ["one", "two"] and part.status.ok
    await outbox.close()


# a turn -----------------------------------------------------------------------------


async def test_a_turn_whose_database_fails_is_answered_once_when_it_is_back(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    said = Inbound(
        event_id="e-db",
        address=Address("web", "local", "dm:aria:alice", "s1"),
        sender=PlatformUser("web", "alice", "alice"),
        text="remember the plan",
    )
    turns = hub.supervisor.part("turns")
    with table_gone(hub.db, "turn"):  # the turn log: the turn's commit fails
        receipt = await hub.port.receive(said)
        await until(lambda: not turns.status.ok)
        health = (await client.get("/api/system/health")).json()
        assert health["status"] == "degraded" and "turns" in health["problems"]
        assert health["parts"]["turns"]["state"] == "failing"
    await until(lambda: inbox_status(hub, receipt.inbox_id) is InboxStatus.DONE)
    await until(lambda: turns.status.ok)
    with hub.db.session() as session:
        replies = session.exec(
            select(DeliveryRow).where(DeliveryRow.inbox_id == receipt.inbox_id)
        ).all()
    assert [r.kind for r in replies] == [DeliveryKind.REPLY]
    health = (await client.get("/api/system/health")).json()
    assert health["status"] == "ok" and health["problems"] == []


def inbox_status(hub: Hub, inbox_id: str) -> InboxStatus | None:
    with hub.db.session() as session:
        row = session.get(InboxItem, inbox_id)
    return row.status if row is not None else None


async def test_health_answers_when_the_database_cannot(hub: Hub, client: httpx.AsyncClient) -> None:
    with table_gone(hub.db, "delivery"):
        response = await client.get("/api/system/health")
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "degraded" and "database" in health["problems"]
    assert health["deliveries"] is None and "delivery" in health["database_error"]
