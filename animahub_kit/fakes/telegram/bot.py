"""The bot itself: ``getMe`` (who it is) and the command list (``setMyCommands``,
``getMyCommands``)."""

from __future__ import annotations

from animahub_kit.fakes.telegram.objects import JSON
from animahub_kit.fakes.telegram.state import TelegramState
from animahub_kit.fakes.telegram.wire import ApiError


class Bot:
    def __init__(self, state: TelegramState) -> None:
        self._state = state

    def get_me(self, params: JSON) -> JSON:
        return dict(self._state.bot)

    def set_commands(self, params: JSON) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise ApiError(400, "Bad Request: can't parse commands JSON object")
        self._state.commands = commands
        return True

    def get_commands(self, params: JSON) -> list[JSON]:
        return list(self._state.commands)
