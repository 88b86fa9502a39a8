"""Ollama's own HTTP API, as litellm's `ollama_chat/…` route uses it, and its `/v1`.

* `POST /api/chat`: streamed (Ollama's default, unless `"stream": false`) as NDJSON, one
  JSON object per line: `{"model", "created_at", "message": {"role": "assistant",
  "content": piece}, "done": false}`, tool calls as `message.tool_calls` with
  `arguments` as an object (not a JSON string, as OpenAI has it), ending with a line that
  says `"done": true`, the `done_reason` and the token counts (`prompt_eval_count`,
  `eval_count`). An unknown model is a 404 `{"error": "model \\"x\\" not found, try pulling
  it first"}`; tools offered to a model without them a 400.
* `POST /api/show` (what litellm asks about a model it has no price for: its template and
  context length), `GET /api/tags` (the pulled models), `GET /api/version`, `GET /`.
* `POST /v1/chat/completions`, `GET /v1/models`: the OpenAI-compatible API, which checks
  no key.

Replies, failures, holds and latency are scripted on the same `FakeState` as the fake
OpenAI's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from animahub_kit.fakes.local_models.spec import ServerSpec, ollama_tag
from animahub_kit.fakes.openai_fake.chat import _held_until_released as held_until_released
from animahub_kit.fakes.openai_fake.chat import json_body, make_chat_completions
from animahub_kit.fakes.openai_fake.script import JSON, Failure, Reply
from animahub_kit.fakes.openai_fake.state import FakeState
from animahub_kit.fakes.openai_fake.streaming import STREAM_PIECE_CHARS
from animahub_kit.fakes.openai_fake.wire import usage_json

VERSION = "0.12.6"
TEMPLATE = "{{- if .Tools }}<tools>{{ range .Tools }}{{ . }}{{ end }}</tools>{{ end }}"
CONTEXT_LENGTH = 131072


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _line(model: str, message: JSON, done: bool, **extra: object) -> str:
    item = {"model": model, "created_at": _now(), "message": message, "done": done, **extra}
    return json.dumps(item) + "\n"


def _tool_calls(reply: Reply) -> list[JSON]:
    return [{"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls]


def _final(body: JSON, reply: Reply) -> dict[str, object]:
    usage = usage_json(body, reply)
    return {
        "done_reason": "stop",
        "total_duration": 1_000_000,
        "load_duration": 100_000,
        "prompt_eval_count": usage["prompt_tokens"],
        "prompt_eval_duration": 200_000,
        "eval_count": usage["completion_tokens"],
        "eval_duration": 700_000,
    }


async def _ndjson(body: JSON, reply: Reply) -> AsyncIterator[str]:
    model = str(body.get("model"))
    if reply.tool_calls:
        message = {"role": "assistant", "content": "", "tool_calls": _tool_calls(reply)}
        yield _line(model, message, False)
    else:
        text = reply.text or ""
        for i in range(0, len(text), STREAM_PIECE_CHARS):
            piece = text[i : i + STREAM_PIECE_CHARS]
            yield _line(model, {"role": "assistant", "content": piece}, False)
            await asyncio.sleep(0)  # each piece goes out on its own
    yield _line(model, {"role": "assistant", "content": ""}, True, **_final(body, reply))


def _whole(body: JSON, reply: Reply) -> JSON:
    message: JSON = {"role": "assistant", "content": reply.text or ""}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    item = json.loads(_line(str(body.get("model")), message, True, **_final(body, reply)))
    return dict(item)


def _chat(spec: ServerSpec, state: FakeState) -> Route:
    async def api_chat(request: Request) -> Response:
        body = await json_body(request)
        if body is None:
            return _error(400, "invalid request body")
        model = str(body.get("model") or "")
        if not spec.serves(model):
            return _error(404, f'model "{model}" not found, try pulling it first')
        if body.get("tools") and not spec.tools:
            return _error(
                400, f"registry.ollama.ai/library/{ollama_tag(model)} does not support tools"
            )
        hold = state.record(body)
        if state.latency_s:
            await asyncio.sleep(state.latency_s)
        if hold is not None and not await held_until_released(hold, request):
            state.abandon(hold)  # the client gave up while it was held
            return Response(status_code=499)
        failure: Failure | None = state.next_failure(body)
        if failure is not None:
            return _error(failure.status, failure.message or f"injected error ({failure.status})")
        reply = state.next_reply(body)
        if body.get("stream", True):
            return StreamingResponse(_ndjson(body, reply), media_type="application/x-ndjson")
        return JSONResponse(_whole(body, reply))

    return Route("/api/chat", api_chat, methods=["POST"])


def _model_json(name: str) -> JSON:
    details = {
        "format": "gguf",
        "family": "llama",
        "parameter_size": "8.0B",
        "quantization_level": "Q4_K_M",
    }
    return {
        "name": name,
        "model": name,
        "modified_at": _now(),
        "size": 4_920_753_328,
        "details": details,
    }


def _info_routes(spec: ServerSpec) -> list[Route]:
    async def tags(request: Request) -> Response:
        return JSONResponse({"models": [_model_json(name) for name in spec.models]})

    async def show(request: Request) -> Response:
        body = await json_body(request) or {}
        model = str(body.get("model") or body.get("name") or "")
        if not spec.serves(model):
            return _error(404, f"model '{model}' not found")
        capabilities = ["completion", "tools"] if spec.tools else ["completion"]
        return JSONResponse(
            {
                "modelfile": f"FROM {ollama_tag(model)}",
                "parameters": "",
                "template": TEMPLATE if spec.tools else "{{ .Prompt }}",
                "details": _model_json(model)["details"],
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": CONTEXT_LENGTH,
                },
                "capabilities": capabilities,
            }
        )

    async def version(request: Request) -> Response:
        return JSONResponse({"version": VERSION})

    async def root(request: Request) -> Response:
        return PlainTextResponse("Ollama is running")

    return [
        Route("/api/tags", tags, methods=["GET"]),
        Route("/api/show", show, methods=["POST"]),
        Route("/api/version", version, methods=["GET"]),
        Route("/", root, methods=["GET", "HEAD"]),
    ]


def _openai_routes(spec: ServerSpec, state: FakeState) -> list[Route]:
    chat = make_chat_completions(state)

    async def v1_chat(request: Request) -> Response:
        body = await json_body(request) or {}
        model = str(body.get("model") or "")
        if not spec.serves(model):
            message = f'model "{model}" not found, try pulling it first'
            error = {"message": message, "type": "api_error", "param": None, "code": None}
            return JSONResponse({"error": error}, status_code=404)
        return await chat(request)

    async def v1_models(request: Request) -> Response:
        now = int(time.time())
        data = [
            {"id": n, "object": "model", "created": now, "owned_by": "library"} for n in spec.models
        ]
        return JSONResponse({"object": "list", "data": data})

    return [
        Route("/v1/chat/completions", v1_chat, methods=["POST"]),
        Route("/v1/models", v1_models, methods=["GET"]),
    ]


def ollama_routes(spec: ServerSpec, state: FakeState) -> list[Route]:
    return [_chat(spec, state), *_info_routes(spec), *_openai_routes(spec, state)]
