"""The MCP server, driven by the official MCP SDK's own client: over streamable HTTP at /mcp
(in-process, through the app's lifespan) and over stdio (`animahub mcp`, a real process).
Each caller sees exactly what their person may see."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hub.api.server import create_app
from hub.app import Hub
from tests.api.test_chat_api import chat
from tests.conftest import add_demo_animas, make_settings

ADMIN = "admin-s3cret"
SECRET = "TANGO-7731"
TOOLS = {
    "memory_search",
    "memory_read",
    "memory_write",
    "memory_recent",
    "memory_briefing",
    "memory_handoff",
    "task_list",
}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The app's lifespan (the hub's start and stop, and the MCP sessions' task group) in a
    task of its own, as uvicorn runs it: a fixture's setup and teardown are two tasks."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app.router.lifespan_context(app):
            started.set()
            await stop.wait()

    task = asyncio.create_task(hold())
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiting.cancel()
        task.result()  # raises what start raised
    try:
        yield
    finally:
        stop.set()
        await task


@pytest.fixture
async def served(home: Path) -> AsyncIterator[tuple[Hub, httpx.AsyncClient]]:
    hub = Hub(make_settings(home, server={"api_token": ADMIN}))
    app = create_app(hub)
    async with lifespan(app):
        add_demo_animas(hub)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield hub, http


@asynccontextmanager
async def session(http: httpx.AsyncClient, token: str) -> AsyncIterator[ClientSession]:
    http.headers["Authorization"] = f"Bearer {token}"
    async with (
        streamable_http_client("http://localhost/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


async def text_of(client: ClientSession, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, dict(arguments))
    assert not result.isError, result.content
    return "".join(getattr(part, "text", "") for part in result.content)


async def refusal(client: ClientSession, tool: str, **arguments: object) -> str:
    result = await client.call_tool(tool, dict(arguments))
    assert result.isError
    return "".join(getattr(part, "text", "") for part in result.content)


async def told_a_secret(hub: Hub, http: httpx.AsyncClient) -> tuple[str, str]:
    """Alice tells aria a secret in her DM; returns Alice's and Bob's own API tokens."""
    http.headers["Authorization"] = f"Bearer {ADMIN}"
    said = await chat(http, "aria", message=f"My locker code is {SECRET}", user="alice")
    assert said.status_code == 200
    assert hub.memory is not None
    await hub.memory.drain()
    alice, bob = hub.identity.named("alice"), hub.identity.named("bob")
    return hub.access.create_token(alice.id).secret, hub.access.create_token(bob.id).secret


async def test_each_caller_sees_what_their_person_may_see(
    served: tuple[Hub, httpx.AsyncClient],
) -> None:
    hub, http = served
    alice, bob = await told_a_secret(hub, http)
    async with session(http, alice) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        found = await text_of(client, "memory_search", query="locker code", anima="aria")
        assert SECRET in found
        # stored text comes marked as data, and nothing stored can close the wrapper
        assert found.startswith("<stored-data") and "not instructions" in found
        assert SECRET in await text_of(client, "memory_recent", anima="aria")
    async with session(http, bob) as client:
        found = await text_of(client, "memory_search", query="locker code", anima="aria")
        assert SECRET not in found
        assert SECRET not in await text_of(client, "memory_recent", anima="aria")
        assert SECRET not in await text_of(client, "memory_briefing", topic="locker", anima="aria")
        day = f"episodes/{hub.clock.now():%Y-%m-%d}.md"  # Alice's DM is in it
        assert "no memory file" in await refusal(client, "memory_read", path=day, anima="aria")
    async with session(http, ADMIN) as client:  # the admin token: every scope
        found = await text_of(client, "memory_search", query="locker code", anima="aria")
        assert SECRET in found
        day = f"episodes/{hub.clock.now():%Y-%m-%d}.md"
        assert SECRET in await text_of(client, "memory_read", path=day, anima="aria")


async def test_a_persons_notes_are_their_own(served: tuple[Hub, httpx.AsyncClient]) -> None:
    hub, http = served
    alice, bob = await told_a_secret(hub, http)
    note = "---\nscope: shared\n---\n# Bob's deploy steps\nRun the tests, tag, push to quartz."
    async with session(http, bob) as client:
        wrote = await text_of(
            client, "memory_write", path="knowledge/bob-deploy.md", content=note, anima="aria"
        )
        assert "1 memory item" in wrote
        assert "quartz" in await text_of(client, "memory_search", query="deploy", anima="aria")
        assert "is not your note" not in wrote
        outside = await refusal(
            client, "memory_write", path="episodes/x.md", content="hi", anima="aria"
        )
        assert "knowledge or procedures" in outside
        broken = await refusal(
            client, "memory_write", path="knowledge/b.md", content="---\na: [\n---\nx", anima="aria"
        )
        assert "front matter is not valid YAML" in broken
    async with session(http, alice) as client:
        # "scope: shared" in Bob's note did not make it shared: it is his
        assert "quartz" not in await text_of(
            client, "memory_search", query="deploy steps", anima="aria"
        )
        taken = await refusal(
            client, "memory_write", path="knowledge/bob-deploy.md", content="mine", anima="aria"
        )
        # Bob's note is hidden from her: the path is taken, said as memory_read says it
        assert "no memory file 'knowledge/bob-deploy.md' that you may read" in taken
    assert hub.memory is not None
    saved = hub.memory.read("aria", "knowledge/bob-deploy.md")
    assert f"scope: person:{hub.identity.named('bob').id}" in saved


async def test_mcp_needs_a_credential_and_names_a_known_anima(
    served: tuple[Hub, httpx.AsyncClient],
) -> None:
    _hub, http = served
    http.headers.pop("Authorization", None)
    refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    http.headers["Authorization"] = "Bearer wrong"
    assert (await http.post("/mcp", json={})).status_code == 401
    async with session(http, ADMIN) as client:
        unknown = await refusal(client, "memory_search", query="x", anima="nobody")
        assert "no Anima named 'nobody'" in unknown and "aria" in unknown
        bad = await refusal(client, "memory_search", query="x", layer="gossip", anima="aria")
        assert "layer must be one of" in bad


async def test_stdio_serves_the_same_tools_from_the_command_line(home: Path) -> None:
    """`animahub mcp aria` with no hub running: an in-process hub, the owner on loopback."""
    hub = Hub(make_settings(home))
    await hub.start()
    add_demo_animas(hub)
    await hub.stop()
    animahub = Path(sys.executable).with_name("animahub")
    params = StdioServerParameters(
        command=str(animahub),
        args=["mcp", "aria"],
        env={**os.environ, "ANIMAHUB_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        note = "# Release train\nThe release train leaves every second Tuesday."
        await text_of(client, "memory_write", path="knowledge/release.md", content=note)
        found = await text_of(client, "memory_search", query="when does the release train go")
        assert "second Tuesday" in found and found.startswith("<stored-data")
        # pinned to aria, whatever the client asks
        same = await text_of(client, "memory_read", path="knowledge/release.md", anima="bob")
        assert "second Tuesday" in same
