"""Hostile sockets against a served hub, and ordinary requests made meanwhile (issue 41,
class 8). Used by tests/security/test_ws_exhaustion.py and bench/ws_exhaustion.py.

Three kinds of hostile socket, each (with `reconnect`) connecting again when the hub closes
it, until told to stop:
- `token`: a live-feed WebSocket signed in with one person's valid token;
- `silent`: a WebSocket handshake that never sends a credential;
- `stall`: raw TCP sending part of an upgrade request and nothing more.
All local (127.0.0.0/8: the hostile ones from addresses of their own), bounded in count.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import httpx

PAUSE_S = 1.0  # before a closed hostile socket connects again
KINDS = ("token", "silent", "stall")


@dataclass
class Flood:
    """Hostile sockets, as many of each kind as `counts` says, from `sources` addresses."""

    port: int
    token: str
    counts: dict[str, int]
    sources: dict[str, tuple[str, ...]]
    reconnect: bool = False
    opened: Counter[str] = field(default_factory=Counter)  # connections made, all told
    open_now: Counter[str] = field(default_factory=Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    _all_opened: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    async def run(self) -> None:
        tasks = [
            self._hostile(kind, self.sources[kind][i % len(self.sources[kind])])
            for kind, count in self.counts.items()
            for i in range(count)
        ]
        await asyncio.gather(*tasks)

    async def _hostile(self, kind: str, source: str) -> None:
        while not self.stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, local_addr=(source, 0)
                )
            except OSError:
                await asyncio.sleep(PAUSE_S)
                continue
            self.opened[kind] += 1
            self.open_now[kind] += 1
            if sum(min(self.opened[k], n) for k, n in self.counts.items()) >= self.total:
                self._all_opened.set()
            try:
                await self._hold(kind, reader, writer)
            except (OSError, asyncio.IncompleteReadError):
                pass  # closed by the hub: connect again
            finally:
                self.open_now[kind] -= 1
                writer.close()
            if not self.reconnect:
                return
            await asyncio.sleep(PAUSE_S)

    async def _hold(
        self, kind: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writer.write(upgrade_request(self.port, whole=kind != "stall"))
        await writer.drain()
        if kind == "token":
            await self._until(reader.readuntil(b"\r\n\r\n"))  # the 101, then the first frame
            writer.write(text_frame(json.dumps({"token": self.token})))
            await writer.drain()
        while not self.stop.is_set():
            data = await self._until(reader.read(65536))
            if not data:
                return  # the hub closed it

    async def _until(self, read: Awaitable[bytes]) -> bytes:
        """`read`'s bytes, or b"" once told to stop."""
        reading = asyncio.ensure_future(read)
        stopping = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait((reading, stopping), return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not reading.done():
            reading.cancel()
            return b""
        got: bytes = reading.result()
        return got

    async def all_opened(self) -> None:
        """Returns once every hostile socket has connected at least once."""
        await self._all_opened.wait()


def upgrade_request(port: int, whole: bool = True) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if not whole:  # stalls mid-handshake: some header lines, never the blank line
        return "\r\n".join(lines[:3]).encode() + b"\r\n"
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def text_frame(text: str) -> bytes:
    """One masked WebSocket text frame, as a client must send it (RFC 6455 5.2)."""
    payload = text.encode()
    mask = os.urandom(4)
    size = len(payload)
    head = bytes([0x81, 0x80 | size]) if size < 126 else bytes([0x81, 0xFE]) + size.to_bytes(2)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def timed_requests(
    port: int, headers: dict[str, str], path: str, count: int, timeout_s: float = 30.0
) -> list[tuple[int, float]]:
    """`count` GETs one after another, each on a new connection from 127.0.0.1 (as a
    browser's next request may be): (status, seconds) of each."""
    limits = httpx.Limits(max_keepalive_connections=0)
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.1", limits=limits)
    results: list[tuple[int, float]] = []
    async with httpx.AsyncClient(
        transport=transport,
        base_url=f"http://127.0.0.1:{port}",
        headers=headers,
        timeout=timeout_s,
    ) as client:
        for _ in range(count):
            began = time.perf_counter()
            try:
                status = (await client.get(path)).status_code
            except httpx.TransportError:  # refused, reset or timed out: 0, never a success
                status = 0
            results.append((status, time.perf_counter() - began))
    return results


def flood_in_process(
    port: int,
    token: str,
    counts: dict[str, int],
    sources: dict[str, tuple[str, ...]],
    ready: Any,
    stop: Any,
) -> None:
    """A reconnecting flood in a process of its own (bench/ws_exhaustion.py), so that its
    clients' work does not land on the hub's event loop: sets `ready` once every hostile
    socket has connected, ends when `stop` is set (multiprocessing Events)."""

    async def main() -> None:
        flood = Flood(port, token, counts, sources, reconnect=True)
        running = asyncio.create_task(flood.run())
        await flood.all_opened()
        ready.set()
        await asyncio.to_thread(stop.wait)
        flood.stop.set()
        await running

    asyncio.run(main())
