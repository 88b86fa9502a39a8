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
  Telegram does (tests/fakes/telegram_html.py): HTML it would reject is answered 400 "can't
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
answer; :attr:`FakeTelegram.faults` (tests/fakes/faults.py) decides for every send and
edit. A fake built with a fixed ``port`` can be started later (the platform down at start).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
from aiohttp import web

from tests.fakes.faults import FaultPolicy, RateLimit
from tests.fakes.listener import Listener, Served
from tests.fakes.telegram_html import EntityError, parse, u16

log = logging.getLogger(__name__)
JSON = dict[str, Any]
MAX_TEXT = 4096
MAX_FILE_BYTES = 20 * 1024 * 1024  # the largest file getFile hands out
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Parameters PTB sends JSON-encoded inside a form body.
_JSON_PARAMS = frozenset(
    {
        "reply_parameters",
        "commands",
        "scope",
        "entities",
        "link_preview_options",
        "allowed_updates",
        "reply_markup",
        "offset",
        "limit",
        "timeout",
        "chat_id",
        "message_id",
        "message_thread_id",
        "disable_notification",
        "drop_pending_updates",
        "max_connections",
    }
)


@dataclass(frozen=True)
class ApiCall:
    method: str
    params: JSON
    token: str
    at: float


@dataclass
class PostedMessage:
    """A message the bot posted, as Telegram keeps it (plain text plus entities)."""

    chat_id: int
    message_id: int
    text: str
    entities: list[JSON]
    html: str | None  # the text as sent, when it was sent with parse_mode HTML
    thread_id: int | None
    reply_to: int | None
    edits: int = 0
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Chat:
    id: int
    type: str  # private | group | supergroup | channel
    title: str = ""
    is_forum: bool = False

    def as_json(self, users: dict[int, JSON]) -> JSON:
        if self.type == "private":
            user = users.get(self.id, {"first_name": str(self.id)})
            return {"id": self.id, "type": "private", "first_name": user.get("first_name", "")}
        data: JSON = {"id": self.id, "type": self.type, "title": self.title}
        if self.is_forum:
            data["is_forum"] = True
        return data


@dataclass
class _Limit:
    remaining: int
    retry_after: float
    chat_id: int | None


@dataclass
class FakeFile:
    data: bytes
    stated_size: int | None  # what getFile says (None: it says nothing)
    content_length: bool  # False: the download is chunked, its length unannounced


@dataclass
class _Failure:
    remaining: int
    status: int
    description: str


