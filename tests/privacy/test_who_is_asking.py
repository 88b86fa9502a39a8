"""Privacy red team, issue 41 classes 4 and 10: who a request is never follows from where it
comes from, nor from a cookie alone.

- The loopback owner: a reverse proxy on the hub's machine that adds no X-Forwarded-For
  (nginx's plain `proxy_pass`) makes every internet client's request come from 127.0.0.1.
  Through such a relay (a plain TCP one here, over real HTTP to uvicorn) a client without
  credentials reads no memory, mints no token, lists no people, reaches no MCP tool and
  no live feed: every attempt is 401 and nothing is written.
- A planted session: a page on another port of the same host can set the hub's session
  cookie to a session of its own (cookies do not separate ports). The cookie alone, or
  with a key that is not its own, is nobody; beside the owner's own cookie, the owner's
  page key picks the owner's.

The owner's secret is in their DM with aria (its history); no attempt's answer holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlmodel import select
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from animahub_kit.contract.server import HubServer
from hub.api.server import create_app
from hub.app import Hub
from hub.store.models import Credential
from tests.api.signing import page_key_in, same_origin
from tests.conftest import add_demo_animas, make_settings, owner_headers

SECRET = "the owner's safe opens with 7-3-9-1"
ATTEMPTS = [  # method, path, JSON body: what a stranger behind the proxy would try
    ("GET", "/api/me", None),
    ("GET", "/api/memory/aria/read?path=episodes", None),
    ("GET", "/api/memory/aria/search?q=safe", None),
    ("GET", "/api/chat/aria/history?conversation_id=s&user=olivia", None),
    ("GET", "/api/people", None),
    ("GET", "/api/deliveries", None),
    ("POST", "/api/tokens", {"person": "olivia"}),
    ("POST", "/api/signin/owner", {}),
    ("POST", "/api/people/olivia/invite", {}),
    ("POST", "/api/chat/aria", {"message": "what opens my safe?", "conversation_id": "s"}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]


@contextlib.asynccontextmanager
async def relay_to(target: str) -> AsyncIterator[str]:
    """A reverse proxy on the hub's machine that adds nothing: bytes in, bytes out."""
    host, port = target.removeprefix("http://").split(":")

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        hub_r, hub_w = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(client_r, hub_w), pipe(hub_r, client_w))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@pytest.fixture
async def served(home: Path, database_url: str) -> AsyncIterator[tuple[Hub, str]]:
    """A loopback hub without an API token (the default), over real HTTP, the owner's
    secret in their DM with aria."""
    settings = make_settings(
        home, memory={"enabled": False}, storage={"database_url": database_url}
    )
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    server = HubServer(create_app(hub))
    await server.start()
    try:
        async with httpx.AsyncClient(
            base_url=server.url, headers=owner_headers(home), timeout=30
        ) as owner:
            said = await owner.post(
                "/api/chat/aria", json={"message": SECRET, "conversation_id": "s"}
            )
            assert said.status_code == 200, said.text
        yield hub, server.url
    finally:
        await server.stop()
        await hub.stop()


def _tokens(hub: Hub) -> int:
    with hub.db.session() as session:
        return len(session.exec(select(Credential)).all())


async def test_a_proxy_on_the_hubs_machine_makes_nobody_the_owner(
    served: tuple[Hub, str],
) -> None:
    hub, url = served
    before = _tokens(hub)
    async with relay_to(url) as proxied, httpx.AsyncClient(base_url=proxied, timeout=30) as http:
        for method, path, body in ATTEMPTS:
            answer = await http.request(method, path, json=body)
            assert answer.status_code == 401, (method, path, answer.text)
            assert "7-3-9-1" not in answer.text
        port = proxied.rsplit(":", 1)[1]
        async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
            await socket.send(json.dumps({"hello": "owner?"}))
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    assert "7-3-9-1" not in str(await socket.recv())
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    assert _tokens(hub) == before  # no token, link or session was made


async def _session(http: httpx.AsyncClient, hub: Hub, person: str, owner: bool) -> tuple[str, str]:
    """A session of `person` (the owner's link if `owner`): its cookie's secret and key."""
    who = hub.identity.named(person)
    if owner:
        issued = hub.access.create_owner_signin(who.id, created_by="test")
    else:
        issued = hub.access.create_signin(who.id, created_by="test")
    signed = await http.post("/signin", data={"token": issued.secret}, headers=same_origin())
    assert signed.is_success or signed.is_redirect, signed.text  # (a 303 before issue 41)
    secret = signed.cookies["animahub_session"]
    http.cookies.clear()
    return secret, page_key_in(signed) if signed.is_success else ""


async def test_a_planted_session_cookie_is_nobody(served: tuple[Hub, str]) -> None:
    hub, url = served
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        planted, planted_key = await _session(http, hub, "Mallory", owner=False)
        asked = {"message": "what opens my safe?", "conversation_id": "s"}

        async def who(cookies: str, key: str | None) -> str | int:
            headers = {"Cookie": cookies, **({"X-Page-Key": key} if key else {})}
            me = await http.get("/api/me", headers=headers)
            chat = await http.post("/api/chat/aria", json=asked, headers=headers)
            owners = me.status_code == 200 and me.json()["id"] == hub.identity.owner().id
            assert owners or "7-3-9-1" not in chat.text  # only the owner hears their secret
            if me.status_code != 200:
                assert chat.status_code == 401, chat.text
                return me.status_code
            return str(me.json()["name"])

        # The planted cookie alone (the hub's page has no key for it), or with the page's
        # own key (the owner's), is nobody; its own key never reaches the hub's page.
        assert await who(f"animahub_session={planted}", None) == 401
        mine, my_key = await _session(http, hub, hub.identity.owner().display_name, owner=True)
        assert await who(f"animahub_session={planted}", my_key) == 401
        # Planted beside the owner's (another Path: sent first), the owner's key picks theirs.
        both = f"animahub_session={planted}; animahub_session={mine}"
        assert await who(both, my_key) == hub.identity.owner().display_name
        # Only the planter, who holds both halves, is the planted session.
        assert await who(f"animahub_session={planted}", planted_key) == "Mallory"
