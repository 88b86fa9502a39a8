"""What the fake LINE holds: the channel, its people, chats and message contents, the reply
tokens it handed out, and the record of every call, of what the bot sent and of every webhook
delivery. The wire, the handlers, the webhook side and the server share one.
"""

from __future__ import annotations

import itertools

from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.line.objects import (
    JSON,
    ApiCall,
    Chat,
    Content,
    Delivery,
    ReplyToken,
    SentMessage,
)


class LineState:
    def __init__(
        self,
        *,
        channel_secret: str,
        access_token: str,
        bot_user_id: str,
        bot_name: str,
        reply_token_ttl_s: float,
    ) -> None:
        self.channel_secret = channel_secret
        self.access_token = access_token
        self.bot_user_id = bot_user_id
        self.bot_name = bot_name
        self.reply_token_ttl_s = reply_token_ttl_s
        self.users: dict[str, JSON] = {}
        self.chats: dict[str, Chat] = {}
        self.calls: list[ApiCall] = []
        self.messages: list[SentMessage] = []
        self.loading: list[JSON] = []
        self.contents: dict[str, Content] = {}  # message id -> what its content is
        self.deliveries: list[Delivery] = []
        self.webhook_url: str | None = None
        self.tokens: dict[str, ReplyToken] = {}
        self.accepted: dict[str, tuple[str, list[JSON]]] = {}  # retry key -> request id, ids
        self.events: dict[str, JSON] = {}  # webhookEventId -> the event as first sent
        self._ids = itertools.count(600_000_000_000_000_001)
        # Consulted before every reply and push (animahub_kit/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    def next_id(self) -> str:
        """A message id, for the bot's messages and people's alike."""
        return str(next(self._ids))

    # the account -------------------------------------------------------------------------

    def add_user(self, user_id: str, display_name: str, language: str = "en") -> None:
        self.users[user_id] = {
            "userId": user_id,
            "displayName": display_name,
            "pictureUrl": f"https://profile.line-scdn.net/{user_id}",
            "statusMessage": "",
            "language": language,
        }
        self.chats.setdefault(user_id, Chat("user", user_id, {user_id}))

    def add_group(self, group_id: str, members: list[str], *, room: bool = False) -> None:
        self.chats[group_id] = Chat("room" if room else "group", group_id, set(members))

    def rename_user(self, user_id: str, display_name: str) -> None:
        self.users[user_id]["displayName"] = display_name

    def add_content(
        self,
        message_id: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        *,
        content_length: bool = True,
        preparing: bool = False,
    ) -> None:
        """The content of an image, video, audio or file message, for its download."""
        self.contents[message_id] = Content(data, content_type, content_length, preparing)

    def expire_reply_tokens(self) -> None:
        for token in self.tokens.values():
            token.issued = 0.0

    # what the fake saw -------------------------------------------------------------------

    def calls_to(self, endpoint: str) -> list[ApiCall]:
        """Requests to `reply`, `push`, `profile`, `member`, `info` or `loading`."""
        return [c for c in self.calls if endpoint_of(c.path) == endpoint]

    def texts(self) -> list[str]:
        return [m.text for m in self.messages]


def endpoint_of(path: str) -> str:
    if path.startswith("/v2/bot/message/"):
        return path.rsplit("/", 1)[-1]
    if path.startswith("/v2/bot/profile/"):
        return "profile"
    if "/member/" in path:
        return "member"
    if path == "/v2/bot/info":
        return "info"
    if path.startswith("/v2/bot/chat/loading"):
        return "loading"
    return path
