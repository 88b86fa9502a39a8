"""The web chat API over the real message path (in-process ASGI, real database)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sqlmodel import func, select

from hub.app import Hub
from hub.store.models import DeliveryRow, InboxItem, Turn


def sse_events(body: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith("data: ")
    ]


async def chat(client: httpx.AsyncClient, name: str, **payload: Any) -> httpx.Response:
    payload.setdefault("conversation_id", "s1")
    payload.setdefault("user", "alice")
    return await client.post(f"/api/chat/{name}", json=payload)


def count(hub: Hub, table: Any) -> int:
    with hub.db.session() as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


async def test_chat_streams_offline_reply_and_records_it(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    response = await chat(client, "aria", message="Hello there")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == {"type": "done"}
    text = "".join(e["text"] for e in events if e["type"] == "text")
    assert len([e for e in events if e["type"] == "text"]) > 1  # streamed in pieces
    assert "Aria" in text and "alice" in text
    assert "No language model is configured" in text and "[llm]" in text
    await _sent(hub)
    history = await client.get(
        "/api/chat/aria/history", params={"conversation_id": "s1", "user": "alice"}
    )
    messages = history.json()["messages"]
    assert [m["author_kind"] for m in messages] == ["person", "anima"]
    assert messages[0]["text"] == "Hello there"
    assert messages[1]["text"] == text.strip()


async def test_the_offline_mode_explains_itself_once_per_person(client: httpx.AsyncClient) -> None:
    def said(response: httpx.Response) -> str:
        return "".join(e.get("text", "") for e in sse_events(response.text))

    first = said(await chat(client, "aria", message="Hello there", conversation_id="s1"))
    assert "No language model is configured" in first and "[llm]" in first
    # Another conversation, another Anima: the same person is told in one line.
    for anima, session in (("aria", "s2"), ("kai", "s3")):
        again = said(await chat(client, anima, message="Hello again", conversation_id=session))
        assert "No language model is configured, so I'm" not in again
        assert again.rstrip().endswith("and restart the hub.)_") and "Noted, alice" in again
    other = said(await chat(client, "aria", message="Hi", conversation_id="s4", user="bob"))
    assert "No language model is configured, so I'm answering in offline mode" in other


async def test_unknown_anima_is_404_and_stores_nothing(client: httpx.AsyncClient, hub: Hub) -> None:
    response = await chat(client, "nobody", message="hi")
    assert response.status_code == 404
    assert "nobody" in response.json()["detail"]
    assert count(hub, InboxItem) == 0


async def test_oversized_message_is_413_and_stores_nothing(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    response = await chat(client, "aria", message="x" * (32 * 1024 + 1))
    assert response.status_code == 413
    assert "32768" in response.json()["detail"]
    assert count(hub, InboxItem) == 0
    assert count(hub, DeliveryRow) == 0


async def test_exactly_the_limit_is_accepted(client: httpx.AsyncClient) -> None:
    response = await chat(client, "aria", message="é" * (16 * 1024))  # 32 KiB of UTF-8
    assert response.status_code == 200


async def test_malformed_json_and_missing_fields_are_422(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    bad_json = await client.post(
        "/api/chat/aria", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 422
    missing = await client.post("/api/chat/aria", json={"conversation_id": "s1"})
    assert missing.status_code == 422
    assert any(err["loc"][-1] == "message" for err in missing.json()["detail"])
    bad_user = await chat(client, "aria", message="hi", user="no/slashes#here")
    assert bad_user.status_code == 422
    blank = await chat(client, "aria", message=" \n\t ")  # kept, it was an empty bubble
    assert blank.status_code == 422 and "the message is empty" in blank.text
    post = await client.post("/api/channels/general/posts", json={"text": "  ", "user": "bob"})
    assert post.status_code == 422 and "the message is empty" in post.text
    assert count(hub, InboxItem) == 0


async def test_redelivered_message_id_is_answered_once(client: httpx.AsyncClient, hub: Hub) -> None:
    first = await chat(client, "aria", message="once", message_id="m-1")
    second = await chat(client, "aria", message="once", message_id="m-1")
    assert sse_events(first.text)[-1]["type"] == "done"
    replay = sse_events(second.text)
    assert replay[-1]["type"] == "done"
    assert "".join(e.get("text", "") for e in replay) == "".join(
        e.get("text", "") for e in sse_events(first.text)
    )
    assert count(hub, InboxItem) == 1
    assert count(hub, Turn) == 2


async def test_animas_channels_and_health(client: httpx.AsyncClient) -> None:
    animas = (await client.get("/api/animas")).json()
    assert [a["name"] for a in animas] == ["aria", "kai", "mika"]
    aria = next(a for a in animas if a["name"] == "aria")
    assert aria["supervisor"] == "mika" and aria["role"] == "researcher" and aria["model"] == ""
    channels = (await client.get("/api/channels")).json()
    assert channels == [{"name": "general", "address": "web:local/general"}]
    health = (await client.get("/api/system/health")).json()
    assert health["status"] == "ok" and health["llm"] == "offline"
    assert health["database"] == "sqlite" and health["adapters"] == ["web"]
    assert health["worker"]["partitions"] is None  # the only worker: no leases
    assert health["worker"]["refused"] == {"guarded": 0, "outbox": 0, "schedule": 0}
    docs = await client.get("/docs")
    assert docs.status_code == 200
    schema = (await client.get("/openapi.json")).json()
    assert "/api/chat/{name}" in schema["paths"]


async def test_channel_post_is_answered_in_the_channel(client: httpx.AsyncClient, hub: Hub) -> None:
    posted = await client.post(
        "/api/channels/general/posts", json={"text": "@kai status?", "user": "bob"}
    )
    assert posted.status_code == 202
    inbox_id = posted.json()["id"]
    events = [e async for e in hub.port.subscribe(inbox_id)]
    assert events[-1].type == "done"
    await _sent(hub)
    posts = (await client.get("/api/channels/general/posts")).json()["posts"]
    assert [(p["author_kind"], p["author"]) for p in posts] == [("person", "bob"), ("anima", "kai")]
    missing = await client.get("/api/channels/nope/posts")
    assert missing.status_code == 404


async def _sent(hub: Hub) -> None:
    import asyncio

    for _ in range(100):
        if hub.outbox.counts().get("pending", 0) == 0:
            return
        hub.outbox.wake()
        await asyncio.sleep(0.02)
    raise AssertionError("deliveries still pending")


async def test_a_persons_conversations_are_listed_by_the_hub(
    client: httpx.AsyncClient, hub: Hub
) -> None:
    """After "New conversation" the earlier one is still reachable, from any browser: the
    hub lists a person's conversations with an Anima (GET /api/chat/{name}/conversations)."""
    for conversation, text in (("s1", "About the budget"), ("s1", "and more"), ("s2", "Hiring")):
        said = await chat(client, "aria", message=text, user="alice", conversation_id=conversation)
        assert said.status_code == 200
    await chat(client, "kai", message="Elsewhere", user="alice", conversation_id="s3")
    listed = await client.get("/api/chat/aria/conversations", params={"user": "alice"})
    past = listed.json()["conversations"]
    assert [(s["thread"], s["first_text"], s["messages"]) for s in past] == [
        ("s2", "Hiring", 1),
        ("s1", "About the budget", 2),
    ]
    assert past[0]["last_at"] >= past[1]["last_at"]
    bobs = await client.get("/api/chat/aria/conversations", params={"user": "bob"})
    assert bobs.json() == {"conversations": []}  # only one's own

    async def found(q: str, user: str = "alice") -> list[str]:
        listed = await client.get("/api/chat/aria/conversations", params={"user": user, "q": q})
        assert listed.status_code == 200, listed.text
        return [s["thread"] for s in listed.json()["conversations"]]

    assert await found("AND MORE") == ["s1"]  # any message of it, in any case
    assert await found("hiring") == ["s2"]
    await _sent(hub)
    assert await found("offline mode") == ["s2", "s1"]  # what aria replied counts too
    assert await found("%") == [] and await found("budget", user="bob") == []