class FakeTelegram(Served):
    def __init__(
        self,
        *,
        token: str = "123456:TEST-TOKEN",
        bot_id: int = 123456,
        username: str = "anima_test_bot",
        port: int = 0,
    ) -> None:
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
        self._listener = Listener(port)
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
        self._queue: list[JSON] = []
        self._forced: list[JSON] = []  # redeliveries, handed out whatever the offset
        self._sent: dict[int, JSON] = {}  # update_id -> the update
        self._arrived = asyncio.Event()
        self._poller: asyncio.Future[None] | None = None  # the long poll waiting now
        self._limits: dict[str, _Limit] = {}
        self._failures: dict[str, _Failure] = {}
        self._conflicts = 0
        self._drop_next = False
        self._update_ids = itertools.count(700_000_001)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._http: aiohttp.ClientSession | None = None
        # Consulted before every sendMessage and editMessageText (tests/fakes/faults.py).
        self.faults: FaultPolicy | None = None

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.*}", self._file)
        await self._listener.serve(app, shutdown_timeout=0.5)
        self._http = aiohttp.ClientSession()
        return self

    async def stop(self) -> None:
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
        if self._http is not None:
            await self._http.close()
            self._http = None
        await self._listener.close()

    @property
    def base_url(self) -> str:
        """What `[telegram] api_url` names: the Bot API root (`<url>/bot<token>/<method>`)."""
        return self.url

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

    # fault injection ------------------------------------------------------------------

    def rate_limit(
        self, method: str, times: int, retry_after: float, chat_id: int | None = None
    ) -> None:
        """Answer the next `times` calls of `method` (to `chat_id` only, if given) with 429."""
        self._limits[method] = _Limit(times, retry_after, chat_id)

    def conflict(self, times: int = 1) -> None:
        """The next `times` getUpdates calls end in 409, as when another poller runs."""
        self._conflicts = times

    def fail(self, method: str, status: int, description: str, times: int = 1) -> None:
        self._failures[method] = _Failure(times, status, description)

    def drop_next_send_response(self) -> None:
        """Accept the next sendMessage and record it, then close without answering."""
        self._drop_next = True

    # what the fake saw -------------------------------------------------------------------

    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    # the Bot API --------------------------------------------------------------------------

    async def _params(self, request: web.Request) -> JSON:
        params: JSON = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update({k: v for k, v in (await request.post()).items()})
        for key, value in list(params.items()):
            if key in _JSON_PARAMS and isinstance(value, str):
                with contextlib.suppress(ValueError):
                    params[key] = json.loads(value)
        return params

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        token = request.match_info["token"]
        params = await self._params(request)
        self.calls.append(ApiCall(method, params, token, time.monotonic()))
        if token != self.token:
            return _error(401, "Unauthorized")
        refused = self._refusal(method, params)
        if refused is not None:
            return refused
        if method == "getUpdates":
            return await self._get_updates(params)
        handler = _METHODS.get(method)
        if handler is None:
            return _error(404, "Not Found")
        try:
            result = handler(self, params)
        except _ApiError as exc:
            return _error(exc.status, exc.description)
        if method == "sendMessage" and self._drop_next:
            self._drop_next = False
            return await _dropped(request)
        return web.json_response({"ok": True, "result": result})

    def _refusal(self, method: str, params: JSON) -> web.Response | None:
        limit = self._limits.get(method)
        if limit is not None and limit.remaining > 0:
            chat = params.get("chat_id")
            if limit.chat_id is None or _as_int(chat) == limit.chat_id:
                limit.remaining -= 1
                return _error(
                    429,
                    f"Too Many Requests: retry after {limit.retry_after:g}",
                    {"retry_after": limit.retry_after},
                )
        failure = self._failures.get(method)
        if failure is not None and failure.remaining > 0:
            failure.remaining -= 1
            return _error(failure.status, failure.description)
        return self._injected(method, params)

    def _injected(self, method: str, params: JSON) -> web.Response | None:
        """What the fault policy makes of a send or an edit: Telegram's 429 (a whole number
        of seconds in `parameters.retry_after`) or a 5xx; None to carry it out."""
        if self.faults is None or method not in _SENDS:
            return None
        chat = str(_as_int(params.get("chat_id")) or "")
        fault = self.faults.decide("telegram", chat, method, whole_seconds=True)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            wait = int(fault.retry_after or 1)
            return _error(429, f"Too Many Requests: retry after {wait}", {"retry_after": wait})
        reason = "Bad Gateway" if fault.status == 502 else "Internal Server Error"
        return _error(fault.status, reason)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        file_id = request.match_info["path"].removeprefix("files/")
        self.downloads.append(file_id)
        file = self.files.get(file_id)
        if file is None:
            return web.Response(status=404, text="Not Found")
        if file.content_length:
            return web.Response(body=file.data, content_type="application/octet-stream")
        response = web.StreamResponse()
        response.content_type = "application/octet-stream"
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(file.data), 64 * 1024):
            await response.write(file.data[start : start + 64 * 1024])
        await response.write_eof()
        return response

    def _get_me(self, params: JSON) -> JSON:
        return dict(self.bot)

    def _delete_webhook(self, params: JSON) -> bool:
        self.webhook_url = ""
        self.webhook_secret = ""
        if params.get("drop_pending_updates") in (True, "true"):
            self._queue.clear()
        return True

    def _set_webhook(self, params: JSON) -> bool:
        url = str(params.get("url") or "")
        if url and not url.startswith(("https://", "http://")):
            raise _ApiError(400, "Bad Request: bad webhook: An HTTPS URL must be provided")
        self.webhook_url = url
        self.webhook_secret = str(params.get("secret_token") or "")
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
        return True

    def _webhook_info(self, params: JSON) -> JSON:
        return {"url": self.webhook_url, "pending_update_count": len(self._queue)}

    def _set_commands(self, params: JSON) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise _ApiError(400, "Bad Request: can't parse commands JSON object")
        self.commands = commands
        return True

    def _get_commands(self, params: JSON) -> list[JSON]:
        return list(self.commands)

    def _chat_action(self, params: JSON) -> bool:
        chat = self._chat(params)
        self.actions.append((chat.id, str(params.get("action") or "")))
        return True

    def _send_draft(self, params: JSON) -> bool:
        chat = self._chat(params)
        if chat.type != "private":
            raise _ApiError(400, "Bad Request: the chat is not a private chat")
        draft_id = _as_int(params.get("draft_id")) or 0
        if draft_id == 0:
            raise _ApiError(400, "Bad Request: draft_id must be non-zero")
        plain, _entities, _source = self._parsed(params)
        self.drafts.append((chat.id, draft_id, plain))
        return True

    def _get_file(self, params: JSON) -> JSON:
        file_id = str(params.get("file_id") or "")
        file = self.files.get(file_id)
        if file is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        if file.stated_size is not None and file.stated_size > MAX_FILE_BYTES:
            raise _ApiError(400, "Bad Request: file is too big")
        found: JSON = {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "file_path": f"files/{file_id}",
        }
        if file.stated_size is not None:
            found["file_size"] = file.stated_size
        return found

    def _chat(self, params: JSON) -> Chat:
        chat = self.chats.get(_as_int(params.get("chat_id")) or 0)
        if chat is None:
            raise _ApiError(400, "Bad Request: chat not found")
        return chat

    def _parsed(self, params: JSON) -> tuple[str, list[JSON], str | None]:
        text = str(params.get("text") or "")
        mode = str(params.get("parse_mode") or "")
        if mode.upper() == "HTML":
            try:
                parsed = parse(text)
            except EntityError as exc:
                raise _ApiError(400, str(exc)) from exc
            plain, entities, source = parsed.text, parsed.entities, text
        elif mode:
            raise _ApiError(400, f"Bad Request: unsupported parse_mode {mode}")
        else:
            plain, entities, source = text, [], None
        if not plain.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if u16(plain) > MAX_TEXT:
            raise _ApiError(400, "Bad Request: message is too long")
        return plain, entities, source

    def _send_message(self, params: JSON) -> JSON:
        chat = self._chat(params)
        thread = _as_int(params.get("message_thread_id"))
        if thread is not None and thread not in self.topics.get(chat.id, set()):
            raise _ApiError(400, "Bad Request: message thread not found")
        plain, entities, source = self._parsed(params)
        reply = params.get("reply_parameters")
        reply_to = _as_int(reply.get("message_id")) if isinstance(reply, dict) else None
        message = PostedMessage(
            chat.id, self.next_message_id(chat.id), plain, entities, source, thread, reply_to
        )
        self.messages.append(message)
        return self._message_json(message)

    def _edit_message(self, params: JSON) -> JSON:
        chat = self._chat(params)
        wanted = _as_int(params.get("message_id"))
        message = next(
            (m for m in self.messages if m.chat_id == chat.id and m.message_id == wanted), None
        )
        if message is None:
            raise _ApiError(400, "Bad Request: message to edit not found")
        plain, entities, source = self._parsed(params)
        if plain == message.text and entities == message.entities:
            raise _ApiError(
                400,
                "Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message",
            )
        message.history.append(message.text)
        message.text, message.entities, message.html = plain, entities, source
        message.edits += 1
        return {**self._message_json(message), "edit_date": int(time.time())}

    def _message_json(self, message: PostedMessage) -> JSON:
        chat = self.chats[message.chat_id]
        data: JSON = {
            "message_id": message.message_id,
            "from": {k: self.bot[k] for k in ("id", "is_bot", "first_name", "username")},
            "chat": chat.as_json(self.users),
            "date": int(time.time()),
            "text": message.text,
        }
        if message.entities:
            data["entities"] = message.entities
        if message.thread_id is not None:
            data["message_thread_id"] = message.thread_id
            data["is_topic_message"] = True
        return data

    async def _get_updates(self, params: JSON) -> web.Response:
        if self.webhook_url:
            return _error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        if self._conflicts > 0:
            self._conflicts -= 1
            return _error(409, _CONFLICT)
        if self._poller is not None and not self._poller.done():
            self._poller.set_exception(_Superseded())  # the earlier poll gets the 409
        offset = _as_int(params.get("offset")) or 0
        if offset > self.confirmed:
            self.confirmed = offset
            self._queue = [u for u in self._queue if u["update_id"] >= offset]
        limit = min(100, _as_int(params.get("limit")) or 100)
        timeout = float(_as_int(params.get("timeout")) or 0)
        if not self._queue and not self._forced and timeout > 0:
            waiting = asyncio.get_running_loop().create_future()
            self._poller = waiting
            self._arrived.clear()
            woke = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait({waiting, woke}, timeout=timeout, return_when="FIRST_COMPLETED")
            finally:
                woke.cancel()
            if waiting.done() and not waiting.cancelled() and waiting.exception() is not None:
                return _error(409, _CONFLICT)
            if not waiting.done():
                waiting.cancel()
            if self.webhook_url:
                return _error(409, "Conflict: terminated by setWebhook request")
        result = (self._forced + self._queue)[:limit]
        self._forced = self._forced[len(result) :]
        return web.json_response({"ok": True, "result": result})

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
        chat = self.chats[chat_id]
        message: JSON = {
            "message_id": self.next_message_id(chat_id),
            "from": self.users[user_id],
            "chat": chat.as_json(self.users),
            "date": int(time.time()),
        }
        key = "caption" if caption else "text"
        if text or not caption:
            message[key] = text
            found = _entities(text, self.users)
            if found:
                message["caption_entities" if caption else "entities"] = found
        if thread is not None:
            message["message_thread_id"] = thread
            if chat.is_forum:
                message["is_topic_message"] = True
                self.add_topic(chat_id, thread)
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        message.update(extra or {})
        return message

    def edited(self, original: JSON, text: str) -> JSON:
        edited = {**original, "text": text, "edit_date": int(time.time())}
        found = _entities(text, self.users)
        edited.pop("text_entities", None)
        edited.pop("entities", None)
        if found:
            edited["entities"] = found
        return edited

    def bot_message_json(self, message: PostedMessage) -> JSON:
        """One of the bot's messages as it appears in `reply_to_message`."""
        return self._message_json(message)

    def update(self, kind: str, payload: JSON) -> JSON:
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: payload}
        self._sent[update_id] = update
        return update

    async def push(self, kind: str, payload: JSON) -> JSON:
        """A new update: POSTed to the webhook when one is set, else queued for getUpdates."""
        update = self.update(kind, payload)
        if self.webhook_url:
            await self.deliver(update)
        else:
            self._queue.append(update)
            self._arrived.set()
        return update

    async def redeliver(self, update_id: int) -> None:
        """The same update again (same update_id), as if its confirmation was lost."""
        update = self._sent[update_id]
        if self.webhook_url:
            await self.deliver(update)
        else:
            self._forced.append(update)
            self._arrived.set()

    async def deliver(self, update: JSON, *, secret: str | None = None) -> int:
        """POST an update to the webhook with the secret header (`secret=""`: none at all,
        any other string: that one instead of the registered secret); the hub's status."""
        assert self.webhook_url and self._http is not None
        url = self.webhook_target or self.webhook_url
        token = self.webhook_secret if secret is None else secret
        headers = {"Content-Type": "application/json"}
        if token:
            headers[SECRET_HEADER] = token
        async with self._http.post(url, data=json.dumps(update), headers=headers) as r:
            status = r.status
        self.deliveries.append((update["update_id"], status))
        return status

    def pending(self) -> list[JSON]:
        """Updates queued for getUpdates and not yet confirmed."""
        return [*self._forced, *self._queue]


