"""What people say: the Message objects Telegram builds for a person's message and edit."""

from __future__ import annotations

import time

from animahub_kit.fakes.telegram.objects import JSON, entities
from animahub_kit.fakes.telegram.state import TelegramState


def message(
    state: TelegramState,
    user_id: int,
    chat_id: int,
    text: str = "",
    *,
    thread: int | None = None,
    reply_to: JSON | None = None,
    extra: JSON | None = None,
    caption: bool = False,
) -> JSON:
    """The Message object Telegram builds for `text` (with mention and command
    entities found as Telegram finds them); `caption` puts the text in `caption`."""
    chat = state.chats[chat_id]
    message: JSON = {
        "message_id": state.next_message_id(chat_id),
        "from": state.users[user_id],
        "chat": chat.as_json(state.users),
        "date": int(time.time()),
    }
    key = "caption" if caption else "text"
    if text or not caption:
        message[key] = text
        found = entities(text, state.users)
        if found:
            message["caption_entities" if caption else "entities"] = found
    if thread is not None:
        message["message_thread_id"] = thread
        if chat.is_forum:
            message["is_topic_message"] = True
            state.add_topic(chat_id, thread)
    if reply_to is not None:
        message["reply_to_message"] = reply_to
    message.update(extra or {})
    return message


def edited(state: TelegramState, original: JSON, text: str) -> JSON:
    edited = {**original, "text": text, "edit_date": int(time.time())}
    found = entities(text, state.users)
    edited.pop("text_entities", None)
    edited.pop("entities", None)
    if found:
        edited["entities"] = found
    return edited
