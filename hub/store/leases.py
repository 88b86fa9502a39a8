"""Leases on the database's clock, with a fencing epoch (docs/scale.md, "Leases").

A lease is a row `lease(key, holder, epoch, expires_at)`. `take` gets keys that are free,
expired or already the caller's; each time a key changes hands (or is taken again after it
lapsed) its epoch grows by one, so a write decided under an older epoch can be refused by
`fenced()` in the same statement. Times are the database's `now()`, never a worker's
clock: workers' clocks differ, the database's is one.

A worker's own stop comes first: `Balancer` reports `safe_until`, a monotonic time computed
from when the renewal was *sent* (the database's expiry is later than that plus the ttl),
less a margin, so the holder stops its work before anyone else can take the lease.

PostgreSQL only: on SQLite one process holds the whole database (the lock file beside it),
and needs no lease. Nothing in the hub takes leases yet; this is the first part of issue 48.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, func, literal, text
from sqlmodel import col, select

from hub.store.db import Database
from hub.store.models import LeaseRow

PARTITION = "partition:"

_TAKE = text(
    """
    INSERT INTO lease (key, holder, epoch, expires_at)
    SELECT k, :me, 1, now() + make_interval(secs => :ttl) FROM unnest(CAST(:keys AS text[])) k
    ON CONFLICT (key) DO UPDATE
       SET epoch = lease.epoch + CASE
             WHEN lease.holder = EXCLUDED.holder AND lease.expires_at > now() THEN 0 ELSE 1 END,
           holder = EXCLUDED.holder,
           expires_at = EXCLUDED.expires_at
     WHERE lease.holder = EXCLUDED.holder OR lease.expires_at <= now()
    RETURNING key, epoch
    """
)
_RENEW = text(
    """
    UPDATE lease SET expires_at = now() + make_interval(secs => :ttl)
     WHERE holder = :me AND expires_at > now() AND key LIKE :prefix
    RETURNING key, epoch
    """
)
_RELEASE = text(
    "UPDATE lease SET expires_at = now() WHERE holder = :me AND key = ANY(CAST(:keys AS text[]))"
)
_HELD_BY_OTHERS = text(
    """
    SELECT key FROM lease
     WHERE key LIKE :prefix AND holder <> :me AND expires_at > now()
    """
)
_SEEN = text(
    """
    INSERT INTO hub_worker (id, seen_at) VALUES (:me, now())
    ON CONFLICT (id) DO UPDATE SET seen_at = now()
    """
)
_LIVE = text("SELECT count(*) FROM hub_worker WHERE seen_at > now() - make_interval(secs => :ttl)")
_GONE = text("DELETE FROM hub_worker WHERE id = :me")


def partition_of(name: str, partitions: int) -> int:
    """An Anima's partition: the same in every worker and every run (not Python's hash)."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big") % partitions


def partition_key(number: int) -> str:
    return f"{PARTITION}{number}"


def fenced(key: str, epoch: int) -> ColumnElement[bool]:
    """True while `key` is still held at `epoch`: a write that adds it to its WHERE takes
    effect only if the lease it was decided under has not moved on (nor lapsed)."""
    return (
        select(literal(1))
        .where(
            col(LeaseRow.key) == key,
            col(LeaseRow.epoch) == epoch,
            col(LeaseRow.expires_at) > func.now(),
        )
        .exists()
    )


@dataclass(frozen=True, slots=True)
class Held:
    """What one balancing round left this worker holding."""

    epochs: dict[str, int]  # key -> the epoch it is held at
    live_workers: int
    safe_until: float  # time.monotonic(): stop working on them before this


class Balancer:
    """One worker's share of `partitions` leases: about partitions / live workers each.

    Every `step()` (every ttl / 3 or so): say this worker is alive, renew what it holds,
    release what is over its share (a worker joined), take free or lapsed partitions up to
    it (a worker left or lapsed). One renewal is one statement, whatever the number held:
    the cost grows with workers, not with Animas (docs/scale.md).
    """

    def __init__(
        self, db: Database, me: str, partitions: int, ttl_s: float, margin_s: float
    ) -> None:
        if db.engine.dialect.name != "postgresql":
            raise ValueError("leases are PostgreSQL's: on SQLite one process holds the database")
        if margin_s >= ttl_s:
            raise ValueError("the margin must be shorter than the lease")
        self._db, self._me = db, me
        self._all = [partition_key(n) for n in range(partitions)]
        self._ttl, self._margin = ttl_s, margin_s
        self._epochs: dict[str, int] = {}

    def step(self) -> Held:
        sent = time.monotonic()
        with self._db.write() as conn:
            conn.execute(_SEEN, {"me": self._me})
            live = max(1, int(conn.execute(_LIVE, {"ttl": self._ttl}).scalar_one()))
            renewed = conn.execute(_RENEW, {**_params(self._me), "ttl": self._ttl}).all()
            self._epochs = {key: epoch for key, epoch in renewed}
            share = math.ceil(len(self._all) / live)
            surplus = sorted(self._epochs, key=_number)[share:]
            if surplus:
                conn.execute(_RELEASE, {"me": self._me, "keys": surplus})
                for key in surplus:
                    del self._epochs[key]
            wanted = share - len(self._epochs)
            if wanted > 0:
                self._take(conn, wanted)
        return Held(dict(self._epochs), live, sent + self._ttl - self._margin)

    def _take(self, conn: Connection, wanted: int) -> None:
        others = {key for (key,) in conn.execute(_HELD_BY_OTHERS, _params(self._me))}
        free = [key for key in self._all if key not in others and key not in self._epochs]
        taken = conn.execute(_TAKE, {"me": self._me, "ttl": self._ttl, "keys": free[:wanted]}).all()
        self._epochs.update({key: epoch for key, epoch in taken})

    def release_all(self) -> None:
        """At SIGTERM: every lease handed over at once, and this worker no longer counted."""
        with self._db.write() as conn:
            conn.execute(_RELEASE, {"me": self._me, "keys": list(self._epochs)})
            conn.execute(_GONE, {"me": self._me})
        self._epochs = {}


def _params(me: str) -> dict[str, str]:
    """Who asks, and the keys that are partitions (for the statements that match them)."""
    return {"me": me, "prefix": f"{PARTITION}%"}


def _number(key: str) -> int:
    return int(key.removeprefix(PARTITION))


def holders(db: Database, keys: Sequence[str]) -> dict[str, tuple[str, int, datetime]]:
    """Who holds each of `keys`, at which epoch, until when (for tests and status)."""
    with db.session() as session:
        rows = session.exec(select(LeaseRow).where(col(LeaseRow.key).in_(keys))).all()
    return {row.key: (row.holder, row.epoch, row.expires_at) for row in rows}
