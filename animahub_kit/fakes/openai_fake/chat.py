"""The ``/chat/completions`` endpoint: the body read and logged, a hold or the latency waited
out, then the scripted failure, or the reply (streamed or not)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from animahub_kit.fakes.openai_fake.errors import error_response
from animahub_kit.fakes.openai_fake.outage import refused
from animahub_kit.fakes.openai_fake.script import JSON, Failure
from animahub_kit.fakes.openai_fake.stalls import Stalls
from animahub_kit.fakes.openai_fake.state import FakeState, Hold
from animahub_kit.fakes.openai_fake.streaming import sse_events
from animahub_kit.fakes.openai_fake.wire import completion_json


async def json_body(request: Request) -> JSON | None:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


async def _held_until_released(hold: Hold, request: Request) -> bool:
    """Wait for the release; False if the client disconnected first."""
    while True:
        try:
            await asyncio.wait_for(hold.wait(), 0.05)
            return True
        except TimeoutError:
            if await request.is_disconnected():
                return False


def make_chat_completions(
    state: FakeState, stalls: Stalls | None = None
) -> Callable[[Request], Awaitable[Response]]:
    async def chat_completions(request: Request) -> Response:
        body = await json_body(request)
        if body is None:
            return error_response(Failure(400, None, "The request body is not a JSON object."))
        hold = state.record(body)
        if state.latency_s:
            await asyncio.sleep(state.latency_s)
        if hold is not None:
            if not await _held_until_released(hold, request):
                state.abandon(hold)  # the client gave up on the request while it was held
                return Response(status_code=499)
            if state.is_stopping:
                return error_response(Failure(503, None, "The fake OpenAI server is stopping."))
        if (refusal := refused(state, str(body.get("model") or ""), request)) is not None:
            return refusal  # a standing refusal, until reset (outage.py)
        failure = state.next_failure(body)
        if failure is not None:
            return error_response(failure)
        reply = state.next_reply(body)
        stall = stalls.take(body) if stalls is not None else None
        if stalls is not None and stall is not None:  # stalls.py: a stream that goes quiet
            events = stalls.events(body, reply, stall)
            return StreamingResponse(events, media_type="text/event-stream")
        if body.get("stream"):
            return StreamingResponse(sse_events(body, reply), media_type="text/event-stream")
        return JSONResponse(completion_json(body, reply))

    return chat_completions
