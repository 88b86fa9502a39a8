"""Where a fake platform listens: an aiohttp app on 127.0.0.1, on a free port or a fixed one.

A fixed port lets a test stop a fake and bring it back at the same address, as a platform
that was down comes back; the adapter under test never learns a new URL.
"""

from __future__ import annotations

from typing import Any, Self

from aiohttp import web

HOST = "127.0.0.1"


class Listener:
    def __init__(self, port: int = 0) -> None:
        self.port = port  # 0: a free one, chosen when first served and kept after
        self._runner: web.AppRunner | None = None

    async def serve(self, app: web.Application, **runner_options: Any) -> None:
        self._runner = web.AppRunner(app, access_log=None, **runner_options)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self.port, reuse_address=True)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


class Served:
    """What every fake platform shares around its `Listener`: `async with` starts and stops
    it, and it says where it listens. A fake sets `_listener` and writes `start` (routes,
    then `self._listener.serve(app)`) and `stop`."""

    _listener: Listener

    async def start(self) -> Self:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def running(self) -> bool:
        return self._listener.running

    @property
    def url(self) -> str:
        return self._listener.url

    @property
    def port(self) -> int:
        return self._listener.port
