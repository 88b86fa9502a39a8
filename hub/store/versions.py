"""Whether a cache of database state is stale: one counter per kind (docs/scale.md, "Caches").

Some state is read before every message or turn and so kept in memory: people (roles,
merged ids, names; hub/people/identity.py) and paused Animas (hub/commands/state.py). With
several hub workers on one database, another worker may change it. The `hub_version` table
holds a counter per kind, bumped by triggers on the tables behind it (migration 0021), so no
write path can forget it, whichever process makes it, the CLI included. A cache notes the
version it loaded at and reloads when the counter moved.

Reading the counters is one small query, made at most every `max_age_s` (1 s by default):
that is the bound within which a change on another worker holds here. `hint()` makes the
next read go to the database at once; on PostgreSQL the same trigger NOTIFYs `hub_changes`
for a listener to call it. A worker's own changes are seen at once: the writer drops its
cache as it writes, and the version read afterwards is only newer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlmodel import col, select

from hub.store.db import Database
from hub.store.models import VersionRow

PEOPLE = "people"
ANIMA_STATE = "anima_state"

_ALL = select(col(VersionRow.kind), col(VersionRow.version))


class Versions:
    def __init__(
        self,
        db: Database,
        max_age_s: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._max_age_s = max_age_s
        self._monotonic = monotonic
        self._seen: dict[str, int] = {}
        self._read_at: float | None = None

    def current(self, kind: str) -> int:
        """The kind's counter, as read at most `max_age_s` ago (0 for a kind not counted)."""
        now = self._monotonic()
        if self._read_at is None or now - self._read_at >= self._max_age_s:
            with self._db.engine.connect() as conn:
                self._seen = {kind: int(version) for kind, version in conn.execute(_ALL)}
            self._read_at = now
        return self._seen.get(kind, 0)

    def hint(self) -> None:
        """Something changed (a NOTIFY said so): the next `current` reads the table."""
        self._read_at = None


class Stale:
    """One cache's view of a kind's counter: `moved()` is True once after it changed."""

    def __init__(self, versions: Versions | None, kind: str) -> None:
        self._versions = versions
        self._kind = kind
        self._loaded: int | None = None

    def moved(self) -> bool:
        if self._versions is None:  # one process, nothing else writes: never stale
            return False
        version = self._versions.current(self._kind)
        moved = self._loaded is not None and version != self._loaded
        self._loaded = version
        return moved
