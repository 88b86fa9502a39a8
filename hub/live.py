"""The hub's live feed: short notices of what changed (a turn began or ended, an Anima was
paused, a delivery failed, a task moved, a platform went down), for the dashboard's `WS /ws`.

A notice says what changed, not everything about it: the page re-reads the part it shows
over the REST API, which applies the caller's rights. Who may see a notice at all is decided
here (`Notice.visible_to`): admins see every notice, a person only those about themselves
and the public ones (an Anima's or a platform's state).

Publishing never waits: each watcher has a bounded queue, and one that falls behind (a
stalled browser tab) loses its oldest notices and is told to re-read everything (`resync`).

The latest notices are kept (`KEPT`, in memory, since the hub started), so a page opened
now shows what happened before it opened (`recent`), through the same `visible_to` as the
live notices: one rule for what a person sees, then and now.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hub.messages import utcnow
from hub.redaction.redact import redact_json

# Enough for a burst of turns at once; past it a watcher re-reads instead of catching up.
_QUEUE = 256
# The notices kept for a page opened later: many, as a person sees only some of them.
KEPT = 500
SHOWN = 30  # of those a caller may see, the latest this many (the page's ticker holds 30)


@dataclass(frozen=True, slots=True)
class Notice:
    type: str  # turn, anima, delivery, task, platform; "resync": re-read everything
    data: dict[str, Any]
    # Whom it concerns: None is public; () is for admins only; else these person ids.
    people: tuple[str, ...] | None = ()

    def visible_to(self, person_ids: Iterable[str], admin: bool) -> bool:
        if admin or self.people is None:
            return True
        return any(p in self.people for p in person_ids)

    def as_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}


RESYNC = Notice("resync", {}, None)


@dataclass(eq=False)
class Watcher:
    queue: asyncio.Queue[Notice] = field(default_factory=lambda: asyncio.Queue(_QUEUE))

    async def next(self, timeout_s: float) -> Notice | None:
        """The next notice, or None when none came within `timeout_s`."""
        try:
            return await asyncio.wait_for(self.queue.get(), timeout_s)
        except TimeoutError:
            return None


class LiveFeed:
    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._watchers: set[Watcher] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # the watchers' loop
        self._clock = clock
        self.since = clock()  # when the feed began keeping notices: the hub's start
        self._kept: deque[tuple[datetime, Notice]] = deque(maxlen=KEPT)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def publish(self, kind: str, people: tuple[str, ...] | None = (), **data: Any) -> None:
        """Tell every watcher; never blocks. From another thread (an SDK's callback), the
        notice is handed to the watchers' loop."""
        notice = Notice(kind, redact_json(data), people)  # the dashboard shows it
        if self._loop is not None and not _on(self._loop):
            self._loop.call_soon_threadsafe(self._deliver, notice)
        else:
            self._deliver(notice)

    def _deliver(self, notice: Notice) -> None:
        # Kept here, on the watchers' loop: a watcher's `recent` then sees each notice
        # either in what was kept or in its queue, never in both nor in neither.
        self._kept.append((self._clock(), notice))
        for watcher in self._watchers:
            if watcher.queue.full():  # behind: drop what it missed, then say so
                _drain(watcher.queue)
                watcher.queue.put_nowait(RESYNC)
            watcher.queue.put_nowait(notice)

    def recent(self, person_ids: Iterable[str], admin: bool) -> list[dict[str, Any]]:
        """The latest notices the caller may see, oldest first, each with `at`. Taken with
        no await after `watcher()` opens, so nothing is missed or told twice."""
        ids = list(person_ids)
        seen = [(at, n) for at, n in self._kept if n.visible_to(ids, admin)][-SHOWN:]
        return [{**notice.as_json(), "at": at.isoformat()} for at, notice in seen]

    @contextmanager
    def watcher(self) -> Iterator[Watcher]:
        """A watcher of notices from now on, while the block runs."""
        self._loop = asyncio.get_running_loop()
        watcher = Watcher()
        self._watchers.add(watcher)
        try:
            yield watcher
        finally:
            self._watchers.discard(watcher)


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        return False


def _drain(queue: asyncio.Queue[Notice]) -> None:
    while not queue.empty():
        queue.get_nowait()
