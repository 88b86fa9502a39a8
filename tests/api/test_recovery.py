"""Restarting on the same database: unfinished turns are retried, pending deliveries sent once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import update
from sqlmodel import select

from hub.app import Hub
from hub.memory.documents import read_episodes, stable_id
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.store.db import Database
from hub.store.models import DeliveryRow, InboxItem, Turn
from tests.conftest import add_demo_animas, make_settings


def inbound(event_id: str, text: str) -> Inbound:
    return Inbound(
        event_id=event_id,
        address=Address("web", "local", "dm:aria:alice", "s", AddressKind.DM),
        sender=PlatformUser("web", "alice", "alice"),
        text=text,
        mentions=("aria",),
    )


async def settle(hub: Hub) -> None:
    for _ in range(200):
        with hub.db.session() as session:
            open_rows = session.exec(
                select(InboxItem).where(InboxItem.status.in_(("received", "processing")))  # type: ignore[attr-defined]
            ).all()
        if not open_rows and hub.outbox.counts().get("pending", 0) == 0:
            return
        hub.outbox.wake()
        await asyncio.sleep(0.02)
    raise AssertionError("hub did not settle")


async def test_unfinished_inbox_and_pending_delivery_survive_a_restart(home: Path) -> None:
    settings = make_settings(home)
    first = Hub(settings)
    await first.start()
    add_demo_animas(first)
    await first.outbox.close()
    await first.supervisor.stop()  # the outbox worker stops: a crash before sending
    receipt = await first.port.receive(inbound("e1", "first message"))
    events = [e async for e in first.port.subscribe(receipt.inbox_id)]
    assert events[-1].type == "done"
    # A second message is accepted but its turn never runs (the process "dies" now).
    first.runtime.mailboxes.put = lambda job, max_concurrent: None  # type: ignore[method-assign]
    second = await first.port.receive(inbound("e2", "second message"))
    await first.stop()
    with first.db.session() as session:
        assert session.get(InboxItem, second.inbox_id).status == "received"  # type: ignore[union-attr]
        assert session.exec(select(DeliveryRow)).one().status == "pending"

    again = Hub(settings)
    await again.start()
    try:
        await settle(again)
        duplicate = await again.port.receive(inbound("e1", "first message"))
        assert duplicate.duplicate
        with again.db.session() as session:
            deliveries = session.exec(select(DeliveryRow)).all()
            turns = session.exec(select(Turn)).all()
        assert sorted((d.kind, d.status) for d in deliveries) == [("reply", "sent")] * 2
        assert all(len(d.message_ids) == len(d.chunks) == 1 for d in deliveries)
        assert [t.text for t in turns if t.role == "user"] == ["first message", "second message"]
    finally:
        await again.stop()


def _cut_off(settings_home: Path, inbox_id: str, interrupted: int) -> None:
    """What a kill in the middle of the turn leaves: the row `processing`, with the count
    of earlier interruptions."""
    db = Database(make_settings(settings_home).database_url)
    with db.write() as conn:
        conn.execute(
            update(InboxItem)
            .where(InboxItem.id == inbox_id)  # type: ignore[arg-type]
            .values(status="processing", interrupted=interrupted, anima="aria")
        )
    db.dispose()


async def _accepted_not_run(home: Path) -> str:
    first = Hub(make_settings(home))
    await first.start()
    add_demo_animas(first)
    first.runtime.mailboxes.put = lambda job, max_concurrent: None  # type: ignore[method-assign]
    receipt = await first.port.receive(inbound("e1", "cut off mid-turn"))
    await first.stop()
    return receipt.inbox_id


async def test_a_turn_cut_off_by_a_crash_costs_no_attempt(home: Path) -> None:
    inbox_id = await _accepted_not_run(home)
    # More kills than max_turn_attempts (3 here), each leaving the turn `processing`, and
    # the next start makes it the most a turn may be cut off.
    settings = make_settings(home, runtime={"max_turn_attempts": 3})
    limit = settings.runtime.max_turn_interruptions
    assert limit > settings.runtime.max_turn_attempts
    _cut_off(home, inbox_id, interrupted=limit - 1)
    again = Hub(settings)
    await again.start()
    try:
        await settle(again)
        with again.db.session() as session:
            row = session.get(InboxItem, inbox_id)
            delivery = session.exec(select(DeliveryRow)).one()
        assert row is not None
        assert (row.status, row.attempts, row.interrupted) == ("done", 0, limit)
        assert delivery.kind == "reply"
    finally:
        await again.stop()


async def test_a_turn_that_keeps_killing_the_hub_is_given_up(home: Path) -> None:
    inbox_id = await _accepted_not_run(home)
    limit = make_settings(home).runtime.max_turn_interruptions
    _cut_off(home, inbox_id, interrupted=limit)  # the next start makes it one too many
    again = Hub(make_settings(home))
    await again.start()
    try:
        await settle(again)
        with again.db.session() as session:
            row = session.get(InboxItem, inbox_id)
            delivery = session.exec(select(DeliveryRow)).one()
        assert row is not None and row.status == "failed"
        assert row.error == f"the hub stopped during this turn {limit + 1} times"
        assert delivery.kind == "notice" and "stopped during this turn" in delivery.text
    finally:
        await again.stop()


async def test_an_episode_a_stop_cut_off_after_the_commit_is_written_at_start(
    home: Path,
) -> None:
    first = Hub(make_settings(home))
    await first.start()
    add_demo_animas(first)
    receipt = await first.port.receive(inbound("e1", "remember the blue door"))
    assert [e async for e in first.port.subscribe(receipt.inbox_id)][-1].type == "done"
    await first.stop()
    # A kill between the turn's commit and the episode's append: no episode on disk.
    episodes = home / "animas" / "aria" / "episodes"
    for path in episodes.glob("*.md"):
        path.unlink()

    again = Hub(make_settings(home))
    await again.start()
    try:
        assert again.memory is not None
        found = [
            item
            for path in episodes.glob("*.md")
            for item in read_episodes(home / "animas" / "aria", path)
        ]
        assert [i.id for i in found] == [stable_id("turn", receipt.inbox_id)]
        assert "remember the blue door" in found[0].text
    finally:
        await again.stop()
