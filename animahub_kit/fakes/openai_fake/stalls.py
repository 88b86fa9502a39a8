"""Stalled streams: a model that accepts a request and then goes quiet.

Two kinds, each scripted for the next streamed request (of a model, or any):

* ``stall_next(after_chars=0)``: the answer's headers go out (``200``, an event stream),
  then nothing: no first chunk, until released.
* ``stall_next(after_chars=N)``: the first N characters of the reply are streamed, then
  nothing, until released.

A released stall goes on and finishes its answer. A stall whose client leaves first (the
hub's deadline cut the call off, hub/model/deadlines.py) is counted in ``cut_off``: that is how a
test sees that the call was really cancelled, in a model worker as in the hub.

(Holding a request before any header is ``hold_next`` in state.py.)
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from animahub_kit.fakes.openai_fake.script import JSON, Reply
from animahub_kit.fakes.openai_fake.state import Hold
from animahub_kit.fakes.openai_fake.streaming import chunk_jsons


@dataclass(frozen=True)
class Stall:
    after_chars: int = 0  # 0: before the first chunk


class Stalls:
    """The scripted stalls and what became of them; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[str | None, deque[Stall]] = {}
        self._waiting: list[Hold] = []
        self.stalled = 0  # streams that went quiet
        self.cut_off = 0  # of those, streams whose client left before the release

    def stall_next(self, after_chars: int = 0, model: str | None = None) -> None:
        with self._lock:
            self._next.setdefault(model, deque()).append(Stall(after_chars))

    def take(self, body: JSON) -> Stall | None:
        if not body.get("stream"):
            return None
        with self._lock:
            own = self._next.get(str(body.get("model") or ""))
            queue = own if own else self._next.get(None)
            return queue.popleft() if queue else None

    def release(self) -> None:
        """Let every stalled stream go on (and forget stalls no request has taken yet)."""
        with self._lock:
            self._next.clear()
            waiting, self._waiting = self._waiting, []
        for hold in waiting:
            hold.set()

    async def _quiet(self) -> None:
        hold = Hold()
        with self._lock:
            self._waiting.append(hold)
            self.stalled += 1
        try:
            await hold.wait()
        except asyncio.CancelledError:  # the client went away (starlette cancels the body)
            with self._lock:
                self.cut_off += 1
            raise

    async def events(self, body: JSON, reply: Reply, stall: Stall) -> AsyncIterator[str]:
        """The answer as server-sent events, going quiet where the stall says."""
        sent = 0
        quiet = stall.after_chars == 0
        if quiet:
            await self._quiet()
        for chunk in chunk_jsons(body, reply):
            yield f"data: {json.dumps(chunk)}\n\n"
            await asyncio.sleep(0)
            for choice in chunk.get("choices") or []:
                sent += len((choice.get("delta") or {}).get("content") or "")
            if not quiet and sent >= stall.after_chars:
                quiet = True
                await self._quiet()
        yield "data: [DONE]\n\n"


def make_stall_routes(stalls: Stalls) -> list[Route]:
    """``/_control/stall_next`` ({"after_chars", "model"}), ``/_control/release_stalls``,
    ``/_control/stalls`` (the counts)."""

    async def stall_next(request: Request) -> Response:
        body = await request.json()
        stalls.stall_next(int(body.get("after_chars", 0)), body.get("model"))
        return JSONResponse({"ok": True})

    async def release(request: Request) -> Response:
        stalls.release()
        return JSONResponse({"ok": True})

    async def counts(request: Request) -> Response:
        return JSONResponse({"stalled": stalls.stalled, "cut_off": stalls.cut_off})

    return [
        Route("/_control/stall_next", stall_next, methods=["POST"]),
        Route("/_control/release_stalls", release, methods=["POST"]),
        Route("/_control/stalls", counts, methods=["GET"]),
    ]
