"""Inbound pacing: a flood from one person, or into one channel, is slowed, never dropped.

Each person and each channel has a rate (messages a minute) and a burst. Up to the burst,
messages go to their Anima at once; past it, each waits for its slot (the generic cell rate
algorithm: one "theoretical arrival time" per key, no timers). A message is paced by its
sender first and by its channel only when its sender's slot comes, so one person's flood
takes at most their own rate out of a channel's, and everyone else's messages go straight
through. Waiting messages are already stored in the inbox: a restart answers them too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import insert

from hub.delivery.outbox import Outbox
from hub.messages import Address, DeliveryKind, utcnow
from hub.store.db import Database
from hub.store.models import AuditEntry, InboxItem
from hub.turns.mailbox import TurnJob

log = logging.getLogger(__name__)

_MAX_KEYS = 10_000


@dataclass(frozen=True, slots=True)
class Rate:
    per_minute: float
    burst: int


class Pacer:
    """One rate over many keys (people, or channels)."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = 60.0 / rate.per_minute
        self._tolerance = (rate.burst - 1) * self._interval  # `burst` go at once
        self._clock = clock
        self._due: dict[str, float] = {}  # key -> theoretical arrival time

    def delay(self, key: str) -> float:
        """Reserve the next slot of `key`; the seconds to wait for it (0.0: go now)."""
        now = self._clock()
        due = max(self._due.get(key, now), now)
        self._due[key] = due + self._interval
        if len(self._due) > _MAX_KEYS:
            self._due = {k: d for k, d in self._due.items() if d > now}  # idle again
        return max(0.0, due - self._tolerance - now)


Report = Callable[[InboxItem, TurnJob, float], None]


class Pacing:
    """Paces turns on their way to the runtime, and reports each flood once."""

    def __init__(
        self, person: Pacer, channel: Pacer, submit: Callable[[TurnJob], None], report: Report
    ) -> None:
        self._person = person
        self._channel = channel
        self._submit = submit
        self._report = report
        self._flooding: set[str] = set()  # people past their burst: reported already
        self.waiting = 0  # messages waiting for their slot (health shows it)

    def submit(self, row: InboxItem, job: TurnJob) -> None:
        person = job.person_id or row.sender_key
        wait = self._person.delay(person)
        if wait <= 0:
            self._flooding.discard(person)  # back under their rate: a new flood is news
            self._to_channel(row, job)
            return
        if person not in self._flooding:
            self._flooding.add(person)
            self._report(row, job, wait)
        self._later(wait, lambda: self._to_channel(row, job))

    def _to_channel(self, row: InboxItem, job: TurnJob) -> None:
        wait = self._channel.delay(row.channel_key)
        if wait <= 0:
            self._submit(job)
        else:
            self._later(wait, lambda: self._submit(job))

    def _later(self, wait: float, then: Callable[[], None]) -> None:
        self.waiting += 1

        def go() -> None:
            self.waiting -= 1
            then()

        asyncio.get_running_loop().call_later(wait, go)


def flood_reporter(db: Database, outbox: Outbox) -> Report:
    """Tells the sender once per flood, and the admins (log and audit), what is happening."""

    def report(row: InboxItem, job: TurnJob, wait: float) -> None:
        log.warning(
            "%s is sending faster than their rate: their messages wait (next in %.0f s)",
            row.sender_key,
            wait,
            extra={"anima": job.anima},
        )
        notice = (
            "You are sending messages faster than I can take them: I will answer each one "
            f"in turn (the next in about {max(1, round(wait))} s)."
        )
        with db.write() as conn:
            conn.execute(
                insert(AuditEntry).values(
                    at=utcnow(),
                    actor=row.sender_key,
                    where=row.address,
                    action="inbound.paced",
                    target=row.id,
                    detail={"wait_s": round(wait, 1), "anima": job.anima},
                )
            )
            outbox.enqueue(
                conn,
                Address.parse(row.address, row.address_kind),
                notice,
                DeliveryKind.NOTICE,
                job.anima,
                f"paced:{row.id}",
                # No `answers`: that is the key of the message's own reply, whose live preview
                # an adapter would hand to this notice (adapters/streaming.py claim).
            )

    return report
