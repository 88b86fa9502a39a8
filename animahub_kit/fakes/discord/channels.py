"""The fake Discord's channel routes: a channel, a DM opened, a channel's history, and the
messages a bot posts and edits.

Messages the bots post are dispatched back as MESSAGE_CREATE / MESSAGE_UPDATE, as Discord
does, so an adapter must recognise and ignore its own messages. A repeated post with the same
``nonce`` and ``enforce_nonce`` is answered with the message already created, as Discord does.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from animahub_kit.fakes.discord.gateway import Gateway
from animahub_kit.fakes.discord.objects import JSON
from animahub_kit.fakes.discord.state import DiscordState, FakeMessage
from animahub_kit.fakes.discord.wire import BODY, BOT, error, reply


class Channels:
    def __init__(self, state: DiscordState, gateway: Gateway) -> None:
        self._state = state
        self._gateway = gateway
        # True: the next post is created, then its connection closed without an answer
        self.drop_next = False

    async def get(self, request: web.Request) -> web.Response:
        channel = self._state.channels.get(request.match_info["channel_id"])
        return reply(channel) if channel is not None else error(404, "Unknown Channel", 10003)

    async def open_dm(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        recipient = str(body.get("recipient_id"))
        user = next((u for u in self._state.users.values() if u["id"] == recipient), None)
        if user is None:
            return error(404, "Unknown User", 10013)
        return reply(self._state.channels[self._state.dm_channel(user)])

    async def history(self, request: web.Request) -> web.Response:
        """`GET /channels/{id}/messages?after=&before=&limit=`: like Discord, newest first
        whichever way it pages, `limit` 1-100 (50 by default); with `after`, the `limit`
        messages right after that id."""
        channel_id = request.match_info["channel_id"]
        if channel_id not in self._state.channels:
            return error(404, "Unknown Channel", 10003)
        try:
            limit = int(request.query.get("limit", "50"))
            after = int(request.query.get("after", "0"))
            before = int(request.query.get("before", "0")) or None
        except ValueError:
            return reply({"message": "Invalid Form Body", "code": 50035}, 400)
        if not 1 <= limit <= 100:
            return reply({"message": "Invalid Form Body", "code": 50035}, 400)
        found = sorted(
            (m for m in self._state.messages.values() if m.channel_id == channel_id),
            key=lambda m: int(m.id),
        )
        found = [m for m in found if int(m.id) > after and (before is None or int(m.id) < before)]
        page = found[:limit] if "after" in request.query else found[-limit:]
        return reply([m.data for m in reversed(page)])

    async def create_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        if channel_id not in self._state.channels:
            return error(404, "Unknown Channel", 10003)
        body: JSON = request[BODY] or {}
        content = str(body.get("content") or "")
        if not content or len(content) > 2000:
            return reply(
                {"message": "Invalid Form Body", "code": 50035, "errors": {"content": {}}}, 400
            )
        bot = request[BOT]
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce"):
            for message in self._state.messages.values():
                if message.author_id == bot["id"] and message.data.get("nonce") == nonce:
                    return reply(message.data)  # Discord returns the earlier message
        data = self._posted(bot, channel_id, content, body)
        self._state.store(FakeMessage(data, channel_id, bot["id"]))
        await self._gateway.dispatch("MESSAGE_CREATE", data)
        if self.drop_next:
            self.drop_next = False
            return await _dropped(request)
        return reply(data)

    def _posted(self, bot: JSON, channel_id: str, content: str, body: JSON) -> JSON:
        """The message a bot's post makes of its body."""
        data = self._state.message_payload(bot, channel_id, content)
        reference = body.get("message_reference")
        if reference:
            data["type"] = 19
            # Discord answers with snowflakes as strings, whatever the request used
            stored = {k: str(v) if k.endswith("_id") else v for k, v in reference.items()}
            data["message_reference"] = {"type": 0, "channel_id": channel_id, **stored}
        nonce = body.get("nonce")
        if nonce is not None:
            data["nonce"] = nonce
        data["allowed_mentions"] = body.get("allowed_mentions")
        return data

    async def edit_message(self, request: web.Request) -> web.Response:
        message = self._state.messages.get(request.match_info["message_id"])
        if message is None or message.channel_id != request.match_info["channel_id"]:
            return error(404, "Unknown Message", 10008)
        if message.author_id != request[BOT]["id"]:
            return error(403, "Cannot edit a message authored by another user", 50005)
        body: JSON = request[BODY] or {}
        if "content" in body:
            data = self._state.edit(message, body["content"])
            await self._gateway.dispatch("MESSAGE_UPDATE", data)
        return reply(message.data)


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    if request.transport is not None:
        request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)
