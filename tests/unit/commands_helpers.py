"""What the test_commands_* modules share: the people and places they use, the recording
stand-ins for the heartbeat trigger and the runtime's submit, and helpers to run a command
and read back what it changed (bindings, inbox rows, the audit log).

The `parts` fixture that builds the CommandService from these is in tests/unit/conftest.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import col, select

from hub.animas import AnimaRegistry
from hub.commands import parse_command
from hub.commands.handler import CommandService
from hub.commands.state import AnimaStates
from hub.inbound.ingress import Ingress
from hub.messages import Address, Inbound, PlatformUser
from hub.people.identity import IdentityService
from hub.settings import Settings
from hub.store.db import Database
from hub.store.models import AuditEntry, ChannelBinding, InboxItem, InboxStatus
from hub.turns.mailbox import TurnJob

ROOT = PlatformUser("slack", "UROOT", "Root")
ALICE = PlatformUser("slack", "UALICE", "Alice")
CHANNEL = Address("slack", "T1", "C1")
OTHER = Address("slack", "T1", "C9")
serial = itertools.count()


@dataclass
class Recorder:
    """Stands in for the heartbeat trigger and the runtime's submit."""

    beats: list[str] = field(default_factory=list)
    submitted: list[TurnJob] = field(default_factory=list)
    fail_with: Exception | None = None

    async def heartbeat(self, name: str) -> str:
        self.beats.append(name)
        if self.fail_with is not None:
            raise self.fail_with
        return "posted 1 message to web:local/general"

    def submit(self, job: TurnJob) -> None:
        self.submitted.append(job)


@dataclass
class Parts:
    db: Database
    settings: Settings
    animas: AnimaRegistry
    identity: IdentityService
    states: AnimaStates
    service: CommandService
    calls: Recorder


def command(
    text: str, sender: PlatformUser = ROOT, address: Address = CHANNEL, event_id: str = ""
) -> Inbound:
    return Inbound(
        event_id=event_id or f"cmd-{next(serial)}",
        address=address,
        sender=sender,
        text=text,
        command=parse_command(text),
    )


async def run(parts: Parts, text: str, **kw: Any) -> str:
    inbound = command(text, **kw)
    return await parts.service.handle(inbound, parts.identity.resolve(inbound.sender))


def audit(db: Database) -> list[AuditEntry]:
    with db.session() as session:
        return list(session.exec(select(AuditEntry).order_by(col(AuditEntry.id))).all())


def bindings(db: Database) -> dict[str, str]:
    with db.session() as session:
        return {b.channel_key: b.anima for b in session.exec(select(ChannelBinding)).all()}


def inbox_row(db: Database, address: Address, anima: str | None, status: InboxStatus) -> str:
    ingress = Ingress(db, 32 * 1024)
    row, _ = ingress.accept(Inbound(f"m-{next(serial)}", address, ALICE, "hello"))
    with db.session() as session:
        stored = session.get(InboxItem, row.id)
        assert stored is not None
        stored.anima, stored.status = anima, status
        session.add(stored)
    return row.id


def stored(db: Database, inbox_id: str) -> InboxItem:
    with db.session() as session:
        row = session.get(InboxItem, inbox_id)
    assert row is not None
    return row
