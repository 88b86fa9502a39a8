"""What the task runner is handed by the composition root: its parts, and the roles it asks
of parts above it (the runtime's mailboxes, the paused Animas, people's names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hub.animas import AnimaRegistry
from hub.delivery.outbox import Outbox
from hub.settings import TasksSection
from hub.store.db import Database
from hub.tasks.addressing import Addressing
from hub.tasks.board import TaskBoard
from hub.turns.mailbox import TaskJob

if TYPE_CHECKING:
    from hub.memory.service import MemoryService


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskParts:
    """The board and where a task's run reads and writes: `addressing` checks a task's own
    `report_to` again as it runs (class 9), `limits` is `[tasks]`."""

    db: Database
    board: TaskBoard
    animas: AnimaRegistry
    outbox: Outbox
    memory: MemoryService | None
    addressing: Addressing
    limits: TasksSection


class TaskQueue(Protocol):
    """Where a task's run is queued: its assignee's mailbox (hub/turns/runtime.py)."""

    def submit(self, job: TaskJob) -> None: ...


class Pauses(Protocol):
    """Whether an Anima is paused (hub/commands/state.py): its tasks wait."""

    def is_paused(self, name: str) -> bool: ...


class Names(Protocol):
    """What a person is called, by id (hub/people/identity.py): the task's requester."""

    def display_name(self, person_id: str) -> str: ...
