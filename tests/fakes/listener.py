"""Where a fake platform listens: an aiohttp app on 127.0.0.1, on a free port or a fixed one.

A fixed port lets a test stop a fake and bring it back at the same address, as a platform
that was down comes back; the adapter under test never learns a new URL.
"""

from __future__ import annotations

from typing import Any

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
