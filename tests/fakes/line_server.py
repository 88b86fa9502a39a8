"""A local fake of the LINE Messaging API that the real line-bot-sdk talks to (DESIGN §9).

It runs in the test's event loop (aiohttp.web on 127.0.0.1) and speaks LINE's wire protocol:

* ``POST /v2/bot/message/reply``: a reply token is valid once, for ``reply_token_ttl_s``
  after its webhook (LINE: about a minute), and only for the chat its event came from;
  up to 5 message objects, 5,000 characters a text. Anything else: 400 "Invalid reply token".
* ``POST /v2/bot/message/push``: to a user, group or room; with ``X-Line-Retry-Key`` (a UUID)
  a repeat of an accepted key answers 409 with the first request's ``sentMessages`` and the
  ``X-Line-Accepted-Request-Id`` header, and sends nothing.
* ``GET /v2/bot/profile/{userId}``, ``GET /v2/bot/group/{groupId}/member/{userId}``,
  ``GET /v2/bot/room/{roomId}/member/{userId}``, ``GET /v2/bot/info`` and
  ``POST /v2/bot/chat/loading/start`` (1:1 chats only).
* ``GET /v2/bot/message/{messageId}/content`` (LINE serves it on its api-data host; here the
  same server): the content added with :meth:`FakeLine.add_content`, 404 for any other id,
  202 while :meth:`add_content` says it is still being prepared; recorded like every call
  (``calls_to("content")``), so a test can check that nothing was downloaded.
* The webhook as LINE's side of it: :meth:`FakeLine.deliver` POSTs ``{"destination",
  "events"}`` to the hub's ``webhook_url``, signed with the channel secret (``X-Line-Signature``:
  base64 HMAC-SHA256 of the body); :meth:`FakeLine.redeliver` sends an event again with
  ``deliveryContext.isRedelivery: true`` and the same ``webhookEventId``; :meth:`forged` and
  :meth:`unsigned` are the rejection cases; :meth:`FakeLine.deliver_until_accepted` is LINE's
  webhook redelivery: an event not answered 2xx in time is sent again, marked redelivered.

Every request is recorded (:attr:`FakeLine.calls`), and every message the bot sent is kept in
:attr:`FakeLine.messages`. Faults: :meth:`rate_limit` (an ordinary 429), :meth:`exhaust_quota`
(the monthly-limit 429 on push), a wrong access token gets 401, :meth:`drop_next_send_response`
accepts the next push or reply, records it, then closes the connection without answering;
:meth:`fail_next_reply` answers the next reply 5xx, having delivered it or not (LINE says a
5xx may have been delivered);
:attr:`FakeLine.faults` (tests/fakes/faults.py) decides for every reply and push.
A fake built with a fixed ``port`` can be started later (the platform down at hub start).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.faults import FaultPolicy, RateLimit
from tests.fakes.listener import Listener, Served

log = logging.getLogger(__name__)
JSON = dict[str, Any]
MAX_TEXT = 5000
MAX_MESSAGES = 5
QUOTA_MESSAGE = "You have reached your monthly limit."
RATE_MESSAGE = "The API rate limit has been exceeded. Try again later."
AUTH_MESSAGE = (
    "Authentication failed. Confirm that the access token in the authorization header is valid."
)
_ULID = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def sign(secret: str, body: bytes) -> str:
    """LINE's `X-Line-Signature` for `body`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


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
class _Token:
    chat: str
    issued: float
    used: bool = False


@dataclass
class _Limit:
    remaining: int
    retry_after: float | None
    paths: tuple[str, ...]


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


