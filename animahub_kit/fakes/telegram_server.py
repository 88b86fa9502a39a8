"""A local fake of the Telegram Bot API that the real python-telegram-bot talks to (DESIGN §9).

It runs in the test's event loop (aiohttp.web on 127.0.0.1) and speaks the Bot API's wire
protocol: ``/bot<token>/<method>`` with form-encoded bodies (PTB's way: strings as they are,
everything else JSON-encoded), JSON bodies or query parameters, answered with
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code": N, "description": ...}``.

* ``getMe``, ``deleteWebhook``, ``setWebhook`` (url, secret_token), ``getWebhookInfo``,
  ``setMyCommands``, ``getMyCommands``, ``sendChatAction``.
* ``getFile`` and the download at ``/file/bot<token>/<path>`` serve the files added with
  :meth:`add_file` (an unknown ``file_id`` is 400 "invalid file_id", one stated over 20 MB
  400 "file is too big", as Telegram answers); every download is recorded
  (:attr:`FakeTelegram.downloads`), so a test can check that nothing was fetched.
* ``getUpdates`` is a long poll with Telegram's offset rule: every update below ``offset`` is
  confirmed and dropped for good; the rest (up to ``limit``) are returned, or the call waits up
  to ``timeout`` seconds for one. A second poller while one waits ends the first with 409, and
  so does polling while a webhook is set.
* ``sendMessage`` and ``editMessageText`` with ``parse_mode=HTML`` are parsed as strictly as
  Telegram does (animahub_kit/fakes/telegram_html.py): HTML it would reject is answered 400 "can't
  parse entities", a text over 4,096 characters (after parsing) 400 "message is too long", a
  ``message_thread_id`` that is not a forum topic of the chat (the General topic included: it
  takes none) 400 "message thread not found". What the bot posted is kept as Telegram shows it
  (plain text and entities), with its text after every edit (:attr:`FakeTelegram.messages`).
* ``sendMessageDraft`` (Bot API 9.3+): a private chat only (400 otherwise), ``draft_id`` not
  zero, parsed like ``sendMessage``; each draft shown is kept (:attr:`FakeTelegram.drafts`)
  and none of them is a message. ``sendChatAction`` calls are kept in
  :attr:`FakeTelegram.actions`.

People speak through :meth:`message`, :meth:`edit` (an ``edited_message``), and
:meth:`push`; an update is queued for ``getUpdates``, or POSTed to the webhook when one is set
(:meth:`deliver`, with the right, a wrong or no ``X-Telegram-Bot-Api-Secret-Token``).
:meth:`redeliver` hands out an update again with its ``update_id``, as Telegram does when it
never saw it confirmed (the poller restarted, the webhook answered late).

Faults: :meth:`rate_limit` (429 with ``parameters.retry_after``, for one chat or all),
:meth:`conflict` (409 on getUpdates: another poller), a wrong token gets 401 (getMe
included), :meth:`fail` any method with any status, and :meth:`drop_next_send_response`
accepts the next sendMessage, records the message, then closes the connection without an
answer; :attr:`FakeTelegram.faults` (animahub_kit/fakes/faults.py) decides for every send and
edit. A fake built with a fixed ``port`` can be started later (the platform down at start).

This module wires the pieces in animahub_kit/fakes/telegram/ (its docstring names them) behind
:class:`FakeTelegram`, and keeps the names tests import from here.
"""

from __future__ import annotations

import logging
from typing import Literal

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy, RateLimit
from animahub_kit.fakes.listener import Listener, Served
from animahub_kit.fakes.telegram import people
from animahub_kit.fakes.telegram.bot import Bot
from animahub_kit.fakes.telegram.files import MAX_FILE_BYTES, Files
from animahub_kit.fakes.telegram.messages import MAX_TEXT, Messages
from animahub_kit.fakes.telegram.objects import JSON, Chat, PostedMessage
from animahub_kit.fakes.telegram.state import ApiCall, FakeFile, TelegramState
from animahub_kit.fakes.telegram.updates import SECRET_HEADER, Updates
from animahub_kit.fakes.telegram.wire import Method, Wire
from animahub_kit.fakes.telegram_html import EntityError, parse, u16

