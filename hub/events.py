"""Live events of running turns, so adapters can stream a reply while it is written.

Events are buffered per turn: a subscriber that arrives late (or twice) replays what it
missed. Finished turns are kept briefly, then forgotten; the outbox remains the record.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
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
        self._streams: OrderedDict[str, _TurnStream] = OrderedDict()

    def open(self, turn_id: str) -> None:
        self._streams.setdefault(turn_id, _TurnStream())

    def knows(self, turn_id: str) -> bool:
        return turn_id in self._streams

    def publish(self, turn_id: str, event: TurnEvent) -> None:
        stream = self._streams.get(turn_id)
        if stream is None or stream.finished:
            return
        stream.events.append(event)
        stream.changed.set()
        stream.changed = asyncio.Event()
        if stream.finished:
            self._streams.move_to_end(turn_id)
            self._trim()

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

    def _trim(self) -> None:
        finished = [k for k, s in self._streams.items() if s.finished]
        for key in finished[: max(0, len(finished) - _KEEP_FINISHED)]:
            del self._streams[key]
