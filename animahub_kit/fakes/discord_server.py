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
:attr:`FakeDiscord.faults` (animahub_kit/fakes/faults.py) decides for every post and edit.

This module wires the pieces in animahub_kit/fakes/discord/ (its docstring names them) behind
:class:`FakeDiscord`, and keeps the names tests import from here.
"""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.discord import objects
from animahub_kit.fakes.discord.channels import Channels
from animahub_kit.fakes.discord.gateway import (
    HEARTBEAT_INTERVAL_MS,
    MESSAGE_CONTENT_INTENT,
    Gateway,
)
from animahub_kit.fakes.discord.interactions import EPHEMERAL, Interactions
from animahub_kit.fakes.discord.login import Login
from animahub_kit.fakes.discord.objects import JSON, iso
from animahub_kit.fakes.discord.state import DISCORD_EPOCH_MS, DiscordState, FakeMessage, Recorded
from animahub_kit.fakes.discord.wire import API, BODY, BOT, Handler, Wire, error, reply
from animahub_kit.fakes.faults import FaultPolicy, RateLimit
from animahub_kit.fakes.listener import HOST, Listener

# what tests import from here; the names this module had before it was split stay importable
__all__ = [
    "API",
    "BODY",
    "BOT",
    "DISCORD_EPOCH_MS",
    "EPHEMERAL",
    "HEARTBEAT_INTERVAL_MS",
    "HOST",
    "JSON",
    "MESSAGE_CONTENT_INTENT",
    "FakeDiscord",
    "FakeMessage",
    "FaultPolicy",
    "Handler",
    "Listener",
    "RateLimit",
    "Recorded",
    "error",
    "iso",
    "reply",
]


class FakeDiscord:
    """The fake Discord: what it holds is its `state` (animahub_kit/fakes/discord/state.py), read
    and changed here through the names tests use; the gateway and the REST handlers are
    animahub_kit/fakes/discord/'s, wired to the routes in `start`."""

    def __init__(
        self,
        bot_token: str = "fake-main-bot-token",
        bot_name: str = "animahub",
        guild_name: str = "Test Guild",
        message_content_enabled: bool = True,
        port: int = 0,  # 0: a free port, chosen at start
    ) -> None:
        self.state = DiscordState(bot_token, bot_name, guild_name, message_content_enabled)
        self._listener = Listener(port)
        self._gateway = Gateway(self.state, self._listener)
        self._wire = Wire(self.state)
        self._login = Login(self.state, self._gateway)
        self._channels = Channels(self.state, self._gateway)
        self._interactions = Interactions(self.state)

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(middlewares=[self._wire.middleware])
        r = app.router
        login, channels, interactions = self._login, self._channels, self._interactions
        r.add_get("/gateway", self._gateway.handle)
        r.add_get(f"{API}/users/@me", login.me)
        r.add_get(f"{API}/oauth2/applications/@me", login.application)
        r.add_get(f"{API}/gateway", login.gateway_url)
        r.add_get(f"{API}/gateway/bot", login.gateway_url)
        r.add_get(API + "/channels/{channel_id}", channels.get)
        r.add_get(API + "/channels/{channel_id}/messages", channels.history)
        r.add_post(API + "/channels/{channel_id}/messages", channels.create_message)
        r.add_patch(API + "/channels/{channel_id}/messages/{message_id}", channels.edit_message)
        r.add_post(f"{API}/users/@me/channels", channels.open_dm)
        r.add_put(API + "/applications/{app_id}/commands", interactions.overwrite_commands)
        r.add_post(API + "/interactions/{interaction_id}/{token}/callback", interactions.callback)
        r.add_post(API + "/webhooks/{app_id}/{token}", interactions.followup)
        r.add_patch(API + "/webhooks/{app_id}/{token}/messages/{message_id}", interactions.followup)
        await self._listener.serve(app)

    async def stop(self) -> None:
        await self._gateway.close()
        await self._listener.close()

    @property
    def running(self) -> bool:
        return self._listener.running

    @property
    def port(self) -> int:
        return self._listener.port

    @property
    def url(self) -> str:
        return self._listener.url

    @property
    def api_url(self) -> str:
        return self.url + API

    @property
    def gateway_url(self) -> str:
        return self._gateway.url

    # what it holds (the state's; `faults` and the two settings read live can be set) ---

    @property
    def bot_token(self) -> str:
        return self.state.bot_token

    @property
    def bot_name(self) -> str:
        return self.state.bot_name

    @property
    def guild_name(self) -> str:
        return self.state.guild_name

    @guild_name.setter
    def guild_name(self, name: str) -> None:
        self.state.guild_name = name

    @property
    def message_content_enabled(self) -> bool:
        return self.state.message_content_enabled

    @message_content_enabled.setter
    def message_content_enabled(self, enabled: bool) -> None:
        self.state.message_content_enabled = enabled

    @property
    def faults(self) -> FaultPolicy | None:
        return self.state.faults

    @faults.setter
    def faults(self, policy: FaultPolicy | None) -> None:
        self.state.faults = policy

    @property
    def app_id(self) -> str:
        return self.state.app_id

    @property
    def guild_id(self) -> str:
        return self.state.guild_id

    @property
    def bot(self) -> JSON:
        return self.state.bot

    @property
    def bots(self) -> dict[str, JSON]:
        return self.state.bots

    @property
    def users(self) -> dict[str, JSON]:
        return self.state.users

    @property
    def channels(self) -> dict[str, JSON]:
        return self.state.channels

    @property
    def dm_channels(self) -> dict[str, str]:
        return self.state.dm_channels

    @property
    def messages(self) -> dict[str, FakeMessage]:
        return self.state.messages

    @property
    def requests(self) -> list[Recorded]:
        return self.state.requests

    @property
    def identifies(self) -> list[JSON]:
        return self.state.identifies

    @property
    def gateway_queries(self) -> list[dict[str, str]]:
        return self.state.gateway_queries

    @property
    def command_overwrites(self) -> list[list[JSON]]:
        return self.state.command_overwrites

    @property
    def interaction_responses(self) -> list[JSON]:
        return self.state.interaction_responses

    @property
    def followups(self) -> list[JSON]:
        return self.state.followups

    @property
    def dispatched(self) -> list[tuple[str, JSON]]:
        return self.state.dispatched

    # people and places -----------------------------------------------------------------

    def snowflake(self) -> str:
        return self.state.snowflake()

    def add_bot(self, token: str, name: str) -> JSON:
        return self.state.add_bot(token, name)

    def user(self, name: str, *, bot: bool = False) -> JSON:
        return self.state.user(name, bot=bot)

    def add_text_channel(self, name: str, position: int = 0) -> JSON:
        return self.state.add_text_channel(name, position)

    def channel_id(self, name: str) -> str:
        return self.state.channel_id(name)

    def dm_channel(self, user: JSON) -> str:
        return self.state.dm_channel(user)

    def parent_of(self, channel_id: str) -> str | None:
        return self.state.parent_of(channel_id)

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
        return self.state.message_payload(
            author,
            channel_id,
            content,
            mentions=mentions,
            attachments=attachments,
            reference=reference,
        )

    def member(self, user: JSON | None) -> JSON:
        return objects.member(user)

    def attachment(self, filename: str, url: str, content_type: str, size: int) -> JSON:
        return self.state.attachment(filename, url, content_type, size)

    async def send_message(self, data: JSON) -> JSON:
        """A person's message: stored and dispatched as MESSAGE_CREATE (to the sessions
        open now: a bot that is offline never receives it over the gateway, and a new
        session does not replay it; it is in the channel's history)."""
        self.state.store(FakeMessage(data, data["channel_id"], data["author"]["id"]))
        await self.dispatch("MESSAGE_CREATE", data)
        return data

    def online(self) -> bool:
        return self._gateway.online()

    async def edit_message(self, message_id: str, content: str) -> JSON:
        """A person edits a message: MESSAGE_UPDATE with the full message, as API v10 sends."""
        data = self.state.edit(self.state.messages[message_id], content)
        await self.dispatch("MESSAGE_UPDATE", data)
        return data

    async def start_thread(
        self, message_id: str, owner: JSON, name: str = "thread", *, announce: bool = True
    ) -> JSON:
        """A public thread started from a message: it has the message's id. `announce`:
        dispatch THREAD_CREATE (False: the bot learns of it only from a message in it)."""
        thread = self.state.add_thread(message_id, owner, name)
        if announce:
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return thread

    def interaction_payload(
        self, user: JSON, channel_id: str, name: str, options: list[JSON]
    ) -> JSON:
        return self.state.interaction_payload(user, channel_id, name, options)

    async def dispatch(self, event: str, data: JSON) -> None:
        await self._gateway.dispatch(event, data)

    async def redispatch(self, event: str, data: JSON) -> None:
        """Deliver an event again, as Discord may after a resume."""
        await self.dispatch(event, data)

    async def reconnect(self) -> None:
        await self._gateway.reconnect()

    # faults ----------------------------------------------------------------------------

    def rate_limit(self, method: str, route: str, times: int, retry_after: float) -> None:
        self._wire.rate_limit(method, route, times, retry_after)

    def drop_next_send_response(self) -> None:
        """Create the next message a bot posts, then close the connection unanswered."""
        self._channels.drop_next = True

    # records ---------------------------------------------------------------------------

    def requests_to(self, method: str, route: str) -> list[Recorded]:
        return self._wire.requests_to(method, route)

    def bot_messages(self) -> list[FakeMessage]:
        return self.state.bot_messages()

    def intents(self) -> int:
        return self.state.intents()
