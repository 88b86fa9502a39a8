"""Sending: ``POST /v2/bot/message/reply`` and ``POST /v2/bot/message/push``.

A reply token is valid once, for ``reply_token_ttl_s`` after its webhook, and only for the
chat its event came from; a push goes to a user, group or room, and a repeat of an accepted
``X-Line-Retry-Key`` answers 409 with the first request's ``sentMessages``. Either carries up
to 5 text message objects of up to 5,000 characters (UTF-16 code units).
"""

from __future__ import annotations

import secrets
import time
import uuid

from aiohttp import web

from animahub_kit.fakes.line.objects import JSON, MAX_MESSAGES, MAX_TEXT, SentMessage, utf16_len
from animahub_kit.fakes.line.state import LineState
from animahub_kit.fakes.line.wire import Wire


def bad_messages(body: JSON) -> str | None:
    messages = body.get("messages")
    if not isinstance(messages, list) or not 1 <= len(messages) <= MAX_MESSAGES:
        return "Size must be between 1 and 5"
    for message in messages:
        if not isinstance(message, dict) or message.get("type") != "text":
            return "The property, 'messages[].type', in the request body is invalid"
        text = message.get("text")
        if not isinstance(text, str) or not text:
            return "Must not be empty"
        if utf16_len(text) > MAX_TEXT:
            return "Length must be between 0 and 5000"
    return None


class Messages:
    def __init__(self, state: LineState, wire: Wire) -> None:
        self._state = state
        self._wire = wire

    def _store(self, index: int, to: str, body: JSON, via: str, key: str | None) -> list[JSON]:
        sent = []
        for message in body["messages"]:
            message_id = self._state.next_id()
            self._state.messages.append(
                SentMessage(message_id, to, message["text"], via, key, index)
            )
            sent.append({"id": message_id, "quoteToken": secrets.token_urlsafe(16)})
        return sent

    async def reply(self, request: web.Request) -> web.Response:
        wire = self._wire
        index, body, refused = await wire.begin(request, "reply")
        if refused is not None:
            return refused
        token = self._state.tokens.get(str(body.get("replyToken") or ""))
        fresh = token is not None and not token.used
        ttl = self._state.reply_token_ttl_s
        if token is None or not fresh or time.monotonic() - token.issued > ttl:
            return wire.answer(index, {"message": "Invalid reply token"}, 400)
        problem = bad_messages(body)
        if problem is not None:
            return wire.answer(index, {"message": problem}, 400)
        if wire.failing_replies:
            status, delivered = wire.failing_replies.pop(0)
            if delivered:
                token.used = True
                self._store(index, token.chat, body, "reply", None)
            return wire.answer(index, {"message": "Internal server error"}, status)
        token.used = True
        sent = self._store(index, token.chat, body, "reply", None)
        if wire.drop_next:
            return await wire.dropped(index, request)
        return wire.answer(index, {"sentMessages": sent})

    async def push(self, request: web.Request) -> web.Response:
        wire = self._wire
        index, body, refused = await wire.begin(request, "push")
        if refused is not None:
            return refused
        key = request.headers.get("X-Line-Retry-Key")
        if key is not None:
            repeated = self._retry_key(index, key)
            if repeated is not None:
                return repeated
        to = str(body.get("to") or "")
        if to not in self._state.chats:
            return wire.answer(index, {"message": "The property, 'to', is invalid"}, 400)
        problem = bad_messages(body)
        if problem is not None:
            return wire.answer(index, {"message": problem}, 400)
        sent = self._store(index, to, body, "push", key)
        if key is not None:
            self._state.accepted[key] = (str(uuid.uuid4()), sent)
        if wire.drop_next:
            return await wire.dropped(index, request)
        return wire.answer(index, {"sentMessages": sent})

    def _retry_key(self, index: int, key: str) -> web.Response | None:
        """400 for a key that is no UUID, 409 for one already accepted; None: a new key."""
        try:
            uuid.UUID(key)
        except ValueError:
            return self._wire.answer(index, {"message": "The retry key is invalid"}, 400)
        if key not in self._state.accepted:
            return None
        request_id, sent = self._state.accepted[key]
        return self._wire.answer(
            index,
            {"message": "The retry key is already accepted", "sentMessages": sent},
            409,
            **{"X-Line-Accepted-Request-Id": request_id},
        )
