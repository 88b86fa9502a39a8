"""Forgery: for every inbound route, unsigned, wrongly signed, replayed and malformed requests
are refused with the right status and leave no row behind.

Each route runs on a real hub with its real adapter and SDK (tests/security/*_surface.py).
For every request the suite checks the status and that no table changed (inbox, delivery,
turn log, audit log, persons, identities); then a genuine message goes through and is
answered, so whatever a refused request might have set going has had its chance, and the
platform must have received that answer and nothing else. A genuine request replayed byte
for byte is taken once: one inbox row, one reply.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from fastapi import FastAPI

from hub.adapter import discover
from hub.api.server import create_app
from hub.app import Hub
from hub.settings import Settings
from tests.conftest import make_settings
from tests.security import (
    discord_surface,
    line_surface,
    slack_surface,
    telegram_surface,
    web_surface,
)
from tests.security.common import counts, deliveries, footprint, inbox, route_paths
from tests.security.surface import MARKER, Surface

Opener = Callable[[Path], AbstractAsyncContextManager[Surface]]
SURFACES: dict[str, Opener] = {
    "/slack/events": slack_surface.open_surface,
    "/discord/interactions": discord_surface.open_surface,
    "/webhooks/telegram": telegram_surface.open_surface,
    "/webhooks/line": line_surface.open_surface,
    "/api/chat/{name}": web_surface.open_surface,
}
# Routes that take nothing in: the page, its static files and FastAPI's schema pages.
READ_ONLY = {
    "/",
    "/static",
    "/docs",
    "/docs/oauth2-redirect",
    "/docs-assets",
    "/docs-assets/redoc.standalone.js",
    "/redoc",
    "/openapi.json",
    "/dashboard",
    "/dashboard-assets",
}
# Behind the same edge as /api (ApiGuard: a token, the session, or the loopback owner):
# missing and wrong credentials, and each caller's rights, are in tests/api/test_mcp.py; for
# the live feed's WebSocket (its own check, the same Authenticator) in tests/api/test_live_ws.py.
AUTHENTICATED = {"/mcp", "/ws"}
# The sign-in link's page and form take a token, not a message: forged, used, expired and
# cross-site sign-ins are refused in tests/api/test_people.py.
SIGN_IN = {"/signin", "/signin/{token}"}


@pytest.mark.parametrize("route", list(SURFACES))
async def test_forged_stale_and_malformed_requests_are_refused_and_leave_nothing(
    route: str, tmp_path: Path
) -> None:
    async with SURFACES[route](tmp_path) as surface:
        before = footprint(surface.hub)
        wrong = []
        for case in surface.cases():
            status = await case.send()
            after = footprint(surface.hub)
            left = {table: n - before[table] for table, n in after.items() if n != before[table]}
            if status not in case.expected or left:
                wrong.append(f"{case.name}: {status} (want {sorted(case.expected)}), left {left}")
            before = after
        replayed = await surface.replay()
        marker = await surface.marker()

        assert not wrong, f"{surface.route}:\n" + "\n".join(wrong)
        # Only the replayed request (once) and the marker are in the inbox, and only their
        # replies were sent: nothing refused was acted on later either.
        rows = counts(row.event_id for row in inbox(surface.hub))
        assert rows == {replayed.event_id: 1, marker: 1}, rows
        expected = [MARKER] + ([replayed.reply] if replayed.reply else [])
        received = surface.platform_received()
        for needle in expected:
            assert len([text for text in received if needle in text]) == 1, received
        assert len(received) == len(expected), received
        assert len(deliveries(surface.hub)) == len(expected)


def every_option(home: Path) -> Settings:
    """Settings with every adapter on and every inbound route it can serve mounted."""
    return make_settings(
        home,
        slack={"enabled": True, "bot_token": "xoxb-1", "signing_secret": "s"},
        discord={"enabled": True, "bot_token": "t", "public_key": "00" * 32},
        telegram={
            "enabled": True,
            "bot_token": "1:t",
            "public_url": "https://hub.example.com",
            "webhook_secret": "s",
        },
        line={"enabled": True, "channel_secret": "s", "channel_access_token": "t"},
        notion={"enabled": True, "token": "secret_t", "data_source_id": "ds"},  # no route
        server={"host": "0.0.0.0", "api_token": "t"},
    )


def hub_app(home: Path) -> FastAPI:
    return create_app(Hub(every_option(home)))  # built, not started: the routes are fixed


def test_every_inbound_route_is_covered_by_the_forgery_suite(home: Path) -> None:
    """An adapter that mounts a new route (found through the entry points, all enabled)
    fails this until the route has its surface here."""
    assert set(discover()) == {"web", "slack", "discord", "telegram", "line", "notion"}
    paths = {path for path, _ in route_paths(hub_app(home).routes)}
    outside_api = {path for path in paths if not path.startswith("/api/")}
    assert outside_api - READ_ONLY - SIGN_IN - AUTHENTICATED == set(SURFACES) - {"/api/chat/{name}"}
    assert "/api/chat/{name}" in paths and "/api/channels/{name}/posts" in paths


async def test_every_api_route_refuses_a_request_without_the_token(home: Path) -> None:
    """Beyond the chat routes the web surface drives: every `/api/` route and method, with
    no token and with a wrong one, is 401 before it runs (nothing is stored)."""
    import httpx

    hub = Hub(every_option(home))
    app = create_app(hub)
    routes = [(p, m) for p, ms in route_paths(app.routes) for m in ms if p.startswith("/api/")]
    assert len(routes) >= 15, routes
    transport = httpx.ASGITransport(app=app)
    refused = []
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        for path, method in routes:
            url = path.replace("{name}", "aria")
            for headers in ({}, {"Authorization": "Bearer not-the-token"}):
                response = await http.request(method, url, json={}, headers=headers)
                refused.append((method, url, response.status_code))
    assert {status for _, _, status in refused} == {401}, refused
