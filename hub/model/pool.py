"""Model workers: litellm calls run in child processes (`hub.model.worker`), not on the hub's
event loop.

Why: litellm spends about 5 ms of CPU per call and 0.2 ms per streamed chunk (wrapping,
cost and logging; bench/README.md). On the hub's loop that caps one hub near 180 calls/s
and makes every conversation wait behind other conversations' chunks. In workers it runs
on other cores and the loop keeps to the message path. Tools still run in the hub: a
worker makes one round of the loop at a time.

Each worker takes many calls at once; a call goes to the ready worker with the fewest in
flight. A worker that exits fails its calls as retryable (the runtime retries the turn) and
is started again after a backoff. The pool starts its workers on first use, or ahead of it
with `start()`; `stop()` closes their stdin, which ends them. With `idle_s`, workers that
took no call for that long are ended the same way, and the next call starts them again:
each holds litellm (about 300 MB), which a hub asked twice an hour need not keep.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from hub.model.client import LLMError, RoundPiece, Usage
from hub.model.worker import LINE_LIMIT

log = logging.getLogger(__name__)
_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
_STOP_GRACE_S = 5.0
_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


@dataclass(eq=False)
class _Worker:
    slot: int
    process: asyncio.subprocess.Process
    ready: asyncio.Future[None]
    calls: dict[int, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)


class ModelWorkers:
    """A `ModelClient` whose calls run in `count` worker processes."""

    def __init__(
        self, count: int, ready_timeout_s: float = 60.0, idle_s: float | None = None
    ) -> None:
        if count < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._count = count
        self._ready_timeout_s = ready_timeout_s
        self._workers: list[_Worker | None] = [None] * count
        self._supervisors: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()  # set whenever a worker becomes ready
        self._stopped = asyncio.Event()
        self._ids = itertools.count(1)
        self._stopping = False
        self._idle_s = idle_s
        self._last_used = 0.0  # the loop's time when a call last began or ended
        self._retiring = False  # the workers are being ended for idleness
        self._idle_watch: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._supervisors or self._stopping or self._retiring:
            return
        self._supervisors = [
            asyncio.create_task(self._supervise(slot), name=f"model-worker-{slot}")
            for slot in range(self._count)
        ]
        if self._idle_s is not None:
            self._touch()
            self._idle_watch = asyncio.create_task(self._retire_when_idle(), name="model-idle")

    async def stop(self) -> None:
        self._stopping = True
        self._stopped.set()
        self._changed.set()  # callers waiting for a worker give up now
        if self._idle_watch is not None:
            self._idle_watch.cancel()
        await self._end([w for w in self._workers if w is not None])
        await asyncio.gather(*self._supervisors, return_exceptions=True)

    async def _end(self, workers: list[_Worker]) -> None:
        for worker in workers:
            if worker.process.stdin is not None:
                worker.process.stdin.close()  # end of input: the worker exits
        for worker in workers:
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can lose a cancel that
                # arrives as the awaited thing completes (hub/delivery/outbox.py says more).
                async with asyncio.timeout(_STOP_GRACE_S):
                    await worker.process.wait()
            except TimeoutError:
                log.warning("model worker %d did not exit; killing it", worker.slot)
                worker.process.kill()

    def _touch(self) -> None:
        self._last_used = asyncio.get_running_loop().time()

    async def _retire_when_idle(self) -> None:
        """End the workers once no call has begun or ended for `idle_s`, and none runs.
        Only workers that are all up are ended: one in its restart backoff is left alone."""
        assert self._idle_s is not None
        loop = asyncio.get_running_loop()
        while True:
            wait = self._last_used + self._idle_s - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            workers = [w for w in self._workers if w is not None and w.ready.done()]
            if len(workers) < self._count or any(w.calls for w in workers):
                self._touch()
                continue
            break
        # From here to the stdin's close no await: no call can pick a worker meanwhile.
        self._retiring = True
        log.info("model workers idle for %.0f s: ended until the next model call", self._idle_s)
        try:
            await self._end(workers)
            await asyncio.gather(*self._supervisors, return_exceptions=True)
        finally:
            self._supervisors = []
            self._idle_watch = None
            self._retiring = False
            self._changed.set()  # a call that came meanwhile starts them again

    @property
    def started(self) -> bool:
        """Whether the workers were started: by the first call (the hub does not start them
        ahead of it: an idle hub holds no litellm), or by `start()`."""
        return bool(self._supervisors)

    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w is not None]

    def status(self) -> dict[str, int]:
        """For /api/system/health: how many workers there should be, run and are ready."""
        running = [w for w in self._workers if w is not None]
        ready = [w for w in running if w.ready.done() and w.ready.exception() is None]
        return {"configured": self._count, "running": len(running), "ready": len(ready)}

    # ModelClient ------------------------------------------------------------------------

    async def warm(self, model: str) -> None:
        await self._pick()

    async def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]:
        # aclosing: a caller that stops early cancels the call now, not when collected.
        async with contextlib.aclosing(self._call("stream", messages, kwargs)) as events:
            async for event in events:
                if "text" in event:
                    yield str(event["text"])
                elif "message" in event:
                    yield dict(event["message"])
                elif "usage" in event:
                    prompt, completion = event["usage"]
                    yield Usage(int(prompt), int(completion))

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        content = ""
        async with contextlib.aclosing(self._call("complete", messages, kwargs)) as events:
            async for event in events:
                content = str(event.get("content") or "")
        return content

    async def _call(
        self, op: str, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The worker's events for one call, up to its end; its error raised as LLMError."""
        worker = await self._pick()
        self._touch()
        call = next(self._ids)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._write(worker, {"id": call, "op": op, "messages": messages, "kwargs": kwargs})
        worker.calls[call] = queue
        finished = False
        try:
            while not finished:
                event = await queue.get()
                finished = bool(event.get("done")) or "error" in event  # the call's last event
                if "error" in event:
                    raise LLMError.from_wire(event)
                yield event
        finally:
            worker.calls.pop(call, None)
            self._touch()
            if not finished:  # the caller stopped listening: the worker drops the call
                with contextlib.suppress(LLMError):
                    self._write(worker, {"id": call, "op": "cancel"})

    async def _pick(self) -> _Worker:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._ready_timeout_s
        while True:
            self.start()  # again after each wait: the workers may have been ended as idle
            ready = [w for w in self._workers if w is not None and w.ready.done()]
            ready = [] if self._retiring else ready
            ready = [w for w in ready if w.ready.exception() is None]
            if ready:
                return min(ready, key=lambda w: len(w.calls))
            if self._stopping:
                raise LLMError("the hub is stopping", retryable=True)
            self._changed.clear()
            try:
                async with asyncio.timeout_at(deadline):
                    await self._changed.wait()
            except TimeoutError:
                raise LLMError("no model worker is running", retryable=True) from None

    @staticmethod
    def _write(worker: _Worker, request: dict[str, Any]) -> None:
        stdin = worker.process.stdin
        if stdin is None or stdin.is_closing():
            raise LLMError("the model worker has exited", retryable=True)
        stdin.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")

    # Supervision ------------------------------------------------------------------------

    async def _supervise(self, slot: int) -> None:
        failures = 0
        while not self._stopping:
            try:
                worker = await self._spawn(slot)
            except OSError as exc:
                log.error("model worker %d could not start: %s", slot, exc)
                code: int | str = "none"
                started = False
            else:
                self._workers[slot] = worker
                code = await self._serve(worker)
                self._workers[slot] = None
                started = worker.ready.done() and worker.ready.exception() is None
            if self._stopping or self._retiring:
                return
            # A worker that ran and died restarts quickly; one that cannot start backs off.
            failures = 1 if started else failures + 1
            delay = _BACKOFF_S[min(failures, len(_BACKOFF_S)) - 1]
            log.error("model worker %d exited (code %s); restarting in %.1fs", slot, code, delay)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopped.wait()

    async def _spawn(self, slot: int) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hub.model.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        return _Worker(slot, process, ready)

    async def _serve(self, worker: _Worker) -> int:
        """Route the worker's events to their calls until it exits; its exit code."""
        assert worker.process.stdout is not None and worker.process.stderr is not None
        logs = asyncio.create_task(_relay_logs(worker.slot, worker.process.stderr))
        try:
            while line := await worker.process.stdout.readline():
                try:
                    event = json.loads(line)
                except ValueError:
                    log.error("model worker %d wrote %r; stopping it", worker.slot, line[:200])
                    worker.process.kill()
                    break
                if event.get("op") == "ready":
                    worker.ready.set_result(None)
                    self._changed.set()
                    log.info("model worker %d ready (pid %d)", worker.slot, worker.process.pid)
                    continue
                queue = worker.calls.get(int(event["id"]))
                if queue is not None:  # else: a cancelled call's last words
                    queue.put_nowait(event)
        finally:
            code = await worker.process.wait()
            await logs
            if not worker.ready.done():
                worker.ready.set_exception(LLMError("worker did not start", retryable=True))
                worker.ready.exception()  # retrieved: nobody else waits on this future
            gone = {"error": f"the model worker exited (code {code})", "retryable": True}
            for queue in worker.calls.values():
                queue.put_nowait(gone)
        return code


async def _relay_logs(slot: int, stream: asyncio.StreamReader) -> None:
    """A worker's stderr into the hub's log, at the level each line starts with."""
    level = logging.INFO
    while line := await stream.readline():
        text = line.decode(errors="replace").rstrip()
        head, _, rest = text.partition(" ")
        if head in _LEVELS:
            level, text = logging.getLevelName(head), rest
        if text:
            log.log(level, "worker %d: %s", slot, text)
