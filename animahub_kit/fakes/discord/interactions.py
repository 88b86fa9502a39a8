"""The fake Discord's application-command routes: the command overwrite, interaction
callbacks and webhook followups, each recorded (`command_overwrites`,
`interaction_responses`, `followups`). Their token is in the URL, not in a header."""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.discord import objects
from animahub_kit.fakes.discord.objects import JSON
from animahub_kit.fakes.discord.state import DiscordState
from animahub_kit.fakes.discord.wire import BODY, reply

EPHEMERAL = 1 << 6


class Interactions:
    def __init__(self, state: DiscordState) -> None:
        self._state = state

    async def overwrite_commands(self, request: web.Request) -> web.Response:
        commands: list[JSON] = request[BODY] or []
        state = self._state
        state.command_overwrites.append(commands)
        return reply([objects.registered(c, state.app_id, state.snowflake()) for c in commands])

    async def callback(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        interaction_id = request.match_info["interaction_id"]
        self._state.interaction_responses.append({"interaction_id": interaction_id, **body})
        response: JSON = {
            "interaction": {
                "id": interaction_id,
                "type": 2,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool(
                    (body.get("data") or {}).get("flags", 0) & EPHEMERAL
                ),
            },
            "resource": {"type": body.get("type")},
        }
        if body.get("type") == 4:
            message = self._message(body["data"]["content"])
            response["interaction"]["response_message_id"] = message["id"]
            response["resource"]["message"] = message
        return reply(response)

    async def followup(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        self._state.followups.append({"method": request.method, "path": request.path, **body})
        return reply(self._message(body.get("content", "")))

    def _message(self, content: str) -> JSON:
        """The main bot's message an answer makes; it is not stored."""
        return self._state.message_payload(
            self._state.bot, self._state.channel_id("general"), content
        )
