"""The fake Slack's ``chat.*`` methods: ``chat.postMessage`` (text, thread, the username and
icon of ``chat:write.customize``, message ``metadata``), ``chat.update`` (a bot edits only
its own messages; the text before each edit is kept) and ``chat.postEphemeral`` (recorded,
never shown). With ``echo_bot_messages`` a post or an edit comes back as an event, as Slack
delivers the bots' own messages, so the adapter's refusal to answer itself is exercised."""

from __future__ import annotations

import json

from animahub_kit.fakes.slack import objects
from animahub_kit.fakes.slack.background import Background
from animahub_kit.fakes.slack.events import Events
from animahub_kit.fakes.slack.model import JSON, BotUser, PostedMessage
from animahub_kit.fakes.slack.state import SlackState


class Chat:
    def __init__(self, state: SlackState, events: Events, background: Background) -> None:
        self._state = state
        self._events = events
        self._background = background
        self.broken: dict[str, str] = {}  # channel -> the error every post to it gets

    def post_message(self, bot: BotUser, params: JSON) -> JSON:
        state = self._state
        channel = str(params.get("channel") or "")
        text = str(params.get("text") or "")
        refused = self._refused(channel, text)
        if refused is not None:
            return {"ok": False, "error": refused}
        thread = params.get("thread_ts") or None
        message = PostedMessage(
            channel=channel,
            ts=state.next_ts(),
            text=text,
            thread_ts=str(thread) if thread else None,
            user=bot.user_id,
            bot_id=bot.bot_id,
            username=params.get("username"),
            icon=params.get("icon_emoji") or params.get("icon_url"),
            metadata=_metadata(params.get("metadata")),
        )
        state.messages.append(message)
        if state.echo_bot_messages:
            self._background.spawn(self._events.deliver(state.echo(message)))
        return {
            "ok": True,
            "channel": channel,
            "ts": message.ts,
            "message": state.as_event(message),
        }

    def _refused(self, channel: str, text: str) -> str | None:
        """The error a post to `channel` of `text` gets, None if it is posted."""
        if channel not in self._state.channels:
            return "channel_not_found"
        if channel in self.broken:
            return self.broken[channel]
        if not text:
            return "no_text"
        if len(text) > 40_000:
            return "msg_too_long"
        return None

    def update(self, bot: BotUser, params: JSON) -> JSON:
        state = self._state
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        if channel in self.broken:
            return {"ok": False, "error": self.broken[channel]}
        message = next((m for m in state.messages if m.channel == channel and m.ts == ts), None)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.user != bot.user_id:
            return {"ok": False, "error": "cant_update_message"}
        previous = state.as_event(message)
        message.history.append(message.text)
        message.text = str(params.get("text") or "")
        message.updates += 1
        if state.echo_bot_messages:
            self._echo_edit(bot, message, previous)
        return {"ok": True, "channel": channel, "ts": ts, "text": message.text}

    def _echo_edit(self, bot: BotUser, message: PostedMessage, previous: JSON) -> None:
        """Deliver the `message_changed` event of a bot's edit."""
        state = self._state
        edit_ts = state.next_ts()
        edited = {**state.as_event(message), "edited": {"user": bot.user_id, "ts": edit_ts}}
        channel = message.channel
        event = objects.message_changed(
            channel, state.channel_type(channel), edit_ts, edited, previous
        )
        self._background.spawn(self._events.deliver(event))

    def post_ephemeral(self, bot: BotUser, params: JSON) -> JSON:
        self._state.ephemeral.append(dict(params))
        return {"ok": True, "message_ts": self._state.next_ts()}


def _metadata(raw: object) -> JSON | None:
    """Message metadata as chat.postMessage takes it: an object, or JSON in a form field."""
    if isinstance(raw, str) and raw:
        raw = json.loads(raw)
    return raw if isinstance(raw, dict) and raw.get("event_type") else None
