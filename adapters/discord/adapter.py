"""The Discord platform: a gateway bot (discord.py) with the message-content intent.

Messages arrive over the gateway (DMs, guild channels, threads), are normalized and handed
to the hub; replies leave through the outbox as REST posts that reply to the triggering
message, and a reply being written is previewed by posting once and editing
(adapters/streaming.py). `/anima …` and `/whoami` are application commands, synced at start
and answered with the hub's command reply; with a public key configured, the same commands
are also accepted at the HTTP interactions endpoint.

discord.py reads its REST base (`Route.BASE`) and gateway (`DiscordWebSocket.DEFAULT_GATEWAY`)
from class attributes, not from the client, so `start` sets both from the settings; they are
process-wide, which is fine for the one Discord application a hub serves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord import rest
from adapters.discord.catchup import ChannelOrder, Seen, catch_up
from adapters.discord.commands import (
    EPHEMERAL,
    build_tree,
    gateway_inbound,
    http_inbound,
    reply_text,
)
from adapters.discord.interactions import InteractionsEndpoint
from adapters.discord.normalize import Identities, address_of, to_inbound
from adapters.discord.outbound import Outbound
from adapters.discord.render import render
from adapters.discord.rest import RestBot
from adapters.discord.settings import DiscordSettings
from hub.adapter import (
    Capabilities,
    HubPort,
    MarkdownDialect,
    PlatformUnauthorized,
    PlatformUnavailable,
    handle_or_keep,
    mentioned,
)
from hub.messages import Address, AddressKind, Inbound, OutboundChunk

if TYPE_CHECKING:
    from fastapi import APIRouter

log = logging.getLogger(__name__)

REAL_GATEWAY = "wss://gateway.discord.gg/"
READY_TIMEOUT_S = 30.0


class GatewayLost(Exception):
    """The gateway session did not start (or ended before READY)."""


class _Gateway(discord.Client):
    """The gateway session; every event it cares about goes to the adapter."""

    def __init__(self, adapter: DiscordAdapter) -> None:
        intents = discord.Intents.default()
        intents.message_content = True  # privileged: enabled in the developer portal
        super().__init__(intents=intents, max_ratelimit_timeout=rest.SDK_WAIT_LIMIT_S)
        self.adapter = adapter
        self.session_started = asyncio.Event()
        self.tree = build_tree(self, adapter.on_command)

    async def on_connect(self) -> None:  # READY was received (on_ready waits 2 s more)
        self.session_started.set()
        self.adapter.session_started()  # before any message of this session is handled

    async def on_message(self, message: discord.Message) -> None:
        await self.adapter.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.adapter.on_edit(payload)


class DiscordAdapter:
    name = "discord"
    capabilities = Capabilities(
        max_text=2000,
        dialect=MarkdownDialect.DISCORD,
        edits=True,
        threads=True,
        reactions=False,
        slash_commands=True,
    )
    defer_after_s = 2.0  # a command not answered by then is deferred (Discord allows 3 s)

    def __init__(self, settings: DiscordSettings) -> None:
        if settings.bot_token is None:
            raise ValueError("the Discord adapter needs discord.bot_token")
        self._settings = settings
        self._hub: HubPort | None = None
        self._client: _Gateway | None = None
        self._gateway_task: asyncio.Task[None] | None = None
        self._ids = Identities()
        self._outbound = Outbound(self.capabilities.max_text)
        self._order = ChannelOrder()
        self._seen: Seen | None = None
        self._catching_up: asyncio.Task[int] | None = None
        # The HTTP interactions endpoint, when a public key is configured.
        self.interactions: InteractionsEndpoint | None = None
        if settings.public_key:
            self.interactions = InteractionsEndpoint(
                settings.public_key, http_inbound, self._answer_http, self._follow_up_http
            )

    # lifecycle -------------------------------------------------------------------------

    async def start(self, hub: HubPort) -> None:
        token = self._settings.bot_token
        assert token is not None  # checked in __init__
        self._hub = hub
        self._seen = Seen(hub)
        self._outbound.open(hub)
        Route.BASE = self._settings.api_url.rstrip("/")
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self._settings.gateway_url or REAL_GATEWAY)
        client = self._client = _Gateway(self)
        try:
            await self._connect(client, token.get_secret_value())
        except discord.LoginFailure as exc:
            await self.stop()
            raise PlatformUnauthorized(f"Discord rejected the bot token: {exc}") from exc
        except discord.PrivilegedIntentsRequired as exc:
            await self.stop()
            raise PlatformUnauthorized(
                "Discord refused the gateway session: enable the Message Content intent "
                "for this bot (developer portal, Bot, Privileged Gateway Intents)"
            ) from exc
        except (*rest.SDK_ERRORS, GatewayLost) as exc:
            await self.stop()
            raise PlatformUnavailable(f"Discord cannot be reached: {exc}") from exc
        except BaseException:
            await self.stop()
            raise
        assert client.user is not None  # login sets it
        log.info("Discord bot %s (%s) is connected", client.user, client.user.id)

    async def _connect(self, client: _Gateway, token: str) -> None:
        """Log in, learn the Animas' bots, sync the commands, open the gateway session."""
        await client.login(token)
        assert client.user is not None  # login sets it
        self._outbound.main = RestBot(client.http, client.user.id, client.user.name)
        self._ids.bot_id = client.user.id
        for anima, secret in self._settings.anima_tokens.items():
            try:
                bot = await rest.login(secret.get_secret_value(), f"the Anima {anima!r}")
            except RuntimeError as exc:  # a rejected token: as on Slack, not fatal
                log.error("%s; the main bot answers for %s", exc, anima)
                continue
            self._outbound.anima_bots[anima] = bot
            self._ids.anima_bots[bot.user_id] = anima
        await self._sync_commands(client)
        self._gateway_task = asyncio.create_task(client.connect(), name="discord-gateway")
        await self._until_connected(client, self._gateway_task)

    async def _sync_commands(self, client: _Gateway) -> None:
        try:
            synced = await client.tree.sync()
        except discord.HTTPException as exc:
            log.error("could not register the Discord slash commands: %s", exc)
            return
        log.info("registered %d Discord application commands", len(synced))

    async def _until_connected(self, client: _Gateway, gateway: asyncio.Task[None]) -> None:
        started = asyncio.ensure_future(client.session_started.wait())
        try:
            await asyncio.wait(
                {started, gateway}, timeout=READY_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            started.cancel()
        if client.session_started.is_set():
            return
        if gateway.done():
            exc = gateway.exception()
            if isinstance(exc, discord.PrivilegedIntentsRequired | discord.LoginFailure):
                raise exc
            raise GatewayLost(f"the gateway connection ended: {exc!r}") from exc
        raise GatewayLost(
            f"no READY from the gateway ({DiscordWebSocket.DEFAULT_GATEWAY}) "
            f"within {READY_TIMEOUT_S:.0f} s"
        )

    async def stop(self) -> None:
        if self._catching_up is not None:
            self._catching_up.cancel()
            await asyncio.gather(self._catching_up, return_exceptions=True)
            self._catching_up = None
        await self._outbound.close()
        if self.interactions is not None:
            await self.interactions.close()
        if self._client is not None:
            await self._client.close()
        if self._gateway_task is not None:
            await asyncio.gather(self._gateway_task, return_exceptions=True)
        for bot in self._outbound.anima_bots.values():
            await bot.http.close()
        self._client, self._gateway_task, self._outbound.main = None, None, None
        self._outbound.anima_bots.clear()
        self._hub = None

    @property
    def hub(self) -> HubPort:
        if self._hub is None:
            raise RuntimeError("the Discord adapter is not running")
        return self._hub

    # inbound ---------------------------------------------------------------------------

    def session_started(self) -> None:
        """A new gateway session (not a resume): read back what it did not see
        (catchup.py). Live messages wait meanwhile, so each channel stays in order."""
        client, seen = self._client, self._seen
        if client is None or seen is None:
            return
        if self._catching_up is not None and not self._catching_up.done():
            self._catching_up.cancel()
        self._order.hold()
        self._catching_up = asyncio.create_task(
            catch_up(client, seen, self._order, self._take), name="discord-catch-up"
        )

    async def on_message(self, message: discord.Message) -> None:
        await self._order.wait_open()
        await self._take(message)

    async def _take(self, message: discord.Message) -> None:
        """One message into the hub, in its channel's order; its cursor moves once stored."""
        channel_id = message.channel.id
        async with self._order.turn(channel_id):
            if not self._ids.is_own(message.author.id):
                # One nobody can handle is kept as failed; the channel's cursor moves on.
                await handle_or_keep(
                    self.hub,
                    "discord",
                    str(message.id),
                    lambda: _raw(message),
                    self._ingest(message),
                )
            if self._seen is not None:
                self._seen.mark(channel_id, message.id)

    async def _ingest(self, message: discord.Message) -> None:
        inbound = await self._normalize(message, None)
        if inbound is None:
            return
        receipt = await self.hub.receive(inbound)
        if not receipt.duplicate and not inbound.sender.is_bot:
            self._outbound.follow(receipt.inbox_id, inbound.address, inbound.event_id)

    async def on_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        data: Mapping[str, Any] = payload.data
        if not data.get("edited_timestamp") or "content" not in data:
            return  # an embed resolved or a flag changed: nobody edited the text
        message = payload.message
        before = payload.cached_message
        if self._ids.is_own(message.author.id):
            return
        if before is not None and before.content == message.content:
            return
        inbound = await self._normalize(message, data)
        if inbound is not None:
            await self.hub.receive(inbound)

    async def _normalize(
        self, message: discord.Message, edited: Mapping[str, Any] | None
    ) -> Inbound | None:
        guild_id = message.guild.id if message.guild is not None else None
        channel: Any = message.channel
        address = address_of(channel, guild_id)
        if address is None and self._client is not None:  # a channel not in discord.py's cache
            try:
                channel = await self._client.fetch_channel(message.channel.id)
            except discord.HTTPException as exc:
                log.warning("dropped message %s: channel unknown (%s)", message.id, exc)
                return None
            address = address_of(channel, guild_id)
        if address is None:
            log.warning("dropped message %s: unsupported channel %r", message.id, channel)
            return None
        addressed = self._addressed(message, address, channel)
        inbound = to_inbound(message, address, self._ids, addressed=addressed, edited=edited)
        return self._continue_with_author(message, inbound)

    def _continue_with_author(self, message: discord.Message, inbound: Inbound) -> Inbound:
        """A reply to an Anima's message, naming no Anima, is meant for that Anima."""
        reference = message.reference
        replied = reference.message_id if reference is not None else None
        anima = self._outbound.anima_of(replied) if replied is not None else None
        if anima is None or mentioned(inbound, self.hub.anima_names()) is not None:
            return inbound
        return replace(inbound, mentions=(*inbound.mentions, anima))

    def _addressed(self, message: discord.Message, address: Address, channel: Any) -> bool:
        """DMs, mentions of a bot of ours, replies to our messages, and threads we are in."""
        if address.kind is AddressKind.DM:
            return True
        if any(self._ids.is_own(user.id) for user in message.mentions):
            return True
        guild = message.guild
        own_role = guild.self_role if guild is not None else None
        if own_role is not None and own_role in message.role_mentions:
            return True
        reference = message.reference
        if reference is not None and reference.message_id is not None:
            resolved = reference.resolved
            if self._outbound.is_ours(reference.message_id) or (
                isinstance(resolved, discord.Message) and self._ids.is_own(resolved.author.id)
            ):
                return True
        if isinstance(channel, discord.Thread):
            return (
                self._outbound.posted_in(channel.id)
                or channel.me is not None
                or channel.owner_id == self._ids.bot_id
            )
        return False

    # commands --------------------------------------------------------------------------

    async def on_command(self, interaction: discord.Interaction) -> None:
        """A slash command over the gateway: answered privately with the hub's reply."""
        task = asyncio.ensure_future(self.hub.receive(gateway_inbound(interaction)))
        done, _ = await asyncio.wait({task}, timeout=self.defer_after_s)
        if task in done:
            await interaction.response.send_message(reply_text(task.result().reply), ephemeral=True)
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        receipt = await task
        await interaction.followup.send(reply_text(receipt.reply), ephemeral=True)

    async def _answer_http(self, inbound: Inbound) -> str:
        receipt = await self.hub.receive(inbound)
        return reply_text(receipt.reply)

    async def _follow_up_http(self, payload: Mapping[str, Any], text: str) -> None:
        """The late answer to a deferred HTTP interaction: its first follow-up message
        replaces the "thinking…" response."""
        route = Route(
            "POST",
            "/webhooks/{webhook_id}/{webhook_token}",
            webhook_id=int(payload["application_id"]),
            webhook_token=str(payload["token"]),
        )
        body = {"content": text, "flags": EPHEMERAL, "allowed_mentions": {"parse": []}}
        try:
            await self._outbound.main_bot().http.request(route, json=body)
        except discord.HTTPException as exc:
            log.error("could not answer Discord interaction %s: %s", payload.get("id"), exc)

    # outbound --------------------------------------------------------------------------

    def render(self, markdown: str) -> str:
        return render(markdown)

    async def send(self, chunk: OutboundChunk) -> str:
        return await self._outbound.send(chunk)

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        await self._outbound.edit(address, message_id, text)

    def routers(self) -> Sequence[APIRouter]:
        return [self.interactions.router()] if self.interactions is not None else []


def _raw(message: discord.Message) -> dict[str, object]:
    """What a failed message is kept with (discord.py keeps no JSON of it)."""
    return {
        "id": str(message.id),
        "channel_id": str(message.channel.id),
        "author_id": str(message.author.id),
        "content": message.content,
    }