class FakeLine(Served):
    def __init__(
        self,
        *,
        channel_secret: str = "fake-channel-secret",
        access_token: str = "fake-channel-access-token",
        bot_user_id: str = "U" + "b0" * 16,
        bot_name: str = "AnimaHub",
        port: int = 0,
        reply_token_ttl_s: float = 60.0,
    ) -> None:
        self.channel_secret = channel_secret
        self.access_token = access_token
        self.bot_user_id = bot_user_id
        self.bot_name = bot_name
        self._listener = Listener(port)
        self.reply_token_ttl_s = reply_token_ttl_s
        self.users: dict[str, JSON] = {}
        self.chats: dict[str, Chat] = {}
        self.calls: list[ApiCall] = []
        self.messages: list[SentMessage] = []
        self.loading: list[JSON] = []
        self.contents: dict[str, Content] = {}  # message id -> what its content is
        self.deliveries: list[Delivery] = []
        self.webhook_url: str | None = None
        self._tokens: dict[str, _Token] = {}
        self._accepted: dict[str, tuple[str, list[JSON]]] = {}  # retry key -> request id, ids
        self._limits: list[_Limit] = []
        self._quota_exhausted = False
        self._drop_next = False
        self._failing_replies: list[tuple[int, bool]] = []  # (status, delivered), in order
        self._events: dict[str, JSON] = {}  # webhookEventId -> the event as first sent
        self._ids = itertools.count(600_000_000_000_000_001)
        self._http: aiohttp.ClientSession | None = None
        # Consulted before every reply and push (tests/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeLine:
        app = web.Application()
        app.router.add_post("/v2/bot/message/reply", self._reply)
        app.router.add_post("/v2/bot/message/push", self._push)
        app.router.add_get("/v2/bot/profile/{user}", self._profile)
        app.router.add_get("/v2/bot/group/{chat}/member/{user}", self._member)
        app.router.add_get("/v2/bot/room/{chat}/member/{user}", self._member)
        app.router.add_get("/v2/bot/info", self._info)
        app.router.add_post("/v2/bot/chat/loading/start", self._loading)
        app.router.add_get("/v2/bot/message/{message}/content", self._content)
        await self._listener.serve(app)
        if self._http is None:
            self._http = aiohttp.ClientSession()
        return self

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        await self._listener.close()

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

    # fault injection ---------------------------------------------------------------------

    def rate_limit(
        self, times: int, retry_after: float | None = None, paths: tuple[str, ...] = ()
    ) -> None:
        """Answer the next `times` sends (reply and push, or only `paths`, e.g. ("push",))
        with an ordinary 429. LINE sends no Retry-After; the fake adds one when given."""
        self._limits.append(_Limit(times, retry_after, paths or ("reply", "push")))

    def exhaust_quota(self, exhausted: bool = True) -> None:
        """Every push answers 429 "You have reached your monthly limit." (replies are free)."""
        self._quota_exhausted = exhausted

    def drop_next_send_response(self) -> None:
        """Accept the next push or reply and record it, then close without answering."""
        self._drop_next = True

    def fail_next_reply(self, status: int = 503, *, delivered: bool = False) -> None:
        """Answer the next reply (with a valid token) `status`; with `delivered`, after
        sending it and spending its token, as LINE may."""
        self._failing_replies.append((status, delivered))

    def expire_reply_tokens(self) -> None:
        for token in self._tokens.values():
            token.issued = 0.0

    # what the fake saw -------------------------------------------------------------------

    def calls_to(self, endpoint: str) -> list[ApiCall]:
        """Requests to `reply`, `push`, `profile`, `member`, `info` or `loading`."""
        return [c for c in self.calls if _endpoint(c.path) == endpoint]

    def texts(self) -> list[str]:
        return [m.text for m in self.messages]

    # Messaging API -----------------------------------------------------------------------

    def _record(self, request: web.Request, body: JSON | None) -> int:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = request.headers.get("Authorization", "")
        self.calls.append(ApiCall(request.method, request.path, body, headers))
        return len(self.calls) - 1

    def _answer(self, index: int, body: JSON, status: int = 200, **headers: str) -> web.Response:
        call = self.calls[index]
        self.calls[index] = ApiCall(call.method, call.path, call.body, call.headers, status)
        request_id = str(uuid.uuid4())
        return web.json_response(
            body, status=status, headers={"X-Line-Request-Id": request_id, **headers}
        )

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.access_token}"

    async def _body(self, request: web.Request) -> JSON | None:
        try:
            data = await request.json()
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    def _refusal(self, index: int, request: web.Request, kind: str) -> web.Response | None:
        """401, 429 or the quota 429 before anything is sent."""
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        for limit in self._limits:
            if limit.remaining > 0 and kind in limit.paths:
                limit.remaining -= 1
                extra = {}
                if limit.retry_after is not None:
                    extra["Retry-After"] = f"{limit.retry_after:g}"
                return self._answer(index, {"message": RATE_MESSAGE}, 429, **extra)
        if kind == "push" and self._quota_exhausted:
            return self._answer(index, {"message": QUOTA_MESSAGE}, 429)
        return self._injected(index, kind)

    def _injected(self, index: int, kind: str) -> web.Response | None:
        """What the fault policy makes of a reply or push: LINE's ordinary 429 (it names no
        wait) or a 5xx; None to carry it out. Nothing is sent either way."""
        if self.faults is None:
            return None
        body = self.calls[index].body or {}
        chat = str(body.get("to") or "")
        token = self._tokens.get(str(body.get("replyToken") or ""))
        if kind == "reply" and token is not None:
            chat = token.chat
        fault = self.faults.decide("line", chat, kind, names_wait=False)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return self._answer(index, {"message": RATE_MESSAGE}, 429, **extra)
        return self._answer(index, {"message": "Internal server error"}, fault.status)

    @staticmethod
    def _bad_messages(body: JSON) -> str | None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not 1 <= len(messages) <= MAX_MESSAGES:
            return "Size must be between 1 and 5"
        for message in messages:
            if not isinstance(message, dict) or message.get("type") != "text":
                return "The property, 'messages[].type', in the request body is invalid"
            text = message.get("text")
            if not isinstance(text, str) or not text:
                return "Must not be empty"
            if utf16_len(text) > MAX_TEXT:
                return "Length must be between 0 and 5000"
        return None

    def _store(self, index: int, to: str, body: JSON, via: str, key: str | None) -> list[JSON]:
        sent = []
        for message in body["messages"]:
            message_id = str(next(self._ids))
            self.messages.append(SentMessage(message_id, to, message["text"], via, key, index))
            sent.append({"id": message_id, "quoteToken": secrets.token_urlsafe(16)})
        return sent

    async def _dropped(self, index: int, request: web.Request) -> web.Response:
        """The request was accepted; its answer never reaches the caller."""
        self._drop_next = False
        transport = request.transport
        if transport is not None:
            transport.close()
        await asyncio.sleep(0.05)
        return web.Response(status=200)

    async def _reply(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        index = self._record(request, body)
        refused = self._refusal(index, request, "reply")
        if refused is not None:
            return refused
        if body is None:
            return self._answer(index, {"message": "The request body has 1 error(s)"}, 400)
        token = self._tokens.get(str(body.get("replyToken") or ""))
        fresh = token is not None and not token.used
        if token is None or not fresh or time.monotonic() - token.issued > self.reply_token_ttl_s:
            return self._answer(index, {"message": "Invalid reply token"}, 400)
        problem = self._bad_messages(body)
        if problem is not None:
            return self._answer(index, {"message": problem}, 400)
        if self._failing_replies:
            status, delivered = self._failing_replies.pop(0)
            if delivered:
                token.used = True
                self._store(index, token.chat, body, "reply", None)
            return self._answer(index, {"message": "Internal server error"}, status)
        token.used = True
        sent = self._store(index, token.chat, body, "reply", None)
        if self._drop_next:
            return await self._dropped(index, request)
        return self._answer(index, {"sentMessages": sent})

    async def _push(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        index = self._record(request, body)
        refused = self._refusal(index, request, "push")
        if refused is not None:
            return refused
        if body is None:
            return self._answer(index, {"message": "The request body has 1 error(s)"}, 400)
        key = request.headers.get("X-Line-Retry-Key")
        if key is not None:
            try:
                uuid.UUID(key)
            except ValueError:
                return self._answer(index, {"message": "The retry key is invalid"}, 400)
            if key in self._accepted:
                request_id, sent = self._accepted[key]
                return self._answer(
                    index,
                    {"message": "The retry key is already accepted", "sentMessages": sent},
                    409,
                    **{"X-Line-Accepted-Request-Id": request_id},
                )
        to = str(body.get("to") or "")
        if to not in self.chats:
            return self._answer(index, {"message": "The property, 'to', is invalid"}, 400)
        problem = self._bad_messages(body)
        if problem is not None:
            return self._answer(index, {"message": problem}, 400)
        sent = self._store(index, to, body, "push", key)
        if key is not None:
            self._accepted[key] = (str(uuid.uuid4()), sent)
        if self._drop_next:
            return await self._dropped(index, request)
        return self._answer(index, {"sentMessages": sent})

    async def _profile(self, request: web.Request) -> web.Response:
        index = self._record(request, None)
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        user = self.users.get(request.match_info["user"])
        if user is None:
            return self._answer(index, {"message": "Not found"}, 404)
        return self._answer(index, user)

    async def _member(self, request: web.Request) -> web.Response:
        index = self._record(request, None)
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        chat = self.chats.get(request.match_info["chat"])
        user_id = request.match_info["user"]
        user = self.users.get(user_id)
        if chat is None or user is None or user_id not in chat.members:
            return self._answer(index, {"message": "Not found"}, 404)
        keep = ("userId", "displayName", "pictureUrl")
        return self._answer(index, {k: user[k] for k in keep})

    async def _info(self, request: web.Request) -> web.Response:
        index = self._record(request, None)
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        return self._answer(
            index,
            {
                "userId": self.bot_user_id,
                "basicId": "@123fake",
                "displayName": self.bot_name,
                "chatMode": "bot",
                "markAsReadMode": "auto",
            },
        )

    async def _loading(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        index = self._record(request, body)
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        chat = self.chats.get(str((body or {}).get("chatId") or ""))
        if chat is None or chat.kind != "user":
            return self._answer(index, {"message": "The property, 'chatId', is invalid"}, 400)
        self.loading.append(dict(body or {}))
        return self._answer(index, {}, 202)

    async def _content(self, request: web.Request) -> web.StreamResponse:
        index = self._record(request, None)
        if not self._authorized(request):
            return self._answer(index, {"message": AUTH_MESSAGE}, 401)
        content = self.contents.get(request.match_info["message"])
        if content is None:
            return self._answer(index, {"message": "Not found"}, 404)
        if content.preparing:
            return self._answer(index, {}, 202)
        self._answer(index, {})  # records the status
        if content.content_length:
            return web.Response(body=content.data, content_type=content.content_type)
        response = web.StreamResponse(headers={"Content-Type": content.content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(content.data), 64 * 1024):
            await response.write(content.data[start : start + 64 * 1024])
        await response.write_eof()
        return response

    # webhook events: people speaking -----------------------------------------------------

    def _source(self, user: str, chat: str | None) -> JSON:
        if chat is None:
            return {"type": "user", "userId": user}
        kind = self.chats[chat].kind
        return {"type": kind, f"{kind}Id": chat, "userId": user}

    def _event(self, user: str, chat: str | None, message: JSON) -> JSON:
        token = secrets.token_hex(16)
        self._tokens[token] = _Token(chat or user, time.monotonic())
        return {
            "type": "message",
            "message": message,
            "webhookEventId": "01" + "".join(secrets.choice(_ULID) for _ in range(24)),
            "deliveryContext": {"isRedelivery": False},
            "timestamp": int(time.time() * 1000),
            "source": self._source(user, chat),
            "replyToken": token,
            "mode": "active",
        }

    def text_event(
        self,
        user: str,
        text: str,
        *,
        chat: str | None = None,
        mention_bot: bool = False,
        mention_users: tuple[str, ...] = (),
    ) -> JSON:
        """A text message `user` wrote, in a 1:1 chat or in the group or room `chat`;
        `mention_bot` prefixes `@<bot name> ` as LINE's mention object, `mention_users`
        appends `@<display name>` for each (LINE indexes them in UTF-16 code units)."""
        mentionees: list[JSON] = []
        if mention_bot:
            label = f"@{self.bot_name}"
            mentionees.append(
                {
                    "index": 0,
                    "length": utf16_len(label),
                    "type": "user",
                    "userId": self.bot_user_id,
                    "isSelf": True,
                }
            )
            text = f"{label} {text}"
        for other in mention_users:
            label = "@" + str(self.users[other]["displayName"])
            text = f"{text} "
            mentionees.append(
                {
                    "index": utf16_len(text),
                    "length": utf16_len(label),
                    "type": "user",
                    "userId": other,
                    "isSelf": False,
                }
            )
            text += label
        message: JSON = {
            "type": "text",
            "id": str(next(self._ids)),
            "quoteToken": secrets.token_urlsafe(16),
            "text": text,
        }
        if mentionees:
            message["mention"] = {"mentionees": mentionees}
        return self._event(user, chat, message)

    def media_event(
        self,
        user: str,
        kind: str,
        *,
        chat: str | None = None,
        file_name: str = "",
        size: int = 0,
    ) -> JSON:
        """An image, video, audio or file message (its content stays on LINE's side)."""
        message: JSON = {"type": kind, "id": str(next(self._ids))}
        if kind == "file":
            message.update(fileName=file_name or "file.bin", fileSize=size)
        else:
            message["contentProvider"] = {"type": "line"}
        if kind in ("image", "video"):
            message["quoteToken"] = secrets.token_urlsafe(16)
        if kind in ("video", "audio"):
            message["duration"] = 1000
        return self._event(user, chat, message)

    def sticker_event(self, user: str, *, chat: str | None = None) -> JSON:
        message = {
            "type": "sticker",
            "id": str(next(self._ids)),
            "quoteToken": secrets.token_urlsafe(16),
            "packageId": "446",
            "stickerId": "1988",
            "stickerResourceType": "STATIC",
        }
        return self._event(user, chat, message)

    # webhook delivery --------------------------------------------------------------------

    def payload(self, events: list[JSON]) -> bytes:
        return json.dumps({"destination": self.bot_user_id, "events": events}).encode()

    async def post_webhook(self, raw: bytes, signature: str | None) -> Delivery:
        assert self.webhook_url is not None, "webhook_url is not set"
        if self._http is None:
            self._http = aiohttp.ClientSession()
        headers = {"Content-Type": "application/json"}
        if signature is not None:
            headers["X-Line-Signature"] = signature
        async with self._http.post(self.webhook_url, data=raw, headers=headers) as resp:
            delivery = Delivery(resp.status, await resp.text())
        self.deliveries.append(delivery)
        return delivery

    async def deliver(self, *events: JSON) -> Delivery:
        """POST the events in one signed webhook request, as LINE does."""
        for event in events:
            self._events.setdefault(event["webhookEventId"], event)
        raw = self.payload(list(events))
        return await self.post_webhook(raw, sign(self.channel_secret, raw))

    async def deliver_until_accepted(
        self, event: JSON, *, retry_delays_s: tuple[float, ...], timeout_s: float = 2.0
    ) -> Delivery:
        """Deliver one event the way LINE does with webhook redelivery on: a signed POST
        that must be answered 2xx within `timeout_s`; a refused connection, an error status
        or no answer in time make LINE send it again later (`isRedelivery: true`, the same
        `webhookEventId`) after each of `retry_delays_s`. When they run out the event is
        lost (the last failed delivery is returned). LINE publishes no schedule; tests pass
        a compressed one."""
        self._events.setdefault(event["webhookEventId"], event)
        last = Delivery(0, "not delivered")
        for attempt in range(len(retry_delays_s) + 1):
            if attempt:
                await asyncio.sleep(retry_delays_s[attempt - 1])
                body = json.loads(json.dumps(event))
                body["deliveryContext"] = {"isRedelivery": True}
                raw = self.payload([body])
            else:
                raw = self.payload([event])
            try:
                last = await asyncio.wait_for(
                    self.post_webhook(raw, sign(self.channel_secret, raw)), timeout_s
                )
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                last = Delivery(0, f"{type(exc).__name__}: {exc}")
                self.deliveries.append(last)
                continue
            if 200 <= last.status < 300:
                return last
        return last

    async def redeliver(self, webhook_event_id: str) -> Delivery:
        """The same event again, marked as a redelivery (its reply token is long gone)."""
        event = json.loads(json.dumps(self._events[webhook_event_id]))
        event["deliveryContext"] = {"isRedelivery": True}
        token = self._tokens.get(event.get("replyToken", ""))
        if token is not None:
            token.used = True
        raw = self.payload([event])
        return await self.post_webhook(raw, sign(self.channel_secret, raw))

    async def forged(self, *events: JSON) -> Delivery:
        raw = self.payload(list(events))
        return await self.post_webhook(raw, sign("not-the-channel-secret", raw))

    async def unsigned(self, *events: JSON) -> Delivery:
        return await self.post_webhook(self.payload(list(events)), None)


def _endpoint(path: str) -> str:
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
