"""The dashboard's memory browser (docs/memory.md "Browsing it"): episode days, notes, the
wikilink graph, forgotten notes, and why a search result matched. A person sees what the
Anima would recall in a DM with them, in every route; admins see every scope. Real
memory (the bundled embedder, Qdrant Edge), through the app's edge with real tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from hub.app import Hub
from hub.memory.explain import why
from hub.memory.service import TurnRecord
from tests.api.test_people import web
from tests.conftest import started_hub

TOKEN = "browser-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "TANGO-7731"
Headers = dict[str, str]


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started_hub(home, server={"api_token": TOKEN}, memory={"enabled": True})
    for name in ("alice", "bob", "dana"):
        instance.identity.named(name)
    try:
        yield instance
    finally:
        await instance.stop()


@pytest.fixture
async def http(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    async with web(hub) as client:
        yield client


def token(hub: Hub, name: str) -> Headers:
    person = hub.identity.named(name)
    return {"Authorization": f"Bearer {hub.access.create_token(person.id).secret}"}


def said(hub: Hub, who: str, text: str, at: datetime, channel: str = "") -> None:
    """What the runtime records after a turn: `who` said `text` to aria, in their DM (or
    in #channel)."""
    assert hub.memory is not None
    person = hub.identity.named(who)
    key = f"web:local/{channel}" if channel else f"web:local/dm:aria:{person.id}"
    scope = f"channel:{key}" if channel else f"person:{person.id}"
    where = (person.display_name, "web", key, scope)
    hub.memory.record_turn(TurnRecord("aria", str(uuid4()), person.id, *where, text, "Noted.", at))


async def days(http: httpx.AsyncClient, headers: Headers) -> list[tuple[str, int]]:
    listed = await http.get("/api/memory/aria/episodes", headers=headers)
    assert listed.status_code == 200, listed.text
    return [(d["day"], d["items"]) for d in listed.json()["days"]]


async def search(http: httpx.AsyncClient, headers: Headers, query: str) -> list[dict[str, str]]:
    found = await http.get("/api/memory/aria/search", params={"query": query}, headers=headers)
    assert found.status_code == 200, found.text
    results: list[dict[str, str]] = found.json()["results"]
    return results


@pytest.fixture
async def remembered(hub: Hub, http: httpx.AsyncClient) -> dict[str, str]:
    """Two days of DMs and a channel, and Alice's secret told today through the chat API;
    the days, by name."""
    assert hub.memory is not None
    # The earlier days' items sit at noon, so "five minutes later" never crosses midnight.
    noon = hub.clock.now().replace(hour=12, minute=0, second=0, microsecond=0)
    two, one = noon - timedelta(days=2), noon - timedelta(days=1)
    said(hub, "alice", "My bike is the blue one by the door", two)
    said(hub, "bob", "My bike is the red one with a basket", two + timedelta(minutes=5))
    said(hub, "bob", "My gym locker is number 12", one)
    said(hub, "dana", "The standup moved to ten", one + timedelta(minutes=5), channel="general")
    told = await http.post(
        "/api/chat/aria",
        json={"message": f"My locker code is {SECRET}", "conversation_id": "s1", "user": "alice"},
        headers=ADMIN,
    )
    assert told.status_code == 200, told.text
    await hub.memory.drain()
    now = hub.clock.now()  # the day the chat turn was recorded on
    return {"today": f"{now:%Y-%m-%d}", "one": f"{one:%Y-%m-%d}", "two": f"{two:%Y-%m-%d}"}


async def test_a_person_sees_only_their_own_dm_memory_in_episodes_search_and_read(
    hub: Hub, http: httpx.AsyncClient, remembered: dict[str, str]
) -> None:
    today, one, two = remembered["today"], remembered["one"], remembered["two"]
    alice, bob, dana = token(hub, "alice"), token(hub, "bob"), token(hub, "dana")

    assert await days(http, ADMIN) == [(today, 1), (one, 2), (two, 2)]
    assert await days(http, alice) == [(today, 1), (two, 1)]
    assert await days(http, bob) == [(one, 1), (two, 1)]
    assert await days(http, dana) == []  # what she said in #general is not a DM's

    assert any(SECRET in r["text"] for r in await search(http, alice, "locker code"))
    assert any(SECRET in r["text"] for r in await search(http, ADMIN, "locker code"))
    for row in await search(http, bob, "locker code"):
        assert SECRET not in row["text"] and "blue" not in row["text"]
    widened = await http.get(
        "/api/memory/aria/search",
        params={"query": "locker code", "scope": f"person:{hub.identity.named('alice').id}"},
        headers=bob,
    )
    assert widened.status_code == 403

    day = f"episodes/{today}.md"
    read = await http.get("/api/memory/aria/read", params={"path": day}, headers=alice)
    assert read.status_code == 200 and SECRET in read.json()["content"]
    assert "<!-- memory:" not in read.json()["content"]  # the items, not the raw file
    refused = await http.get("/api/memory/aria/read", params={"path": day}, headers=bob)
    assert refused.status_code == 404
    shared_day = await http.get(
        "/api/memory/aria/read", params={"path": f"episodes/{two}.md"}, headers=bob
    )
    assert "red one" in shared_day.text and "blue one" not in shared_day.text
    raw = await http.get("/api/memory/aria/read", params={"path": day}, headers=ADMIN)
    assert SECRET in raw.json()["content"] and "<!-- memory:" in raw.json()["content"]
    # still admin-only: writing, and other Animas' names are no way around it
    wrote = await http.post(
        "/api/memory/aria/write", json={"path": "knowledge/x.md", "content": "x"}, headers=bob
    )
    assert wrote.status_code == 403


async def test_search_results_say_why_they_matched(
    hub: Hub, http: httpx.AsyncClient, remembered: dict[str, str]
) -> None:
    # A lexical-only match names the query's words the text shares, as written.
    assert why(["lexical"], "What is the budget code?", "The budget code is QX-41") == (
        'Shares the words "budget", "code"'
    )
    # A question's framing words are named only when nothing else is shared.
    how = "How do I release the app?"
    assert why(["lexical"], how, "How to release: run tests, then tag.") == (
        'Shares the words "release"'
    )
    assert why(["lexical"], how, "How do you feel?") == 'Shares the words "How", "do"'
    # Text written without spaces shares its pieces, not the whole question.
    osaka = "私は来週の火曜日に大阪へ出張します。"
    assert why(["lexical"], "大阪出張はいつ？", osaka) == 'Shares the words "大阪", "出張"'
    assert why(["lexical"], "来週どこに行きますか？", osaka) == 'Shares the words "来週"'
    assert why(["lexical"], "我们什么时候去北京？", "我们下周去北京出差。") == (
        'Shares the words "去北京"'
    )
    assert why(["dense", "recent"], "q", "t") == "Close in meaning; recent"
    # Shared words are named though the lexical list did not reach the result (its length
    # follows the search's limit); a question's framing words alone are not.
    locker = "My locker code is 4521"
    assert (
        why(["dense"], "locker code", locker)
        == 'Shares the words "locker", "code"; close in meaning'
    )
    assert why(["dense"], how, "How do you feel?") == "Close in meaning"
    assert why([], "q", "t") == "Ranked high by dense and lexical search together"

    top = (await search(http, token(hub, "alice"), SECRET))[0]
    assert SECRET in top["text"]
    assert "lexical" in top["signals"]
    assert top["why"].startswith(f'Shares the words "{SECRET}"'), top["why"]
    for row in await search(http, ADMIN, "where does Bob keep his bike?"):
        assert isinstance(row["why"], str) and row["why"]
        if "red one" in row["text"]:  # the people retriever: what the person named said
            assert "person" in row["signals"]
            assert "said by bob, whom the query names" in row["why"].lower()
            break
    else:
        raise AssertionError("Bob's bike was not found")


async def write(http: httpx.AsyncClient, path: str, content: str) -> None:
    wrote = await http.post(
        "/api/memory/aria/write", json={"path": path, "content": content}, headers=ADMIN
    )
    assert wrote.status_code == 200, wrote.text


async def test_notes_and_the_graph_follow_real_wikilinks_within_what_a_person_sees(
    hub: Hub, http: httpx.AsyncClient
) -> None:
    bob_id = hub.identity.named("bob").id
    await write(
        http,
        "knowledge/deploys.md",
        "We deploy on Tuesdays. Follow [[Release Checklist]]; see [[rollback]] and [[bob-vpn]].",
    )
    await write(http, "procedures/release-checklist.md", "Run the tests, tag, push. [[deploys]]")
    await write(
        http,
        "knowledge/bob-vpn.md",
        f"---\nscope: person:{bob_id}\ntitle: Bob's VPN\n---\nBob's VPN key is ORCA-5. [[deploys]]",
    )
    await write(http, "skills/writing.md", "Short sentences.")
    await write(http, "knowledge/style.md", "Plain words, as [[writing]] says.")
    alice, bob = token(hub, "alice"), token(hub, "bob")

    listed = await http.get("/api/memory/aria/notes", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    notes = {n["path"]: n for n in listed.json()["notes"]}
    assert set(notes) == {
        "knowledge/bob-vpn.md",
        "knowledge/deploys.md",
        "knowledge/style.md",
        "procedures/release-checklist.md",
    }
    deploys = notes["knowledge/deploys.md"]
    assert deploys["links"] == ["knowledge/bob-vpn.md", "procedures/release-checklist.md"]
    assert deploys["layer"] == "knowledge" and deploys["scope"] == "shared"
    assert deploys["title"] == "deploys" and deploys["updated_at"].endswith("+00:00")
    assert notes["knowledge/bob-vpn.md"]["scope"] == f"person:{bob_id}"
    procedures = await http.get("/api/memory/aria/notes?layer=procedures", headers=alice)
    assert [n["path"] for n in procedures.json()["notes"]] == ["procedures/release-checklist.md"]
    assert (await http.get("/api/memory/aria/notes?layer=dreams", headers=ADMIN)).status_code == 422
    as_alice = await http.get("/api/memory/aria/notes", headers=alice)
    assert "knowledge/bob-vpn.md" not in {n["path"] for n in as_alice.json()["notes"]}
    assert "knowledge/bob-vpn.md" not in str(as_alice.json())

    drawn = (await http.get("/api/memory/aria/graph", headers=ADMIN)).json()
    edges = {(e["source"], e["target"]) for e in drawn["edges"]}
    assert edges == {
        ("knowledge/deploys.md", "procedures/release-checklist.md"),
        ("knowledge/deploys.md", "knowledge/bob-vpn.md"),
        ("knowledge/deploys.md", "[[rollback]]"),
        ("procedures/release-checklist.md", "knowledge/deploys.md"),
        ("knowledge/bob-vpn.md", "knowledge/deploys.md"),
    }  # style → writing is a skill: not drawn, and not missing either
    layers = {n["id"]: n["layer"] for n in drawn["nodes"]}
    assert layers["[[rollback]]"] == "missing"
    assert layers["procedures/release-checklist.md"] == "procedures"
    assert "skills/writing.md" not in layers

    seen = (await http.get("/api/memory/aria/graph", headers=alice)).json()
    assert "bob-vpn.md" not in str(seen) and "Bob's VPN" not in str(seen)
    edges = {(e["source"], e["target"]) for e in seen["edges"]}
    assert ("knowledge/deploys.md", "[[bob-vpn]]") in edges  # only the link's own words
    assert ("knowledge/deploys.md", "procedures/release-checklist.md") in edges
    as_bob = (await http.get("/api/memory/aria/graph", headers=bob)).json()
    assert ("knowledge/bob-vpn.md", "knowledge/deploys.md") in {
        (e["source"], e["target"]) for e in as_bob["edges"]
    }


async def test_forgotten_notes_are_listed_for_admins_and_refused_to_a_person(
    hub: Hub, http: httpx.AsyncClient
) -> None:
    old = (hub.clock.now() - timedelta(days=200)).isoformat(timespec="seconds")
    note = f"---\ncreated: {old}\nupdated: {old}\ntitle: Old VPN host\n---\nThe VPN host was vpn1."
    await write(http, "knowledge/old-vpn.md", note)
    ran = await http.post("/api/memory/aria/consolidate?stage=monthly", headers=ADMIN)
    assert ran.status_code == 200, ran.text

    assert (
        await http.get("/api/memory/aria/forgotten", headers=token(hub, "alice"))
    ).status_code == 403
    listed = await http.get("/api/memory/aria/forgotten", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    [item] = listed.json()["items"]
    assert item["path"] == "archive/forgotten/knowledge/old-vpn.md"
    assert item["title"] == "Old VPN host"
    archived = datetime.fromisoformat(item["archived_at"])
    assert archived.utcoffset() == timedelta(0)
    assert abs(archived - hub.clock.now()) < timedelta(minutes=5)
    notes = await http.get("/api/memory/aria/notes", headers=ADMIN)
    assert notes.json()["notes"] == []

    back = await http.post("/api/memory/aria/restore", json={"path": item["path"]}, headers=ADMIN)
    assert back.status_code == 200, back.text
    assert (await http.get("/api/memory/aria/forgotten", headers=ADMIN)).json() == {"items": []}
    notes = await http.get("/api/memory/aria/notes", headers=ADMIN)
    assert [n["path"] for n in notes.json()["notes"]] == ["knowledge/old-vpn.md"]
