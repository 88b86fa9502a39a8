"""Forgetting a person (`/forget-me`, `animahub people forget NAME`, docs/people.md).

What the Animas kept private to them goes: memory scoped to them (their DMs, and the ids
merged into them) from every Anima's markdown and index, the facts their profile says the
Animas learned, their DM conversations in the turn log, which working memory is built
from, and their handoffs (hub/people/handoffs.py). Who they are (their profile's names and
accounts) stays, so they are not a stranger. The audit log says that it happened and how
much went, not what.

Every copy goes with the original: archived episode days, summaries and notes made from
what they said (hub/memory/erase.py), the index's files (`VectorIndex.purge`), and the
database's own (SQLite rewrites freed pages with zeros, and its write-ahead log is cut to
nothing after, `Database.scrub`). Each start applies again every forget the
audit log records and the data folder has not seen applied (`reapply_forgets`): the
archives today's code kept before forgets reached them, and, once backups exist, data a
restore brought back from before a forget.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import delete, insert, select, update
from sqlmodel import Session, col

from hub.markdown_files import atomic_write
from hub.memory.profiles import Profiles
from hub.memory.service import MemoryService
from hub.messages import DeliveryStatus
from hub.people.handoffs import Handoffs
from hub.people.identity import IdentityService, PersonView
from hub.store.db import Database
from hub.store.models import (
    OPEN_TASK_STATES,
    AuditEntry,
    DeliveryRow,
    InboxItem,
    Task,
    TaskEvent,
    TaskState,
    Turn,
)

log = logging.getLogger(__name__)
FORGOTTEN = "person.forgotten"  # the audit action a forget leaves
FORGOTTEN_TASK = "(forgotten)"  # the title a task asked for in a forgotten DM keeps
APPLIED_MARK = "forgets-applied"  # in the data folder: the last forget applied (id, time)


@dataclass(frozen=True, slots=True)
class Forgotten:
    memories: dict[str, int]  # per Anima
    facts: int
    turns: int
    handoffs: int = 0
    tasks: int = 0

    def line(self) -> str:
        total = sum(self.memories.values())
        per = ", ".join(f"{anima}: {n}" for anima, n in self.memories.items()) or "none"
        return (
            f"{total} private memories ({per}), {self.facts} profile facts, "
            f"{self.turns} DM turns, {self.handoffs} handoffs and {self.tasks} tasks"
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
    scopes = [f"person:{i}" for i in ids]
    memories = await memory.forget_scopes(scopes) if memory else {}
    facts = profiles.forget_learned(person.id)
    turns, addresses = _forget_dm_turns(db, ids)
    tasks = _forget_dm_tasks(db, addresses)
    left = handoffs.forget(ids)
    with db.session() as session:
        session.add(
            AuditEntry(
                actor=actor,
                where="hub",
                action=FORGOTTEN,
                target=person.id,
                detail={
                    "scopes": scopes,  # what a start applies again (reapply_forgets)
                    "memories": sum(memories.values()),
                    "facts": facts,
                    "turns": turns,
                    "handoffs": left,
                    "tasks": tasks,
                },
            )
        )
    # SQLite zeroes what was deleted or blanked (secure_delete), in pages that are in its
    # write-ahead log until a checkpoint: copied into the database now, and the log cut.
    db.scrub()
    return Forgotten(memories, facts, turns, left, tasks)


def _forget_dm_turns(db: Database, ids: tuple[str, ...]) -> tuple[int, list[str]]:
    """Their DM conversations, whole: the turn log, and the text of the inbox rows and sent
    deliveries (kept for dedup and the outbox, blanked). Channels keep what was said there.
    How many turns went, and the DMs' addresses."""
    with db.write() as conn:
        dms = conn.execute(
            select(col(InboxItem.conversation), col(InboxItem.address))
            .where(col(InboxItem.person_id).in_(ids), col(InboxItem.address_kind) == "dm")
            .distinct()
        ).all()
        conversations = sorted({c for c, _ in dms})
        addresses = sorted({a for _, a in dms})
        if not conversations:
            return 0, addresses
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
        return int(gone.rowcount or 0), addresses


def _forget_dm_tasks(db: Database, addresses: list[str]) -> int:
    """Tasks asked for in their DMs, and the tasks those handed down, are copies of what
    they said there: title, details, report and the events' notes are blanked, and an open
    one is cancelled (it would run on text that is gone). How many tasks."""
    if not addresses:
        return 0
    with db.write() as conn:
        found = set(conn.scalars(select(col(Task.id)).where(col(Task.origin).in_(addresses))))
        frontier = set(found)
        while frontier:  # subtasks, down the chain
            frontier = (
                set(conn.scalars(select(col(Task.id)).where(col(Task.parent_id).in_(frontier))))
                - found
            )
            found |= frontier
        if not found:
            return 0
        ids = sorted(i for i in found if i is not None)
        open_ = [state.value for state in OPEN_TASK_STATES]
        cancelled = conn.execute(
            select(col(Task.id), col(Task.state)).where(
                col(Task.id).in_(ids), col(Task.state).in_(open_)
            )
        ).all()
        conn.execute(
            update(Task)
            .where(col(Task.id).in_(ids))
            .values(title=FORGOTTEN_TASK, details="", result="")
        )
        conn.execute(
            update(Task)
            .where(col(Task.id).in_([i for i, _ in cancelled]))
            .values(state=TaskState.CANCELLED)
        )
        conn.execute(update(TaskEvent).where(col(TaskEvent.task_id).in_(ids)).values(note=""))
        now = datetime.now(UTC)
        for task_id, was in cancelled:
            conn.execute(
                insert(TaskEvent).values(
                    task_id=task_id,
                    at=now,
                    actor="hub",
                    from_state=str(was),
                    to_state=TaskState.CANCELLED.value,
                    note="its requester was forgotten",
                )
            )
        return len(ids)


async def reapply_forgets(
    db: Database, identity: IdentityService, memory: MemoryService, home: Path
) -> int:
    """Forget again, in memory and its index, every person forgotten since the last start
    did this (by the audit log), what they had said by then: copies a forget did not reach
    (the weekly stage's archives before it did) go. How many items went."""
    mark = home / APPLIED_MARK
    with db.session() as session:
        done = _applied(session, mark)
        entries = session.scalars(
            select(AuditEntry)
            .where(col(AuditEntry.action) == FORGOTTEN, col(AuditEntry.id) > done)
            .order_by(col(AuditEntry.id))
        ).all()
    went = 0
    for entry in entries:
        scopes = entry.detail.get("scopes") or [
            f"person:{i}" for i in identity.ids_of(entry.target)
        ]
        scoped = [str(s) for s in scopes]
        went += sum((await memory.forget_scopes(scoped, entry.at, purge=False)).values())
    if entries:
        memory.purge_index()  # once, for all of them
        last = entries[-1]
        atomic_write(mark, json.dumps({"id": last.id, "at": last.at.isoformat()}))
    if went:
        log.warning("forgot %d memory items again that earlier forgets had left in copies", went)
    return went


def _applied(session: Session, mark: Path) -> int:
    """The audit id up to which forgets were applied to this data folder; 0 (all again)
    when the mark is missing, unreadable, or names an entry the database does not hold as
    it was (a database restored or replaced: its ids may repeat)."""
    try:
        data = json.loads(mark.read_text(encoding="utf-8"))
        entry = session.get(AuditEntry, int(data["id"]))
        at = datetime.fromisoformat(str(data["at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if entry is None or entry.action != FORGOTTEN or entry.at != at:
        return 0
    return int(data["id"])
