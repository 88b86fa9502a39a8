"""The fake Slack's ``conversations.*`` methods: ``conversations.info``, and
``conversations.history`` and ``conversations.replies`` over the bots' own messages (newest
first and oldest first, as Slack answers them), paged by ``oldest``/``limit``/``cursor``,
with message ``metadata`` when ``include_all_metadata`` asks for it."""

from __future__ import annotations

from animahub_kit.fakes.slack.model import JSON, BotUser, PostedMessage
from animahub_kit.fakes.slack.state import SlackState


class Conversations:
    def __init__(self, state: SlackState) -> None:
        self._state = state

    def info(self, bot: BotUser, params: JSON) -> JSON:
        info = self._state.channels.get(str(params.get("channel") or ""))
        return (
            {"ok": True, "channel": info} if info else {"ok": False, "error": "channel_not_found"}
        )

    def history(self, bot: BotUser, params: JSON) -> JSON:
        channel = str(params.get("channel") or "")
        if channel not in self._state.channels:
            return {"ok": False, "error": "channel_not_found"}
        found = [
            m
            for m in self._state.messages
            if m.channel == channel and (m.thread_ts is None or m.thread_ts == m.ts)
        ]
        return self._page(list(reversed(found)), params)

    def replies(self, bot: BotUser, params: JSON) -> JSON:
        channel, thread = str(params.get("channel") or ""), str(params.get("ts") or "")
        if channel not in self._state.channels:
            return {"ok": False, "error": "channel_not_found"}
        if not thread:
            return {"ok": False, "error": "thread_not_found"}
        found = [
            m
            for m in self._state.messages
            if m.channel == channel and thread in (m.ts, m.thread_ts)
        ]
        return self._page(found, params)

    def _page(self, found: list[PostedMessage], params: JSON) -> JSON:
        """One page of messages after `oldest`, as history and replies answer."""
        oldest = float(params.get("oldest") or 0)
        found = [m for m in found if float(m.ts) > oldest]
        start = int(params.get("cursor") or 0)
        limit = max(1, min(999, int(params.get("limit") or 100)))
        page = found[start : start + limit]
        metadata = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
        messages = []
        for message in page:
            event = self._state.as_event(message)
            if metadata and message.metadata:
                event["metadata"] = message.metadata
            messages.append(event)
        more = start + limit < len(found)
        return {
            "ok": True,
            "messages": messages,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }
