"""The fake Discord's gateway: one WebSocket session per connection, in plain JSON text frames
(discord.py asks for ``compress=zlib-stream`` but reads text frames as they are).

HELLO on connect, an ACK for every heartbeat, READY and a GUILD_CREATE for the test guild
after IDENTIFY, then whatever is dispatched while the session is open. A resume is never
kept across connections here, so it is told to identify anew.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

from aiohttp import WSMsgType, web

from animahub_kit.fakes.discord import objects
from animahub_kit.fakes.discord.objects import JSON
from animahub_kit.fakes.discord.state import DiscordState
from animahub_kit.fakes.listener import HOST, Listener

MESSAGE_CONTENT_INTENT = 1 << 15
HEARTBEAT_INTERVAL_MS = 41_250


@dataclass
class Session:
    ws: web.WebSocketResponse
    query: dict[str, str]
    identified: bool = False
    seq: int = 0

    async def send(self, payload: JSON) -> None:
        await self.ws.send_str(json.dumps(payload))

    async def dispatch(self, event: str, data: JSON) -> None:
        self.seq += 1
        await self.send({"op": 0, "t": event, "s": self.seq, "d": data})


class Gateway:
    def __init__(self, state: DiscordState, listener: Listener) -> None:
        self._state = state
        self._listener = listener  # where it is served: its port is the gateway's
        self._sessions: list[Session] = []

    @property
    def url(self) -> str:
        return f"ws://{HOST}:{self._listener.port}/gateway"

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """`GET /gateway`: a session, for as long as its connection stays open."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = Session(ws, dict(request.query))
        self._state.gateway_queries.append(session.query)
        self._sessions.append(session)
        try:
            await session.send(
                {"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}}
            )
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    continue
                await self._op(session, json.loads(frame.data))
        finally:
            self._sessions.remove(session)
        return ws

    async def _op(self, session: Session, payload: JSON) -> None:
        op = payload.get("op")
        if op == 1:  # heartbeat
            await session.send({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:  # identify
            await self._identify(session, payload["d"])
        elif op == 6:  # resume: not kept across connections here, so start a new session
            await session.send({"op": 9, "s": None, "t": None, "d": False})

    async def _identify(self, session: Session, data: JSON) -> None:
        state = self._state
        state.identifies.append(data)
        bot = state.bots.get(data.get("token", ""))
        if bot is None:
            await session.ws.close(code=4004, message=b"Authentication failed.")
            return
        if (
            int(data.get("intents", 0)) & MESSAGE_CONTENT_INTENT
            and not state.message_content_enabled
        ):
            await session.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        session.identified = True
        session_id = f"session-{state.snowflake()}"
        await session.dispatch(
            "READY", objects.ready(bot, state.guild_id, session_id, self.url, state.app_id)
        )
        await session.dispatch("GUILD_CREATE", state.guild(bot))

    def online(self) -> bool:
        """Whether a bot has a gateway session open (one that would get a dispatch)."""
        return any(s.identified and not s.ws.closed for s in self._sessions)

    async def dispatch(self, event: str, data: JSON) -> None:
        """Send a dispatch (op 0) to every identified gateway session."""
        self._state.dispatched.append((event, data))
        for session in list(self._sessions):
            if session.identified and not session.ws.closed:
                # A session whose connection is dropping misses it, as on Discord.
                with contextlib.suppress(ConnectionError):
                    await session.dispatch(event, data)

    async def reconnect(self) -> None:
        """Ask every gateway session to reconnect (op 7 RECONNECT, as Discord does before it
        moves a session). The client resumes; this fake keeps no sessions to resume, so it
        is told to identify anew (op 9) and gets a new READY."""
        for session in list(self._sessions):
            if session.identified and not session.ws.closed:
                await session.send({"op": 7, "s": None, "t": None, "d": None})

    async def close(self) -> None:
        for session in list(self._sessions):
            with contextlib.suppress(ConnectionError, RuntimeError):
                await session.ws.close()
