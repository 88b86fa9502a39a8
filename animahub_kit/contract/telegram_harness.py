"""The contract harness for Telegram: a real hub with the Telegram adapter, its real
python-telegram-bot talking to animahub_kit/fakes/telegram_server.py.

By default the adapter runs in webhook mode: the hub's FastAPI app is served over real HTTP
by uvicorn in the test's loop, and the fake POSTs updates to its `/webhooks/telegram` with
the secret header, as Telegram does (so a forged request has something to be refused by).
With `webhook=False` it long-polls the fake's `getUpdates` instead. People are Telegram
users; "general" is a forum supergroup (a thread is a forum topic, no thread the General
topic) and "random" a plain supergroup. A bot mention is `@anima_test_bot`.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from adapters.telegram import TelegramAdapter
from animahub_kit.contract.harness import (
    ContractPlatform,
    Posted,
    ScriptedResponder,
    Sent,
    eventually,
    free_port,
    harness_settings,
    start_hub,
)
from animahub_kit.contract.server import HubServer
from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.telegram_server import JSON, FakeTelegram
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import Address, AddressKind

TOKEN = "123456:CONTRACT-token"
BOT_ID = 123456
BOT_NAME = "anima_test_bot"
SECRET = "contract-webhook-secret"
PEOPLE = {"alice": 1001, "bob": 1002, "carol": 1003, "mallory": 1009}
CHANNELS = {"general": -1001000000001, "random": -1001000000002}
WRONG_CREDENTIALS: dict[str, Any] = {"token": "123456:wrong"}


def file_id(url: str) -> str:
    """The Telegram file id of the file a test attaches "from" `url` (Telegram has no URLs)."""
    return "BQACAgIAAxkB" + hashlib.sha256(url.encode()).hexdigest()[:20]


class TelegramHarness:
    platform = "telegram"
    max_text = 4096
    replies_by_reference = False  # in groups a reply quotes its message; not in private chats

    def __init__(self, fake: FakeTelegram, hub: Hub, responder: ScriptedResponder) -> None:
        self.fake = fake
        self.hub = hub
        self.responder = responder
        self.updates: dict[str, int] = {}  # Sent.event_id -> its update_id
        self.originals: dict[str, JSON] = {}  # Sent.event_id -> the Message object

    @property
    def adapter(self) -> TelegramAdapter:
        adapter = self.hub.adapters["telegram"]
        assert isinstance(adapter, TelegramAdapter)
        return adapter

    async def platform_up(self) -> None:
        await self.fake.start()

    # Harness protocol -------------------------------------------------------------------

    def reply_thread(self, sent: Sent) -> str | None:
        return sent.thread

    def user_key(self, user: str) -> str:
        return f"telegram:{PEOPLE[user]}"

    async def dm(self, user: str, text: str) -> Sent:
        uid = PEOPLE[user]
        return await self.speak(self.fake.message(uid, uid, text))

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        mention: bool = False,
        thread: str | None = None,
    ) -> Sent:
        if mention:
            text = f"@{BOT_NAME} {text}"
        topic = int(thread) if thread else None
        return await self.speak(
            self.fake.message(PEOPLE[user], CHANNELS[channel], text, thread=topic)
        )

    async def edit(self, user: str, sent: Sent, text: str) -> Sent:
        original = self.originals[sent.event_id]
        if str(original.get("text", "")).startswith(f"@{BOT_NAME}"):
            text = f"@{BOT_NAME} {text}"
        edited = self.fake.edited(original, text)
        update = await self.fake.push("edited_message", edited)
        key = f"{sent.event_id}:edit:{edited['edit_date']}"
        self.updates[key] = update["update_id"]
        return Sent(key, sent.message_id, sent.channel, sent.thread)

    async def attach(self, user: str, channel: str, text: str, filename: str, url: str) -> Sent:
        document = {
            "file_id": file_id(url),
            "file_unique_id": "u-report",
            "file_name": filename,
            "mime_type": "application/pdf",
            "file_size": 12345,
        }
        message = self.fake.message(
            PEOPLE[user],
            CHANNELS[channel],
            f"@{BOT_NAME} {text}",
            caption=True,
            extra={"document": document},
        )
        return await self.speak(message)

    async def redeliver(self, sent: Sent) -> None:
        await self.fake.redeliver(self.updates[sent.event_id])

    async def forged(self) -> int:
        message = self.fake.message(PEOPLE["mallory"], CHANNELS["general"], "forged")
        return await self.fake.deliver(self.fake.update("message", message), secret="not-it")

    async def stale(self) -> int:
        raise NotImplementedError("a Telegram webhook carries no timestamp to replay")

    def posted(self) -> list[Posted]:
        return [
            Posted(
                str(m.message_id),
                str(m.chat_id),
                m.text,
                str(m.thread_id) if m.thread_id is not None else None,
                str(m.reply_to) if m.reply_to is not None else None,
                m.edits,
            )
            for m in self.fake.messages
        ]

    def rate_limit_posts(self, times: int, retry_after: float) -> None:
        self.fake.rate_limit("sendMessage", times, retry_after)

    def post_requests(self) -> int:
        return len(self.fake.calls_of("sendMessage"))

    def set_faults(self, policy: FaultPolicy | None) -> None:
        self.fake.faults = policy

    def drop_next_send_response(self) -> None:
        self.fake.drop_next_send_response()

    def auth_attempts(self) -> int:
        return len(self.fake.calls_of("getMe"))

    def address(self, channel: str) -> Address:
        return Address("telegram", str(BOT_ID), str(CHANNELS[channel]), None, AddressKind.GROUP)

    def attachment_url(self, url: str) -> str:
        return f"telegram-file:{file_id(url)}"

    # helpers ----------------------------------------------------------------------------

    async def speak(self, message: JSON) -> Sent:
        update = await self.fake.push("message", message)
        thread = message.get("message_thread_id")
        sent = Sent(
            f"{message['chat']['id']}:{message['message_id']}",
            str(message["message_id"]),
            str(message["chat"]["id"]),
            str(thread) if thread is not None else None,
        )
        self.updates[sent.event_id] = update["update_id"]
        self.originals[sent.event_id] = message
        return sent


def populate(fake: FakeTelegram) -> None:
    for user, uid in PEOPLE.items():
        fake.add_user(uid, user.title(), user)
    fake.add_chat(CHANNELS["general"], "supergroup", "General", forum=True)
    fake.add_chat(CHANNELS["random"], "supergroup", "Random")


def telegram_section(fake: FakeTelegram, *, webhook: bool, token: str = TOKEN) -> dict[str, Any]:
    section: dict[str, Any] = {
        "enabled": True,
        "bot_token": token,
        "api_url": fake.url,
        "poll_timeout_s": 1,
        "chat_interval_s": 0.0,
        "group_per_minute": 10_000,
    }
    if webhook:
        section.update(public_url="https://hub.example.com", webhook_secret=SECRET)
    return section


@contextlib.asynccontextmanager
async def open_harness(
    tmp_path: Path,
    *,
    platform_down: bool = False,
    webhook: bool = True,
    token: str = TOKEN,
    fake: FakeTelegram | None = None,
    section: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
) -> AsyncIterator[TelegramHarness]:
    """`platform_down`: the fake is not running when the hub starts (`platform_up` later);
    `webhook=False`: long polling; `token`: what the hub is configured with (a wrong one
    gets 401); `fake`: one already populated and running (a second hub on the same bot);
    `section`: more `[telegram]` settings; `sections`: other sections (a shared database)."""
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    own_fake = fake is None
    if fake is None:
        fake = FakeTelegram(token=TOKEN, bot_id=BOT_ID, username=BOT_NAME, port=free_port())
        populate(fake)
        if not platform_down:
            await fake.start()
    settings = {**telegram_section(fake, webhook=webhook, token=token), **(section or {})}
    responder = ScriptedResponder()
    hub: Hub | None = None
    server: HubServer | None = None
    try:
        hub = await start_hub(
            harness_settings(home, telegram=settings, **(sections or {})),
            "telegram",
            TelegramAdapter,
            responder,
        )
        server = HubServer(create_app(hub))
        await server.start()
        fake.webhook_target = f"{server.url}/webhooks/telegram" if webhook else ""
        harness = TelegramHarness(fake, hub, responder)
        if not platform_down and token == TOKEN:
            await eventually(lambda: harness.adapter.running)
        yield harness
    finally:
        if server is not None:
            await server.stop()
        if hub is not None:
            await hub.stop()
        if own_fake:
            await fake.stop()


# What the contract runs on this platform with (plugin.py says what each feature means).
PLATFORM = ContractPlatform(
    open_harness,
    frozenset({"edits", "threads", "drafts", "mention_routing", "captions"}),
    WRONG_CREDENTIALS,
)
