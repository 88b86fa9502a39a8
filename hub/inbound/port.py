"""`HubPort` as the hub answers it (hub/adapter.py): what each adapter is handed at its
start, made of the hub's parts. The composition root (hub/app.py) builds one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hub.adapter import (
    Caller,
    ConnectionHold,
    ConversationEntry,
    PlatformState,
    Receipt,
    TranscriptEntry,
    TurnEvent,
)
from hub.animas import AnimaRegistry
from hub.clock import Clock
from hub.commands.handler import CommandService
from hub.delivery.outbox import Outbox
from hub.delivery.platforms import Platforms
from hub.inbound import failed_updates
from hub.inbound.dispatch import Dispatcher
from hub.inbound.ingress import Ingress, storable
from hub.messages import Address, Inbound, PlatformUser
from hub.people.speaker import People
from hub.redaction.redact import redact
from hub.store import cursors
from hub.store.connections import SoleConnection
from hub.store.db import Database
from hub.turns.events import EventBus
from hub.turns.outcome import stored_outcome
from hub.views.transcript import conversations, transcript


@dataclass(frozen=True, slots=True, kw_only=True)
class PortParts:
    """The hub's parts an adapter's requests reach."""

    db: Database
    clock: Clock
    ingress: Ingress
    commands: CommandService
    dispatcher: Dispatcher
    events: EventBus
    animas: AnimaRegistry
    people: People
    platforms: Platforms
    outbox: Outbox
    # The hold on a platform connection one process at a time may keep (hub/store/connections.py).
    connections: Callable[[str, float], ConnectionHold] = lambda _key, _quiet_s: SoleConnection()


class Port:
    """Implements `HubPort`: each of its small ports over the part that owns the answer."""

    def __init__(self, parts: PortParts) -> None:
        self._parts = parts

    # Receiving -------------------------------------------------------------------------

    async def receive(self, inbound: Inbound) -> Receipt:
        parts = self._parts
        inbound = storable(inbound)  # identity and commands store its names and text too
        row, duplicate = parts.ingress.accept(inbound)
        if inbound.command is not None:
            # Answered at once as the platform's command response: no turn, no outbox.
            reply = await parts.commands.answer(row, inbound, duplicate)
            return Receipt(row.id, duplicate, reply=redact(reply)[0])
        if not duplicate:
            parts.dispatcher.dispatch(row, inbound)
        return Receipt(row.id, duplicate)

    def update_failed(self, platform: str, update_id: str, error: BaseException, raw: Any) -> None:
        now = self._parts.clock.now()
        failed_updates.record(self._parts.db, now, platform, update_id, error, raw)

    # Reporting -------------------------------------------------------------------------

    def report(self, platform: str, state: PlatformState, reason: str = "") -> None:
        self._parts.platforms.report(platform, state, reason)

    # Cursors ---------------------------------------------------------------------------

    def load_cursor(self, key: str) -> str | None:
        return cursors.load_cursor(self._parts.db, key)

    def save_cursor(self, key: str, value: str) -> None:
        cursors.save_cursor(self._parts.db, key, value, self._parts.clock.now())

    def forget_cursor(self, key: str) -> None:
        cursors.forget_cursor(self._parts.db, key)

    def prune_cursors(self, prefix: str, older_than_s: float) -> int:
        before = self._parts.clock.now() - timedelta(seconds=older_than_s)
        return cursors.prune_cursors(self._parts.db, prefix, before)

    # Conversing ------------------------------------------------------------------------

    def anima_names(self) -> list[str]:
        return self._parts.animas.names()

    def speaker(self, caller: Caller, platform: str, user: str | None) -> PlatformUser:
        return self._parts.people.speaker(caller, platform, user)

    async def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]:
        events = self._parts.events
        if events.knows(inbox_id):
            async for event in events.subscribe(inbox_id):
                yield event
            return
        # Not running in this process (answered before a restart, or never routed).
        for event in stored_outcome(self._parts.db, inbox_id):
            yield event

    def transcript(self, address: Address, limit: int) -> list[TranscriptEntry]:
        return transcript(self._parts.db, address, limit)

    def conversations(
        self, address: Address, limit: int, text: str = ""
    ) -> list[ConversationEntry]:
        return conversations(self._parts.db, address, limit, text)

    # Connecting ------------------------------------------------------------------------

    def connection(self, key: str, quiet_s: float) -> ConnectionHold:
        return self._parts.connections(key, quiet_s)

    # Previewing ------------------------------------------------------------------------

    def pending_delivery(self, address: Address, besides: str | None = None) -> bool:
        return self._parts.outbox.pending(address, besides)
