"""Who is who, and the typing indicator: ``GET /v2/bot/profile/{userId}``, the group and room
``.../member/{userId}`` profiles, ``GET /v2/bot/info`` (the bot) and
``POST /v2/bot/chat/loading/start`` (1:1 chats only)."""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.line.state import LineState
from animahub_kit.fakes.line.wire import Wire


class Account:
    def __init__(self, state: LineState, wire: Wire) -> None:
        self._state = state
        self._wire = wire

    async def profile(self, request: web.Request) -> web.Response:
        index = self._wire.record(request, None)
        refused = self._wire.unauthorized(index, request)
        if refused is not None:
            return refused
        user = self._state.users.get(request.match_info["user"])
        if user is None:
            return self._wire.answer(index, {"message": "Not found"}, 404)
        return self._wire.answer(index, user)

    async def member(self, request: web.Request) -> web.Response:
        index = self._wire.record(request, None)
        refused = self._wire.unauthorized(index, request)
        if refused is not None:
            return refused
        chat = self._state.chats.get(request.match_info["chat"])
        user_id = request.match_info["user"]
        user = self._state.users.get(user_id)
        if chat is None or user is None or user_id not in chat.members:
            return self._wire.answer(index, {"message": "Not found"}, 404)
        keep = ("userId", "displayName", "pictureUrl")
        return self._wire.answer(index, {k: user[k] for k in keep})

    async def info(self, request: web.Request) -> web.Response:
        index = self._wire.record(request, None)
        refused = self._wire.unauthorized(index, request)
        if refused is not None:
            return refused
        return self._wire.answer(
            index,
            {
                "userId": self._state.bot_user_id,
                "basicId": "@123fake",
                "displayName": self._state.bot_name,
                "chatMode": "bot",
                "markAsReadMode": "auto",
            },
        )

    async def loading(self, request: web.Request) -> web.Response:
        body = await self._wire.body(request)
        index = self._wire.record(request, body)
        refused = self._wire.unauthorized(index, request)
        if refused is not None:
            return refused
        chat = self._state.chats.get(str((body or {}).get("chatId") or ""))
        if chat is None or chat.kind != "user":
            return self._wire.answer(index, {"message": "The property, 'chatId', is invalid"}, 400)
        self._state.loading.append(dict(body or {}))
        return self._wire.answer(index, {}, 202)
