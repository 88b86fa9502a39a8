"""Two outboxes on one database, as two hub workers have (docs/scale.md, "The outbox"):
each delivery is sent once and each address's deliveries in order, whichever worker sends
them; a sender stopped past its claim gets the address back only as a refusal; and an
admin's cancel on one worker holds against the other's sender."""

from __future__ import annotations

import asyncio

import pytest

from animahub_kit.contract.harness import eventually
from hub.delivery.claims import ClaimLost
from hub.delivery.deliveries import Delivery, WrongState
from hub.delivery.outbox import Outbox
from hub.messages import Address, DeliveryStatus, OutboundChunk
from hub.store.db import Database
from tests.store.outbox_helpers import (
    HERE,
    SETTINGS,
    THERE,
    FakeAdapter,
    FakeClock,
    add_delivery,
    reload,
)


class Platform(FakeAdapter):
    """One platform that both workers send to: one log of what arrived, in order. Each
    send yields to the loop, so the two workers' senders interleave; `hold` keeps a send
    open until it is set (a worker stopped in the middle of sending)."""

    def __init__(self, log: list[OutboundChunk], worker: str) -> None:
        super().__init__()
        self.sent = log
        self.worker = worker
        self.hold: asyncio.Event | None = None
        self.sending = asyncio.Event()

    async def send(self, chunk: OutboundChunk) -> str:
        self.sending.set()
        if self.hold is not None:
            await self.hold.wait()
        await asyncio.sleep(0.001)
        self.sent.append(chunk)
        return f"{self.worker}-{len(self.sent)}"


def worker(db: Database, log: list[OutboundChunk], name: str, clock: FakeClock) -> Outbox:
    adapter = Platform(log, name)
    return Outbox(db, {"fake": adapter}, SETTINGS, clock=clock, holder=name)


def platform_of(outbox: Outbox) -> Platform:
    adapter = outbox._adapters["fake"]  # the test's own adapter, handed in above
    assert isinstance(adapter, Platform)
    return adapter


async def test_two_workers_send_each_delivery_once_and_each_address_in_order(
    db: Database, second: Database, clock: FakeClock
) -> None:
    log: list[OutboundChunk] = []
    a, b = worker(db, log, "a", clock), worker(second, log, "b", clock)
    addresses = [HERE, THERE, Address("fake", "W1", "C3")]
    rows: list[Delivery] = []

    def arrive(i: int) -> None:  # one more delivery to every address
        for n, where in enumerate(addresses):
            text = f"{where.channel}-{i}"
            rows.append(add_delivery(db, clock, text, f"k-{text}", where, order=10 * i + n))

    def idle() -> bool:
        return not a._busy and not b._busy

    # Taking turns at looking first: the other meets the claims of the one that did.
    for i in range(6):
        arrive(i)
        first, then = (a, b) if i % 2 == 0 else (b, a)
        first.dispatch_due()
        then.dispatch_due()
        await eventually(idle)
    # Then both at once, deliveries arriving while both send.
    for i in range(6, 16):
        arrive(i)
        a.dispatch_due()
        b.dispatch_due()
        await asyncio.sleep(0.001)

    async def drained() -> None:
        while any(reload(db, row).status == DeliveryStatus.PENDING.value for row in rows):
            a.dispatch_due()
            b.dispatch_due()
            await asyncio.sleep(0.005)

    await asyncio.wait_for(drained(), 30)
    await a.close()
    await b.close()

    assert sorted(chunk.delivery_id for chunk in log) == sorted(row.id for row in rows)
    for where in addresses:
        texts = [chunk.text for chunk in log if chunk.address == where]
        assert texts == [f"{where.channel}-{i}" for i in range(16)]
    senders = {reload(db, row).message_ids[0].split("-")[0] for row in rows}
    assert senders == {"a", "b"}  # both sent; neither doubled nor reordered


async def test_a_sender_stopped_past_its_claim_records_nothing_and_the_other_takes_over(
    db: Database, second: Database, clock: FakeClock
) -> None:
    log: list[OutboundChunk] = []
    a, b = worker(db, log, "a", clock), worker(second, log, "b", clock)
    first = add_delivery(db, clock, "first", "k1", HERE, order=0)
    after = add_delivery(db, clock, "after", "k2", HERE, order=1)
    stalled = platform_of(a)
    stalled.hold = asyncio.Event()
    a.dispatch_due()
    await asyncio.wait_for(stalled.sending.wait(), 5)  # a marked the chunk, and stopped

    b.dispatch_due()
    await asyncio.sleep(0.05)
    assert log == []  # a holds the address: b leaves it alone

    clock.advance(SETTINGS.claim_ttl_s + 1)  # a's claim has expired
    b.dispatch_due()
    await eventually(lambda: reload(db, after).status == DeliveryStatus.SENT.value)
    resent = log[0]
    assert resent.delivery_id == first.id
    # b found a's mark: the chunk may be out, and a platform that can look does so first.
    assert resent.maybe_sent_since is not None
    assert [chunk.text for chunk in log] == ["first", "after"]

    # a wakes up: the request it had on its way still arrives (no platform checks an
    # epoch, and this one cannot look for it), but a records nothing and sends no more.
    stalled.hold.set()
    await eventually(lambda: a.refused == 1)
    await a.close()
    assert [chunk.text for chunk in log] == ["first", "after", "first"]
    assert [reload(db, row).message_ids for row in (first, after)] == [["b-1"], ["b-2"]]

    third = add_delivery(db, clock, "third", "k3", HERE, order=2)
    held = platform_of(b)
    held.hold, held.sending = asyncio.Event(), asyncio.Event()
    b.dispatch_due()
    await asyncio.wait_for(held.sending.wait(), 5)
    with pytest.raises(ClaimLost):  # b holds the address now: a cannot send to it
        await a.deliver(reload(db, third))
    held.hold.set()
    await eventually(lambda: reload(db, third).status == DeliveryStatus.SENT.value)
    await b.close()
    assert [chunk.text for chunk in log] == ["first", "after", "first", "third"]


async def test_a_cancel_on_one_worker_holds_against_the_other_workers_sender(
    db: Database, second: Database, clock: FakeClock
) -> None:
    log: list[OutboundChunk] = []
    a, b = worker(db, log, "a", clock), worker(second, log, "b", clock)
    going = add_delivery(db, clock, "going", "k1", HERE, order=0)
    queued = add_delivery(db, clock, "queued", "k2", HERE, order=1)
    sender = platform_of(a)
    sender.hold = asyncio.Event()
    a.dispatch_due()
    await asyncio.wait_for(sender.sending.wait(), 5)  # a read both, and is sending the first

    with pytest.raises(WrongState, match="being sent"):
        b.cancel(going.id, "admin", "test")
    assert b.cancel(queued.id, "admin", "test").status is DeliveryStatus.CANCELLED
    sender.hold.set()
    await eventually(lambda: reload(db, going).status == DeliveryStatus.SENT.value)
    await a.close()
    assert [chunk.text for chunk in log] == ["going"]
    assert reload(db, queued).status == DeliveryStatus.CANCELLED.value
