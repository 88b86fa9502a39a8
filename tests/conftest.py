"""Shared fixtures: a temporary data root, both databases, an in-process hub and client."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from animahub_kit.contract.harness import DEMO_ANIMAS
from animahub_kit.contract.harness import add_demo_animas as add_demo_animas  # for the tests
from hub.api.server import create_app
from hub.app import Hub
from hub.clock import Clock
from hub.people.owner_key import ensure_owner_key
from hub.settings import Settings, load_settings
from hub.store.db import Database

PG_ENV = "ANIMAHUB_TEST_DATABASE_URL"
DEMO = DEMO_ANIMAS  # the kit's contract hubs and these tests share one cast


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's own ANIMAHUB_* settings."""
    for key in list(os.environ):
        if key.startswith("ANIMAHUB_") and key != PG_ENV:
            monkeypatch.delenv(key)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def postgres_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.fail(f"{PG_ENV} is not set: run `make test`, which starts PostgreSQL")
    with create_engine(url, isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'hub.db'}"
    return postgres_url()


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    """A migrated hub database, on SQLite and on PostgreSQL."""
    database = Database(database_url)
    database.migrate()
    try:
        yield database
    finally:
        database.dispose()


def make_settings(home: Path, **sections: Any) -> Settings:
    # A named owner, not the OS user the tests happen to run as (often root, an admin here).
    sections["hub"] = {"owner": "Olivia", **sections.get("hub", {})}
    # Every platform's DMs open: a test about something else speaks as whoever it likes
    # (tests/api/test_admission.py has the defaults, pairing on Telegram and LINE).
    sections.setdefault("people", {"dm_policy": {}})
    return load_settings(home=home, **sections)


@pytest.fixture
def settings(home: Path) -> Settings:
    return make_settings(home, hub={"default_anima": "mika", "admins": ["web:root"]})


async def started_hub(home: Path, clock: Clock | None = None, **sections: Any) -> Hub:
    """A started hub with the demo Animas: no scheduler, `sections` as in `make_settings`
    (its `hub` section merged into the default Anima mika)."""
    sections["hub"] = {"default_anima": "mika", **sections.get("hub", {})}
    sections.setdefault("scheduler", {"enabled": False})
    hub = Hub(make_settings(home, **sections), clock=clock)
    await hub.start()
    add_demo_animas(hub)
    return hub


@pytest.fixture
async def hub(settings: Settings) -> AsyncIterator[Hub]:
    instance = Hub(settings)
    await instance.start()
    add_demo_animas(instance)
    try:
        yield instance
    finally:
        await instance.stop()


def owner_headers(home: Path) -> dict[str, str]:
    """The owner's credential, as the CLI sends it (the data folder's owner.key): no request
    is the owner for coming from the loopback address, which ASGITransport's client is."""
    return {"Authorization": f"Bearer {ensure_owner_key(home)}"}


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(hub)  # the hub is already started; ASGITransport skips the lifespan
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers=owner_headers(hub.settings.home)
    ) as http:
        yield http


@pytest.fixture
def fake_openai() -> Iterator[Any]:
    from animahub_kit.fakes.openai_server import FakeOpenAI

    with FakeOpenAI() as fake:
        yield fake
