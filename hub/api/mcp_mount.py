"""/mcp, built at its first request: the MCP SDK's import (~0.15 s of a 2 s start on two
cores, bench/README.md) is paid by the first MCP client, not by every start (issue 47).
The server itself is hub/api/mcp_server.py."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

PATH = "/mcp"

if TYPE_CHECKING:
    from hub.app import Hub


class LazyMCP:
    """An ASGI app that builds the MCP server once, then hands it every request. The SDK's
    session manager runs in a task of its own (its task group must be left by the task
    that entered it), which `close` ends with the app's lifespan."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._app: ASGIApp | None = None
        self._building = asyncio.Lock()
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._build()
        await app(scope, receive, send)

    async def _build(self) -> ASGIApp:
        async with self._building:
            if self._app is not None:
                return self._app
            from hub.api import mcp_server

            server = mcp_server.build(self._hub, PATH)
            app = mcp_server.asgi_app(server)  # makes the session manager, run next
            started = asyncio.Event()

            async def run() -> None:
                async with server.session_manager.run():
                    started.set()
                    await self._stop.wait()

            self._running = asyncio.create_task(run(), name="mcp sessions")
            waiting = asyncio.ensure_future(started.wait())
            await asyncio.wait([self._running, waiting], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if self._running.done():  # it failed to start: its error, to this request
                self._running.result()
            self._app = app
            return app

    async def close(self) -> None:
        """End the session manager, if a request started it."""
        self._stop.set()
        if self._running is not None:
            await self._running
