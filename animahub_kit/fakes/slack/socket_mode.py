"""Socket Mode as the fake Slack speaks it at ``/link``: the URL ``apps.connections.open``
hands out, a ``hello`` on connect, envelopes (``events_api``, ``slash_commands``) pushed
over the newest connection, the acknowledgements read back (with their payload: a slash
command's answer), and ``disconnect`` to make the client reconnect."""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from typing import Any

import aiohttp
from aiohttp import web

from animahub_kit.fakes.listener import HOST, Listener
from animahub_kit.fakes.slack.background import Background
from animahub_kit.fakes.slack.model import JSON
from animahub_kit.fakes.slack.state import SlackState


class SocketMode:
    def __init__(
        self,
        state: SlackState,
        listener: Listener,
        background: Background,
        spread: random.Random | None = None,
    ) -> None:
        self._state = state
        self._listener = listener  # where it is served: its port is the socket's
        self._background = background
        self._acked: dict[str, asyncio.Event] = {}
        # Slack sends each envelope to one of an app's open connections at random (up to
        # ten, one per hub worker); without `spread` the newest one, as tests expect.
        self._spread = spread

    def connections_open(self) -> JSON:
        """`apps.connections.open` (the wire has checked the app-level token)."""
        return {"ok": True, "url": f"ws://{HOST}:{self._listener.port}/link"}

    async def link(self, request: web.Request) -> web.WebSocketResponse:
        """`GET /link`: one Socket Mode connection, for as long as it stays open."""
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        sockets = self._state.sockets
        sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(sockets),
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": "A0FAKEAPP"},
            }
        )
        self._state.hellos += 1
        try:
            await self._read_acks(ws)
        finally:
            sockets.remove(ws)
        return ws

    async def _read_acks(self, ws: web.WebSocketResponse) -> None:
        async for frame in ws:
            if frame.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(frame.data)
            envelope_id = data.get("envelope_id")
            if envelope_id:
                self._state.acks[envelope_id] = data.get("payload")
                self._acked.setdefault(envelope_id, asyncio.Event()).set()

    def push(self, kind: str, payload: JSON, **extra: Any) -> str:
        """Send an envelope (`events_api`, `slash_commands`) over the newest socket, or one
        at random (`spread`)."""
        sockets = self._state.sockets
        if not sockets:
            raise AssertionError("no Socket Mode connection is open")
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": extra.get("retry_attempt", 0),
            "retry_reason": extra.get("retry_reason", ""),
        }
        self._acked.setdefault(envelope_id, asyncio.Event())
        socket = self._spread.choice(sockets) if self._spread else sockets[-1]
        self._background.spawn(socket.send_json(envelope))
        return envelope_id

    async def refresh_sockets(self) -> None:
        """Tell every Socket Mode connection to reconnect, as Slack does before it moves or
        refreshes one (`disconnect`, `refresh_requested`): the client opens a new socket
        (`apps.connections.open`, a new hello) and Slack retries what was not acknowledged."""
        disconnect = {
            "type": "disconnect",
            "reason": "refresh_requested",
            "debug_info": {"host": "fake-slack"},
        }
        for ws in list(self._state.sockets):
            await ws.send_json(disconnect)

    async def ack(self, envelope_id: str, timeout_s: float = 10.0) -> JSON | None:
        """Wait for the acknowledgement of an envelope; its payload, if it had one."""
        event = self._acked.setdefault(envelope_id, asyncio.Event())
        await asyncio.wait_for(event.wait(), timeout_s)
        return self._state.acks[envelope_id]

    async def close(self) -> None:
        for ws in list(self._state.sockets):
            await ws.close()
