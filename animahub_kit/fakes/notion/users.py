"""The fake Notion's user requests: `GET /v1/users/me`, the integration's bot user."""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.notion.objects import bot
from animahub_kit.fakes.notion.wire import Wire
from animahub_kit.fakes.notion.workspace import Workspace


class UserHandlers:
    def __init__(self, workspace: Workspace, wire: Wire) -> None:
        self._workspace = workspace
        self._wire = wire

    async def me(self, request: web.Request) -> web.Response:
        index, _, refused = await self._wire.begin(request)
        return refused or self._wire.answer(index, bot(self._workspace))
