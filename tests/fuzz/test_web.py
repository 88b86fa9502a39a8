"""The web chat's inbound routes (adapters/web/adapter.py request models) over any JSON body,
on a running hub with SQLite and with PostgreSQL: a 2xx, 404, 413 or 422, never a server
error (a body pydantic accepts must be one the store accepts)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st

from hub.api.server import create_app
from hub.app import Hub
from tests.conftest import add_demo_animas, make_settings, owner_headers
from tests.fuzz.strategies import examples, junk, nasty_text, shaped, text

# Lone surrogates: json.dumps escapes them ("\\ud800"), which Python's parser takes back
# into a str nothing can encode (issue 41, class 11): a 422 now, never a 500.
LONE = ["lone \ud800 high", "\udc00 low first", "\udbff"]
_name = st.one_of(st.sampled_from(["guest", "alice", "a.b@c-d", "x" * 64]), nasty_text(10))
chat_body = shaped(
    {
        "message": st.one_of(
            text(), st.sampled_from(["/whoami", "/anima list", "hi", "\x00", *LONE])
        )
    },
    conversation_id=st.one_of(st.sampled_from(["s1", "s-2.x"]), nasty_text(10)),
    user=_name,
    channel=st.one_of(st.sampled_from(["general", "nope"]), nasty_text(10)),
    message_id=st.one_of(st.sampled_from(["m1", "a:b.c-d"]), nasty_text(10)),
)
realistic_chat = st.fixed_dictionaries(
    {
        "message": st.one_of(text(), st.sampled_from(["/whoami", "/anima list"])),
        "conversation_id": st.sampled_from(["s1", "s-2.x"]),
    },
    optional={
        "user": st.sampled_from(["alice", "bob"]),
        "channel": st.just("general"),
        "message_id": st.uuids().map(str),
    },
)
post_body = shaped(
    {"text": st.one_of(text(), st.sampled_from(["\x00", *LONE]))},
    user=_name,
    message_id=nasty_text(10),
)
bodies = st.one_of(
    realistic_chat.map(json.dumps),
    realistic_chat.map(json.dumps),
    chat_body.map(json.dumps),
    junk.map(json.dumps),
    nasty_text(30),
)
ANSWERS = {200, 202, 404, 413, 422}


@pytest.fixture
async def web(home: Path, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        home, hub={"default_anima": "mika"}, storage={"database_url": database_url}
    )
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as client:
            yield client
    finally:
        await hub.stop()


async def _status(client: httpx.AsyncClient, path: str, body: str) -> int:
    headers = {"Content-Type": "application/json"}
    async with client.stream("POST", path, content=body.encode(), headers=headers) as response:
        return response.status_code  # the reply's event stream is not waited for


@examples(ci=20, full=1_000, fixture=True)
@given(body=bodies, anima=st.sampled_from(["aria", "nobody"]))
# A NUL in the text passed validation and PostgreSQL refused the row: a 500.
@example(body=json.dumps({"message": "a\x00b", "conversation_id": "s1"}), anima="aria")
async def test_any_chat_body_is_answered_never_a_server_error(
    web: httpx.AsyncClient, body: str, anima: str
) -> None:
    status = await _status(web, f"/api/chat/{anima}", body)
    event_kind(f"status {status}")
    assert status in ANSWERS


@examples(ci=15, full=1_000, fixture=True)
@given(
    body=st.one_of(
        st.builds(lambda t, u: json.dumps({"text": t, "user": u}), text(), st.just("alice")),
        post_body.map(json.dumps),
        junk.map(json.dumps),
    )
)
@example(body=json.dumps({"text": "a\x00b", "user": "alice"}))
async def test_any_channel_post_is_answered_never_a_server_error(
    web: httpx.AsyncClient, body: str
) -> None:
    status = await _status(web, "/api/channels/general/posts", body)
    event_kind(f"status {status}")
    assert status in ANSWERS
