"""Which Animas this hub worker runs, and the guard on the writes that rely on it
(docs/scale.md, "Leases").

One hub on a database runs every Anima (`SoleOwner`). Several workers sharing a PostgreSQL
split the Animas by partition (`Partitions`: the leases of hub/store/leases.py): a worker
runs the turns, schedules and tasks of the Animas in the partitions it holds. A write that
relies on holding an Anima (claiming its message, committing its turn) first calls
`guard(conn, anima)` in its own transaction. The guard reads the partition's lease row
`FOR SHARE`: if the lease is no longer this worker's at the epoch it was taken at, the write
is refused (`Fenced`) and rolled back; if it is, a worker taking the partition over waits
for this transaction to end, so the write lands before the takeover, never after it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Protocol

from sqlalchemy import Connection, text

from hub.store.db import Database
from hub.store.leases import Balancer, Held, partition_key, partition_of
from hub.supervise import Part

log = logging.getLogger(__name__)

# Fixed for a database: an Anima's partition must be the same in every worker.
PARTITIONS = 256

_GUARD = text("SELECT 1 FROM lease WHERE key = :key AND holder = :me AND epoch = :epoch FOR SHARE")


def worker_name() -> str:
    """This process among the workers: its host and pid, and a random tail (a pid is reused
    after a restart, and a lease held under the old name must not pass for the new one's)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Fenced(RuntimeError):
    """This worker no longer holds the Anima's partition: the write is refused."""


class Ownership(Protocol):
    me: str  # this worker's name, as its rows record it
    refused: int  # guarded writes refused: the lease had moved on
    shared: bool  # whether other workers run Animas of the same database

    def holds(self, anima: str) -> bool:
        """Whether this worker runs `anima` now."""
        ...

    def guard(self, conn: Connection, anima: str) -> None:
        """In the caller's transaction: raise Fenced unless this worker still holds
        `anima`, and keep it held until the transaction ends."""
        ...


class SoleOwner:
    """One hub holds the database (hub/cli/runfile.py): every Anima is its own."""

    refused = 0
    shared = False

    def __init__(self) -> None:
        self.me = worker_name()

    def holds(self, anima: str) -> bool:
        return True

    def guard(self, conn: Connection, anima: str) -> None:
        return None


Changed = Callable[[set[int], set[int]], None]  # (partitions gained, partitions lost)


class Partitions:
    """This worker's share of the partitions, kept by stepping its Balancer every ttl / 3."""

    def __init__(
        self,
        db: Database,
        me: str,
        *,
        partitions: int = PARTITIONS,
        ttl_s: float = 15.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.me = me
        self._partitions = partitions
        self._ttl_s = ttl_s
        self._balancer = Balancer(db, me, partitions, ttl_s=ttl_s, margin_s=ttl_s / 3)
        self._monotonic = monotonic
        self._held = Held({}, 1, 0.0)
        self.refused = 0  # writes refused because the lease had moved on
        self.shared = True
        self._stepping = threading.Lock()
        self._closed = False

    def partition(self, anima: str) -> int:
        return partition_of(anima, self._partitions)

    def held(self) -> set[int]:
        """The partitions this worker may work on now (none once its renewal is overdue)."""
        if self._monotonic() >= self._held.safe_until:
            return set()
        return {int(key.rsplit(":", 1)[1]) for key in self._held.epochs}

    def holds(self, anima: str) -> bool:
        if self._monotonic() >= self._held.safe_until:
            return False  # overdue: someone may take it any moment, so stop now
        return partition_key(self.partition(anima)) in self._held.epochs

    def mine(self, animas: Iterable[str]) -> list[str]:
        return [name for name in animas if self.holds(name)]

    def guard(self, conn: Connection, anima: str) -> None:
        key = partition_key(self.partition(anima))
        epoch = self._held.epochs.get(key)
        found = None
        if epoch is not None:
            params = {"key": key, "me": self.me, "epoch": epoch}
            found = conn.execute(_GUARD, params).first()
        if found is None:
            self.refused += 1
            raise Fenced(f"{self.me} no longer holds {key} (the partition of {anima})")

    def step(self) -> tuple[set[int], set[int]]:
        """One balancing round: the partitions gained and lost since the last."""
        with self._stepping:  # run from a thread: one round at a time
            if self._closed:
                return set(), set()  # released for good: this worker is stopping
            before = self.held()
            self._held = self._balancer.step()
            after = self.held()
        return after - before, before - after

    async def run(self, part: Part, changed: Changed) -> None:
        """Step for the life of the hub (under its Supervisor), telling `changed` what moved;
        the first round was the start's (`SharedTurns.begin`)."""
        while True:
            await asyncio.sleep(self._ttl_s / 3)
            gained, lost = await asyncio.to_thread(self.step)
            part.ok()
            if gained or lost:
                log.info("partitions: %d held (+%d, -%d)", len(self.held()), len(gained), len(lost))
                changed(gained, lost)

    def release_all(self) -> None:
        """At a stop: every partition handed over at once, and none taken again."""
        with self._stepping:
            self._closed = True
            self._balancer.release_all()
            self._held = Held({}, 1, 0.0)
