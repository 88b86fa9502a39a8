"""Red team, issue 41 class 6: a dedup key that ignores the sender. A web client chooses its
own `message_id`; Bob, knowing (or guessing) the id Ada used, sent it with his own message
and was handed Ada's stored reply. An inbound's identity now includes who sent it: Bob gets
a turn of his own, and a stored outcome is replayed only to the person who sent it.

Through the real app (guard, web adapter, ingress, runtime), on SQLite and PostgreSQL, with
an Anima that echoes what it was told.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from animahub_kit.contract.harness import ScriptedResponder
from hub.api.server import create_app
from hub.app import Hub
from hub.store.models import InboxItem
from hub.turns.runtime import Responders
from tests.api.test_chat_api import sse_events
from tests.api.test_people import TOKEN, token_for
from tests.conftest import add_demo_animas, make_settings

ADA_SECRET = "the vault code is 7731-ADA"


@pytest.fixture
async def hub(home: Path, database_url: str) -> AsyncIterator[Hub]:
    settings = make_settings(
        home,
        hub={"default_anima": "mika"},
        server={"api_token": TOKEN},
        storage={"database_url": database_url},
        scheduler={"enabled": False},
    )
    echo = ScriptedResponder()
    instance = Hub(settings, responders=Responders(echo, echo))
    await instance.start()
    add_demo_animas(instance)
    try:
        yield instance
    finally:
        await instance.stop()


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


async def chat(client: httpx.AsyncClient, who: dict[str, str], text: str, message_id: str) -> str:
    body = {"message": text, "conversation_id": "s1", "message_id": message_id}
    response = await client.post("/api/chat/mika", json=body, headers=who)
    assert response.status_code == 200, response.text
    return "".join(e.get("text") or e.get("message", "") for e in sse_events(response.text))


async def test_another_persons_message_id_gets_a_turn_of_ones_own(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    ada, bob = await token_for(client, "Ada"), await token_for(client, "Bob")
    assert ADA_SECRET in await chat(client, ada, ADA_SECRET, "m-1")
    stolen = await chat(client, bob, "what is the weather?", "m-1")
    assert ADA_SECRET not in stolen
    assert "echo: what is the weather?" in stolen  # his own turn, answered
    # Ada's own resend is still a redelivery: her reply, and no second turn.
    assert ADA_SECRET in await chat(client, ada, "a resend", "m-1")
    with hub.db.session() as session:
        rows = session.exec(select(InboxItem).where(InboxItem.event_id == "m-1")).all()
    assert sorted(r.text for r in rows) == sorted([ADA_SECRET, "what is the weather?"])


async def test_another_persons_command_id_runs_ones_own_command(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    # A command's stored outcome ("Already done …") is not the leak here, but whose
    # command it was is: Bob's /whoami with Ada's id must be Bob's, run for him.
    ada, bob = await token_for(client, "Ada"), await token_for(client, "Bob")
    post = "/api/channels/general/posts"
    first = await client.post(post, json={"text": "/whoami", "message_id": "c-1"}, headers=ada)
    assert "You are Ada" in first.json()["reply"]
    second = await client.post(post, json={"text": "/whoami", "message_id": "c-1"}, headers=bob)
    assert second.json()["duplicate"] is False
    assert "You are Bob" in second.json()["reply"]
    again = await client.post(post, json={"text": "/whoami", "message_id": "c-1"}, headers=bob)
    assert again.json()["duplicate"] is True and again.json()["id"] == second.json()["id"]
