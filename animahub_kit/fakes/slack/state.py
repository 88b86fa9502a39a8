"""What the fake Slack holds: the team, its bots, people and channels, the messages the bots
posted, and the record of everything it was asked and sent; and the events a person's
doings make. The Web API methods, Socket Mode, the event deliveries and the server all share
one.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.slack import objects
from animahub_kit.fakes.slack.model import JSON, ApiCall, BotUser, Delivery, PostedMessage


class SlackState:
    def __init__(self, team_id: str, team: str, signing_secret: str, app_token: str) -> None:
        self.team_id = team_id
        self.team = team
        self.signing_secret = signing_secret
        self.app_token = app_token
        self.bots: dict[str, BotUser] = {}
        self.users: dict[str, JSON] = {}
        self.channels: dict[str, JSON] = {}
        self.calls: list[ApiCall] = []
        self.messages: list[PostedMessage] = []
        self.ephemeral: list[JSON] = []
        self.responses: list[JSON] = []
        self.deliveries: list[Delivery] = []
        self.acks: dict[str, JSON | None] = {}
        self.events_url: str | None = None  # the hub's /slack/events; None: Socket Mode
        self.echo_bot_messages = False
        self.sockets: list[web.WebSocketResponse] = []
        self.hellos = 0
        self.sent: dict[str, JSON] = {}  # event_id -> the event_callback body
        self._last_ts = 0.0
        # Consulted before every post and edit (animahub_kit/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # the workspace ---------------------------------------------------------------------

    def add_bot(self, token: str, user_id: str, bot_id: str, name: str, **kw: Any) -> BotUser:
        bot = BotUser(token, user_id, bot_id, name, **kw)
        self.bots[token] = bot
        self.users[user_id] = objects.bot_user(user_id, name, bot_id)
        return bot

    def add_user(
        self, user_id: str, name: str, display_name: str = "", real_name: str = ""
    ) -> None:
        self.users[user_id] = objects.person(user_id, self.team_id, name, display_name, real_name)

    def add_channel(self, channel_id: str, name: str = "", kind: str = "channel") -> None:
        """kind: channel | group (private channel) | im | mpim."""
        self.channels[channel_id] = objects.channel(channel_id, name, kind)

    def channel_type(self, channel_id: str) -> str:
        info = self.channels.get(channel_id, {})
        for kind in ("im", "mpim", "group"):
            if info.get(f"is_{kind}"):
                return kind
        return "channel"

    def next_ts(self) -> str:
        """A message timestamp, unique and increasing, like Slack's."""
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    def main_bot_user(self) -> str:
        return next((bot.user_id for bot in self.bots.values()), "")

    def author_of(self, channel: str, ts: str) -> str | None:
        for message in self.messages:
            if message.channel == channel and message.ts == ts:
                return message.user
        for body in self.sent.values():
            event = body["event"]
            if event.get("channel") == channel and event.get("ts") == ts:
                return str(event.get("user"))
        return None

    # the bots' messages as events --------------------------------------------------------

    def as_event(self, message: PostedMessage) -> JSON:
        return objects.as_event(message, self.team_id)

    def echo(self, message: PostedMessage) -> JSON:
        return {
            **self.as_event(message),
            "channel": message.channel,
            "channel_type": self.channel_type(message.channel),
            "event_ts": message.ts,
        }

    # events: people speaking -----------------------------------------------------------

    def message_event(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        files: list[JSON] | None = None,
        ts: str | None = None,
    ) -> JSON:
        """A `message` event as Slack sends it for something `user` wrote."""
        ts = ts or self.next_ts()
        event: JSON = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            "channel": channel,
            "channel_type": self.channel_type(channel),
            "team": self.team_id,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = self.author_of(channel, thread_ts)
        if files:
            event["subtype"] = "file_share"
            event["files"] = files
        return event

    def mention_event(self, message: JSON) -> JSON:
        """The `app_mention` Slack sends besides the message when the bot is mentioned."""
        event = {k: v for k, v in message.items() if k not in ("channel_type", "subtype")}
        event["type"] = "app_mention"
        return event

    def edit_event(self, original: JSON, text: str) -> JSON:
        """The `message_changed` event of `original` edited to `text`."""
        edit_ts = self.next_ts()
        inner = {k: v for k, v in original.items() if k not in ("channel", "channel_type")}
        inner.update(text=text, edited={"user": original["user"], "ts": edit_ts})
        return objects.message_changed(
            original["channel"],
            original.get("channel_type", "channel"),
            edit_ts,
            inner,
            {k: v for k, v in original.items() if k not in ("channel", "channel_type")},
        )

    def callback(self, event: JSON, event_id: str | None = None) -> JSON:
        """The `event_callback` body wrapping an event."""
        return objects.callback(self.team_id, self.main_bot_user(), event, event_id)

    # what the fake saw -------------------------------------------------------------------

    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def bot_messages(self) -> list[PostedMessage]:
        return list(self.messages)
