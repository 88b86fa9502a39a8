"""What the fake Slack keeps a record of: the Web API calls it was sent, the bot users and
their tokens, the messages the bots posted (their text after every edit) and the events it
delivered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
BOT_SCOPES = (
    "app_mentions:read,channels:history,groups:history,im:history,mpim:history,"
    "chat:write,chat:write.customize,users:read,commands,files:read"
)


@dataclass(frozen=True)
class ApiCall:
    method: str
    params: JSON
    token: str | None


@dataclass(frozen=True)
class BotUser:
    token: str
    user_id: str
    bot_id: str
    name: str
    scopes: str = BOT_SCOPES


@dataclass
class PostedMessage:
    """A message a bot posted, with its text after every edit."""

    channel: str
    ts: str
    text: str
    thread_ts: str | None
    user: str  # the bot user that posted it
    bot_id: str
    username: str | None = None
    icon: str | None = None
    updates: int = 0
    history: list[str] = field(default_factory=list)
    metadata: JSON | None = None  # as posted: {"event_type": …, "event_payload": {…}}


@dataclass(frozen=True)
class Delivery:
    """One event as the fake delivered it (over HTTP or the socket)."""

    event_id: str
    status: int  # HTTP status; 200 for a Socket Mode envelope acknowledged
    body: str = ""
    envelope_id: str | None = None
    attempt: int = 0  # 0: acknowledged the first time; n: on the nth retry
