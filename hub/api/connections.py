"""Open connections and what each may hold: the budget `animahub start` serves with.

uvicorn's own `limit_concurrency` counts every open connection alike, so sockets that never
finish their request head, WebSocket handshakes waiting for a credential, or one person's
hundreds of live feeds filled it and every other request got 503. Here each connection is in
one of three states, and only two of them share `[server] max_connections`:

- waiting: its request head has not arrived yet, it is idle between requests, or it is a
  live-feed socket that has not authenticated. Waiting connections have a pool of their own
  (`max_waiting`, and `waiting_per_address` from one client address): when it is full, the
  oldest waiting connection is closed to make room. After `handshake_timeout_s` waiting a
  connection is closed anyway (the deadline before authentication).
- busy: a request is being served (`Edge` in hub/api/guard.py marks it; past
  `max_connections` busy and live together, it answers 503).
  The deadline stops once the request head has arrived: a head that came in time is
  answered even when the hub is too busy to reach it within the deadline (a live feed's
  credential has a deadline of its own, hub/api/live_ws.py).
- live: an authenticated live feed (hub/api/live_ws.py caps them per person and address).

The protocol class wraps the one uvicorn would choose and keeps wrapping it after a
WebSocket upgrade (uvicorn swaps protocols through the transport, which is proxied here).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import MutableMapping
from enum import Enum
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from hub.settings import ServerSection

log = logging.getLogger(__name__)
# The key under which a request's ASGI scope["state"] holds its Connection.
KEY = "animahub.connection"
# File descriptors the hub needs besides its connections (database, logs, memory index).
_OWN_FILES = 256


class State(Enum):
    WAITING = "waiting"
    BUSY = "busy"
    LIVE = "live"


class Connection:
    """One TCP connection's place in the budget; the app moves it between states."""

    def __init__(self, budget: Budget, transport: asyncio.BaseTransport, address: str) -> None:
        self._budget = budget
        self.transport = transport
        self.address = address
        self.state = State.WAITING
        self.open = True
        self.deadline: asyncio.TimerHandle | None = None
        self.head = _Head()

    def busy(self) -> bool:
        """A request is being served; False when every shared place is taken."""
        return self._budget.move(self, State.BUSY)

    def idle(self) -> None:
        """The request was answered: waiting for the next one (keep-alive)."""
        self._budget.move(self, State.WAITING)

    def live(self) -> bool:
        """An authenticated live feed; False when every shared place is taken."""
        return self._budget.move(self, State.LIVE)


def connection_of(scope: MutableMapping[str, Any]) -> Connection | None:
    """The request's connection, when served by `animahub start` (not in-process tests)."""
    found = scope.get("state", {}).get(KEY)
    return found if isinstance(found, Connection) else None


