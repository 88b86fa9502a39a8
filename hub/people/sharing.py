"""A person shares what they said with the team (docs/people.md "Sharing what you said").

What someone tells an Anima in a DM is recalled only in their DMs. Sharing is their own,
explicit act, in one of three ways, each ending here:

- in chat, `/share` (or the whole message "share that with the team") shares their last
  message in this conversation, and `/share TEXT` shares TEXT (hub/commands/share.py);
- on the dashboard, a message of theirs in an Anima's episodes (`POST /api/memory/NAME/share`);
- over MCP, `memory_write` with `share` writes their note shared (hub/views/mcp_tools.py).

Only ever their own words: the message is found by its sender (their id or one merged into
it), an episode section must be their own turn in their own scope, and the copy holds their
message alone, never the Anima's reply. The copy is `shared:person:<id>`
(hub/memory/sharing.py): recalled everywhere, kept through consolidation, erased with them
when they are forgotten. Each act is in the audit log (`memory.shared`: who, which Anima,
the item; not the words, which a forget must be able to take back).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import col, select

from hub.memory.distill import said_lines
from hub.memory.documents import UNREADABLE, MemoryItem, is_episode_file, items_in, stable_id
from hub.memory.paths import MemoryPathError, memory_path
from hub.memory.service import MemoryService
from hub.memory.sharing import shared_id, shared_item
from hub.people.identity import IdentityService, PersonView
from hub.store.db import Database
from hub.store.models import AuditEntry, Turn

log = logging.getLogger(__name__)
SHARED_ACTION = "memory.shared"
MAX_WORDS = 4000  # characters: a message, not a document (a note is shared over MCP)


class ShareRefused(ValueError):
    """Nothing was shared; the message says why, in words for the person."""


@dataclass(frozen=True, slots=True)
class Message:
    """A message of the person's in an Anima's episodes, as the dashboard lists it."""

    item_id: str
    section: str  # "HH:MM"
    words: str
    shared: bool


@dataclass(frozen=True, slots=True)
class Shared:
    anima: str
    words: str
    item_id: str
    new: bool  # False: this was shared before, and nothing changed


class Sharing:
    def __init__(
        self,
        db: Database,
        memory: MemoryService | None,
        identity: IdentityService,
        now: Callable[[], datetime],
    ) -> None:
        self._db = db
        self._memory = memory
        self._identity = identity
        self._now = now

    def last_said(self, person: PersonView, channel_key: str) -> Turn | None:
        """The person's latest message in this conversation (any thread of it)."""
        ids = self._identity.ids_of(person.id)
        with self._db.session() as session:
            return session.exec(
                select(Turn)
                .where(
                    col(Turn.channel_key) == channel_key,
                    col(Turn.role) == "user",
                    col(Turn.person_id).in_(ids),
                )
                .order_by(col(Turn.id).desc())
                .limit(1)
            ).first()

    def said(self, person: PersonView, channel_key: str, where: str, via: str) -> Shared:
        """Share the person's last message in this conversation."""
        turn = self.last_said(person, channel_key)
        if turn is None or not turn.text.strip():
            raise ShareRefused(
                "There is nothing of yours here to share yet: say it first, then send /share "
                "(or send /share followed by what to share)."
            )
        return self.share(person, turn.anima, turn.text, _turn_key(turn), where, via)

    def section(self, person: PersonView, anima: str, path: str, item_id: str) -> Shared:
        """Share the person's message of one episode section (the dashboard's action): a
        turn of theirs, in their own scope; the Anima's reply stays private."""
        found = [m for m in self.mine(person, anima, path) if m.item_id == item_id]
        if not found:  # the same answer for someone else's item and for none
            raise ShareRefused("no message of yours there to share")
        where = f"{anima}'s memory"
        return self.share(person, anima, found[0].words, f"item:{item_id}", where, "dashboard")

    def mine(self, person: PersonView, anima: str, path: str) -> list[Message]:
        """The person's own messages in one episode file of `anima` (their turns in their
        own scope: what a DM with them recorded), each with whether it is shared."""
        memory = self._memory
        if memory is None:
            return []
        ids = self._identity.ids_of(person.id)
        messages = []
        for item in self._sections(memory, anima, path):
            if item.person not in ids or item.scope not in _own_scopes(ids):
                continue
            said = [ln for ln in said_lines(item, anima) if ln.who.casefold() != anima.casefold()]
            if len(said) != 1 or not said[0].text.strip():
                continue  # a summary, or not a turn of one person's
            was = bool(memory.index.payloads([shared_id(person.id, f"item:{item.id}")]))
            messages.append(Message(item.id, item.section or "", said[0].text.strip(), was))
        return messages

    @staticmethod
    def _sections(memory: MemoryService, anima: str, path: str) -> list[MemoryItem]:
        folder = memory.anima_dir(anima)
        try:
            file = memory_path(folder, path)
            relative = file.relative_to(folder).as_posix()
            return items_in(folder, file, scoped=True) if is_episode_file(relative) else []
        except (MemoryPathError, FileNotFoundError, IsADirectoryError, *UNREADABLE):
            return []

    def share(
        self, person: PersonView, anima: str, words: str, key: str, where: str, via: str
    ) -> Shared:
        """Write the shared copy of `words`, said by `person`, into `anima`'s memory, once per
        `key`, and audit it."""
        memory = self._memory
        if memory is None:
            raise ShareRefused("This hub keeps no memory, so there is nothing to share.")
        words = words.strip()
        if not words:
            raise ShareRefused("There is nothing to share: send /share followed by what to share.")
        if len(words) > MAX_WORDS:
            raise ShareRefused(
                f"That is too long to share ({len(words)} characters, at most {MAX_WORDS})."
            )
        item = shared_item(person.id, person.display_name, words, key, self._now())
        new = not memory.index.payloads([item.id]) and memory.add_episode(anima, item)
        self.audit(person.id, where, anima, item.id, via, new)
        return Shared(anima, words, item.id, new)

    def audit(
        self, person_id: str, where: str, anima: str, target: str, via: str, new: bool = True
    ) -> None:
        """The audit log's `memory.shared`: who shared what item (its id or note path) with
        which Anima, and how; never the words."""
        detail = {"person": person_id, "anima": anima, "via": via, "new": new}
        with self._db.session() as session:
            session.add(
                AuditEntry(
                    actor=person_id, where=where, action=SHARED_ACTION, target=target, detail=detail
                )
            )
        log.info("%s shared their words with %s (%s, via %s)", person_id, anima, target, via)


def _own_scopes(ids: tuple[str, ...]) -> set[str]:
    return {f"person:{i}" for i in ids}


def _turn_key(turn: Turn) -> str:
    """The act's key for a message: its episode section's id, as the dashboard shares it,
    so sharing one message both ways shares it once."""
    if turn.inbox_id:
        return f"item:{stable_id('turn', turn.inbox_id)}"
    return f"turn:{turn.id}"
