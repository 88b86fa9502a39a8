"""Who a Slack user is and what kind of conversation a channel is, looked up once per process.

`users.info` gives the name people know each other by (the profile's display name, else the
real name); `conversations.info` tells a DM from a group DM from a channel when an event does
not say (`app_mention` events carry no `channel_type`). A failed name lookup is logged and
answered with "" (the user id stands in), and tried again next time; a failed channel lookup
is logged once and the channel taken for what its id suggests (`D…` a DM, else a channel).

Lookups happen before an event is acknowledged (it is stored first), so each has a time
budget well inside Slack's three seconds; a slow Slack counts as a failed lookup. Names are
kept for an hour, so a renamed person is renamed on the hub too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import call
from hub.adapter import DeliveryError
from hub.messages import AddressKind

log = logging.getLogger(__name__)
_MAX_CACHED = 10_000
LOOKUP_BUDGET_S = 1.0
NAME_TTL_S = 3600.0

CHANNEL_TYPES = {
    "im": AddressKind.DM,
    "mpim": AddressKind.GROUP,
    "channel": AddressKind.CHANNEL,
    "group": AddressKind.CHANNEL,  # a private channel
}


def display_name(user: dict[str, Any]) -> str:
    profile = user.get("profile") or {}
    for name in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return ""


class Directory:
    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._names: dict[str, tuple[str, float]] = {}  # user id -> (name, when looked up)
        self._kinds: dict[str, AddressKind] = {}

    def remember(self, user_id: str, name: str) -> None:
        if name:
            if len(self._names) >= _MAX_CACHED:
                self._names.pop(next(iter(self._names)))
            self._names[user_id] = (name, time.monotonic())

    async def user_name(self, user_id: str) -> str:
        """The user's display name, or "" when Slack cannot tell (then the id stands in)."""
        cached = self._names.get(user_id)
        if cached is not None and time.monotonic() - cached[1] < NAME_TTL_S:
            return cached[0]
        try:
            response = await _within_budget(
                call("users.info", self._client.users_info(user=user_id))
            )
        except DeliveryError as exc:
            log.warning("could not look up Slack user %s: %s", user_id, exc)
            return ""
        user = response.get("user")
        name = display_name(user) if isinstance(user, dict) else ""
        self.remember(user_id, name)
        return name

    async def kind(self, channel_id: str) -> AddressKind:
        cached = self._kinds.get(channel_id)
        if cached is not None:
            return cached
        try:
            response = await _within_budget(
                call("conversations.info", self._client.conversations_info(channel=channel_id))
            )
        except DeliveryError as exc:
            guess = AddressKind.DM if channel_id.startswith("D") else AddressKind.CHANNEL
            log.warning(
                "could not look up Slack channel %s (%s); taking it for a %s from now on",
                channel_id,
                exc,
                guess.value,
            )
            self._kinds[channel_id] = guess  # one warning per channel, not one per event
            return guess
        info = response.get("channel") or {}
        if info.get("is_im"):
            kind = AddressKind.DM
        elif info.get("is_mpim"):
            kind = AddressKind.GROUP
        else:
            kind = AddressKind.CHANNEL
        if len(self._kinds) >= _MAX_CACHED:
            self._kinds.pop(next(iter(self._kinds)))
        self._kinds[channel_id] = kind
        return kind


async def _within_budget(lookup: Awaitable[Any]) -> Any:
    try:
        async with asyncio.timeout(LOOKUP_BUDGET_S):  # not wait_for: it can lose a cancel
            return await lookup
    except TimeoutError as exc:
        raise DeliveryError(f"no answer within {LOOKUP_BUDGET_S:.0f} s") from exc
