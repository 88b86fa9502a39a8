"""`POST /api/memory/rebuild` (what `animahub repair-rag` without `--anima` asks): every
Anima re-indexed; with `full=true` the index emptied first, so the points of an Anima that
no longer exists go too. The owner's and the admin token's alone, as every memory write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hub.app import Hub
from hub.memory.index import MemoryFilter
from hub.memory.service import TurnRecord
from tests.api.test_memory_browser import ADMIN, TOKEN, token
from tests.api.test_people import web
from tests.conftest import started_hub


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started_hub(home, server={"api_token": TOKEN}, memory={"enabled": True})
    try:
        yield instance
    finally:
        await instance.stop()


def points(hub: Hub, anima: str) -> int:
    assert hub.memory is not None
    return hub.memory.index.count(MemoryFilter(anima=anima))


async def said(hub: Hub, anima: str, text: str) -> None:
    assert hub.memory is not None
    at = datetime.now(UTC)
    where = ("Alice", "web", "web:local/general", "channel:web:local/general")
    hub.memory.record_turn(TurnRecord(anima, f"in-{anima}", "alice", *where, text, "Noted.", at))
    await hub.memory.drain()


async def test_rebuild_every_anima_and_with_full_drop_those_gone(hub: Hub) -> None:
    await said(hub, "aria", "The budget code is TANGO-7731.")
    await said(hub, "ghost", "A folder with no anima.toml: no Anima of the hub.")
    assert points(hub, "aria") > 0 and points(hub, "ghost") > 0
    aria = points(hub, "aria")
    async with web(hub) as http:
        person = await http.post("/api/memory/rebuild", headers=token(hub, "bob"))
        assert person.status_code == 403
        kept = await http.post("/api/memory/rebuild", headers=ADMIN)
        assert kept.status_code == 200, kept.text
        assert set(kept.json()["animas"]) == set(hub.animas.names())
        assert points(hub, "ghost") > 0  # not asked to empty the index: left as it was
        full = await http.post("/api/memory/rebuild", params={"full": True}, headers=ADMIN)
        assert full.status_code == 200, full.text
    assert full.json()["animas"]["aria"] > 0
    assert points(hub, "aria") == aria and points(hub, "ghost") == 0


async def test_rebuild_with_memory_disabled_is_refused(home: Path) -> None:
    hub = await started_hub(home, server={"api_token": TOKEN}, memory={"enabled": False})
    try:
        async with web(hub) as http:
            refused = await http.post("/api/memory/rebuild", headers=ADMIN)
    finally:
        await hub.stop()
    assert refused.status_code == 409
    assert refused.json()["detail"] == "memory is disabled ([memory] enabled = false)"
