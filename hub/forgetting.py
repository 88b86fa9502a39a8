"""Forgetting a person (`/forget-me`, `animahub people forget NAME`, docs/people.md).

What the Animas kept private to them goes: memory scoped to them (their DMs, and the ids
merged into them) from every Anima's markdown and index, the facts their profile says the
Animas learned, their DM conversations in the turn log, which working memory is built
from, and their handoffs (hub/handoffs.py). Who they are (their profile's names and
accounts) stays, so they are not a stranger. The audit log says that it happened and how
much went, not what.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlmodel import col

from hub.handoffs import Handoffs
from hub.identity import IdentityService, PersonView
from hub.memory.profiles import Profiles
from hub.memory.service import MemoryService
from hub.messages import DeliveryStatus
from hub.store.db import Database
from hub.store.models import AuditEntry, DeliveryRow, InboxItem, Turn


@dataclass(frozen=True, slots=True)
class Forgotten:
    memories: dict[str, int]  # per Anima
    facts: int
    turns: int
    handoffs: int = 0

    def line(self) -> str:
        total = sum(self.memories.values())
        per = ", ".join(f"{anima}: {n}" for anima, n in self.memories.items()) or "none"
        return (
            f"{total} private memories ({per}), {self.facts} profile facts, "
            f"{self.turns} DM turns and {self.handoffs} handoffs"
        )


async def forget_person(
    db: Database,
    identity: IdentityService,
    memory: MemoryService | None,
    profiles: Profiles,
    handoffs: Handoffs,
    person: PersonView,
    actor: str,
) -> Forgotten:
    ids = identity.ids_of(person.id)
    memories = await memory.forget_scopes([f"person:{i}" for i in ids]) if memory else {}
    facts = profiles.forget_learned(person.id)
    turns = _forget_dm_turns(db, ids)
    left = handoffs.forget(ids)
    with db.session() as session:
        session.add(
            AuditEntry(
                actor=actor,
                where="hub",
                action="person.forgotten",
                target=person.id,
                detail={
                    "memories": sum(memories.values()),
                    "facts": facts,
                    "turns": turns,
                    "handoffs": left,
                },
            )
        )
    return Forgotten(memories, facts, turns, left)


def _forget_dm_turns(db: Database, ids: tuple[str, ...]) -> int:
    """Their DM conversations, whole: the turn log, and the text of the inbox rows and sent
    deliveries (kept for dedup and the outbox, blanked). Channels keep what was said there."""
    with db.write() as conn:
        dms = conn.execute(
            select(col(InboxItem.conversation), col(InboxItem.address))
            .where(col(InboxItem.person_id).in_(ids), col(InboxItem.address_kind) == "dm")
            .distinct()
        ).all()
        conversations = sorted({c for c, _ in dms})
        addresses = sorted({a for _, a in dms})
        if not conversations:
            return 0
        gone = conn.execute(delete(Turn).where(col(Turn.conversation).in_(conversations)))
        conn.execute(
            update(InboxItem)
            .where(col(InboxItem.conversation).in_(conversations))
            .values(text="", raw={}, attachments=[])
        )
        conn.execute(
            update(DeliveryRow)
            .where(
                col(DeliveryRow.address).in_(addresses),
                col(DeliveryRow.status) != DeliveryStatus.PENDING.value,
            )
            .values(text="", chunks=[])
        )
        return int(gone.rowcount or 0)
