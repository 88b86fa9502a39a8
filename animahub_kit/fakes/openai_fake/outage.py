"""A model server that refuses until it is fixed, and its list of models.

* A refusal (:meth:`FakeOpenAI.refuse`) answers every request, or every request for one
  model, with the same error until :meth:`FakeOpenAI.reset`: 401 (a bad key) echoes the
  key it was sent masked as OpenAI does (``sk-proj-********…abcd``: a part of the key),
  404 says the model does not exist, 429 asks to slow down.
* ``GET /v1/models`` (and ``/models``) lists the models, as an OpenAI-compatible server
  does (what a hub checks cheaply whether the server is up); a 401 refusal refuses it too.
* Going down and coming back on the same port is :meth:`FakeOpenAI.go_down` /
  :meth:`FakeOpenAI.come_back` (the server stops listening: connections are refused).
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from animahub_kit.fakes.openai_fake.errors import error_response
from animahub_kit.fakes.openai_fake.script import Failure
from animahub_kit.fakes.openai_fake.state import FakeState

LISTED_MODELS = ("fake", "kai", "aria", "mika")


def refusal_message(status: int, model: str, authorization: str | None) -> str:
    """What a provider says when it refuses: the key it was sent (masked, but in part),
    the model it does not know."""
    if status == 401:
        key = (authorization or "").removeprefix("Bearer ").strip()
        shown = f"{key[:8]}{'*' * max(len(key) - 12, 4)}{key[-4:]}" if key else "(none)"
        return (
            f"Incorrect API key provided: {shown}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
    if status == 404:
        return f"The model `{model}` does not exist or you do not have access to it."
    if status == 429:
        return "Rate limit reached for requests. Please try again in 1s."
    return f"Fake OpenAI refuses this request (HTTP {status})."


def refused(state: FakeState, model: str, request: Request) -> Response | None:
    """The error answer of a standing refusal for ``model``, or None."""
    failure = state.refusal(model)
    if failure is None:
        return None
    message = failure.message or refusal_message(
        failure.status, model, request.headers.get("authorization")
    )
    return error_response(Failure(failure.status, failure.retry_after, message))


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def make_outage_routes(state: FakeState) -> list[Route]:
    async def list_models(request: Request) -> Response:
        state.count_model_list()
        failure = state.refusal("")
        if failure is not None and failure.status == 401:
            return refused(state, "", request) or Response(status_code=500)
        data = [
            {"id": name, "object": "model", "created": int(time.time()), "owned_by": "fake"}
            for name in LISTED_MODELS
        ]
        return JSONResponse({"object": "list", "data": data})

    async def refuse(request: Request) -> Response:
        body = await _body(request)
        status = int(body.get("status", 401))
        failure = Failure(status, body.get("retry_after"), body.get("message"))
        state.refuse(failure, body.get("model"))
        return JSONResponse({"ok": True})

    async def model_lists(request: Request) -> Response:
        return JSONResponse({"model_lists": state.model_lists})

    return [
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/models", list_models, methods=["GET"]),
        Route("/_control/refuse", refuse, methods=["POST"]),
        Route("/_control/model_lists", model_lists, methods=["GET"]),
    ]
