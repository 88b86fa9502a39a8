"""What the bot shows in a chat: ``sendMessage``, ``editMessageText``, ``sendMessageDraft``
and ``sendChatAction``.

Texts with ``parse_mode=HTML`` are parsed as strictly as Telegram does
(animahub_kit/fakes/telegram_html.py): HTML it would reject is answered 400 "can't parse
entities", a
text over 4,096 characters (after parsing) 400 "message is too long", a ``message_thread_id``
that is not a forum topic of the chat (the General topic included: it takes none) 400 "message
thread not found". What the bot posted is kept as Telegram shows it (plain text and entities),
with its text after every edit. A draft (Bot API 9.3+) goes to a private chat only (400
otherwise), with a ``draft_id`` not zero, parsed like ``sendMessage``; each draft shown is
kept, and none of them is a message.
"""

from __future__ import annotations

import time

from animahub_kit.fakes.telegram.objects import JSON, Chat, PostedMessage, as_int, bot_message
from animahub_kit.fakes.telegram.state import TelegramState
from animahub_kit.fakes.telegram.wire import ApiError
from animahub_kit.fakes.telegram_html import EntityError, parse, u16

MAX_TEXT = 4096


class Messages:
    def __init__(self, state: TelegramState) -> None:
        self._state = state

    def send_message(self, params: JSON) -> JSON:
        chat = self._chat(params)
        thread = as_int(params.get("message_thread_id"))
        if thread is not None and thread not in self._state.topics.get(chat.id, set()):
            raise ApiError(400, "Bad Request: message thread not found")
        plain, entities, source = self._parsed(params)
        reply = params.get("reply_parameters")
        reply_to = as_int(reply.get("message_id")) if isinstance(reply, dict) else None
        message = PostedMessage(
            chat.id, self._state.next_message_id(chat.id), plain, entities, source, thread, reply_to
        )
        self._state.messages.append(message)
        return self.as_json(message)

    def edit_message(self, params: JSON) -> JSON:
        chat = self._chat(params)
        wanted = as_int(params.get("message_id"))
        message = next(
            (m for m in self._state.messages if m.chat_id == chat.id and m.message_id == wanted),
            None,
        )
        if message is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        plain, entities, source = self._parsed(params)
        if plain == message.text and entities == message.entities:
            raise ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message",
            )
        message.history.append(message.text)
        message.text, message.entities, message.html = plain, entities, source
        message.edits += 1
        return {**self.as_json(message), "edit_date": int(time.time())}

    def send_draft(self, params: JSON) -> bool:
        chat = self._chat(params)
        if chat.type != "private":
            raise ApiError(400, "Bad Request: the chat is not a private chat")
        draft_id = as_int(params.get("draft_id")) or 0
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        plain, _entities, _source = self._parsed(params)
        self._state.drafts.append((chat.id, draft_id, plain))
        return True

    def chat_action(self, params: JSON) -> bool:
        chat = self._chat(params)
        self._state.actions.append((chat.id, str(params.get("action") or "")))
        return True

    def as_json(self, message: PostedMessage) -> JSON:
        """One of the bot's messages as the Bot API shows it (and `reply_to_message` too)."""
        state = self._state
        return bot_message(message, state.chats[message.chat_id], state.users, state.bot)

    def _chat(self, params: JSON) -> Chat:
        chat = self._state.chats.get(as_int(params.get("chat_id")) or 0)
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        return chat

    def _parsed(self, params: JSON) -> tuple[str, list[JSON], str | None]:
        text = str(params.get("text") or "")
        mode = str(params.get("parse_mode") or "")
        if mode.upper() == "HTML":
            try:
                parsed = parse(text)
            except EntityError as exc:
                raise ApiError(400, str(exc)) from exc
            plain, entities, source = parsed.text, parsed.entities, text
        elif mode:
            raise ApiError(400, f"Bad Request: unsupported parse_mode {mode}")
        else:
            plain, entities, source = text, [], None
        if not plain.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if u16(plain) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        return plain, entities, source
