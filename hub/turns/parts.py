"""What a turn is run with: the parts the runtime is handed by the composition root."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hub.animas import AnimaRegistry
from hub.delivery.outbox import Outbox
from hub.memory.service import MemoryService
from hub.people.handoffs import Handoffs
from hub.people.identity import IdentityService
from hub.settings import Settings
from hub.store.db import Database
from hub.store.ownership import Ownership, SoleOwner
from hub.turns.events import EventBus
from hub.turns.inbox import Inbox
from hub.turns.llm import Responder
from hub.turns.mailbox import TurnJob


@dataclass(frozen=True, slots=True)
class Responders:
    model: Responder
    offline: Responder


class Holds(Protocol):
    """Asked before every turn: holds the message of a paused Anima and returns the notice its
    sender was given (hub/commands/state.py), or None to run the turn."""

    def hold(self, job: TurnJob) -> str | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnParts:
    """Where a turn is read from and written to. `handoffs` only with `memory`: a handoff is
    written when memory closes a DM session (hub/schedule/sessions.py)."""

    db: Database
    settings: Settings
    animas: AnimaRegistry
    identity: IdentityService
    responders: Responders
    events: EventBus
    outbox: Outbox
    inbox: Inbox
    memory: MemoryService | None = None
    handoffs: Handoffs | None = None
    # Which Animas this worker runs; its guard fences the claim and the commit.
    ownership: Ownership = field(default_factory=SoleOwner)
