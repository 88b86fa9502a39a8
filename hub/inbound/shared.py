"""A hub worker's part in several workers on one PostgreSQL (`[storage] shared`;
docs/scale.md): it runs the turns of the Animas whose partitions it holds.

Any worker accepts and routes a message; the runtime of a worker that does not hold the
Anima assigns the row and NOTIFYs `inbox` (hub/turns/assigned.py). The holder's `sweep`
takes every open assigned row of its Animas that is in none of its lanes, oldest first:
one a worker was running when it lost the Anima is opened again first (under the guard,
so only the holder at its epoch does it). A sweep runs on each hint, when partitions are
gained, and every `SWEEP_S` whatever happens, so a lost hint costs seconds, not a message;
each sweep also ends the streams of turns that ended elsewhere while their NOTIFY was lost.
When partitions are lost, the worker stops its turns of those Animas at once: their writes
would be refused anyway (hub/store/ownership.py), and the new holder runs them.
"""

from __future__ import annotations

import asyncio
import logging

from hub.adapter import TurnEvent
from hub.store.db import Database
from hub.store.models import InboxStatus
from hub.store.ownership import Fenced, Partitions
from hub.supervise import Part
from hub.turns.assigned import closed_among, hand_back, open_assigned, reopen_cut_off
from hub.turns.events import EventBus
from hub.turns.outcome import relayed_outcome
from hub.turns.runtime import Runtime

log = logging.getLogger(__name__)

SWEEP_S = 5.0


class SharedTurns:
    def __init__(
        self, db: Database, partitions: Partitions, runtime: Runtime, events: EventBus
    ) -> None:
        self._db = db
        self._partitions = partitions
        self._runtime = runtime
        self._events = events
        self._delayed: set[str] = set()  # turns whose delay this worker has relayed
        self._soon: asyncio.Handle | None = None
        self._drops: set[asyncio.Task[set[str]]] = set()

    def sweep(self) -> int:
        """Take what is this worker's to run; how many turns were submitted."""
        taken = 0
        for row in open_assigned(self._db):
            if not self._partitions.holds(row.anima) or self._runtime.mailboxes.has(row.id):
                continue
            if row.status is InboxStatus.PROCESSING and not self._reopen(row.id, row.anima):
                continue
            self._runtime.submit(row.job)
            taken += 1
        if taken:
            log.info("took %d turns to run", taken)
        self.catch_up_relays()
        return taken

    def catch_up_relays(self) -> int:
        """Tell whoever waits here on a turn that ended on another worker while its NOTIFY
        was missed (this worker's listener was reconnecting, or not yet connected after a
        start): a missed NOTIFY costs a sweep's wait, never a stream left open for ever."""
        elsewhere = [i for i in self._events.waiting() if not self._runtime.mailboxes.has(i)]
        ended = closed_among(self._db, elsewhere) if elsewhere else []
        for inbox_id in ended:
            self.relay(inbox_id)
        return len(ended)

    def _reopen(self, inbox_id: str, anima: str) -> bool:
        try:
            with self._db.write() as conn:
                self._partitions.guard(conn, anima)
                reopened = reopen_cut_off(conn, inbox_id)
        except Fenced:
            return False  # lost it again meanwhile: the next holder will
        if reopened:
            log.warning("turn %s was cut off on another worker; running it again", inbox_id)
        return reopened

    def hint(self, _anima: str = "") -> None:
        """A row was assigned somewhere (NOTIFY inbox): sweep soon, once for a burst."""
        if self._soon is None:
            self._soon = asyncio.get_running_loop().call_soon(self._hinted)

    def _hinted(self) -> None:
        self._soon = None
        self.sweep()

    def changed(self, gained: set[int], lost: set[int]) -> None:
        """Partitions moved: stop the lost Animas' turns here, take the gained ones'."""
        if lost:
            for anima in self._runtime.mailboxes.animas():
                if not self._partitions.holds(anima):
                    drop = asyncio.get_running_loop().create_task(
                        self._runtime.mailboxes.drop(anima)
                    )
                    self._drops.add(drop)
                    drop.add_done_callback(self._drops.discard)
        if gained:
            self.sweep()

    def relay(self, inbox_id: str) -> None:
        """A turn's row changed (NOTIFY turn_events, from a trigger on `inbox`): if someone
        here waits on a turn that runs on another worker, tell them how it ended, or that
        it is delayed. Its text arrives whole with its end: it does not stream across
        workers yet (docs/scale.md)."""
        if not self._events.knows(inbox_id) or self._runtime.mailboxes.has(inbox_id):
            return  # nobody waits here, or it runs here and streams itself
        for event in relayed_outcome(self._db, inbox_id):
            if event.type == "delayed":
                if inbox_id in self._delayed:
                    event = TurnEvent("delayed", "", event.anima)  # the notice once
                self._delayed.add(inbox_id)
            else:
                self._delayed.discard(inbox_id)
            self._events.publish(inbox_id, event)

    async def begin(self) -> None:
        """At start, before the platforms: take a share of the partitions, and their turns."""
        await asyncio.to_thread(self._partitions.step)
        self.sweep()

    def hand_over(self) -> None:
        """At a stop, after the lanes were closed: the turns cut off go back to `received`
        at no cost, and every partition is released for the other workers at once."""
        hand_back(self._db, self._runtime.mailboxes.queued())
        self._partitions.release_all()

    async def run(self, part: Part) -> None:
        """Sweep every SWEEP_S for the life of the hub (under its Supervisor)."""
        while True:
            self.sweep()
            part.ok()
            await asyncio.sleep(SWEEP_S)
