"""Two hub workers on one PostgreSQL with `[storage] shared` (docs/scale.md), in one process
on the real database: a message may arrive at either, and is answered once, by the worker
that holds its Anima's partition, in order; a worker that stops hands its Animas over at
once, and the other answers them from then on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, text, update
from sqlmodel import col, select

from animahub_kit.contract.harness import eventually
from hub.adapter import AdapterFactory, TurnEvent
from hub.api.routes import health
from hub.app import Hub
from hub.messages import Address, AddressKind, DeliveryKind, Inbound, PlatformUser
from hub.settings import PlatformSection, installed_sections
from hub.store.leases import partition_of
from hub.store.models import DeliveryRow, InboxItem, InboxStatus, LeaseRow, WorkerRow
from hub.store.ownership import PARTITIONS
from hub.turns.llm import Responder, TurnContext, TurnPiece
from hub.turns.mailbox import Job
from hub.turns.parts import Responders
from tests.api.dashboard_hub import FakePlatform
from tests.conftest import make_settings, postgres_url

pytestmark = pytest.mark.postgres
HERE = Address("fake", "W1", "C1", None, AddressKind.CHANNEL)


def names() -> tuple[str, str]:
    """Two Animas, one in each half of the partitions (two workers split them so)."""
    low = next(f"low{n}" for n in range(1000) if partition_of(f"low{n}", PARTITIONS) < 128)
    high = next(f"high{n}" for n in range(1000) if partition_of(f"high{n}", PARTITIONS) >= 128)
    return low, high


@asynccontextmanager
async def worker(home: Path, url: str, platform: FakePlatform) -> AsyncIterator[Hub]:
    settings = make_settings(
        home,
        sections={**installed_sections(), "fake": PlatformSection},
        fake={"enabled": True},
        hub={"default_anima": "mika"},
        storage={"database_url": url, "shared": True},
        memory={"enabled": False},
        scheduler={"enabled": False},
        outbox={"poll_interval_s": 0.2},
    )
    factories: dict[str, AdapterFactory] = {"fake": lambda _section: platform}
    hub = Hub(settings, adapter_factories=factories)
    await hub.start()
    try:
        yield hub
    finally:
        await hub.stop()


def ran_on(hub: Hub, log: list[str]) -> None:
    """Note the turns this worker's runtime runs (observing, not changing, its handler)."""
    handle = hub.runtime._handle

    async def noted(job: Job) -> float | None:
        log.append(job.inbox_id)
        return await handle(job)

    hub.runtime.mailboxes._handler = noted


async def say(hub: Hub, anima: str, text: str) -> str:
    receipt = await hub.port.receive(
        Inbound(
            event_id=str(uuid.uuid4()),
            address=HERE,
            sender=PlatformUser("fake", "U1", "Kim"),
            text=f"@{anima} {text}",
            mentions=(anima,),
            sent_at=hub.clock.now(),
        )
    )
    assert receipt.inbox_id is not None
    return receipt.inbox_id


def replies(hub: Hub, ids: list[str]) -> dict[str, int]:
    with hub.db.session() as session:
        rows = session.exec(
            select(DeliveryRow.inbox_id).where(
                col(DeliveryRow.inbox_id).in_(ids), DeliveryRow.kind == DeliveryKind.REPLY
            )
        ).all()
    return {inbox_id: rows.count(inbox_id) for inbox_id in ids}


def all_done(hub: Hub, ids: list[str]) -> bool:
    with hub.db.session() as session:
        rows = session.exec(select(InboxItem.status).where(col(InboxItem.id).in_(ids))).all()
    return len(rows) == len(ids) and all(status == InboxStatus.DONE for status in rows)


async def balanced(*hubs: Hub) -> None:
    """Step every worker's leases until they split the partitions (as their loops would)."""
    for _ in range(3):
        for hub in hubs:
            assert hub.partitions is not None and hub.shared is not None
            gained, lost = await asyncio.to_thread(hub.partitions.step)
            hub.shared.changed(gained, lost)


@asynccontextmanager
async def two_workers(home: Path) -> AsyncIterator[tuple[Hub, Hub, FakePlatform, FakePlatform]]:
    """Workers a and b on one database and data root, with the two Animas of `names()`,
    their partitions split between them."""
    url = postgres_url()
    pa, pb = FakePlatform(), FakePlatform()
    async with worker(home, url, pa) as a, worker(home, url, pb) as b:
        for name in names():
            a.create_anima(name, "engineer", None)
        b.animas.load()
        await balanced(a, b)
        yield a, b, pa, pb


async def test_each_message_is_answered_once_by_the_worker_holding_its_anima(
    tmp_path: Path,
) -> None:
    low, high = names()
    async with two_workers(tmp_path) as (a, b, pa, pb):
        assert a.ownership.holds(low) and not a.ownership.holds(high)
        assert b.ownership.holds(high) and not b.ownership.holds(low)
        on_a: list[str] = []
        on_b: list[str] = []
        ran_on(a, on_a)
        ran_on(b, on_b)

        # Everything arrives at a: high's messages are b's to answer.
        sent = {
            name: [await say(a, name, f"question {i}") for i in range(4)] for name in (low, high)
        }
        every = sent[low] + sent[high]
        await eventually(lambda: all_done(a, every), timeout_s=30)

        assert replies(a, every) == dict.fromkeys(every, 1)
        assert set(sent[low]) <= set(on_a) and not set(sent[low]) & set(on_b)
        assert set(sent[high]) <= set(on_b) and not set(sent[high]) & set(on_a)
        assert [i for i in on_b if i in sent[high]] == sent[high]  # in the order they came
        await eventually(lambda: len(pa.sent) + len(pb.sent) == len(every))


