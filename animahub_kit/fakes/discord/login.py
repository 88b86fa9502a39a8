"""What discord.py asks the fake Discord at login: the bot user its token names, the bot's
application, and where the gateway is."""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.discord import objects
from animahub_kit.fakes.discord.gateway import Gateway
from animahub_kit.fakes.discord.state import DiscordState
from animahub_kit.fakes.discord.wire import BOT, reply


class Login:
    def __init__(self, state: DiscordState, gateway: Gateway) -> None:
        self._state = state
        self._gateway = gateway

    async def me(self, request: web.Request) -> web.Response:
        return reply(request[BOT])

    async def application(self, request: web.Request) -> web.Response:
        """The main bot's is the app's; a per-Anima bot is an application of its own."""
        state = self._state
        bot = request[BOT]
        app_id = state.app_id if bot is state.bot else bot["id"]
        return reply(objects.application(app_id, bot, state.user("owner")))

    async def gateway_url(self, request: web.Request) -> web.Response:
        return reply(objects.gateway_bot(self._gateway.url))
