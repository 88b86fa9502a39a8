"""The Telegram objects the fake builds and keeps: chats, the messages the bot posted, and the
JSON they are shown as; the entities Telegram finds in a person's text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from animahub_kit.fakes.telegram_html import u16

JSON = dict[str, Any]


@dataclass
class PostedMessage:
    """A message the bot posted, as Telegram keeps it (plain text plus entities)."""

    chat_id: int
    message_id: int
    text: str
    entities: list[JSON]
    html: str | None  # the text as sent, when it was sent with parse_mode HTML
    thread_id: int | None
    reply_to: int | None
    edits: int = 0
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Chat:
    id: int
    type: str  # private | group | supergroup | channel
    title: str = ""
    is_forum: bool = False

    def as_json(self, users: dict[int, JSON]) -> JSON:
        if self.type == "private":
            user = users.get(self.id, {"first_name": str(self.id)})
            return {"id": self.id, "type": "private", "first_name": user.get("first_name", "")}
        data: JSON = {"id": self.id, "type": self.type, "title": self.title}
        if self.is_forum:
            data["is_forum"] = True
        return data


def bot_message(
    message: PostedMessage, chat: Chat, users: dict[int, JSON], bot: dict[str, object]
) -> JSON:
    """The Message object of one the bot posted (in `chat`), as the Bot API answers it."""
    data: JSON = {
        "message_id": message.message_id,
        "from": {k: bot[k] for k in ("id", "is_bot", "first_name", "username")},
        "chat": chat.as_json(users),
        "date": int(time.time()),
        "text": message.text,
    }
    if message.entities:
        data["entities"] = message.entities
    if message.thread_id is not None:
        data["message_thread_id"] = message.thread_id
        data["is_topic_message"] = True
    return data


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def entities(text: str, users: dict[int, JSON]) -> list[JSON]:
    """`@username` mentions and a leading `/command`, with UTF-16 offsets, as Telegram sets."""
    found: list[JSON] = []
    index = 0
    while index < len(text):
        char = text[index]
        starts_word = index == 0 or not (text[index - 1].isalnum() or text[index - 1] == "_")
        if char in "@/" and starts_word:
            end = index + 1
            while end < len(text) and (text[end].isalnum() or text[end] in "_@"):
                end += 1
            if char == "/" and index == 0 and end > 1:
                found.append({"type": "bot_command", "offset": 0, "length": u16(text[:end])})
            elif char == "@" and end - index > 1:
                offset = u16(text[:index])
                found.append({"type": "mention", "offset": offset, "length": end - index})
            index = end
        else:
            index += 1
    return found
