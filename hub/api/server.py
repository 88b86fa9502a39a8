"""Builds the FastAPI app around a Hub: the HTTP edge, errors, lifespan, routes; and the
uvicorn settings `animahub start` serves it with."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.routing import Route
from starlette.types import ASGIApp

from hub import __version__
from hub.adapter import AmbiguousName, MessageTooLarge
from hub.animas import AnimaError
from hub.api import (
    connections,
    dashboard_page,
    dashboard_routes,
    docs_pages,
    guard,
    insight_routes,
    live_ws,
    memory_browser_routes,
    memory_routes,
    people_routes,
    routes,
    share_routes,
    signin,
    task_routes,
)
from hub.api.auth import Authenticator
from hub.api.mcp_mount import PATH, LazyMCP
from hub.app import Hub
from hub.people.owner_key import ensure_owner_key
from hub.settings import ServerSection

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)
# The request line plus headers, in bytes: browsers send 1-4 KB, webhooks under 2 KB. It is
# h11's own default, set here so it is a decision (uvicorn answers 400 beyond it).
MAX_HEAD_BYTES = 16 * 1024
# An idle keep-alive connection is closed after this many seconds, freeing its slot among
# `[server] max_connections`; the page's next request opens a new one. uvicorn's default.
KEEP_ALIVE_S = 5


class _HubApp(FastAPI):
    def __init__(self, server: ServerSection, **kwargs: Any) -> None:
        super().__init__(max_body_size=server.max_body_bytes, **kwargs)
        self.server = server

    def build_middleware_stack(self) -> ASGIApp:
        # Edge goes outside the stack's ServerErrorMiddleware, so a 500 has the headers too.
        return guard.Edge(super().build_middleware_stack(), self.server, docs_pages.PATHS)


def uvicorn_config(app: ASGIApp, server: ServerSection) -> uvicorn.Config:
    """How `animahub start` serves the app: bounded connections, headers and idle time."""
    import uvicorn

    connections.make_room_for(server)
    return uvicorn.Config(
        app,
        log_config=None,
        # Open connections are bounded by hub/api/connections.py, not uvicorn's
        # limit_concurrency: that counted idle, unauthenticated and live-feed sockets alike,
        # so they could take every place and leave 503 for everyone else.
        http=connections.protocol_for(server),
        timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )


def create_app(hub: Hub, on_ready: Callable[[Hub], None] | None = None) -> FastAPI:
    """The app; `on_ready` runs once the hub has started (`animahub start` prints the owner's
    sign-in link then: the link is a row in the database the start migrates)."""
    mcp = LazyMCP(hub)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        try:
            if on_ready is not None:
                on_ready(hub)
            yield
        finally:
            await mcp.close()
            await hub.stop()

    app = _HubApp(
        hub.settings.server,
        title="AnimaHub",
        version=__version__,
        lifespan=lifespan,
        description="REST API of an AnimaHub: Animas, chat, channels, system health.",
        docs_url=None,  # served from the hub's own assets instead (docs_pages)
        redoc_url=None,
    )
    docs_pages.add(app)
    dashboard_page.add(app)
    app.state.hub = hub
    token = hub.settings.server.api_token
    authenticator = Authenticator(
        token.get_secret_value() if token else None,
        hub.access,
        hub.identity,
        owner_key=ensure_owner_key(hub.settings.home),
    )
    guard.secure(app, hub.settings.server, authenticator)
    live_ws.add(
        app, hub, authenticator, hub.settings.server.allowed_hosts, hub.settings.server.cors_origins
    )

    @app.exception_handler(MessageTooLarge)
    async def too_large(_request: Request, exc: MessageTooLarge) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=413)

    @app.exception_handler(DBAPIError)
    async def no_database(_request: Request, exc: DBAPIError) -> JSONResponse:
        # Nothing was accepted: the client (or the platform, which redelivers) sends again.
        log.error("request failed: the database is unavailable (%s)", exc.orig)
        return JSONResponse(
            {"detail": "the hub's database is unavailable; nothing was stored, try again"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(AmbiguousName)
    async def ambiguous(_request: Request, exc: AmbiguousName) -> JSONResponse:
        candidates = [
            {"id": c.id, "name": c.name, "accounts": list(c.accounts)} for c in exc.candidates
        ]
        return JSONResponse({"detail": str(exc), "candidates": candidates}, status_code=409)

    @app.exception_handler(AnimaError)
    async def bad_anima(_request: Request, exc: AnimaError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    app.include_router(routes.router)
    app.include_router(memory_routes.router)
    app.include_router(memory_browser_routes.router)
    app.include_router(share_routes.router)
    app.include_router(insight_routes.router)
    app.include_router(people_routes.router)
    app.include_router(task_routes.router)
    app.include_router(dashboard_routes.router)
    app.include_router(signin.router)
    app.router.routes.append(Route(PATH, mcp))
    for adapter in hub.adapters.values():
        for router in adapter.routers():
            app.include_router(router)
    return app
