"""A local fake of Discord: the REST API under ``/api/v10`` and the gateway WebSocket.

discord.py talks to it unmodified once ``discord.http.Route.BASE`` is ``fake.api_url`` and
``DiscordWebSocket.DEFAULT_GATEWAY`` is ``fake.gateway_url`` (the adapter sets both from its
settings). It speaks the wire format closely enough for the library's own parsers:

* REST replies carry exactly ``Content-Type: application/json`` (discord.py compares the
  header verbatim) and the ``X-RateLimit-*`` headers Discord sends; an injected 429 also has
  ``Via`` (without it discord.py takes a 429 for a Cloudflare ban and gives up at once),
  ``Retry-After`` and the JSON body ``{"message", "retry_after", "global"}``.
* The gateway sends plain JSON text frames (discord.py asks for ``compress=zlib-stream``
  but reads text frames as they are): HELLO, heartbeat ACKs, READY and a GUILD_CREATE for
  the test guild after IDENTIFY, then whatever a test dispatches.
* Messages the bots post are dispatched back as MESSAGE_CREATE / MESSAGE_UPDATE, as Discord
  does, so an adapter must recognise and ignore its own messages.
* A message is dispatched only to the sessions open when it is sent: as on Discord, a new
  session does not replay what it missed. It stays in the channel's history,
  ``GET /channels/{id}/messages`` (``after``/``before``/``limit``, newest first), and the
  channel's ``last_message_id`` follows it.

Everything is recorded: requests, IDENTIFY payloads, posted messages (content after edits,
edit count, message_reference, nonce), command overwrites and interaction responses. Tests
start and stop it in their own event loop: ``await fake.start()`` / ``await fake.stop()``;
one built with a fixed ``port`` can be started later (Discord down at hub start). A token it
does not know gets 401. :meth:`FakeDiscord.drop_next_send_response` creates the next message
posted and then closes the connection without answering; a repeated post with the same
``nonce`` and ``enforce_nonce`` is answered with the message already created, as Discord does.
:attr:`FakeDiscord.faults` (tests/fakes/faults.py) decides for every post and edit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.faults import FaultPolicy, RateLimit
from tests.fakes.listener import HOST, Listener

JSON = dict[str, Any]
API = "/api/v10"
DISCORD_EPOCH_MS = 1_420_070_400_000
MESSAGE_CONTENT_INTENT = 1 << 15
HEARTBEAT_INTERVAL_MS = 41_250
EPHEMERAL = 1 << 6

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# the parsed JSON body: an object, an array or None (`RequestKey("body", Any)` would give
# mypy a key that no annotated read accepts)
BODY = web.RequestKey[Any]("body")
# the bot user the Authorization header names; unset on the routes that carry their token
# in the URL (interactions, webhooks) when no bot's token came with them
BOT = web.RequestKey("bot", JSON)


def iso(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).isoformat()


def reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response whose Content-Type is exactly `application/json`."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=all_headers)


def error(status: int, message: str, code: int = 0) -> web.Response:
    return reply({"message": message, "code": code}, status)


@dataclass
class Recorded:
    method: str
    path: str
    route: str  # the route pattern, e.g. /api/v10/channels/{channel_id}/messages
    status: int
    body: Any
    token: str | None


@dataclass
class FakeMessage:
    data: JSON
    channel_id: str
    author_id: str
    edits: int = 0

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def content(self) -> str:
        return str(self.data["content"])

    @property
    def reply_to(self) -> str | None:
        reference = self.data.get("message_reference")
        return str(reference["message_id"]) if reference else None


@dataclass
class _RateLimit:
    times: int
    retry_after: float


@dataclass
class _Session:
    ws: web.WebSocketResponse
    query: dict[str, str]
    identified: bool = False
    seq: int = 0

    async def send(self, payload: JSON) -> None:
        await self.ws.send_str(json.dumps(payload))

    async def dispatch(self, event: str, data: JSON) -> None:
        self.seq += 1
        await self.send({"op": 0, "t": event, "s": self.seq, "d": data})


@dataclass
class FakeDiscord:
    bot_token: str = "fake-main-bot-token"
    bot_name: str = "animahub"
    guild_name: str = "Test Guild"
    # False: IDENTIFY with the message-content intent is refused with close code 4014, as
    # Discord does when the privileged intent is not enabled in the developer portal.
    message_content_enabled: bool = True
    port: int = 0  # 0: a free port, chosen at start

    requests: list[Recorded] = field(default_factory=list)
    identifies: list[JSON] = field(default_factory=list)
    gateway_queries: list[dict[str, str]] = field(default_factory=list)
    messages: dict[str, FakeMessage] = field(default_factory=dict)
    command_overwrites: list[list[JSON]] = field(default_factory=list)
    interaction_responses: list[JSON] = field(default_factory=list)
    followups: list[JSON] = field(default_factory=list)
    dispatched: list[tuple[str, JSON]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._last_id = 0
        self.app_id = self.snowflake()
        self.guild_id = self.snowflake()
        self.bots: dict[str, JSON] = {}  # token -> bot user
        self.users: dict[str, JSON] = {}  # name -> user
        self.bot = self.add_bot(self.bot_token, self.bot_name)
        self.channels: dict[str, JSON] = {}  # id -> channel object
        for position, name in enumerate(("general", "random")):
            self.add_text_channel(name, position)
        self.dm_channels: dict[str, str] = {}  # user id -> DM channel id
        self._rate_limits: dict[tuple[str, str], _RateLimit] = {}
        self._sessions: list[_Session] = []
        self._listener = Listener(self.port)
        self._drop_next = False
        # Consulted before every post and edit (tests/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        r = app.router
        r.add_get("/gateway", self._gateway)
        r.add_get(f"{API}/users/@me", self._me)
        r.add_get(f"{API}/oauth2/applications/@me", self._application)
        r.add_get(f"{API}/gateway", self._gateway_url)
        r.add_get(f"{API}/gateway/bot", self._gateway_url)
        r.add_get(API + "/channels/{channel_id}", self._get_channel)
        r.add_get(API + "/channels/{channel_id}/messages", self._list_messages)
        r.add_post(API + "/channels/{channel_id}/messages", self._create_message)
        r.add_patch(API + "/channels/{channel_id}/messages/{message_id}", self._edit_message)
        r.add_post(f"{API}/users/@me/channels", self._open_dm)
        r.add_put(API + "/applications/{app_id}/commands", self._overwrite_commands)
        r.add_post(API + "/interactions/{interaction_id}/{token}/callback", self._callback)
        r.add_post(API + "/webhooks/{app_id}/{token}", self._followup)
        r.add_patch(API + "/webhooks/{app_id}/{token}/messages/{message_id}", self._followup)
        await self._listener.serve(app)
        self.port = self._listener.port

    async def stop(self) -> None:
        for session in list(self._sessions):
            with contextlib.suppress(ConnectionError, RuntimeError):
                await session.ws.close()
        await self._listener.close()

    @property
    def running(self) -> bool:
        return self._listener.running

    @property
    def url(self) -> str:
        return self._listener.url

    @property
    def api_url(self) -> str:
        return self.url + API

    @property
    def gateway_url(self) -> str:
        return f"ws://{HOST}:{self.port}/gateway"

    # people and places -----------------------------------------------------------------

    def snowflake(self) -> str:
        now = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last_id = max(now, self._last_id + 1)
        return str(self._last_id)

    def _user(self, name: str, *, bot: bool = False) -> JSON:
        return {
            "id": self.snowflake(),
            "username": name,
            "global_name": None if bot else name.capitalize(),
            "discriminator": "0",
            "avatar": None,
            "bot": bot,
            "public_flags": 0,
            "flags": 0,
        }

    def add_bot(self, token: str, name: str) -> JSON:
        """A bot user and its token (the main bot, or a per-Anima bot)."""
        user = self._user(name, bot=True)
        user.update(verified=True, mfa_enabled=False, email=None, locale="en-US")
        self.bots[token] = user
        return user

    def user(self, name: str, *, bot: bool = False) -> JSON:
        """A person (or someone else's bot), created on first use."""
        if name not in self.users:
            self.users[name] = self._user(name, bot=bot)
        return self.users[name]

    def add_text_channel(self, name: str, position: int = 0) -> JSON:
        channel: JSON = {
            "id": self.snowflake(),
            "type": 0,
            "guild_id": self.guild_id,
            "name": name,
            "position": position,
            "permission_overwrites": [],
            "topic": None,
            "nsfw": False,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "parent_id": None,
            "flags": 0,
        }
        self.channels[channel["id"]] = channel
        return channel

    def channel_id(self, name: str) -> str:
        for channel in self.channels.values():
            if channel.get("name") == name and channel["type"] == 0:
                return str(channel["id"])
        raise KeyError(f"no text channel named {name!r}")

    def dm_channel(self, user: JSON) -> str:
        """The DM channel between the main bot and a person, opened on first use."""
        if user["id"] not in self.dm_channels:
            channel: JSON = {
                "id": self.snowflake(),
                "type": 1,
                "last_message_id": None,
                "recipients": [user],
                "flags": 0,
            }
            self.channels[channel["id"]] = channel
            self.dm_channels[user["id"]] = channel["id"]
        return self.dm_channels[user["id"]]

    def parent_of(self, channel_id: str) -> str | None:
        """The parent channel of a thread, None for any other channel."""
        channel = self.channels.get(channel_id, {})
        return channel.get("parent_id") if channel.get("type") in (10, 11, 12) else None

    # what a person does ----------------------------------------------------------------

    def message_payload(
        self,
        author: JSON,
        channel_id: str,
        content: str,
        *,
        mentions: tuple[JSON, ...] = (),
        attachments: tuple[JSON, ...] = (),
        reference: str | None = None,
    ) -> JSON:
        channel = self.channels[channel_id]
        data: JSON = {
            "id": self.snowflake(),
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": list(mentions),
            "mention_roles": [],
            "attachments": list(attachments),
            "embeds": [],
            "components": [],
            "pinned": False,
            "type": 19 if reference else 0,
            "flags": 0,
        }
        if channel["type"] != 1:
            data["guild_id"] = self.guild_id
            data["member"] = self.member(None)
        if reference is not None:
            data["message_reference"] = {
                "type": 0,
                "message_id": reference,
                "channel_id": channel_id,
                "guild_id": data.get("guild_id"),
            }
            if reference in self.messages:
                data["referenced_message"] = self.messages[reference].data
        return data

    def member(self, user: JSON | None) -> JSON:
        member: JSON = {
            "roles": [],
            "joined_at": iso(),
            "deaf": False,
            "mute": False,
            "flags": 0,
            "nick": None,
            "avatar": None,
            "premium_since": None,
            "pending": False,
        }
        if user is not None:
            member["user"] = user
        return member

    def attachment(self, filename: str, url: str, content_type: str, size: int) -> JSON:
        return {
            "id": self.snowflake(),
            "filename": filename,
            "size": size,
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }

    async def send_message(self, data: JSON) -> JSON:
        """A person's message: stored and dispatched as MESSAGE_CREATE (to the sessions
        open now: a bot that is offline never receives it over the gateway, and a new
        session does not replay it; it is in the channel's history)."""
        self._store(FakeMessage(data, data["channel_id"], data["author"]["id"]))
        await self.dispatch("MESSAGE_CREATE", data)
        return data

    def _store(self, message: FakeMessage) -> None:
        self.messages[message.id] = message
        channel = self.channels.get(message.channel_id)
        if channel is not None:
            channel["last_message_id"] = message.id

    def online(self) -> bool:
        """Whether a bot has a gateway session open (one that would get a dispatch)."""
        return any(s.identified and not s.ws.closed for s in self._sessions)

    async def edit_message(self, message_id: str, content: str) -> JSON:
        """A person edits a message: MESSAGE_UPDATE with the full message, as API v10 sends."""
        message = self.messages[message_id]
        message.data = {**message.data, "content": content, "edited_timestamp": iso()}
        message.edits += 1
        await self.dispatch("MESSAGE_UPDATE", message.data)
        return message.data

    async def start_thread(
        self, message_id: str, owner: JSON, name: str = "thread", *, announce: bool = True
    ) -> JSON:
        """A public thread started from a message: it has the message's id. `announce`:
        dispatch THREAD_CREATE (False: the bot learns of it only from a message in it)."""
        parent = self.messages[message_id].channel_id
        thread = {
            "id": message_id,
            "type": 11,
            "guild_id": self.guild_id,
            "parent_id": parent,
            "owner_id": owner["id"],
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": iso(),
                "locked": False,
            },
        }
        self.channels[message_id] = thread
        if announce:
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return thread

    def interaction_payload(
        self, user: JSON, channel_id: str, name: str, options: list[JSON]
    ) -> JSON:
        channel = self.channels[channel_id]
        data: JSON = {
            "id": self.snowflake(),
            "application_id": self.app_id,
            "type": 2,
            "token": f"interaction-token-{self.snowflake()}",
            "version": 1,
            "data": {"id": self.snowflake(), "name": name, "type": 1, "options": options},
            "channel_id": channel_id,
            "channel": channel,
            "app_permissions": "2248473465835073",
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": self.guild_id},
            "attachment_size_limit": 10_485_760,
        }
        if channel["type"] == 1:
            data.update(user=user, context=1)
        else:
            data.update(
                guild_id=self.guild_id,
                guild_locale="en-US",
                member={**self.member(user), "permissions": "2248473465835073"},
                context=0,
            )
        return data

    async def dispatch(self, event: str, data: JSON) -> None:
        """Send a dispatch (op 0) to every identified gateway session."""
        self.dispatched.append((event, data))
        for session in list(self._sessions):
            if session.identified and not session.ws.closed:
                # A session whose connection is dropping misses it, as on Discord.
                with contextlib.suppress(ConnectionError):
                    await session.dispatch(event, data)

    async def redispatch(self, event: str, data: JSON) -> None:
        """Deliver an event again, as Discord may after a resume."""
        await self.dispatch(event, data)

    async def reconnect(self) -> None:
        """Ask every gateway session to reconnect (op 7 RECONNECT, as Discord does before it
        moves a session). The client resumes; this fake keeps no sessions to resume, so it
        is told to identify anew (op 9) and gets a new READY."""
        for session in list(self._sessions):
            if session.identified and not session.ws.closed:
                await session.send({"op": 7, "s": None, "t": None, "d": None})

    # faults ----------------------------------------------------------------------------

    def rate_limit(self, method: str, route: str, times: int, retry_after: float) -> None:
        """Answer the next `times` calls of a route (e.g. "/channels/{channel_id}/messages")
        with 429 and this retry_after."""
        self._rate_limits[(method, API + route)] = _RateLimit(times, retry_after)

    def drop_next_send_response(self) -> None:
        """Create the next message a bot posts, then close the connection unanswered."""
        self._drop_next = True

    # records ---------------------------------------------------------------------------

    def requests_to(self, method: str, route: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.route == API + route]

    def bot_messages(self) -> list[FakeMessage]:
        bot_ids = {user["id"] for user in self.bots.values()}
        return [m for m in self.messages.values() if m.author_id in bot_ids]

    def intents(self) -> int:
        return int(self.identifies[-1]["intents"]) if self.identifies else 0

    # HTTP plumbing ---------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API):
            return await handler(request)
        route = request.match_info.route.resource
        pattern = route.canonical if route is not None else request.path
        body = await _read_body(request)
        token = request.headers.get("Authorization", "").removeprefix("Bot ") or None
        record = Recorded(request.method, request.path, pattern, 0, body, token)
        self.requests.append(record)
        response = await self._guarded(request, handler, pattern, token)
        record.status = response.status
        return response

    async def _guarded(
        self, request: web.Request, handler: Handler, pattern: str, token: str | None
    ) -> web.StreamResponse:
        token_in_url = "/interactions/" in pattern or "/webhooks/" in pattern
        if not token_in_url and token not in self.bots:
            return error(401, "401: Unauthorized", 0)
        bot = self.bots.get(token or "")
        if bot is not None:
            request[BOT] = bot
        limit = self._rate_limits.get((request.method, pattern))
        if limit is not None and limit.times > 0:
            limit.times -= 1
            return _too_many(limit.retry_after)
        injected = self._injected(request, pattern)
        if injected is not None:
            return injected
        response = await handler(request)
        if isinstance(response, web.Response):
            response.headers.update(_bucket_headers())
        return response

    def _injected(self, request: web.Request, pattern: str) -> web.Response | None:
        """What the fault policy makes of a post or an edit: Discord's 429 (with the
        headers and body discord.py reads) or a 5xx; None to carry it out."""
        if self.faults is None or (request.method, pattern) not in _SENDS:
            return None
        channel = request.match_info.get("channel_id", "")
        route = f"{request.method} {pattern}"
        fault = self.faults.decide("discord", channel, route, scope=route)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            return _too_many(fault.retry_after or 1.0)
        return error(fault.status, "Service Unavailable" if fault.status == 503 else "Error")

    async def _me(self, request: web.Request) -> web.Response:
        return reply(request[BOT])

    async def _application(self, request: web.Request) -> web.Response:
        bot = request[BOT]
        return reply(
            {
                "id": self.app_id if bot is self.bot else bot["id"],
                "name": bot["username"],
                "icon": None,
                "description": "",
                "summary": "",
                "bot_public": False,
                "bot_require_code_grant": False,
                "verify_key": "0" * 64,
                "owner": self.user("owner"),
                "flags": 0,
                "team": None,
                "bot": bot,
                "interactions_endpoint_url": None,
            }
        )

    async def _gateway_url(self, request: web.Request) -> web.Response:
        return reply(
            {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14_400_000,
                    "max_concurrency": 1,
                },
            }
        )

    async def _get_channel(self, request: web.Request) -> web.Response:
        channel = self.channels.get(request.match_info["channel_id"])
        return reply(channel) if channel is not None else error(404, "Unknown Channel", 10003)

    async def _list_messages(self, request: web.Request) -> web.Response:
        """`GET /channels/{id}/messages?after=&before=&limit=`: like Discord, newest first
        whichever way it pages, `limit` 1-100 (50 by default); with `after`, the `limit`
        messages right after that id."""
        channel_id = request.match_info["channel_id"]
        if channel_id not in self.channels:
            return error(404, "Unknown Channel", 10003)
        try:
            limit = int(request.query.get("limit", "50"))
            after = int(request.query.get("after", "0"))
            before = int(request.query.get("before", "0")) or None
        except ValueError:
            return reply({"message": "Invalid Form Body", "code": 50035}, 400)
        if not 1 <= limit <= 100:
            return reply({"message": "Invalid Form Body", "code": 50035}, 400)
        found = sorted(
            (m for m in self.messages.values() if m.channel_id == channel_id),
            key=lambda m: int(m.id),
        )
        found = [m for m in found if int(m.id) > after and (before is None or int(m.id) < before)]
        page = found[:limit] if "after" in request.query else found[-limit:]
        return reply([m.data for m in reversed(page)])

    async def _create_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        if channel_id not in self.channels:
            return error(404, "Unknown Channel", 10003)
        body: JSON = request[BODY] or {}
        content = str(body.get("content") or "")
        if not content or len(content) > 2000:
            return reply(
                {"message": "Invalid Form Body", "code": 50035, "errors": {"content": {}}}, 400
            )
        bot = request[BOT]
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce"):
            for message in self.messages.values():
                if message.author_id == bot["id"] and message.data.get("nonce") == nonce:
                    return reply(message.data)  # Discord returns the earlier message
        data = self.message_payload(bot, channel_id, content)
        reference = body.get("message_reference")
        if reference:
            data["type"] = 19
            # Discord answers with snowflakes as strings, whatever the request used
            stored = {k: str(v) if k.endswith("_id") else v for k, v in reference.items()}
            data["message_reference"] = {"type": 0, "channel_id": channel_id, **stored}
        if nonce is not None:
            data["nonce"] = nonce
        data["allowed_mentions"] = body.get("allowed_mentions")
        self._store(FakeMessage(data, channel_id, bot["id"]))
        await self.dispatch("MESSAGE_CREATE", data)
        if self._drop_next:
            self._drop_next = False
            return await _dropped(request)
        return reply(data)

    async def _edit_message(self, request: web.Request) -> web.Response:
        message = self.messages.get(request.match_info["message_id"])
        if message is None or message.channel_id != request.match_info["channel_id"]:
            return error(404, "Unknown Message", 10008)
        if message.author_id != request[BOT]["id"]:
            return error(403, "Cannot edit a message authored by another user", 50005)
        body: JSON = request[BODY] or {}
        if "content" in body:
            message.data = {**message.data, "content": body["content"], "edited_timestamp": iso()}
            message.edits += 1
            await self.dispatch("MESSAGE_UPDATE", message.data)
        return reply(message.data)

    async def _open_dm(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        recipient = str(body.get("recipient_id"))
        user = next((u for u in self.users.values() if u["id"] == recipient), None)
        if user is None:
            return error(404, "Unknown User", 10013)
        return reply(self.channels[self.dm_channel(user)])

    async def _overwrite_commands(self, request: web.Request) -> web.Response:
        commands: list[JSON] = request[BODY] or []
        self.command_overwrites.append(commands)
        return reply([_registered(command, self.app_id, self.snowflake()) for command in commands])

    async def _callback(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        interaction_id = request.match_info["interaction_id"]
        self.interaction_responses.append({"interaction_id": interaction_id, **body})
        response: JSON = {
            "interaction": {
                "id": interaction_id,
                "type": 2,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool(
                    (body.get("data") or {}).get("flags", 0) & EPHEMERAL
                ),
            },
            "resource": {"type": body.get("type")},
        }
        if body.get("type") == 4:
            message = self.message_payload(self.bot, self._any_channel(), body["data"]["content"])
            response["interaction"]["response_message_id"] = message["id"]
            response["resource"]["message"] = message
        return reply(response)

    async def _followup(self, request: web.Request) -> web.Response:
        body: JSON = request[BODY] or {}
        self.followups.append({"method": request.method, "path": request.path, **body})
        return reply(self.message_payload(self.bot, self._any_channel(), body.get("content", "")))

    def _any_channel(self) -> str:
        return self.channel_id("general")

    # gateway ---------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = _Session(ws, dict(request.query))
        self.gateway_queries.append(session.query)
        self._sessions.append(session)
        try:
            await session.send(
                {"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}}
            )
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    continue
                await self._gateway_op(session, json.loads(frame.data))
        finally:
            self._sessions.remove(session)
        return ws

    async def _gateway_op(self, session: _Session, payload: JSON) -> None:
        op = payload.get("op")
        if op == 1:  # heartbeat
            await session.send({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:  # identify
            await self._identify(session, payload["d"])
        elif op == 6:  # resume: not kept across connections here, so start a new session
            await session.send({"op": 9, "s": None, "t": None, "d": False})

    async def _identify(self, session: _Session, data: JSON) -> None:
        self.identifies.append(data)
        bot = self.bots.get(data.get("token", ""))
        if bot is None:
            await session.ws.close(code=4004, message=b"Authentication failed.")
            return
        if (
            int(data.get("intents", 0)) & MESSAGE_CONTENT_INTENT
            and not self.message_content_enabled
        ):
            await session.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        session.identified = True
        await session.dispatch(
            "READY",
            {
                "v": 10,
                "user": bot,
                "guilds": [{"id": self.guild_id, "unavailable": True}],
                "session_id": f"session-{self.snowflake()}",
                "resume_gateway_url": self.gateway_url,
                "application": {"id": self.app_id, "flags": 0},
                "private_channels": [],
                "relationships": [],
                "presences": [],
                "user_settings": {},
                "geo_ordered_rtc_regions": [],
                "_trace": ["fake-discord"],
            },
        )
        await session.dispatch("GUILD_CREATE", self._guild(bot))

    def _guild(self, bot: JSON) -> JSON:
        guild_channels = [c for c in self.channels.values() if c.get("guild_id") == self.guild_id]
        return {
            "id": self.guild_id,
            "name": self.guild_name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "owner_id": self.user("owner")["id"],
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "roles": [
                {
                    "id": self.guild_id,
                    "name": "@everyone",
                    "permissions": "2248473465835073",
                    "position": 0,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                    "flags": 0,
                }
            ],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "vanity_url_code": None,
            "description": None,
            "banner": None,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "public_updates_channel_id": None,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "joined_at": iso(),
            "large": False,
            "unavailable": False,
            "member_count": 2,
            "members": [self.member(bot)],
            "channels": [c for c in guild_channels if c["type"] not in (10, 11, 12)],
            "threads": [c for c in guild_channels if c["type"] in (10, 11, 12)],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }


async def _read_body(request: web.Request) -> Any:
    """JSON bodies, and `payload_json` of multipart ones (discord.py sends files that way)."""
    body: Any = None
    if request.content_type == "application/json":
        raw = await request.read()
        body = json.loads(raw) if raw else None
    elif request.content_type.startswith("multipart/"):
        form = await request.post()
        payload = form.get("payload_json")
        body = json.loads(str(payload)) if payload is not None else None
    request[BODY] = body
    return body


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    if request.transport is not None:
        request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)


_SENDS = frozenset(
    {
        ("POST", API + "/channels/{channel_id}/messages"),
        ("PATCH", API + "/channels/{channel_id}/messages/{message_id}"),
    }
)


def _bucket_headers() -> dict[str, str]:
    return {
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "4",
        "X-RateLimit-Reset": f"{time.time() + 1:.3f}",
        "X-RateLimit-Reset-After": "1.000",
        "X-RateLimit-Bucket": "fake-bucket",
    }


def _too_many(retry_after: float) -> web.Response:
    return reply(
        {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
        429,
        {
            "Retry-After": str(max(1, math.ceil(retry_after))),
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": f"{time.time() + retry_after:.3f}",
            "X-RateLimit-Reset-After": f"{retry_after:.3f}",
            "X-RateLimit-Bucket": "fake-bucket",
            "X-RateLimit-Scope": "user",
            "Via": "1.1 google",
        },
    )


def _registered(command: JSON, app_id: str, command_id: str) -> JSON:
    return {
        "id": command_id,
        "application_id": app_id,
        "version": command_id,
        "type": command.get("type", 1),
        "name": command["name"],
        "description": command.get("description", ""),
        "options": command.get("options", []),
        "default_member_permissions": command.get("default_member_permissions"),
        "dm_permission": command.get("dm_permission", True),
        "nsfw": command.get("nsfw", False),
        "contexts": command.get("contexts"),
        "integration_types": command.get("integration_types", [0]),
    }
