"""The dashboard's charts (`GET /api/stats`, docs/dashboard.md): what came in on each
platform per day, how long turns took, what each memory layer holds, what was forgotten.

Days are UTC dates, oldest first, the last one today. Every series is over a caller's view:
a person's own messages (inbox rows the hub attributed to their ids, merged ones included)
and the memory a DM with them would recall; an admin's everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

from sqlmodel import col, select

from hub.memory.browser import Visible, forgotten
from hub.memory.documents import LAYER_DIRS, Layer
from hub.memory.index import MemoryFilter
from hub.memory.service import MemoryService
from hub.memory.timings import percentile
from hub.store.db import Database
from hub.store.models import InboxItem, InboxStatus

MAX_DAYS = 90
# What the charts call each indexed layer: the folder names people know them by.
LAYERS = {"episodes": Layer.EPISODIC.value} | {d: layer.value for layer, d in LAYER_DIRS.items()}


@dataclass(frozen=True, slots=True)
class Window:
    days: list[date]

    @classmethod
    def ending(cls, now: datetime, days: int) -> Window:
        today = now.astimezone(UTC).date()
        return cls([today - timedelta(days=back) for back in range(days - 1, -1, -1)])

    @property
    def start(self) -> datetime:
        return datetime.combine(self.days[0], time(), UTC)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.days[-1] + timedelta(days=1), time(), UTC)

    def day_ends(self) -> list[float]:
        """Each day's last moment, in epoch seconds (an index `until` is inclusive)."""
        return [
            datetime.combine(d + timedelta(days=1), time(), UTC).timestamp() - 1e-3
            for d in self.days
        ]

    def slot(self, moment: datetime) -> int | None:
        """Which day of the window a moment falls on, None outside it."""
        index = (moment.astimezone(UTC).date() - self.days[0]).days
        return index if 0 <= index < len(self.days) else None


@dataclass(frozen=True, slots=True)
class Traffic:
    messages: dict[str, list[int]]  # platform -> count per day
    p50: list[float | None]  # seconds from receipt to answer, per day
    p95: list[float | None]


def traffic(db: Database, window: Window, people: Sequence[str] | None) -> Traffic:
    """Messages are inbox rows received on each day, per platform, but those from bots and
    edits of earlier messages: what people sent. Turn seconds are, per day of receipt, the
    p50 and p95 of received_at → finished_at over the rows answered (`done`). `people`:
    only rows the hub attributed to these ids (None: everyone's)."""
    query = select(
        col(InboxItem.platform),
        col(InboxItem.received_at),
        col(InboxItem.finished_at),
        col(InboxItem.status),
    ).where(
        col(InboxItem.received_at) >= window.start,
        col(InboxItem.received_at) < window.end,
        col(InboxItem.sender_is_bot).is_(False),
        col(InboxItem.edit_of).is_(None),
    )
    if people is not None:
        query = query.where(col(InboxItem.person_id).in_(list(people)))
    messages: dict[str, list[int]] = {}
    took: list[list[float]] = [[] for _ in window.days]
    with db.session() as session:
        rows = session.exec(query).all()
    for platform, received, finished, status in rows:
        index = window.slot(received)
        if index is None:
            continue
        messages.setdefault(platform, [0] * len(window.days))[index] += 1
        if status == InboxStatus.DONE and finished is not None:
            took[index].append((finished - received).total_seconds())
    return Traffic(
        dict(sorted(messages.items())),
        [_rounded(percentile(day, 0.5)) for day in took],
        [_rounded(percentile(day, 0.95)) for day in took],
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


ScopesOf = Callable[[str], tuple[str, ...] | None]
"""The privacy scopes the caller may recall in an Anima's memory (None: every scope)."""


def memory_layers(
    memory: MemoryService, animas: Iterable[str], scopes_of: ScopesOf, window: Window
) -> dict[str, dict[str, object]]:
    """Items per layer, now and at the end of each day of the window, over the Animas.

    Counted in the index, i.e. what recall can find: retired and forgotten notes, and
    episode days compressed into archive/, are not in it. A day's count is of the items
    the index holds now whose creation time (a note's `created`, an episode section's time,
    from the markdown) is before that day ended: an item deleted since is not counted on
    the days it existed, and indexing still queued is not counted yet."""
    now = {name: 0 for name in LAYERS}
    per_day = {name: [0] * len(window.days) for name in LAYERS}
    ends = window.day_ends()
    for anima in animas:
        scopes = scopes_of(anima)
        for name, layer in LAYERS.items():
            flt = MemoryFilter(anima=anima, layers=(layer,), scopes=scopes)
            now[name] += memory.index.count(flt)
            for index, end in enumerate(ends):
                per_day[name][index] += memory.index.count(replace(flt, until=end))
    return {"layers": dict(now), "per_day": dict(per_day)}


def forgotten_per_day(
    memory: MemoryService, animas: Iterable[str], visible: Visible, window: Window
) -> list[int]:
    """How many of the notes now in `archive/forgotten/` were forgotten on each day (their
    `forgotten:` time): one restored since is no longer counted."""
    counts = [0] * len(window.days)
    for anima in animas:
        for note in forgotten(memory.anima_dir(anima), visible):
            index = None if note.archived_at is None else window.slot(note.archived_at)
            if index is not None:
                counts[index] += 1
    return counts