class Budget:
    """The open connections of one server; the waiting ones oldest first."""

    def __init__(self, server: ServerSection) -> None:
        self.limit = server.max_connections
        self.max_waiting = server.max_waiting
        self.per_address = server.waiting_per_address
        self.deadline_s = server.handshake_timeout_s
        self.serving: set[Connection] = set()  # busy and live: the shared places
        self.waiting: dict[Connection, None] = {}
        self._waiting_at: dict[str, dict[Connection, None]] = {}

    def admit(self, transport: asyncio.BaseTransport, address: str) -> Connection:
        """A new connection, waiting; room is made for it among the waiting ones."""
        mine = self._waiting_at.get(address, {})
        if len(mine) >= self.per_address:
            self.close(next(iter(mine)), "its address has too many waiting connections")
        if len(self.waiting) >= self.max_waiting:
            self.close(next(iter(self.waiting)), "a new connection needed its place")
        conn = Connection(self, transport, address)
        self._wait(conn)
        return conn

    def move(self, conn: Connection, state: State) -> bool:
        if not conn.open or conn.state is state:
            return True
        if state is not State.WAITING and conn.state is State.WAITING:
            if len(self.serving) >= self.limit:
                return False
            self._unwait(conn)
            self.serving.add(conn)
        elif state is State.WAITING:
            self.serving.discard(conn)
            self._wait(conn)
        conn.state = state
        return True

    def close(self, conn: Connection, why: str) -> None:
        """Closes `conn` now (abort: its place is free at once)."""
        if conn.open:
            log.debug("closed a connection from %s: %s", conn.address, why)
            self.forget(conn)
            conn.transport.abort()  # type: ignore[attr-defined]

    def forget(self, conn: Connection) -> None:
        if not conn.open:
            return
        conn.open = False
        self._unwait(conn)
        self.serving.discard(conn)

    def heard(self, conn: Connection, data: bytes) -> None:
        """`data` arrived on `conn`: once its request head is whole, its deadline stops (it
        keeps its waiting place until the app marks it busy or live)."""
        if conn.deadline is not None and conn.state is State.WAITING and conn.head.whole(data):
            conn.deadline.cancel()
            conn.deadline = None

    def _wait(self, conn: Connection) -> None:
        conn.head = _Head()
        self.waiting[conn] = None
        self._waiting_at.setdefault(conn.address, {})[conn] = None
        loop = asyncio.get_running_loop()
        conn.deadline = loop.call_later(self.deadline_s, self._expire, conn)

    def _unwait(self, conn: Connection) -> None:
        self.waiting.pop(conn, None)
        mine = self._waiting_at.get(conn.address)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self._waiting_at[conn.address]
        if conn.deadline is not None:
            conn.deadline.cancel()
            conn.deadline = None

    def _expire(self, conn: Connection) -> None:
        if conn.open and conn.state is State.WAITING:
            self.close(conn, f"nothing authenticated within {self.deadline_s:g} s")


class _Head:
    """Watches the bytes of one request head for its end, the first empty line after the
    request line (RFC 9112 2.2: empty lines before the request line are ignored, so they do
    not count: a client sending only those has not sent a head)."""

    def __init__(self) -> None:
        self._started = False
        self._tail = b""

    def whole(self, data: bytes) -> bool:
        if not self._started:
            data = data.lstrip(b"\r\n")
            self._started = bool(data)
        if not self._started:
            return False
        seen = self._tail + data
        self._tail = seen[-3:]
        return b"\r\n\r\n" in seen


class _Transport:
    """The real transport, except that a protocol switch (uvicorn's WebSocket upgrade)
    swaps the protocol inside the guard instead of replacing the guard."""

    def __init__(self, real: asyncio.Transport, guard: GuardedProtocol) -> None:
        self._real = real
        self._guard = guard

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._guard.inner = protocol

    def get_protocol(self) -> asyncio.BaseProtocol | None:
        return self._guard.inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class GuardedProtocol(asyncio.Protocol):
    """uvicorn's HTTP protocol behind the budget. `protocol_for` makes the class."""

    budget: Budget

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._args = (config, server_state, app_state, _loop)
        self.inner: asyncio.BaseProtocol | None = None
        self.conn: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        self.conn = self.budget.admit(transport, address)
        config, server_state, app_state, loop = self._args
        state = {**app_state, KEY: self.conn}
        self.inner = AutoHTTPProtocol(  # type: ignore[call-arg]
            config=config, server_state=server_state, app_state=state, _loop=loop
        )
        self.inner.connection_made(_Transport(transport, self))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        if isinstance(self.inner, asyncio.Protocol) and self.conn is not None and self.conn.open:
            self.budget.heard(self.conn, data)
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if isinstance(self.inner, asyncio.Protocol):
            return self.inner.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.budget.forget(self.conn)
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


def protocol_for(server: ServerSection) -> type[GuardedProtocol]:
    """A protocol class for uvicorn's `http` setting, sharing one budget (one server)."""
    return type("Guarded", (GuardedProtocol,), {"budget": Budget(server)})


def make_room_for(server: ServerSection) -> None:
    """Raises the process's open-file limit, within what the system allows, to hold every
    connection the budget admits; a limit below it is logged (see docs/operations.md)."""
    needed = server.max_connections + server.max_waiting + _OWN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        ceiling = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        if ceiling < needed:
            log.warning(
                "open files are limited to %d (ulimit -n), below the %d that "
                "[server] max_connections + max_waiting need",
                ceiling,
                needed,
            )