async def test_a_stopping_worker_hands_its_animas_over_at_once(tmp_path: Path) -> None:
    url, (low, high) = postgres_url(), names()
    pa, pb = FakePlatform(), FakePlatform()
    async with worker(tmp_path, url, pb) as b:
        async with worker(tmp_path, url, pa) as a:
            for name in (low, high):
                a.create_anima(name, "engineer", None)
            b.animas.load()
            await balanced(a, b)
            [was_a] = [name for name in (low, high) if a.ownership.holds(name)]
            assert not b.ownership.holds(was_a)
        # a has stopped: its partitions were released, not left to lapse.
        await balanced(b)
        assert b.ownership.holds(low) and b.ownership.holds(high)
        later = [await say(b, was_a, "after the stop"), await say(b, low, "and this")]
        await eventually(lambda: all_done(b, later), timeout_s=30)
        assert replies(b, later) == dict.fromkeys(later, 1)


class Stalled:
    """The worker's own responder, made to stop before its first word until `go` is set:
    a worker paused in the middle of a turn."""

    def __init__(self, inner: Responder) -> None:
        self.inner = inner
        self.go = asyncio.Event()
        self.started = asyncio.Event()

    async def stream(self, ctx: TurnContext) -> AsyncIterator[TurnPiece]:
        self.started.set()
        await self.go.wait()
        async for piece in self.inner.stream(ctx):
            yield piece


async def test_a_worker_that_lost_its_lease_mid_turn_writes_nothing_and_the_turn_is_answered_once(
    tmp_path: Path,
) -> None:
    low, high = names()
    async with two_workers(tmp_path) as (a, b, _pa, _pb):
        [its] = [name for name in (low, high) if a.ownership.holds(name)]
        own = a.runtime._responders
        stalled = Stalled(own.offline)
        a.runtime._responders = Responders(model=own.model, offline=stalled)

        asked = await say(b, its, "a question")  # arrives at b, runs on a
        await asyncio.wait_for(stalled.started.wait(), 10)  # a is in the turn, stopped
        # Two more arrive at a itself and wait in its lane behind the stopped turn.
        waiting = [await say(a, its, "and a second"), await say(a, its, "and a third")]
        asked_all = [asked, *waiting]
        # a stopped renewing long ago, as a paused process does: its leases and its last
        # word lapse (its own clock, paused with it, still says it may work).
        await a.supervisor.halt("leases")
        assert a.partitions is not None
        long_ago = func.now() - text("interval '1 hour'")
        with a.db.write() as conn:
            holder = col(LeaseRow.holder) == a.partitions.me
            conn.execute(update(LeaseRow).where(holder).values(expires_at=long_ago))
            gone = col(WorkerRow.id) == a.partitions.me
            conn.execute(update(WorkerRow).where(gone).values(seen_at=long_ago))
        await balanced(b)  # b takes a's partitions over, the turn a was running, and those
        await eventually(lambda: all_done(b, asked_all), timeout_s=30)  # waiting behind it

        stalled.go.set()  # a wakes up and tries to commit its answer
        lost = a.partitions
        await eventually(lambda: lost.refused >= 1)
        shown = health(a)["worker"]  # as an operator sees it: counted, on the health route
        assert shown["name"] == lost.me and shown["refused"]["guarded"] == lost.refused
        assert replies(b, asked_all) == dict.fromkeys(asked_all, 1)
        with b.db.session() as session:
            row = session.get(InboxItem, asked)
            answered = session.exec(
                select(DeliveryRow.inbox_id)
                .where(col(DeliveryRow.inbox_id).in_(asked_all))
                .order_by(col(DeliveryRow.created_at))
            ).all()
        assert row is not None and row.interrupted == 1  # cut off once, answered once
        assert list(answered) == asked_all  # in the order they came


async def test_who_waits_on_one_worker_hears_the_end_of_a_turn_run_on_the_other(
    tmp_path: Path,
) -> None:
    async with two_workers(tmp_path) as (a, b, _pa, _pb):
        [elsewhere] = [name for name in names() if b.ownership.holds(name)]
        asked = await say(a, elsewhere, "what is new?")  # arrives at a, runs on b

        async def heard() -> list[TurnEvent]:
            return [event async for event in a.port.subscribe(asked)]

        events = await asyncio.wait_for(heard(), 30)
        assert [event.type for event in events] == ["text", "done"]
        with a.db.session() as session:
            reply = session.exec(
                select(DeliveryRow.text).where(DeliveryRow.inbox_id == asked)
            ).one()
        assert events[0].text == reply and events[0].anima == elsewhere


async def test_a_turn_whose_end_was_not_heard_still_ends_the_stream_waiting_on_it(
    tmp_path: Path,
) -> None:
    async with two_workers(tmp_path) as (a, b, _pa, _pb):
        [elsewhere] = [name for name in names() if b.ownership.holds(name)]
        await a.supervisor.halt("listener")  # a hears no NOTIFY (reconnecting, starting)
        assert a.shared is not None
        asked = await say(a, elsewhere, "anyone there?")  # arrives at a, runs on b
        await eventually(lambda: all_done(b, [asked]), timeout_s=30)
        assert asked in a.events.waiting()  # its end was not heard

        async def heard() -> list[TurnEvent]:
            return [event async for event in a.port.subscribe(asked)]

        assert a.shared.sweep() == 0  # what a's sweep does every few seconds
        events = await asyncio.wait_for(heard(), 5)
        assert [event.type for event in events] == ["text", "done"]
