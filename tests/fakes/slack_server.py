"""A local fake of Slack that the real slack-sdk / slack-bolt talk to (DESIGN §9).

It runs in the test's event loop (aiohttp.web on 127.0.0.1, a free port) and speaks Slack's
wire protocols:

* the Web API under ``/api/<method>`` (form-encoded, JSON or query parameters; the token as
  ``Authorization: Bearer`` or a ``token`` parameter): ``auth.test``, ``chat.postMessage``,
  ``chat.update``, ``chat.postEphemeral``, ``users.info``, ``conversations.info``,
  ``conversations.history`` and ``conversations.replies`` (the bots' own messages only,
  newest first and oldest first as Slack answers them, ``oldest``/``limit``/``cursor``, and
  message ``metadata`` with ``include_all_metadata``) and ``apps.connections.open`` (which
  needs the app-level token). Anything else answers
  ``{"ok": false, "error": "unknown_method"}``.
* Socket Mode at ``/link``: a ``hello`` on connect; :meth:`FakeSlack.push` sends an
  ``events_api`` or ``slash_commands`` envelope and :meth:`FakeSlack.ack` waits for the
  acknowledgement (its payload too: a slash command's answer).
  :meth:`FakeSlack.deliver_until_acked` is Slack's at-least-once delivery: an envelope not
  acknowledged in time is sent again with ``retry_attempt`` counting up, on whatever
  connection is open by then.
* the Events API as Slack's side of it: :meth:`FakeSlack.deliver` POSTs a signed
  ``event_callback`` (v0 HMAC-SHA256 of ``v0:{ts}:{body}``) to the hub's ``events_url``, or
  pushes it over the socket when no ``events_url`` is set; :meth:`FakeSlack.redeliver` sends
  it again with ``X-Slack-Retry-Num``; :meth:`FakeSlack.command` does the same for a slash
  command; forged signatures and stale timestamps are one argument away.
* ``response_url`` targets at ``/respond/<id>``, recorded in :attr:`FakeSlack.responses`.
  :meth:`FakeSlack.slow` delays a method's answers, to push a command past its ack budget.

Everything it receives is recorded (:attr:`FakeSlack.calls`), and what the bots posted is kept
with its text after edits (:attr:`FakeSlack.messages`). :meth:`FakeSlack.rate_limit` answers
the next N calls of a method with 429 + ``Retry-After``; :meth:`FakeSlack.fail` with an error
code; :attr:`FakeSlack.faults` (tests/fakes/faults.py) decides for every post and edit;
:meth:`FakeSlack.break_channel` makes every post to a channel fail;
:meth:`FakeSlack.drop_next_send_response` posts the next ``chat.postMessage`` and then closes
the connection without answering (the caller cannot know it was posted). With
``echo_bot_messages`` the fake also delivers the bots' own posts and edits back as events, as
Slack does, so the adapter's refusal to answer itself is exercised. A fake built with a
fixed ``port`` can be started later, and again after a stop (Slack down at hub start). A
token it does not know gets ``invalid_auth``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from tests.fakes.faults import FaultPolicy, RateLimit
from tests.fakes.listener import HOST, Listener, Served

log = logging.getLogger(__name__)
JSON = dict[str, Any]
# Slack retries an unacknowledged event three times: at once, after a minute, after five.
SLACK_RETRY_DELAYS_S = (0.0, 60.0, 300.0)
ACK_TIMEOUT_S = 3.0  # Slack's time to acknowledge an envelope or event
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


@dataclass
class _Limit:
    remaining: int
    retry_after: float


@dataclass
class _Failure:
    remaining: int
    error: str
    status: int


class FakeSlack(Served):
    def __init__(
        self,
        *,
        team_id: str = "T0TEAM",
        team: str = "AnimaHub Test",
        signing_secret: str = "fake-signing-secret",
        app_token: str = "xapp-1-fake",
        port: int = 0,
    ) -> None:
        self.team_id = team_id
        self.team = team
        self.signing_secret = signing_secret
        self.app_token = app_token
        self.bots: dict[str, BotUser] = {}
        self.users: dict[str, JSON] = {}
        self.channels: dict[str, JSON] = {}
        self.calls: list[ApiCall] = []
        self.messages: list[PostedMessage] = []
        self.ephemeral: list[JSON] = []
        self.responses: list[JSON] = []
        self.deliveries: list[Delivery] = []
        self.acks: dict[str, JSON | None] = {}
        self.events_url: str | None = None  # the hub's /slack/events; None: Socket Mode
        self.echo_bot_messages = False
        self.sockets: list[web.WebSocketResponse] = []
        self.hellos = 0
        self._limits: dict[str, _Limit] = {}
        self._failures: dict[str, _Failure] = {}
        self._broken: dict[str, str] = {}
        self._delays: dict[str, float] = {}
        self._sent: dict[str, JSON] = {}  # event_id -> the event_callback body
        self._retries: dict[str, int] = {}
        self._acked: dict[str, asyncio.Event] = {}
        self._drop_next = False
        self._last_ts = 0.0
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._http: aiohttp.ClientSession | None = None
        self._listener = Listener(port)
        # Consulted before every post and edit (tests/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link", self._link)
        app.router.add_post("/respond/{key}", self._respond)
        await self._listener.serve(app)
        self._http = aiohttp.ClientSession()
        return self

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for ws in list(self.sockets):
            await ws.close()
        if self._http is not None:
            await self._http.close()
            self._http = None
        await self._listener.close()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # the workspace ---------------------------------------------------------------------

    def add_bot(self, token: str, user_id: str, bot_id: str, name: str, **kw: Any) -> BotUser:
        bot = BotUser(token, user_id, bot_id, name, **kw)
        self.bots[token] = bot
        self.users[user_id] = {
            "id": user_id,
            "name": name,
            "real_name": name,
            "is_bot": True,
            "profile": {"display_name": name, "real_name": name, "bot_id": bot_id},
        }
        return bot

    def add_user(
        self, user_id: str, name: str, display_name: str = "", real_name: str = ""
    ) -> None:
        self.users[user_id] = {
            "id": user_id,
            "team_id": self.team_id,
            "name": name,
            "real_name": real_name or display_name or name,
            "is_bot": False,
            "profile": {"display_name": display_name, "real_name": real_name or display_name},
        }

    def add_channel(self, channel_id: str, name: str = "", kind: str = "channel") -> None:
        """kind: channel | group (private channel) | im | mpim."""
        self.channels[channel_id] = {
            "id": channel_id,
            "name": name or channel_id,
            "is_channel": kind == "channel",
            "is_group": kind == "group",
            "is_im": kind == "im",
            "is_mpim": kind == "mpim",
            "is_private": kind != "channel",
            "is_archived": False,
        }

    def channel_type(self, channel_id: str) -> str:
        info = self.channels.get(channel_id, {})
        for kind in ("im", "mpim", "group"):
            if info.get(f"is_{kind}"):
                return kind
        return "channel"

    def next_ts(self) -> str:
        """A message timestamp, unique and increasing, like Slack's."""
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    # fault injection ------------------------------------------------------------------

    def rate_limit(self, method: str, times: int, retry_after: float) -> None:
        self._limits[method] = _Limit(times, retry_after)

    def fail(self, method: str, error: str, times: int = 1, status: int = 200) -> None:
        self._failures[method] = _Failure(times, error, status)

    def break_channel(self, channel_id: str, error: str = "channel_not_found") -> None:
        self._broken[channel_id] = error

    def drop_next_send_response(self) -> None:
        """Post the next `chat.postMessage`, then close the connection without answering."""
        self._drop_next = True

    def slow(self, method: str, seconds: float) -> None:
        """Answer every call of `method` only after `seconds` (a slow Slack)."""
        self._delays[method] = seconds

    # what the fake saw -------------------------------------------------------------------

    def calls_of(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def bot_messages(self) -> list[PostedMessage]:
        return list(self.messages)

    # Web API --------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: JSON = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update({k: v for k, v in (await request.post()).items()})
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else params.pop("token", None)
        params.pop("token", None)
        self.calls.append(ApiCall(method, params, token))
        if method in self._delays:
            await asyncio.sleep(self._delays[method])
        limit = self._limits.get(method)
        if limit is not None and limit.remaining > 0:
            limit.remaining -= 1
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": f"{limit.retry_after:g}"},
            )
        failure = self._failures.get(method)
        if failure is not None and failure.remaining > 0:
            failure.remaining -= 1
            return web.json_response({"ok": False, "error": failure.error}, status=failure.status)
        injected = self._injected(method, params)
        if injected is not None:
            return injected
        if method == "apps.connections.open":
            if token != self.app_token:
                return self._reply({"ok": False, "error": "invalid_auth"})
            return self._reply({"ok": True, "url": f"ws://{HOST}:{self.port}/link"})
        handler = _METHODS.get(method)
        if handler is None:
            return self._reply({"ok": False, "error": "unknown_method"})
        bot = self.bots.get(token or "")
        if bot is None:
            return self._reply(
                {"ok": False, "error": "not_authed" if not token else "invalid_auth"}
            )
        headers = {"X-OAuth-Scopes": bot.scopes}
        body = handler(self, bot, params)
        if method == "chat.postMessage" and self._drop_next and body.get("ok"):
            self._drop_next = False
            return await _dropped(request)
        return self._reply(body, headers)

    def _injected(self, method: str, params: JSON) -> web.Response | None:
        """What the fault policy makes of a post or edit: Slack's 429 (Retry-After in whole
        seconds, as Slack sends it) or a 5xx; None to carry it out."""
        if self.faults is None or method not in _SENDS:
            return None
        channel = str(params.get("channel") or "")
        fault = self.faults.decide("slack", channel, method, whole_seconds=True, scope=method)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            headers = {"Retry-After": f"{fault.retry_after or 1:g}"}
            body = {"ok": False, "error": "ratelimited"}
            return web.json_response(body, status=429, headers=headers)
        body = {"ok": False, "error": "service_unavailable"}
        return web.json_response(body, status=fault.status)

    @staticmethod
    def _reply(body: JSON, headers: dict[str, str] | None = None) -> web.Response:
        return web.json_response(body, headers=headers)

    def _auth_test(self, bot: BotUser, params: JSON) -> JSON:
        return {
            "ok": True,
            "url": "https://animahub-test.slack.com/",
            "team": self.team,
            "user": bot.name,
            "team_id": self.team_id,
            "user_id": bot.user_id,
            "bot_id": bot.bot_id,
            "is_enterprise_install": False,
        }

    def _post_message(self, bot: BotUser, params: JSON) -> JSON:
        channel = str(params.get("channel") or "")
        if channel not in self.channels:
            return {"ok": False, "error": "channel_not_found"}
        if channel in self._broken:
            return {"ok": False, "error": self._broken[channel]}
        text = str(params.get("text") or "")
        if not text:
            return {"ok": False, "error": "no_text"}
        if len(text) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        thread = params.get("thread_ts") or None
        message = PostedMessage(
            channel=channel,
            ts=self.next_ts(),
            text=text,
            thread_ts=str(thread) if thread else None,
            user=bot.user_id,
            bot_id=bot.bot_id,
            username=params.get("username"),
            icon=params.get("icon_emoji") or params.get("icon_url"),
            metadata=_metadata(params.get("metadata")),
        )
        self.messages.append(message)
        if self.echo_bot_messages:
            self._spawn(self.deliver(self._echo(message)))
        return {
            "ok": True,
            "channel": channel,
            "ts": message.ts,
            "message": self._as_event(message),
        }

    def _update(self, bot: BotUser, params: JSON) -> JSON:
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        if channel in self._broken:
            return {"ok": False, "error": self._broken[channel]}
        message = next((m for m in self.messages if m.channel == channel and m.ts == ts), None)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.user != bot.user_id:
            return {"ok": False, "error": "cant_update_message"}
        previous = self._as_event(message)
        message.history.append(message.text)
        message.text = str(params.get("text") or "")
        message.updates += 1
        if self.echo_bot_messages:
            edit_ts = self.next_ts()
            edited = {**self._as_event(message), "edited": {"user": bot.user_id, "ts": edit_ts}}
            event = {
                "type": "message",
                "subtype": "message_changed",
                "hidden": True,
                "channel": channel,
                "channel_type": self.channel_type(channel),
                "ts": edit_ts,
                "event_ts": edit_ts,
                "message": edited,
                "previous_message": previous,
            }
            self._spawn(self.deliver(event))
        return {"ok": True, "channel": channel, "ts": ts, "text": message.text}

    def _post_ephemeral(self, bot: BotUser, params: JSON) -> JSON:
        self.ephemeral.append(dict(params))
        return {"ok": True, "message_ts": self.next_ts()}

    def _users_info(self, bot: BotUser, params: JSON) -> JSON:
        user = self.users.get(str(params.get("user") or ""))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    def _history(self, bot: BotUser, params: JSON) -> JSON:
        channel = str(params.get("channel") or "")
        if channel not in self.channels:
            return {"ok": False, "error": "channel_not_found"}
        found = [
            m
            for m in self.messages
            if m.channel == channel and (m.thread_ts is None or m.thread_ts == m.ts)
        ]
        return self._page(list(reversed(found)), params)

    def _replies(self, bot: BotUser, params: JSON) -> JSON:
        channel, thread = str(params.get("channel") or ""), str(params.get("ts") or "")
        if channel not in self.channels:
            return {"ok": False, "error": "channel_not_found"}
        if not thread:
            return {"ok": False, "error": "thread_not_found"}
        found = [m for m in self.messages if m.channel == channel and thread in (m.ts, m.thread_ts)]
        return self._page(found, params)

    def _page(self, found: list[PostedMessage], params: JSON) -> JSON:
        """One page of messages after `oldest`, as history and replies answer."""
        oldest = float(params.get("oldest") or 0)
        found = [m for m in found if float(m.ts) > oldest]
        start = int(params.get("cursor") or 0)
        limit = max(1, min(999, int(params.get("limit") or 100)))
        page = found[start : start + limit]
        metadata = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
        messages = []
        for message in page:
            event = self._as_event(message)
            if metadata and message.metadata:
                event["metadata"] = message.metadata
            messages.append(event)
        more = start + limit < len(found)
        return {
            "ok": True,
            "messages": messages,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _conversations_info(self, bot: BotUser, params: JSON) -> JSON:
        info = self.channels.get(str(params.get("channel") or ""))
        return (
            {"ok": True, "channel": info} if info else {"ok": False, "error": "channel_not_found"}
        )

    def _as_event(self, message: PostedMessage) -> JSON:
        event: JSON = {
            "type": "message",
            "user": message.user,
            "bot_id": message.bot_id,
            "text": message.text,
            "ts": message.ts,
            "team": self.team_id,
        }
        if message.thread_ts:
            event["thread_ts"] = message.thread_ts
        if message.username:
            event["subtype"] = "bot_message"
            event["username"] = message.username
        return event

    def _echo(self, message: PostedMessage) -> JSON:
        return {
            **self._as_event(message),
            "channel": message.channel,
            "channel_type": self.channel_type(message.channel),
            "event_ts": message.ts,
        }

    # events: people speaking -----------------------------------------------------------

    def message_event(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        files: list[JSON] | None = None,
        ts: str | None = None,
    ) -> JSON:
        """A `message` event as Slack sends it for something `user` wrote."""
        ts = ts or self.next_ts()
        event: JSON = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            "channel": channel,
            "channel_type": self.channel_type(channel),
            "team": self.team_id,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = self._author_of(channel, thread_ts)
        if files:
            event["subtype"] = "file_share"
            event["files"] = files
        return event

    def mention_event(self, message: JSON) -> JSON:
        """The `app_mention` Slack sends besides the message when the bot is mentioned."""
        event = {k: v for k, v in message.items() if k not in ("channel_type", "subtype")}
        event["type"] = "app_mention"
        return event

    def edit_event(self, original: JSON, text: str) -> JSON:
        """The `message_changed` event of `original` edited to `text`."""
        edit_ts = self.next_ts()
        inner = {k: v for k, v in original.items() if k not in ("channel", "channel_type")}
        inner.update(text=text, edited={"user": original["user"], "ts": edit_ts})
        return {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "channel": original["channel"],
            "channel_type": original.get("channel_type", "channel"),
            "ts": edit_ts,
            "event_ts": edit_ts,
            "message": inner,
            "previous_message": {
                k: v for k, v in original.items() if k not in ("channel", "channel_type")
            },
        }

    def _main_bot_user(self) -> str:
        return next((bot.user_id for bot in self.bots.values()), "")

    def _author_of(self, channel: str, ts: str) -> str | None:
        for message in self.messages:
            if message.channel == channel and message.ts == ts:
                return message.user
        for body in self._sent.values():
            event = body["event"]
            if event.get("channel") == channel and event.get("ts") == ts:
                return str(event.get("user"))
        return None

    # events: delivery ------------------------------------------------------------------

    def callback(self, event: JSON, event_id: str | None = None) -> JSON:
        """The `event_callback` body wrapping an event."""
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "api_app_id": "A0FAKEAPP",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:12].upper()}",
            "event_time": int(float(event.get("event_ts") or event.get("ts") or time.time())),
            "authorizations": [
                {"team_id": self.team_id, "user_id": self._main_bot_user(), "is_bot": True}
            ],
            "is_ext_shared_channel": False,
        }

    async def deliver(self, event: JSON, event_id: str | None = None) -> Delivery:
        """Deliver an event: signed POST to `events_url`, else over the socket."""
        body = self.callback(event, event_id)
        self._sent[body["event_id"]] = body
        delivery = await self._send(body, retry=0)
        self.deliveries.append(delivery)
        return delivery

    async def redeliver(self, event_id: str, reason: str = "http_timeout") -> Delivery:
        """Deliver the same event again, as Slack retries one it saw no quick 200 for."""
        body = self._sent[event_id]
        retry = self._retries.get(event_id, 0) + 1
        self._retries[event_id] = retry
        delivery = await self._send(body, retry=retry, reason=reason)
        self.deliveries.append(delivery)
        return delivery

    async def _send(self, body: JSON, retry: int, reason: str = "http_timeout") -> Delivery:
        if self.events_url is None:
            envelope_id = self.push("events_api", body, retry_attempt=retry, retry_reason=reason)
            await self.ack(envelope_id)
            return Delivery(body["event_id"], 200, envelope_id=envelope_id)
        raw = json.dumps(body)
        headers = {"Content-Type": "application/json"}
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": reason})
        status, text = await self.post_signed(raw, headers)
        return Delivery(body["event_id"], status, text)

    async def post_signed(
        self,
        raw: str,
        headers: dict[str, str],
        *,
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> tuple[int, str]:
        """POST `raw` to the hub's events URL, signed as Slack signs (or with a wrong secret
        or an old timestamp, for the rejection cases)."""
        assert self.events_url is not None and self._http is not None
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signed = {**headers, **sign(secret or self.signing_secret, stamp, raw)}
        async with self._http.post(self.events_url, data=raw.encode(), headers=signed) as resp:
            return resp.status, await resp.text()

    async def forged(self, event: JSON) -> int:
        status, _ = await self.post_signed(
            json.dumps(self.callback(event)),
            {"Content-Type": "application/json"},
            secret="not-the-signing-secret",
        )
        return status

    async def stale(self, event: JSON, age_s: int = 600) -> int:
        status, _ = await self.post_signed(
            json.dumps(self.callback(event)),
            {"Content-Type": "application/json"},
            timestamp=int(time.time()) - age_s,
        )
        return status

    def command_payload(self, user: str, channel: str, command: str, text: str) -> dict[str, str]:
        info = self.channels.get(channel, {})
        if info.get("is_im"):
            channel_name = "directmessage"
        elif info.get("is_group"):
            channel_name = "privategroup"
        else:
            channel_name = str(info.get("name") or channel)
        key = f"R{next(self._ids):06d}"
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "team_domain": "animahub-test",
            "channel_id": channel,
            "channel_name": channel_name,
            "user_id": user,
            "user_name": str(self.users.get(user, {}).get("name", user)),
            "command": command,
            "text": text,
            "api_app_id": "A0FAKEAPP",
            "is_enterprise_install": "false",
            "response_url": f"{self.url}/respond/{key}",
            "trigger_id": f"{next(self._ids)}.{key}.{uuid.uuid4().hex[:16]}",
        }

    async def command(self, user: str, channel: str, command: str, text: str) -> tuple[int, str]:
        """A slash command over HTTP (form-encoded, signed); returns the hub's answer."""
        payload = self.command_payload(user, channel, command, text)
        return await self.post_signed(
            urlencode(payload), {"Content-Type": "application/x-www-form-urlencoded"}
        )

    # Socket Mode -------------------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self.sockets),
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": "A0FAKEAPP"},
            }
        )
        self.hellos += 1
        try:
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = json.loads(frame.data)
                envelope_id = data.get("envelope_id")
                if envelope_id:
                    self.acks[envelope_id] = data.get("payload")
                    self._acked.setdefault(envelope_id, asyncio.Event()).set()
        finally:
            self.sockets.remove(ws)
        return ws

    def push(self, kind: str, payload: JSON, **extra: Any) -> str:
        """Send an envelope (`events_api`, `slash_commands`) over the newest socket."""
        if not self.sockets:
            raise AssertionError("no Socket Mode connection is open")
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": extra.get("retry_attempt", 0),
            "retry_reason": extra.get("retry_reason", ""),
        }
        self._acked.setdefault(envelope_id, asyncio.Event())
        self._spawn(self.sockets[-1].send_json(envelope))
        return envelope_id

    async def refresh_sockets(self) -> None:
        """Tell every Socket Mode connection to reconnect, as Slack does before it moves or
        refreshes one (`disconnect`, `refresh_requested`): the client opens a new socket
        (`apps.connections.open`, a new hello) and Slack retries what was not acknowledged."""
        disconnect = {
            "type": "disconnect",
            "reason": "refresh_requested",
            "debug_info": {"host": "fake-slack"},
        }
        for ws in list(self.sockets):
            await ws.send_json(disconnect)

    async def deliver_until_acked(
        self,
        event: JSON,
        *,
        retry_delays_s: tuple[float, ...] = SLACK_RETRY_DELAYS_S,
        ack_timeout_s: float = ACK_TIMEOUT_S,
    ) -> Delivery:
        """Deliver an event over Socket Mode the way Slack does: an envelope on the open
        connection, acknowledged within `ack_timeout_s`, or else sent again (a new envelope,
        the same event and event_id, `retry_attempt` counting up) after each of
        `retry_delays_s`, whether or not a connection was open meanwhile. When every retry
        goes unacknowledged the event is lost (status 0), as on Slack. Tests pass a
        compressed schedule; Slack's own is SLACK_RETRY_DELAYS_S."""
        body = self.callback(event)
        self._sent[body["event_id"]] = body
        for attempt in range(len(retry_delays_s) + 1):
            if attempt:
                await asyncio.sleep(retry_delays_s[attempt - 1])
            if not self.sockets:
                continue  # nobody to deliver to: this attempt fails as a timeout would
            envelope_id = self.push(
                "events_api",
                body,
                retry_attempt=attempt,
                retry_reason="timeout" if attempt else "",
            )
            try:
                await self.ack(envelope_id, ack_timeout_s)
            except TimeoutError:
                continue
            delivery = Delivery(body["event_id"], 200, envelope_id=envelope_id)
            self.deliveries.append(delivery)
            return delivery
        lost = Delivery(body["event_id"], 0)
        self.deliveries.append(lost)
        return lost

    async def ack(self, envelope_id: str, timeout_s: float = 10.0) -> JSON | None:
        """Wait for the acknowledgement of an envelope; its payload, if it had one."""
        event = self._acked.setdefault(envelope_id, asyncio.Event())
        await asyncio.wait_for(event.wait(), timeout_s)
        return self.acks[envelope_id]

    # response_url ------------------------------------------------------------------------

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.responses.append({"key": request.match_info["key"], **body})
        return web.Response(text="ok")

    # helpers ----------------------------------------------------------------------------

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("fake Slack background delivery failed: %r", task.exception())


async def _dropped(request: web.Request) -> web.Response:
    """The request was carried out; its answer never reaches the caller."""
    if request.transport is not None:
        request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response(status=200)


def _metadata(raw: object) -> JSON | None:
    """Message metadata as chat.postMessage takes it: an object, or JSON in a form field."""
    if isinstance(raw, str) and raw:
        raw = json.loads(raw)
    return raw if isinstance(raw, dict) and raw.get("event_type") else None


def sign(secret: str, timestamp: str, body: str) -> dict[str, str]:
    """Slack's request signature headers for `body`."""
    base = f"v0:{timestamp}:{body}".encode()
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest}"}


_SENDS = frozenset({"chat.postMessage", "chat.update"})
_METHODS = {
    "auth.test": FakeSlack._auth_test,
    "chat.postMessage": FakeSlack._post_message,
    "chat.update": FakeSlack._update,
    "chat.postEphemeral": FakeSlack._post_ephemeral,
    "users.info": FakeSlack._users_info,
    "conversations.info": FakeSlack._conversations_info,
    "conversations.history": FakeSlack._history,
    "conversations.replies": FakeSlack._replies,
}
