"""The memory red team's hub (issue 41, classes 1 and 12): aria with memory on, a hand-run
clock, the app over ASGI with the MCP server's lifespan, and Dana's and Eve's own tokens.
`served` is the fixture (tests/privacy/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.logs import to_files
from hub.messages import Address, AddressKind, PlatformUser
from tests.api.test_mcp import lifespan
from tests.conftest import add_demo_animas, make_settings

ADMIN = "admin-copies-s3cret"
DANA_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
DANA = PlatformUser("slack", "U0DANA", "Dana")
EVE_DM = Address("slack", "T1", "D0EVE", kind=AddressKind.DM)
EVE = PlatformUser("slack", "U0EVE", "Eve")
DANA_SAYS = "My boat is Quasarwren."  # a fact: the daily stage files a note of it
EVE_SAYS = "My boat is Tidewhistle."
DANA_WORD, EVE_WORD = b"quasarwren", b"tidewhistle"
TOLD = datetime(2026, 10, 20, 9, 0, tzinfo=UTC)
DAY = f"{TOLD:%Y-%m-%d}"
ARCHIVED = f"archive/episodes/{DAY}.md"


@dataclass
class Served:
    hub: Hub
    http: httpx.AsyncClient
    clock: ManualClock
    dana: str  # her own token
    eve: str

    @property
    def folder(self) -> Path:
        return self.hub.settings.home / "animas" / "aria"


def in_home(home: Path, database_url: str) -> str:
    """SQLite where the hub keeps it by default, in the data folder the scan reads."""
    return f"sqlite:///{home / 'hub.db'}" if database_url.startswith("sqlite") else database_url


@asynccontextmanager
async def serve(home: Path, database_url: str) -> AsyncIterator[Served]:
    clock = ManualClock(TOLD)
    settings = make_settings(
        home,
        hub={"default_anima": "aria"},
        server={"api_token": ADMIN},
        storage={"database_url": in_home(home, database_url)},
        scheduler={"enabled": False},
    )
    hub = Hub(settings, clock=clock)
    app = create_app(hub)
    with to_files(home):  # what is logged lands in <home>/logs, which the scan reads
        async with lifespan(app):
            add_demo_animas(hub)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as h:
                dana = hub.access.create_token(hub.identity.resolve(DANA).id).secret
                eve = hub.access.create_token(hub.identity.resolve(EVE).id).secret
                yield Served(hub, h, clock, dana, eve)


async def rest_read(served: Served, token: str, path: str) -> httpx.Response:
    return await served.http.get(
        "/api/memory/aria/read",
        params={"path": path},
        headers={"Authorization": f"Bearer {token}"},
    )
