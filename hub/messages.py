"""The one message model every platform is normalized into (DESIGN §4)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class AddressKind(StrEnum):
    DM = "dm"
    GROUP = "group"
    CHANNEL = "channel"


# A web chat's (and `animahub chat --conversation`'s) conversation id: its address's thread.
CONVERSATION_ID_PATTERN = r"^[\w.-]{1,100}$"
CONVERSATION_ID_RULE = "1 to 100 letters, digits, '_', '.' or '-' (no spaces)"
# A person a web chat (or `animahub chat --user`) acts for: an id, a name ("Dana Li"), or
# `person:ID`, an id and nothing else (docs/people.md, names and ids).
PERSON_NAME_PATTERN = r"^(?:person:)?[\w.@-](?:[\w.@ -]{0,62}[\w.@-])?$"
PERSON_NAME_RULE = (
    "1 to 64 letters, digits, spaces, '_', '.', '@' or '-', not starting or ending with a "
    "space (or person:ID)"
)


_ADDRESS_RE = re.compile(
    r"^(?P<platform>[a-z0-9_-]+):(?P<workspace>[^/]*)/(?P<channel>[^#]+)(?:#(?P<thread>.+))?$"
)


@dataclass(frozen=True, slots=True)
class Address:
    """Where a message lives or goes. String form: `slack:T1/C2#1700000000.1234`."""

    platform: str
    workspace: str
    channel: str
    thread: str | None = None
    kind: AddressKind = AddressKind.CHANNEL

    def __str__(self) -> str:
        base = f"{self.platform}:{self.workspace}/{self.channel}"
        return f"{base}#{self.thread}" if self.thread else base

    @property
    def channel_key(self) -> str:
        """The address without its thread: what a channel binding is keyed by."""
        return f"{self.platform}:{self.workspace}/{self.channel}"

    def in_thread(self, thread: str | None) -> Address:
        return Address(self.platform, self.workspace, self.channel, thread, self.kind)

    @classmethod
    def parse(cls, text: str, kind: AddressKind | str = AddressKind.CHANNEL) -> Address:
        match = _ADDRESS_RE.match(text)
        if match is None:
            raise ValueError(f"not an address: {text!r} (expected platform:workspace/channel)")
        return cls(
            platform=match["platform"],
            workspace=match["workspace"],
            channel=match["channel"],
            thread=match["thread"],
            kind=AddressKind(kind),
        )


@dataclass(frozen=True, slots=True)
class PlatformUser:
    platform: str
    user_id: str
    display_name: str = ""
    is_bot: bool = False

    @property
    def key(self) -> str:
        """`web:alice`, `slack:U123`: the form admins are named by in config."""
        return f"{self.platform}:{self.user_id}"


@dataclass(frozen=True, slots=True)
class Attachment:
    name: str
    url: str
    content_type: str = ""
    size: int | None = None

    @classmethod
    def from_stored(cls, item: Mapping[str, Any]) -> Attachment:
        """One attachment as the inbox row's JSON holds it, tolerating missing or odd fields."""
        size = item.get("size")
        return cls(
            str(item.get("name") or ""),
            str(item.get("url") or ""),
            str(item.get("content_type") or ""),
            size if isinstance(size, int) else None,
        )


_UNSAFE = re.compile(r"[\x00-\x1f\x7f\[\]]+")
_NAME_MAX = 120


def describe_attachment(a: Attachment) -> str:
    """`[attached: report.pdf (application/pdf, 12 KB)]`: what a turn is told of a file.

    Only what the platform said of it; never its URL (which may carry a token) or content.
    The name is the sender's text: brackets and control characters are flattened so it
    stays on its line.
    """
    name = " ".join(_UNSAFE.sub(" ", a.name).split())[:_NAME_MAX] or "a file"
    facts = [_UNSAFE.sub(" ", a.content_type).strip()[:_NAME_MAX]]
    if a.size is not None and a.size >= 0:
        facts.append(_size(a.size))
    known = ", ".join(f for f in facts if f)
    return f"[attached: {name}{f' ({known})' if known else ''}]"


