"""A fake local model server, served like the fake OpenAI (uvicorn in a thread, on
127.0.0.1, the same scripting: `queue_reply`, `fail_next`, `hold_next`, `requests`), with
the routes and refusals of the server `spec` names, and the path of every request kept in
`paths` (what litellm asked, in order)."""

from __future__ import annotations

import threading

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from animahub_kit.fakes.local_models.ollama import ollama_routes
from animahub_kit.fakes.local_models.openai_compatible import openai_compatible_routes
from animahub_kit.fakes.local_models.spec import OLLAMA, ServerSpec
from animahub_kit.fakes.openai_fake.control import make_control_routes
from animahub_kit.fakes.openai_fake.script import JSON
from animahub_kit.fakes.openai_fake.state import FakeState
from animahub_kit.fakes.openai_server import FakeOpenAI


class _PathLog:
    """ASGI middleware: the method and path of every HTTP request, in order."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope["path"]).startswith("/_control/"):
            with self._lock:
                self.seen.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


def build_local_app(spec: ServerSpec, state: FakeState, refused: list[JSON]) -> Starlette:
    if spec.kind == OLLAMA:
        routes = ollama_routes(spec, state)
    else:
        routes = openai_compatible_routes(spec, state, refused)
    return Starlette(routes=[*routes, *make_control_routes(state)])


class FakeLocalServer(FakeOpenAI):
    def __init__(self, spec: ServerSpec, port: int = 0) -> None:
        super().__init__(port)
        self.spec = spec
        self.refused: list[JSON] = []  # requests the server refused in its own words
        self._paths = _PathLog(build_local_app(spec, self.state, self.refused))

    def _make_server(self) -> uvicorn.Server:
        server = super()._make_server()
        server.config.app = self._paths  # the same server, this server's routes
        return server

    def __enter__(self) -> FakeLocalServer:
        self.start()
        return self

    @property
    def paths(self) -> list[str]:
        with self._paths._lock:
            return list(self._paths.seen)
