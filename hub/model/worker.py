"""A model worker process: runs litellm calls for the hub, many at once, over a pipe.

Started by `hub.model.pool` as `python -m hub.model.worker`. The protocol is JSON lines.
The hub writes on stdin:

    {"id": 7, "op": "stream" | "complete", "messages": [...], "kwargs": {...}}
    {"id": 7, "op": "cancel"}

and the worker answers on its protocol pipe (the stdout it was started with):

    {"op": "ready"}                                   once litellm is imported
    {"id": 7, "text": "..."}                          streamed text, coalesced for ~5 ms
    {"id": 7, "message": {...}}                       the assistant message with tool calls
    {"id": 7, "done": true, "content": "..."}         the end ("content" for "complete")
    {"id": 7, "error": "...", "retryable": true, "kind": "unreachable", "retry_after": null}
                                                      the end, failed (hub/model/failure.py)

End of stdin means the hub is gone (or stopping): the worker cancels its calls and exits.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
from typing import Any

from hub.model.client import LiteLLMCalls, LLMError, Usage

log = logging.getLogger("hub.model.worker")
LINE_LIMIT = 64 * 1024 * 1024  # a request carries a whole prompt; a reply, a whole answer
_COALESCE_S = 0.005  # text deltas of one call written together: fewer lines, same stream


class Channel:
    """The protocol pipe: buffers text per call and writes every event as one line."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._text: dict[int, list[str]] = {}
        self._flush: asyncio.TimerHandle | None = None

    def send(self, event: dict[str, Any]) -> None:
        self._writer.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")

    def text(self, call: int, piece: str) -> None:
        self._text.setdefault(call, []).append(piece)
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(_COALESCE_S, self.flush)

    def flush(self, call: int | None = None) -> None:
        """Write buffered text: one call's (before its end event), or everyone's."""
        if call is None:
            self._flush = None
            pending, self._text = self._text, {}
        else:
            pieces = self._text.pop(call, None)
            pending = {call: pieces} if pieces else {}
        for key, pieces in pending.items():
            self.send({"id": key, "text": "".join(pieces)})

    def end(self, call: int, event: dict[str, Any]) -> None:
        self.flush(call)
        self.send({"id": call, **event})

    async def drain(self) -> None:
        await self._writer.drain()


async def run_call(calls: LiteLLMCalls, channel: Channel, request: dict[str, Any]) -> None:
    call = int(request["id"])
    try:
        if request["op"] == "complete":
            content = await calls.complete(request["messages"], request["kwargs"])
            channel.end(call, {"done": True, "content": content})
        else:
            async for piece in calls.stream_round(request["messages"], request["kwargs"]):
                if isinstance(piece, str):
                    channel.text(call, piece)
                elif isinstance(piece, Usage):
                    channel.flush(call)
                    channel.send({"id": call, "usage": [piece.prompt, piece.completion]})
                else:
                    channel.flush(call)
                    channel.send({"id": call, "message": piece})
            channel.end(call, {"done": True})
    except LLMError as exc:
        channel.end(call, exc.wire())
    except Exception as exc:  # an SDK failure of any kind: the hub must hear of it, or its
        # turn would wait for an end that never comes; it retries the turn like an outage
        log.exception("model call %s failed", call)
        channel.end(call, {"error": f"model worker: {exc!r}", "retryable": True})
    await channel.drain()


async def serve(reader: asyncio.StreamReader, channel: Channel) -> None:
    calls = LiteLLMCalls()
    running: dict[int, asyncio.Task[None]] = {}
    channel.send({"op": "ready"})
    while line := await reader.readline():
        request = json.loads(line)
        call = int(request["id"])
        if request["op"] == "cancel":
            task = running.get(call)
            if task is not None:
                task.cancel()
            continue
        task = asyncio.create_task(run_call(calls, channel, request))
        running[call] = task
        task.add_done_callback(functools.partial(_forget, running, call))
    for task in list(running.values()):
        task.cancel()
    await asyncio.gather(*running.values(), return_exceptions=True)


def _forget(running: dict[int, asyncio.Task[None]], call: int, _task: object) -> None:
    running.pop(call, None)


async def main() -> None:
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so anything a
    # library prints lands in the log instead of corrupting the protocol.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, stream = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, protocol)
    writer = asyncio.StreamWriter(transport, stream, None, loop)
    import litellm  # noqa: F401 - imported before "ready", so no call waits for it

    _quiet_litellm()
    await serve(reader, Channel(writer))


def _quiet_litellm() -> None:
    """As in the hub (hub/logs.py): litellm's loggers at WARNING, through our one handler,
    whose lines the hub relays into its own log at their level."""
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.WARNING)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main())
