"""An admin's retry and cancel of deliveries (`POST /api/deliveries/{id}/retry|cancel`),
against a platform stand-in: a retried delivery is sent once its platform works, a
cancelled one never is, not even one its sender had already loaded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from animahub_kit.contract.harness import eventually
from hub.adapter import CallerKind, PermanentDeliveryError, TransientDeliveryError
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import AddressKind, DeliveryKind, DeliveryStatus
from hub.store.models import DeliveryRow
from tests.api.dashboard_hub import (
    ADMIN,
    HERE,
    START,
    FakePlatform,
    audited,
    open_hub,
    post,
    status_of,
    web,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def platform() -> FakePlatform:
    return FakePlatform()


@pytest.fixture
async def hub(home: Path, clock: ManualClock, platform: FakePlatform) -> AsyncIterator[Hub]:
    async with open_hub(home, clock, platform) as instance:
        yield instance


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    async with web(hub) as http:
        yield http


async def test_a_retried_delivery_is_sent_once_its_platform_works(
    hub: Hub, client: httpx.AsyncClient, platform: FakePlatform
) -> None:
    platform.failure = PermanentDeliveryError("channel archived")
    delivery = post(hub, "the report")
    await eventually(lambda: status_of(hub, delivery) is DeliveryStatus.FAILED)
    platform.failure = None  # fixed; a failed delivery stays failed by itself
    hub.outbox.wake()
    await asyncio.sleep(0.1)
    assert platform.sent == [] and status_of(hub, delivery) is DeliveryStatus.FAILED

    retried = await client.post(f"/api/deliveries/{delivery}/retry", headers=ADMIN)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "pending" and retried.json()["attempts"] == 0
    await eventually(lambda: status_of(hub, delivery) is DeliveryStatus.SENT, timeout_s=5)
    assert platform.sent == ["the report"]
    [entry] = audited(hub, "delivery.retry")
    assert entry.target == delivery and entry.actor.startswith(f"{CallerKind.ADMIN_TOKEN.value}:")

    assert (
        await client.post(f"/api/deliveries/{delivery}/retry", headers=ADMIN)
    ).status_code == 409
    assert (await client.post("/api/deliveries/nope/retry", headers=ADMIN)).status_code == 404


async def test_a_cancelled_delivery_is_never_sent(
    hub: Hub, client: httpx.AsyncClient, platform: FakePlatform, clock: ManualClock
) -> None:
    platform.failure = TransientDeliveryError("platform hiccup")
    delivery = post(hub, "stale news")

    def retrying() -> bool:
        with hub.db.session() as session:
            row = session.get(DeliveryRow, delivery)
        return row is not None and row.attempts == 1

    await eventually(retrying)  # pending, waiting for its next attempt
    cancelled = await client.post(f"/api/deliveries/{delivery}/cancel", headers=ADMIN)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    platform.failure = None
    clock.advance(timedelta(hours=1))  # long past its retry time
    later = post(hub, "fresh news")  # to the same address, after it
    await eventually(lambda: status_of(hub, later) is DeliveryStatus.SENT)
    assert platform.sent == ["fresh news"] and status_of(hub, delivery) is DeliveryStatus.CANCELLED
    listed = await client.get("/api/deliveries", params={"status": "cancelled"}, headers=ADMIN)
    assert [d["id"] for d in listed.json()] == [delivery]
    [entry] = audited(hub, "delivery.cancel")
    assert entry.target == delivery and entry.detail["was"] == "pending"

    for done in (delivery, later):  # cancelled already; sent
        refused = await client.post(f"/api/deliveries/{done}/cancel", headers=ADMIN)
        assert refused.status_code == 409, refused.text
    assert (
        await client.post(f"/api/deliveries/{delivery}/retry", headers=ADMIN)
    ).status_code == 409
    assert (await client.post("/api/deliveries/nope/cancel", headers=ADMIN)).status_code == 404


async def test_cancel_reaches_a_delivery_its_sender_already_holds(
    hub: Hub, client: httpx.AsyncClient, platform: FakePlatform
) -> None:
    """The sender loaded both; the first is on its way, the second waits behind it."""
    platform.hold = asyncio.Event()
    with hub.db.write() as conn:  # both at once: one sender takes both
        first = hub.outbox.enqueue(conn, HERE, "first", DeliveryKind.NOTICE, "aria", "t:1").id
        second = hub.outbox.enqueue(conn, HERE, "second", DeliveryKind.NOTICE, "aria", "t:2").id
    await asyncio.wait_for(platform.sending.wait(), 5)

    in_flight = await client.post(f"/api/deliveries/{first}/cancel", headers=ADMIN)
    assert in_flight.status_code == 409 and "being sent" in in_flight.json()["detail"]
    waiting = await client.post(f"/api/deliveries/{second}/cancel", headers=ADMIN)
    assert waiting.status_code == 200, waiting.text
    platform.hold.set()
    platform.hold = None
    await eventually(lambda: status_of(hub, first) is DeliveryStatus.SENT)
    third = post(hub, "third")
    await eventually(lambda: status_of(hub, third) is DeliveryStatus.SENT)
    assert platform.sent == ["first", "third"]
    assert status_of(hub, second) is DeliveryStatus.CANCELLED


async def test_a_failed_post_to_an_unresolved_target_is_not_retried(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    with hub.db.write() as conn:
        row = hub.outbox.record_failed(
            conn,
            "slack:#nowhere",
            AddressKind.CHANNEL,
            "(not written)",
            DeliveryKind.HEARTBEAT,
            "aria",
            "hb:1",
            "no such channel",
        )
    refused = await client.post(f"/api/deliveries/{row.id}/retry", headers=ADMIN)
    assert refused.status_code == 409 and "never addressed" in refused.json()["detail"]
    assert status_of(hub, row.id) is DeliveryStatus.FAILED
    cancelled = await client.post(f"/api/deliveries/{row.id}/cancel", headers=ADMIN)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


async def test_the_live_feed_hears_of_failures_retries_and_cancels(
    hub: Hub, client: httpx.AsyncClient, platform: FakePlatform
) -> None:
    heard: list[tuple[str, str]] = []

    async def listen() -> None:
        with hub.live.watcher() as watcher:
            while (notice := await watcher.next(10)) is not None:
                if notice.type == "delivery":
                    assert notice.people == ()  # the outbox is for admins
                    heard.append((notice.data["id"], notice.data["status"]))

    listening = asyncio.create_task(listen())
    await asyncio.sleep(0)
    platform.failure = PermanentDeliveryError("channel archived")
    delivery = post(hub, "the report")
    await eventually(lambda: (delivery, "failed") in heard)
    retried = await client.post(f"/api/deliveries/{delivery}/retry", headers=ADMIN)
    assert retried.status_code == 200
    await eventually(lambda: (delivery, "pending") in heard)
    await eventually(lambda: heard.count((delivery, "failed")) == 2)  # still archived
    cancelled = await client.post(f"/api/deliveries/{delivery}/cancel", headers=ADMIN)
    assert cancelled.status_code == 200
    await eventually(lambda: (delivery, "cancelled") in heard)
    listening.cancel()
