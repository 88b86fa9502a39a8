"""Slash commands as Slack sends them: the form payload (with its ``response_url`` and
``trigger_id``), POSTed signed to the hub, and the ``response_url`` targets at
``/respond/<id>``, whose answers are recorded in the state's `responses`."""

from __future__ import annotations

import itertools
import uuid
from urllib.parse import urlencode

from aiohttp import web

from animahub_kit.fakes.listener import Listener
from animahub_kit.fakes.slack.model import JSON
from animahub_kit.fakes.slack.signing import Signer
from animahub_kit.fakes.slack.state import SlackState


class Commands:
    def __init__(self, state: SlackState, listener: Listener, signer: Signer) -> None:
        self._state = state
        self._listener = listener  # where it is served: response_url points there
        self._signer = signer
        self._ids = itertools.count(1)

    def payload(self, user: str, channel: str, command: str, text: str) -> dict[str, str]:
        key = f"R{next(self._ids):06d}"
        return {
            "token": "legacy-verification-token",
            "team_id": self._state.team_id,
            "team_domain": "animahub-test",
            "channel_id": channel,
            "channel_name": self._channel_name(channel),
            "user_id": user,
            "user_name": str(self._state.users.get(user, {}).get("name", user)),
            "command": command,
            "text": text,
            "api_app_id": "A0FAKEAPP",
            "is_enterprise_install": "false",
            "response_url": f"{self._listener.url}/respond/{key}",
            "trigger_id": f"{next(self._ids)}.{key}.{uuid.uuid4().hex[:16]}",
        }

    def _channel_name(self, channel: str) -> str:
        info: JSON = self._state.channels.get(channel, {})
        if info.get("is_im"):
            return "directmessage"
        if info.get("is_group"):
            return "privategroup"
        return str(info.get("name") or channel)

    async def command(self, user: str, channel: str, command: str, text: str) -> tuple[int, str]:
        """A slash command over HTTP (form-encoded, signed); returns the hub's answer."""
        payload = self.payload(user, channel, command, text)
        return await self._signer.post_signed(
            urlencode(payload), {"Content-Type": "application/x-www-form-urlencoded"}
        )

    async def respond(self, request: web.Request) -> web.Response:
        """`POST /respond/<id>`: a command's answer to its response_url."""
        body = await request.json()
        self._state.responses.append({"key": request.match_info["key"], **body})
        return web.Response(text="ok")
