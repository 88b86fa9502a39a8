"""The web chat's routes under `/api/` with `[server] api_token` set: a bearer token, no
signature and no timestamp (a replay with the same `message_id` is the dedup's to answer)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from animahub_kit.contract.harness import ScriptedResponder, eventually
from hub.api.server import create_app
from hub.app import Hub
from hub.turns.runtime import Responders
from tests.conftest import add_demo_animas, make_settings
from tests.security.common import deliveries
from tests.security.surface import AUTH, MARKER, Case, Replayed

TOKEN = "web-api-token-0123456789"
VALIDATION = frozenset({422})


class WebSurface:
    route = "POST /api/chat/{name}, POST /api/channels/{name}/posts"

    def __init__(self, hub: Hub, http: httpx.AsyncClient) -> None:
        self.hub = hub
        self.http = http

    def _send(
        self, path: str, body: bytes, authorization: str | None
    ) -> Callable[[], Awaitable[int]]:
        headers = {"Content-Type": "application/json"}
        if authorization is not None:
            headers["Authorization"] = authorization

        async def send() -> int:
            return (await self.http.post(path, content=body, headers=headers)).status_code

        return send

    def cases(self) -> list[Case]:
        chat = "/api/chat/aria"
        posts = "/api/channels/general/posts"
        body = _chat("forged", "forged-1")
        post = json.dumps({"text": "@aria forged", "user": "mallory"}).encode()
        bearer = f"Bearer {TOKEN}"
        auth_cases = [
            ("no Authorization", None),
            ("another token", "Bearer not-the-token"),
            ("the token without Bearer", TOKEN),
            ("the token as Basic", f"Basic {TOKEN}"),
            ("the token's prefix", bearer[:-1]),
            ("the token plus a suffix", bearer + "0"),
        ]
        return [
            *(
                Case(f"chat: {name}", self._send(chat, body, value), AUTH)
                for name, value in auth_cases
            ),
            *(
                Case(f"post: {name}", self._send(posts, post, value), AUTH)
                for name, value in auth_cases[:2]
            ),
            Case("chat: token, not JSON", self._send(chat, b"{not json", bearer), VALIDATION),
            Case(
                "chat: token, no session_id",
                self._send(chat, b'{"message": "hi"}', bearer),
                VALIDATION,
            ),
            Case(
                "chat: token, message_id not an id",
                self._send(chat, _chat("hi", "x" * 300), bearer),
                VALIDATION,
            ),
            Case(
                "chat: token, unknown Anima",
                self._send("/api/chat/nobody", body, bearer),
                frozenset({404}),
            ),
            Case(
                "post: token, no text",
                self._send(posts, b'{"user": "mallory"}', bearer),
                VALIDATION,
            ),
        ]

    async def _chat(self, name: str, text: str, message_id: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        return await self.http.post(
            f"/api/chat/{name}", content=_chat(text, message_id), headers=headers
        )

    async def replay(self) -> Replayed:
        responses = [await self._chat("aria", "replayed once", "replayed-1") for _ in range(2)]
        assert [r.status_code for r in responses] == [200, 200], responses
        return Replayed("replayed-1", "echo: replayed once")

    async def marker(self) -> str:
        response = await self._chat("mika", MARKER, "marker-1")
        assert response.status_code == 200, response.text
        await eventually(lambda: any(MARKER in d.text for d in deliveries(self.hub)))
        return "marker-1"

    def platform_received(self) -> list[str]:
        """The web chat's platform is the hub's own transcript: its replies are deliveries."""
        return [d.text for d in deliveries(self.hub)]


def _chat(text: str, message_id: str) -> bytes:
    payload: dict[str, Any] = {"message": text, "conversation_id": "s1", "user": "mallory"}
    payload["message_id"] = message_id
    return json.dumps(payload).encode()


def web_settings(home: Path) -> Any:
    return make_settings(
        home,
        hub={"default_anima": "mika", "admins": []},
        memory={"enabled": False},
        scheduler={"enabled": False},
        outbox={"poll_interval_s": 0.05, "backoff_base_s": 0.05},
        server={"host": "0.0.0.0", "api_token": TOKEN},
    )


@asynccontextmanager
async def open_surface(tmp_path: Path) -> AsyncIterator[WebSurface]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    responder = ScriptedResponder()
    hub = Hub(web_settings(home), responders=Responders(responder, responder))
    await hub.start()
    add_demo_animas(hub)
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield WebSurface(hub, http)
    finally:
        await hub.stop()
