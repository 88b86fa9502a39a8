"""With an API token, every /api route needs it; the page and static files stay public."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hub.api.server import create_app
from hub.app import Hub
from tests.conftest import add_demo_animas, make_settings

TOKEN = "s3cret-token"


@pytest.fixture
async def guarded(home: Path) -> AsyncIterator[httpx.AsyncClient]:
    hub = Hub(make_settings(home, server={"host": "0.0.0.0", "api_token": TOKEN}))
    await hub.start()
    add_demo_animas(hub)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http
    finally:
        await hub.stop()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/animas"),
        ("GET", "/api/system/health"),
        ("GET", "/api/channels"),
        ("GET", "/api/deliveries"),
        ("POST", "/api/chat/aria"),
        ("POST", "/api/animas"),
    ],
)
async def test_api_routes_need_the_bearer_token(
    guarded: httpx.AsyncClient, method: str, path: str
) -> None:
    missing = await guarded.request(method, path, json={})
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = await guarded.request(method, path, json={}, headers={"Authorization": "Bearer no"})
    assert wrong.status_code == 401


async def test_right_token_works_and_page_is_public(guarded: httpx.AsyncClient) -> None:
    ok = await guarded.get("/api/animas", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and len(ok.json()) == 3
    page = await guarded.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    script = await guarded.get("/static/app.js")
    assert script.status_code == 200


async def test_huge_request_body_is_refused_before_parsing(guarded: httpx.AsyncClient) -> None:
    response = await guarded.post(
        "/api/chat/aria",
        content=b"x" * (2 * 1024 * 1024),
        headers={"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )
    assert response.status_code == 413
