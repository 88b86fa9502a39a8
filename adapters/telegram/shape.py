"""Is a webhook body an update Telegram would send? Checked before python-telegram-bot parses it.

PTB's `de_json` trusts its input: a message whose `text` is an object, whose `chat.id` is a
string or whose `date` is out of range parses into objects the normalizer then fails on
(a 500, or a row with a chat id no reply can reach). Only the secret token authenticates a
webhook, so a body that passes it comes from Telegram or from someone holding the secret;
either way a body of the wrong shape is answered 400 and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAX_ID = 2**53  # Telegram: chat and user ids fit in 52 bits
_MAX_TIME = 2**32
_CHAT_TYPES = frozenset({"private", "group", "supergroup", "channel"})
_MESSAGES = ("message", "edited_message", "channel_post", "edited_channel_post")
_MEDIA = ("document", "video", "voice", "audio", "animation", "video_note", "sticker")


class Malformed(ValueError):
    pass


def update_problem(data: object) -> str | None:
    """Why `data` is not a Telegram update the hub can read, or None."""
    try:
        if not isinstance(data, dict):
            raise Malformed("not an object")
        _int(data, "update_id", 0, _MAX_ID, required=True)
        for key in _MESSAGES:
            if key in data:
                _message(_object(data, key), depth=0)
    except Malformed as exc:
        return str(exc)
    return None


def _message(message: Mapping[str, Any], depth: int) -> None:
    _int(message, "message_id", 0, 2**31, required=True)
    _int(message, "date", 0, _MAX_TIME, required=True)
    _int(message, "edit_date", 0, _MAX_TIME)
    _int(message, "message_thread_id", 0, 2**31)
    chat = _object(message, "chat")
    _int(chat, "id", -_MAX_ID, _MAX_ID, required=True)
    if chat.get("type") not in _CHAT_TYPES:
        raise Malformed("chat.type is not a Telegram chat type")
    for key in ("from", "sender_chat"):
        if message.get(key) is not None:
            _int(_object(message, key), "id", -_MAX_ID, _MAX_ID, required=True)
    for key in ("text", "caption"):
        _str(message, key)
    for key in ("entities", "caption_entities"):
        for entity in _objects(message, key):
            _str(entity, "type", required=True)
            _int(entity, "offset", 0, 2**31, required=True)
            _int(entity, "length", 0, 2**31, required=True)
    for photo in _objects(message, "photo"):
        _str(photo, "file_id", required=True)
    for key in _MEDIA:
        if message.get(key) is not None:
            media = _object(message, key)
            _str(media, "file_id", required=True)
            _str(media, "file_name")
            _str(media, "mime_type")
            _int(media, "file_size", 0, _MAX_ID)
    replied = message.get("reply_to_message")
    if replied is not None:
        if depth > 0:  # Telegram does not nest replies further
            raise Malformed("reply_to_message nested in a reply")
        _message(_object(message, "reply_to_message"), depth + 1)


def _object(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise Malformed(f"{key} is not an object")
    return value


def _objects(parent: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise Malformed(f"{key} is not a list of objects")
    return value


def _int(parent: Mapping[str, Any], key: str, low: int, high: int, required: bool = False) -> None:
    value = parent.get(key)
    if value is None and not required:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value < high:
        raise Malformed(f"{key} is not a number Telegram would send")


def _str(parent: Mapping[str, Any], key: str, required: bool = False) -> None:
    value = parent.get(key)
    if (value is not None or required) and not isinstance(value, str):
        raise Malformed(f"{key} is not a string")
