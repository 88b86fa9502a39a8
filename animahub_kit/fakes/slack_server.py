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
  connection is open by then. With ``spread`` (a seeded ``random.Random``) each envelope goes
  to one of the open connections at random, as Slack spreads an app's events over its
  connections (one per hub worker); without it, to the newest.
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
code; :attr:`FakeSlack.faults` (animahub_kit/fakes/faults.py) decides for every post and edit;
:meth:`FakeSlack.break_channel` makes every post to a channel fail;
:meth:`FakeSlack.drop_next_send_response` posts the next ``chat.postMessage`` and then closes
the connection without answering (the caller cannot know it was posted). With
``echo_bot_messages`` the fake also delivers the bots' own posts and edits back as events, as
Slack does, so the adapter's refusal to answer itself is exercised. A fake built with a
fixed ``port`` can be started later, and again after a stop (Slack down at hub start). A
token it does not know gets ``invalid_auth``.

This module wires the pieces in animahub_kit/fakes/slack/ (its docstring names them) behind
:class:`FakeSlack`, and keeps the names tests import from here.
"""

from __future__ import annotations

import random
from typing import Any

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy, RateLimit
from animahub_kit.fakes.listener import HOST, Listener, Served
from animahub_kit.fakes.slack.background import Background, log
from animahub_kit.fakes.slack.chat import Chat
from animahub_kit.fakes.slack.commands import Commands
from animahub_kit.fakes.slack.conversations import Conversations
from animahub_kit.fakes.slack.events import ACK_TIMEOUT_S, SLACK_RETRY_DELAYS_S, Events
from animahub_kit.fakes.slack.model import (
    BOT_SCOPES,
    JSON,
    ApiCall,
    BotUser,
    Delivery,
    PostedMessage,
)
from animahub_kit.fakes.slack.signing import Signer, sign
from animahub_kit.fakes.slack.socket_mode import SocketMode
from animahub_kit.fakes.slack.state import SlackState
from animahub_kit.fakes.slack.users import Users
from animahub_kit.fakes.slack.wire import Wire

# what tests import from here; the names this module had before it was split stay importable
__all__ = [
    "ACK_TIMEOUT_S",
    "BOT_SCOPES",
    "HOST",
    "JSON",
    "SLACK_RETRY_DELAYS_S",
    "ApiCall",
    "BotUser",
    "Delivery",
    "FakeSlack",
    "FaultPolicy",
    "Listener",
    "PostedMessage",
    "RateLimit",
    "Served",
    "log",
    "sign",
]


class FakeSlack(Served):
    """The fake Slack: what it holds is its `state` (animahub_kit/fakes/slack/state.py), read and
    changed here through the names tests use; the Web API methods, Socket Mode and the event
    deliveries are animahub_kit/fakes/slack/'s, wired to the routes and methods here."""

    def __init__(
        self,
        *,
        team_id: str = "T0TEAM",
        team: str = "AnimaHub Test",
        signing_secret: str = "fake-signing-secret",
        app_token: str = "xapp-1-fake",
        port: int = 0,
        spread: random.Random | None = None,
    ) -> None:
        self.state = SlackState(team_id, team, signing_secret, app_token)
        self._listener = Listener(port)
        self._background = Background()
        self._socket = SocketMode(self.state, self._listener, self._background, spread)
        self._signer = Signer(self.state)
        self._events = Events(self.state, self._socket, self._signer)
        self._commands = Commands(self.state, self._listener, self._signer)
        self._chat = Chat(self.state, self._events, self._background)
        conversations, users = Conversations(self.state), Users(self.state)
        methods = {
            "auth.test": users.auth_test,
            "chat.postMessage": self._chat.post_message,
            "chat.update": self._chat.update,
            "chat.postEphemeral": self._chat.post_ephemeral,
            "users.info": users.info,
            "conversations.info": conversations.info,
            "conversations.history": conversations.history,
            "conversations.replies": conversations.replies,
        }
        # called with the app-level token, not a bot's
        app_methods = {"apps.connections.open": self._socket.connections_open}
        self._wire = Wire(self.state, methods, app_methods)

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._wire.api)
        app.router.add_get("/link", self._socket.link)
        app.router.add_post("/respond/{key}", self._commands.respond)
        await self._listener.serve(app)
        self._signer.open()
        return self

    async def stop(self) -> None:
        await self._background.cancel()
        await self._socket.close()
        await self._signer.close()
        await self._listener.close()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # settings (the state's; a test may change them) --------------------------------------

    @property
    def team_id(self) -> str:
        return self.state.team_id

    @team_id.setter
    def team_id(self, team_id: str) -> None:
        self.state.team_id = team_id

    @property
    def team(self) -> str:
        return self.state.team

    @team.setter
    def team(self, team: str) -> None:
        self.state.team = team

    @property
    def signing_secret(self) -> str:
        return self.state.signing_secret

    @signing_secret.setter
    def signing_secret(self, secret: str) -> None:
        self.state.signing_secret = secret

    @property
    def app_token(self) -> str:
        return self.state.app_token

    @app_token.setter
    def app_token(self, token: str) -> None:
        self.state.app_token = token

    @property
    def events_url(self) -> str | None:
        """The hub's /slack/events; None: Socket Mode."""
        return self.state.events_url

    @events_url.setter
    def events_url(self, url: str | None) -> None:
        self.state.events_url = url

    @property
    def echo_bot_messages(self) -> bool:
        return self.state.echo_bot_messages

    @echo_bot_messages.setter
    def echo_bot_messages(self, echo: bool) -> None:
        self.state.echo_bot_messages = echo

    @property
    def faults(self) -> FaultPolicy | None:
        """Consulted before every post and edit (animahub_kit/fakes/faults.py); None: no faults."""
        return self.state.faults

    @faults.setter
    def faults(self, policy: FaultPolicy | None) -> None:
        self.state.faults = policy

    # what it holds and saw (the state's) -------------------------------------------------

    @property
    def bots(self) -> dict[str, BotUser]:
        return self.state.bots

    @property
    def users(self) -> dict[str, JSON]:
        return self.state.users

    @property
    def channels(self) -> dict[str, JSON]:
        return self.state.channels

    @property
    def calls(self) -> list[ApiCall]:
        return self.state.calls

    @property
    def messages(self) -> list[PostedMessage]:
        return self.state.messages

    @property
    def ephemeral(self) -> list[JSON]:
        return self.state.ephemeral

    @property
    def responses(self) -> list[JSON]:
        return self.state.responses

    @property
    def deliveries(self) -> list[Delivery]:
        return self.state.deliveries

    @property
    def acks(self) -> dict[str, JSON | None]:
        return self.state.acks

    @property
    def sockets(self) -> list[web.WebSocketResponse]:
        return self.state.sockets

    @property
    def hellos(self) -> int:
        return self.state.hellos

    def calls_of(self, method: str) -> list[ApiCall]:
        return self.state.calls_of(method)

    def bot_messages(self) -> list[PostedMessage]:
        return self.state.bot_messages()

    # the workspace ---------------------------------------------------------------------

    def add_bot(self, token: str, user_id: str, bot_id: str, name: str, **kw: Any) -> BotUser:
        return self.state.add_bot(token, user_id, bot_id, name, **kw)

    def add_user(
        self, user_id: str, name: str, display_name: str = "", real_name: str = ""
    ) -> None:
        self.state.add_user(user_id, name, display_name, real_name)

    def add_channel(self, channel_id: str, name: str = "", kind: str = "channel") -> None:
        self.state.add_channel(channel_id, name, kind)

    def channel_type(self, channel_id: str) -> str:
        return self.state.channel_type(channel_id)

    def next_ts(self) -> str:
        return self.state.next_ts()

    # fault injection ------------------------------------------------------------------

    def rate_limit(self, method: str, times: int, retry_after: float) -> None:
        self._wire.rate_limit(method, times, retry_after)

    def fail(self, method: str, error: str, times: int = 1, status: int = 200) -> None:
        self._wire.fail(method, error, times, status)

    def break_channel(self, channel_id: str, error: str = "channel_not_found") -> None:
        self._chat.broken[channel_id] = error

    def drop_next_send_response(self) -> None:
        """Post the next `chat.postMessage`, then close the connection without answering."""
        self._wire.drop_next = True

    def slow(self, method: str, seconds: float) -> None:
        self._wire.slow(method, seconds)

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
        return self.state.message_event(
            user, channel, text, thread_ts=thread_ts, files=files, ts=ts
        )

    def mention_event(self, message: JSON) -> JSON:
        return self.state.mention_event(message)

    def edit_event(self, original: JSON, text: str) -> JSON:
        return self.state.edit_event(original, text)

    # events: delivery ------------------------------------------------------------------

    def callback(self, event: JSON, event_id: str | None = None) -> JSON:
        return self.state.callback(event, event_id)

    async def deliver(self, event: JSON, event_id: str | None = None) -> Delivery:
        return await self._events.deliver(event, event_id)

    async def redeliver(self, event_id: str, reason: str = "http_timeout") -> Delivery:
        return await self._events.redeliver(event_id, reason)

    async def post_signed(
        self,
        raw: str,
        headers: dict[str, str],
        *,
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> tuple[int, str]:
        return await self._signer.post_signed(raw, headers, secret=secret, timestamp=timestamp)

    async def forged(self, event: JSON) -> int:
        return await self._events.forged(event)

    async def stale(self, event: JSON, age_s: int = 600) -> int:
        return await self._events.stale(event, age_s)

    def command_payload(self, user: str, channel: str, command: str, text: str) -> dict[str, str]:
        return self._commands.payload(user, channel, command, text)

    async def command(self, user: str, channel: str, command: str, text: str) -> tuple[int, str]:
        return await self._commands.command(user, channel, command, text)

    # Socket Mode -------------------------------------------------------------------------

    def push(self, kind: str, payload: JSON, **extra: Any) -> str:
        return self._socket.push(kind, payload, **extra)

    async def refresh_sockets(self) -> None:
        await self._socket.refresh_sockets()

    async def deliver_until_acked(
        self,
        event: JSON,
        *,
        retry_delays_s: tuple[float, ...] = SLACK_RETRY_DELAYS_S,
        ack_timeout_s: float = ACK_TIMEOUT_S,
    ) -> Delivery:
        return await self._events.deliver_until_acked(
            event, retry_delays_s=retry_delays_s, ack_timeout_s=ack_timeout_s
        )

    async def ack(self, envelope_id: str, timeout_s: float = 10.0) -> JSON | None:
        return await self._socket.ack(envelope_id, timeout_s)
