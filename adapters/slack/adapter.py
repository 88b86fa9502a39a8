"""The Slack platform: one Slack app (plus optional per-Anima apps) through slack-bolt.

Events arrive over Socket Mode when `slack.app_token` is set, else at `POST /slack/events`
(the Events API; see events.py). Each is normalized (normalize.py) and handed to the hub in
the order it arrived in its channel; replies leave through the outbox, rendered to mrkdwn
(render.py), split at 3,900 characters and posted in the thread of the message they answer.
While an Anima writes, its reply is previewed by posting it once and editing it as it grows
(adapters/streaming.py); the outbox's first chunk then edits the preview into the final text.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from adapters.previews import Intended
from adapters.slack.directory import Directory
from adapters.slack.events import SocketMode, build_app, events_router
from adapters.slack.normalize import Normalizer
from adapters.slack.outbound import Outbound, web_client
from adapters.slack.render import to_mrkdwn
from adapters.slack.settings import SlackSettings
from adapters.slack.verify import event_problem
from adapters.streaming import EditStreamer
from hub.adapter import (
    Capabilities,
    DeliveryError,
    HubPort,
    MarkdownDialect,
    MessageTooLarge,
    PermanentDeliveryError,
    PlatformUnauthorized,
    PlatformUnavailable,
    handle_or_keep,
)
from hub.messages import Address, DeliveryKind, Inbound, OutboundChunk

if TYPE_CHECKING:
    from fastapi import APIRouter

log = logging.getLogger(__name__)
MAX_TEXT = 3900  # Slack's hard limit is 40,000; longer messages are cut off in the client
RECEIVED = "Received."
NOT_RUNNING = "the hub is not running"
_PREVIEWED = (DeliveryKind.REPLY, DeliveryKind.NOTICE)
_REMEMBERED = 5_000
_DRAIN_S = 5.0


class _Bounded(OrderedDict[str, str]):
    """An insertion-ordered map that forgets its oldest entries."""

    def put(self, key: str, value: str) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _REMEMBERED:
            self.popitem(last=False)


class _Sequencer:
    """Events of one channel reach the hub in the order Slack delivered them."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class SlackAdapter:
    name = "slack"
    capabilities = Capabilities(
        max_text=MAX_TEXT,
        dialect=MarkdownDialect.SLACK_MRKDWN,
        edits=True,
        threads=True,
        reactions=False,
        slash_commands=True,
    )

    def __init__(self, settings: SlackSettings) -> None:
        if settings.bot_token is None:
            raise ValueError("slack.bot_token is not set")
        api_url = settings.api_url
        shared = web_client(settings.bot_token.get_secret_value(), api_url)
        own = {
            anima: web_client(token.get_secret_value(), api_url)
            for anima, token in settings.anima_tokens.items()
        }
        self._outbound = Outbound(shared, own)
        self._normalizer = Normalizer(Directory(shared), self._outbound.bots)
        secret = settings.signing_secret.get_secret_value() if settings.signing_secret else ""
        self._secret = secret
        self._app = build_app(shared, secret, self._on_event, self._on_command)
        self._socket = (
            SocketMode(self._app, settings.app_token.get_secret_value(), web_client(None, api_url))
            if settings.app_token is not None
            else None
        )
        # Without a signing secret nothing could be verified: no HTTP route at all then.
        self._http = self._socket is None and bool(secret)
        self._streamer = EditStreamer(
            "slack", self._preview_post, self.edit, self.render, MAX_TEXT, find_lost=self._find_lost
        )
        self._hub: HubPort | None = None
        self._not_started = NOT_RUNNING  # why events are refused: the last start's failure
        self._sequencer = _Sequencer()
        self._threads = _Bounded()  # threads we posted in: replies there are addressed to us

    # Adapter protocol -----------------------------------------------------------------

    async def start(self, hub: HubPort) -> None:
        try:
            await self._outbound.identify()
        except DeliveryError as exc:
            refused = isinstance(exc, PermanentDeliveryError)  # invalid_auth, token_revoked, …
            reason = (
                f"Slack refused slack.bot_token: {exc}"
                if refused
                else f"Slack cannot be reached: {exc}"
            )
            self._not_started = f"the Slack adapter is not running: {reason}"
            raise (PlatformUnauthorized if refused else PlatformUnavailable)(reason) from exc
        self._hub = hub
        self._streamer.open(hub)
        if self._socket is not None:
            await self._socket.start()
        log.info(
            "Slack connected to team %s via %s",
            self._outbound.team_id,
            "Socket Mode" if self._socket else "the Events API",
        )

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.stop()
        await self._streamer.close()
        self._hub = None
        self._not_started = NOT_RUNNING

    def render(self, markdown: str) -> str:
        return to_mrkdwn(markdown)

    async def send(self, chunk: OutboundChunk) -> str:
        if chunk.index == 0 and chunk.kind in _PREVIEWED and chunk.answers:
            # The preview stays in the book after this edit: a resend edits it again.
            preview = await self._streamer.claim(chunk.answers, chunk.address)
            if preview is not None:
                ts = preview.message_id
                try:
                    await self._outbound.update(chunk.address, ts, chunk.text, preview.anima)
                except PermanentDeliveryError as exc:  # deleted meanwhile: post it anew
                    log.warning("preview %s cannot be edited (%s); posting the reply", ts, exc)
                    self._streamer.drop(chunk.answers)
                else:
                    return ts
        if chunk.maybe_sent_since is not None:  # the hub stopped while sending it
            since = chunk.maybe_sent_since.timestamp()
            found = await self._outbound.find(
                chunk.address, chunk.idempotency_key, since, chunk.anima
            )
            if found is not None:
                log.info("delivery %s was posted before the stop: %s", chunk.delivery_id, found)
                return found
        ts = await self._outbound.post(
            chunk.address, chunk.text, chunk.anima, marker=chunk.idempotency_key
        )
        self._note_thread(chunk.address)
        return ts

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        """Replace a posted message's text (already rendered for Slack)."""
        await self._outbound.update(address, message_id, text)

    def routers(self) -> Sequence[APIRouter]:
        if not self._http:
            return []
        return [events_router(self._app, self._secret, self._not_ready)]

    def _not_ready(self) -> str | None:
        return None if self._hub is not None else self._not_started

    # inbound ----------------------------------------------------------------------------

    async def _on_event(self, body: dict[str, Any]) -> None:
        """Normalize and hand the event to the hub; Bolt acknowledges it afterwards."""
        event = body.get("event")
        if not isinstance(event, dict):
            return
        # Over HTTP a malformed event was refused already; over Socket Mode it is dropped.
        malformed = event_problem(event)
        if malformed is not None:
            log.warning("Slack event %s dropped: %s", body.get("event_id"), malformed)
            return
        team = str(body.get("team_id") or event.get("team") or "")
        if self._hub is None:
            await self._ingest(event, team)  # says it arrived while the hub is stopped
            return
        # An event nobody can handle is kept as failed and acknowledged, not redelivered.
        event_id = str(body.get("event_id") or event.get("client_msg_id") or "?")
        await handle_or_keep(
            self._hub, self.name, event_id, lambda: body, self._ingest(event, team)
        )

    async def _ingest(self, event: dict[str, Any], team_id: str) -> None:
        async with self._sequencer.turn(str(event.get("channel") or "")):
            inbound = await self._normalizer.message(
                event, team_id or self._outbound.team_id, self._in_our_thread
            )
            if inbound is not None:
                await self._accept(inbound)

    async def _accept(self, inbound: Inbound) -> None:
        hub = self._hub
        if hub is None:
            log.error("Slack event %s arrived while the hub is stopped", inbound.event_id)
            return
        try:
            receipt = await hub.receive(inbound)
        except MessageTooLarge as exc:
            log.warning("Slack message %s refused: %s", inbound.event_id, exc)
            await self._outbound.ephemeral(inbound.address, inbound.sender.user_id, exc.notice)
            return
        if receipt.duplicate:
            log.debug("Slack event %s seen before", inbound.event_id)
            return
        if inbound.edit_of is None and not inbound.sender.is_bot:
            self._streamer.follow(receipt.inbox_id, inbound.address, inbound.event_id)

    async def _on_command(self, body: dict[str, Any]) -> str:
        hub = self._hub
        if hub is None:
            raise RuntimeError("the hub is not running")
        inbound = await self._normalizer.command(body)
        try:
            receipt = await hub.receive(inbound)
        except MessageTooLarge as exc:
            return f"That command is too long: {exc}."
        return receipt.reply or RECEIVED

    async def _in_our_thread(self, address: Address) -> bool:
        if str(address) in self._threads:
            return True
        hub = self._hub
        return hub is not None and any(
            entry.author_kind == "anima" for entry in hub.transcript(address, 200)
        )

    # outbound helpers -------------------------------------------------------------------

    async def _preview_post(
        self, address: Address, text: str, key: str | None, anima: str | None
    ) -> str:
        ts = await self._outbound.post(address, text, anima, marker=_preview_marker(key))
        self._note_thread(address)
        return ts

    async def _find_lost(self, address: Address, key: str, intent: Intended) -> str | None:
        return await self._outbound.find(address, _preview_marker(key), intent.since, intent.anima)

    def _note_thread(self, address: Address) -> None:
        if address.thread:
            self._threads.put(str(address), "")


def _preview_marker(key: str | None) -> str:
    return f"preview:{key or ''}"
