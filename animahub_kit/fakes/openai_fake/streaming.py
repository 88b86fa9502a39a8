"""A streamed answer (``"stream": true``): ``chat.completion.chunk`` objects as server-sent
events, the text or the tool calls' arguments cut in pieces, ending with ``data: [DONE]``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator

from animahub_kit.fakes.openai_fake.script import JSON, Reply, ToolCall
from animahub_kit.fakes.openai_fake.wire import SYSTEM_FINGERPRINT, new_completion_id, usage_json

STREAM_PIECE_CHARS = 4


def _split(text: str, size: int = STREAM_PIECE_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _text_deltas(text: str) -> Iterator[JSON]:
    yield {"role": "assistant", "content": "", "refusal": None}
    for piece in _split(text):
        yield {"content": piece}


def _tool_call_deltas(calls: tuple[ToolCall, ...]) -> Iterator[JSON]:
    for index, call in enumerate(calls):
        head: JSON = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        first: JSON = {"tool_calls": [head]}
        if index == 0:
            first = {"role": "assistant", "content": None, "refusal": None, **first}
        yield first
        for piece in _split(json.dumps(call.arguments)):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def chunk_jsons(body: JSON, reply: Reply) -> Iterator[JSON]:
    """The ``chat.completion.chunk`` objects of a streamed answer, in order."""
    base: JSON = {
        "id": new_completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    deltas = (
        _tool_call_deltas(reply.tool_calls) if reply.tool_calls else _text_deltas(reply.text or "")
    )
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    extra: JSON = {"usage": None} if include_usage else {}
    for delta in deltas:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        yield {**base, "choices": [choice], **extra}
    last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reply.finish_reason}
    yield {**base, "choices": [last], **extra}
    if include_usage:
        yield {**base, "choices": [], "usage": usage_json(body, reply)}


async def sse_events(body: JSON, reply: Reply) -> AsyncIterator[str]:
    for chunk in chunk_jsons(body, reply):
        yield f"data: {json.dumps(chunk)}\n\n"
        await asyncio.sleep(0)  # let each delta go out on its own
    yield "data: [DONE]\n\n"
