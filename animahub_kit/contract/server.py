"""The hub's FastAPI app served over real HTTP in the test's own event loop, so a fake platform
can POST its webhooks to the adapter's routes as the platform does."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import uvicorn
from fastapi import FastAPI

from animahub_kit.contract.harness import eventually


class _InLoopServer(uvicorn.Server):
    """uvicorn in the test's own loop, leaving signal handling to pytest."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HubServer:
    """The hub's FastAPI app over real HTTP on 127.0.0.1, a free port."""

    def __init__(self, app: FastAPI) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, log_config=None, log_level="warning", access_log=False, lifespan="off"
        )
        config.timeout_graceful_shutdown = 2
        self._server = _InLoopServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self._sock]))
        await eventually(lambda: self._server.started or self._task.done())  # type: ignore[union-attr]
        if self._task.done():
            await self._task  # raises what stopped it

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await self._task
        self._sock.close()
