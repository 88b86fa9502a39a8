"""Shared by the dashboard API tests: a hub behind its real app with the web chat and a
platform stand-in (`FakePlatform`), on a manual clock, and ways to talk to it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import select

from animahub_kit.contract.harness import eventually
from hub.adapter import AdapterFactory, Capabilities, HubPort, discover
from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import (
    Address,
    AddressKind,
    DeliveryKind,
    DeliveryStatus,
    Inbound,
    OutboundChunk,
    PlatformUser,
)
from hub.settings import PlatformSection, installed_sections
from hub.store.models import AuditEntry, DeliveryRow, InboxItem, InboxStatus
from tests.api.test_chat_api import sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers

TOKEN = "the-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HERE = Address("fake", "W1", "C1")


class FakePlatform:
    """A platform stand-in: sends what it is given unless told to fail; `hold` keeps a
    send in flight until released."""

    name = "fake"
    capabilities = Capabilities(max_text=1000)

    def __init__(self) -> None:
        self.failure: Exception | None = None
        self.sent: list[str] = []
        self.hold: asyncio.Event | None = None
        self.sending = asyncio.Event()  # set while a held send waits

    async def start(self, hub: HubPort) -> None:
        return None

    async def stop(self) -> None:
        return None

    def render(self, markdown: str) -> str:
        return markdown

    async def send(self, chunk: OutboundChunk) -> str:
        if self.hold is not None:
            self.sending.set()
            await self.hold.wait()
        if self.failure is not None:
            raise self.failure
        self.sent.append(chunk.text)
        return f"m{len(self.sent)}"

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        return None

    def routers(self) -> Sequence[Any]:
        return []


@asynccontextmanager
async def open_hub(home: Path, clock: ManualClock, platform: FakePlatform) -> AsyncIterator[Hub]:
    settings = make_settings(
        home,
        sections={**installed_sections(), "fake": PlatformSection},  # [fake], enabled below
        fake={"enabled": True},
        hub={"default_anima": "mika"},
        server={"api_token": TOKEN},
        memory={"enabled": False},
        scheduler={"enabled": False},
        # Only a wake-up sends: a retry that forgot to wake the outbox would wait a minute.
        outbox={"poll_interval_s": 60, "backoff_base_s": 30},
    )
    factories: dict[str, AdapterFactory] = {
        "web": discover(["web"])["web"].build,
        "fake": lambda _section: platform,
    }
    hub = Hub(settings, clock=clock, adapter_factories=factories)
    await hub.start()
    add_demo_animas(hub)
    try:
        yield hub
    finally:
        await hub.stop()


@asynccontextmanager
async def web(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers=owner_headers(hub.settings.home)
    ) as http:
        yield http


async def token_for(client: httpx.AsyncClient, person: str) -> dict[str, str]:
    made = await client.post("/api/tokens", json={"person": person}, headers=ADMIN)
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


async def chat(
    client: httpx.AsyncClient, who: dict[str, str], text: str, session: str, anima: str = "aria"
) -> None:
    response = await client.post(
        f"/api/chat/{anima}", json={"message": text, "conversation_id": session}, headers=who
    )
    assert response.status_code == 200, response.text
    assert sse_events(response.text)[-1] == {"type": "done"}


async def say_on_slack(hub: Hub, user: str, name: str, text: str, channel: str = "C1") -> None:
    """A message in a Slack channel naming aria (no Slack adapter: its reply fails)."""
    receipt = await hub.port.receive(
        Inbound(
            event_id=str(uuid.uuid4()),
            address=Address("slack", "T1", channel, None, AddressKind.CHANNEL),
            sender=PlatformUser("slack", user, name),
            text=f"@aria {text}",
            mentions=("aria",),
            sent_at=hub.clock.now(),
        )
    )

    def answered() -> bool:
        with hub.db.session() as session:
            row = session.get(InboxItem, receipt.inbox_id)
        return row is not None and row.status == InboxStatus.DONE

    await eventually(answered)


def audited(hub: Hub, action: str) -> list[AuditEntry]:
    with hub.db.session() as session:
        return list(session.exec(select(AuditEntry).where(AuditEntry.action == action)).all())


def status_of(hub: Hub, delivery_id: str) -> DeliveryStatus:
    with hub.db.session() as session:
        row = session.get(DeliveryRow, delivery_id)
    assert row is not None
    return row.status


def post(hub: Hub, text: str, key: str | None = None) -> str:
    """A notice to the fake platform, as the hub posts one."""
    with hub.db.write() as conn:
        row = hub.outbox.enqueue(
            conn, HERE, text, DeliveryKind.NOTICE, "aria", key or f"test:{uuid.uuid4()}"
        )
    return row.id
