"""Live events of running turns, so adapters can stream a reply while it is written.

Events are buffered per turn: a subscriber that arrives late (or twice) replays what it
missed. Finished turns are kept briefly, then forgotten; the outbox remains the record.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

from hub.adapter import TurnEvent

_KEEP_FINISHED = 256


class _TurnStream:
    def __init__(self) -> None:
        self.events: list[TurnEvent] = []
        self.changed = asyncio.Event()

    @property
    def finished(self) -> bool:
        return bool(self.events) and self.events[-1].type in ("done", "error")


class EventBus:
    def __init__(self) -> None:
        self._streams: dict[str, _TurnStream] = {}
        self._finished: deque[str] = deque()

    def open(self, turn_id: str) -> None:
        """Start buffering a turn's events; a retried turn starts a fresh stream."""
        stream = self._streams.get(turn_id)
        if stream is None or stream.finished:
            self._streams[turn_id] = _TurnStream()

    def knows(self, turn_id: str) -> bool:
        return turn_id in self._streams

    def waiting(self) -> list[str]:
        """The turns whose end has not been published yet."""
        return [turn_id for turn_id, stream in self._streams.items() if not stream.finished]

    def publish(self, turn_id: str, event: TurnEvent) -> None:
        stream = self._streams.get(turn_id)
        if stream is None or stream.finished:
            return
        stream.events.append(event)
        stream.changed.set()
        stream.changed = asyncio.Event()
        if stream.finished:
            self._finished.append(turn_id)
            while len(self._finished) > _KEEP_FINISHED:
                self._streams.pop(self._finished.popleft(), None)

    async def subscribe(self, turn_id: str) -> AsyncIterator[TurnEvent]:
        stream = self._streams.get(turn_id)
        if stream is None:
            return
        seen = 0
        while True:
            while seen < len(stream.events):
                event = stream.events[seen]
                seen += 1
                yield event
                if event.type in ("done", "error"):
                    return
            await stream.changed.wait()
