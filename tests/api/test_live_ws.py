"""WS /ws, the dashboard's live feed: served by uvicorn as `animahub start` serves it and
read with a real WebSocket client. Who connects decides what arrives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from hub.api import live_ws
from hub.app import Hub
from hub.clock import ManualClock
from hub.tasks.board import NewTask
from tests.api.test_people import ADMIN, TOKEN, say, token_for
from tests.api.web_edge import EVIL, uvicorn_serving
from tests.conftest import owner_headers, started_hub


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


async def _hub(home: Path, clock: ManualClock, **server: object) -> Hub:
    return await started_hub(home, clock, memory={"enabled": False}, server=server)


@pytest.fixture
async def served(home: Path, clock: ManualClock) -> AsyncIterator[tuple[Hub, int]]:
    """A hub with an API token, served on a loopback port."""
    hub = await _hub(home, clock, api_token=TOKEN)
    try:
        async with uvicorn_serving(hub) as (_server, port):
            yield hub, port
    finally:
        await hub.stop()


async def _next(socket: ClientConnection, kind: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """The next frame of `kind`, skipping others."""
    async with asyncio.timeout(timeout_s):
        while True:
            frame: dict[str, Any] = json.loads(await socket.recv())
            if frame["type"] == kind:
                return frame


async def _nothing_of(socket: ClientConnection, kind: str, wait_s: float = 0.5) -> None:
    try:
        async with asyncio.timeout(wait_s):
            while True:
                frame = json.loads(await socket.recv())
                assert frame["type"] != kind, frame
    except TimeoutError:
        return


@asynccontextmanager
async def _as_dana(client: httpx.AsyncClient, port: int) -> AsyncIterator[ClientConnection]:
    """The live feed, signed in with a token of dana's (an ordinary person), past its hello."""
    dana = await token_for(client, "dana")
    async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
        await socket.send(json.dumps({"token": dana["Authorization"].split()[1]}))
        await _next(socket, "hello")
        yield socket


def _http(port: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30)


async def test_the_owner_sees_turns_and_pauses(home: Path, clock: ManualClock) -> None:
    hub = await _hub(home, clock)  # loopback, no API token
    owner = owner_headers(home)
    try:
        async with uvicorn_serving(hub) as (_server, port):
            async with connect(f"ws://127.0.0.1:{port}/ws") as nobody:
                # The loopback address is nobody: without a credential the socket closes.
                await nobody.send(json.dumps({"hello": "there"}))
                with pytest.raises(ConnectionClosed) as closed:
                    await _next(nobody, "hello")
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
            async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
                await socket.send(json.dumps({"token": owner["Authorization"].split()[1]}))
                await _owner_sees_turns_and_pauses(hub, socket, port, owner)
    finally:
        await hub.stop()


async def _owner_sees_turns_and_pauses(
    hub: Hub, socket: ClientConnection, port: int, owner: dict[str, str]
) -> None:
    hello = await _next(socket, "hello")
    assert hello == {"type": "hello", "name": "Olivia", "admin": True}
    async with _http(port) as client:
        client.headers.update(owner)
        await say(client, "Hello there", "s1")
    started = await _next(socket, "turn")
    done = await _next(socket, "turn")
    assert (started["state"], done["state"]) == ("started", "done")
    assert started["anima"] == "aria" and "web" in started["conversation"]
    assert done["seconds"] >= 0
    hub.anima_states.pause("kai", "Olivia")
    assert await _next(socket, "anima") == {
        "type": "anima",
        "name": "kai",
        "paused": True,
        "by": "Olivia",
    }


async def test_a_person_sees_only_their_own_turns(served: tuple[Hub, int]) -> None:
    hub, port = served
    async with _http(port) as client:
        dana, bob = await token_for(client, "dana"), await token_for(client, "bob")
        dana_token = dana["Authorization"].removeprefix("Bearer ")
        async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
            await socket.send(json.dumps({"token": dana_token}))
            assert await _next(socket, "hello") == {"type": "hello", "name": "dana", "admin": False}
            await say(client.__class__(base_url=client.base_url, headers=bob), "hi", "b1")
            await _nothing_of(socket, "turn")  # bob's turn is not dana's to see
            hub.tasks.create(NewTask("Write the report", "mika", "aria"), "mika")
            await _nothing_of(socket, "task")  # the board is for admins
            await say(client.__class__(base_url=client.base_url, headers=dana), "hello", "d1")
            assert (await _next(socket, "turn"))["state"] == "started"
            hub.anima_states.pause("kai", "Olivia")  # an Anima's state is everyone's
            assert (await _next(socket, "anima"))["paused"] is True


async def test_a_heartbeat_run_through_the_api_is_told_to_everyone(
    served: tuple[Hub, int],
) -> None:
    """`animahub heartbeat mika` with a hub running is this call: the dashboard's card of
    mika (anyone may read it) is re-read on the notice, not left at "never"."""
    _hub, port = served
    async with _http(port) as client, _as_dana(client, port) as socket:
        ran = await client.post("/api/animas/mika/heartbeat", headers=ADMIN)
        assert ran.status_code == 200, ran.text
        assert await _next(socket, "heartbeat") == {
            "type": "heartbeat",
            "anima": "mika",
            "outcome": "heartbeat: nothing to say",
        }


async def test_the_admin_token_in_the_first_frame_sees_tasks(served: tuple[Hub, int]) -> None:
    hub, port = served
    async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
        await socket.send(json.dumps({"token": TOKEN}))
        assert (await _next(socket, "hello"))["admin"] is True
        created = hub.tasks.create(NewTask("Write the report", "mika", "aria"), "mika")
        task = await _next(socket, "task")
        assert (task["id"], task["state"], task["assignee"]) == (created.id, "todo", "aria")


async def test_no_credential_or_a_wrong_one_is_closed_4401(served: tuple[Hub, int]) -> None:
    _hub, port = served
    for first in (json.dumps({"token": "wrong"}), "not json", json.dumps({"nothing": 1})):
        async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
            await socket.send(first)
            with pytest.raises(ConnectionClosed) as closed:
                await socket.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


async def test_another_sites_page_cannot_connect(served: tuple[Hub, int]) -> None:
    _hub, port = served
    with pytest.raises(InvalidStatus) as refused:
        async with connect(f"ws://127.0.0.1:{port}/ws", origin=EVIL):  # type: ignore[arg-type]
            pass
    assert refused.value.response.status_code == 403


async def test_a_revoked_token_stops_receiving(
    served: tuple[Hub, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_ws, "RECHECK_S", 0.2)
    _hub, port = served
    async with _http(port) as client, _as_dana(client, port) as socket:
        assert (await _next(socket, "ping"))["type"] == "ping"  # still good
        listed = (await client.get("/api/tokens", headers=ADMIN)).json()
        dana = _hub.identity.find("dana")  # a name only the admin gave
        assert dana is not None
        token_id = next(t["id"] for t in listed if t["person"] == dana.id)
        assert (await client.delete(f"/api/tokens/{token_id}", headers=ADMIN)).is_success
        with pytest.raises(ConnectionClosed) as closed:
            await _next(socket, "never")
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
