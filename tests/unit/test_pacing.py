"""Inbound pacing: a flood from one person is slowed and reported; others go straight through."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlmodel import select

from hub.adapter import TurnEvent
from hub.app import Hub
from hub.inbound.pacing import Pacer, Rate
from hub.messages import Address, AddressKind, DeliveryKind, Inbound, PlatformUser
from hub.store.models import AuditEntry, DeliveryRow, InboxItem, InboxStatus
from tests.conftest import add_demo_animas, make_settings


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_goes_at_once_then_each_message_waits_for_its_slot() -> None:
    clock = Ticks()
    pacer = Pacer(Rate(per_minute=60, burst=3), clock)
    assert [pacer.delay("p") for _ in range(5)] == [0.0, 0.0, 0.0, 1.0, 2.0]
    assert pacer.delay("q") == 0.0  # another key has its own budget
    clock.now += 10  # quiet for a while: the burst is back
    assert [pacer.delay("p") for _ in range(3)] == [0.0, 0.0, 0.0]


def inbound(user: str, n: int) -> Inbound:
    return Inbound(
        event_id=f"{user}-{n}",
        address=Address("web", "local", f"dm:aria:{user}", "s1", AddressKind.DM),
        sender=PlatformUser("web", user, user),
        text=f"message {n} from {user}",
    )


async def paced_hub(home: Path, per_minute: float, burst: int) -> Hub:
    """A started hub with the demo Animas, aria answering, each person paced as given."""
    runtime = {"person_messages_per_minute": per_minute, "person_burst": burst}
    hub = Hub(make_settings(home, hub={"default_anima": "aria"}, runtime=runtime))
    await hub.start()
    add_demo_animas(hub)
    return hub


def statuses(hub: Hub, user: str) -> list[InboxStatus]:
    with hub.db.session() as session:
        rows = session.exec(select(InboxItem).where(InboxItem.sender_key == f"web:{user}")).all()
    return [row.status for row in sorted(rows, key=lambda r: r.event_id)]


async def test_a_flood_from_one_person_is_slowed_reported_once_and_answered_in_full(
    home: Path,
) -> None:
    hub = await paced_hub(home, per_minute=60, burst=2)
    try:
        for n in range(6):
            await hub.port.receive(inbound("flood", n))
        assert hub.pacing.waiting == 4  # two went at once, four wait their slot
        other = await hub.port.receive(inbound("calm", 0))
        for _ in range(500):
            if statuses(hub, "calm") == [InboxStatus.DONE]:
                break
            await asyncio.sleep(0.01)
        assert statuses(hub, "calm") == [InboxStatus.DONE]
        for _ in range(1000):
            if statuses(hub, "flood") == [InboxStatus.DONE] * 6:
                break
            await asyncio.sleep(0.01)
        assert statuses(hub, "flood") == [InboxStatus.DONE] * 6 and hub.pacing.waiting == 0
        with hub.db.session() as session:
            audits = session.exec(
                select(AuditEntry).where(AuditEntry.action == "inbound.paced")
            ).all()
            notices = session.exec(
                select(DeliveryRow).where(DeliveryRow.kind == DeliveryKind.NOTICE)
            ).all()
            replies = session.exec(
                select(DeliveryRow).where(DeliveryRow.kind == DeliveryKind.REPLY)
            ).all()
        assert [a.actor for a in audits] == ["web:flood"]  # reported once per flood
        assert len(notices) == 1 and "faster than I can take them" in notices[0].text
        assert notices[0].address.endswith("dm:aria:flood#s1")
        assert len(replies) == 7
        # The calm person was answered before the flood's last message: not queued behind it.
        order = [r.inbox_id for r in sorted(replies, key=lambda r: r.created_at)]
        assert order.index(other.inbox_id) < 6
    finally:
        await hub.stop()


async def test_a_paced_message_streams_its_reply_when_its_slot_comes(home: Path) -> None:
    """Whoever waits on a paced message (the CLI's `chat`, the web chat) gets its reply; it
    was told "still being answered; the reply will appear here", and the CLI exited."""
    hub = await paced_hub(home, per_minute=120, burst=1)
    try:
        await hub.port.receive(inbound("quick", 0))
        paced = await hub.port.receive(inbound("quick", 1))
        assert hub.pacing.waiting == 1

        async def events() -> list[TurnEvent]:
            return [event async for event in hub.port.subscribe(paced.inbox_id)]

        got = await asyncio.wait_for(events(), timeout=30)  # a guard, not a timing check
        assert [e.type for e in got][-1] == "done", got
        assert "message 1 from quick" in "".join(e.text for e in got if e.type == "text")
    finally:
        await hub.stop()
