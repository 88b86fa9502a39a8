"""What the fake Telegram holds: the bot, its people, chats, topics and files, and the record of
every call and of what the bot posted. The wire, the method handlers and the server share one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.telegram.objects import JSON, Chat, PostedMessage


@dataclass(frozen=True)
class ApiCall:
    method: str
    params: JSON
    token: str
    at: float


@dataclass
class FakeFile:
    data: bytes
    stated_size: int | None  # what getFile says (None: it says nothing)
    content_length: bool  # False: the download is chunked, its length unannounced


class TelegramState:
    def __init__(self, token: str, bot_id: int, username: str) -> None:
        self.token = token
        self.bot = {
            "id": bot_id,
            "is_bot": True,
            "first_name": "AnimaHub",
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.users: dict[int, JSON] = {}
        self.chats: dict[int, Chat] = {}
        self.topics: dict[int, set[int]] = {}  # forum chat -> its topic ids
        self.calls: list[ApiCall] = []
        self.messages: list[PostedMessage] = []
        self.drafts: list[tuple[int, int, str]] = []  # chat id, draft id, plain text
        self.actions: list[tuple[int, str]] = []  # chat id, action
        self.commands: list[JSON] = []
        self.webhook_url = ""  # as registered by setWebhook
        self.webhook_secret = ""
        # Where webhook POSTs really go (the hub's test server), whatever URL was registered:
        # a hub under test cannot know its own ephemeral port when it calls setWebhook.
        self.webhook_target = ""
        self.deliveries: list[tuple[int, int]] = []  # (update_id, hub's HTTP status)
        self.files: dict[str, FakeFile] = {}  # file_id -> the file
        self.downloads: list[str] = []  # the file_ids whose content was requested
        self.confirmed = 0  # the highest offset a poller sent: everything below is gone
        self._message_ids: dict[int, itertools.count[int]] = {}
        # Consulted before every sendMessage and editMessageText (animahub_kit/fakes/faults.py).
        self.faults: FaultPolicy | None = None

    # the world -------------------------------------------------------------------------

    def add_user(self, user_id: int, first_name: str, username: str = "") -> JSON:
        user: JSON = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username:
            user["username"] = username
        self.users[user_id] = user
        self.chats[user_id] = Chat(user_id, "private")
        return user

    def add_chat(self, chat_id: int, kind: str, title: str, *, forum: bool = False) -> Chat:
        chat = Chat(chat_id, kind, title, forum)
        self.chats[chat_id] = chat
        if forum:
            self.topics.setdefault(chat_id, set())
        return chat

    def add_topic(self, chat_id: int, topic_id: int) -> None:
        self.topics.setdefault(chat_id, set()).add(topic_id)

    def add_file(
        self,
        file_id: str,
        data: bytes,
        *,
        stated_size: int | Literal["real"] | None = "real",
        content_length: bool = True,
    ) -> None:
        """A file getFile knows. getFile states its real size, or `stated_size` (None: no
        size; a number: a lie, or a size too big to add for real)."""
        size = len(data) if isinstance(stated_size, str) else stated_size
        self.files[file_id] = FakeFile(data, size, content_length)

    def next_message_id(self, chat_id: int) -> int:
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    # what the fake saw -------------------------------------------------------------------

    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]