# what tests import from here; the names this module had before it was split stay importable
__all__ = [
    "JSON",
    "MAX_FILE_BYTES",
    "MAX_TEXT",
    "SECRET_HEADER",
    "ApiCall",
    "Chat",
    "EntityError",
    "FakeFile",
    "FakeTelegram",
    "FaultPolicy",
    "Listener",
    "PostedMessage",
    "RateLimit",
    "Served",
    "log",
    "parse",
    "u16",
]

log = logging.getLogger(__name__)


class FakeTelegram(Served):
    """The fake Telegram: what it holds is its `state` (animahub_kit/fakes/telegram/state.py), read
    and changed here through the names tests use; the wire and the method handlers are
    animahub_kit/fakes/telegram/'s, wired to the routes in `start`."""

    def __init__(
        self,
        *,
        token: str = "123456:TEST-TOKEN",
        bot_id: int = 123456,
        username: str = "anima_test_bot",
        port: int = 0,
    ) -> None:
        self.state = TelegramState(token, bot_id, username)
        self._listener = Listener(port)
        self._updates = Updates(self.state)
        self._messages = Messages(self.state)
        self._files = Files(self.state)
        self._bot = Bot(self.state)
        self._wire = Wire(self.state, self._methods(), self._updates.get_updates)

    def _methods(self) -> dict[str, Method]:
        """The Bot API methods by name, all but getUpdates (the wire gives it to the long poll)."""
        bot, updates, messages, files = self._bot, self._updates, self._messages, self._files
        return {
            "getMe": bot.get_me,
            "deleteWebhook": updates.delete_webhook,
            "setWebhook": updates.set_webhook,
            "getWebhookInfo": updates.webhook_info,
            "setMyCommands": bot.set_commands,
            "getMyCommands": bot.get_commands,
            "sendChatAction": messages.chat_action,
            "getFile": files.get_file,
            "sendMessage": messages.send_message,
            "sendMessageDraft": messages.send_draft,
            "editMessageText": messages.edit_message,
        }

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._wire.api)
        app.router.add_get("/file/bot{token}/{path:.*}", self._files.download)
        await self._listener.serve(app, shutdown_timeout=0.5)
        self._updates.open()
        return self

    async def stop(self) -> None:
        await self._updates.close()
        await self._listener.close()

    @property
    def base_url(self) -> str:
        """What `[telegram] api_url` names: the Bot API root (`<url>/bot<token>/<method>`)."""
        return self.url

    # what it holds (the state's; `faults` and `webhook_target` can be set) ---------------

    @property
    def token(self) -> str:
        return self.state.token

    @property
    def bot(self) -> dict[str, object]:
        return self.state.bot

    @property
    def users(self) -> dict[int, JSON]:
        return self.state.users

    @property
    def chats(self) -> dict[int, Chat]:
        return self.state.chats

    @property
    def topics(self) -> dict[int, set[int]]:
        return self.state.topics

    @property
    def calls(self) -> list[ApiCall]:
        return self.state.calls

    @property
    def messages(self) -> list[PostedMessage]:
        return self.state.messages

    @property
    def drafts(self) -> list[tuple[int, int, str]]:
        return self.state.drafts

    @property
    def actions(self) -> list[tuple[int, str]]:
        return self.state.actions

    @property
    def commands(self) -> list[JSON]:
        return self.state.commands

    @property
    def webhook_url(self) -> str:
        return self.state.webhook_url

    @property
    def webhook_secret(self) -> str:
        return self.state.webhook_secret

    @property
    def webhook_target(self) -> str:
        return self.state.webhook_target

    @webhook_target.setter
    def webhook_target(self, value: str) -> None:
        self.state.webhook_target = value

    @property
    def deliveries(self) -> list[tuple[int, int]]:
        return self.state.deliveries

    @property
    def files(self) -> dict[str, FakeFile]:
        return self.state.files

    @property
    def downloads(self) -> list[str]:
        return self.state.downloads

    @property
    def confirmed(self) -> int:
        return self.state.confirmed

    @property
    def faults(self) -> FaultPolicy | None:
        return self.state.faults

    @faults.setter
    def faults(self, value: FaultPolicy | None) -> None:
        self.state.faults = value

    # the world -------------------------------------------------------------------------

    def add_user(self, user_id: int, first_name: str, username: str = "") -> JSON:
        return self.state.add_user(user_id, first_name, username)

    def add_chat(self, chat_id: int, kind: str, title: str, *, forum: bool = False) -> Chat:
        return self.state.add_chat(chat_id, kind, title, forum=forum)

    def add_topic(self, chat_id: int, topic_id: int) -> None:
        self.state.add_topic(chat_id, topic_id)

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
        self.state.add_file(file_id, data, stated_size=stated_size, content_length=content_length)

    def next_message_id(self, chat_id: int) -> int:
        return self.state.next_message_id(chat_id)

    # fault injection ------------------------------------------------------------------

    def rate_limit(
        self, method: str, times: int, retry_after: float, chat_id: int | None = None
    ) -> None:
        """Answer the next `times` calls of `method` (to `chat_id` only, if given) with 429."""
        self._wire.rate_limit(method, times, retry_after, chat_id)

    def conflict(self, times: int = 1) -> None:
        """The next `times` getUpdates calls end in 409, as when another poller runs."""
        self._updates.conflict(times)

    def fail(self, method: str, status: int, description: str, times: int = 1) -> None:
        self._wire.fail(method, status, description, times)

    def drop_next_send_response(self) -> None:
        """Accept the next sendMessage and record it, then close without answering."""
        self._wire.drop_next = True

    # what the fake saw -------------------------------------------------------------------

    @property
    def overlaps(self) -> int:
        """Long polls ended with 409 by another one that came while they waited: two
        pollers on one bot."""
        return self._updates.overlaps

    def calls_of(self, method: str) -> list[ApiCall]:
        return self.state.calls_of(method)

    # people speaking -----------------------------------------------------------------

    def message(
        self,
        user_id: int,
        chat_id: int,
        text: str = "",
        *,
        thread: int | None = None,
        reply_to: JSON | None = None,
        extra: JSON | None = None,
        caption: bool = False,
    ) -> JSON:
        """The Message object Telegram builds for `text` (with mention and command
        entities found as Telegram finds them); `caption` puts the text in `caption`."""
        return people.message(
            self.state,
            user_id,
            chat_id,
            text,
            thread=thread,
            reply_to=reply_to,
            extra=extra,
            caption=caption,
        )

    def edited(self, original: JSON, text: str) -> JSON:
        return people.edited(self.state, original, text)

    def bot_message_json(self, message: PostedMessage) -> JSON:
        """One of the bot's messages as it appears in `reply_to_message`."""
        return self._messages.as_json(message)

    def update(self, kind: str, payload: JSON) -> JSON:
        return self._updates.update(kind, payload)

    async def push(self, kind: str, payload: JSON) -> JSON:
        """A new update: POSTed to the webhook when one is set, else queued for getUpdates."""
        return await self._updates.push(kind, payload)

    async def redeliver(self, update_id: int) -> None:
        """The same update again (same update_id), as if its confirmation was lost."""
        await self._updates.redeliver(update_id)

    async def deliver(self, update: JSON, *, secret: str | None = None) -> int:
        """POST an update to the webhook with the secret header (`secret=""`: none at all,
        any other string: that one instead of the registered secret); the hub's status."""
        return await self._updates.deliver(update, secret=secret)

    def pending(self) -> list[JSON]:
        """Updates queued for getUpdates and not yet confirmed."""
        return self._updates.pending()
