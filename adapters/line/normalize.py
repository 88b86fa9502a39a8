"""LINE webhook events into the hub's `Inbound` (hub/messages.py).

Where it lives: `line:<bot user id>/<chat>`, the chat being the user id of a 1:1 chat
(`AddressKind.DM`) or the id of a group (`C…`) or multi-person room (`R…`, both
`AddressKind.GROUP`); the bot user id is the webhook's `destination`. LINE has no threads.

Identity of an event: its `webhookEventId`, which a redelivery keeps, so the hub's
(platform, event_id) dedup answers each message once. The message id is `reply_to`: the
adapter keeps the event's reply token under it for the reply.

What is addressed to the hub: every 1:1 message; in a group or room, a message that mentions
the bot (a mention object with `isSelf`, or the bot's user id). The bot's mention is not part
of what was said and is cut out of the text; other mentions stay as the `@Name` LINE wrote.
Images, videos, audio and files become attachments named `line-content:<message id>`: the
content stays on LINE's side until someone fetches it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from linebot.v3.webhooks import (
    AudioMessageContent,
    FileMessageContent,
    GroupSource,
    ImageMessageContent,
    MessageEvent,
    RoomSource,
    TextMessageContent,
    UserMentionee,
    UserSource,
    VideoMessageContent,
)

from hub.adapter import parse_command
from hub.messages import Address, AddressKind, Attachment, Inbound, PlatformUser

PLATFORM = "line"
CONTENT_SCHEME = "line-content:"
# LINE's ids (U…, C…, R… and 32 hex digits), loosely: an address is stored as text and parsed
# back (hub/messages.py), so what goes into one must not hold its separators (`/`, `#`).
_ID = re.compile(r"[A-Za-z0-9]{1,64}")
_MEDIA = {
    ImageMessageContent: ("image", "image/*"),
    VideoMessageContent: ("video", "video/*"),
    AudioMessageContent: ("audio", "audio/*"),
}


@dataclass(frozen=True, slots=True)
class Source:
    """Who wrote, and in which chat: `kind` is "user", "group" or "room"."""

    kind: str
    chat: str
    user: str | None

    @property
    def is_dm(self) -> bool:
        return self.kind == "user"


def source_of(event: MessageEvent) -> Source | None:
    source = event.source
    if isinstance(source, UserSource) and source.user_id:
        return Source("user", source.user_id, source.user_id)
    if isinstance(source, GroupSource):
        return Source("group", source.group_id, source.user_id)
    if isinstance(source, RoomSource):
        return Source("room", source.room_id, source.user_id)
    return None


def address_of(bot_user_id: str, source: Source) -> Address:
    kind = AddressKind.DM if source.is_dm else AddressKind.GROUP
    return Address(PLATFORM, bot_user_id, source.chat, None, kind)


def _utf16_slices(text: str) -> list[int]:
    """For each UTF-16 code unit offset, the str index it falls in (LINE counts in UTF-16)."""
    offsets: list[int] = []
    for index, char in enumerate(text):
        offsets.extend([index] * (2 if ord(char) > 0xFFFF else 1))
    offsets.append(len(text))
    return offsets


def strip_bot_mentions(
    text: str, content: TextMessageContent, bot_user_id: str
) -> tuple[str, bool]:
    """The text without the bot's own mentions, and whether there was one."""
    if content.mention is None:
        return text, False
    units = _utf16_slices(text)
    spans: list[tuple[int, int]] = []
    for mentionee in content.mention.mentionees:
        if not isinstance(mentionee, UserMentionee):
            continue
        if not (mentionee.is_self or (bot_user_id and mentionee.user_id == bot_user_id)):
            continue
        start, end = mentionee.index, mentionee.index + mentionee.length
        if 0 <= start < end < len(units):
            spans.append((units[start], units[end]))
    if not spans:
        return text, False
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        pieces.append(text[cursor:start])
        cursor = max(cursor, end)
    pieces.append(text[cursor:])
    return " ".join(p.strip(" ") for p in pieces if p.strip(" ")).strip(), True


def attachments_of(content: Any) -> tuple[Attachment, ...]:
    url = f"{CONTENT_SCHEME}{content.id}"
    if isinstance(content, FileMessageContent):
        return (Attachment(content.file_name, url, "", content.file_size),)
    for model, (label, mime) in _MEDIA.items():
        if isinstance(content, model):
            return (Attachment(f"{label}-{content.id}", url, mime),)
    return ()


def _sent_at(milliseconds: int) -> datetime:
    try:
        return datetime.fromtimestamp(milliseconds / 1000, UTC)
    except (ValueError, OverflowError, OSError):  # a year out of range: when we got it
        return datetime.now(UTC)


def to_inbound(
    event: MessageEvent, bot_user_id: str, sender_name: str, raw: dict[str, Any]
) -> Inbound | None:
    """The Inbound for a message event, or None when it is nothing to keep (a sticker, a
    location, a message from a user LINE does not identify)."""
    source = source_of(event)
    content = event.message
    if source is None or source.user is None:
        return None
    if not (_ID.fullmatch(bot_user_id) and _ID.fullmatch(source.chat)):
        return None  # not a chat LINE names (a destination '/' would make a broken address)
    text, mentioned = "", False
    if isinstance(content, TextMessageContent):
        text, mentioned = strip_bot_mentions(content.text, content, bot_user_id)
    files = attachments_of(content)
    if not text and not files:
        return None
    command = parse_command(text) if text.startswith("/") else None
    return Inbound(
        event_id=event.webhook_event_id,
        address=address_of(bot_user_id, source),
        sender=PlatformUser(PLATFORM, source.user, sender_name),
        text=text,
        reply_to=content.id,
        addressed=source.is_dm or mentioned or command is not None,
        attachments=files,
        command=command,
        sent_at=_sent_at(event.timestamp),
        raw={k: v for k, v in raw.items() if k != "replyToken"},
    )
