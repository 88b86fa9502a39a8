"""The JSON objects the fake Slack answers and delivers with, as Slack shapes them.

Plain builders: values in, a fresh dict out. What the fake holds, and the timestamps it
hands out, are animahub_kit/fakes/slack/state.py's.
"""

from __future__ import annotations

import time
import uuid

from animahub_kit.fakes.slack.model import JSON, BotUser, PostedMessage


def bot_user(user_id: str, name: str, bot_id: str) -> JSON:
    """A bot user as users.info answers it."""
    return {
        "id": user_id,
        "name": name,
        "real_name": name,
        "is_bot": True,
        "profile": {"display_name": name, "real_name": name, "bot_id": bot_id},
    }


def person(user_id: str, team_id: str, name: str, display_name: str, real_name: str) -> JSON:
    """A person as users.info answers them."""
    return {
        "id": user_id,
        "team_id": team_id,
        "name": name,
        "real_name": real_name or display_name or name,
        "is_bot": False,
        "profile": {"display_name": display_name, "real_name": real_name or display_name},
    }


def channel(channel_id: str, name: str, kind: str) -> JSON:
    """kind: channel | group (private channel) | im | mpim."""
    return {
        "id": channel_id,
        "name": name or channel_id,
        "is_channel": kind == "channel",
        "is_group": kind == "group",
        "is_im": kind == "im",
        "is_mpim": kind == "mpim",
        "is_private": kind != "channel",
        "is_archived": False,
    }


def as_event(message: PostedMessage, team_id: str) -> JSON:
    """A bot's message as the Web API answers it (and as its echo event carries it)."""
    event: JSON = {
        "type": "message",
        "user": message.user,
        "bot_id": message.bot_id,
        "text": message.text,
        "ts": message.ts,
        "team": team_id,
    }
    if message.thread_ts:
        event["thread_ts"] = message.thread_ts
    if message.username:
        event["subtype"] = "bot_message"
        event["username"] = message.username
    return event


def message_changed(
    channel: str, channel_type: str, edit_ts: str, message: JSON, previous: JSON
) -> JSON:
    """The `message_changed` event of an edit: the message after it, and before."""
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": channel,
        "channel_type": channel_type,
        "ts": edit_ts,
        "event_ts": edit_ts,
        "message": message,
        "previous_message": previous,
    }


def auth_test(team: str, team_id: str, bot: BotUser) -> JSON:
    """What auth.test answers for a bot's token."""
    return {
        "ok": True,
        "url": "https://animahub-test.slack.com/",
        "team": team,
        "user": bot.name,
        "team_id": team_id,
        "user_id": bot.user_id,
        "bot_id": bot.bot_id,
        "is_enterprise_install": False,
    }


def callback(team_id: str, bot_user_id: str, event: JSON, event_id: str | None) -> JSON:
    """The `event_callback` body wrapping an event."""
    return {
        "token": "legacy-verification-token",
        "team_id": team_id,
        "api_app_id": "A0FAKEAPP",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:12].upper()}",
        "event_time": int(float(event.get("event_ts") or event.get("ts") or time.time())),
        "authorizations": [{"team_id": team_id, "user_id": bot_user_id, "is_bot": True}],
        "is_ext_shared_channel": False,
    }
