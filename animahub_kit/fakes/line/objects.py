"""What the fake LINE builds and keeps: the record of a call, the bot's messages, chats,
message contents, reply tokens and webhook deliveries; LINE's limits on a message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
MAX_TEXT = 5000
MAX_MESSAGES = 5


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    body: JSON | None
    headers: dict[str, str]
    status: int = 0  # filled in when answered; 0: no answer (dropped)


@dataclass
class SentMessage:
    """One message object the bot sent (a reply or push carries up to five)."""

    id: str
    to: str  # the user, group or room id
    text: str
    via: str  # "reply" | "push"
    retry_key: str | None
    request: int  # index of the request in `calls` that sent it


@dataclass
class ReplyToken:
    chat: str
    issued: float
    used: bool = False


@dataclass(frozen=True)
class Delivery:
    status: int
    body: str


@dataclass(frozen=True)
class Content:
    data: bytes
    content_type: str
    content_length: bool  # False: sent chunked, its length unannounced
    preparing: bool  # a video or audio LINE is still transcoding: 202


@dataclass
class Chat:
    kind: str  # "user" | "group" | "room"
    id: str
    members: set[str] = field(default_factory=set)
