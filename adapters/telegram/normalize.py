"""Telegram updates into the hub's `Inbound` (hub/messages.py).

Address: `telegram:<bot id>/<chat id>#<topic id>`. A private chat is a DM; a group or
supergroup is a channel; a forum topic is its thread (`message_thread_id`). The General topic
of a forum, and every non-forum group, has no thread: replies there carry no topic.

Identity of a message: `<chat id>:<message id>`, the same in every redelivery of its update
(polling after a restart, a webhook retried). An edit is an `edited_message` update and
becomes a new event `<chat id>:<message id>:edit:<edit date>` whose `edit_of` is the message
id. The update_id is not the key: Telegram restarts its sequence at random after a week
without updates, so it orders and confirms updates (the polling offset) but names nothing.

Addressed (answered by the default Anima when nothing else routes it): every private message;
in groups a mention of the bot (`@botname`, or a text_mention of it), a reply to one of the
bot's messages, and a command for this bot (`/anima@botname …`, or `/anima …` without a
suffix). The bot's mention is not part of what was said and is removed from the text. A
command addressed to another bot (`/start@otherbot`) is not ours and is dropped. Attachments
(photo, document, voice, video, audio, animation, video note, sticker) are recorded with
their platform file id as `telegram-file:<file_id>`; nothing is downloaded. A caption is the
message's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from telegram import Chat, Message, MessageEntity, Update, User

from hub.adapter import parse_command
from hub.messages import (
    Address,
    AddressKind,
    Attachment,
    Command,
    Inbound,
    PlatformUser,
    clean_text,
)

PLATFORM = "telegram"
FILE_SCHEME = "telegram-file:"
# /start is what Telegram sends when someone opens the bot: answered with who they are.
START = "start"
_KINDS = {"private": AddressKind.DM, "group": AddressKind.GROUP, "supergroup": AddressKind.GROUP}
AnimaOf = Callable[[int, int], str | None]  # (chat id, our message id) -> the Anima who wrote it


@dataclass(frozen=True, slots=True)
class Me:
    id: int
    username: str

    def is_me(self, user: User | None) -> bool:
        return user is not None and user.id == self.id


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    mentioned: bool  # our bot was mentioned
    command: Command | None
    for_other_bot: bool  # a command with another bot's @suffix


def address_of(message: Message, bot_id: int) -> Address:
    chat = message.chat
    kind = _KINDS.get(chat.type, AddressKind.CHANNEL)
    thread = message.message_thread_id if message.is_topic_message else None
    return Address(PLATFORM, str(bot_id), str(chat.id), str(thread) if thread else None, kind)


def message_key(chat_id: int | str, message_id: int | str) -> str:
    return f"{chat_id}:{message_id}"


def to_message_id(reply_to: str | None) -> int | None:
    """The Telegram message id an Inbound's (or a delivery's) `reply_to` carries."""
    return int(reply_to) if reply_to is not None and reply_to.isdigit() else None


def _cut(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """Replace UTF-16 (offset, length) spans of `text` with their replacements. A span that
    splits a surrogate pair (not Telegram's, but possible) leaves U+FFFD, not an error."""
    units = text.encode("utf-16-le")
    out: list[bytes] = []
    pos = 0
    for offset, length, replacement in sorted(spans):
        out.append(units[pos : offset * 2])
        out.append(replacement.encode("utf-16-le"))
        pos = (offset + length) * 2
    out.append(units[pos:])
    return b"".join(out).decode("utf-16-le", errors="replace")


def _entity_text(text: str, entity: MessageEntity) -> str:
    units = text.encode("utf-16-le")
    span = units[entity.offset * 2 : (entity.offset + entity.length) * 2]
    return span.decode("utf-16-le", errors="replace")


def read_text(text: str, entities: Sequence[MessageEntity], me: Me) -> Text:
    """The text without our bot's mention; the command it starts with, if it is ours."""
    # A lone surrogate (JSON "\\ud800") cannot be encoded to UTF-16 below: U+FFFD, which
    # has the same length in UTF-16 units, so the entities' offsets still hold.
    text = clean_text(text)
    spans: list[tuple[int, int, str]] = []
    mentioned = False
    command: Command | None = None
    other = False
    for entity in entities:
        if entity.type == MessageEntity.MENTION:
            if _entity_text(text, entity).lower() == f"@{me.username.lower()}":
                spans.append((entity.offset, entity.length, ""))
                mentioned = True
        elif entity.type == MessageEntity.TEXT_MENTION and me.is_me(entity.user):
            spans.append((entity.offset, entity.length, ""))
            mentioned = True
        elif entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
            name, _, target = _entity_text(text, entity).partition("@")
            if target and target.lower() != me.username.lower():
                other = True
            else:
                spans.append((0, entity.length, name))
    cleaned = re.sub(r"[ \t]{2,}", " ", _cut(text, spans)).strip()
    if spans and spans[0][0] == 0 and not other:
        command = parse_command(cleaned)
        word = cleaned.split(maxsplit=1)[0] if cleaned else ""
        if command is None and word.lower() == f"/{START}":
            command = Command("whoami")
    return Text(cleaned, mentioned, command, other)


def _media(message: Message) -> list[tuple[Any, str, str]]:
    """The kinds of file a message may carry: (the file or None, a name, a content type)."""
    return [
        (message.document, "document", "application/octet-stream"),
        (message.video, "video.mp4", "video/mp4"),
        (message.voice, "voice.ogg", "audio/ogg"),
        (message.audio, "audio.mp3", "audio/mpeg"),
        (message.animation, "animation.mp4", "video/mp4"),
        (message.video_note, "video_note.mp4", "video/mp4"),
        (message.sticker, "sticker.webp", "image/webp"),
    ]


def _attachment(message: Message) -> Attachment | None:
    """The file a message carries (Telegram allows one per message; an album is several)."""
    if message.photo:
        photo = message.photo[-1]  # the largest size
        return Attachment("photo.jpg", FILE_SCHEME + photo.file_id, "image/jpeg", photo.file_size)
    for media, name, content_type in _media(message):
        if media is not None:
            return Attachment(
                name=str(getattr(media, "file_name", None) or name),
                url=FILE_SCHEME + media.file_id,
                content_type=str(getattr(media, "mime_type", None) or content_type),
                size=media.file_size,
            )
    return None


def _of(value: Any, *types: type) -> bool:
    return value is None or (isinstance(value, types) and not isinstance(value, bool))


def _user_typed(user: Any) -> bool:
    return user is None or (
        isinstance(user, User)
        and _of(user.id, int)
        and all(_of(v, str) for v in (user.first_name, user.last_name, user.username))
    )


def _bot_api_typed(message: Message) -> bool:
    """Whether what to_inbound reads has the Bot API's types. python-telegram-bot keeps any
    value a body held (a chat type [], a text [None], an entity offset "x"); Telegram never
    sends such, so a message that has one is not kept, rather than raising."""
    chats = [c for c in (message.chat, message.sender_chat) if c is not None]
    replied = message.reply_to_message
    return (
        isinstance(message.message_id, int)
        and isinstance(message.chat, Chat)
        and isinstance(message.chat.type, str)
        and all(isinstance(c, Chat) and isinstance(c.id, int) and _of(c.title, str) for c in chats)
        and all(_of(t, str) for t in (message.text, message.caption))
        and _of(message.message_thread_id, int)
        and _user_typed(message.from_user)
        and (replied is None or (isinstance(replied, Message) and _user_typed(replied.from_user)))
        and _entities_typed([*(message.entities or ()), *(message.caption_entities or ())])
        and _files_typed(message)
    )


def _entities_typed(entities: list[Any]) -> bool:
    return all(
        isinstance(e, MessageEntity)
        and all(isinstance(v, int) for v in (e.offset, e.length))
        and isinstance(e.type, str)
        and _user_typed(e.user)
        for e in entities
    )


def _files_typed(message: Message) -> bool:
    files = [*(message.photo or ())[-1:], *(m for m, _, _ in _media(message) if m is not None)]
    return all(
        isinstance(getattr(f, "file_id", None), str)
        and _of(getattr(f, "file_size", None), int)
        and all(_of(getattr(f, key, None), str) for key in ("file_name", "mime_type"))
        for f in files
    )


def _sender(message: Message) -> PlatformUser:
    user = message.from_user
    if user is None:  # a channel posting into its discussion group
        chat = message.sender_chat or message.chat
        return PlatformUser(PLATFORM, f"chat{chat.id}", chat.title or "", is_bot=False)
    name = user.full_name or user.username or str(user.id)
    return PlatformUser(PLATFORM, str(user.id), name, is_bot=user.is_bot)


def _replies_to_us(message: Message, me: Me) -> int | None:
    """The id of our message this one replies to (not a forum topic's root)."""
    replied = message.reply_to_message
    if replied is None or replied.forum_topic_created is not None:
        return None
    return replied.message_id if me.is_me(replied.from_user) else None


def _when(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def to_inbound(update: Update, me: Me, anima_of: AnimaOf) -> Inbound | None:
    """The Inbound for a message or an edit, or None when there is nothing to keep (a
    service message, our own post, a command for another bot)."""
    message = update.message or update.edited_message
    if not isinstance(message, Message) or not _bot_api_typed(message):
        return None
    if me.is_me(message.from_user):
        return None
    attachment = _attachment(message)
    raw_text = message.text or message.caption or ""
    if not raw_text.strip() and attachment is None:
        return None  # joins, pins, topic bookkeeping
    entities = message.entities or message.caption_entities or ()
    read = read_text(raw_text, entities, me)
    if read.for_other_bot:
        return None
    address = address_of(message, me.id)
    ours = _replies_to_us(message, me)
    edited = update.edited_message is not None
    addressed = (
        address.kind is AddressKind.DM
        or read.mentioned
        or read.command is not None
        or ours is not None
    )
    anima = anima_of(message.chat.id, ours) if ours is not None else None
    event_id = message_key(message.chat.id, message.message_id)
    if edited:
        stamp = int(_when(message.edit_date).timestamp())
        event_id = f"{event_id}:edit:{stamp}"
    return Inbound(
        event_id=event_id,
        address=address,
        sender=_sender(message),
        text=read.text,
        mentions=(anima,) if anima else (),
        reply_to=str(message.message_id),
        edit_of=str(message.message_id) if edited else None,
        addressed=addressed,
        attachments=(attachment,) if attachment is not None else (),
        command=None if edited else read.command,
        sent_at=_when(message.edit_date if edited else message.date),
        raw=update.to_dict(),
    )
