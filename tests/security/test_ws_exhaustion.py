"""Issue 41, class 8: sockets that hold places without authenticating, or one person's
many live feeds, must not leave everyone else 503. The hub served as `animahub start`
serves it (uvicorn, its default connection settings), 500 hostile sockets open
(tests/security/ws_flood.py), while the owner and another person make requests and open a
live feed. Latency is not asserted here: bench/ws_exhaustion.py measures it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from hub.api.live_ws import TOO_MANY
from hub.clock import ManualClock
from tests.api.test_people import ADMIN, TOKEN, token_for
from tests.api.web_edge import uvicorn_serving
from tests.conftest import started_hub
from tests.security.ws_flood import Flood, timed_requests, upgrade_request

HOSTILE = {"token": 170, "silent": 170, "stall": 160}  # 500
SOURCES = {
    "token": ("127.0.0.2",),  # one person's token, from one address
    "silent": ("127.0.0.3", "127.0.0.4", "127.0.0.5"),
    "stall": ("127.0.0.6", "127.0.0.7", "127.0.0.8"),
}
REQUESTS = 20  # each, the owner and dana


@asynccontextmanager
async def _served(home: Path, **server: object) -> AsyncIterator[tuple[int, httpx.AsyncClient]]:
    """A hub with an admin token served as `animahub start` serves it; a client of it."""
    hub = await started_hub(
        home,
        ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
        memory={"enabled": False},
        server={"api_token": TOKEN, **server},
    )
    try:
        async with uvicorn_serving(hub) as (_server, port):
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                yield port, client
    finally:
        await hub.stop()


def _secret(headers: dict[str, str]) -> str:
    return headers["Authorization"].split()[1]


async def test_500_hostile_sockets_leave_the_owners_and_another_persons_requests_answered(
    home: Path,
) -> None:
    async with _served(home) as (port, client), asyncio.timeout(120):
        mallory = _secret(await token_for(client, "mallory"))
        dana = await token_for(client, "dana")
        flood = Flood(port, mallory, HOSTILE, SOURCES)
        hostile = asyncio.create_task(flood.run())
        try:
            await flood.all_opened()
            owner, person, hello = await asyncio.gather(
                timed_requests(port, ADMIN, "/api/animas", REQUESTS),
                timed_requests(port, dana, "/api/chat/mika/conversations", REQUESTS),
                _first_frame(port, _secret(dana)),
            )
        finally:
            flood.stop.set()
            await hostile
    assert [status for status, _ in owner] == [200] * REQUESTS
    assert [status for status, _ in person] == [200] * REQUESTS
    assert hello == {"type": "hello", "name": "dana", "admin": False}
    assert sum(flood.opened.values()) >= 500, flood.opened


async def test_a_person_and_an_address_hold_a_bounded_number_of_live_feeds(home: Path) -> None:
    async with _served(home, live_per_person=2, live_per_address=3) as (port, client):
        dana = _secret(await token_for(client, "dana"))
        erin = _secret(await token_for(client, "erin"))
        async with _feed(port, dana) as one, _feed(port, dana) as _two:
            assert (await _first_frame(port, dana))["code"] == TOO_MANY  # a third of dana's
            async with _feed(port, erin):  # another person, the same address: the third
                assert (await _first_frame(port, erin))["code"] == TOO_MANY  # a fourth
            await one.close()
            assert (await _first_frame(port, dana))["name"] == "dana"  # a place again


async def test_a_socket_that_does_not_authenticate_in_time_is_closed(home: Path) -> None:
    async with _served(home, handshake_timeout_s=0.5) as (port, _client), asyncio.timeout(60):
        silent = await connect(f"ws://127.0.0.1:{port}/ws")  # never sends a credential
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(upgrade_request(port, whole=False))  # stalls mid-handshake
        await writer.drain()
        await silent.wait_closed()
        assert await reader.read() == b""  # closed by the hub, no answer
        writer.close()


async def test_a_head_that_came_in_time_is_answered_though_the_hub_reaches_it_late(
    home: Path,
) -> None:
    """A hub too busy to reach a request within the deadline (here: its loop blocked past
    it) still answers a request whose head arrived in time, and still closes a socket whose
    head never ended."""
    async with _served(home, handshake_timeout_s=0.2) as (port, _client), asyncio.timeout(60):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        stalled, stalling = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.05)  # both accepted: their deadlines run
        head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        stalling.write(head.encode())  # a head never ended
        writer.write(f"{head}Connection: close\r\n\r\n".encode())
        # Written straight to the sockets (no await: the hub's loop, this test's, does not
        # run), then the loop is kept busy past both deadlines.
        time.sleep(0.4)  # noqa: ASYNC251 (blocking on purpose: a hub too busy to reach it)
        answer = await reader.read()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
        assert await stalled.read() == b""  # closed by the hub, no answer
        writer.close()
        stalling.close()


@asynccontextmanager
async def _feed(port: int, token: str) -> AsyncIterator[ClientConnection]:
    async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30) as socket:
        await socket.send(json.dumps({"token": token}))
        assert json.loads(await asyncio.wait_for(socket.recv(), 30))["type"] == "hello"
        yield socket


async def _first_frame(port: int, token: str) -> dict[str, object]:
    """A live feed's first frame with `token`, or the close code it was refused with."""
    async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30) as socket:
        await socket.send(json.dumps({"token": token}))
        try:
            frame: dict[str, object] = json.loads(await asyncio.wait_for(socket.recv(), 30))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            return {"code": closed.rcvd.code}
        return frame