def with_attachments(text: str, attachments: Collection[dict[str, Any]]) -> str:
    """The text of a message followed by one line per attachment (stored as inbox JSON)."""
    lines = [describe_attachment(Attachment.from_stored(item)) for item in attachments]
    return "\n".join([text, *lines]) if text.strip() else "\n".join(lines)


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed slash command such as `/anima bind aria`."""

    name: str
    args: tuple[str, ...] = ()


# A UTF-16 surrogate code point is not a character: JSON's "\ud800" or a terminal's
# undecodable byte (surrogateescape) puts one in a str, and no store, log or platform can
# encode it (issue 41, class 11). Text arriving from a platform or the CLI has each one
# replaced with U+FFFD; the HTTP API refuses a JSON body holding one (422, hub/api/guard.py).
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every surrogate code point replaced by U+FFFD (docs/operations.md)."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def clean_json(value: Any) -> Any:
    """A JSON-shaped value with `clean_text` applied to every string in it, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Inbound:
    """One platform event, normalized. `raw` is never written to memory."""

    event_id: str
    address: Address
    sender: PlatformUser
    text: str
    mentions: tuple[str, ...] = ()
    # This message's id on its platform: what a reply to it quotes (a Telegram reply, a
    # Discord message reference). The event id is the hub's key and may differ (edits).
    reply_to: str | None = None
    # Set when the event edits an earlier message (its platform message id): the hub keeps
    # the new text but does not answer edits again.
    edit_of: str | None = None
    # False for a channel message that neither mentions the bot nor continues a thread the
    # bot is in: only an Anima named in it, its thread, or the channel's binding answers it.
    addressed: bool = True
    attachments: tuple[Attachment, ...] = ()
    command: Command | None = None
    sent_at: datetime = field(default_factory=utcnow)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def platform(self) -> str:
        return self.address.platform


class DeliveryKind(StrEnum):
    REPLY = "reply"
    STREAM = "stream"
    HEARTBEAT = "heartbeat"
    REPORT = "report"
    NOTICE = "notice"


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    CANCELLED = "cancelled"  # by an admin (`POST /api/deliveries/{id}/cancel`): never sent


@dataclass(frozen=True, slots=True)
class OutboundChunk:
    """One piece of a delivery, as the outbox hands it to an adapter.

    A delivery is sent chunk by chunk and each chunk's platform id is stored as soon as it
    is sent, so a retry after a crash or a 429 continues where it stopped instead of
    repeating chunks.
    """

    delivery_id: str
    index: int
    count: int
    address: Address
    text: str
    anima: str
    kind: DeliveryKind
    # The event id of the message this answers: what a live preview of the reply (and LINE's
    # reply token) is kept under. None for what answers no message (heartbeats, reports).
    answers: str | None
    # That message's own platform id (its Inbound.reply_to), for a reply that quotes it.
    reply_to: str | None
    idempotency_key: str
    # Set when the hub stopped while sending this chunk (then): it may be on the platform
    # already, and an adapter that can look for it (Slack) does so before posting it again.
    maybe_sent_since: datetime | None = None


_MENTION_RE = re.compile(r"(?:^|[\s(])@([a-z][a-z0-9_-]{0,31})\b", re.IGNORECASE)
_VOCATIVE_RE = re.compile(r"^\s*([a-z][a-z0-9_-]{0,31})\s*[,:]", re.IGNORECASE)


def mentioned(inbound: Inbound, animas: Collection[str]) -> str | None:
    """The first Anima the adapter reported as mentioned, or named as `@name` / `name:`."""
    for name in inbound.mentions:
        if name in animas:
            return name
    for match in (*_MENTION_RE.finditer(inbound.text), _VOCATIVE_RE.match(inbound.text)):
        if match is not None and match.group(1).lower() in animas:
            return match.group(1).lower()
    return None