class _ApiError(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


class _Superseded(Exception):
    """A long poll ended by a newer one."""


_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)


def _error(status: int, description: str, parameters: JSON | None = None) -> web.Response:
    body: JSON = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    transport = request.transport
    if transport is not None:
        transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def _entities(text: str, users: dict[int, JSON]) -> list[JSON]:
    """`@username` mentions and a leading `/command`, with UTF-16 offsets, as Telegram sets."""
    found: list[JSON] = []
    index = 0
    while index < len(text):
        char = text[index]
        starts_word = index == 0 or not (text[index - 1].isalnum() or text[index - 1] == "_")
        if char in "@/" and starts_word:
            end = index + 1
            while end < len(text) and (text[end].isalnum() or text[end] in "_@"):
                end += 1
            if char == "/" and index == 0 and end > 1:
                found.append({"type": "bot_command", "offset": 0, "length": u16(text[:end])})
            elif char == "@" and end - index > 1:
                offset = u16(text[:index])
                found.append({"type": "mention", "offset": offset, "length": end - index})
            index = end
        else:
            index += 1
    return found


_SENDS = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})
_METHODS: dict[str, Any] = {
    "getMe": FakeTelegram._get_me,
    "deleteWebhook": FakeTelegram._delete_webhook,
    "setWebhook": FakeTelegram._set_webhook,
    "getWebhookInfo": FakeTelegram._webhook_info,
    "setMyCommands": FakeTelegram._set_commands,
    "getMyCommands": FakeTelegram._get_commands,
    "sendChatAction": FakeTelegram._chat_action,
    "getFile": FakeTelegram._get_file,
    "sendMessage": FakeTelegram._send_message,
    "sendMessageDraft": FakeTelegram._send_draft,
    "editMessageText": FakeTelegram._edit_message,
}
