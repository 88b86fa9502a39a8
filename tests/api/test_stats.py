"""The dashboard's charts (`GET /api/stats`, hub/views/stats.py): messages per platform and day,
turn seconds, recall latency, memory per layer and what was forgotten; a person's own
share of it. Real messages through the chat API and `Hub.receive`, real memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from animahub_kit.contract.harness import eventually
from hub.app import Hub
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.store.models import InboxItem
from tests.api.test_memory_browser import ADMIN, TOKEN, said, token, write
from tests.api.test_people import web
from tests.conftest import started_hub

DANA_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
DANA = PlatformUser("slack", "U0DANA", "Dana")
LATE_S = 40  # Dana's message reached the hub this long after Slack says she sent it


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started_hub(
        home, hub={"default_anima": "aria"}, server={"api_token": TOKEN}, memory={"enabled": True}
    )
    try:
        yield instance
    finally:
        await instance.stop()


async def send(http: httpx.AsyncClient, who: str, text: str) -> None:
    sent = await http.post(
        "/api/chat/aria",
        json={"message": text, "conversation_id": f"s-{who}", "user": who},
        headers=ADMIN,
    )
    assert sent.status_code == 200, sent.text


async def stats(http: httpx.AsyncClient, headers: dict[str, str], days: int = 14) -> Any:
    got = await http.get("/api/stats", params={"days": days}, headers=headers)
    assert got.status_code == 200, got.text
    return got.json()


@pytest.fixture
async def traffic(hub: Hub) -> AsyncIterator[tuple[httpx.AsyncClient, datetime]]:
    """Alice sends two messages on the web, Bob one, Dana one on Slack sent LATE_S seconds
    before it arrived; an older episode, a note, and two old notes the monthly stage
    forgets (one Bob's own). Yields the client and when Dana sent hers."""
    assert hub.memory is not None
    async with web(hub) as http:
        for who, text in (("alice", "Hello"), ("alice", "How are you?"), ("bob", "Hi")):
            await send(http, who, text)
        dana_sent = hub.clock.now() - timedelta(seconds=LATE_S)
        receipt = await hub.port.receive(
            Inbound(event_id="d-1", address=DANA_DM, sender=DANA, text="hi", sent_at=dana_sent)
        )

        def answered() -> bool:
            with hub.db.session() as session:
                row = session.get(InboxItem, receipt.inbox_id)
            return row is not None and row.status == "done"

        await eventually(answered)
        now = hub.clock.now()
        said(hub, "alice", "Three days ago I fixed the printer", now - timedelta(days=3))
        old, recent = now - timedelta(days=200), now - timedelta(days=1)
        bob = hub.identity.named("bob").id
        for path, scope, at in (
            ("knowledge/printer.md", "shared", recent),
            ("knowledge/old-host.md", "shared", old),
            ("knowledge/bob-old.md", f"person:{bob}", old),
        ):
            stamp = at.isoformat(timespec="seconds")
            front = f"---\nscope: {scope}\ncreated: {stamp}\nupdated: {stamp}\n---\n"
            await write(http, path, front + f"A note on {path}.")
        ran = await http.post("/api/memory/aria/consolidate?stage=monthly", headers=ADMIN)
        assert len(ran.json()["forgotten"]) == 2, ran.text
        await hub.memory.drain()
        yield http, dana_sent


def zeros_but(days: list[str], at: dict[str, int]) -> list[int]:
    return [at.get(day, 0) for day in days]


async def test_stats_count_what_was_sent_recalled_kept_and_forgotten(
    hub: Hub, traffic: tuple[httpx.AsyncClient, datetime]
) -> None:
    http, dana_sent = traffic
    now = hub.clock.now()
    today, dana_day = f"{now:%Y-%m-%d}", f"{dana_sent:%Y-%m-%d}"
    got = await stats(http, ADMIN)
    days = got["days"]
    assert len(days) == 14 and days[-1] == today and days == sorted(days)
    assert got["messages"] == {
        "slack": zeros_but(days, {dana_day: 1}),
        "web": zeros_but(days, {today: 3}),
    }
    p50, p95 = got["turn_seconds"]["p50"], got["turn_seconds"]["p95"]
    assert [p for i, p in enumerate(p95) if days[i] not in (today, dana_day)] == [None] * 13
    # four answered today: three web turns of a moment, Dana's LATE_S seconds and more
    assert p95[days.index(dana_day)] > LATE_S * 0.8
    assert p50[days.index(today)] is not None and p50[days.index(today)] < LATE_S

    recall = got["recall_ms"]
    assert recall["count"] >= 4  # every turn primed memory once
    assert recall["p50"] > 0 and recall["p95"] >= recall["p50"]

    memory = got["memory"]
    assert memory["layers"] == {"episodes": 5, "knowledge": 1, "procedures": 0, "skills": 0}
    three_ago = f"{now - timedelta(days=3):%Y-%m-%d}"
    episodes = memory["per_day"]["episodes"]
    assert episodes[days.index(three_ago)] == 1 and episodes[-1] == 5
    assert episodes == sorted(episodes) and episodes[0] == 0
    knowledge = memory["per_day"]["knowledge"]
    assert knowledge[-3:] == [0, 1, 1]  # the printer note, created yesterday
    assert got["forgotten"] == zeros_but(days, {today: 2})


async def test_a_person_gets_their_own_messages_and_the_memory_they_may_recall(
    hub: Hub, traffic: tuple[httpx.AsyncClient, datetime]
) -> None:
    http, _ = traffic
    today = f"{hub.clock.now():%Y-%m-%d}"
    got = await stats(http, token(hub, "alice"), days=3)
    assert len(got["days"]) == 3 and got["days"][-1] == today
    assert got["messages"] == {"web": [0, 0, 2]}  # not Bob's, nor Dana's on Slack
    assert got["memory"]["layers"]["episodes"] == 3  # her two turns today, one before
    assert got["memory"]["layers"]["knowledge"] == 1  # the shared note
    assert got["forgotten"] == [0, 0, 1]  # Bob's own forgotten note is not hers to count
    assert (await stats(http, token(hub, "bob"), days=3))["messages"] == {"web": [0, 0, 1]}

    for days in (0, 91):
        refused = await http.get("/api/stats", params={"days": days}, headers=ADMIN)
        assert refused.status_code == 422
