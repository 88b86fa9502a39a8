"""vLLM, LM Studio and llama.cpp's llama-server: the fake OpenAI's chat endpoint (its
scripting, holds and failures: animahub_kit/fakes/openai_fake/) behind only the routes each one
serves, each refusing what it refuses, in its own words:

* vLLM serves under `/v1` only; it answers only to its served model name (404
  `NotFoundError` otherwise), and refuses a request offering tools unless it was started
  with `--enable-auto-tool-choice --tool-call-parser …` (400: litellm sends no
  `tool_choice`, which vLLM then takes as "auto").
* LM Studio serves under `/v1` only (and its own `/api/v0`), answering to the model keys
  it has; it checks no key.
* llama-server serves `/v1/chat/completions` and `/chat/completions` alike, whatever the
  model name; an older build refuses tools without `--jinja` (a 500).
* vLLM and llama-server started with `--api-key` refuse any other key with a 401.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from animahub_kit.fakes.local_models.spec import LLAMA_CPP, LM_STUDIO, VLLM, ServerSpec
from animahub_kit.fakes.openai_fake.chat import json_body, make_chat_completions
from animahub_kit.fakes.openai_fake.script import JSON
from animahub_kit.fakes.openai_fake.state import FakeState

Endpoint = Callable[[Request], Awaitable[Response]]


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    return header[len("Bearer ") :] if header.startswith("Bearer ") else None


def _vllm_error(status: int, kind: str, message: str) -> JSONResponse:
    body = {"object": "error", "message": message, "type": kind, "param": None, "code": status}
    return JSONResponse(body, status_code=status)


def _llama_error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": status, "message": message, "type": kind}}, status)


def _vllm_refusal(spec: ServerSpec, request: Request, body: JSON) -> Response | None:
    if spec.api_key is not None and bearer(request) != spec.api_key:
        return JSONResponse({"error": "Unauthorized"}, status_code=401)
    model = str(body.get("model") or "")
    if not spec.serves(model):
        return _vllm_error(404, "NotFoundError", f"The model `{model}` does not exist.")
    if body.get("tools") and not spec.tools and body.get("tool_choice") in (None, "auto"):
        message = (
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
        )
        return _vllm_error(400, "BadRequestError", message)
    return None


def _lm_studio_refusal(spec: ServerSpec, request: Request, body: JSON) -> Response | None:
    model = str(body.get("model") or "")
    if not spec.serves(model):
        error = {"message": f'Model "{model}" not found', "type": "invalid_request_error"}
        return JSONResponse({"error": {**error, "code": "model_not_found"}}, status_code=404)
    return None


def _llama_refusal(spec: ServerSpec, request: Request, body: JSON) -> Response | None:
    if spec.api_key is not None and bearer(request) != spec.api_key:
        return _llama_error(401, "authentication_error", "Invalid API Key")
    if body.get("tools") and not spec.tools:
        return _llama_error(500, "server_error", "tools param requires --jinja flag")
    return None


_REFUSALS = {VLLM: _vllm_refusal, LM_STUDIO: _lm_studio_refusal, LLAMA_CPP: _llama_refusal}


def guarded_chat(spec: ServerSpec, state: FakeState, refused: list[JSON]) -> Endpoint:
    """The fake OpenAI's chat endpoint, behind the server's own refusals (kept in
    `refused`). The body is read here first; Starlette keeps it for the endpoint."""
    chat = make_chat_completions(state)
    refusal_of = _REFUSALS[spec.kind]

    async def endpoint(request: Request) -> Response:
        body = await json_body(request)
        if body is not None and (refusal := refusal_of(spec, request, body)) is not None:
            refused.append(body)
            return refusal
        return await chat(request)

    return endpoint


def models_json(spec: ServerSpec, owner: str) -> JSON:
    names = spec.models or ("model.gguf",)
    data = [
        {"id": n, "object": "model", "created": int(time.time()), "owned_by": owner} for n in names
    ]
    return {"object": "list", "data": data}


def openai_compatible_routes(
    spec: ServerSpec, state: FakeState, refused: list[JSON]
) -> list[Route]:
    chat = guarded_chat(spec, state, refused)
    owner = {VLLM: "vllm", LM_STUDIO: "organization_owner", LLAMA_CPP: "llamacpp"}[spec.kind]

    async def models(request: Request) -> Response:
        return JSONResponse(models_json(spec, owner))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"}) if spec.kind == LLAMA_CPP else Response()

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ]
    if spec.kind in (VLLM, LLAMA_CPP):
        routes.append(Route("/health", health, methods=["GET"]))
    if spec.kind == LLAMA_CPP:  # llama-server answers without the /v1 prefix as well
        routes += [
            Route("/chat/completions", chat, methods=["POST"]),
            Route("/models", models, methods=["GET"]),
        ]
    if spec.kind == LM_STUDIO:
        routes.append(Route("/api/v0/models", models, methods=["GET"]))
    return routes
