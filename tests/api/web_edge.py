"""Shared by the HTTP edge tests: a hub with the web chat behind its real app, request
bodies sent chunked, the headers every response must carry, uvicorn in the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from animahub_kit.contract.harness import eventually
from hub.api.server import create_app, uvicorn_config
from hub.app import Hub
from tests.conftest import add_demo_animas, make_settings, owner_headers

EVIL = "https://evil.example"
LIMIT = 4096  # [server] max_body_bytes in these tests
SECURITY = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


@contextlib.asynccontextmanager
async def serving(home: Path, **server: Any) -> AsyncIterator[tuple[Hub, httpx.AsyncClient]]:
    """A started hub (web chat on, offline, no memory) and a client on its ASGI app, with
    the owner's credential (the data folder's owner.key, as the CLI sends it)."""
    settings = make_settings(
        home,
        hub={"default_anima": "mika"},
        memory={"enabled": False},
        scheduler={"enabled": False},
        server={"max_body_bytes": LIMIT, **server},
    )
    hub = Hub(settings)
    await hub.start()
    add_demo_animas(hub)
    app = create_app(hub)
    app.add_api_route("/boom", _boom)  # an endpoint that fails: the 500 path
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=owner_headers(home)
        ) as http:
            yield hub, http
    finally:
        await hub.stop()


async def _boom() -> None:
    raise RuntimeError("an endpoint failed")


def chat(text: str = "hello") -> dict[str, str]:
    return {"message": text, "conversation_id": "s1", "user": "alice"}


async def chunks(total: int, size: int = 1024) -> AsyncIterator[bytes]:
    """A body of `total` bytes sent chunked: no Content-Length for a guard to read."""
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b"x" * piece


async def stored(client: httpx.AsyncClient) -> dict[str, Any]:
    """What requests could have left: people's messages in alice's DM with aria and in
    #general, and the Animas. A refused request must leave it as it was. (Anima replies
    to earlier, accepted messages may still be arriving; they are not compared.)"""
    history = await client.get(
        "/api/chat/aria/history", params={"conversation_id": "s1", "user": "alice"}
    )
    posts = await client.get("/api/channels/general/posts", params={"limit": 1000})
    animas = await client.get("/api/animas")
    return {
        "dm": [m for m in history.json()["messages"] if m["author_kind"] == "person"],
        "general": [p for p in posts.json()["posts"] if p["author_kind"] == "person"],
        "animas": [a["name"] for a in animas.json()],
    }


def assert_secured(response: httpx.Response) -> None:
    for name, value in SECURITY.items():
        assert response.headers.get(name) == value, (name, response.request.url)
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert "camera=()" in response.headers["permissions-policy"]
    assert "strict-transport-security" not in response.headers  # not over https
    assert not [h for h in response.headers if h.startswith("access-control-")]


class _InLoop(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # signals stay with pytest


@contextlib.asynccontextmanager
async def uvicorn_serving(hub: Hub) -> AsyncIterator[tuple[uvicorn.Server, int]]:
    """The hub's app served as `animahub start` serves it, on a free loopback port."""
    config = uvicorn_config(create_app(hub), hub.settings.server)
    config.lifespan = "off"  # the hub is already started
    server = _InLoop(config)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        await eventually(lambda: server.started or task.done())
        yield server, listening.getsockname()[1]
    finally:
        server.should_exit = True
        await task
        listening.close()
