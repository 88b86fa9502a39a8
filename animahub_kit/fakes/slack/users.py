"""The fake Slack's methods about who is who: ``auth.test`` (the bot user a token names, and
its team) and ``users.info`` (a person or a bot, as added to the workspace)."""

from __future__ import annotations

from animahub_kit.fakes.slack import objects
from animahub_kit.fakes.slack.model import JSON, BotUser
from animahub_kit.fakes.slack.state import SlackState


class Users:
    def __init__(self, state: SlackState) -> None:
        self._state = state

    def auth_test(self, bot: BotUser, params: JSON) -> JSON:
        return objects.auth_test(self._state.team, self._state.team_id, bot)

    def info(self, bot: BotUser, params: JSON) -> JSON:
        user = self._state.users.get(str(params.get("user") or ""))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
