"""Consolidation through the hub's API: run a stage now, restore a forgotten note."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import httpx

from hub.app import Hub
from hub.memory.consolidation import stage_days
from hub.memory.service import TurnRecord


def yesterday_noon() -> datetime:
    yesterday, _today = stage_days(datetime.now(UTC), "UTC")
    return datetime.combine(yesterday, time(12, 0), UTC)


async def test_consolidate_runs_a_stage_and_reports_it(client: httpx.AsyncClient, hub: Hub) -> None:
    assert hub.memory is not None
    hub.memory.record_turn(
        TurnRecord(
            anima="aria",
            inbox_id="in-1",
            person_id="alice",
            person_name="Alice",
            where="#general on web",
            channel_key="web:local/general",
            scope="channel:web:local/general",
            user_text="The budget code is TANGO-7731.",
            reply="Noted.",
            at=yesterday_noon(),
        )
    )
    await hub.memory.drain()
    daily = await client.post("/api/memory/aria/consolidate", params={"stage": "daily"})
    assert daily.status_code == 200
    report = daily.json()
    assert report["stage"] == "daily" and report["anima"] == "aria"
    assert report["created"] == ["knowledge/budget-code.md"]
    assert report["summary"] == "aria daily: 1 created"
    note = await client.get("/api/memory/aria/read", params={"path": "knowledge/budget-code.md"})
    assert "sources:" in note.json()["content"] and "TANGO-7731" in note.json()["content"]
    found = await client.get(
        "/api/memory/aria/search",
        params={"query": "budget code", "scope": "channel:web:local/general"},
    )
    assert "knowledge/budget-code.md" in [r["path"] for r in found.json()["results"]]

    again = await client.post("/api/memory/aria/consolidate", params={"stage": "daily"})
    assert again.json()["summary"] == "aria daily: nothing to do"
    hub.memory.record_turn(
        TurnRecord(
            anima="aria",
            inbox_id="in-2",
            person_id="alice",
            person_name="Alice",
            where="#general on web",
            channel_key="web:local/general",
            scope="channel:web:local/general",
            user_text="The door code is 4417.",
            reply="Noted.",
            at=datetime.now(UTC),
        )
    )
    await hub.memory.drain()
    later = await client.post("/api/memory/aria/consolidate", params={"stage": "daily"})
    assert later.json()["summary"] == "aria daily: nothing to do"  # today waits for today=true
    now = await client.post(
        "/api/memory/aria/consolidate", params={"stage": "daily", "today": "true"}
    )
    assert now.json()["created"] == ["knowledge/door-code.md"]
    bad_day = await client.post(
        "/api/memory/aria/consolidate", params={"stage": "daily", "day": "someday"}
    )
    assert bad_day.status_code == 422
    for stage in ("weekly", "monthly"):  # nothing old enough to merge, compress or forget
        response = await client.post("/api/memory/aria/consolidate", params={"stage": stage})
        assert response.status_code == 200, response.text
        assert response.json()["summary"] == f"aria {stage}: nothing to do"

    bad = await client.post("/api/memory/aria/consolidate", params={"stage": "hourly"})
    assert bad.status_code == 422
    nobody = await client.post("/api/memory/nobody/consolidate", params={"stage": "daily"})
    assert nobody.status_code == 404


async def test_restore_brings_a_forgotten_note_back(client: httpx.AsyncClient, hub: Hub) -> None:
    folder = hub.settings.home / "animas" / "aria"
    archived = folder / "archive/forgotten/knowledge/wifi.md"
    archived.parent.mkdir(parents=True)
    forgotten = (datetime.now(UTC) - timedelta(days=1)).isoformat(timespec="seconds")
    archived.write_text(f"---\nforgotten: '{forgotten}'\n---\nThe guest wifi is Guest-5G.\n")

    restored = await client.post(
        "/api/memory/aria/restore", json={"path": "archive/forgotten/knowledge/wifi.md"}
    )
    assert restored.status_code == 200 and restored.json() == {"path": "knowledge/wifi.md"}
    assert not archived.exists() and "forgotten:" not in (folder / "knowledge/wifi.md").read_text()
    found = await client.get("/api/memory/aria/search", params={"query": "guest wifi"})
    assert found.json()["results"][0]["path"] == "knowledge/wifi.md"

    missing = await client.post(
        "/api/memory/aria/restore", json={"path": "archive/forgotten/knowledge/wifi.md"}
    )
    assert missing.status_code == 404
    archived.write_text("An older wifi note.\n")
    clash = await client.post("/api/memory/aria/restore", json={"path": "knowledge/wifi.md"})
    assert clash.status_code == 409
    for bad in ("../../kai/knowledge/x.md", "archive/forgotten/identity.md", "/etc/x.md"):
        response = await client.post("/api/memory/aria/restore", json={"path": bad})
        assert response.status_code == 400, bad
