"""The ``/_control/`` routes: the scripting and inspection of :class:`FakeState` over HTTP, so
that a test can drive a fake running in another process (``python -m
animahub_kit.fakes.openai_server``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from animahub_kit.fakes.openai_fake.chat import json_body
from animahub_kit.fakes.openai_fake.state import FakeState


def make_control_routes(state: FakeState) -> list[Route]:
    async def hold_next(request: Request) -> Response:
        body = await json_body(request) or {}
        state.hold_next(body.get("model"))
        return JSONResponse({"ok": True})

    async def release(request: Request) -> Response:
        state.release()
        return JSONResponse({"ok": True})

    async def queue_reply(request: Request) -> Response:
        body = await json_body(request) or {}
        state.queue_reply(str(body.get("text", "")), body.get("model"))
        return JSONResponse({"ok": True})

    async def queue_tool_call(request: Request) -> Response:
        body = await json_body(request) or {}
        state.queue_tool_call(
            str(body.get("name", "")), dict(body.get("arguments") or {}), None, body.get("model")
        )
        return JSONResponse({"ok": True})

    async def fail_next(request: Request) -> Response:
        body = await json_body(request) or {}
        state.fail_next(
            int(body.get("status", 429)),
            body.get("retry_after", 2),
            body.get("message"),
            body.get("model"),
        )
        return JSONResponse({"ok": True})

    async def reset(request: Request) -> Response:
        state.reset()
        return JSONResponse({"ok": True})

    async def requests(request: Request) -> Response:
        return JSONResponse(state.requests)

    async def held(request: Request) -> Response:
        return JSONResponse({"held": state.held_count})

    return [
        Route("/_control/hold_next", hold_next, methods=["POST"]),
        Route("/_control/release", release, methods=["POST"]),
        Route("/_control/queue_reply", queue_reply, methods=["POST"]),
        Route("/_control/queue_tool_call", queue_tool_call, methods=["POST"]),
        Route("/_control/fail_next", fail_next, methods=["POST"]),
        Route("/_control/reset", reset, methods=["POST"]),
        Route("/_control/requests", requests, methods=["GET"]),
        Route("/_control/held", held, methods=["GET"]),
    ]
