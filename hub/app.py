"""The composition root: the only place concrete parts are wired together (DESIGN §2, §7.5)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping

from sqlmodel import select

from hub.adapter import (
    Adapter,
    AdapterFactory,
    Receipt,
    TranscriptEntry,
    TurnEvent,
    discover,
)
from hub.animas import Anima, AnimaRegistry
from hub.dispatch import Dispatcher
from hub.events import EventBus
from hub.identity import IdentityService
from hub.ingress import Ingress
from hub.llm import LiteLLMResponder
from hub.memory.service import open_memory
from hub.memory.tool import remember_about_person_tool, search_memory_tool
from hub.messages import Address, Inbound
from hub.offline import OfflineResponder
from hub.outbox import Outbox
from hub.roles import load_roles
from hub.routing import Router
from hub.runtime import Responders, Runtime
from hub.settings import Settings
from hub.store.db import Database
from hub.store.models import DeliveryRow, InboxItem
from hub.tools import ToolRegistry, builtin_tools
from hub.transcript import transcript

log = logging.getLogger(__name__)


class Hub:
    """Implements `HubPort` for the adapters; owns the lifecycle of every part."""

    def __init__(
        self,
        settings: Settings,
        adapter_factories: Mapping[str, AdapterFactory] | None = None,
        tools: ToolRegistry | None = None,
        responders: Responders | None = None,
    ) -> None:
        self.settings = settings
        home = settings.home
        self.db = Database(settings.database_url)
        self.animas = AnimaRegistry(home / "animas", load_roles())
        self.identity = IdentityService(
            self.db,
            home / "shared" / "users",
            settings.hub.admins,
            settings.hub.timezone,
            settings.hub.language,
        )
        factories = adapter_factories if adapter_factories is not None else discover()
        self.adapters: dict[str, Adapter] = {}
        for name, factory in factories.items():
            adapter = factory(settings)
            if adapter is not None:
                self.adapters[name] = adapter
        self.events = EventBus()
        self.ingress = Ingress(self.db, settings.runtime.max_message_bytes)
        self.outbox = Outbox(self.db, self.adapters, settings.outbox)
        self.tools = tools or builtin_tools()
        self.memory = open_memory(home, settings.memory)
        if self.memory is not None:
            self.tools.register(search_memory_tool(self.memory))
            self.tools.register(remember_about_person_tool(self.memory))
        self.runtime = Runtime(
            self.db,
            settings,
            self.animas,
            self.identity,
            responders
            or Responders(LiteLLMResponder(settings.llm, self.tools), OfflineResponder()),
            self.events,
            self.outbox,
            self.memory,
        )
        self.dispatcher = Dispatcher(
            self.db,
            self.identity,
            Router(self.db, settings.hub.default_anima),
            self.animas,
            self.runtime,
        )
        self._outbox_task: asyncio.Task[None] | None = None

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        (self.settings.home / "shared" / "users").mkdir(parents=True, exist_ok=True)
        self.db.migrate()
        for problem in self.animas.load():
            log.error("Anima not loaded: %s", problem)
        if self.memory is not None:
            await self.memory.start(self.animas.names())
        for adapter in self.adapters.values():
            await adapter.start(self)
        self.dispatcher.recover()
        self._outbox_task = asyncio.create_task(self.outbox.run(), name="outbox")

    async def stop(self) -> None:
        await self.runtime.mailboxes.close()
        if self._outbox_task is not None:
            self._outbox_task.cancel()
            await asyncio.gather(self._outbox_task, return_exceptions=True)
        await self.outbox.close()
        for adapter in self.adapters.values():
            await adapter.stop()
        if self.memory is not None:
            await self.memory.stop()
        self.db.dispose()

    # HubPort ---------------------------------------------------------------------------

    async def receive(self, inbound: Inbound) -> Receipt:
        row, duplicate = self.ingress.accept(inbound)
        if not duplicate:
            self.dispatcher.dispatch(row, inbound)
        return Receipt(row.id, duplicate)

    async def subscribe(self, inbox_id: str) -> AsyncIterator[TurnEvent]:
        if self.events.knows(inbox_id):
            async for event in self.events.subscribe(inbox_id):
                yield event
            return
        # Not running in this process (answered before a restart, or never routed).
        for event in self._stored_outcome(inbox_id):
            yield event

    def _stored_outcome(self, inbox_id: str) -> list[TurnEvent]:
        with self.db.session() as session:
            row = session.get(InboxItem, inbox_id)
            reply = session.exec(
                select(DeliveryRow).where(DeliveryRow.inbox_id == inbox_id)
            ).first()
        if reply is not None and row is not None and row.status == "done":
            return [TurnEvent("text", reply.text, reply.anima), TurnEvent("done", "", reply.anima)]
        if reply is not None:
            return [TurnEvent("error", reply.text, reply.anima)]
        if row is not None and row.status in ("received", "processing"):
            return [TurnEvent("error", "still being answered; the reply will appear here")]
        reason = (row.error if row else None) or "no reply was recorded for this message"
        return [TurnEvent("error", reason)]

    def anima_names(self) -> list[str]:
        return self.animas.names()

    def transcript(self, address: Address, limit: int) -> list[TranscriptEntry]:
        return transcript(self.db, address, limit)

    # admin -----------------------------------------------------------------------------

    def create_anima(self, name: str, role: str, supervisor: str | None) -> Anima:
        return self.animas.create(name, role, supervisor)
