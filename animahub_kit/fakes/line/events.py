"""The webhook events people cause, as LINE builds them: a text (with LINE's mention objects),
an image, video, audio or file, a sticker. Each event hands out a reply token, good for the
chat it came from (animahub_kit/fakes/line/messages.py spends it).
"""

from __future__ import annotations

import secrets
import time

from animahub_kit.fakes.line.objects import JSON, ReplyToken, utf16_len
from animahub_kit.fakes.line.state import LineState

_ULID = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _source(state: LineState, user: str, chat: str | None) -> JSON:
    if chat is None:
        return {"type": "user", "userId": user}
    kind = state.chats[chat].kind
    return {"type": kind, f"{kind}Id": chat, "userId": user}


def message_event(state: LineState, user: str, chat: str | None, message: JSON) -> JSON:
    token = secrets.token_hex(16)
    state.tokens[token] = ReplyToken(chat or user, time.monotonic())
    return {
        "type": "message",
        "message": message,
        "webhookEventId": "01" + "".join(secrets.choice(_ULID) for _ in range(24)),
        "deliveryContext": {"isRedelivery": False},
        "timestamp": int(time.time() * 1000),
        "source": _source(state, user, chat),
        "replyToken": token,
        "mode": "active",
    }


def _mentionee(index: int, label: str, user_id: str, is_self: bool) -> JSON:
    return {
        "index": index,
        "length": utf16_len(label),
        "type": "user",
        "userId": user_id,
        "isSelf": is_self,
    }


def text_event(
    state: LineState,
    user: str,
    text: str,
    *,
    chat: str | None = None,
    mention_bot: bool = False,
    mention_users: tuple[str, ...] = (),
) -> JSON:
    """A text message `user` wrote, in a 1:1 chat or in the group or room `chat`;
    `mention_bot` prefixes `@<bot name> ` as LINE's mention object, `mention_users`
    appends `@<display name>` for each (LINE indexes them in UTF-16 code units)."""
    mentionees: list[JSON] = []
    if mention_bot:
        label = f"@{state.bot_name}"
        mentionees.append(_mentionee(0, label, state.bot_user_id, True))
        text = f"{label} {text}"
    for other in mention_users:
        label = "@" + str(state.users[other]["displayName"])
        text = f"{text} "
        mentionees.append(_mentionee(utf16_len(text), label, other, False))
        text += label
    message: JSON = {
        "type": "text",
        "id": state.next_id(),
        "quoteToken": secrets.token_urlsafe(16),
        "text": text,
    }
    if mentionees:
        message["mention"] = {"mentionees": mentionees}
    return message_event(state, user, chat, message)


def media_event(
    state: LineState,
    user: str,
    kind: str,
    *,
    chat: str | None = None,
    file_name: str = "",
    size: int = 0,
) -> JSON:
    """An image, video, audio or file message (its content stays on LINE's side)."""
    message: JSON = {"type": kind, "id": state.next_id()}
    if kind == "file":
        message.update(fileName=file_name or "file.bin", fileSize=size)
    else:
        message["contentProvider"] = {"type": "line"}
    if kind in ("image", "video"):
        message["quoteToken"] = secrets.token_urlsafe(16)
    if kind in ("video", "audio"):
        message["duration"] = 1000
    return message_event(state, user, chat, message)


def sticker_event(state: LineState, user: str, *, chat: str | None = None) -> JSON:
    message = {
        "type": "sticker",
        "id": state.next_id(),
        "quoteToken": secrets.token_urlsafe(16),
        "packageId": "446",
        "stickerId": "1988",
        "stickerResourceType": "STATIC",
    }
    return message_event(state, user, chat, message)
